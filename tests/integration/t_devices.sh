#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_devices BUILD_DIR: the zero-configuration device rxe0 as Debian's
# unmodified ibverbs-utils and pyverbs see it, run as an ordinary user;
# several processes on it at once (each its own slot, so its own GID); and
# the `urxe` CLI: dev show/add/del, the configuration layers, run, usage.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

URXE=$B/bin/urxe
LOOP_GID='^::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+$'

# --- ibv_devices / ibv_devinfo through `urxe run` ---------------------------

capture devices as_user "$URXE" run -- ibv_devices
expect_rc "ibv_devices exits 0" 0 devices
expect_match "ibv_devices lists rxe0 with a 16-digit node GUID" devices \
	'^[[:space:]]+rxe0[[:space:]]+[0-9a-f]{16}$'
expect_no_match "the node GUID of rxe0 is not zero" devices \
	'^[[:space:]]+rxe0[[:space:]]+0{16}$'
check "rxe0 is the only device with nothing configured" \
	test "$(devices_in devices)" = rxe0

capture devinfo_l as_user "$URXE" run -- ibv_devinfo -l
expect_match "ibv_devinfo -l: 1 HCA found, rxe0" devinfo_l '^1 HCA found:'
expect_match "ibv_devinfo -l names rxe0" devinfo_l '^[[:space:]]+rxe0$'

capture devinfo as_user "$URXE" run -- ibv_devinfo
expect_rc "ibv_devinfo exits 0" 0 devinfo
expect_match "ibv_devinfo: hca_id rxe0" devinfo '^hca_id:[[:space:]]+rxe0$'
expect_match "ibv_devinfo: port 1 PORT_ACTIVE" devinfo \
	'^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$'
expect_match "ibv_devinfo: link_layer Ethernet" devinfo \
	'^[[:space:]]+link_layer:[[:space:]]+Ethernet$'

capture devinfo_v as_user "$URXE" run -- ibv_devinfo -v
expect_rc "ibv_devinfo -v exits 0" 0 devinfo_v
expect_match "ibv_devinfo -v: PORT_ACTIVE" devinfo_v \
	'^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$'
expect_match "ibv_devinfo -v: link_layer Ethernet" devinfo_v \
	'^[[:space:]]+link_layer:[[:space:]]+Ethernet$'
expect_match "ibv_devinfo -v: GID[0] is ::ffff:127.x.y.z, RoCE v2" devinfo_v \
	'^[[:space:]]+GID\[  0\]:[[:space:]]+::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+, RoCE v2$'
expect_match "ibv_devinfo -v: the GID table is longer than one entry" devinfo_v \
	'^[[:space:]]+gid_tbl_len:[[:space:]]+([2-9]|[1-9][0-9]+)$'
n=$(grep -c 'GID\[' "$(out devinfo_v)" || true)
check "on loopback exactly two GIDs are in use (found $n)" test "$n" -eq 2
check "... GID[1] is GID[0] again ('$(gid_at devinfo_v 1)')" \
	test -n "$(gid_at devinfo_v 0)" -a "$(gid_at devinfo_v 1)" = "$(gid_at devinfo_v 0)"
expect_match "ibv_devinfo -v: GID[1] is RoCE v2" devinfo_v \
	'^[[:space:]]+GID\[  1\]:[[:space:]]+::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+, RoCE v2$'

# --- three processes at once -----------------------------------------------
# A pyverbs process holds a context and a PD; meanwhile two ibv_devinfo -v
# run, each stalled (see stall_start) until all three are known to hold a
# slot.  Each process owns its slot, and on loopback the slot is the GID.

bg_user holder as_user LD_LIBRARY_PATH="$B/lib" /usr/bin/python3 \
	-c "$(<"$HERE/holder.py")" rxe0 120
HOLDER=$BG_PID
if wait_for 30 grep -q '^ready ' "$(out holder)"; then
	pass "pyverbs holds a context and a PD on rxe0"
else
	show holder "?"
	die "the pyverbs holder did not get ready"
fi
hgid=$(awk '/^ready / { print $2 }' "$(out holder)")
check "the holder's GID[0] $hgid is ::ffff:127.x.y.z" grep -Eq "$LOOP_GID" <<<"$hgid"
check "urxe dev show counts 1 instance open" wait_for 10 instances_are 1

stall_start dv1 as_user URXE_LOG=debug "$URXE" run -- ibv_devinfo -v
P1=$BG_PID
stall_start dv2 as_user URXE_LOG=debug "$URXE" run -- ibv_devinfo -v
P2=$BG_PID
if wait_for 20 instances_are 3; then
	pass "two ibv_devinfo -v and the holder hold 3 slots at the same time"
else
	fail "two ibv_devinfo -v and the holder hold 3 slots at the same time ($(instances) held; a stalled program stops at its first URXE_LOG=debug line: does the library log one after claiming the slot?)"
fi
stall_release dv1
stall_release dv2
stall_reap dv1 "$P1"
expect_rc "concurrent ibv_devinfo -v #1 exits 0" 0 dv1
stall_reap dv2 "$P2"
expect_rc "concurrent ibv_devinfo -v #2 exits 0" 0 dv2
for n in dv1 dv2; do
	expect_match "$n: PORT_ACTIVE" $n '^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$'
done
g1=$(gid_at dv1 0)
g2=$(gid_at dv2 0)
check "#1's GID[0] '$g1' is ::ffff:127.x.y.z" grep -Eq "$LOOP_GID" <<<"$g1"
check "#2's GID[0] '$g2' is ::ffff:127.x.y.z" grep -Eq "$LOOP_GID" <<<"$g2"
check "three live processes have three different GIDs ($hgid $g1 $g2)" \
	test "$(printf '%s\n' "$hgid" "$g1" "$g2" | sort -u | wc -l)" -eq 3

check "the holder is still running" alive "$HOLDER"
stop_pid "$HOLDER"
check "every slot is free once the processes are gone" wait_for 10 instances_are 0

# --- the CLI -----------------------------------------------------------------

capture help as_user "$URXE" --help
expect_rc "urxe --help exits 0" 0 help
expect_match "urxe --help prints the usage on stdout" help '^usage: urxe dev show'
capture noargs as_user "$URXE"
expect_rc "urxe without a command exits 2" 2 noargs
expect_match "... and prints the usage on stderr" noargs '^usage: urxe' err
capture unknown as_user "$URXE" frobnicate
expect_rc "urxe frobnicate exits 2" 2 unknown
expect_match "... saying the command is unknown" unknown \
	"unknown command 'frobnicate'" err
capture unknown_dev as_user "$URXE" dev frobnicate
expect_rc "urxe dev frobnicate exits 2" 2 unknown_dev
expect_match "... saying the dev command is unknown" unknown_dev \
	"unknown dev command 'frobnicate'" err

capture show as_user "$URXE" dev show
expect_rc "urxe dev show exits 0" 0 show
expect_match "dev show: devices from the built-in default" show \
	'^# devices from built-in default$'
expect_match "dev show: rxe0 on lo, udp backend" show '^rxe0: netdev lo backend udp$'
expect_match "dev show: rxe0's port is ACTIVE" show '^[[:space:]]+port: ACTIVE'
capture show_none as_user "$URXE" dev show nosuch
expect_rc "urxe dev show nosuch exits 1" 1 show_none
expect_match "... naming the device" show_none 'no device nosuch' err

# Configuration file: the user's, under XDG_CONFIG_HOME.  Once it lists a
# device, only the listed devices exist (the built-in rxe0 is a default,
# not an addition); an emptied file means the default again.
CONF=$UHOME/.config/urxe/devices.conf
capture add_r1 as_user "$URXE" dev add r1 netdev lo
expect_rc "urxe dev add r1 netdev lo exits 0" 0 add_r1
check "... and writes $CONF" grep -Eq '^r1 netdev lo backend udp$' "$CONF"
capture list1 as_user "$URXE" run -- ibv_devices
check "with r1 configured ibv_devices lists r1 alone (got '$(devices_in list1)')" \
	test "$(devices_in list1)" = r1
capture show_r1 as_user "$URXE" dev show
expect_match "dev show names the file as the source" show_r1 "^# devices from $CONF\$"
capture add_again as_user "$URXE" dev add r1 netdev lo
expect_rc "adding r1 twice fails" 1 add_again
expect_match "... saying it exists" add_again 'device r1 exists' err
capture add_rxe0 as_user "$URXE" dev add rxe0 netdev lo
expect_rc "urxe dev add rxe0 netdev lo exits 0" 0 add_rxe0
capture add_absent as_user "$URXE" dev add r2 netdev nosuch0
expect_rc "adding a device on an absent interface succeeds" 0 add_absent
expect_match "... with a warning" add_absent 'interface nosuch0 is not in this network namespace' err
capture list2 as_user "$URXE" run -- ibv_devices
check "ibv_devices lists r1 and rxe0, not r2 (got '$(devices_in list2)')" \
	test "$(devices_in list2)" = "r1 rxe0"
capture devinfo_r1 as_user "$URXE" run -- ibv_devinfo -d r1
expect_rc "ibv_devinfo -d r1 exits 0" 0 devinfo_r1
expect_match "ibv_devinfo -d r1: PORT_ACTIVE" devinfo_r1 'PORT_ACTIVE'
capture add_noif as_user "$URXE" dev add r3
expect_rc "dev add without an interface is a usage error (2)" 2 add_noif
expect_match "... saying so" add_noif 'names no interface' err
capture add_badbe as_user "$URXE" dev add r3 netdev lo backend tcp
expect_rc "dev add with an unknown backend is a usage error (2)" 2 add_badbe
expect_match "... naming it" add_badbe "unknown backend 'tcp'" err
capture add_badname as_user "$URXE" dev add 'r/3' netdev lo
expect_rc "dev add with a bad device name is a usage error (2)" 2 add_badname

capture del_r1 as_user "$URXE" dev del r1
expect_rc "urxe dev del r1 exits 0" 0 del_r1
capture list3 as_user "$URXE" run -- ibv_devices
check "after dev del r1: rxe0 alone (got '$(devices_in list3)')" \
	test "$(devices_in list3)" = rxe0
capture del_none as_user "$URXE" dev del nosuch
expect_rc "dev del of an unknown device fails" 1 del_none
expect_match "... naming it" del_none 'no device nosuch' err
capture del_rxe0 as_user "$URXE" dev del rxe0
capture del_r2 as_user "$URXE" dev del r2
check "dev del rxe0 and r2 exit 0" test "$RC" -eq 0
check "... leaving a file without devices" \
	test "$(grep -cv '^#' "$CONF" || true)" -eq 0
capture show_empty as_user "$URXE" dev show
expect_match "an empty file means the built-in default again" show_empty \
	'^# devices from built-in default$'
capture list4 as_user "$URXE" run -- ibv_devices
check "... and ibv_devices lists rxe0 (got '$(devices_in list4)')" \
	test "$(devices_in list4)" = rxe0

# URXE_DEVICES overrides every file; ';' separates entries; a device whose
# interface is absent is not listed.
capture add_f1 as_user "$URXE" dev add f1 netdev lo
capture list_env as_user URXE_DEVICES="e1 netdev lo; e2 netdev nosuch0" \
	"$URXE" run -- ibv_devices
check "URXE_DEVICES overrides the file; absent interface skipped (got '$(devices_in list_env)')" \
	test "$(devices_in list_env)" = e1
# URXE_CONFIG names the file to read and edit.
ALT=$WORK/tmp/alt.conf
capture add_alt as_user URXE_CONFIG="$ALT" "$URXE" dev add a1 netdev lo
expect_rc "URXE_CONFIG=FILE urxe dev add a1 exits 0" 0 add_alt
check "... and writes FILE" grep -Eq '^a1 netdev lo backend udp$' "$ALT"
capture list_alt as_user URXE_CONFIG="$ALT" "$URXE" run -- ibv_devices
check "with URXE_CONFIG, ibv_devices lists its a1 (got '$(devices_in list_alt)')" \
	test "$(devices_in list_alt)" = a1

# --- urxe run ------------------------------------------------------------------

capture run_noprog as_user "$URXE" run --
expect_rc "urxe run without a program is a usage error (2)" 2 run_noprog
expect_match "it says why, with the usage" run_noprog "^urxe: run needs a program to run" err
expect_match "... and the usage names --dev-node and --trace" run_noprog "urxe run \\[--dev-node\\] \\[--trace\\] \\[--\\] PROGRAM" err
capture run_missing as_user "$URXE" run -- /nonexistent/program
expect_rc "urxe run of a missing program exits 127" 127 run_missing
expect_match "... saying it cannot run it" run_missing 'cannot run /nonexistent/program' err

# A copy of the build whose lib directory the user cannot read: `urxe run`
# must refuse rather than let the program load Debian's libibverbs.
FAKE=$WORK/fake
mkdir -p "$FAKE/bin" "$FAKE/lib"
cp "$URXE" "$FAKE/bin/urxe"
cp -P "$B"/lib/libibverbs.so* "$FAKE/lib/"
chmod 000 "$FAKE/lib"
capture run_unreadable as_user "$FAKE/bin/urxe" run -- ibv_devices
chmod 755 "$FAKE/lib"
expect_rc "urxe run with an unreadable lib directory exits 1" 1 run_unreadable
expect_match "... explaining the system library would be loaded" run_unreadable \
	"$FAKE/lib/libibverbs.so.1 is not readable by this user; the program would load the system libibverbs instead" err

finish
