#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench.fingerprint: the wire oracle (bench/wire_fingerprint.py, which
# bench/wire_compare.sh trusts to tell two builds' packets apart) on
# captures kept in the tree, against the fingerprints expected of them:
#   - tests/vectors/fixedflow-faults.pcapng: one round of urxe_fixedflow
#     (-m 1024 -M 5000) under URXE_FAULTS=drop=0.1,seed=9, as URXE_PCAP
#     wrote it (both directions, fault comments): drops put back in their
#     bursts, a NAK, READ responses, atomic ACKs dropped and resent;
#   - tests/vectors/kernel-rxe-rc-send.pcap: Linux rxe's SEND/ACK frames
#     (classic pcap, no directions), every ACK in the sequence.
# Then that it sees a change: one payload byte flipped changes exactly
# one line; a frame taken out changes the sequence.
set -euo pipefail
export LC_ALL=C
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
FP=$SRC/bench/wire_fingerprint.py
V=$SRC/tests/vectors
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

command -v tshark >/dev/null || { echo "SKIP: no tshark"; exit 77; }

# fp ARGS... CAPTURE: the fingerprint without its first line (file names).
fp() { python3 "$FP" "$@" | sed 1d; }

check() {
	local want=$1
	shift
	if ! diff -u <(sed 1d "$want") <(fp "$@") >"$T/diff"; then
		echo "FAIL: wire_fingerprint $* differs from $want:"
		head -n 40 "$T/diff"
		exit 1
	fi
	echo "ok: $* matches ${want##*/}"
}

check "$V/fixedflow-faults.fingerprint" "$V/fixedflow-faults.pcapng"
check "$V/fixedflow-faults.hist" --hist "$V/fixedflow-faults.pcapng"
check "$V/kernel-rxe-rc-send.fingerprint" --acks exact "$V/kernel-rxe-rc-send.pcap"

# Frame 9's payload (a SEND_FIRST of 1024 bytes) with one byte flipped.
python3 - "$V/fixedflow-faults.pcapng" "$T/flip.pcapng" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.index(bytes.fromhex("cb67922579d217b7ae01f91a73c6336c"))
b[i + 100] ^= 0x40
open(sys.argv[2], "wb").write(b)
PY
n=$(diff <(fp "$V/fixedflow-faults.pcapng") <(fp "$T/flip.pcapng") | grep -c '^>' || true)
[ "$n" -eq 1 ] || { echo "FAIL: a flipped payload byte changed $n lines, not 1"; exit 1; }
echo "ok: a flipped payload byte changes one line"

editcap "$V/fixedflow-faults.pcapng" "$T/cut.pcapng" 9 >/dev/null	# frame 9 out
if diff -q <(fp "$V/fixedflow-faults.pcapng") <(fp "$T/cut.pcapng") >/dev/null; then
	echo "FAIL: a frame taken out left the fingerprint as it was"
	exit 1
fi
echo "ok: a frame taken out changes the fingerprint"
echo PASS
