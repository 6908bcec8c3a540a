#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# layer_check.sh NAME=ARCHIVE... [--rdmacm LIB --may-hold NAME,NAME...]
# The layers come bottom up, each as its name and its static archive.
# Dependencies point down: a layer may use symbols of the layers below it,
# never those defined by a layer above.  Checked on the archives with nm.
# The first layer (base, the lowest) uses nothing of ours: every urxe_
# name it needs is its own (util.h's inlines are no symbols).
#
# rdmacm (librdmacm.so.1) sits above core but is a shared library of its
# own that reaches the verbs through libibverbs.so.1: it must NEED that
# library and hold no code of any archive but the --may-hold ones
# (stateless wire and netdev helpers, the logger): code of the others
# would be a second engine in the process.  No archive may use what it
# exports.
set -euo pipefail
names=() layers=() rdmacm="" may_hold=""
while [ $# -gt 0 ]; do
	case $1 in
	--rdmacm) rdmacm=$2; shift 2 ;;
	--may-hold) may_hold=",$2,"; shift 2 ;;
	*=*) names+=("${1%%=*}"); layers+=("${1#*=}"); shift ;;
	*) echo "layer_check: bad argument $1" >&2; exit 2 ;;
	esac
done
fail=0
defined() { nm -g --defined-only "$1" 2>/dev/null | awk 'NF==3 {print $3}' | sort -u; }
undefined() { nm -g --undefined-only "$1" 2>/dev/null | awk '{print $NF}' | sort -u; }
for ((i = 0; i < ${#layers[@]}; i++)); do
	for ((j = i + 1; j < ${#layers[@]}; j++)); do
		bad=$(comm -12 <(undefined "${layers[i]}") <(defined "${layers[j]}"))
		if [ -n "$bad" ]; then
			echo "FAIL: ${names[i]} uses symbols of ${names[j]} (a higher layer): $bad"
			fail=1
		fi
	done
	echo "ok: ${names[i]} references no higher layer"
done
bad=$(comm -23 <(undefined "${layers[0]}" | grep '^urxe_' || true) <(defined "${layers[0]}"))
if [ -n "$bad" ]; then
	echo "FAIL: ${names[0]} uses urxe_ symbols it does not define: $(tr '\n' ' ' <<<"$bad")"
	fail=1
else
	echo "ok: ${names[0]} uses no urxe_ symbol but its own"
fi
[ -n "$rdmacm" ] || exit $fail

# What the shared library exports, and every function and object linked
# into it: hidden symbols come out of the link as plain locals, so all of
# them count (its own static names are not urxe_* globals of a layer).
exported() { nm -D --defined-only "$1" | awk 'NF==3 {print $3}' | sed 's/@.*//' | sort -u; }
linked_in() {
	readelf -sW "$1" | awk '($4 == "FUNC" || $4 == "OBJECT") && $7 != "UND" {print $8}' |
		sed 's/@.*//' | sort -u
}
for ((i = 0; i < ${#layers[@]}; i++)); do
	bad=$(comm -12 <(undefined "${layers[i]}") <(exported "$rdmacm"))
	if [ -n "$bad" ]; then
		echo "FAIL: ${names[i]} uses symbols of rdmacm (a higher layer): $bad"
		fail=1
	fi
done
for ((i = 0; i < ${#layers[@]}; i++)); do
	[[ $may_hold == *",${names[i]},"* ]] && continue
	bad=$(comm -12 <(linked_in "$rdmacm") <(defined "${layers[i]}"))
	if [ -n "$bad" ]; then
		echo "FAIL: rdmacm holds code of the ${names[i]} archive (link libibverbs.so.1 instead): $(tr '\n' ' ' <<<"$bad")"
		fail=1
	fi
done
needed=$(readelf -d "$rdmacm")
if ! grep -q 'NEEDED.*\[libibverbs\.so\.1\]' <<<"$needed"; then
	echo "FAIL: rdmacm does not NEED libibverbs.so.1"
	fail=1
fi
[ $fail -ne 0 ] || echo "ok: rdmacm links libibverbs.so.1, holds code of no layer but:$(tr , " " <<<"${may_hold%,}")"
exit $fail
