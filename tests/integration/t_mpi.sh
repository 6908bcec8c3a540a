#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_mpi BUILD_DIR: Open MPI over libfabric's verbs;ofi_rxd provider (UD
# QPs through libibverbs), two ranks on this host, as an ordinary user:
# Debian's mpirun runs tests/tools/mpi_pingpong (built here with mpicc)
# with --mca pml cm --mca mtl ofi, FI_PROVIDER and
# mtl_ofi_provider_include "verbs;ofi_rxd", LD_LIBRARY_PATH at this
# build.  MPI_Finalize unloads the ofi component, libfabric, librdmacm
# and libibverbs.so.1 while librdmacm still holds the contexts its
# rdma_get_devices() opened: before the library took itself down on
# unloading, its engine thread then ran in unmapped code (SIGSEGV in 4 of
# 6 runs).  RUNS runs, each must:
#   - exit 0, every message back intact;
#   - have both ranks map this build's libibverbs.so.1, and the ofi MTL
#     pick the rxe0-dgram domain (urxe's device);
#   - show in the library's debug log that both ranks sent packets and
#     unloaded the library (the path that crashed).
# Skips (77) without mpirun, mpicc and mpi.h (openmpi-bin,
# libopenmpi-dev) or libfabric1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
RUNS=${URXE_MPI_RUNS:-5}
command -v mpirun >/dev/null || skip "no mpirun (install openmpi-bin)"
command -v mpicc >/dev/null || skip "no mpicc (install openmpi-bin)"
# grep reads to the end: with -q, ldconfig could die of SIGPIPE, and
# pipefail would then call libfabric missing.
ldconfig -p | grep 'libfabric\.so\.1 ' >/dev/null || skip "no libfabric.so.1 (install libfabric1)"
echo 'int main(void) { return 0; }' |
	mpicc -x c -o /dev/null - 2>/dev/null || skip "mpicc cannot build (install libopenmpi-dev)"
echo '#include <mpi.h>' | mpicc -x c -E -o /dev/null - 2>/dev/null ||
	skip "no mpi.h (install libopenmpi-dev)"
urxe_it_init "$@"
assert_lib_loaded

PP=$WORK/mpi_pingpong
mpicc -O2 -Wall -Wextra -Werror -o "$PP" "$HERE/../tools/mpi_pingpong.c" ||
	die "mpicc failed on mpi_pingpong.c"
chmod 755 "$PP"
WANT=$(readlink -f "$B/lib/libibverbs.so.1")
PROV="verbs;ofi_rxd"

for i in $(seq 1 "$RUNS"); do
	# Open MPI is not leak-clean; its leaks are not ours.
	T_LIMIT=90 capture "mpi$i" as_user LD_LIBRARY_PATH="$B/lib" \
		URXE_LOG=debug ASAN_OPTIONS=detect_leaks=0 \
		mpirun -np 2 --oversubscribe \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$PROV" \
		--mca mtl_base_verbose 100 \
		-x LD_LIBRARY_PATH -x URXE_RUNDIR -x URXE_LOG -x FI_PROVIDER="$PROV" \
		"$PP"
	expect_rc "run $i: mpirun -np 2 (pml cm, mtl ofi, $PROV) exits 0" 0 "mpi$i"
	expect_match "run $i: every message came back intact" "mpi$i" \
		'^pingpong: [0-9]+ rounds of .* 0 bad bytes$'
	n=$(grep -cE "^rank [01] libibverbs: $WANT\$" "$(out "mpi$i")" || true)
	if [ "$n" -eq 2 ]; then
		pass "run $i: both ranks mapped $WANT"
	else
		fail "run $i: $n of 2 ranks mapped $WANT"
		show "mpi$i"
	fi
	n=$(grep -c 'mtl:ofi:provider: rxe0-dgram' "$(err "mpi$i")" || true)
	if [ "$n" -eq 2 ]; then
		pass "run $i: the ofi MTL of both ranks chose rxe0-dgram"
	else
		fail "run $i: $n of 2 ranks chose rxe0-dgram"
		show "mpi$i"
	fi
	n=$(grep -cE 'urxe: debug: slot [0-9]+: sent_pkts [1-9]' "$(err "mpi$i")" || true)
	if [ "$n" -eq 2 ]; then
		pass "run $i: both ranks sent packets through urxe"
	else
		fail "run $i: $n of 2 ranks report packets sent"
		show "mpi$i"
	fi
	n=$(grep -c 'urxe: debug: unloading:' "$(err "mpi$i")" || true)
	if [ "$n" -eq 2 ]; then
		pass "run $i: both ranks unloaded the library in MPI_Finalize"
	else
		fail "run $i: $n of 2 ranks unloaded the library"
		show "mpi$i"
	fi
done
finish
