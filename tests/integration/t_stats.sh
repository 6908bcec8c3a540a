#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_stats BUILD_DIR: `urxe stats` reads the counters every device instance
# keeps in <rundir>/counters.  Debian's unmodified ibv_rc_pingpong, server
# and client on loopback, run as an ordinary user with URXE_FAULTS dropping
# 5% of the packets each sends (seed 1): while both run, `urxe stats` sums
# their two instances of rxe0 with kernel rxe's counter names — packets
# sent and received, and the loss showing as PSN-sequence NAKs received
# (rcvd_seq_err) or transport timeouts (completer_retry_err) — and `--qp`
# lists each instance with its RC QP in RTS and that QP's own packets;
# counters only grow between samples.  After both exit, `urxe stats` shows
# no open instance, and `--all` still shows the two exited instances' last
# figures, at least those seen mid-run, with each one's RC QP (destroyed)
# and its packets, and fault_drop is exactly the
# 2 x 150 drops the injectors' limit allows.  Plus the CLI's exit codes: no
# instance is not an error, an unknown NAME is (1), a bad option is a
# usage error (2).
# Fault injection that cannot silently do nothing: a misspelt URXE_FAULTS
# makes ibv_devinfo and ibv_rc_pingpong fail to open rxe0 with a log line
# naming the bad token (ibv_devices still lists it); a short pingpong with
# every kind of fault (in a runtime directory of its own) shows each kind
# counted by `urxe stats` (fault_drop, fault_dup, fault_reorder,
# fault_corrupt), and its URXE_PCAP captures, read by tshark, carry a
# pcapng comment on each frame the injector touched: as many as it
# counted, kind by kind.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ibv_rc_pingpong >/dev/null || skip "no ibv_rc_pingpong (ibverbs-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

LIB="LD_LIBRARY_PATH=$B/lib"
# limit: the losses stop well before the end (about 9,000 packets each way).
# ibv_rc_pingpong exits once its own last send is acknowledged; were the
# ACK of its peer's last send lost, the peer's retransmissions would find
# no one and fail with a retry error (on any RC device; QPNs differ per run,
# and so does which packet the seeded hash picks).
FAULTS="URXE_FAULTS=drop=0.05,seed=1,limit=150"
NAMES=(sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_rnr_err
       send_rnr_err rcvd_seq_err completer_retry_err retry_exceeded_err
       retry_rnr_exceeded_err send_err dropped dropped_icrc dropped_no_qp
       fault_drop fault_dup fault_reorder fault_corrupt)

# counter NAME COUNTER: COUNTER's value in the first device block of the
# stats run NAME ("	sent_pkts                506"; QP lines start "qpn").
counter() {
	awk -v c="$2" '$1 == c && NF == 2 { print $2; exit }' "$(out "$1")"
}
retries() {
	echo $(($(counter "$1" rcvd_seq_err) + $(counter "$1" completer_retry_err)))
}

# --- the CLI with nothing open ----------------------------------------------

T_LIMIT=20
capture none urxe_cli stats
expect_rc "urxe stats with no instance open exits 0" 0 none
expect_match "urxe stats with no instance open says so" none '^# none$'
capture none_name urxe_cli stats rxe0
expect_rc "urxe stats NAME with no open instance of NAME exits 1" 1 none_name
expect_match "... and says why" none_name 'no open instance of rxe0' err
capture bad_opt urxe_cli stats --frobnicate
expect_rc "urxe stats --frobnicate is a usage error (2)" 2 bad_opt
capture two_names urxe_cli stats rxe0 rxe1
expect_rc "urxe stats with two names is a usage error (2)" 2 two_names

# --- a lossy ibv_rc_pingpong, sampled while it runs -------------------------

T_LIMIT=240		# per program: 5% loss, maybe under sanitizers
next_port port
args=(ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -s 4096 -n 1500 -c)
serve srv "$port" as_user "$FAULTS" "$LIB" "${args[@]}" ||
	{ show srv; die "the server did not start listening on TCP $port"; }
spid=$BG_PID
bg_user cli as_user "$FAULTS" "$LIB" "${args[@]}" localhost
cpid=$BG_PID

# mid_sample N: a `urxe stats --qp` (run mid_N) taken while both programs
# run, showing both instances with traffic and loss; fails otherwise.
mid_sample() {
	alive "$spid" && alive "$cpid" || return 1
	T_LIMIT=20 capture "mid_$1" urxe_cli stats --qp
	[ "$RC" -eq 0 ] && alive "$spid" && alive "$cpid" || return 1
	grep -q '^rxe0: 2 instances$' "$(out "mid_$1")" &&
		[ "$(counter "mid_$1" sent_pkts)" -gt 0 ] &&
		[ "$(counter "mid_$1" rcvd_pkts)" -gt 0 ] &&
		[ "$(retries "mid_$1")" -gt 0 ] &&
		[ "$(grep -cE '^		qpn 0x[0-9a-f]{6} RC RTS sent_pkts [1-9][0-9]* rcvd_pkts [1-9]' \
			"$(out "mid_$1")")" -eq 2 ]
}

if wait_for 60 mid_sample 1; then
	pass "mid-run: urxe stats shows 2 instances of rxe0, sent_pkts $(counter mid_1 sent_pkts), rcvd_pkts $(counter mid_1 rcvd_pkts), rcvd_seq_err $(counter mid_1 rcvd_seq_err), completer_retry_err $(counter mid_1 completer_retry_err)"
	sed 's/^/#     | /' "$(out mid_1)"
	got=$(awk 'NR > 2 && NF == 2 && $1 !~ /^#/ { print $1 }' "$(out mid_1)" |
		head -n "${#NAMES[@]}" | tr '\n' ' ')
	check "mid-run: every counter is listed, by kernel rxe's names, in order" \
		test "$got" = "${NAMES[*]} "
	check "mid-run: --qp lists both instances (pid, slot, netdev lo, 1 QP)" \
		test "$(grep -cE '^	instance pid [0-9]+ slot [0-9]+ netdev lo: 1 QP$' \
			"$(out mid_1)")" -eq 2
	sleep 0.5
	if mid_sample 2; then
		a=$(counter mid_1 sent_pkts) b=$(counter mid_2 sent_pkts)
		check "mid-run: sent_pkts moves between samples ($a -> $b)" \
			test "$b" -gt "$a"
		a=$(counter mid_1 rcvd_pkts) b=$(counter mid_2 rcvd_pkts)
		check "mid-run: rcvd_pkts never goes back ($a -> $b)" test "$b" -ge "$a"
		a=$(retries mid_1) b=$(retries mid_2)
		check "mid-run: retries never go back ($a -> $b)" test "$b" -ge "$a"
	else
		note "the run ended before a second sample: movement not checked"
	fi
else
	fail "mid-run: no sample showed 2 instances with traffic and loss (server $(alive "$spid" && echo alive || echo gone), client $(alive "$cpid" && echo alive || echo gone))"
	for f in "$WORK"/out/mid_*.out; do
		[ -e "$f" ] || continue
		n=${f##*/}
		show "${n%.out}"
		break
	done
fi

reap "$cpid"
crc=$RC
reap "$spid"
src=$RC
if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
	pass "lossy ibv_rc_pingpong: server and client exit 0"
else
	fail "lossy ibv_rc_pingpong: server exit $src, client exit $crc"
	show srv "$src"
	show cli "$crc"
fi

# --- after the run ----------------------------------------------------------

T_LIMIT=20
capture after urxe_cli stats
expect_rc "after the run: urxe stats exits 0" 0 after
expect_match "after the run: no instance is open" after '^# none$'
capture after_all urxe_cli stats --all --qp
expect_rc "after the run: urxe stats --all exits 0" 0 after_all
expect_match "after the run: --all keeps both exited instances" after_all \
	'^rxe0: 2 instances \(0 open, 2 exited\)$'
check "after the run: --all --qp lists each as exited, its QP destroyed" \
	test "$(grep -cE '^	instance pid [0-9]+ slot [0-9]+ netdev lo \(exited\): 0 QPs, 1 destroyed$' \
		"$(out after_all)")" -eq 2
check "after the run: ... each with its RC QP's last figures" \
	test "$(grep -cE '^		qpn 0x[0-9a-f]{6} RC [A-Z]+ \(destroyed\) sent_pkts [0-9]{4,} rcvd_pkts [0-9]{4,}' \
		"$(out after_all)")" -eq 2
sed 's/^/#     | /' "$(out after_all)"
final_sent=$(counter after_all sent_pkts)
final_rcvd=$(counter after_all rcvd_pkts)
final_retries=$(retries after_all)
# 1500 round trips of 4 KiB (4 packets each way at MTU 1024) at least.
check "after the run: sent_pkts $final_sent >= 2 x 1500 x 4" \
	test "${final_sent:-0}" -ge 12000
check "after the run: rcvd_pkts $final_rcvd >= 2 x 1500 x 4" \
	test "${final_rcvd:-0}" -ge 12000
check "after the run: 5% loss shows: received < sent ($final_rcvd < $final_sent)" \
	test "${final_rcvd:-0}" -lt "${final_sent:-0}"
check "after the run: retries $final_retries > 0" test "${final_retries:-0}" -gt 0
check "after the run: fault_drop $(counter after_all fault_drop) is the injectors' limit, 2 x 150" \
	test "$(counter after_all fault_drop)" = 300
check "after the run: no other kind of fault was injected" \
	test "$(counter after_all fault_dup)$(counter after_all fault_reorder)$(counter after_all fault_corrupt)" = 000
if [ -s "$(out mid_1)" ]; then
	check "after the run: nothing went back since mid-run" \
		test "${final_sent:-0}" -ge "$(counter mid_1 sent_pkts)" -a \
		"${final_retries:-0}" -ge "$(retries mid_1)"
fi
capture all_name urxe_cli stats --all rxe0
expect_rc "urxe stats --all rxe0 exits 0" 0 all_name
capture all_other urxe_cli stats --all rxe9
expect_rc "urxe stats --all rxe9 (never opened) exits 1" 1 all_other

# --- URXE_FAULTS misspelt: the device does not open -------------------------

T_LIMIT=20
for spec in dorp=0.1 drop=5% "drop=0.1,"; do
	capture bad_spec as_user "URXE_FAULTS=$spec" "$LIB" ibv_devinfo -d rxe0
	if [ "$RC" -ne 0 ] && grep -q "^urxe: error: rxe0: URXE_FAULTS: .*\"${spec%%,*}" "$(err bad_spec)"; then
		pass "URXE_FAULTS=$spec: ibv_devinfo fails (exit $RC): $(grep -m1 URXE_FAULTS "$(err bad_spec)")"
	else
		fail "URXE_FAULTS=$spec: ibv_devinfo exit $RC, or no log line naming the bad token"
		show bad_spec
	fi
done
capture bad_list as_user URXE_FAULTS=dorp=0.1 "$LIB" ibv_devices
expect_rc "URXE_FAULTS=dorp=0.1: ibv_devices still lists the devices (exit 0)" 0 bad_list
expect_match "... rxe0 among them" bad_list '^ +rxe0 '
next_port port
capture bad_pp as_user URXE_FAULTS=dorp=0.1 "$LIB" ibv_rc_pingpong -d rxe0 \
	-g 0 -p "$port" localhost
check "URXE_FAULTS=dorp=0.1: ibv_rc_pingpong fails at once (exit $RC)" \
	test "$RC" -ne 0 -a "$RC" -ne 124
expect_match "... saying which token is wrong" bad_pp \
	'URXE_FAULTS: unknown token "dorp=0.1" \(known: drop, dup, reorder, corrupt' err

# --- every kind of fault, counted and marked in the captures ----------------

# A runtime directory of its own: its records hold this run's counts only.
RUN2=$WORK/run2
mkdir -m 1777 "$RUN2"
KINDS="URXE_FAULTS=drop=0.02,dup=0.02,reorder=0.02,corrupt=0.02,seed=5,limit=60"
CAP="URXE_PCAP=$WORK/tmp/kinds-%p.pcap"
T_LIMIT=120
next_port port
args=(ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -s 4096 -n 300)
serve ksrv "$port" as_user "URXE_RUNDIR=$RUN2" "$KINDS" "$CAP" "$LIB" "${args[@]}" ||
	{ show ksrv; die "the server did not start listening on TCP $port"; }
kpid=$BG_PID
capture kcli as_user "URXE_RUNDIR=$RUN2" "$KINDS" "$CAP" "$LIB" "${args[@]}" localhost
kcrc=$RC
reap "$kpid"
check "every kind of fault: ibv_rc_pingpong server and client exit 0 ($RC, $kcrc)" \
	test "$RC" -eq 0 -a "$kcrc" -eq 0
T_LIMIT=20
capture kinds as_user "URXE_RUNDIR=$RUN2" "$B/bin/urxe" stats --all
sed 's/^/#     | /' "$(out kinds)"
mapfile -t caps < <(ls "$WORK"/tmp/kinds-*.pcap 2>/dev/null)
check "every kind of fault: two URXE_PCAP files (${#caps[@]})" test "${#caps[@]}" -eq 2
if ! command -v tshark >/dev/null; then
	note "SKIP: tshark is not installed: the captures' comments are not read"
	caps=()
fi
: >"$WORK/out/comments"
for f in "${caps[@]}"; do
	capture tshark_c tshark -r "$f" -Y frame.comment -T fields -e frame.comment
	[ "$RC" -eq 0 ] || fail "tshark -r $f: exit $RC"
	cat "$(out tshark_c)" >>"$WORK/out/comments"
done
for kind in drop:dropped dup:duplicate reorder:reordered corrupt:corrupted; do
	n=$(counter kinds "fault_${kind%%:*}")
	c=$(grep -c "^urxe fault: ${kind##*:} " "$WORK/out/comments" || true)
	check "fault_${kind%%:*} $n > 0" test "${n:-0}" -gt 0
	[ "${#caps[@]}" -eq 2 ] || continue
	# A packet held back for reordering when its process exits never
	# leaves, so it is counted and never captured: one per process.
	if [ "$kind" = reorder:reordered ]; then
		check "tshark: $c frames with the comment \"urxe fault: ${kind##*:}\", $n counted (at most 2 held at exit)" \
			test "$c" -le "${n:-0}" -a "$c" -ge $((${n:-0} - 2))
	else
		check "tshark: $c frames with the comment \"urxe fault: ${kind##*:}\", as many as counted ($n)" \
			test "$c" -eq "${n:-0}"
	fi
done
[ ! -s "$WORK/out/comments" ] || note "e.g. $(grep -m1 corrupted "$WORK/out/comments")"

finish
