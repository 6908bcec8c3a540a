#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_trace BUILD_DIR: urxe trace draws every packet of a capture, in
# order, with the right labels and marks, as text, SVG and HTML.
#   - the kernel-rxe vectors (tests/vectors): as many arrows as tcpdump
#     counts frames, the PSNs in tshark's order, exact lines for known
#     packets (an ACK, a SEND_LAST, the CM REQ); --check says and exits
#     what urxe-validate does; --qp, -n, --from/--to filter;
#   - runs under `urxe run --trace` (its exit status passed on), as the
#     ordinary user: ibv_rc_pingpong with URXE_FAULTS dropping frames
#     (seeded): [drop] frames sent again as [retx], a NAK(seq); urxe_xfer
#     --rnr-test (no receive posted, rnr_retry 7): RNR NAKs with their
#     timer, the SEND retried, then ACKed; ibv_xsrq_pingpong: XRC SENDs
#     with their SRQ number; tests/urxe_mcast: UD SENDs to the multicast
#     QP, recorded (loopback copies and all) as one frame to the group
#     whose ICRC --check verifies; every sent packet drawn once (receive
#     copies folded);
#   - --svg parses as XML with one arrow group per packet; --html, opened
#     in headless Chromium (skipped without it), renders a page that is
#     not blank and holds the arrows' text in its DOM.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
VEC=$(cd "$HERE/../vectors" && pwd)
U=$B/bin/urxe
PY=/usr/bin/python3
T_LIMIT=60
command -v tcpdump >/dev/null || skip "no tcpdump"
[ -x "$PY" ] || skip "no python3"

# arrows NAME: the packet lines of a text trace (a time, then the columns).
arrows() { grep -E '^ *[0-9.]+(us|ms|s)  ' "$(out "$1")" || true; }
# trace NAME ARGS...: urxe trace ARGS as the user, no colour.
trace() { local n=$1; shift; capture "$n" as_user "$U" trace --color=never "$@"; }

# --- the kernel-rxe vectors ----------------------------------------------------
for v in rc-send cm; do
	f=$VEC/kernel-rxe-$v.pcap
	trace "vec_$v" "$f"
	expect_rc "vectors $v: urxe trace exits 0" 0 "vec_$v"
	want=$(tcpdump -r "$f" -nn 2>/dev/null | wc -l)
	got=$(arrows "vec_$v" | wc -l)
	check "vectors $v: $got arrows for the $want frames" [ "$got" -eq "$want" ]
	if command -v tshark >/dev/null; then
		tshark -r "$f" -T fields -e infiniband.bth.psn 2>/dev/null >"$WORK/psn_$v.want"
		arrows "vec_$v" | sed -En 's/.* psn ([0-9]+).*/\1/p' >"$WORK/psn_$v.got"
		[ "$v" = cm ] || check "vectors $v: the PSNs in tshark's order" \
			cmp -s "$WORK/psn_$v.want" "$WORK/psn_$v.got"
	fi
done
expect_match "rc-send: the first packet" vec_rc-send \
	'^ 0\.000ms  \|---------->\|  ACK psn 6605925 msn 1$'
expect_match "rc-send: a SEND_LAST" vec_rc-send \
	'^ 1\.939ms  \|---------->\|  SEND_LAST psn 15914144 len 953$'
expect_match "rc-send: the columns' legend" vec_rc-send '^  B   198\.18\.1\.1 qp 0x0194df$'
expect_match "cm: the CM REQ" vec_cm \
	'^14426\.983ms  \|---------->\|  CM REQ qpn 0x000011 psn 8662252$'
check "cm: the CM messages in capture order" [ "$(arrows vec_cm | awk '{ print $4 }' | tr '\n' ' ')" = \
	"REJ REP DREP REQ RTU DREQ SIDR_REP SIDR_REQ " ]

capture check_v as_user "$B/tests/urxe-validate" "$VEC/kernel-rxe-rc-send.pcap"
vrc=$RC
capture check_t as_user "$U" trace --check "$VEC/kernel-rxe-rc-send.pcap"
check "--check: urxe-validate's exit status and report" \
	[ "$RC" -eq "$vrc" ] && cmp -s "$(out check_v)" "$(out check_t)"
"$PY" -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[-30] ^= 0x20; open(sys.argv[2], "wb").write(d)' \
	"$VEC/kernel-rxe-cm.pcap" "$WORK/bad.pcap"
chmod 644 "$WORK/bad.pcap"
capture check_bad as_user "$U" trace --check "$WORK/bad.pcap"
expect_rc "--check: a flipped bit fails (exit 1)" 1 check_bad
check "--check: it says which frame and why" grep -qx 'frame 8: bad ICRC' "$(err check_bad)"
trace bad "$WORK/bad.pcap"
# (the file's frame 8 is the SIDR_REP: the vector's frames are not in time order)
expect_match "trace: the same frame marked [corrupt]" bad 'CM SIDR_REP status 1 qpn 0x000000 \[corrupt\]$'

trace filt_n -n 5 "$VEC/kernel-rxe-rc-send.pcap"
check "-n 5: five arrows" [ "$(arrows filt_n | wc -l)" -eq 5 ]
trace filt_t --from 3ms --to 4ms "$VEC/kernel-rxe-rc-send.pcap"
check "--from 3ms --to 4ms: the six packets between, times unchanged" \
	[ "$(arrows filt_t | awk '{ print $1 }' | tr '\n' ' ')" = \
	"3.199ms 3.311ms 3.399ms 3.540ms 3.899ms 3.925ms " ]
trace filt_q --qp 0x1234 "$VEC/kernel-rxe-rc-send.pcap"
check "--qp of no packet: no arrow" [ "$(arrows filt_q | wc -l)" -eq 0 ]
trace filt_q2 --qp 0x0194df "$VEC/kernel-rxe-rc-send.pcap"
check "--qp 0x0194df: all 80" [ "$(arrows filt_q2 | wc -l)" -eq 80 ]
trace usage --qp x "$VEC/kernel-rxe-rc-send.pcap"
expect_rc "a bad --qp is a usage error" 2 usage

# --- urxe run --trace --------------------------------------------------------
# run_trace NAME SCRIPT: SCRIPT (bash) under urxe run --trace, as the user.
run_trace() { capture "$1" as_user "$U" run --trace -- bash -c "$2"; }
# drawn NAME: the arrows of a run's trace (on stderr).
drawn() { grep -E '^ *[0-9.]+(us|ms|s)  ' "$(err "$1")" || true; }
# sent_once NAME: each file's outbound frames = arrows.
sent_once() {
	local n
	n=$(drawn "$1" | wc -l)
	sed -nE '1s/.*: ([0-9]+) of ([0-9]+) packets \(([0-9]+) frames read.*; ([0-9]+) received copies.*/\1 \2 \3 \4/p' \
		"$(err "$1")" | {
		read -r shown total frames merged
		[ "$shown" -eq "$n" ] && [ "$total" -eq "$n" ] &&
			[ $((frames - merged)) -eq "$n" ]
	}
}

run_trace status 'exit 3'
expect_rc "run --trace: the program's exit status" 3 status
check "run --trace: says when nothing was captured" grep -q 'captured no packet' "$(err status)"

next_port port
run_trace lossy "ibv_rc_pingpong -d rxe0 -g 0 -n 10 -s 8000 -m 1024 -p $port >/dev/null & sleep 0.5
URXE_FAULTS=drop=0.3,seed=1,limit=12 ibv_rc_pingpong -d rxe0 -g 0 -n 10 -s 8000 -m 1024 -p $port localhost >/dev/null
c=\$?; wait \$!; exit \$((c + \$?))"
expect_rc "lossy: both pingpongs exit 0" 0 lossy
check "lossy: every packet drawn once" sent_once lossy
drawn lossy >"$WORK/lossy.txt"
check "lossy: [drop] frames, cut short" grep -q -- '-x .*\[drop\]$' "$WORK/lossy.txt"
# A first transmission that was dropped never arrived: it must come again.
# (A dropped resend may not: the responder can hold that PSN already, from
# the burst a lost last packet made the requester resend.)
check "lossy: each dropped SEND is sent again, marked [retx]" "$PY" -c '
import re, sys
lines = open(sys.argv[1]).read().splitlines()
key = lambda l: re.search(r"  (\S+ psn \d+)", l).group(1)
drops = [i for i, l in enumerate(lines)
	 if l.endswith("[drop]") and "SEND_" in l and "[retx]" not in l]
sys.exit(not drops or any(not any(key(m) == key(lines[i]) and "[retx]" in m
	for m in lines[i + 1:]) for i in drops))' "$WORK/lossy.txt"
[ "$NFAIL" -eq 0 ] || cat "$WORK/lossy.txt"
check "lossy: a NAK(seq)" grep -q 'NAK(seq) psn [0-9]* msn [0-9]* \[nak\]$' "$WORK/lossy.txt"

next_port port
run_trace rnr "$B/tests/urxe_xfer -p $port -t 20 >/dev/null & sleep 0.5
$B/tests/urxe_xfer -p $port -t 20 -n 1 --rnr-test -R 7 -s 1 --late 30 localhost >/dev/null
c=\$?; wait \$!; exit \$((c + \$?))"
expect_rc "rnr: urxe_xfer --rnr-test -R 7 exits 0" 0 rnr
check "rnr: every packet drawn once" sent_once rnr
drawn rnr >"$WORK/rnr.txt"
check "rnr: RNR NAKs with their timer" grep -q 'RNR_NAK psn [0-9]* msn 0 timer 0\.[0-9]*ms \[rnr\]$' "$WORK/rnr.txt"
check "rnr: the SEND retried" grep -q 'SEND_[A-Z]* psn [0-9]* len [0-9]* \[retx\]$' "$WORK/rnr.txt"
check "rnr: then acknowledged (after the last RNR NAK)" awk '
	/RNR_NAK/ { rnr = NR; acked = 0 }
	rnr && / ACK psn [0-9]+ msn 1$/ { acked = 1 }
	END { exit !(rnr && acked) }' "$WORK/rnr.txt"
[ "$NFAIL" -eq 0 ] || { head -20 "$(err rnr)"; tail -8 "$(err rnr)"; }

if command -v ibv_xsrq_pingpong >/dev/null; then
	next_port port
	run_trace xrc "ibv_xsrq_pingpong -d rxe0 -g 0 -c 1 -n 2 -p $port >/dev/null & sleep 0.5
ibv_xsrq_pingpong -d rxe0 -g 0 -c 1 -n 2 -p $port localhost >/dev/null
c=\$?; wait \$!; exit \$((c + \$?))"
	expect_rc "xrc: ibv_xsrq_pingpong exits 0" 0 xrc
	check "xrc: every packet drawn once" sent_once xrc
	check "xrc: XRC SENDs carry their SRQ number" grep -q 'XRC SEND_[A-Z]* psn [0-9]* srq 0x[0-9a-f]' "$(err xrc)"
	check "xrc: XRC ACKs" grep -q 'XRC ACK psn' "$(err xrc)"
	check "xrc: an SRQ each way" [ "$(grep -o 'srq 0x[0-9a-f]*' "$(err xrc)" | sort -u | wc -l)" -eq 2 ]
fi

# Loopback multicast goes as a unicast copy to each member process; the
# captures (kept: copied out of run --trace's directory) record what a wire
# would carry, one datagram to the group, whose ICRC then checks.
MC=$B/tests/urxe_mcast
MCD=$WORK/tmp/mc
mkdir -p "$MCD"
chmod 777 "$MCD"
run_trace mcast "$MC recv -G 239.1.2.3 -n 3 -t 20 >/dev/null & sleep 1
$MC send -G 239.1.2.3 -n 3 -t 10 >/dev/null; sleep 0.5
$MC send -G 239.1.2.3 -n 3 -t 10 >/dev/null; wait \$!; c=\$?
cp \"\${URXE_PCAP%/*}\"/*.pcapng $MCD/; exit \$c"
expect_rc "mcast: urxe_mcast exits 0" 0 mcast
check "mcast: every packet drawn once" sent_once mcast
check "mcast: six UD SENDs to the multicast QP" [ "$(drawn mcast | grep -c 'UD SEND_ONLY psn [1-3] len [0-9]* qkey 0x')" -eq 6 ]
check "mcast: the group's column" grep -Eq '^  [A-Z]   239\.1\.2\.3 qp 0xffffff \(multicast\)$' "$(err mcast)"
check "mcast: three columns (two senders, the group): no member's" \
	[ "$(grep -Ec '^  [A-Z]   ' "$(err mcast)")" -eq 3 ]
expect_no_match "mcast: no loopback copy, nothing [corrupt]" mcast 'loopback copy|\[corrupt\]' err
mapfile -t mcf < <(ls "$MCD"/*.pcapng 2>/dev/null)
check "mcast: three captures kept" [ "${#mcf[@]}" -eq 3 ]
capture mc_check as_user "$U" trace --check "${mcf[@]}"
expect_rc "mcast: --check passes every frame (the ICRC checked)" 0 mc_check
expect_match "mcast: --check read 12 frames, none invalid" mc_check '^12 frames, 12 RoCEv2, 0 invalid,'
if command -v tshark >/dev/null; then
	for f in "${mcf[@]}"; do tshark -r "$f" -T fields -e ip.dst -e frame.comment 2>/dev/null; done >"$WORK/mc_tshark.txt"
	check "mcast: tshark sees 12 frames, each to the group, with a comment" \
		[ "$(grep -Ec '^239\.1\.2\.3	urxe mcast: (sent|received) on loopback as a unicast copy' "$WORK/mc_tshark.txt")" -eq 12 ]
	check "mcast: one frame per send, to the group" \
		[ "$(grep -c "copy to each of the group's 1 member$" "$WORK/mc_tshark.txt")" -eq 6 ]
fi
# A flipped bit in one frame's ICRC: the copies' ICRC is really checked.
"$PY" -c '
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
off = 0
while off + 8 <= len(d):
	t, l = struct.unpack_from("<II", d, off)
	if t == 6:
		cap = struct.unpack_from("<I", d, off + 20)[0]
		d[off + 28 + cap - 1] ^= 0x20
		break
	off += l
open(sys.argv[2], "wb").write(d)' "${mcf[0]}" "$WORK/mc_bad.pcapng"
chmod 644 "$WORK/mc_bad.pcapng"
capture mc_bad as_user "$U" trace --check "$WORK/mc_bad.pcapng"
expect_rc "mcast: a flipped ICRC bit fails --check" 1 mc_bad
check "mcast: frame 1: bad ICRC" grep -qx 'frame 1: bad ICRC' "$(err mc_bad)"
trace mc_bad_t "$WORK/mc_bad.pcapng"
check "mcast: the trace marks it, and it alone, [corrupt]" [ "$(grep -c '\[corrupt\]$' "$(out mc_bad_t)")" -eq 1 ]

# --- SVG and HTML --------------------------------------------------------------
capture svg as_user "$U" trace --svg "$VEC/kernel-rxe-cm.pcap"
check "svg: valid XML, an <svg>, 8 arrow groups with the CM labels" "$PY" -c '
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1]).documentElement
g = [e for e in d.getElementsByTagName("g") if e.getAttribute("class") == "pkt"]
t = " ".join(n.data for e in g for n in e.getElementsByTagName("text")[1].childNodes if n.nodeType == n.TEXT_NODE)
sys.exit(d.tagName != "svg" or len(g) != 8 or "CM REQ qpn 0x000011 psn 8662252" not in t)' "$(out svg)"
capture html as_user "$U" trace --html -o "$WORK/tmp/cm.html" "$VEC/kernel-rxe-cm.pcap"
expect_rc "html: written" 0 html
CHROME=$(command -v chromium || true)
if [ -z "$CHROME" ]; then
	note "no chromium: the HTML is not rendered"
	finish
fi
# The browser as the user, bounded, its profile in the test's tree.
T_LIMIT=90
capture dom as_user_plain "$CHROME" --headless --no-sandbox --disable-gpu \
	--user-data-dir="$WORK/tmp/chrome" --dump-dom "file://$WORK/tmp/cm.html"
expect_rc "html: chromium loads it" 0 dom
for label in 'CM REQ qpn 0x000011 psn 8662252' 'CM REJ reason 8' 'CM SIDR_REQ'; do
	check "html: the DOM holds \"$label\" in the diagram and the table" [ "$(grep -o "$label" "$(out dom)" | wc -l)" -ge 3 ]
done
capture shot as_user_plain "$CHROME" --headless --no-sandbox --disable-gpu \
	--user-data-dir="$WORK/tmp/chrome" --window-size=1200,900 \
	--screenshot="$WORK/tmp/cm.png" "file://$WORK/tmp/cm.html"
check "html: a screenshot, not blank (dark pixels in it)" "$PY" -c '
import sys, zlib, struct
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n"
w, h, depth, ctype = struct.unpack(">IIBB", b[16:26])
assert depth == 8 and ctype in (2, 6)
i, idat = 8, b""
while i < len(b):
	n, t = struct.unpack(">I4s", b[i:i + 8])
	idat += b[i + 8:i + 8 + n] if t == b"IDAT" else b""
	i += 12 + n
raw, bpp = zlib.decompress(idat), 3 if ctype == 2 else 4
stride, prev, dark = w * bpp, bytearray(w * bpp), 0
for y in range(h):
	f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
	for x in range(stride):
		a = line[x - bpp] if x >= bpp else 0
		c = prev[x - bpp] if x >= bpp else 0
		p = a + prev[x] - c
		pr = a if abs(p - a) <= abs(p - prev[x]) and abs(p - a) <= abs(p - c) else prev[x] if abs(p - prev[x]) <= abs(p - c) else c
		line[x] = (line[x] + (0, a, prev[x], (a + prev[x]) // 2, pr)[f]) & 255
	dark += sum(1 for x in range(0, stride, bpp) if line[x] + line[x + 1] + line[x + 2] < 384)
	prev = line
print(w, h, dark)
sys.exit(dark < 2000)' "$WORK/tmp/cm.png"
finish
