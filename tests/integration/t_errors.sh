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

finish
