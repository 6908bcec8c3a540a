#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_rc_pingpong BUILD_DIR: two processes exchange RC SENDs through urxe.
# Debian's unmodified ibv_rc_pingpong, server and client, run as an
# ordinary user: messages of 1 B, 4 KiB, 64 KiB and 1 MiB, each once with
# -c (the server checks the data) and once with -c -e (completion events
# instead of polling), and twice more with -N (sends through
# ibv_create_qp_ex and the ibv_wr_* calls); both ends must exit 0 and the
# server must find no invalid data.
#   (a) on loopback: rxe0 on lo, GID index 0 (each process its own
#       ::ffff:127.x.y.z);
#       Then a server stopped (SIGSTOP) for 3 s in the middle of a run:
#       its client's QP must not time out (kernel rxe answers for it);
#   (b) across two network namespaces joined by a veth pair (root only):
#       rxe0 on vethA (198.18.0.1) and on vethB (198.18.0.2), GID index 1,
#       the IPv4 entry; one more run over the IPv6 GID (2001:db8::).
# tcpdump records every run into a file of its own (on lo, or on vethA in
# namespace A), and the project's frame validator must accept every frame.
# Without root (b) and the captures are skipped; (a) still runs.  Heavy
# traffic: it takes turns with the other such tests (traffic_turn).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ibv_rc_pingpong >/dev/null || skip "no ibv_rc_pingpong (ibverbs-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

T_LIMIT=30		# per program
ROOT=0
[ "$(id -u)" -ne 0 ] || ROOT=1
PCAP=$ROOT
command -v tcpdump >/dev/null || PCAP=0
[ "$PCAP" -eq 1 ] || note "captures skipped: they need root and tcpdump"
LIB="LD_LIBRARY_PATH=$B/lib"
# SIZE:ITERATIONS
RUNS=(1:50 4096:50 65536:50 1048576:10)

# pp WHERE SIZE ITERS FLAGS [gso]: one server/client run; WHERE is lo, ns4
# or ns6.  Checks both exit codes, the server's data check, what each end
# says about the transfer and the peer's GID, and the capture.  A captured
# run sends one datagram per packet (URXE_GSO=0), so that tcpdump records
# each; "gso" runs uncaptured, with GSO sends and GRO receives.
pp() {
	local where=$1 size=$2 n=$3 flags=$4 port name desc srv cli host gidx \
		srv_gid cli_gid iface pns="" bytes cap=$PCAP
	local -a fl hosts genv=()
	[ "${5:-}" != gso ] || cap=0
	[ "$cap" -eq 0 ] || genv=(URXE_GSO=0)
	read -ra fl <<<"$flags"
	next_port port
	name="${where}_${size}${flags// /}${5:+_$5}"
	case $where in
	lo)
		srv=(as_user) cli=(as_user) host=localhost gidx=0 iface=lo
		srv_gid='::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+' cli_gid=$srv_gid
		;;
	ns4 | ns6)
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
		cli=(ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB")
		host=198.18.0.1 iface=vethA pns=$A
		if [ "$where" = ns4 ]; then
			gidx=1 srv_gid='::ffff:198\.18\.0\.1' cli_gid='::ffff:198\.18\.0\.2'
		else
			gidx=2 srv_gid='2001:db8::1' cli_gid='2001:db8::2'
		fi
		;;
	esac
	desc="$where: ibv_rc_pingpong -g $gidx -s $size -n $n $flags${5:+ ($5)}"
	[ "$cap" -eq 0 ] || pcap_start "pp_$name" "$iface" "$pns"
	local args=(ibv_rc_pingpong -d rxe0 -g "$gidx" -p "$port" -s "$size"
		    -n "$n" "${fl[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a scmd=("${srv[@]}" "${genv[@]}" URXE_LOG=debug "$LIB" "${args[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a ccmd=("${cli[@]}" "${genv[@]}" URXE_LOG=debug "$LIB" "${args[@]}" "$host")
	if ! run_pair "$name" "$desc" "$port" scmd ccmd; then
		[ "$cap" -eq 0 ] || pcap_abort
		return
	fi
	pp_data_ok "$desc" "$name"
	# "409600 bytes in 0.14 seconds = ..." and "50 iters in ...": n
	# iterations each way.
	bytes=$((2 * size * n))
	pp_reports "$desc: the client" "$name.cli" "$CRC" "$bytes" "$n"
	pp_reports "$desc: the server" "$name.srv" "$SRC" "$bytes" "$n"
	expect_match "$desc: the client's peer is the server's GID $srv_gid" \
		"$name.cli" "^  remote address: .* GID $srv_gid\$"
	expect_match "$desc: the server's peer is the client's GID $cli_gid" \
		"$name.srv" "^  remote address: .* GID $cli_gid\$"
	if [ "$cap" -eq 1 ]; then
		mapfile -t hosts < <(gid_hosts "$name.srv" "$name.cli")
		pcap_check "pp_$name" "$desc" "${hosts[@]}"
		pcap_has "pp_$name" "$desc: the capture holds RC SENDs" 00 01 02 03 04 05
		pcap_has "pp_$name" "$desc: the capture holds RC ACKs" 11
	fi
}

# --- (a) loopback ------------------------------------------------------------

for r in "${RUNS[@]}"; do
	for f in "-c" "-c -e"; do
		pp lo "${r%:*}" "${r#*:}" "$f"
	done
done
# The extended QP: ibv_wr_start/ibv_wr_send/ibv_wr_set_sge/ibv_wr_complete.
pp lo 4096 50 "-c -N"
pp lo 65536 50 "-c -e -N"
if [ "$PCAP" -eq 1 ]; then
	pp lo 1048576 10 "-c" gso
	pp lo 65536 50 "-c -e" gso
fi

# A peer that stops (SIGSTOP: a debugger, a starved CPU) for longer than the
# retry budget (8 x 67 ms): kernel rxe answers for a stopped process, so
# its peers never time out; neither may urxe's.  The server stops for 3 s
# in the middle of a run; both must go on and exit 0.
stopped_peer() {
	local port spid cpid prog crc
	next_port port
	local args=(ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -s 4096 -n 100000 -c)
	if ! serve stop.srv "$port" as_user "$LIB" "${args[@]}"; then
		reap "$BG_PID"
		fail "stopped peer: the server did not listen"
		show stop.srv
		return
	fi
	spid=$BG_PID
	bg_user stop.cli as_user "$LIB" "${args[@]}" localhost
	cpid=$BG_PID
	sleep 0.5	# connected, exchanging (its output is buffered: no sign)
	prog=$(pgrep -P "$spid" | head -n 1) || true
	if [ -z "$prog" ] || ! kill -STOP "$prog" 2>/dev/null || ! alive "$cpid"; then
		stop_pid "$cpid"
		stop_pid "$spid"
		fail "stopped peer: the run was over before the server could be stopped"
		return
	fi
	sleep 3
	kill -CONT "$prog"
	reap "$cpid"
	crc=$RC
	reap "$spid"
	if [ "$crc" -eq 0 ] && [ "$RC" -eq 0 ] &&
		! grep -qi "fail\|invalid" "$(out stop.srv)" "$(out stop.cli)" "$(err stop.cli)"; then
		pass "stopped peer: ibv_rc_pingpong's server stopped 3 s mid-run; both went on and exit 0"
	else
		fail "stopped peer: client exit $crc, server exit $RC"
		show stop.srv "$RC"
		show stop.cli "$crc"
	fi
}
stopped_peer

# --- (b) two namespaces over a veth pair --------------------------------------

if [ "$ROOT" -eq 0 ] || ! command -v ip >/dev/null; then
	note "SKIP the namespace part: network namespaces need root and ip"
	finish
fi
veth_pair 198.18.0 v6
# So that the IPv6 frames tcpdump records carry their real UDP checksums.
tx_csum_off "$A" vethA
tx_csum_off "$NB" vethB
assert_lib_loaded "$A"

# GID[1] must be the IPv4 address, GID[2] the IPv6 one: the indexes used.
capture devinfoA ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA" "$LIB" ibv_devinfo -v
capture devinfoB ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB" "$LIB" ibv_devinfo -v
check "in A, GID[1] is ::ffff:198.18.0.1 (got '$(gid_at devinfoA 1)')" \
	test "$(gid_at devinfoA 1)" = ::ffff:198.18.0.1
check "in B, GID[1] is ::ffff:198.18.0.2 (got '$(gid_at devinfoB 1)')" \
	test "$(gid_at devinfoB 1)" = ::ffff:198.18.0.2
check "in A, GID[2] is 2001:db8::1 (got '$(gid_at devinfoA 2)')" \
	test "$(gid_at devinfoA 2)" = 2001:db8::1
check "in B, GID[2] is 2001:db8::2 (got '$(gid_at devinfoB 2)')" \
	test "$(gid_at devinfoB 2)" = 2001:db8::2

for r in "${RUNS[@]}"; do
	for f in "-c" "-c -e"; do
		pp ns4 "${r%:*}" "${r#*:}" "$f"
	done
done
pp ns6 65536 20 "-c"
if [ "$PCAP" -eq 1 ]; then
	pp ns4 1048576 10 "-c" gso
	pp ns6 1048576 10 "-c -e" gso
fi

finish
