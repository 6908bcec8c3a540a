#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# size_check.sh SRCDIR: production code stays readable in pieces: no
# file over 800 lines and no function over 80.  Production is every C
# file and header git tracks outside tests/, bench/, examples/ and docs/.
# A function runs from its body's "{" at column 0 to the "}" at column 0
# (the house style puts both there, and nothing else).
set -euo pipefail
cd "$1"
MAX_FILE=800 MAX_FUNC=80
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v -E '^(tests|bench|examples|docs)/')
else
	mapfile -t files < <(find . -name build -prune -o \( -name '*.c' -o -name '*.h' \) -print |
		sed 's|^\./||' | grep -v -E '^(tests|bench|examples|docs)/' | sort)
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL: only ${#files[@]} production files found in $1"; exit 1; }
fail=0
for f in "${files[@]}"; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$MAX_FILE" ]; then
		echo "FAIL: $f has $n lines (at most $MAX_FILE)"
		fail=1
	fi
done
long=$(awk -v max="$MAX_FUNC" '
	FNR == 1 { start = 0 }
	/^\{/ { start = FNR; name = prev }
	/^\}/ && start { n = FNR - start + 1; if (n > max) printf "%s:%d: %d lines: %s\n", FILENAME, start, n, name; start = 0 }
	$0 !~ /^[ \t]*$/ { prev = $0 }' "${files[@]}")
if [ -n "$long" ]; then
	echo "FAIL: functions over $MAX_FUNC lines:"
	echo "$long"
	fail=1
fi
[ $fail -ne 0 ] || echo "ok: ${#files[@]} production files, none over $MAX_FILE lines, no function over $MAX_FUNC"
exit $fail
