#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# demo.sh [BUILD_DIR]: the README's demonstration.  Unmodified Debian verbs
# programs find the software RoCE device rxe0 through `urxe run`, with no
# kernel module and no set-up, several processes at once:
#   1. ibv_asyncwatch holds a context on rxe0 in the background;
#   2. ibv_devinfo -v and ibv_devices run at the same time beside it;
#   3. `urxe dev show` reports the instances open meanwhile.
# Each process gets its own slot, hence on loopback its own GID.
# (The data path comes next: then this becomes ibv_rc_pingpong.)
# BUILD_DIR defaults to build/ at the top of the source tree.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-$HERE/../../build}" && pwd -P)
URXE=$B/bin/urxe
[ -x "$URXE" ] || { echo "demo: $URXE is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/urxe-demo.XXXXXX)
HOLDER=""
cleanup() {
	[ -z "$HOLDER" ] || { kill -TERM "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; }
	rm -rf "$OUT"
}
trap cleanup EXIT

say() { printf '\n=== %s\n' "$*"; }
indent() { sed "s/^/    $1| /"; }
instances() { "$URXE" dev show | sed -n 's/^# \([0-9]*\) device instance(s) open.*/\1/p'; }

say "urxe dev show (the devices this user's programs will find)"
"$URXE" dev show | indent ""
base=$(instances)

say "process 1: urxe run -- ibv_asyncwatch -d rxe0 (holds a context, in the background)"
timeout 60 "$URXE" run -- ibv_asyncwatch -d rxe0 >"$OUT/asyncwatch" 2>&1 &
HOLDER=$!
for _ in $(seq 100); do
	[ "$(instances)" -gt "$base" ] && break
	kill -0 "$HOLDER" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$HOLDER" 2>/dev/null || { indent asyncwatch <"$OUT/asyncwatch"; echo "demo: ibv_asyncwatch failed" >&2; exit 1; }
indent asyncwatch <"$OUT/asyncwatch"

say "processes 2 and 3 at once: urxe run -- ibv_devinfo -v  |  urxe run -- ibv_devices"
timeout 30 "$URXE" run -- ibv_devinfo -v >"$OUT/devinfo" 2>&1 &
p2=$!
timeout 30 "$URXE" run -- ibv_devices >"$OUT/devices" 2>&1 &
p3=$!
rc2=0 rc3=0
wait "$p2" || rc2=$?
wait "$p3" || rc3=$?
indent "ibv_devices" <"$OUT/devices"
echo
indent "ibv_devinfo" <"$OUT/devinfo"

say "urxe dev show, with ibv_asyncwatch still holding rxe0"
"$URXE" dev show | indent ""

kill -TERM "$HOLDER" 2>/dev/null || true
wait "$HOLDER" 2>/dev/null || true
HOLDER=""

gid=$(sed -En 's/^[[:space:]]*GID\[ *0\]:[[:space:]]*(.*)/\1/p' "$OUT/devinfo")
if [ "$rc2" -eq 0 ] && [ "$rc3" -eq 0 ] && grep -q PORT_ACTIVE "$OUT/devinfo" &&
	grep -Eq '^[[:space:]]+rxe0[[:space:]]' "$OUT/devices"; then
	say "demo: OK: rxe0 found by 3 unmodified verbs processes; port ACTIVE; ibv_devinfo's GID[0] ${gid:-?}"
else
	say "demo: FAILED (ibv_devinfo exit $rc2, ibv_devices exit $rc3)"
	exit 1
fi
