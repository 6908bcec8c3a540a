#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_turns BUILD_DIR: one side lives long, the other is restarted between
# connections (tests/urxe_turns: per round a TCP rendezvous, a new RC QP
# each side, 20 SENDs each way, every one checked).  A new process takes
# over the slot (address) and the UDP source ports its predecessor used,
# but its connected transmit sockets number their IPv4 IDs from a new
# random start, which the receiver must accept (the ICRC covers the ID).
#   - one long-lived listener, $TURNS connector processes in turn, on lo
#     with the udp backend: every round passes, dropped_icrc stays 0;
#   - the same across two network namespaces (veth, udp backend);
#   - the same on one namespace's lo with the packet backend;
#   - one long-lived connector, $TURNS listener processes in turn (the
#     server restarted under its client), on lo with the udp backend.
# Before the fix, 3-7 of 10 connectors got nothing (dropped_icrc climbed).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
assert_lib_loaded
traffic_turn

TURNS=${URXE_TEST_TURNS:-100}
TOOL=$B/tests/urxe_turns
URXE=$B/bin/urxe
[ -x "$TOOL" ] || die "$TOOL is not built"

# counter NAME COUNTER: the first device block's value in stats run NAME.
counter() {
	awk -v c="$2" '$1 == c && NF == 2 { print $2; exit }' "$(out "$1")"
}

# turns DESC LONG_RUNNER... -- SHORT_RUNNER...: LONG_RUNNER is a command
# prefix (runner, namespace, environment) for the long-lived end, which
# listens when LONG_ROLE=listen, else connects to $PEER; the short-lived
# end gets SHORT_RUNNER and the other role, $TURNS times in turn.  The
# long-lived end is asked for one round more, so that it is still open
# (its counters readable by `urxe stats`) when the last one is done.
turns() {
	local desc=$1 long=() short=() port i bad=0 lrole srole drop
	shift
	while [ "$1" != -- ]; do long+=("$1"); shift; done
	shift
	short=("$@")
	next_port port
	if [ "$LONG_ROLE" = listen ]; then lrole=(); srole=("$PEER"); else lrole=("$PEER"); srole=(); fi
	T_LIMIT=600 bg_user long "${long[@]}" "$TOOL" -p "$port" -g "$GIDX" \
		-n $((TURNS + 1)) -t 590 "${lrole[@]}"
	local lpid=$BG_PID
	for ((i = 0; i < TURNS; i++)); do
		alive "$lpid" || break
		T_LIMIT=30 capture "short_$i" "${short[@]}" "$TOOL" -p "$port" \
			-g "$GIDX" -t 20 "${srole[@]}"
		if [ "$RC" -ne 0 ]; then
			bad=$((bad + 1))
			[ "$bad" -gt 1 ] || show "short_$i"
		fi
	done
	check "$desc: $TURNS short-lived processes in turn all passed ($i ran, $bad failed)" \
		test "$bad" -eq 0 -a "$i" -eq "$TURNS"
	check "$desc: the long-lived process passed $TURNS rounds" \
		grep -q "^round $((TURNS - 1)) ok" "$(out long)"
	capture stats "${STATS[@]}" "$URXE" stats
	drop=$(counter stats dropped_icrc)
	check "$desc: the long-lived process's dropped_icrc is 0 (got '${drop:-none}')" \
		test "${drop:-x}" = 0
	[ "${drop:-x}" = 0 ] || show stats
	stop_pid "$lpid"
	[ "$bad" -eq 0 ] || show long
}

# --- lo, udp backend ------------------------------------------------------------

GIDX=0
PEER=127.0.0.1
STATS=(as_user)
LONG_ROLE=listen
turns "lo, udp: long-lived server, clients in turn" as_user -- as_user
# The server restarted under a long-lived client: this case failed in
# about half of the full suite runs at one time (retry exceeded at some
# round); not seen since the ID rules changed for a new flow's first frame
# and for IDs that step back (wire/ipid.c), though the cause was never
# pinned down: it runs, so CI shows any return.  URXE_TURNS_SERVERS=0
# leaves it out.
if [ "${URXE_TURNS_SERVERS:-1}" = 1 ]; then
	LONG_ROLE=connect
	turns "lo, udp: long-lived client, servers in turn" as_user -- as_user
else
	note "SKIP lo, udp: long-lived client, servers in turn (URXE_TURNS_SERVERS=0)"
fi

# --- two namespaces, udp backend ---------------------------------------------

if [ "$(id -u)" -ne 0 ]; then
	note "not root: no namespaces"
	finish
fi
veth_pair 198.18.7
GIDX=1
PEER=198.18.7.1
STATS=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
LONG_ROLE=listen
turns "veth, udp: long-lived server, clients in turn" \
	ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA" -- \
	ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB"

# --- one namespace's lo, packet backend --------------------------------------

GIDX=0
PEER=127.0.0.1
STATS=(ns_user "$A" "URXE_DEVICES=rxe0 netdev lo backend packet")
LONG_ROLE=listen
turns "lo, packet: long-lived server, clients in turn" \
	ns_user_cap "$A" "URXE_DEVICES=rxe0 netdev lo backend packet" -- \
	ns_user_cap "$A" "URXE_DEVICES=rxe0 netdev lo backend packet"

finish
