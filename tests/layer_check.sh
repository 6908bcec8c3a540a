#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# layer_check.sh NETDEV.a ENGINE.a PROVIDER.a CORE.a
# Dependencies point down: a layer may use symbols of the layers below it,
# never those defined by a layer above.  Checked on the archives with nm.
set -euo pipefail
layers=("$@")
names=(netdev qp_engine rxe_provider core)
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
exit $fail
