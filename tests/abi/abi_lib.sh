# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# What abi_check.sh and rdmacm_abi_check.sh share (sourced): the PASS,
# FAIL and SKIP lines and their count, the package and ELF probes, the
# readers of a library's dynamic symbols and version definitions, and
# the comparisons built on them.  The caller sets OURS (the library
# checked) before calling check_soname.

npass=0
nfail=0

pass() { echo "PASS  $*"; npass=$((npass + 1)); }
fail() { echo "FAIL  $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP  *** $* ***"; }
# Indents detail lines under the FAIL line they explain.
detail() { sed 's/^/        /'; }

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

is_elf() {
	[ -f "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]
}

# Defined dynamic symbols as "name@ver TYPE" (name@version or
# name@@version; the version nodes themselves show as plain names of
# type OBJECT, which is fine: both sides have them).
defined_syms() {
	readelf --dyn-syms -W "$1" |
		awk 'NR > 3 && $7 != "UND" && $8 != "" { print $8, $4 }' | sort
}

# Version definitions as "flags name <- parent...", one line per node.
verdefs() {
	objdump -p "$1" | awk '
		/^Version definitions:/ { in_defs = 1; next }
		in_defs && /^$/ { exit }
		in_defs && /^Version / { exit }
		in_defs && /^[0-9]/ { if (line != "") print line; line = $2 " " $4; next }
		in_defs && /^[ \t]/ { line = line " <- " $1 }
		END { if (line != "") print line }' | sort
}

# check_soname WANT: $OURS's SONAME is WANT.
check_soname() {
	local soname

	soname=$(readelf -d "$OURS" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	if [ "$soname" = "$1" ]; then
		pass "SONAME is $1"
	else
		fail "SONAME is '$soname', want $1"
	fi
}

# same PASS_TEXT FAIL_TEXT WANT GOT: PASS when the two lists are equal,
# else FAIL with their diff (< WANT's lines, > GOT's) under it.
same() {
	local diff_out

	diff_out=$(diff <(echo "$3") <(echo "$4"))
	if [ -z "$diff_out" ]; then
		pass "$1"
	else
		fail "$2"
		echo "$diff_out" | grep '^[<>]' | detail
	fi
}

# The last line, and the exit status: 1 when anything failed.
finish() {
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}
