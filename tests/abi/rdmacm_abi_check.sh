#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# rdmacm_abi_check.sh BUILD_DIR
#
# Checks that BUILD_DIR/lib/librdmacm.so.1 is a drop-in for Debian 12's
# librdmacm.so.1 (rdma-core 44), as far as the dynamic linker can tell:
#
#  (a) SONAME is librdmacm.so.1, and the library NEEDs urxe's
#      libibverbs.so.1 (it must not carry its own copy of the layers);
#  (b) the version definitions (node names, flags, parent chain
#      RDMACM_1.0 <- 1.1 <- 1.2 <- 1.3) equal the reference's (without
#      the reference: the chain rdma-core 44 defines);
#  (c) the defined dynamic symbols (name@@node and type) are exactly the
#      reference's 68 functions plus the node names; the diff is printed
#      if not;
#  (d) every Debian program and library that uses librdmacm loads against
#      ours with BIND_NOW semantics: `ldd -r` with LD_LIBRARY_PATH=BUILD/lib
#      reports no missing library, version node or symbol, and resolves
#      both librdmacm.so.1 and libibverbs.so.1 to BUILD/lib.  Checked:
#      the rdmacm-utils programs (rping at least must be there), the
#      perftest programs, qperf, libfabric.so.1, UCX's rdmacm transport,
#      librspreload.so, and the pyverbs extensions that link librdmacm.
#
# Pieces whose package is not installed print a SKIP line and count
# neither way, as in abi_check.sh.  The last line is "N passed, M failed";
# the exit status is 1 when M > 0, 2 on bad usage.  Needs readelf and
# objdump (binutils).  URXE_RDMACM_REFERENCE overrides the reference
# library's path.

set -u

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi

LIBDIR=$(cd "$1/lib" 2>/dev/null && pwd -P) || LIBDIR="$1/lib"
OURS="$LIBDIR/librdmacm.so.1"
SYSLIB=/usr/lib/x86_64-linux-gnu
REF=${URXE_RDMACM_REFERENCE:-$SYSLIB/librdmacm.so.1.3.44.0}
PYVERBS_DIR=/usr/lib/python3/dist-packages/pyverbs

# rdma-core 44's chain, in verdefs' format, for when the reference is absent.
EXPECTED_VERDEFS='0x00 RDMACM_1.0
0x00 RDMACM_1.1 <- RDMACM_1.0
0x00 RDMACM_1.2 <- RDMACM_1.1
0x00 RDMACM_1.3 <- RDMACM_1.2
0x01 librdmacm.so.1'

# shellcheck source=tests/abi/abi_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/abi_lib.sh"

needs_rdmacm() {
	readelf -d "$1" 2>/dev/null | grep -q 'NEEDED.*\[librdmacm\.so\.1\]'
}

check_identity() {
	local needed want ours

	check_soname librdmacm.so.1

	needed=$(readelf -d "$OURS" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	if echo "$needed" | grep -qx 'libibverbs\.so\.1'; then
		pass "NEEDs libibverbs.so.1 (the layers are not linked in)"
	else
		fail "does not NEED libibverbs.so.1; NEEDED:"
		echo "$needed" | detail
	fi

	if [ -f "$REF" ]; then
		want=$(verdefs "$REF")
		same "version definitions identical to $REF ($(echo "$want" | wc -l) incl. base)" \
			"version definitions differ from $REF (< reference, > ours):" \
			"$want" "$(verdefs "$OURS")"
	else
		same "version definitions are rdma-core 44's chain (reference $REF absent)" \
			"version definitions differ from rdma-core 44's (< expected, > ours):" \
			"$EXPECTED_VERDEFS" "$(verdefs "$OURS")"
	fi

	if [ ! -f "$REF" ]; then
		skip "reference $REF absent (package librdmacm1): symbol comparison not run"
		return
	fi
	ours=$(defined_syms "$OURS")
	same "dynamic symbols identical to $REF ($(echo "$ours" | wc -l) defined)" \
		"dynamic symbols differ from $REF (< reference, > ours):" \
		"$(defined_syms "$REF")" "$ours"
}

check_ldd() {	# check_ldd FILE
	local out bad lib

	out=$(LD_LIBRARY_PATH="$LIBDIR" ldd -r "$1" 2>&1)
	bad=$(echo "$out" | grep -E 'not found|undefined symbol|version .* not found')
	if [ -n "$bad" ]; then
		fail "ldd -r $1:"
		echo "$bad" | detail
		return
	fi
	for lib in librdmacm.so.1 libibverbs.so.1; do
		if ! echo "$out" | grep -qF "$lib => $LIBDIR/$lib ("; then
			fail "ldd -r $1: $lib does not resolve to $LIBDIR:"
			echo "$out" | grep -E 'librdmacm|libibverbs' | detail
			return
		fi
	done
	pass "ldd -r $1"
}

# check_file FILE WHAT: the file if it is there, else a SKIP naming WHAT.
check_file() {
	if is_elf "$1"; then
		check_ldd "$1"
	else
		skip "$2 not installed: $1 not checked"
	fi
}

check_clients() {
	local f

	if installed rdmacm-utils; then
		for f in $(dpkg -L rdmacm-utils | grep /bin/); do
			is_elf "$f" && check_ldd "$f"
		done
	fi
	# Every client above may be missing but this one.
	if ! is_elf /usr/bin/rping; then
		fail "/usr/bin/rping missing: install rdmacm-utils"
	fi

	if installed perftest; then
		for f in $(dpkg -L perftest); do
			is_elf "$f" && needs_rdmacm "$f" && check_ldd "$f"
		done
	else
		skip "perftest not installed: ib_*_bw/lat clients not checked"
	fi

	check_file /usr/bin/qperf qperf
	check_file "$SYSLIB/libfabric.so.1" libfabric1
	check_file "$SYSLIB/ucx/libuct_rdmacm.so.0" "UCX (libucx0)"
	check_file "$SYSLIB/rsocket/librspreload.so" librdmacm1

	if [ -d "$PYVERBS_DIR" ]; then
		while IFS= read -r f; do
			needs_rdmacm "$f" && check_ldd "$f"
		done < <(find "$PYVERBS_DIR" -name '*.so' | sort)
	else
		skip "python3-pyverbs not installed: pyverbs extensions not checked"
	fi
}

if [ ! -e "$OURS" ]; then
	fail "$OURS does not exist"
else
	check_identity
	check_clients
fi

finish
