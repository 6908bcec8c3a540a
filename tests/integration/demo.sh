#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# demo.sh [BUILD_DIR | PREFIX]: the README's demonstration.  Unmodified Debian verbs
# programs find the software RoCE device rxe0 through `urxe run`, with no
# kernel module and no set-up, and talk RDMA to each other:
#   1. two processes exchange RC SENDs over rxe0 on loopback: Debian's
#      ibv_rc_pingpong as server and as client, 1000 round trips of 4 KiB,
#      the server checking the data (-c); both print their addresses (each
#      process its own GID) and the rate;
#   2. device discovery beside a running program: ibv_asyncwatch holds a
#      context on rxe0 while ibv_devinfo -v and ibv_devices run at the same
#      time, and `urxe dev show` reports the instances open meanwhile.
# BUILD_DIR defaults to build/ at the top of the source tree.  It may also
# be an install prefix (`cmake --install`, or /usr for the Debian package):
# installed as PREFIX/share/urxe/demo.sh, the default is that prefix.  Run
# as root it still runs the programs as root (a demo, not a test: the tests
# in tests/integration run them as an ordinary user).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEF=$HERE/../../build
[ ! -x "$HERE/../../bin/urxe" ] || DEF=$HERE/../..
B=$(cd "${1:-$DEF}" && pwd -P)
URXE=$B/bin/urxe
[ -x "$URXE" ] || { echo "demo: $URXE is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/urxe-demo.XXXXXX)
BGPIDS=()
cleanup() {
	local p
	for p in "${BGPIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$OUT"
}
trap cleanup EXIT

say() { printf '\n=== %s\n' "$*"; }
indent() { sed "s/^/    $1| /"; }
instances() { "$URXE" dev show | sed -n 's/^# \([0-9]*\) device instance(s) open.*/\1/p'; }
listens() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }
demo_failed() { say "demo: FAILED: $*"; exit 1; }

say "urxe dev show (the devices this user's programs will find)"
"$URXE" dev show | indent ""
base=$(instances)

# --- 1. two processes, RDMA traffic --------------------------------------------

# A TCP port for the pingpongs' rendezvous that nothing uses now.
for _ in $(seq 50); do
	PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	[ -n "$(ss -Htan "( sport = :$PORT or dport = :$PORT )" 2>/dev/null)" ] || break
done
PP=(ibv_rc_pingpong -d rxe0 -g 0 -p "$PORT" -s 4096 -n 1000 -c)

say "process 1 (server): urxe run -- ${PP[*]}"
timeout 60 "$URXE" run -- "${PP[@]}" >"$OUT/server" 2>&1 &
SERVER=$!
BGPIDS+=("$SERVER")
for _ in $(seq 200); do
	listens "$PORT" && break
	kill -0 "$SERVER" 2>/dev/null || break
	sleep 0.05
done
if ! listens "$PORT"; then
	indent server <"$OUT/server"
	demo_failed "the ibv_rc_pingpong server did not start"
fi

say "process 2 (client): urxe run -- ${PP[*]} localhost"
rc_cli=0
timeout 60 "$URXE" run -- "${PP[@]}" localhost >"$OUT/client" 2>&1 || rc_cli=$?
rc_srv=0
wait "$SERVER" || rc_srv=$?
BGPIDS=()
indent "client" <"$OUT/client"
echo
indent "server" <"$OUT/server"
if [ "$rc_srv" -ne 0 ] || [ "$rc_cli" -ne 0 ] ||
   grep -qi 'invalid data' "$OUT/server" ||
   ! grep -q '^1000 iters in ' "$OUT/client" ||
   ! grep -q '^1000 iters in ' "$OUT/server"; then
	demo_failed "ibv_rc_pingpong: server exit $rc_srv, client exit $rc_cli"
fi
rate=$(sed -En 's/^[0-9]+ bytes in .* = (.*)$/\1/p' "$OUT/client")
say "two processes exchanged 1000 x 4 KiB each way over rxe0 ($rate); the server found the data intact"

# --- 2. device discovery beside a running program --------------------------------

say "process 3: urxe run -- ibv_asyncwatch -d rxe0 (holds a context, in the background)"
timeout 60 "$URXE" run -- ibv_asyncwatch -d rxe0 >"$OUT/asyncwatch" 2>&1 &
HOLDER=$!
BGPIDS+=("$HOLDER")
# Ready once it says so (or once the instance count grows: other urxe
# programs on this host may come and go meanwhile).
for _ in $(seq 100); do
	grep -q 'async event FD' "$OUT/asyncwatch" && break
	[ "$(instances)" -gt "$base" ] && break
	kill -0 "$HOLDER" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$HOLDER" 2>/dev/null || { indent asyncwatch <"$OUT/asyncwatch"; demo_failed "ibv_asyncwatch failed"; }
indent asyncwatch <"$OUT/asyncwatch"

say "processes 4 and 5 at once: urxe run -- ibv_devinfo -v  |  urxe run -- ibv_devices"
timeout 30 "$URXE" run -- ibv_devinfo -v >"$OUT/devinfo" 2>&1 &
p4=$!
timeout 30 "$URXE" run -- ibv_devices >"$OUT/devices" 2>&1 &
p5=$!
rc4=0 rc5=0
wait "$p4" || rc4=$?
wait "$p5" || rc5=$?
indent "ibv_devices" <"$OUT/devices"
echo
indent "ibv_devinfo" <"$OUT/devinfo"

say "urxe dev show, with ibv_asyncwatch still holding rxe0"
"$URXE" dev show | indent ""

kill -TERM "$HOLDER" 2>/dev/null || true
wait "$HOLDER" 2>/dev/null || true
BGPIDS=()

gid=$(sed -En 's/^[[:space:]]*GID\[ *0\]:[[:space:]]*(.*)/\1/p' "$OUT/devinfo")
if [ "$rc4" -eq 0 ] && [ "$rc5" -eq 0 ] && grep -q PORT_ACTIVE "$OUT/devinfo" &&
	grep -Eq '^[[:space:]]+rxe0[[:space:]]' "$OUT/devices"; then
	say "demo: OK: two processes exchanged RDMA traffic over rxe0 ($rate); rxe0 found by 3 more processes at once; port ACTIVE; ibv_devinfo's GID[0] ${gid:-?}"
else
	demo_failed "ibv_devinfo exit $rc4, ibv_devices exit $rc5"
fi
