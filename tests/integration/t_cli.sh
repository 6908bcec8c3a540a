#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_cli BUILD_DIR: the `urxe` command as a new user meets it, run as an
# ordinary user.  `urxe --version` prints "urxe VERSION (COMMIT)" with the
# project's version and `git describe --always --dirty` of the sources
# ("unknown" outside a checkout); exit status 0 for help, 1 for a failed
# operation, 2 for every usage error (with the usage on stderr).  `stats
# --json` is valid JSON with the documented keys; after an ibv_rc_pingpong
# pair has exited, `stats --qp --all` (text and JSON) still shows each
# instance's RC QP, destroyed, with its packets.  `dev show` lists an open
# instance with its pid, program and GID (the GID the program itself
# reads), and shows it to another user only as an address and uid.
# `doctor` passes here and FAILs in a network namespace whose lo is down,
# for a packet-backend device without CAP_NET_RAW, and on a bad
# configuration line (by its number).  `dev add`/`dev del` keep a file's
# comments byte for byte and warn when the built-in rxe0 stops existing; a
# file whose entries are all invalid gives no devices.  The bash completion
# completes subcommands, options, device names and interfaces.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

URXE=$B/bin/urxe
LIB="LD_LIBRARY_PATH=$B/lib"
T_LIMIT=20

# json_check NAME PYTHON: the captured run NAME's stdout, parsed as JSON,
# satisfies the assertions of PYTHON (a body using `d`); prints why not.
# shellcheck disable=SC2317 # called through check
json_check() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2])
' "$(out "$1")" "$2"
}

# --- --version -----------------------------------------------------------------

want_ver=$(sed -En 's/^project\(urxe VERSION ([0-9.]+).*/\1/p' "$SRC/CMakeLists.txt")
# The commit the build recorded; the tree may have moved on since the build.
built=$(sed -En 's/^#define URXE_COMMIT "(.*)"$/\1/p' "$B/tools/urxe_version.h")
now=unknown
if [ -e "$SRC/.git" ] && c=$(git -C "$SRC" describe --always --dirty 2>/dev/null); then
	now=$c
fi
capture version urxe_cli --version
expect_rc "urxe --version exits 0" 0 version
check "urxe --version prints 'urxe $want_ver ($built)' (got '$(cat "$(out version)")')" \
	test "$(cat "$(out version)")" = "urxe $want_ver ($built)"
if [ "$now" = unknown ]; then
	check "not a git checkout: the commit is \"unknown\"" test "$built" = unknown
elif [ "$built" = "$now" ]; then
	pass "the commit is git describe --always --dirty of the sources ($now)"
else
	check "the commit '$built' has git describe's form (the tree is at '$now' since the build)" \
		grep -Eq '^([^ ]+-g)?[0-9a-f]{7,}(-dirty)?$' <<<"$built"
fi
capture version2 urxe_cli version
check "urxe version prints the same" cmp -s "$(out version)" "$(out version2)"
# A source tree that is not a git checkout (a release tarball): "unknown".
mkdir "$WORK/tarball"
cmake -DSRC="$WORK/tarball" -DOUT="$WORK/tarball/v.h" -DVERSION=9.8.7 \
	-P "$SRC/cmake/urxe_version.cmake"
check "outside a git checkout the commit is \"unknown\"" \
	grep -qx '#define URXE_COMMIT "unknown"' "$WORK/tarball/v.h"
touch -d '2001-01-01 00:00:00 UTC' "$WORK/tarball/v.h"
cmake -DSRC="$WORK/tarball" -DOUT="$WORK/tarball/v.h" -DVERSION=9.8.7 \
	-P "$SRC/cmake/urxe_version.cmake"
check "the header is left alone when nothing changed (no rebuild per build)" \
	test "$(stat -c %Y "$WORK/tarball/v.h")" -eq 978307200

# --- exit status ----------------------------------------------------------------

for h in --help -h help "stats --help" "dev add --help"; do
	# shellcheck disable=SC2086 # words on purpose
	capture help urxe_cli $h
	check "urxe $h exits 0 with the usage on stdout" \
		test "$RC" -eq 0 -a -s "$(out help)" -a ! -s "$(err help)"
done
usage_errors=("" frobnicate "dev frobnicate" "dev show a b" "dev show --x"
	      "dev del" "dev del a b" "dev add" "dev add r3"
	      "dev add r3 netdev lo backend tcp" "dev add r/3 netdev lo"
	      "stats --frobnicate" "stats rxe0 rxe1" "run" "run --"
	      "doctor extra" "--version extra")
for u in "${usage_errors[@]}"; do
	# shellcheck disable=SC2086
	capture usage urxe_cli $u
	if [ "$RC" -eq 2 ] && grep -q '^usage: urxe' "$(err usage)" && [ ! -s "$(out usage)" ]; then
		pass "urxe $u: usage error, exit 2, usage on stderr"
	else
		fail "urxe $u: exit $RC (want 2, usage on stderr only)"
		show usage
	fi
done
capture rt1 urxe_cli dev show nosuch
expect_rc "urxe dev show nosuch fails (1)" 1 rt1
capture rt2 urxe_cli stats nosuch
expect_rc "urxe stats nosuch fails (1)" 1 rt2
capture rt3 as_user URXE_CONFIG="$WORK/tmp/none.conf" "$URXE" dev del nosuch
expect_rc "urxe dev del of a device no file lists fails (1)" 1 rt3

# --- stats --json with nothing open -------------------------------------------

capture js0 urxe_cli stats --json
expect_rc "urxe stats --json exits 0" 0 js0
check "stats --json with nothing open: schema 1, no devices" json_check js0 '
assert d["schema"] == 1 and d["devices"] == [] and d["exited_included"] is False
assert d["rundir"] == "'"$RUNDIR"'", d["rundir"]'

# --- dev show: an open instance, seen by its user and by another ------------

bg_user holder as_user "$LIB" /usr/bin/python3 -c "$(<"$HERE/holder.py")" rxe0 60
HOLDER=$BG_PID
wait_for 30 grep -q '^ready ' "$(out holder)" || { show holder "?"; die "the pyverbs holder did not get ready"; }
hgid=$(awk '/^ready / { print $2 }' "$(out holder)")
capture show urxe_cli dev show
sed 's/^/#     | /' "$(out show)"
line=$(grep '^instance rxe0 ' "$(out show)" || true)
hpid=$(sed -En 's/^instance rxe0 pid ([0-9]+) .*/\1/p' <<<"$line")
check "dev show lists the holder: '$line'" \
	grep -Eq "^instance rxe0 pid [0-9]+ \(python3\) slot [0-9]+ netdev lo GID $hgid\$" <<<"$line"
check "... with the pid of a python3 process of the user's (pid ${hpid:-?})" \
	test -n "$hpid" -a "$(stat -c %U "/proc/${hpid:-0}" 2>/dev/null)" = "$TUSER"
expect_match "... counted" show '^# 1 device instance\(s\) open on this host by you'
if [ "$(id -u)" -eq 0 ]; then
	capture show_other as_root "$URXE" dev show
	uid=$(id -u "$TUSER")
	expect_match "another user sees its slot and GID $hgid (no socket before its first QP)" show_other \
		"^other slot [0-9]+ GID $hgid \\(no UDP socket yet"
	expect_no_match "... and no pid or program of it" show_other "^instance |python3"
else
	note "SKIP: not root: another user's view is not checked"
fi
stop_pid "$HOLDER"

# --- an ibv_rc_pingpong pair: per-QP figures after both exited ---------------

# A runtime directory of its own: only the pair's two instances in it.
RUN3=$WORK/run3
mkdir -m 1777 "$RUN3"
R3="URXE_RUNDIR=$RUN3"
T_LIMIT=60
next_port port
args=(ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 200)
serve srv "$port" as_user "$R3" "$LIB" "${args[@]}" ||
	{ show srv; die "the server did not start listening on TCP $port"; }
spid=$BG_PID
capture cli as_user "$R3" "$LIB" "${args[@]}" localhost
crc=$RC
reap "$spid"
check "ibv_rc_pingpong server and client exit 0 ($RC, $crc)" test "$RC" -eq 0 -a "$crc" -eq 0
T_LIMIT=20
capture gone as_user "$R3" "$URXE" stats --qp --all
sed 's/^/#     | /' "$(out gone)"
check "stats --qp --all: both exited instances list their RC QP, destroyed, with packets" \
	test "$(grep -cE '^		qpn 0x[0-9a-f]{6} RC [A-Z]+ \(destroyed\) sent_pkts [1-9][0-9]* rcvd_pkts [1-9]' "$(out gone)")" -eq 2
check "... under instances marked exited, 0 QPs, 1 destroyed" \
	test "$(grep -cE '^	instance pid [0-9]+ slot [0-9]+ netdev lo \(exited\): 0 QPs, 1 destroyed$' "$(out gone)")" -eq 2
capture js as_user "$R3" "$URXE" stats --qp --all --json
expect_rc "stats --qp --all --json exits 0" 0 js
check "stats --json parses with python3 -m json.tool" \
	python3 -m json.tool "$(out js)" /dev/null
names='["sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request",
 "rcvd_rnr_err", "send_rnr_err", "rcvd_seq_err", "completer_retry_err",
 "retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "dropped",
 "dropped_icrc", "dropped_no_qp", "fault_drop", "fault_dup", "fault_reorder",
 "fault_corrupt"]'
check "stats --json: the documented keys and types; 2 exited instances, each a destroyed RC QP with its packets" json_check js '
names = '"$names"'
assert set(d) == {"schema", "rundir", "exited_included", "instances_without_counters", "devices"}, d.keys()
assert d["schema"] == 1 and d["exited_included"] is True
assert isinstance(d["instances_without_counters"], int)
[dev] = d["devices"]
assert set(dev) == {"name", "open", "exited", "counters", "instances"}, dev.keys()
assert dev["name"] == "rxe0" and dev["open"] == 0 and dev["exited"] == 2
assert list(dev["counters"]) == names, list(dev["counters"])
assert all(isinstance(v, int) for v in dev["counters"].values())
assert len(dev["instances"]) == 2
for i in dev["instances"]:
    assert set(i) == {"pid", "slot", "netdev", "open", "claimed", "qps_total",
        "qps_unlisted", "qps_destroyed", "qps_destroyed_unlisted", "counters",
        "qps"}, i.keys()
    assert i["open"] is False and i["netdev"] == "lo" and i["qps_total"] == 0
    assert i["qps_destroyed"] == 1 and i["qps_destroyed_unlisted"] == 0
    assert isinstance(i["pid"], int) and isinstance(i["claimed"], int)
    [q] = i["qps"]
    assert set(q) == {"qpn", "type", "state", "destroyed", "counters"}, q.keys()
    assert q["type"] == "RC" and q["destroyed"] is True
    assert 0x4000 <= q["qpn"] <= 0xffffff
    assert q["counters"]["sent_pkts"] >= 200 and q["counters"]["rcvd_pkts"] >= 200, q
    assert list(q["counters"]) == names[:len(q["counters"])]
s = sum(i["counters"]["sent_pkts"] for i in dev["instances"])
assert s == dev["counters"]["sent_pkts"], (s, dev["counters"]["sent_pkts"])'
# Escaping: a device name is [A-Za-z0-9_.-], so a rundir with a quote
# stands in for any string the output carries.
QDIR=$WORK/tmp/q\"uo\\te
mkdir -m 1777 "$QDIR"
capture jsq as_user URXE_RUNDIR="$QDIR" "$URXE" stats --json
check "stats --json escapes strings (a runtime directory named $QDIR)" \
	python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["rundir"] == sys.argv[2]' \
	"$(out jsq)" "$QDIR"

# --- doctor ---------------------------------------------------------------------

capture doc urxe_cli doctor
sed 's/^/#     | /' "$(out doc)"
expect_rc "urxe doctor passes here (exit 0)" 0 doc
check "doctor: every line is OK, WARN or FAIL, or a # comment" \
	test "$(grep -cvE '^(OK  |WARN|FAIL|# )' "$(out doc)")" -eq 0
expect_match "doctor: the library urxe run loads" doc \
	"^OK    library: programs started by \`urxe run\` load $(readlink -f "$B/lib/libibverbs.so.1")\$"
expect_match "doctor: the library a plain program loads" doc '^(OK|WARN)  +library: a plain program '
expect_match "doctor: the runtime directory, the user's, 0700" doc \
	"^OK    runtime directory: $RUNDIR/urxe-v2-$(id -u "$TUSER"), owner uid [0-9]+ \\(you\\), mode 0700\$"
expect_match "doctor: lo up" doc '^OK    interface lo \(device rxe0\): up, '
expect_match "doctor: UDP 4791 on lo" doc '^OK    UDP 4791 on lo: '
expect_match "doctor: socket buffers" doc '^(OK|WARN)  +socket buffers: net.core.rmem_max is [0-9]+'
capture doc_lib as_user LD_LIBRARY_PATH="$B/lib" "$URXE" doctor
expect_match "doctor: with LD_LIBRARY_PATH a plain program loads urxe's" doc_lib \
	'^OK    library: a plain program loads urxe.s too \(.*, via LD_LIBRARY_PATH\)$'
if as_user unshare -rn true 2>/dev/null; then
	capture doc_ns as_user unshare -rn "$URXE" doctor
	expect_rc "doctor in a network namespace whose lo is down FAILs (exit 1)" 1 doc_ns
	expect_match "... on lo, saying to bring it up" doc_ns \
		'^FAIL  interface lo \(device rxe0\): down, .*ip link set lo up'
else
	note "SKIP: unshare -rn is not allowed to $TUSER: lo down is not checked"
fi
capture doc_pkt as_user URXE_DEVICES="p0 netdev lo backend packet" "$URXE" doctor
expect_rc "doctor with a packet-backend device and no CAP_NET_RAW FAILs" 1 doc_pkt
expect_match "... saying how to get it" doc_pkt \
	'^FAIL  CAP_NET_RAW: not held: .*p0.*run as root, or grant it'
printf '# comment\nok1 netdev lo\nbad/name netdev lo\n\nok2 netdev lo backend tcp\n' >"$WORK/tmp/bad.conf"
capture doc_cfg as_user URXE_CONFIG="$WORK/tmp/bad.conf" "$URXE" doctor
expect_rc "doctor with bad configuration lines FAILs" 1 doc_cfg
expect_match "... naming line 3" doc_cfg "^FAIL  configuration: $WORK/tmp/bad.conf:3: bad device name 'bad/name'"
expect_match "... and line 5" doc_cfg "^FAIL  configuration: $WORK/tmp/bad.conf:5: unknown backend 'tcp'"

# --- configuration editing ------------------------------------------------------

CONF=$WORK/tmp/edit.conf
printf '# my lab devices\n\n  # indented, trailing spaces   \nlab0 netdev lo # the first\n\tlab1 netdev lo backend udp\n# end' >"$CONF"
chmod 640 "$CONF"
chown "$TUSER" "$CONF" 2>/dev/null || true
cp "$CONF" "$WORK/tmp/edit.orig"
capture ed_add as_user URXE_CONFIG="$CONF" "$URXE" dev add lab2 netdev lo
expect_rc "dev add to a file with comments exits 0" 0 ed_add
check "... the file is the old text byte for byte, then the new line" \
	cmp -s "$CONF" <(cat "$WORK/tmp/edit.orig"; printf '\nlab2 netdev lo backend udp\n')
expect_no_match "... no rxe0 warning: the file listed devices already" ed_add 'rxe0' err
capture ed_del as_user URXE_CONFIG="$CONF" "$URXE" dev del lab0
expect_rc "dev del lab0 exits 0" 0 ed_del
check "... only lab0's line left the file" \
	cmp -s "$CONF" <(sed '/^lab0 /d' "$WORK/tmp/edit.orig"; printf '\nlab2 netdev lo backend udp\n')
check "... and its mode is kept (640)" test "$(stat -c %a "$CONF")" = 640
NEW=$WORK/tmp/new/devices.conf
capture ed_new as_user URXE_CONFIG="$NEW" "$URXE" dev add r1 netdev lo
expect_rc "dev add to a new file exits 0" 0 ed_new
expect_match "... warning that the built-in rxe0 no longer exists, and how to keep it" ed_new \
	'built-in rxe0 \(on lo\) no longer exists; to keep it: urxe dev add rxe0 netdev lo' err
capture ed_list as_user URXE_CONFIG="$NEW" "$LIB" ibv_devices
check "... indeed: ibv_devices lists r1 alone (got '$(devices_in ed_list)')" \
	test "$(devices_in ed_list)" = r1
capture ed_rxe0 as_user URXE_CONFIG="$NEW" "$URXE" dev add rxe0 netdev lo
expect_no_match "adding rxe0 itself warns of nothing" ed_rxe0 'warning' err
printf 'bad/one netdev lo\n# fine\nr2 netdev\n' >"$WORK/tmp/allbad.conf"
capture allbad as_user URXE_CONFIG="$WORK/tmp/allbad.conf" "$LIB" ibv_devices
check "a file whose entries are all invalid: no devices, not rxe0 (got '$(devices_in allbad)')" \
	test -z "$(devices_in allbad)"
expect_match "... and a log line naming the file and line 3" allbad \
	"^urxe: warning: $WORK/tmp/allbad.conf:3: 'netdev' needs a value; entry ignored\$" err
expect_match "... and one saying there are no devices" allbad \
	"^urxe: warning: $WORK/tmp/allbad.conf: no valid device entry .*: no devices" err

# --- bash completion --------------------------------------------------------------

# comp WORDS...: the completions bash offers for the last word.
comp() {
	bash --norc --noprofile -c '
. "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_urxe
[ "${#COMPREPLY[@]}" -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
		_ "$SRC/tools/urxe.bash-completion" "$@"
}
check "completion: 'urxe ' offers the subcommands" \
	test "$(comp "$URXE" '')" = "--help --version dev doctor help run stats "
check "completion: 'urxe d' offers dev, doctor" test "$(comp "$URXE" d)" = "dev doctor "
check "completion: 'urxe dev ' offers show add del" test "$(comp "$URXE" dev '')" = "add del show "
check "completion: 'urxe stats --' offers the options" \
	test "$(comp "$URXE" stats --)" = "--all --help --json --qp "
got=$(URXE_CONFIG=$NEW comp "$URXE" dev del '')
check "completion: 'urxe dev del ' offers the configured devices ($got)" test "$got" = "r1 rxe0 "
got=$(comp "$URXE" dev add r9 netdev l)
check "completion: 'dev add r9 netdev l' offers lo ($got)" grep -qw lo <<<"$got"
check "completion: 'dev add r9 netdev lo ' offers backend" \
	test "$(comp "$URXE" dev add r9 netdev lo '')" = "backend "
check "completion: 'dev add r9 netdev lo backend ' offers udp, packet" \
	test "$(comp "$URXE" dev add r9 netdev lo backend '')" = "packet udp "

finish
