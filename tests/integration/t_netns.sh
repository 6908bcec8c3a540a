#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_netns BUILD_DIR: a device on a real interface.  Two network namespaces
# joined by a veth pair (198.18.0.0/24, 2001:db8::/64); in namespace A,
# Debian's ibv_devinfo, run as an ordinary user, must show the port and
# GID table kernel rxe would: link-local GID from the MAC at index 0, the
# IPv4 address at index 1, then the IPv6 ones, all RoCE v2; the active MTU
# follows the link MTU (largest IB MTU <= MTU - 80); the port goes DOWN
# with the link; a device whose interface is not in the namespace is not
# listed; Debian's ibv_asyncwatch, holding a context meanwhile, gets
# IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE as the link goes down and
# comes back (its own, and the peer's carrier).  Root builds the
# namespaces (else skip).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"
urxe_it_init "$@"
assert_lib_loaded

veth_pair 198.18.0 v6
assert_lib_loaded "$A"

URXE=$B/bin/urxe
DEV="URXE_DEVICES=rxe0 netdev vethA"

# The link-local GID kernel rxe puts first: fe80::/64 + EUI-64 of the MAC.
mac=$(ip -n "$A" -o link show vethA | sed -E 's/.*link\/ether ([0-9a-f:]{17}).*/\1/')
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac"
LL=$(printf 'fe80::%x:%x:%x:%x' $(((0x$m0 ^ 2) << 8 | 0x$m1)) \
	$((0x$m2 << 8 | 0xff)) $((0xfe << 8 | 0x$m3)) $((0x$m4 << 8 | 0x$m5)))
note "vethA $mac: link-local GID $LL"

# port_state NAME: the port state an ibv_devinfo run printed.
port_state() { sed -En 's/^[[:space:]]+state:[[:space:]]+([A-Z_]+) .*/\1/p' "$(out "$1")"; }
active_mtu() { sed -En 's/^[[:space:]]+active_mtu:[[:space:]]+([0-9]+) .*/\1/p' "$(out "$1")"; }

capture dv ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo -v
expect_rc "in namespace A, ibv_devinfo -v on vethA exits 0" 0 dv
check "port 1 is PORT_ACTIVE (got '$(port_state dv)')" test "$(port_state dv)" = PORT_ACTIVE
expect_match "link_layer Ethernet" dv '^[[:space:]]+link_layer:[[:space:]]+Ethernet$'
check "GID[0] is the link-local $LL (got '$(gid_at dv 0)')" test "$(gid_at dv 0)" = "$LL"
expect_match "GID[0] is RoCE v2" dv '^[[:space:]]+GID\[  0\]:.*, RoCE v2$'
expect_match "GID[1] is ::ffff:198.18.0.1, RoCE v2" dv \
	'^[[:space:]]+GID\[  1\]:[[:space:]]+::ffff:198\.18\.0\.1, RoCE v2$'
expect_match "a GID is 2001:db8::1, RoCE v2" dv \
	'^[[:space:]]+GID\[ *[0-9]+\]:[[:space:]]+2001:db8::1, RoCE v2$'
n=$(grep -c 'GID\[' "$(out dv)" || true)
check "exactly 3 GIDs: link-local, IPv4, IPv6 global (found $n)" test "$n" -eq 3
check "active_mtu 1024 for link MTU 1500 (got '$(active_mtu dv)')" \
	test "$(active_mtu dv)" = 1024

ip -n "$A" link set vethA mtu 9000
ip -n "$NB" link set vethB mtu 9000
capture dv9000 ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo -v
check "active_mtu 4096 for link MTU 9000 (got '$(active_mtu dv9000)')" \
	test "$(active_mtu dv9000)" = 4096
ip -n "$A" link set vethA mtu 1100
capture dv1100 ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo -v
check "active_mtu 512 for link MTU 1100 (got '$(active_mtu dv1100)')" \
	test "$(active_mtu dv1100)" = 512
ip -n "$A" link set vethA mtu 1500

# The device exists only where its interface does.
capture list ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA; rxe1 netdev vethB; rxe2 netdev lo" \
	"$URXE" run -- ibv_devices
expect_rc "ibv_devices exits 0" 0 list
check "in A: rxe0 (vethA) and rxe2 (lo), not rxe1 (vethB is in B) (got '$(devices_in list)')" \
	test "$(devices_in list)" = "rxe0 rxe2"
capture listB ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethA; rxe1 netdev vethB" \
	"$URXE" run -- ibv_devices
check "in B: rxe1 alone (got '$(devices_in listB)')" test "$(devices_in listB)" = rxe1
capture show ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA; rxe1 netdev vethB" \
	"$URXE" dev show
expect_match "urxe dev show: vethA's GID[1] is ::ffff:198.18.0.1" show \
	'GID\[1\]: ::ffff:198\.18\.0\.1 \(RoCE v2\)'
expect_match "urxe dev show: vethB is absent here, rxe1 not listed" show \
	'interface vethB: absent in this network namespace: not listed'

# The port follows the link: peer down (no carrier), then own link down.
ip -n "$NB" link set vethB down
capture nocarrier ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo
check "peer down (no carrier): PORT_DOWN (got '$(port_state nocarrier)')" \
	test "$(port_state nocarrier)" = PORT_DOWN
ip -n "$NB" link set vethB up
ip -n "$A" link set vethA down
capture down ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo
expect_rc "ibv_devinfo on a down link exits 0" 0 down
check "link down: PORT_DOWN (got '$(port_state down)')" test "$(port_state down)" = PORT_DOWN
ip -n "$A" link set vethA up
# shellcheck disable=SC2317 # called through check/wait_for
active_again() {
	capture up ns_user "$A" "$DEV" "$URXE" run -- ibv_devinfo
	[ "$(port_state up)" = PORT_ACTIVE ]
}
check "link up again: PORT_ACTIVE" wait_for 10 active_again

# --- port events -------------------------------------------------------------

# events_seen N: ibv_asyncwatch has printed at least N port events.
# shellcheck disable=SC2317 # called through wait_for
events_seen() {
	[ "$(grep -c 'event_type IBV_EVENT_PORT_' "$(out asyncwatch)")" -ge "$1" ]
}
# (It flushes each line: what it printed survives the signal that stops it.)
bg_user asyncwatch ns_user "$A" "$DEV" "$URXE" run -- ibv_asyncwatch -d rxe0
aw=$BG_PID
wait_for 10 grep -q 'async event FD' "$(out asyncwatch)" ||
	fail "ibv_asyncwatch did not start: $(head -n 3 "$(err asyncwatch)")"
ip -n "$A" link set vethA down
check "link down: IBV_EVENT_PORT_ERR" wait_for 10 events_seen 1
ip -n "$A" link set vethA up
check "link up: IBV_EVENT_PORT_ACTIVE" wait_for 10 events_seen 2
ip -n "$NB" link set vethB down
check "peer down (carrier lost): a third event" wait_for 10 events_seen 3
ip -n "$NB" link set vethB up
check "peer up: a fourth event" wait_for 10 events_seen 4
stop_pid "$aw"
want=$(printf '%s\n' ERR ACTIVE ERR ACTIVE)
got=$(sed -En 's/^ *event_type IBV_EVENT_PORT_([A-Z]+) \([0-9]+\), port 1$/\1/p' \
	"$(out asyncwatch)")
check "the events, in order, are PORT_ERR, PORT_ACTIVE, PORT_ERR, PORT_ACTIVE on port 1 (got: $(echo $got))" \
	test "$got" = "$want"

finish
