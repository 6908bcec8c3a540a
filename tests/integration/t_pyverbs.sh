#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_pyverbs BUILD_DIR: rdma-core's own test suite (Debian's rdma-core
# package ships it in /usr/share/doc/rdma-core/tests), run unmodified by
# Debian's /usr/bin/python3 and pyverbs as an ordinary user, on rxe0 (both
# ends of every traffic case in this one process):
#   test_device: DeviceTest's 13 cases pass; the device-memory classes
#                (DMTest, SharedDMTest) pass or skip, never fail;
#   test_pd:     PDTest's 4 cases pass;
#   test_addr, test_cq, test_cq_events, test_qp, test_mr, test_atomic: the
#                RC success paths named in MUST_OK pass (not skip); every
#                other case passes or skips (EOPNOTSUPP: extended verbs,
#                memory windows, DM, dmabuf, raw packet); the XRC atomic
#                cases pass (MUST_OK);
#                test_mr's memory window cases (MWTest: types 1 and 2,
#                bound, invalidated locally, remotely and by
#                deallocation) pass too;
#   test_qpex, test_cqex: every RC/UC/UD case of the extended QP and CQ
#                passes (MUST_OK), rc_bind_mw included; ATOMIC_WRITE (not
#                in Debian 12's kernel rxe either) skips; the XRC cases
#                pass (MUST_OK: XRC SEND and SEND_WITH_IMM, XRC traffic
#                on an extended CQ);
#   test_shared_pd: importing a context, PD and MR by cmd_fd and handle
#                within the process passes;
#   test_fork, test_relaxed_ordering: fork initialization and RC/UD
#                traffic on relaxed-ordering MRs pass, XRC's too;
#   test_odp:    on-demand paging (XRC's case among them) skips: the
#                device, as Debian 12's kernel rxe, has no ODP;
#   test_rdmacm: all 10 RDMA CM cases pass, run apart in a user and mount
#                namespace that gives rxe0 the sysfs entry they look for.
# As more verbs land, more modules join MODULES with their expectations.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
SRC=/usr/share/doc/rdma-core/tests
PY=/usr/bin/python3	# the pyenv python3 on PATH cannot see dist-packages
[ -e "$SRC/run_tests.py" ] || skip "no $SRC (install rdma-core)"
[ -x "$PY" ] || skip "no $PY"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

MODULES=(test_device test_pd test_addr test_cq test_cq_events test_qp test_mr
	 test_atomic test_qpex test_cqex test_shared_pd test_fork
	 test_relaxed_ordering test_odp)
# class:cases that must all pass
MUST_PASS=(DeviceTest:13 PDTest:4 AHTest:3 CQAPITest:3 CQTest:1 CqEventsTestCase:2
	   CQEXAPITest:2 SharedPDTestCase:1)
# classes whose cases may pass or skip, nothing else
MAY_SKIP=(DMTest SharedDMTest OdpTestCase)
# single cases that must pass (the RC success paths, and more)
MUST_OK=(test_fork.ForkAPITest.test_is_fork_initialized
	 test_relaxed_ordering.RoTestCase.test_ro_rc_traffic
	 test_relaxed_ordering.RoTestCase.test_ro_ud_traffic
	 test_qp.QPTest.test_create_rc_qp_no_attr
	 test_qp.QPTest.test_create_rc_qp_with_attr
	 test_qp.QPTest.test_create_uc_qp_no_attr
	 test_qp.QPTest.test_create_ud_qp_with_attr
	 test_qp.QPTest.test_query_data_in_order
	 test_mr.MRTest.test_mr_rereg_access
	 test_mr.MRTest.test_mr_rereg_addr
	 test_mr.MRTest.test_mr_rereg_pd
	 test_mr.MRTest.test_reg_mr_bad_flags
	 test_mr.MWTest.test_mw_type1
	 test_mr.MWTest.test_invalidate_mw_type1
	 test_mr.MWTest.test_mw_type2
	 test_mr.MWTest.test_mw_type2_invalidate_local
	 test_mr.MWTest.test_mw_type2_invalidate_remote
	 test_mr.MWTest.test_mw_type2_invalidate_dealloc
	 test_mr.MWTest.test_reg_mw_wrong_type
	 test_atomic.AtomicTest.test_atomic_cmp_and_swap
	 test_atomic.AtomicTest.test_atomic_fetch_and_add
	 test_atomic.AtomicTest.test_atomic_invalid_lkey
	 test_atomic.AtomicTest.test_atomic_invalid_rkey
	 test_atomic.AtomicTest.test_atomic_non_aligned_addr
	 test_cqex.CqExTestCase.test_rc_traffic_cq_ex
	 test_cqex.CqExTestCase.test_ud_traffic_cq_ex
	 test_qpex.QpExTestCase.test_qp_ex_ud_send
	 test_qpex.QpExTestCase.test_qp_ex_ud_zero_size
	 test_qpex.QpExTestCase.test_qp_ex_ud_send_imm
	 test_qpex.QpExTestCase.test_qp_ex_rc_send
	 test_qpex.QpExTestCase.test_qp_ex_rc_send_imm
	 test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write
	 test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_imm
	 test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_zero_length
	 test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read
	 test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read_zero_size
	 test_qpex.QpExTestCase.test_qp_ex_rc_atomic_cmp_swp
	 test_qpex.QpExTestCase.test_qp_ex_rc_atomic_fetch_add
	 test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw
	 test_qpex.QpExTestCase.test_post_receive_qp_state_bad_flow
	 test_qpex.QpExTestCase.test_post_send_qp_state_bad_flow
	 test_qpex.QpExTestCase.test_full_rq_bad_flow
	 test_qpex.QpExTestCase.test_rq_with_larger_sgl_bad_flow
	 test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap
	 test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add
	 test_cqex.CqExTestCase.test_xrc_traffic_cq_ex
	 test_qpex.QpExTestCase.test_qp_ex_xrc_send
	 test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm
	 test_relaxed_ordering.RoTestCase.test_ro_xrc_traffic)
# cases that may error, and why
MAY_ERROR=()
MAY_ERROR_WHY="none may"

"$PY" -c 'import pyverbs.device' 2>/dev/null || die "pyverbs is not installed (python3-pyverbs)"

# The suite as its README says: a copy with the modules uncompressed, run
# from the directory that contains tests/.
SUITE=$WORK/suite
mkdir -p "$SUITE"
cp -r "$SRC" "$SUITE/tests"
gunzip -f "$SUITE"/tests/*.gz
chmod -R a+rX "$SUITE"

# pyverbs itself loads this build's library (not Debian's).
capture maps as_user LD_LIBRARY_PATH="$B/lib" "$PY" -c '
import pyverbs.device
print("".join(l for l in open("/proc/self/maps") if "libibverbs.so" in l), end="")'
if [ "$RC" -eq 0 ] && grep -qF "$(readlink -f "$B/lib/libibverbs.so.1")" "$(out maps)" &&
	! grep -qF /usr/lib "$(out maps)"; then
	pass "python3 with pyverbs maps $B/lib's libibverbs.so.1, and no other"
else
	show maps
	die "pyverbs does not load $B/lib/libibverbs.so.1"
fi

# shellcheck disable=SC2016 # $1 and $@ are the inner shell's
capture suite as_user T_LIMIT=300 LD_LIBRARY_PATH="$B/lib" \
	/bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$SUITE" \
	"$PY" tests/run_tests.py -v --dev rxe0 "${MODULES[@]}"
note "run_tests.py -v --dev rxe0 ${MODULES[*]}: exit $RC"
# unittest writes its report to stderr.
sed -n '/^Ran [0-9]* tests/,$p' "$(err suite)" | sed 's/^/#     | /'

# One line per case: "tests.test_pd.PDTest.test_alloc_pd ok".  Verbose
# unittest prints "name (id)" and, when the case has a docstring, the
# verdict after the docstring's first line, on the next line.
awk '
	match($0, /\(tests\.[A-Za-z0-9_.]+\)/) { id = substr($0, RSTART + 1, RLENGTH - 2) }
	# (a library log line may split " ... " from its verdict)
	id != "" && (match($0, / \.\.\. (ok|skipped|FAIL|ERROR|expected failure|unexpected success)/) ||
		     match($0, /^(ok|skipped .*|FAIL|ERROR)$/)) {
		v = substr($0, RSTART, RLENGTH); sub(/^ \.\.\. /, "", v); sub(/ .*/, "", v)
		if (v == "expected") v = "xfail"; if (v == "unexpected") v = "xpass"
		print id, v; id = ""
	}' "$(err suite)" >"$WORK/out/verdicts"

count() { awk -v c=".$1." -v v="$2" 'index($1, c) && $2 == v' "$WORK/out/verdicts" | wc -l; }
total() { awk -v c=".$1." 'index($1, c)' "$WORK/out/verdicts" | wc -l; }

for spec in "${MUST_PASS[@]}"; do
	cls=${spec%%:*}
	want=${spec##*:}
	got=$(count "$cls" ok)
	all=$(total "$cls")
	if [ "$got" -eq "$want" ] && [ "$all" -eq "$want" ]; then
		pass "$cls: $got of $want cases pass"
	else
		fail "$cls: $got of $want cases pass ($all run)"
		awk -v c=".$cls." 'index($1, c) && $2 != "ok"' "$WORK/out/verdicts" |
			sed 's/^/#     | /'
	fi
done
for cls in "${MAY_SKIP[@]}"; do
	bad=$(awk -v c=".$cls." 'index($1, c) && $2 != "ok" && $2 != "skipped"' \
		"$WORK/out/verdicts" | wc -l)
	note "$cls: $(count "$cls" ok) pass, $(count "$cls" skipped) skipped"
	check "$cls: every case passes or skips ($bad do not)" test "$bad" -eq 0
done

for id in "${MUST_OK[@]}"; do
	v=$(awk -v i="tests.$id" '$1 == i {print $2}' "$WORK/out/verdicts")
	check "$id: ${v:-not run}" test "$v" = ok
done
allowed=" ${MAY_ERROR[*]/#/tests.} "
awk '$2 != "ok" && $2 != "skipped" {print $1}' "$WORK/out/verdicts" >"$WORK/out/bad"
n_allowed=0
while read -r id; do
	case "$allowed" in
	*" $id "*) note "$id errors (allowed: $MAY_ERROR_WHY)"; n_allowed=$((n_allowed + 1)) ;;
	esac
done <"$WORK/out/bad"

n_ok=$(awk '$2 == "ok"' "$WORK/out/verdicts" | wc -l)
n_skip=$(awk '$2 == "skipped"' "$WORK/out/verdicts" | wc -l)
n_bad=$(awk '$2 != "ok" && $2 != "skipped"' "$WORK/out/verdicts" | wc -l)
n_all=$(wc -l <"$WORK/out/verdicts")
note "pyverbs: $n_all cases: $n_ok passed, $n_skip skipped, $n_bad failed or errored"
ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$(err suite)")
check "every case unittest ran has a verdict here (ran ${ran:-?}, parsed $n_all)" \
	test "${ran:-x}" = "$n_all"
check "no case failed or errored but the allowed ($((n_bad - n_allowed)) did)" \
	test "$((n_bad - n_allowed))" -eq 0
if [ "$n_bad" -ne "$n_allowed" ]; then
	grep -E '^(ERROR|FAIL):' "$(err suite)" | head -n 30 | sed 's/^/#     | /'
fi

# --- test_rdmacm, in a user and mount namespace of the user's own ----------
# rdma-core's RDMA CM tests find the device's address through sysfs
# (/sys/class/infiniband/DEV/device/net/IFACE, then `ip addr show IFACE`),
# which a device without a kernel module does not have: outside, all 10
# cases skip.  An ordinary user can give them that entry in namespaces of
# its own (unshare -rm: a tmpfs over /sys/class holding
# infiniband/rxe0/device/net/lo).  urxe's runtime directory is then one of
# the user's: inside, /dev/shm shows as owned by an unmapped uid, which
# urxe refuses.  Every CMTestCase case must pass: synchronous and
# asynchronous RC traffic, READ and WRITE, UDP (UD through SIDR), an
# external QP, a reject, and multicast joins and leaves.
if as_user unshare -rm true >/dev/null 2>&1; then
	NSRUN=$WORK/nsrun
	mkdir -p "$NSRUN"
	chown "$TUSER" "$NSRUN" 2>/dev/null || true
	chmod 700 "$NSRUN"
	# shellcheck disable=SC2016 # $1 and $@ are the inner shell's
	capture cm as_user T_LIMIT=300 LD_LIBRARY_PATH="$B/lib" \
		URXE_RUNDIR="$NSRUN" unshare -rm /bin/sh -c \
		'mount -t tmpfs none /sys/class &&
		 mkdir -p /sys/class/infiniband/rxe0/device/net/lo &&
		 cd "$1" && shift && exec "$@"' sh "$SUITE" \
		"$PY" tests/run_tests.py -v --dev rxe0 test_rdmacm
	n=$(grep -c '^test_rdmacm_[a-z_]* (tests\.test_rdmacm\.CMTestCase\.[a-z_]*) \.\.\. ok$' \
		"$(err cm)" || true)
	sed -n '/^Ran [0-9]* tests/,$p' "$(err cm)" | sed 's/^/#     | /'
	check "test_rdmacm (unshare -rm, a sysfs entry for rxe0 on lo): 10 of 10 cases pass ($n; exit $RC)" \
		test "$n" -eq 10 -a "$RC" -eq 0
	[ "$n" -eq 10 ] || grep -E '^(ERROR|FAIL|test_)' "$(err cm)" | head -n 30 |
		sed 's/^/#     | /'
else
	note "SKIP test_rdmacm: $TUSER cannot make a user namespace (unshare -rm)"
fi

finish
