#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_tenants BUILD_DIR: another local user can neither crash, disturb nor
# read a user's urxe.  Root only (it needs two users).  The victim is the
# test user; the attacker URXE_TEST_ATTACKER (default nobody) runs
# tenant_attack.py, which, round after round while the victim works,
# tries to read, open, truncate, extend, scribble over (random and crafted
# records), replace, link over, unlink, chmod and lock each file of the
# victim's runtime directory, and to list, add to, rename and remove the
# directory; it holds the abstract socket names of slots 1..32 and tries
# to connect to the victim's.  Meanwhile the victim runs Debian's
# ibv_rc_pingpong (-c: the server checks the data), ibv_xsrq_pingpong
# (XRC, one and three clients) and urxe_mcast (UD multicast), and
# `urxe stats`.  Every victim run must pass with its slot above the
# attacker's names, and the attacker must have managed nothing at all.
# Last, the one thing the design lets another user do: make a directory
# of the victim's name first in a shared base.  The victim's programs
# must then fail cleanly (an exit status, not a signal) and say whose it
# is and what to do.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: the attacker is a second user"
command -v python3 >/dev/null || skip "no python3"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
xrc_domain_files

ATT=${URXE_TEST_ATTACKER:-nobody}
[ "$ATT" != "$TUSER" ] || skip "the attacker must be another user than $TUSER"
auid=$(id -u "$ATT") || die "no user $ATT (URXE_TEST_ATTACKER)"
AS_ATT=(setpriv "--reuid=$auid" "--regid=$(id -g "$ATT")" --clear-groups --)
vuid=$(id -u "$TUSER")
VDIR=$RUNDIR/urxe-v2-$vuid
LIB="LD_LIBRARY_PATH=$B/lib"
NAMES=32
T_LIMIT=60

# The victim's directory exists before the attacker comes (made by its
# first program, here `urxe stats`).
capture stats0 as_user "$B/bin/urxe" stats --all
check "the victim's runtime directory is its own, 0700" \
	test "$(stat -c '%u %a' "$VDIR")" = "$vuid 700"

AWORK=$WORK/att
mkdir -m 700 "$AWORK"
chown "$auid" "$AWORK"
UNTIL=$WORK/tmp/attack.done
timeout -k 5 200 "${AS_ATT[@]}" env -i PATH=/usr/bin:/bin python3 \
	"$HERE/tenant_attack.py" \
	--dir "$VDIR" --base "$RUNDIR" --names "$NAMES" --until "$UNTIL" \
	--time 180 --mine "$AWORK" --seed "$RANDOM" \
	>"$WORK/out/attack.out" 2>"$WORK/out/attack.err" &
APID=$!
PIDS+=("$APID")
wait_for 20 grep -q '^names:' "$WORK/out/attack.out" ||
	{ cat "$WORK/out/attack.err"; die "the attacker did not start"; }
note "attacker ($ATT): $(head -n 1 "$WORK/out/attack.out")"

# qpn_slot NAME: the slot of the QPN an ibv_*_pingpong run printed.
qpn_slot() {
	local q
	q=$(sed -En 's/.*local address:.*QPN (0x[0-9a-f]+).*/\1/p' "$(out "$1")" | head -n 1)
	echo $((${q:-0} >> 14))
}

# rc NAME SIZE ITERS: ibv_rc_pingpong -c (the server checks the data).
rc() {
	local name=$1 port spid s
	next_port port
	local args=(ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -s "$2" -n "$3" -c)
	if ! serve "$name.srv" "$port" as_user "$LIB" "${args[@]}"; then
		reap "$BG_PID"
		fail "$name: the server did not listen"
		show "$name.srv"
		return
	fi
	spid=$BG_PID
	capture "$name.cli" as_user "$LIB" "${args[@]}" localhost
	local crc=$RC
	reap "$spid"
	s=$(qpn_slot "$name.srv")
	if [ "$crc" -eq 0 ] && [ "$RC" -eq 0 ] &&
		! grep -qi "invalid\|fail\|error" "$(out "$name.srv")" "$(out "$name.cli")"; then
		pass "$name: ibv_rc_pingpong -c -s $2 -n $3 under attack: both exit 0, data checked"
	else
		fail "$name: ibv_rc_pingpong -s $2 -n $3: client $crc, server $RC"
		show "$name.srv" "$RC"
		show "$name.cli" "$crc"
	fi
	check "$name: the victim's slot ($s) is past the $NAMES names the attacker holds" \
		test "$s" -gt "$NAMES"
}

# xp NAME CLIENTS: ibv_xsrq_pingpong, a server and CLIENTS clients.
xp() {
	local name=$1 nc=$2 port spid i ok=1
	local -a cp=()
	next_port port
	local args=(ibv_xsrq_pingpong -d rxe0 -g 0 -p "$port" -s 4096 -n 20)
	if ! serve "$name.srv" "$port" as_user "$LIB" "${args[@]}" -c "$nc"; then
		reap "$BG_PID"
		fail "$name: the server did not listen"
		show "$name.srv"
		return
	fi
	spid=$BG_PID
	for ((i = 0; i < nc; i++)); do
		bg_user "$name.cli$i" as_user "$LIB" "${args[@]}" localhost
		cp+=("$BG_PID")
	done
	for ((i = 0; i < nc; i++)); do
		reap "${cp[$i]}"
		[ "$RC" -eq 0 ] || { ok=0; show "$name.cli$i" "$RC"; }
	done
	reap "$spid"
	[ "$RC" -eq 0 ] || { ok=0; show "$name.srv" "$RC"; }
	if [ "$ok" -eq 1 ]; then
		pass "$name: ibv_xsrq_pingpong (XRC) with $nc client(s) under attack: all exit 0"
	else
		fail "$name: ibv_xsrq_pingpong (XRC) with $nc client(s)"
	fi
}

# mc NAME GROUP: urxe_mcast receiver and sender (UD multicast on lo).
# shellcheck disable=SC2317 # called by mcast_run
victim() { END=(as_user "$LIB"); }
mc() {
	if mcast_run "$1" "$2" victim victim; then
		pass "$1: UD multicast to $2 under attack: each attached QP got its 20 datagrams once"
	else
		fail "$1: UD multicast to $2: receiver exit $RC"
	fi
}

rc rc1 4096 2000
xp xrc1 1
mc mc1 239.255.0.77
rc rc2 65536 200
xp xrc3 3
mc mc2 239.255.0.78
capture stats1 as_user "$B/bin/urxe" stats --all
check "urxe stats works for the victim under attack (exit $RC)" test "$RC" -eq 0

touch "$UNTIL"
reap "$APID"
arc=$RC
sed 's/^/#     attacker: /' "$WORK/out/attack.out"
[ ! -s "$WORK/out/attack.err" ] || sed 's/^/#     attacker stderr: /' "$WORK/out/attack.err"
check "the attacker ran to the end (exit $arc)" test "$arc" -eq 0
check "the attacker held $NAMES slot names" grep -q "^names: $NAMES held of $NAMES" \
	"$WORK/out/attack.out"
rounds=$(sed -n 's/^rounds: //p' "$WORK/out/attack.out")
check "the attacker went round the victim's files many times (${rounds:-0} rounds)" \
	test "${rounds:-0}" -ge 10
check "the attacker managed nothing against the victim (done: 0)" \
	grep -qx 'done: 0' "$WORK/out/attack.out"
check "the victim's directory is still its own, 0700" \
	test "$(stat -c '%u %a' "$VDIR")" = "$vuid 700"

# --- squatting: the victim's directory name taken first in a shared base --
BASE2=$WORK/base2
mkdir -m 1777 "$BASE2"
chmod 1777 "$BASE2"
"${AS_ATT[@]}" mkdir -m 777 "$BASE2/urxe-v2-$vuid"
capture squat as_user "URXE_RUNDIR=$BASE2" "$LIB" ibv_devinfo -d rxe0
check "squatted: ibv_devinfo fails with an exit status, not a signal ($RC)" \
	test "$RC" -ne 0 -a "$RC" -lt 128
check "squatted: the log says whose the directory is and what to do" \
	grep -q "belongs to uid $auid, not to you.*URXE_RUNDIR" "$(err squat)"
check "squatted: nothing of the victim's was made in the attacker's directory" \
	test -z "$(ls -A "$BASE2/urxe-v2-$vuid")"
finish
