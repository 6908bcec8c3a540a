#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_rdmacm BUILD_DIR: RDMA CM (this build's librdmacm.so.1) under Debian's
# unmodified rdmacm-utils, perftest and qperf, server and client as an
# ordinary user on loopback, each end its own process (its own
# 127.117.x.y address: the listener registry steers 127.0.0.1 to it):
#   rping -v -C 100, -V -S 1000 -C 50, -q -C 10; a persistent server (-P)
#     serving 3 clients in turn and then 3 side by side;
#   ucmatose -c 10, and -c 4 -m (rdma_migrate_id);
#   udaddy (UD through SIDR); mckey, two receivers and a sender;
#   rdma_server/rdma_client, rdma_xserver/rdma_xclient -c r and -c x (XRC);
#   cmtime -c 100 (every step reported);
#   ib_send_bw, ib_write_bw, ib_read_lat and ib_send_bw -c UD with -R,
#     ib_write_bw -z;
#   qperf -cm1 rc_bw rc_lat;
#   fio's rdma engine, 16 MiB of 64 KiB blocks with each verb (write,
#     read, send): both jobs exit 0 with err=0, the client's bandwidth
#     line shows every byte moved (the receiver posts a receive for every
#     block: fio's client asks for no RNR retries, so a receiver that a
#     loaded machine does not run in time would end a SEND run, on any
#     device);
#   the first REQ and REP lost (URXE_FAULTS): sent again, connected;
#   nobody listening: rping's client gets RDMA_CM_EVENT_REJECTED with IB
#     reason 8 (invalid service ID) at once, as from a kernel host.
# Then (root) across two network namespaces on a veth pair, IPv4 and IPv6:
# rping, ucmatose, udaddy, mckey and perftest -R, libfabric's
# fi_pingpong -e msg and -e rdm (verbs;ofi_rxm), and an IPv6 request to
# an IPv4 listener (UNREACHABLE, status 1).
# Every run must exit 0 (servers that never exit are stopped by pid once
# their clients are done) and print what shows the work was done.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v rping >/dev/null || skip "no rping (rdmacm-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

T_LIMIT=40		# per program
# rdmacm-utils, perftest and qperf are not leak-clean (rping frees
# neither its device list nor its buffers): leak checking off for them, as
# in t_perftest; ASan and UBSan stay on.  The unit tests check ours.
LIB="LD_LIBRARY_PATH=$B/lib"
NOLEAK=()
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	NOLEAK=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")
PS_TCP=106 PS_UDP=111 PS_IB=13f	# the port spaces, as the registry names them

# The user's programs pick this build's librdmacm.so.1 too.
capture ldd_cm as_user_plain "$LIB" ldd /usr/bin/rping
if grep -qF "=> $B/lib/librdmacm.so.1 (" "$(out ldd_cm)" &&
   grep -qF "=> $B/lib/libibverbs.so.1 (" "$(out ldd_cm)"; then
	pass "rping loads $B/lib/librdmacm.so.1 and libibverbs.so.1"
else
	show ldd_cm
	die "$TUSER's rping does not load this build's librdmacm.so.1"
fi

# How servers and clients run (part (b) points them at the namespaces),
# and the namespace the servers listen in ("": the host's).
SRUN=(as_user "${NOLEAK[@]}" "$LIB")
CRUN=(as_user "${NOLEAK[@]}" "$LIB")
LNS=""

# cm_listens PORT PS: an RDMA CM listener holds PORT in port space PS.
cm_listens() {
	local pre=()
	[ -z "$LNS" ] || pre=(ip netns exec "$LNS")
	"${pre[@]}" ss -Hxl 2>/dev/null | grep -qF "@urxe-v2/cm/$2/$1 "
}

# cm_serve NAME PORT PS ARGS...: a server in the background, waited for
# until it listens (20 s at most); sets BG_PID.  1 if it never did.
cm_serve() {
	local name=$1 port=$2 ps=$3 deadline=$((SECONDS + 20))
	shift 3
	bg_user "$name" "${SRUN[@]}" "$@"
	until cm_listens "$port" "$ps"; do
		alive "$BG_PID" && [ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# pair DESC NAME PORT PS SERVER_ARGS -- CLIENT_ARGS: a server that exits by
# itself after its client; both must exit 0.  Returns 1 otherwise.
pair() {
	local desc=$1 name=$2 port=$3 ps=$4 srv=() cli=() spid
	shift 4
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if ! cm_serve "$name.srv" "$port" "$ps" "${srv[@]}"; then
		reap "$BG_PID"
		fail "$desc: the server never listened on port $port"
		show "$name.srv"
		return 1
	fi
	spid=$BG_PID
	capture "$name.cli" "${CRUN[@]}" "${cli[@]}"
	local crc=$RC
	reap "$spid"
	local src=$RC
	if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
		pass "$desc: server and client exit 0"
		return 0
	fi
	fail "$desc: server exit $src, client exit $crc"
	show "$name.srv" "$src"
	show "$name.cli" "$crc"
	return 1
}

# count NAME ERE [out|err]: lines of NAME's output matching ERE.
count() { grep -Ec -- "$2" "$WORK/out/$1.${3:-out}" || true; }

next_port P
# --- rping ------------------------------------------------------------------
if pair "rping -v -C 100" rp1 "$P" $PS_TCP \
	rping -s -a 127.0.0.1 -p "$P" -v -C 100 -- \
	rping -c -a 127.0.0.1 -p "$P" -v -C 100; then
	n=$(count rp1.cli '^ping data: rdma-ping-')
	m=$(count rp1.srv '^server ping data: rdma-ping-')
	check "rping -v -C 100: the client shows 100 pings ($n), the server 100 ($m)" \
		test "$n" -eq 100 -a "$m" -eq 100
fi
next_port P
pair "rping -V -S 1000 -C 50 (data validated)" rp2 "$P" $PS_TCP \
	rping -s -a 0.0.0.0 -p "$P" -V -S 1000 -C 50 -- \
	rping -c -a 127.0.0.1 -p "$P" -V -S 1000 -C 50 || true
next_port P
pair "rping -q -C 10 (the user's own QP)" rp3 "$P" $PS_TCP \
	rping -s -a 127.0.0.1 -p "$P" -q -C 10 -- \
	rping -c -a 127.0.0.1 -p "$P" -q -C 10 || true

# A persistent server: clients in turn, then at once.
next_port P
if cm_serve rpP.srv "$P" $PS_TCP rping -s -P -a 127.0.0.1 -p "$P" -V; then
	spid=$BG_PID
	ok=0
	for i in 1 2 3; do
		capture "rpP.c$i" as_user "${NOLEAK[@]}" "$LIB" rping -c -a 127.0.0.1 -p "$P" -V -C 20
		if [ "$RC" -eq 0 ]; then ok=$((ok + 1)); else show "rpP.c$i"; fi
	done
	check "rping -P: 3 clients in turn exit 0 ($ok did)" test "$ok" -eq 3
	# rping's server takes one request at a time (a second arriving
	# before its main thread copied the first's id would make both use
	# one id, with any device): 0.2 s apart, each running for about 1 s.
	cpids=()
	for i in 4 5 6; do
		bg_user "rpP.c$i" as_user "${NOLEAK[@]}" "$LIB" rping -c -a 127.0.0.1 -p "$P" -V -C 300
		cpids+=("$BG_PID")
		sleep 0.2
	done
	ok=0
	for i in 0 1 2; do
		reap "${cpids[$i]}"
		if [ "$RC" -eq 0 ]; then ok=$((ok + 1)); else show "rpP.c$((i + 4))"; fi
	done
	check "rping -P: 3 clients side by side exit 0 ($ok did)" test "$ok" -eq 3
	check "rping -P: the server still runs" alive "$spid"
	stop_pid "$spid"
else
	reap "$BG_PID"
	fail "rping -P: the server never listened"
	show rpP.srv
fi

# --- lost MADs ----------------------------------------------------------------
# Each side's first packet is dropped (URXE_FAULTS=drop=1,limit=1): the
# client's REQ, then the server's REP; the CM's timers send each again
# (REQ after 4.6 s, REP after 4.1 s) and the connection is made.
next_port P
F=(URXE_LOG=debug "URXE_FAULTS=drop=1,limit=1")
if pair "REQ and REP lost once each: rping -V -C 10 recovers" rpF "$P" $PS_TCP \
	"${F[@]}" rping -s -a 127.0.0.1 -p "$P" -V -C 10 -- \
	"${F[@]}" rping -c -a 127.0.0.1 -p "$P" -V -C 10; then
	expect_match "lost REQ: the client sent it again" rpF.cli \
		'RDMA CM: no answer: REQ again \(1 of 15\)' err
	expect_match "lost REP: the server sent it again" rpF.srv \
		'RDMA CM: no answer: REP again \(1 of 15\)' err
fi

# --- nobody listening ---------------------------------------------------------
next_port P
t0=$(date +%s%N)
capture rpN as_user "${NOLEAK[@]}" "$LIB" rping -c -a 127.0.0.1 -p "$P" -C 1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "nobody on port $P: rping's client fails (exit $RC)" test "$RC" -ne 0
expect_match "nobody on port $P: RDMA_CM_EVENT_REJECTED, IB reason 8" rpN \
	'RDMA_CM_EVENT_REJECTED, error 8' err
check "nobody on port $P: refused within 2 s (took $ms ms)" test "$ms" -lt 2000

# --- ucmatose, udaddy, mckey --------------------------------------------------
next_port P
if pair "ucmatose -c 10" uc1 "$P" $PS_TCP ucmatose -c 10 -p "$P" -- \
	ucmatose -s 127.0.0.1 -c 10 -p "$P"; then
	expect_match "ucmatose -c 10: the client completes" uc1.cli '^return status 0$'
fi
next_port P
pair "ucmatose -c 4 -m (ids migrated)" uc2 "$P" $PS_TCP ucmatose -c 4 -m -p "$P" -- \
	ucmatose -s 127.0.0.1 -c 4 -m -p "$P" || true
# udaddy's port is fixed (7174), in the UDP port space.
if pair "udaddy (SIDR)" ud1 7174 $PS_UDP udaddy -- udaddy -s 127.0.0.1; then
	expect_match "udaddy: data transfers complete" ud1.cli '^data transfers complete$'
fi

# mckey: two receivers on one group, then a sender.
G=239.255.$((RANDOM % 250)).$((1 + RANDOM % 250))
bg_user mk.r1 as_user "${NOLEAK[@]}" "$LIB" mckey -m "$G" -b 127.0.0.1 -C 10
r1=$BG_PID
bg_user mk.r2 as_user "${NOLEAK[@]}" "$LIB" mckey -m "$G" -b 127.0.0.1 -C 10
r2=$BG_PID
wait_for 10 grep -qs '^receiving data transfers' "$(out mk.r1)" || true
wait_for 10 grep -qs '^receiving data transfers' "$(out mk.r2)" || true
sleep 0.2
capture mk.s as_user "${NOLEAK[@]}" "$LIB" mckey -m "$G" -s -b 127.0.0.1 -C 10
expect_rc "mckey $G: the sender exits 0" 0 mk.s
reap "$r1"
expect_rc "mckey $G: receiver 1 gets its 10 datagrams and exits 0" 0 mk.r1
reap "$r2"
expect_rc "mckey $G: receiver 2 gets its 10 datagrams and exits 0" 0 mk.r2
expect_match "mckey: joined the group's MGID" mk.s "joined dgid: ::ffff:$G "

# --- the rdma_cma.h example programs -------------------------------------------
next_port P
pair "rdma_server / rdma_client" rs "$P" $PS_TCP rdma_server -p "$P" -- \
	rdma_client -s 127.0.0.1 -p "$P" || true
next_port P
pair "rdma_xserver / rdma_xclient -c r" rxr "$P" $PS_TCP \
	rdma_xserver -p "$P" -c r -- rdma_xclient -s 127.0.0.1 -p "$P" -c r || true
next_port P
pair "rdma_xserver / rdma_xclient -c x (XRC over RDMA CM)" rxx "$P" $PS_IB \
	rdma_xserver -p "$P" -c x -- rdma_xclient -s 127.0.0.1 -p "$P" -c x || true

# --- cmtime ------------------------------------------------------------------
next_port P
if cm_serve ct.srv "$P" $PS_TCP cmtime -p "$P"; then
	spid=$BG_PID
	capture ct.cli as_user "${NOLEAK[@]}" "$LIB" cmtime -s 127.0.0.1 -p "$P" -c 100
	expect_rc "cmtime -c 100: the client exits 0" 0 ct.cli
	for step in "create id" "resolve addr" "resolve route" "create qp" \
		    connect disconnect destroy; do
		line=$(grep -E "^$step *:" "$(out ct.cli)" || true)
		if [ -n "$line" ]; then
			pass "cmtime: $(echo "$line" | tr -s ' ')"
		else
			fail "cmtime: no '$step' line"
		fi
	done
	# A lost MAD costs a 4.6 s retry: 100 disconnects well within it.
	d=$(awk -F: '/^disconnect +:/ { split($2, a, " "); print int(a[1]) }' "$(out ct.cli)")
	check "cmtime: 100 disconnects in under 2 s (${d:-?} ms: nothing lost)" \
		test "${d:-99999}" -lt 2000
	stop_pid "$spid"
else
	reap "$BG_PID"
	fail "cmtime: the server never listened"
	show ct.srv
fi

# --- perftest over RDMA CM ----------------------------------------------------
# pt DESC NAME PROG ARGS...: server and client, the result line checked;
# the client connects to SHOST.
SHOST=127.0.0.1
pt() {
	local desc=$1 name=$2 prog=$3 line
	shift 3
	next_port P
	if pair "$desc" "$name" "$P" $PS_TCP "$prog" -p "$P" "$@" -- \
		"$prog" -p "$P" "$@" "$SHOST"; then
		line=$(awk '/^ *#bytes/ { getline; print; exit }' "$(out "$name.cli")")
		check "$desc: the client reports a result ('$line')" test -n "$line"
	fi
}
pt "ib_send_bw -R" pt1 ib_send_bw -R -n 500
pt "ib_write_bw -R" pt2 ib_write_bw -R -n 500
pt "ib_read_lat -R" pt3 ib_read_lat -R -n 500
pt "ib_send_bw -c UD -R" pt4 ib_send_bw -c UD -R -n 500
pt "ib_write_bw -z" pt5 ib_write_bw -z -n 500

# --- qperf -cm1 --------------------------------------------------------------
if command -v qperf >/dev/null; then
	next_port P
	if serve qp.srv "$P" as_user "${NOLEAK[@]}" "$LIB" qperf -lp "$P"; then
		spid=$BG_PID
		capture qp.cli as_user "${NOLEAK[@]}" "$LIB" qperf -lp "$P" -cm1 127.0.0.1 -t 1 \
			rc_bw rc_lat
		expect_rc "qperf -cm1 rc_bw rc_lat: exit 0" 0 qp.cli
		expect_match "qperf -cm1: rc_bw reports a bandwidth" qp.cli '^ +bw += +[0-9.]+ [GMK]B/sec'
		expect_match "qperf -cm1: rc_lat reports a latency" qp.cli '^ +latency += +[0-9.]+ us'
		stop_pid "$spid"
	else
		reap "$BG_PID"
		fail "qperf: the server never listened on TCP $P"
		show qp.srv
	fi
else
	note "qperf not installed: its run skipped"
fi

# --- fio's rdma engine --------------------------------------------------------
if command -v fio >/dev/null && fio --enghelp=rdma >/dev/null 2>&1; then
	for verb in write read send; do
		next_port P
		if pair "fio rdma verb=$verb" "fio_$verb" "$P" $PS_TCP \
			fio --name=receiver --ioengine=rdma --port="$P" --bs=64k \
			--size=16m --rw=read --iodepth=256 -- \
			fio --name=sender --ioengine=rdma --hostname=127.0.0.1 \
			--port="$P" --verb="$verb" --bs=64k --size=16m --rw=write \
			--iodepth=1 --iodepth_batch_complete=1; then
			expect_match "fio rdma verb=$verb: the sender reports no error" \
				"fio_$verb.cli" 'err= 0:'
			expect_match "fio rdma verb=$verb: the sender moved 16 MiB" \
				"fio_$verb.cli" 'WRITE: .*io=16.0MiB'
		fi
	done
else
	note "fio or its rdma engine not installed: its runs skipped"
fi

# --- (b) two network namespaces over a veth pair, IPv4 and IPv6 ---------------
# rxe0 on vethA (198.18.0.1, 2001:db8::1) serves, rxe0 on vethB
# (198.18.0.2, 2001:db8::2) connects: the REQ goes to the address, no
# steering.  The udp backend takes one process per address: one server
# and one client at a time.
if [ "$(id -u)" -ne 0 ]; then
	note "(b) skipped: network namespaces need root"
	finish
fi
veth_pair 198.18.0 v6
tx_csum_off "$A" vethA
tx_csum_off "$NB" vethB
SRUN=(ns_user "$A" "${NOLEAK[@]}" "$LIB" "URXE_DEVICES=rxe0 netdev vethA")
CRUN=(ns_user "$NB" "${NOLEAK[@]}" "$LIB" "URXE_DEVICES=rxe0 netdev vethB")
LNS=$A

for ip in 198.18.0.1 2001:db8::1; do
	next_port P
	if pair "ns $ip: rping -v -C 20" "n_rp_$ip" "$P" $PS_TCP \
		rping -s -a "$ip" -p "$P" -v -C 20 -- rping -c -a "$ip" -p "$P" -v -C 20; then
		n=$(count "n_rp_$ip.cli" '^ping data: rdma-ping-')
		check "ns $ip: rping's client shows 20 pings ($n)" test "$n" -eq 20
	fi
	next_port P
	pair "ns $ip: ucmatose -c 4" "n_uc_$ip" "$P" $PS_TCP \
		ucmatose -b "$ip" -c 4 -p "$P" -- ucmatose -s "$ip" -c 4 -p "$P" || true
	pair "ns $ip: udaddy (SIDR)" "n_ud_$ip" 7174 $PS_UDP \
		udaddy -b "$ip" -- udaddy -s "$ip" || true
done
# libfabric's verbs provider, which takes the RDMA CM for its connected
# endpoints: fi_pingpong -e msg (FI_EP_MSG) and -e rdm over
# verbs;ofi_rxm, 100 round trips of 4 KiB.  (On lo libfabric offers no
# MSG endpoint: it skips devices on loopback interfaces.)
if command -v fi_pingpong >/dev/null; then
	for ep in msg rdm; do
		prov=verbs
		[ "$ep" = rdm ] && prov="verbs;ofi_rxm"
		next_port P
		desc="ns: libfabric fi_pingpong -p '$prov' -e $ep"
		if serve "n_fi_$ep.srv" "$P" "${SRUN[@]}" fi_pingpong -p "$prov" \
			-e "$ep" -B "$P" -I 100 -S 4096; then
			spid=$BG_PID
			capture "n_fi_$ep.cli" "${CRUN[@]}" fi_pingpong -p "$prov" \
				-e "$ep" -P "$P" -I 100 -S 4096 198.18.0.1
			crc=$RC
			reap "$spid"
			if [ "$RC" -eq 0 ] && [ "$crc" -eq 0 ]; then
				pass "$desc: server and client exit 0"
			else
				fail "$desc: server exit $RC, client exit $crc"
				show "n_fi_$ep.srv" "$RC"
				show "n_fi_$ep.cli" "$crc"
			fi
			expect_match "$desc: 100 round trips of 4 KiB" "n_fi_$ep.cli" \
				'^4k +100 +=100 '
		else
			reap "$BG_PID"
			fail "$desc: the server never listened on TCP $P"
			show "n_fi_$ep.srv"
		fi
	done
else
	note "fi_pingpong (libfabric-bin) not installed: its runs skipped"
fi
# An IPv4 listener does not take an IPv6 request (as Linux): SIDR_REP
# status 1, UNREACHABLE.
if cm_serve n_ud46.srv 7174 $PS_UDP udaddy -b 198.18.0.1; then
	spid=$BG_PID
	capture n_ud46.cli "${CRUN[@]}" udaddy -s 2001:db8::1
	check "ns: an IPv6 request to an IPv4 listener fails (exit $RC)" test "$RC" -ne 0
	expect_match "ns: ... with RDMA_CM_EVENT_UNREACHABLE, status 1" n_ud46.cli \
		'RDMA_CM_EVENT_UNREACHABLE, error: 1'
	stop_pid "$spid"
else
	reap "$BG_PID"
	fail "ns: udaddy -b 198.18.0.1 never listened"
fi

# mckey: a receiver in A, the sender in B.
G=239.255.$((RANDOM % 250)).$((1 + RANDOM % 250))
bg_user n_mk.r "${SRUN[@]}" mckey -m "$G" -b 198.18.0.1 -C 10
r1=$BG_PID
wait_for 10 grep -qs '^receiving data transfers' "$(out n_mk.r)" || true
sleep 0.2
capture n_mk.s "${CRUN[@]}" mckey -m "$G" -s -b 198.18.0.2 -C 10
expect_rc "ns: mckey $G: the sender in B exits 0" 0 n_mk.s
reap "$r1"
expect_rc "ns: mckey $G: the receiver in A gets its 10 datagrams" 0 n_mk.r

SHOST=198.18.0.1
pt "ns: ib_send_bw -R" n_pt1 ib_send_bw -R -n 200
pt "ns: ib_write_bw -R" n_pt2 ib_write_bw -R -n 200
pt "ns: ib_read_lat -R" n_pt3 ib_read_lat -R -n 200
# (perftest's rdma_cm code asks rdma_getaddrinfo for AF_INET only: no IPv6.)

finish
