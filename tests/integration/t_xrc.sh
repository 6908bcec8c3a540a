#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_xrc BUILD_DIR: XRC end to end (kernel Soft-RoCE has none), run as an
# ordinary user.
#   (a) Debian's unmodified ibv_xsrq_pingpong on loopback (-g 0): one
#       client, three clients (-c 3, three client processes against one
#       server), with completion events (-e); one run captured by tcpdump
#       (root) and every frame validated by the project's validator, XRC
#       SENDs (0xA4) and ACKs (0xB1) among them;
#   (b) perftest ib_send_bw -c XRC and ib_write_bw -c XRC on loopback;
#   (c) three processes sharing one XRC domain through a file
#       (urxe_xrc_share): a host creates the TGT QP, two openers open it
#       with ibv_open_qp and each posts to its own XRC SRQ, a sender in a
#       fourth process addresses each SRQ in turn; every message must land
#       in the right process byte-exact; then the host is killed (SIGKILL)
#       and both openers must see IBV_EVENT_QP_FATAL within a second and
#       exit cleanly;
#   (d) ibv_xsrq_pingpong across two network namespaces joined by a veth
#       pair (root only): -g 1, one and three clients.
# Heavy traffic: it takes turns with the other such tests (traffic_turn).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ibv_xsrq_pingpong >/dev/null || skip "no ibv_xsrq_pingpong (ibverbs-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

ROOT=0
[ "$(id -u)" -ne 0 ] || ROOT=1
PCAP=$ROOT
command -v tcpdump >/dev/null || PCAP=0
[ "$PCAP" -eq 1 ] || note "captures skipped: they need root and tcpdump"
LIB="LD_LIBRARY_PATH=$B/lib"
T_LIMIT=60
xrc_domain_files || skip "a /tmp/xrc_domain* file of another user is unreadable (run as root)"

# xp WHERE CLIENTS SIZE ITERS FLAGS [capture]: one ibv_xsrq_pingpong run,
# a server and CLIENTS client processes; WHERE is lo or ns4.  Every
# process must exit 0 and print no failure.
xp() {
	local where=$1 nc=$2 size=$3 n=$4 flags=$5 port name desc srv cli \
		host gidx iface pns="" cap=0 i rc ok=1
	local -a fl cpids=() genv=() hosts
	[ "${6:-}" != capture ] || cap=$PCAP
	[ "$cap" -eq 0 ] || genv=(URXE_GSO=0)
	read -ra fl <<<"$flags"
	next_port port
	name="xsrq_${where}_c${nc}_s${size}${flags// /}"
	case $where in
	lo) srv=(as_user) cli=(as_user) host=localhost gidx=0 iface=lo ;;
	ns4)
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
		cli=(ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB")
		host=198.18.0.1 iface=vethA pns=$A gidx=1
		;;
	ns4p)
		# Several clients share vethB's one address: the packet
		# backend's (CAP_NET_RAW, ambient: still an ordinary user).
		# (A udp end's GSO super-frames cross a veth whole, and the
		# packet backend's ring takes frames: one datagram a packet.)
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA" URXE_GSO=0)
		cli=(ns_user_cap "$NB" "URXE_DEVICES=rxe0 netdev vethB backend packet")
		host=198.18.0.1 iface=vethA pns=$A gidx=1
		;;
	esac
	desc="$where: ibv_xsrq_pingpong -g $gidx -c $nc -s $size -n $n $flags"
	[ "$cap" -eq 0 ] || pcap_start "$name" "$iface" "$pns"
	local args=(ibv_xsrq_pingpong -d rxe0 -g "$gidx" -p "$port" -s "$size"
		    -n "$n" "${fl[@]}")
	if ! start_server "$name.srv" "$desc" "$port" "${srv[@]}" "${genv[@]}" "$LIB" \
		"${args[@]}" -c "$nc"; then
		[ "$cap" -eq 0 ] || pcap_abort
		return
	fi
	local spid=$BG_PID
	for ((i = 0; i < nc; i++)); do
		bg_user "$name.cli$i" "${cli[@]}" "${genv[@]}" "$LIB" "${args[@]}" "$host"
		cpids+=("$BG_PID")
	done
	for ((i = 0; i < nc; i++)); do
		reap "${cpids[$i]}"
		rc=$RC
		if [ "$rc" -ne 0 ]; then
			ok=0
			fail "$desc: client $i exit $rc"
			show "$name.cli$i" "$rc"
		fi
	done
	reap "$spid"
	if [ "$RC" -ne 0 ]; then
		ok=0
		fail "$desc: server exit $RC"
		show "$name.srv" "$RC"
	fi
	[ "$ok" -eq 0 ] || pass "$desc: the server and its $nc client(s) exit 0"
	if grep -Eqi "fail|error|couldn't" "$(out "$name.srv")" "$(err "$name.srv")"; then
		fail "$desc: the server prints a failure"
		show "$name.srv" 0
	else
		pass "$desc: the server prints no failure"
	fi
	if [ "$cap" -eq 1 ]; then
		# The server's and the clients' GIDs: on lo each process has its
		# own 127.117.x.y; the run's frames are those between two of them.
		mapfile -t hosts < <(sed -En 's/.*GID ::ffff:([0-9.]+).*/\1/p' \
			"$(out "$name.srv")" "$(out "$name.cli0")" | sort -u)
		if [ "${#hosts[@]}" -lt 2 ]; then
			hosts=()
			mapfile -t hosts < <(gid_hosts "$name.srv" "$name.cli0")
		fi
		pcap_check "$name" "$desc" "${hosts[@]:0:2}"
		pcap_has "$name" "$desc: the capture holds XRC SENDs" a0 a1 a2 a4 a5
		pcap_has "$name" "$desc: the capture holds XRC ACKs" b1
	fi
}

# --- (a) ibv_xsrq_pingpong on loopback ------------------------------------------

xp lo 1 4096 5 ""
xp lo 1 4096 50 "-e"
xp lo 3 4096 20 ""
xp lo 3 65536 10 "-e"
xp lo 1 4096 20 "" capture

# --- (b) perftest over XRC ----------------------------------------------------------

# perftest leaks what it never frees (the device list, objects of its own):
# not urxe's, and LeakSanitizer would fail it under the ASan build.
NOLEAK=()
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	NOLEAK=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")
for prog in ib_send_bw ib_write_bw; do
	next_port port
	name="pt_$prog"
	desc="lo: $prog -c XRC -s 65536 -n 200"
	args=("$B/bin/urxe" run -- "$prog" -d rxe0 -x 0 -F -c XRC -s 65536 -n 200 -p "$port")
	# shellcheck disable=SC2034 # run_pair reads it by name
	scmd=(as_user "${NOLEAK[@]}" "${args[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	ccmd=(as_user "${NOLEAK[@]}" "${args[@]}" localhost)
	run_pair "$name" "$desc" "$port" scmd ccmd || continue
	crc=$CRC
	line=$(awk '/^ *#bytes/ { getline; print; exit }' "$(out "$name.cli")")
	read -ra f <<<"$line"
	if [ "${#f[@]}" -ge 5 ] && [ "${f[1]}" = 200 ] &&
	   awk -v b="${f[3]}" 'BEGIN { exit !(b > 0) }'; then
		pass "$desc: the client reports ${f[3]} MB/s over ${f[1]} iterations"
	else
		fail "$desc: no result line with 200 iterations and a rate (got '$line')"
		show "$name.cli" "$crc"
	fi
done

# --- (c) three processes sharing one domain -----------------------------------------

share() {
	local dir=$WORK/tmp/share file count=50 size=3000 i host_pid kill_ns t
	local -a opids=()
	local tool=$B/tests/urxe_xrc_share
	rm -rf "$dir"
	mkdir -p "$dir"
	chmod 0777 "$dir"
	file=$dir/domain
	bg_user share.host as_user "$LIB" "$tool" host "$dir" "$file"
	host_pid=$BG_PID
	for i in 0 1; do
		bg_user "share.opener$i" as_user "$LIB" "$tool" opener "$dir" "$file" "$i" "$count" "$size"
		opids+=("$BG_PID")
	done
	capture share.sender as_user "$LIB" "$tool" sender "$dir" 2 "$count" "$size"
	if [ "$RC" -eq 0 ] && grep -q "^sender: $((2 * count)) messages .* 0 failed" "$(out share.sender)"; then
		pass "XRC sharing: the sender's $((2 * count)) messages, each to one of 2 SRQs in turn, complete successfully"
	else
		fail "XRC sharing: sender exit $RC"
		show share.sender
	fi
	for i in 0 1; do
		wait_for 20 test -e "$dir/opener.$i.done" ||
			fail "XRC sharing: opener $i did not get its $count messages"
	done
	# The host dies; the openers must hear of it within a second.
	# (timeout runs the host: the program is its child, by exec.)
	t=$(pgrep -P "$host_pid" || true)
	kill_ns=$(date +%s%N)
	if [ -n "$t" ]; then
		kill -KILL "$t" 2>/dev/null || true
	else
		fail "XRC sharing: no host process under timeout pid $host_pid"
		kill -KILL "$host_pid" 2>/dev/null || true
	fi
	reap "$host_pid"
	for i in 0 1; do
		reap "${opids[$i]}"
		if [ "$RC" -eq 0 ]; then
			pass "XRC sharing: opener $i exits 0 after the host's death"
		else
			fail "XRC sharing: opener $i exit $RC"
			show "share.opener$i" "$RC"
		fi
		expect_match "XRC sharing: opener $i got its $count messages of $size B through the shared TGT QP, byte-exact" \
			"share.opener$i" "^opener $i: $count messages of $size bytes from TGT QP [0-9]+ into SRQ [0-9]+, 0 bad$"
		t=$(sed -En 's/^fatal: ([0-9]+)$/\1/p' "$(out "share.opener$i")")
		if [ -n "$t" ] && [ $(((t - kill_ns) / 1000000)) -le 1000 ]; then
			pass "XRC sharing: opener $i saw IBV_EVENT_QP_FATAL $(((t - kill_ns) / 1000000)) ms after the host was killed"
		else
			fail "XRC sharing: opener $i saw no IBV_EVENT_QP_FATAL within 1 s of the host's death (${t:-none})"
			show "share.opener$i" "$RC"
		fi
	done
}
share

# --- (d) across two namespaces ----------------------------------------------------

if [ "$ROOT" -eq 0 ] || ! command -v ip >/dev/null; then
	note "SKIP the namespace part: network namespaces need root and ip"
	finish
fi
veth_pair 198.18.0
assert_lib_loaded "$A"

xp ns4 1 4096 20 ""
xp ns4 1 4096 20 "-e"
# The udp backend serves one process per address: three client processes
# in one namespace take the packet backend.
xp ns4p 3 4096 10 ""
xp ns4p 3 4096 10 "-e"

finish
