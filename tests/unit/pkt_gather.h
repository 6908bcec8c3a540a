/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For suites that stand in for the wire: an engine packet comes as
 * pieces (header, payload straight from registered memory, pad and ICRC).
 */
#ifndef URXE_TEST_PKT_GATHER_H
#define URXE_TEST_PKT_GATHER_H

#include <string.h>

#include <urxe/engine.h>

/* Copies a packet's pieces out, in order; returns the bytes copied. */
static inline uint32_t urxe_test_gather(const struct urxe_pkt *p, uint8_t *dst)
{
	uint32_t off = 0;
	unsigned int k;

	for (k = 0; k < p->niov; k++) {
		memcpy(dst + off, p->iov[k].iov_base, p->iov[k].iov_len);
		off += (uint32_t)p->iov[k].iov_len;
	}
	return off;
}

#endif
