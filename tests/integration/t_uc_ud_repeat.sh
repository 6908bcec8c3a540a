#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_uc_ud_repeat BUILD_DIR: unmodified, unpaced ib_send_bw with the
# unreliable transports on loopback, run as an ordinary user, 20 times in
# a row each: -c UC with its default 64 KiB messages and 1,000
# iterations, and -c UD with messages of the MTU (4096) and 5,000
# iterations (with 1,000 the UD series passed even without flow control
# on a host whose rmem_max allows 8 MiB receive sockets; with 5,000 its
# third run lost 1,036 messages).  A
# sender faster than its receiver must not lose a message to the receive
# socket (ib_send_bw's server would then wait for ever for it): between
# instances on one host the sender waits for room (docs/design.md, "Flow
# control on one host").  Every run: both ends exit 0 within T_LIMIT and
# the client prints its result line.  The first failure ends the series.
# Heavy traffic: it takes turns with the other such tests (traffic_turn).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ib_send_bw >/dev/null || skip "no ib_send_bw (perftest)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

T_LIMIT=20		# per program: a run takes ~1 s
ROUNDS=${URXE_TEST_UC_UD_ROUNDS:-20}
LIB="LD_LIBRARY_PATH=$B/lib"
# perftest is not leak-clean (see t_perftest): leak checking off for it.
NOLEAK=()
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	NOLEAK=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")

# one CONN SIZE ITERS I: run I of the series; 0 when both ends succeeded.
one() {
	local conn=$1 size=$2 iters=$3 i=$4 port name crc line
	next_port port
	name="bw_${conn}_$i"
	local args=(ib_send_bw -d rxe0 -x 0 -c "$conn" -s "$size" -n "$iters" -F
		    -p "$port")
	if ! serve "$name.srv" "$port" as_user "${NOLEAK[@]}" URXE_LOG=debug \
		"$LIB" "${args[@]}"; then
		reap "$BG_PID"
		note "run $i: the server did not start listening on TCP $port"
		show "$name.srv"
		return 1
	fi
	local spid=$BG_PID
	capture "$name.cli" as_user "${NOLEAK[@]}" URXE_LOG=debug "$LIB" \
		"${args[@]}" localhost
	crc=$RC
	reap "$spid"
	line=$(awk '/^ *#bytes/ { getline; print; exit }' "$(out "$name.cli")")
	if [ "$RC" -ne 0 ] || [ "$crc" -ne 0 ] || [ -z "$line" ]; then
		note "run $i: server exit $RC, client exit $crc"
		show "$name.srv" "$RC"
		show "$name.cli" "$crc"
		# What each instance sent, received and dropped (--all: exited).
		capture "$name.stats" urxe_cli stats --qp --all
		show "$name.stats"
		return 1
	fi
	LAST=$line
}

# series CONN SIZE ITERS: ROUNDS runs in a row, all of which must pass.
series() {
	local conn=$1 size=$2 iters=$3 i start=$SECONDS
	local desc="lo: ib_send_bw -c $conn -s $size -n $iters, unpaced, $ROUNDS times in a row"
	for ((i = 1; i <= ROUNDS; i++)); do
		if ! one "$conn" "$size" "$iters" "$i"; then
			fail "$desc: run $i failed"
			return
		fi
	done
	pass "$desc ($((SECONDS - start)) s; the last: $LAST)"
}

series UC 65536 1000
series UD 4096 5000
finish
