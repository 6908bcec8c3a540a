#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# contract_check.sh SRCDIR: the engine's contract stays narrow.  The
# engine's own QP and SRQ state (work rings, requester, completer and
# responder) is in qp_engine/eqp.h, private to qp_engine/; only tests/
# (the suites and fuzzers that drive the engine alone) may include it
# too.  The provider and everything above see include/urxe/engine.h,
# which must not define that state again.
set -euo pipefail
cd "$1"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find . -name build -prune -o \( -name '*.c' -o -name '*.h' \) -print |
		sed 's|^\./||' | sort)
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL: only ${#files[@]} C files found in $1"; exit 1; }
[ -f qp_engine/eqp.h ] || { echo "FAIL: qp_engine/eqp.h is missing"; exit 1; }
incl='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*/)?eqp\.h[">]'
fail=0
# The pattern must see the engine's own includes, or it checks nothing.
if ! grep -Eq "$incl" qp_engine/engine_int.h; then
	echo "FAIL: the include pattern does not match qp_engine/engine_int.h"
	fail=1
fi
bad=$(for f in "${files[@]}"; do
	case $f in qp_engine/* | tests/*) continue ;; esac
	grep -EHn "$incl" "$f" || true
done)
if [ -n "$bad" ]; then
	echo "FAIL: outside qp_engine/ and tests/, these include the engine's private qp_engine/eqp.h:"
	echo "$bad"
	fail=1
fi
for s in urxe_wq urxe_req_state urxe_comp_state urxe_resp_state; do
	if grep -rEn "^struct $s \{" include/; then
		echo "FAIL: struct $s (the engine's own state) is defined in include/"
		fail=1
	fi
done
[ $fail -ne 0 ] || echo "ok: qp_engine/eqp.h is included only in qp_engine/ and tests/ (${#files[@]} files)"
exit $fail
