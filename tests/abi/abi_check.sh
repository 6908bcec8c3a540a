#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# abi_check.sh BUILD_LIB_DIR
#
# Checks that BUILD_LIB_DIR/libibverbs.so.1 is a drop-in for the system's
# libibverbs.so.1 (Debian 12, rdma-core 44), as far as the dynamic linker
# can tell:
#
#  (a) ELF identity against the system library:
#      - SONAME is libibverbs.so.1;
#      - the defined dynamic symbols (name@version / name@@version, with
#        FUNC/OBJECT type) are the same set; the diff is printed if not;
#      - the version definitions (node names, flags, parent chain) match;
#      - verbs_allow_disassociate_destroy is a 1-byte OBJECT.
#  (b) every Debian client we care about still links against ours with
#      BIND_NOW semantics: `ldd -r` of the ibverbs-utils and perftest
#      binaries, libmlx5/libefa (ibverbs-providers), librdmacm and every
#      pyverbs extension must resolve libibverbs.so.1 to BUILD_LIB_DIR and
#      report no missing library, version node or symbol;
#  (c) /usr/bin/python3 can import pyverbs.device and the mlx5/efa
#      provider modules with our library loaded (and it is ours that got
#      mapped).
#
# Pieces whose package is not installed print a SKIP line and count
# neither way.  The last line is "N passed, M failed"; the exit status is
# 1 when M > 0, 2 on bad usage.  Needs readelf and objdump (binutils).
# URXE_ABI_REFERENCE overrides the reference library's path.

set -u

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_LIB_DIR" >&2
	exit 2
fi

LIBDIR=$(cd "$1" && pwd -P)
OURS="$LIBDIR/libibverbs.so.1"
SYSLIB=/usr/lib/x86_64-linux-gnu
REF=${URXE_ABI_REFERENCE:-$SYSLIB/libibverbs.so.1}
PYTHON=/usr/bin/python3
PYVERBS_DIR=/usr/lib/python3/dist-packages/pyverbs

# shellcheck source=tests/abi/abi_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/abi_lib.sh"

sym_field() {	# sym_field LIB NAME FIELD(readelf column)
	readelf --dyn-syms -W "$1" |
		awk -v n="$2" -v f="$3" '$7 != "UND" && $8 ~ "^" n "@" { print $f; exit }'
}

check_identity() {
	local size type private ours

	check_soname libibverbs.so.1

	size=$(sym_field "$OURS" verbs_allow_disassociate_destroy 3)
	type=$(sym_field "$OURS" verbs_allow_disassociate_destroy 4)
	if [ "$type" = OBJECT ] && [ "$size" = 1 ]; then
		pass "verbs_allow_disassociate_destroy is a 1-byte OBJECT"
	else
		fail "verbs_allow_disassociate_destroy is '${type:-missing}' of size '${size:-?}', want OBJECT of 1"
	fi

	if [ ! -f "$REF" ]; then
		skip "reference $REF absent (package libibverbs1): symbol and version comparison not run"
		return
	fi

	# Beyond Debian's set, one private node for urxe's own librdmacm
	# (docs/design.md, "RDMA CM"): nothing else.
	private=$(defined_syms "$OURS" | grep 'URXE_PRIVATE_' | tr '\n' ' ')
	if [ "$private" = "URXE_PRIVATE_1 OBJECT urxe_private_gsi@@URXE_PRIVATE_1 FUNC " ]; then
		pass "the one private addition: urxe_private_gsi@@URXE_PRIVATE_1"
	else
		fail "private symbols are '$private', want urxe_private_gsi@@URXE_PRIVATE_1 alone"
	fi
	ours=$(defined_syms "$OURS")
	same "dynamic symbols identical to $REF ($(echo "$ours" | wc -l) defined)" \
		"dynamic symbols differ from $REF (< reference, > ours):" \
		"$(defined_syms "$REF")" "$(echo "$ours" | grep -v 'URXE_PRIVATE_')"

	ours=$(verdefs "$OURS")
	same "version definitions identical ($(echo "$ours" | wc -l) incl. base)" \
		"version definitions differ from $REF (< reference, > ours):" \
		"$(verdefs "$REF")" "$(echo "$ours" | grep -v ' URXE_PRIVATE_')"
}

# Some pyverbs modules (enums, base, wr, ...) only use inline verbs and do
# not link libibverbs at all; for them only the missing-anything rule holds.
check_ldd() {	# check_ldd FILE
	local out bad

	out=$(LD_LIBRARY_PATH="$LIBDIR" ldd -r "$1" 2>&1)
	bad=$(echo "$out" | grep -E 'not found|undefined symbol|version .* not found')
	if [ -n "$bad" ]; then
		fail "ldd -r $1:"
		echo "$bad" | detail
	elif ! echo "$out" | grep -q 'libibverbs\.so'; then
		pass "ldd -r $1 (does not link libibverbs)"
	elif ! echo "$out" | grep -qF "=> $OURS ("; then
		fail "ldd -r $1: libibverbs.so.1 does not resolve to $OURS:"
		echo "$out" | grep libibverbs | detail
	else
		pass "ldd -r $1"
	fi
}

check_clients() {
	local f

	if installed ibverbs-utils; then
		for f in $(dpkg -L ibverbs-utils | grep 'bin/'); do
			is_elf "$f" && check_ldd "$f"
		done
	else
		skip "ibverbs-utils not installed: ibv_* clients not checked"
	fi

	if installed perftest; then
		for f in $(dpkg -L perftest); do
			is_elf "$f" && check_ldd "$f"
		done
	else
		skip "perftest not installed: ib_*_bw/lat clients not checked"
	fi

	if installed ibverbs-providers; then
		for f in "$SYSLIB/libmlx5.so.1" "$SYSLIB/libefa.so.1"; do
			if [ -e "$f" ]; then
				check_ldd "$f"
			else
				fail "$f missing although ibverbs-providers is installed"
			fi
		done
	else
		skip "ibverbs-providers not installed: libmlx5/libefa not checked"
	fi

	if [ -e "$SYSLIB/librdmacm.so.1" ]; then
		check_ldd "$SYSLIB/librdmacm.so.1"
	else
		skip "librdmacm1 not installed: librdmacm.so.1 not checked"
	fi

	if [ -d "$PYVERBS_DIR" ]; then
		while IFS= read -r f; do
			check_ldd "$f"
		done < <(find "$PYVERBS_DIR" -name '*.so' | sort)
	else
		skip "python3-pyverbs not installed: pyverbs extensions not checked"
	fi
}

check_pyverbs_import() {
	local out
	local mods='pyverbs.device, pyverbs.providers.mlx5.mlx5dv, pyverbs.providers.efa.efadv'

	if [ ! -d "$PYVERBS_DIR" ] || [ ! -x "$PYTHON" ]; then
		skip "python3-pyverbs or $PYTHON absent: import not checked"
		return
	fi
	# A sanitizer build needs its runtime first in an unmodified python.
	local asan
	asan=$(ldd "$OURS" 2>/dev/null | awk '/libasan/ {print $3; exit}')
	# Also print which libibverbs got mapped, to be sure it is ours.
	if ! out=$(LD_PRELOAD="${asan:-}" ASAN_OPTIONS=detect_leaks=0 \
		LD_LIBRARY_PATH="$LIBDIR" "$PYTHON" -c "
import $mods
maps = open('/proc/self/maps').read().split('\n')
print(sorted({l.split()[-1] for l in maps if 'libibverbs.so' in l}))
" 2>&1); then
		fail "$PYTHON -c 'import $mods':"
		echo "$out" | tail -5 | detail
	elif ! echo "$out" | grep -qF "'$LIBDIR/libibverbs.so.1"; then
		fail "import $mods loaded another libibverbs: $out"
	else
		pass "$PYTHON -c 'import $mods'"
	fi
}

if [ ! -e "$OURS" ]; then
	fail "$OURS does not exist"
else
	check_identity
	check_clients
	check_pyverbs_import
fi

finish
