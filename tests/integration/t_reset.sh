#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_reset BUILD_DIR: RESET means reset, on the wire.  A pyverbs program
# (reconnect.py, Debian's python3 and pyverbs, as an ordinary user) holds
# two RC QPs of rxe0 connected to each other and reconnects them twice
# through RESET -> INIT -> RTR -> RTS, with new PSNs each time; in each of
# the three connections A SENDs 3 messages to B, one at a time.  Its
# URXE_PCAP capture, read by tshark, must show each connection's ACKs
# counting messages from 1: the first ACK after each reconnect carries
# MSN 1, the others MSN 2 and 3 (the MSN starts over when the QP leaves
# RESET; an MSN kept from the last connection made the first ACK of the
# second carry 4).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY"
command -v tshark >/dev/null || skip "tshark is not installed"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
"$PY" -c 'import pyverbs.device' 2>/dev/null || die "pyverbs is not installed (python3-pyverbs)"

ROUNDS=3
MSGS=3
PCAP=$WORK/tmp/reset.pcap
capture reconnect as_user T_LIMIT=60 LD_LIBRARY_PATH="$B/lib" \
	"URXE_PCAP=$PCAP" "$PY" -c "$(<"$HERE/reconnect.py")" rxe0 "$ROUNDS" "$MSGS"
expect_rc "reconnect.py: $ROUNDS connections of one RC pair, $MSGS SENDs each, all complete" 0 reconnect
expect_match "reconnect.py reached the end" reconnect '^done$'
[ -s "$PCAP" ] || die "no capture $PCAP"

# The ACKs (opcode 17) as "PSN MSN", in capture order.  The process
# captures what it sends and what it receives: each ACK is there twice.
capture acks tshark -r "$PCAP" -Y 'infiniband.bth.opcode == 17' \
	-T fields -e infiniband.bth.psn -e infiniband.aeth.msn
check "tshark reads the capture (exit $RC)" test "$RC" -eq 0
note "ACKs (PSN MSN): $(tr '\t\n' ' ,' <"$(out acks)")"

# Round R's PSNs start at sq_psn R (printed): its ACKs carry PSNs from
# there to there + MSGS - 1.
for r in $(seq 0 $((ROUNDS - 1))); do
	psn=$(awk -v r="$r" '$1 == "round" && $2 == r { print $4 }' "$(out reconnect)")
	if [ -z "$psn" ]; then
		fail "round $r: reconnect.py did not print its PSN"
		continue
	fi
	msns=$(awk -v lo="$psn" -v n="$MSGS" '$1 >= lo && $1 < lo + n { print $2 }' \
		"$(out acks)" | uniq | paste -sd ' ')
	want=$(seq 1 "$MSGS" | paste -sd ' ')
	what=$([ "$r" -eq 0 ] && echo "first connection" || echo "reconnect $r")
	check "$what (PSNs from $psn): the ACKs carry MSN ${msns:-none} (want $want)" \
		test "$msns" = "$want"
done
finish
