// SPDX-License-Identifier: BSD-2-Clause
/*
 * The shared library's own object: everything else comes from the layer
 * archives.  The identification string lets tests and users check which
 * libibverbs.so.1 a process loaded (`strings`, /proc/PID/maps).
 */
__attribute__((used)) static const char urxe_ident[] =
	"urxe drop-in libibverbs.so.1 (software RoCEv2 device)";
