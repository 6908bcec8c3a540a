#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_keys BUILD_DIR: remote access is guarded by the rkey alone, and a
# guesser gets nothing.  A target (urxe_keyguess target, verbs, as the
# test user) registers 64 one-page regions and a canary page and holds a
# UC and an RC QP in RTR whose peer is 127.0.0.1.  An attacker of another
# user (urxe_keyguess attack, a plain UDP socket on 127.0.0.1:4791, as
# URXE_TEST_ATTACKER, default nobody) sends well-formed RDMA WRITEs with
# valid ICRCs: one to the RC QP at its PSN with a random key (it must be
# NAKed, remote access error, and end the QP, as the IBA says), 100,000
# to the UC QP with random keys at random places of the regions, the walk
# of a counted key scheme (each region's index with every low byte), and
# last one with the canary's real key.  The target must find every byte
# of the regions unchanged, the canary written (so the packets were good
# and reached the QP), its UC QP still in RTR (UC drops a refused WRITE)
# and its RC QP in ERR.  A chance hit has probability ~3·10^-5 a run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
KG=$B/tests/urxe_keyguess
[ -x "$KG" ] || die "$KG is not built"

if [ "$(id -u)" -eq 0 ]; then
	ATT=${URXE_TEST_ATTACKER:-nobody}
	[ "$ATT" != "$TUSER" ] ||
		skip "the attacker must be another user than $TUSER: set URXE_TEST_USER or URXE_TEST_ATTACKER"
	auid=$(id -u "$ATT") || die "no user $ATT (URXE_TEST_ATTACKER)"
	ATTACK=(timeout -k 5 120 setpriv "--reuid=$auid" "--regid=$(id -g "$ATT")"
		--clear-groups -- "$KG" attack)
else
	ATT=$(id -un)
	note "not root: the attacker runs as $ATT too"
	ATTACK=(timeout -k 5 120 "$KG" attack)
fi
[ -z "$(ss -Huan 'sport = :4791' | awk '$4 ~ /^127\.0\.0\.1:/')" ] ||
	skip "127.0.0.1:4791 is taken: the attacker listens there"

K=64
DONE=$WORK/tmp/done
T_LIMIT=150
bg_user target as_user LD_LIBRARY_PATH="$B/lib" "$KG" target -n "$K" \
	-f "$DONE" -t 120
TPID=$BG_PID
wait_for 20 grep -q '^target ' "$(out target)" ||
	{ show target; die "the target did not start"; }
read -r _ _ addr _ ucq _ rcq _ psn _ va _ canary _ rkey <"$(out target)"
note "target: $(head -n 1 "$(out target)")"

set +e
"${ATTACK[@]}" -a "$addr" -u "$ucq" -r "$rcq" -p "$psn" -v "$va" -n "$K" \
	-c "$canary" -k "$rkey" -N 100000 -s "$RANDOM" >"$WORK/out/attack.out" 2>&1
arc=$?
set -e
touch "$DONE"
reap "$TPID"
trc=$RC
sed 's/^/#     attacker: /' "$WORK/out/attack.out"
sed -n '2,$s/^/#     target: /p' "$(out target)"
check "attacker ($ATT): one NAK for its RC guess, no other answer (exit $arc)" \
	test "$arc" -eq 0
check "attacker: sent 100,000 random and $((K * 256)) walked UC guesses" \
	grep -q "^uc: 100000 random guesses, $((K * 256)) walked" "$WORK/out/attack.out"
check "target ($TUSER): regions untouched, canary written, UC QP in RTR, RC QP in ERR (exit $trc)" \
	test "$trc" -eq 0
check "target: says so" grep -q '^untouched ' "$(out target)"
finish
