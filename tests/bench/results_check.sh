#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# results_check.sh: bench/run's result files, without running the bench
# (benchmarks report; this checks only what they write).  Sources
# bench/sweep.sh with a made-up sweep and summary (including a failed
# point and a value with quotes), calls write_results, and checks:
#   - sweep.csv has the header and one line per point;
#   - sweep.json and summary.json parse as JSON with the documented keys,
#     a failed point's figure null, the quoted text intact;
#   - summary.csv has one quoted row per summary line;
#   - sweep.svg parses as XML (SVG namespace), with one panel per kind,
#     one polyline per series per panel, one circle per measured value,
#     and the size labels.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../../bench" && pwd)
OUTD=$(mktemp -d /tmp/urxe-bench-results.XXXXXX)
trap 'rm -rf "$OUTD"' EXIT
fails=0
check() {
	if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fails=$((fails + 1)); fi
}

say() { printf '%s\n' "$*"; }
ratio_of() {
	if [ -z "$1" ] || [ -z "$2" ]; then echo -; return; fi
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a / b }'
}
# shellcheck source=bench/sweep.sh
. "$HERE/sweep.sh"
MACHINE_DESC='2 CPUs, test "machine"'
ROWS=("$(printf '%s\t' 'lo root ib_write_bw 64 KiB 1QP' '3.1 GB/s' '9.0 GB/s' '0.344x' '-' '-')"
      "$(printf '%s\t' 'a "quoted" figure' '5 us' '2 us' '2.5x' '<= 1.5' 'no')")
sweep_row bandwidth 64 0.120 0.900 GB/s >/dev/null
sweep_row bandwidth 4096 2.500 6.100 GB/s >/dev/null
sweep_row bandwidth 65536 "" 7.000 GB/s >/dev/null
sweep_row latency 2 4.80 2.30 us >/dev/null
sweep_row latency 65536 40.10 21.00 us >/dev/null
write_results "$OUTD" >/dev/null

check "sweep.csv: header and 5 points" \
	'[ "$(head -n1 "$OUTD/sweep.csv")" = kind,size_bytes,urxe,udp_limit,unit,ratio ] && [ "$(wc -l <"$OUTD/sweep.csv")" -eq 6 ]'
check "summary.csv: header and 2 rows, quotes doubled" \
	'[ "$(wc -l <"$OUTD/summary.csv")" -eq 3 ] && grep -qF "\"a \"\"quoted\"\" figure\"" "$OUTD/summary.csv"'
python3 - "$OUTD" <<'PY' && echo "ok    sweep.json and summary.json" || { echo "FAIL  sweep.json and summary.json"; exit 1; }
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/sweep.json"))
assert s["schema"] == 1 and s["machine"] == '2 CPUs, test "machine"', s
pts = s["sweep"]
assert len(pts) == 5, pts
assert pts[0] == {"kind": "bandwidth", "size_bytes": 64, "urxe": 0.12,
                  "udp_limit": 0.9, "unit": "GB/s"}, pts[0]
assert pts[2]["urxe"] is None and pts[2]["udp_limit"] == 7.0, pts[2]
m = json.load(open(d + "/summary.json"))
assert m["schema"] == 1 and len(m["summary"]) == 2, m
assert m["summary"][1]["figure"] == 'a "quoted" figure', m
assert m["summary"][1]["target"] == "<= 1.5" and m["summary"][1]["met"] == "no", m
PY
python3 - "$OUTD/sweep.svg" <<'PY' && echo "ok    sweep.svg" || { echo "FAIL  sweep.svg"; exit 1; }
import sys, xml.dom.minidom as md
doc = md.parse(sys.argv[1])
svg = doc.documentElement
assert svg.tagName == "svg" and svg.getAttribute("xmlns") == "http://www.w3.org/2000/svg"
panels = [g for g in svg.getElementsByTagName("g") if g.getAttribute("class") == "panel"]
assert [p.getAttribute("id") for p in panels] == ["bandwidth", "latency"], panels
for p, want_lines, want_dots in ((panels[0], 2, 5), (panels[1], 2, 4)):
    lines = p.getElementsByTagName("polyline")
    assert len(lines) == want_lines, (p.getAttribute("id"), len(lines))
    assert len(p.getElementsByTagName("circle")) == want_dots, p.getAttribute("id")
texts = [t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild]
for label in ("64 B", "4 KiB", "64 KiB", "2 B", "urxe", "UDP limit", "message size"):
    assert label in texts, label
PY
[ "$fails" -eq 0 ]
