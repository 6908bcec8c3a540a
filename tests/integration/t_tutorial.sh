#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_tutorial BUILD_DIR: every terminal session docs/tutorial shows, run as
# the ordinary user and compared with the text the lesson quotes, so that
# the tutorial cannot rot (tests/integration/tutorial_check.py: ```console
# blocks; "..." stands for what differs from run to run).  Each block runs
# as one bash session from a directory laid out as the lessons expect the
# top of the source tree: build/ (this build), examples/ (a copy of the
# sources, which lessons edit and rebuild), with build/bin and
# build/examples first on PATH as the tutorial's set-up puts them.  A
# block gets 120 s.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
SRC=$(cd "$HERE/../.." && pwd)

command -v python3 >/dev/null || skip "no python3"
urxe_it_init "$@"
assert_lib_loaded
[ -x "$B/examples/02_first_write" ] || skip "examples not built (URXE_EXAMPLES=OFF)"

TH=$WORK/src
TD=$WORK/sessions
mkdir -p "$TH" "$TD"
cp -r "$SRC/examples" "$TH/examples"
rm -f "$TH"/examples/[0-9][0-9]_*[!.ch]	# binaries a local make left
ln -s "$B" "$TH/build"
chmod -R a+rwX "$TH" "$TD"
[ "$(id -u)" -ne 0 ] || chown -R "$TUSER" "$TH" "$TD"

n=$(python3 "$HERE/tutorial_check.py" extract "$TD" \
	"$SRC"/docs/tutorial/[0-9][0-9]-*.md)
[ "$n" -gt 0 ] || die "no console blocks found in docs/tutorial"
note "$n sessions in docs/tutorial"
for s in "$TD"/*.sh; do
	# The examples' own leaks are t_examples' business; a lesson edits
	# one to fail on purpose, and bash is not leak-clean.
	T_LIMIT=120 capture "session.${s##*/}" as_user \
		"PATH=$B/bin:$B/examples:$URXE_IT_PATH" "TUTORIAL_HOME=$TH" \
		"TUTORIAL_DIR=$TD" ASAN_OPTIONS=detect_leaks=0 bash "$s"
	[ "$RC" -eq 0 ] || { fail "${s##*/}: the session exited $RC"; show "session.${s##*/}"; }
done
# The pictures the lessons show: each one there, and an SVG that parses.
for img in $(grep -ho '](img/[^)]*)' "$SRC"/docs/tutorial/*.md | sed 's/^](//; s/)$//' | sort -u); do
	check "docs/tutorial/$img is an SVG that parses" python3 -c \
		'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); sys.exit(d.documentElement.tagName != "svg")' \
		"$SRC/docs/tutorial/$img"
done
python3 "$HERE/tutorial_check.py" compare "$TD" >"$WORK/compare.txt" || true
while IFS= read -r line; do
	case $line in
	"ok    "*) pass "${line#ok    }" ;;
	"FAIL  "*) fail "${line#FAIL  }" ;;
	*) printf '%s\n' "$line" ;;
	esac
done <"$WORK/compare.txt"
finish
