#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# verbs-smoke.sh: a stand-in for your own verbs test.  Nothing in it knows
# about urxe: `urxe-ci.sh test PREFIX verbs-smoke.sh` runs it under
# `urxe run`, so every verbs program it starts finds rxe0.  It
#   1. lists the devices (ibv_devinfo) and requires rxe0, port active;
#   2. runs ibv_rc_pingpong as server and client on loopback, 500 RC
#      SENDs of 4 KiB each way, the server checking the data (-c);
#   3. prints the libibverbs the server had mapped (from /proc/PID/maps).
# Ends with "verbs-smoke: PASS" (exit 0) or "verbs-smoke: FAIL: why".
# Replace it with your program or test suite.
set -uo pipefail

OUT=$(mktemp -d "${TMPDIR:-/tmp}/verbs-smoke.XXXXXX")
SERVER=""
cleanup() {
	[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null
	rm -rf "$OUT"
}
trap cleanup EXIT
failed() { echo "verbs-smoke: FAIL: $*"; exit 1; }

# listening PORT: a TCP socket listens on PORT (/proc: no iproute2 needed).
listening() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -qs " [0-9A-F.:]*$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6
}

timeout 30 ibv_devinfo -d rxe0 >"$OUT/devinfo" 2>&1 ||
	{ cat "$OUT/devinfo"; failed "ibv_devinfo -d rxe0"; }
grep -q PORT_ACTIVE "$OUT/devinfo" ||
	{ cat "$OUT/devinfo"; failed "rxe0's port is not active"; }
echo "verbs-smoke: ibv_devinfo found rxe0, port active"

PORT=$((20000 + RANDOM % 20000))
PP=(ibv_rc_pingpong -d rxe0 -g 0 -p "$PORT" -s 4096 -n 500 -c)
timeout 60 "${PP[@]}" >"$OUT/server" 2>&1 &
SERVER=$!
for _ in $(seq 200); do
	listening "$PORT" && break
	kill -0 "$SERVER" 2>/dev/null || break
	sleep 0.05
done
listening "$PORT" || { cat "$OUT/server"; failed "the server did not start"; }
# (The server is timeout's child.)
PID=$(cat "/proc/$SERVER/task/$SERVER/children" 2>/dev/null || echo "$SERVER")
LIB=$(grep -o '/[^ ]*/libibverbs\.so[.0-9]*$' "/proc/${PID%% *}/maps" | head -n 1)
echo "verbs-smoke: the server maps ${LIB:-no libibverbs}"

rc_cli=0
timeout 60 "${PP[@]}" localhost >"$OUT/client" 2>&1 || rc_cli=$?
rc_srv=0
wait "$SERVER" || rc_srv=$?
SERVER=""
sed 's/^/  client| /' "$OUT/client"
sed 's/^/  server| /' "$OUT/server"
[ "$rc_srv" -eq 0 ] && [ "$rc_cli" -eq 0 ] ||
	failed "ibv_rc_pingpong: server exit $rc_srv, client exit $rc_cli"
grep -q '^500 iters in ' "$OUT/client" && grep -q '^500 iters in ' "$OUT/server" ||
	failed "ibv_rc_pingpong did not complete 500 iterations"
echo "verbs-smoke: PASS"
