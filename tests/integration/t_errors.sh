#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_errors BUILD_DIR: RC error paths between two processes on loopback,
# driven by this build's urxe_xfer, server and client as an ordinary user
# (the in-process cases, both sides' statuses and events, are the unit
# suite test_errors):
#   - no receive posted: rnr_retry 0, 3 and 6 end in
#     IBV_WC_RNR_RETRY_EXC_ERR; with 7 the SEND keeps retrying until the
#     receive comes (300 ms later) and then both ends complete;
#   - a peer that vanishes (the server SIGKILLs itself after the
#     rendezvous): IBV_WC_RETRY_EXC_ERR, then IBV_WC_WR_FLUSH_ERR for the
#     three requests behind it, within 2 x (retry_cnt + 1) x 4.096 us x
#     2^timeout + 1 s (timeout 10 / retry_cnt 3, timeout 14 / retry_cnt 1,
#     timeout 8 / retry_cnt 7 -- seven, not forever); with timeout 0 (no
#     transport timer) nothing completes in 3 s;
#   - junk from a plain UDP socket (Python, as the user) at a live server's
#     127.117.x.y:4791 while it moves data: short frames, unknown opcodes,
#     TVer 1, truncated headers, payload on an ACK, bad pad, bad ICRCs,
#     unknown QPNs, the wrong transport, random bytes -- the transfer
#     still finishes byte-exact and the server's debug counters show the
#     frames dropped by reason (malformed, bad ICRC, no QP).
# And what a user reads at the default log level (exact text):
#   - GIDs: ibv_rc_pingpong -g 1 -c passes on loopback (GID[1] repeats
#     GID[0]); -g 3 on both sides names the indexes that exist; -g 20
#     (past the table) too;
#   - the vanished peer's client says its destination has no owner, and
#     why its QP failed (retry exceeded);
#   - errors_verbs.py (pyverbs): a modify_qp INIT->RTR with missing and
#     extra attributes names them; an RC QP sent to the GID of a process
#     that has exited (ibv_devinfo's) says nobody owns it, then why it
#     failed;
#   - a new network namespace (unshare -rn, lo down): which interface and
#     the command;
#   - UDP 4791 held on a veth (a Python socket in a namespace of this
#     test): where, how to find the owner, what to do.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
XFER=$B/tests/urxe_xfer
[ -x "$XFER" ] || die "$XFER is not built"
PY=/usr/bin/python3
LIB="LD_LIBRARY_PATH=$B/lib"
T_LIMIT=40

# pair NAME SRVARGS CLIARGS [ENV...]: a server (URXE_LOG=debug) and a
# client (its arguments, then localhost), both run to their end; sets
# SRC and CRC (exit codes).  SRVARGS/CLIARGS are space-separated strings.
pair() {
	local name=$1 port spid
	local -a sa ca env
	read -ra sa <<<"$2"
	read -ra ca <<<"$3"
	shift 3
	env=("$@")
	next_port port
	SRC=255 CRC=255
	if ! serve "$name.srv" "$port" as_user URXE_LOG=debug "$LIB" "${env[@]}" \
		"$XFER" -p "$port" -t 30 "${sa[@]}"; then
		reap "$BG_PID"
		fail "$name: the server did not listen on TCP $port"
		show "$name.srv"
		return
	fi
	spid=$BG_PID
	capture "$name.cli" as_user URXE_LOG=debug "$LIB" "${env[@]}" "$XFER" \
		-p "$port" -t 30 "${ca[@]}" localhost
	CRC=$RC
	reap "$spid"
	SRC=$RC
}

# --- RNR ---------------------------------------------------------------------

for r in 0 3 6; do
	desc="no receive, rnr_retry $r"
	pair "rnr$r" "-n 1" "--rnr-test -R $r -s 1"
	if [ "$CRC" -eq 0 ] && [ "$SRC" -eq 0 ]; then
		pass "$desc: client and server exit 0"
	else
		fail "$desc: client exit $CRC, server exit $SRC"
		show "rnr$r.cli" "$CRC"
		show "rnr$r.srv" "$SRC"
	fi
	expect_match "$desc: IBV_WC_RNR_RETRY_EXC_ERR" "rnr$r.cli" \
		"^PASS rnr_retry $r: IBV_WC_RNR_RETRY_EXC_ERR after "
done
desc="no receive, rnr_retry 7, the receive posted 300 ms late"
pair rnr7 "-n 12" "--rnr-test -R 7 --late 300 -s 1"
if [ "$CRC" -eq 0 ] && [ "$SRC" -eq 0 ]; then
	pass "$desc: client and server exit 0"
else
	fail "$desc: client exit $CRC, server exit $SRC"
	show rnr7.cli "$CRC"
	show rnr7.srv "$SRC"
fi
expect_match "$desc: still retrying after 300 ms, then success" rnr7.cli \
	'^PASS rnr_retry 7: still retrying'
expect_match "$desc: the server checked the message" rnr7.srv \
	'^verify: ok send: 1 messages'

# --- a vanished peer -----------------------------------------------------------

for tr in 10:3 14:1 8:7; do
	t=${tr%:*} r=${tr#*:}
	desc="vanished peer (SIGKILL), timeout $t, retry_cnt $r"
	pair "van$t" "" "--vanish-test -T $t -r $r -s 1"
	# The server dies by its own SIGKILL: timeout(1) reports 128 + 9.
	if [ "$CRC" -eq 0 ] && [ "$SRC" -eq 137 ]; then
		pass "$desc: the client exits 0, the server was killed"
	else
		fail "$desc: client exit $CRC, server exit $SRC (want 0, 137)"
		show "van$t.cli" "$CRC"
		show "van$t.srv" "$SRC"
	fi
	expect_match "$desc: RETRY_EXC_ERR then 3 x WR_FLUSH_ERR within the bound" \
		"van$t.cli" '^PASS vanished peer'
	expect_match "$desc: the client says nobody owns the server's address" \
		"van$t.cli" "^urxe: warning: rxe0: QP 0x[0-9a-f]{6} sends to ::ffff:127\.117\.[0-9]+\.[0-9]+, which no process on this host owns \(it exited, or the GID is wrong: \`ss -uln 'sport = :4791'\` lists the addresses in use\); the QP will exhaust its retries\$" err
	expect_match "$desc: ... and why its QP failed" "van$t.cli" \
		"^urxe: warning: rxe0: QP 0x[0-9a-f]{6} moved to ERR: retry exceeded \(no ACK for PSN [0-9]+ from QP 0x[0-9a-f]{6}, retry_cnt $r\): no process on this host owns ::ffff:127\.117\.[0-9]+\.[0-9]+ \(it exited, or the GID is wrong\)\$" err
	note "$desc: $(sed -n 's/^measured: //p' "$(out "van$t.cli")")"
done
desc="vanished peer, timeout 0 (no transport timer)"
pair van0 "" "--vanish-test -T 0 --late 3000 -s 1"
if [ "$CRC" -eq 0 ] && [ "$SRC" -eq 137 ]; then
	pass "$desc: the client exits 0, the server was killed"
else
	fail "$desc: client exit $CRC, server exit $SRC (want 0, 137)"
	show van0.cli "$CRC"
fi
expect_match "$desc: nothing completes in 3 s" van0.cli '^PASS timeout 0'

# --- junk at a live server -----------------------------------------------------

# The sender: frames to IP:4791 from 127.0.0.1 (ID 0 and DF, as urxe
# peers send, so that good ICRCs check), QPN the server's; prints counts.
JUNK_PY='
import os, random, socket, struct, sys, time, zlib
dst, qpn, seconds = sys.argv[1], int(sys.argv[2], 0), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)       # IP_MTU_DISCOVER, IP_PMTUDISC_DO
s.bind(("127.0.0.1", 0))
sport = s.getsockname()[1]
src4, dst4 = socket.inet_aton("127.0.0.1"), socket.inet_aton(dst)
def bth(op, dqpn, psn, pad=0, tver=0):
    return struct.pack(">BBHBBHI", op, (pad << 4) | tver, 0xffff, 0,
                       dqpn >> 16, dqpn & 0xffff, psn & 0xffffff)
def icrc(roce):
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0xff, 20 + 8 + len(roce) + 4, 0,
                     0x4000, 0xff, 17, 0xffff, src4, dst4)
    udp = struct.pack(">HHHH", sport, 4791, 8 + len(roce) + 4, 0xffff)
    masked = roce[:4] + b"\xff" + roce[5:]
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + masked))
def frame(op, dqpn, body=b"", psn=0x100, pad=0, tver=0, bad=False):
    r = bth(op, dqpn, psn, pad, tver) + body
    c = icrc(r)
    return r + (bytes(b ^ 0xff for b in c) if bad else c)
ghost = (qpn & ~0x3fff) | ((qpn + 91) & 0x3fff)
kinds = {
    "short": lambda: os.urandom(random.randrange(16)),
    "opcode": lambda: frame(random.choice([0x1f, 0x3f, 0x5f, 0x7f, 0xc3, 0xdf]), qpn, b"\0" * 8),
    "tver": lambda: frame(0x04, qpn, b"\0" * 16, tver=1),
    "cut": lambda: frame(random.choice([0x06, 0x0a, 0x0c, 0x13, 0x14]), qpn, b"\0" * 8),
    "ackpayload": lambda: frame(0x11, qpn, b"\0" * 12),
    "pad": lambda: frame(0x04, qpn, b"\0\0", pad=3),
    "icrc": lambda: frame(0x04, qpn, os.urandom(64), psn=random.randrange(1 << 24), bad=True),
    "noqp": lambda: frame(0x04, ghost, b"\0" * 32),
    "transport": lambda: frame(0x64, qpn, struct.pack(">II", 0x11111111, 0x1234) + b"\0" * 32),
    "random": lambda: os.urandom(random.randrange(16, 600)),
}
random.seed(int(qpn))
sent = dict.fromkeys(kinds, 0)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for name, make in kinds.items():
        s.sendto(make(), (dst, 4791))
        sent[name] += 1
    time.sleep(0.002)
print("junk sent:", " ".join("%s=%d" % kv for kv in sorted(sent.items())))
'

desc="junk at a live server during a transfer"
# 40000 atomics, one round trip each, keep the transfer going for a second
# or more after the bulk streams: the junk arrives while it runs.
next_port port
if ! serve junk.srv "$port" as_user URXE_LOG=debug "$LIB" "$XFER" -p "$port" -t 60; then
	reap "$BG_PID"
	fail "$desc: the server did not listen on TCP $port"
	show junk.srv
else
	spid=$BG_PID
	bg_user junk.cli as_user URXE_LOG=debug "$LIB" "$XFER" -p "$port" -t 60 \
		-m all -s 24 -a 40000 localhost
	cpid=$BG_PID
	if wait_for 20 grep -q '^local: ' "$(out junk.srv)"; then
		read -r sqpn sip < <(sed -En \
			's/^local: qpn (0x[0-9a-f]+) .* gid ::ffff:([0-9.]+)$/\1 \2/p' \
			"$(out junk.srv)")
		note "$desc: server QPN $sqpn at $sip:4791"
		capture junk.py as_user_plain "$PY" -c "$JUNK_PY" "$sip" "$sqpn" 1.5
		[ "$RC" -eq 0 ] || { fail "$desc: the junk sender failed"; show junk.py; }
		note "$desc: $(cat "$(out junk.py)")"
	else
		fail "$desc: the server never printed its address"
	fi
	reap "$cpid"
	crc=$RC
	reap "$spid"
	src=$RC
	if [ "$crc" -eq 0 ] && [ "$src" -eq 0 ]; then
		pass "$desc: the transfer finished, both exit 0"
	else
		fail "$desc: client exit $crc, server exit $src"
		show junk.cli "$crc"
		show junk.srv "$src"
	fi
	expect_match "$desc: every stream checked out" junk.cli '^verify: atomic ok'
	for c in dropped dropped_icrc dropped_no_qp; do
		n=$(awk -v c="$c" '$3 == "slot" && $5 == c { s += $6 } END { print s + 0 }' \
			"$(err junk.srv)")
		note "$desc: server counter $c $n"
		check "$desc: the server dropped frames as $c ($n)" test "$n" -gt 0
	done
fi

# --- what the user reads: GID indexes ------------------------------------------

PP=/usr/bin/ibv_rc_pingpong
if [ -x "$PP" ]; then
	GWANT='\(this device has GID\[0\] and GID\[1\], ::ffff:127\.117\.[0-9]+\.[0-9]+\); use -g 0 or -g 1'
	next_port port
	if serve g1.srv "$port" as_user "$LIB" "$PP" -g 1 -c -p "$port"; then
		spid=$BG_PID
		capture g1.cli as_user "$LIB" "$PP" -g 1 -c -p "$port" localhost
		crc=$RC
		reap "$spid"
		check "ibv_rc_pingpong -g 1 -c on loopback: both exit 0 (client $crc, server $RC)" \
			test "$crc" -eq 0 -a "$RC" -eq 0
		expect_match "-g 1: the data checked out" g1.cli '^8192000 bytes in'
		expect_match "-g 1: the local GID is the process's own ::ffff:127.117.h.l" g1.cli \
			'^  local address: .* GID ::ffff:127\.117\.[0-9]+\.[0-9]+$'
		expect_no_match "-g 1: no urxe line at the default log level" g1.cli '^urxe:' err
	else
		reap "$BG_PID"
		fail "ibv_rc_pingpong -g 1: the server did not listen on TCP $port"
		show g1.srv
	fi
	next_port port
	if serve g3.srv "$port" as_user "$LIB" "$PP" -g 3 -p "$port"; then
		spid=$BG_PID
		capture g3.cli as_user "$LIB" "$PP" -g 3 -p "$port" localhost
		reap "$spid"
		# The server connects first (and fails): the client sees
		# the connection close before its own modify.
		expect_match "-g 3: the server names the GIDs that exist" g3.srv \
			"^urxe: warning: rxe0: GID index 3 does not exist $GWANT \(it reads as GID ::, so the address got no GRH: is_global 0\)\$" err
		expect_no_match "-g 3: nothing says 'pass a GID index'" g3.srv 'pass a GID index' err
	else
		reap "$BG_PID"
		fail "ibv_rc_pingpong -g 3: the server did not listen on TCP $port"
		show g3.srv
	fi
	next_port port
	capture g20 as_user "$LIB" "$PP" -g 20 -p "$port"
	expect_match "-g 20 (past the table): named at the query" g20 \
		"^urxe: warning: rxe0: GID index 20 does not exist $GWANT\$" err
else
	note "SKIP the ibv_rc_pingpong GID cases: no $PP"
fi

# --- what the user reads: modify_qp, an exited peer (pyverbs) ---------------------

if "$PY" -c 'import pyverbs.device' 2>/dev/null; then
	capture ev as_user "$LIB" "$PY" -c "$(<"$HERE/errors_verbs.py")" rxe0 \
		modify deadpeer
	expect_rc "errors_verbs.py modify deadpeer: exit 0" 0 ev
	q=$(sed -n 's/^modify refused \(0x[0-9a-f]*\) errno 22$/\1/p' "$(out ev)")
	check "modify_qp with a wrong mask fails with EINVAL (QP ${q:-none})" test -n "$q"
	expect_match "modify_qp names the missing and the extra attributes" ev \
		"^urxe: warning: rxe0: modify_qp QP ${q:-none} INIT->RTR: missing IBV_QP_RQ_PSN, IBV_QP_DEST_QPN; not allowed: IBV_QP_SQ_PSN\$" err
	q=$(sed -n 's/^qpn \(0x[0-9a-f]*\)$/\1/p' "$(out ev)")
	g=$(sed -n 's/^dead \(.*\)$/\1/p' "$(out ev)" | sed 's/\./\\./g')
	expect_match "an exited process's GID: IBV_WC_RETRY_EXC_ERR" ev '^status retry exceeded$'
	expect_match "... said at once: nobody owns it" ev \
		"^urxe: warning: rxe0: QP ${q:-none} sends to ${g:-none}, which no process on this host owns " err
	expect_match "... and why the QP failed" ev \
		"^urxe: warning: rxe0: QP ${q:-none} moved to ERR: retry exceeded \(no ACK for PSN 0 from QP 0x000123, retry_cnt 1\): no process on this host owns ${g:-none} \(it exited, or the GID is wrong\)\$" err
	n=$(grep -c "sends to .*, which no process" "$(err ev)" || true)
	check "the no-owner line comes once per QP ($n)" test "$n" -eq 1
else
	note "SKIP the pyverbs cases: no pyverbs"
fi

# --- what the user reads: lo down, UDP 4791 held ---------------------------------

if as_user unshare -rn true >/dev/null 2>&1; then
	NSRUN=$WORK/nsrun
	mkdir -p "$NSRUN"
	chown "$TUSER" "$NSRUN" 2>/dev/null || true
	chmod 700 "$NSRUN"
	capture lodown as_user "$LIB" URXE_RUNDIR="$NSRUN" unshare -rn ibv_devinfo
	expect_match "a new network namespace: lo is down, and the command" lodown \
		'^urxe: warning: rxe0: interface lo is down: nothing can be sent or received until `ip link set lo up` \(a new network namespace starts with lo down\)$' err
	capture loup as_user "$LIB" URXE_RUNDIR="$NSRUN" unshare -rn sh -c \
		'ip link set lo up && exec ibv_devinfo'
	expect_no_match "... and not once lo is up" loup 'is down' err
else
	note "SKIP lo down: $TUSER cannot make a network namespace (unshare -rn)"
fi

if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
	ns_add NE e
	ip -n "$NE" link add vethE type veth peer name vethF
	ip -n "$NE" addr add 198.18.5.1/24 dev vethE
	ip -n "$NE" link set vethE up
	ip -n "$NE" link set vethF up
	bg_user hold ns_user_plain "$NE" "$PY" -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 4791))
print("held", flush=True)
time.sleep(60)'
	hpid=$BG_PID
	if wait_for 10 grep -q '^held' "$(out hold)"; then
		next_port port
		capture held ns_user "$NE" "$LIB" "URXE_DEVICES=rxe0 netdev vethE" \
			"$PP" -g 1 -p "$port"
		expect_match "UDP 4791 held on vethE: where, who, what to do" held \
			"^urxe: error: UDP port 4791 on vethE \(IPv4\) is held by another process \(\`ss -ulpn 'sport = :4791'\` shows which; a urxe loopback device holds 127\.117\.x\.y:4791\): the udp backend needs the port on its interface to itself; stop that process, or give this device the packet backend \(\`urxe dev add NAME netdev vethE backend packet\`, CAP_NET_RAW\), which shares it\$" err
	else
		fail "UDP 4791 held: the holder did not bind"
		show hold
	fi
	stop_pid "$hpid"
else
	note "SKIP UDP 4791 held: needs root and ip"
fi

finish
