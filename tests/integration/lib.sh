# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Helpers shared by the integration tests; sourced, never run.
#
# A test is `t_NAME.sh BUILD_DIR` (ctest passes the build directory).  It
# drives unmodified Debian verbs programs against BUILD_DIR/lib's
# libibverbs.so.1, as an ordinary user:
#   - run as root, programs drop to URXE_TEST_USER (default: nobody) with
#     setpriv; root itself only builds network namespaces;
#   - run as anyone else, programs run as that user, directly.
# Every test gets a private temporary tree ($WORK): its own URXE_RUNDIR
# (mode 1777), so that its slot registry (what `urxe dev show` counts) holds
# only its own processes, and an empty HOME and XDG_CONFIG_HOME, so that no
# user's urxe configuration leaks in.  Programs start
# with a clean environment (env -i), under `timeout`.  Everything started in
# the background is recorded and stopped by pid; namespaces made with
# ns_add are deleted; all of it on exit, whatever the exit.
#
# Sanitizer builds are detected (the library links libasan): unmodified
# programs then get libasan preloaded (URXE_TEST_PRELOAD, else the libasan
# the library links), leak checking on (URXE_TEST_ASAN_OPTIONS overrides)
# except in Python, which is not leak-clean.
#
# Results: `pass`/`fail` print one line per check; `finish` exits 1 if any
# check failed.  `die` stops at once (a broken premise: later checks would
# only report noise).  Exit 77 means skipped.

readonly URXE_IT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

B=""		# the build directory, absolute
WORK=""		# this test's private temporary tree
RUNDIR=""	# URXE_RUNDIR for every program of this test
UHOME=""	# HOME of the programs (empty at start)
TUSER=""	# the user programs run as
AS_USER=()	# the setpriv prefix, empty when not root
SAN_ENV=()	# LD_PRELOAD and sanitizer options for unmodified programs
PIDS=()		# background processes still to stop
NSS=()		# network namespaces still to delete
NPASS=0
NFAIL=0
RC=0		# exit status of the last `capture`
T_NAME=$(basename "$0" .sh)

pass() { NPASS=$((NPASS + 1)); printf 'ok    %s\n' "$*"; }
fail() { NFAIL=$((NFAIL + 1)); printf 'FAIL  %s\n' "$*"; }
note() { printf '#     %s\n' "$*"; }
die() { printf 'FATAL %s\n' "$*"; NFAIL=$((NFAIL + 1)); exit 1; }
skip() { printf 'SKIP  %s\n' "$*"; exit 77; }

# check DESC CMD...: CMD's status decides.
check() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

finish() {
	printf '%s: %d checks passed, %d failed\n' "$T_NAME" "$NPASS" "$NFAIL"
	[ "$NFAIL" -eq 0 ] || exit 1
	exit 0
}

urxe_it_cleanup() {
	local rc=$? pid ns

	set +e
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	for ns in "${NSS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "$WORK" ] && [ "${URXE_TEST_KEEP:-0}" = 1 ]; then
		echo "# work directory kept: $WORK"
	elif [ -n "$WORK" ]; then
		rm -rf "$WORK"
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		printf '%s: exit %d (%d checks passed, %d failed)\n' "$T_NAME" \
			"$rc" "$NPASS" "$NFAIL"
	fi
	exit "$rc"
}

# urxe_it_init BUILD_DIR: checks the build, picks the user, makes $WORK.
urxe_it_init() {
	local dir=${1:-} uid gid asan

	[ -n "$dir" ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
	B=$(cd "$dir" && pwd -P) || die "no build directory $dir"
	[ -e "$B/lib/libibverbs.so.1" ] || die "$B/lib/libibverbs.so.1 is not built"
	[ -x "$B/bin/urxe" ] || die "$B/bin/urxe is not built"
	umask 022
	trap urxe_it_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	if [ "$(id -u)" -eq 0 ]; then
		TUSER=${URXE_TEST_USER:-nobody}
		uid=$(id -u "$TUSER" 2>/dev/null) || die "no user $TUSER (URXE_TEST_USER)"
		gid=$(id -g "$TUSER")
		[ "$uid" -ne 0 ] || die "URXE_TEST_USER=$TUSER is root; it must be an ordinary user"
		AS_USER=(setpriv "--reuid=$uid" "--regid=$gid" --clear-groups --)
	else
		TUSER=$(id -un)
		AS_USER=()
	fi

	WORK=$(mktemp -d "/tmp/urxe-$T_NAME.XXXXXX")
	chmod 755 "$WORK"
	RUNDIR=$WORK/run
	UHOME=$WORK/home
	mkdir -m 1777 "$RUNDIR" "$WORK/tmp"
	mkdir -m 700 "$UHOME" "$WORK/out"
	chmod 1777 "$RUNDIR" "$WORK/tmp"
	[ "$(id -u)" -ne 0 ] || chown "$uid:$gid" "$UHOME"

	asan=$(ldd "$B/lib/libibverbs.so.1" | awk '$1 ~ /^libasan/ { print $3 }')
	if [ -n "$asan" ]; then
		asan=${URXE_TEST_PRELOAD:-$asan}
		SAN_ENV=("LD_PRELOAD=$asan"
			 "ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}"
			 "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
	fi
	note "build $B, user $TUSER, work $WORK${asan:+, sanitizers (preload $asan)}"
}

# The environment every program starts with (then VAR=VAL arguments).
user_env() {
	printf '%s\0' "PATH=$URXE_IT_PATH" "HOME=$UHOME" \
		"XDG_CONFIG_HOME=$UHOME/.config" "URXE_RUNDIR=$RUNDIR" \
		"TMPDIR=$WORK/tmp" "LC_ALL=C.UTF-8" "PYTHONDONTWRITEBYTECODE=1"
}

# mkcmd SAN NS [VAR=VAL...] CMD ARGS...: sets CMD to the command line that
# runs CMD as the user (inside network namespace NS unless it is ""), with
# a clean environment plus the sanitizer preload if SAN is 1, bounded by
# T_LIMIT seconds (default 60).  An array, not a function, so that a
# background job's $! is the `timeout` process itself: stopping that pid
# stops the program (timeout passes the signal on).
mkcmd() {
	local san=$1 ns=$2 env pre=() sanenv=()
	shift 2
	mapfile -d '' env < <(user_env)
	[ -z "$ns" ] || pre=(ip netns exec "$ns")
	[ "$san" -eq 0 ] || sanenv=("${SAN_ENV[@]}")
	# Python is not leak-clean, and its leaks are not ours.
	[ "${#sanenv[@]}" -eq 0 ] || ! runs_python "$@" ||
		sanenv+=("ASAN_OPTIONS=detect_leaks=0")
	CMD=(timeout -k 5 "${T_LIMIT:-60}" "${pre[@]}" "${AS_USER[@]}"
	     env -i "${env[@]}" "${sanenv[@]}" "$@")
}

# runs_python ARGS...: a command line that starts Python, directly or not.
runs_python() {
	local a
	for a in "$@"; do [[ ${a##*/} != python* ]] || return 0; done
	return 1
}

# runner_cmd RUNNER ARGS...: CMD for one of the runners below.
runner_cmd() {
	local r=$1
	shift
	case $r in
	as_user) mkcmd 1 "" "$@" ;;
	as_user_plain) mkcmd 0 "" "$@" ;;
	ns_user) mkcmd 1 "$@" ;;
	ns_user_plain) mkcmd 0 "$@" ;;
	as_root)
		# as_user, but as the test's own user (root when it is run as
		# root): for what must also work privileged.
		local save=("${AS_USER[@]}")
		AS_USER=()
		mkcmd 1 "" "$@"
		AS_USER=("${save[@]}")
		;;
	ns_user_cap)
		# ns_user with CAP_NET_RAW (inherited and ambient: it survives
		# the execs of env and the program) for the packet backend.
		local save=("${AS_USER[@]}")
		[ "${#AS_USER[@]}" -gt 0 ] || die "ns_user_cap: needs root (setpriv)"
		AS_USER=("${AS_USER[@]:0:${#AS_USER[@]}-1}" --inh-caps=+net_raw
			 --ambient-caps=+net_raw --)
		mkcmd 1 "$@"
		AS_USER=("${save[@]}")
		;;
	*) die "runner_cmd: unknown runner $r" ;;
	esac
}

# The runners: as_user [VAR=VAL...] CMD..., ns_user NS [VAR=VAL...] CMD...
# The _plain forms leave out the sanitizer preload: for shell tools such as
# ldd, which would otherwise run under ASan themselves.
as_user() { runner_cmd as_user "$@"; "${CMD[@]}"; }
as_user_plain() { runner_cmd as_user_plain "$@"; "${CMD[@]}"; }
as_root() { runner_cmd as_root "$@"; "${CMD[@]}"; }
ns_user() { runner_cmd ns_user "$@"; "${CMD[@]}"; }
ns_user_plain() { runner_cmd ns_user_plain "$@"; "${CMD[@]}"; }
ns_user_cap() { runner_cmd ns_user_cap "$@"; "${CMD[@]}"; }

# urxe_cli ARGS...: this build's CLI, as the user.
urxe_cli() { as_user "$B/bin/urxe" "$@"; }

# capture NAME RUNNER ARGS...: runs `RUNNER ARGS...` (as_user, ns_user...)
# with stdout to $WORK/out/NAME.out and stderr to NAME.err; sets RC.
capture() {
	local name=$1
	shift
	RC=0
	"$@" >"$WORK/out/$name.out" 2>"$WORK/out/$name.err" || RC=$?
}
out() { printf '%s\n' "$WORK/out/$1.out"; }
err() { printf '%s\n' "$WORK/out/$1.err"; }

# show NAME: what a captured run printed, indented, for a failure report.
show() {
	local f
	for f in "$WORK/out/$1.out" "$WORK/out/$1.err"; do
		[ -s "$f" ] || continue
		printf '#     --- %s (exit %s)\n' "${f##*/}" "${2:-$RC}"
		head -n 60 "$f" | sed 's/^/#     | /'
	done
}

# expect_rc DESC WANT NAME: the captured run NAME exited with WANT.
expect_rc() {
	if [ "$RC" -eq "$2" ]; then
		pass "$1"
	else
		fail "$1: exit $RC, expected $2"
		show "$3"
	fi
}

# expect_match DESC NAME ERE [out|err]: a line of NAME's output matches.
expect_match() {
	local f=$WORK/out/$2.${4:-out}
	if grep -Eq -- "$3" "$f"; then
		pass "$1"
	else
		fail "$1: no line matches /$3/ in ${f##*/}"
		show "$2"
	fi
}

# expect_no_match DESC NAME ERE [out|err]
expect_no_match() {
	local f=$WORK/out/$2.${4:-out}
	if ! grep -Eq -- "$3" "$f"; then
		pass "$1"
	else
		fail "$1: a line matches /$3/ in ${f##*/}"
		show "$2"
	fi
}

# bg_user NAME RUNNER ARGS...: like capture, in the background; sets BG_PID.
# Call it directly (not in $(...)): the pid must land in PIDS.
bg_user() {
	local name=$1
	shift
	runner_cmd "$@"
	"${CMD[@]}" >"$WORK/out/$name.out" 2>"$WORK/out/$name.err" &
	BG_PID=$!
	PIDS+=("$BG_PID")
}

# stop_pid PID: ends one process this test started and reaps it; sets RC.
stop_pid() {
	local p keep=()
	kill -TERM "$1" 2>/dev/null || true
	RC=0
	wait "$1" 2>/dev/null || RC=$?
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# reap PID: waits for a process that ends by itself; sets RC.
reap() {
	local p keep=()
	RC=0
	wait "$1" || RC=$?
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# assert_lib_loaded [NS]: the user's dynamic linker picks this build's
# libibverbs.so.1 both with LD_LIBRARY_PATH and under `urxe run`.  A build
# the user cannot read silently falls back to Debian's library, and every
# later check would then test the wrong thing: so this one is fatal.
assert_lib_loaded() {
	local run=(as_user_plain) want got
	[ $# -eq 0 ] || run=(ns_user_plain "$1")
	want=$(readlink -f "$B/lib/libibverbs.so.1")
	capture ldd "${run[@]}" LD_LIBRARY_PATH="$B/lib" ldd /usr/bin/ibv_devices
	if [ "$RC" -ne 0 ] || ! grep -qF "=> $B/lib/libibverbs.so.1 (" "$(out ldd)"; then
		show ldd
		die "$TUSER does not load $B/lib/libibverbs.so.1 (is the build directory readable by $TUSER?)"
	fi
	capture ldd_run "${run[@]}" "$B/bin/urxe" run -- ldd /usr/bin/ibv_devinfo
	got=$(awk '$1 == "libibverbs.so.1" { print $3 }' "$(out ldd_run)")
	if [ "$RC" -ne 0 ] || [ -z "$got" ] || [ "$(readlink -f "$got")" != "$want" ]; then
		show ldd_run
		die "under \`urxe run\`, $TUSER loads '${got:-nothing}', not $want"
	fi
	pass "$TUSER loads $B/lib/libibverbs.so.1${1:+ in namespace $1} (LD_LIBRARY_PATH and urxe run)"
}

# devices_in NAME: the device names an `ibv_devices` run printed, sorted,
# space-separated ("    rxe0            	0200...").
devices_in() {
	awk 'NR > 2 && NF == 2 { print $1 }' "$(out "$1")" | sort | tr '\n' ' ' |
		sed 's/ $//'
}

# gid_at NAME INDEX: the GID an `ibv_devinfo -v` run printed at INDEX
# ("			GID[  0]:		::ffff:127.117.1.2, RoCE v2").
gid_at() {
	sed -En "s/^[[:space:]]*GID\\[ *$2\\]:[[:space:]]*([^,]+),.*/\\1/p" \
		"$(out "$1")" | head -n 1
}

# stall_start NAME RUNNER [VAR=VAL...] CMD...: like bg_user, but CMD's
# stderr is a pipe that is already full: with URXE_LOG=debug the program
# stops in its first log line and keeps what it has opened (its context,
# its slot) until stall_release.  This makes two short-lived programs such
# as ibv_devinfo overlap for certain, not by luck.  A keeper process holds
# the pipe open and fills it (4 KiB writes until the kernel says EAGAIN);
# the shell itself holds no end, so no other child inherits one.
# Sets BG_PID.
declare -A STALL_KEEPER=() STALL_DRAIN=()
stall_start() {
	local name=$1 fifo=$WORK/$1.fifo
	shift
	mkfifo -m 600 "$fifo"
	(dd if=/dev/zero of="$fifo" bs=4096 count=4096 oflag=nonblock \
		status=none 2>/dev/null || :; : >"$fifo.full"; exec sleep 600) \
		<>"$fifo" >/dev/null 2>&1 &
	STALL_KEEPER[$name]=$!
	PIDS+=("$!")
	wait_for 10 test -e "$fifo.full" || die "cannot fill a pipe for $name"
	runner_cmd "$@"
	"${CMD[@]}" >"$WORK/out/$name.out" 2>"$fifo" &
	BG_PID=$!
	PIDS+=("$BG_PID")
}

# stall_release NAME: drains the pipe (into NAME.err): the program goes on.
stall_release() {
	tr -d '\000' <"$WORK/$1.fifo" >"$WORK/out/$1.err" &
	STALL_DRAIN[$1]=$!
	PIDS+=("$!")
	# The keeper may go only once the drain reads: a full pipe without
	# readers would kill the program with SIGPIPE.
	wait_for 10 drain_reads "$!" "$WORK/$1.fifo" ||
		die "the drain of $1 did not open its pipe"
	stop_pid "${STALL_KEEPER[$1]}"
}

drain_reads() { [ "$(readlink "/proc/$1/fd/0" 2>/dev/null)" = "$2" ]; }

# stall_reap NAME PID: waits for the program, then its drain; sets RC.
stall_reap() {
	local rc
	reap "$2"
	rc=$RC
	reap "${STALL_DRAIN[$1]}"
	RC=$rc
}

# instances: how many device instances (slots) are open in $RUNDIR.
instances() {
	T_LIMIT=10 urxe_cli dev show 2>/dev/null |
		sed -n 's/^# \([0-9]*\) device instance(s) open.*/\1/p'
}
instances_are() { [ "$(instances)" = "$1" ]; }

# ns_add VAR SUFFIX: a fresh network namespace, its name (unique to this
# run) stored in VAR, lo up; deleted on exit.  Root only.  Not in $(...):
# the name must land in NSS.
ns_add() {
	local ns="urxe-$$-$2"
	ip netns add "$ns" || die "cannot create network namespace $ns"
	NSS+=("$ns")
	ip -n "$ns" link set lo up
	printf -v "$1" '%s' "$ns"
}

# mcast_run NAME GROUP RECV_END SEND_END [RECV_ARG...]: UD multicast with
# tests/urxe_mcast: its receiver (two QPs attached to GROUP), then its
# sender twice, before and after the receiver detaches one of the QPs.
# RECV_END and SEND_END are commands (words, run unquoted) that set END to
# a runner and its first arguments for that side; RECV_ARGs go to the
# receiver.  Returns 0 when each attached QP got the 20 datagrams once and
# the detached one no more; else 1, with the receiver's output shown and
# its exit status in RC.
mcast_run() {
	local name=$1 grp=$2 rend=$3 send=$4 rpid round ok=1
	local mc=$B/tests/urxe_mcast
	shift 4
	$rend
	bg_user "$name.recv" "${END[@]}" "$mc" recv -G "$grp" -n 20 -t 40 "$@"
	rpid=$BG_PID
	for round in attached detached; do
		if ! wait_for 20 grep -q "^$round" "$(out "$name.recv")"; then
			ok=0
			break
		fi
		$send
		capture "$name.send.$round" "${END[@]}" "$mc" send -G "$grp" -n 20 -t 30
		[ "$RC" -eq 0 ] || { ok=0; show "$name.send.$round" "$RC"; break; }
	done
	if [ "$ok" -eq 1 ]; then reap "$rpid"; else stop_pid "$rpid"; fi
	if [ "$ok" -eq 1 ] && [ "$RC" -eq 0 ] && grep -q '^PASS' "$(out "$name.recv")"; then
		return 0
	fi
	show "$name.recv" "$RC"
	return 1
}

# alive PID: the process still runs.
alive() { kill -0 "$1" 2>/dev/null; }

# --- client/server runs and packet captures (t_rc_pingpong, t_perftest) -----

PORT_NEXT=0
PCAP_SNAPLEN=4400

# next_port VAR: a TCP rendezvous port (-p) for one client/server run, a
# fresh one for every run: counting up from a random start in 20000-59999
# (ctest -j runs tests side by side), skipping any port with a socket on the
# host.  Not in $(...): the counter must advance.
next_port() {
	local p
	[ "$PORT_NEXT" -ne 0 ] ||
		PORT_NEXT=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	while :; do
		p=$PORT_NEXT
		PORT_NEXT=$((p >= 59999 ? 20000 : p + 1))
		[ -n "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ] ||
			break
	done
	printf -v "$1" '%s' "$p"
}

# listens PORT [NS]: a socket listens on TCP PORT (in network namespace NS).
listens() {
	local pre=()
	[ -z "${2:-}" ] || pre=(ip netns exec "$2")
	[ -n "$("${pre[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# serve NAME PORT RUNNER ARGS...: starts a server like bg_user and waits
# (20 s at most) until it listens on TCP PORT in the runner's namespace, so
# that its client can connect at once; sets BG_PID.  Returns 1 when the
# server died first or never listened.
serve() {
	local name=$1 port=$2 ns="" deadline=$((SECONDS + 20))
	shift 2
	case $1 in ns_user | ns_user_plain) ns=$2 ;; esac
	bg_user "$name" "$@"
	until listens "$port" "$ns"; do
		alive "$BG_PID" && [ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# start_server NAME DESC PORT RUNNER ARGS...: serve, or, when the server
# never listens, the failure reported (DESC: ...) and its output shown;
# returns 1 then.  Sets BG_PID.
start_server() {
	local name=$1 desc=$2 port=$3
	shift 3
	serve "$name" "$port" "$@" && return 0
	reap "$BG_PID"
	fail "$desc: the server did not start listening on TCP $port"
	show "$name"
	return 1
}

# run_pair NAME DESC PORT SRV CLI: one client/server run, the pattern of
# the pingpong and perftest scripts.  SRV and CLI name the caller's arrays:
# the server's command as serve takes it after PORT (runner, its
# arguments, environment, program), the client's as capture takes it after
# NAME.  The server is started (start_server), the client run to its end as
# NAME.cli, the server reaped (NAME.srv); passes "DESC: server and client
# exit 0" or fails, showing both.  Sets SRC and CRC.  Returns 1 when the
# server never listened (reported): the caller then stops what it started
# for the run (pcap_abort) and skips its checks.
run_pair() {
	local name=$1 desc=$2 port=$3 spid
	local -n _rp_srv=$4 _rp_cli=$5
	SRC=-1 CRC=-1
	start_server "$name.srv" "$desc" "$port" "${_rp_srv[@]}" || return 1
	spid=$BG_PID
	capture "$name.cli" "${_rp_cli[@]}"
	CRC=$RC
	reap "$spid"
	SRC=$RC
	if [ "$SRC" -eq 0 ] && [ "$CRC" -eq 0 ]; then
		pass "$desc: server and client exit 0"
	else
		fail "$desc: server exit $SRC, client exit $CRC"
		show "$name.srv" "$SRC"
		show "$name.cli" "$CRC"
	fi
}

# pp_data_ok DESC NAME: the *_pingpong programs' -c has the server check
# every page it received and print "invalid data in page N" for a bad one;
# the run NAME's server (NAME.srv, exit SRC) printed none.
pp_data_ok() {
	if ! grep -qi 'invalid data' "$(out "$2.srv")" "$(err "$2.srv")"; then
		pass "$1: the server's data check finds no invalid data"
	else
		fail "$1: the server reports invalid data"
		show "$2.srv" "$SRC"
	fi
}

# pp_reports DESC NAME RC BYTES ITERS: the *_pingpong run NAME (exit RC)
# printed "BYTES bytes in ..." and "ITERS iters in ...".
pp_reports() {
	if grep -q "^$4 bytes in " "$(out "$2")" &&
	   grep -q "^$5 iters in " "$(out "$2")"; then
		pass "$1 reports $5 iterations, $4 bytes"
	else
		fail "$1 does not report $5 iterations, $4 bytes"
		show "$2" "$3"
	fi
}

# pt_no_errors DESC NAME: neither end of the perftest run NAME printed a
# "Failed status" (a completion in error) or "Couldn't" (a failed verb)
# line.
pt_no_errors() {
	local f
	for f in "$2.srv" "$2.cli"; do
		if grep -Eq "Failed status|Couldn't" "$(out "$f")" "$(err "$f")"; then
			fail "$1: ${f##*.} prints a \"Failed status\" or \"Couldn't\" line"
			grep -Eh "Failed status|Couldn't" "$(out "$f")" "$(err "$f")" |
				head -n 5 | sed 's/^/#     | /'
		else
			pass "$1: ${f##*.} prints no \"Failed status\" / \"Couldn't\""
		fi
	done
}

# veth_pair NET [v6]: network namespaces A and NB (ns_add) joined by a veth
# pair, vethA NET.1/24 and vethB NET.2/24 (NET: three octets of
# 198.18.0.0/16), with v6 also 2001:db8::1/64 and ::2/64; both up.
veth_pair() {
	ns_add A a
	ns_add NB b
	ip -n "$A" link add vethA type veth peer name vethB netns "$NB"
	ip -n "$A" addr add "$1.1/24" dev vethA
	[ "${2:-}" != v6 ] || ip -n "$A" addr add 2001:db8::1/64 dev vethA nodad
	ip -n "$NB" addr add "$1.2/24" dev vethB
	[ "${2:-}" != v6 ] || ip -n "$NB" addr add 2001:db8::2/64 dev vethB nodad
	ip -n "$A" link set vethA up
	ip -n "$NB" link set vethB up
}

# pcap_abort: stops the capture pcap_start began, for a run that failed
# before its traffic (nothing to check).
pcap_abort() { kill -INT "$PCAP_PID"; reap "$PCAP_PID"; }

# pcap_start NAME IFACE [NS]: tcpdump (root) records UDP port 4791 on IFACE
# (inside network namespace NS) into $WORK/NAME.raw.pcap; returns once it
# listens; sets PCAP_PID.  Nothing may be lost: a frame missing from the
# middle of a capture looks like a PSN jump to the validator.  So: immediate
# mode (TPACKET_V2, no block timeout), a 64 MiB ring and a snapshot length
# of PCAP_SNAPLEN (the ring holds buffer/snaplen frames, and on lo each
# frame twice) -- larger than any RoCEv2 frame (4096 B payload + headers):
# pcap_check fails on a truncated frame.  Take one file per client/server
# run: the validator tracks PSNs per (source, destination, QPN) flow, and
# QPNs are reused from run to run.
pcap_start() {
	local name=$1 dev=$2 pre=()
	[ -z "${3:-}" ] || pre=(ip netns exec "$3")
	timeout -k 5 300 "${pre[@]}" tcpdump -i "$dev" -w "$WORK/$name.raw.pcap" \
		--immediate-mode -B 65536 -s "$PCAP_SNAPLEN" -Z root -nn \
		udp port 4791 \
		>"$WORK/out/$name.tcpdump" 2>&1 &
	PCAP_PID=$!
	PIDS+=("$PCAP_PID")
	wait_for 10 grep -qs '^tcpdump: listening on' "$WORK/out/$name.tcpdump" ||
		die "tcpdump on $dev${3:+ in $3} did not start: $(head -n 3 "$WORK/out/$name.tcpdump")"
}

# gid_hosts NAME...: the IP addresses in the GIDs the runs NAME printed
# (ibv_*_pingpong: "GID ::ffff:127.117.1.2" or "GID 2001:db8::1"; perftest:
# "GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:117:1:2"), sorted, unique.
gid_hosts() {
	local n
	for n in "$@"; do cat "$(out "$n")"; done | sed -En \
		-e 's/.* GID ::ffff:([0-9.]+)$/\1/p' \
		-e 's/.* GID ([0-9a-f]*:[0-9a-f:]+)$/\1/p' \
		-e 's/.*GID: (00:){10}255:255:([0-9]+):([0-9]+):([0-9]+):([0-9]+)$/\2.\3.\4.\5/p' |
		sort -u
}

# pcap_check NAME DESC HOST HOST: stops capture NAME (SIGINT, by pid, once
# the last frames are in), checks that tcpdump truncated no frame (the
# validator skips a truncated frame) and whether it lost any (then PSN gaps
# are not errors: urxe-validate -l), keeps only the frames between the two
# HOSTs (the run's two ends: on lo other tests' traffic may be there too,
# whatever it is) in $WORK/NAME.pcap and runs this build's frame validator
# on that: it must exit 0.  Its summary (frames, invalid, retransmitted,
# count per opcode) is printed as notes and kept in
# $WORK/out/NAME.validate.out for pcap_has.
pcap_check() {
	local name=$1 desc=$2 t=$WORK/out/$1.tcpdump dropped filter all lossy=()
	shift 2
	sleep 0.3
	kill -INT "$PCAP_PID" 2>/dev/null || true
	reap "$PCAP_PID"
	dropped=$(sed -En 's/^([0-9]+) packets? dropped by kernel$/\1/p' "$t")
	if [ "$RC" -ne 0 ] || [ -z "$dropped" ]; then
		fail "$desc: tcpdump exit $RC, no statistics"
		sed 's/^/#     | /' "$t"
		return
	elif [ "$dropped" -eq 0 ]; then
		pass "$desc: tcpdump captured $(sed -En 's/^([0-9]+) packets? captured$/\1/p' "$t") frames, none dropped"
	else
		# tcpdump fell behind (a busy 2-core machine): not urxe's
		# doing.  Every frame captured is still judged; only the PSN
		# gaps the lost ones leave are not errors (urxe-validate -l).
		note "$desc: tcpdump dropped $dropped frames: PSN gaps tolerated (urxe-validate -l)"
		lossy=(-l)
	fi
	if [ $# -ne 2 ] || [ "$1" = "$2" ]; then
		fail "$desc: not two ends to pick the run's frames by (hosts: '$*')"
		return
	fi
	filter="host $1 and host $2"
	# (Other tests' GSO sends on lo cross as super-frames: only this
	# run's frames count.)
	if tcpdump -r "$WORK/$name.raw.pcap" -c 1 -nn \
		"$filter and greater $((PCAP_SNAPLEN + 1))" 2>/dev/null | grep . >/dev/null; then
		fail "$desc: a frame is longer than the snapshot length $PCAP_SNAPLEN (truncated: the validator would skip it)"
	else
		pass "$desc: no frame longer than $PCAP_SNAPLEN bytes (none truncated)"
	fi
	if ! tcpdump -r "$WORK/$name.raw.pcap" -w "$WORK/$name.pcap" "$filter" \
		>/dev/null 2>"$WORK/out/$name.filter"; then
		fail "$desc: tcpdump -r ... '$filter' failed: $(head -n 2 "$WORK/out/$name.filter")"
		return
	fi
	all=$(tcpdump -r "$WORK/$name.raw.pcap" -nn 2>/dev/null | wc -l)
	note "$desc: $(tcpdump -r "$WORK/$name.pcap" -nn 2>/dev/null | wc -l) of the $all frames captured are between $1 and $2"
	capture "$name.validate" "$B/tests/urxe-validate" "${lossy[@]}" "$WORK/$name.pcap"
	if [ "$RC" -eq 0 ]; then
		pass "$desc: urxe-validate: every RoCEv2 frame is valid"
	else
		fail "$desc: urxe-validate exit $RC"
		head -n 20 "$(err "$name.validate")" | sed 's/^/#     | /'
	fi
	sed 's/^/#     validate: /' "$(out "$name.validate")"
}

# pcap_has NAME DESC HEX...: the validated capture NAME holds at least one
# frame of one of the opcodes HEX (two digits, "0x04" or "04").
pcap_has() {
	local name=$1 desc=$2 ops
	shift 2
	ops=$(printf '%s|' "${@#0x}")
	if grep -Eq "^  0x(${ops%|}) " "$(out "$name.validate")"; then
		pass "$desc"
	else
		fail "$desc: no frame with opcode 0x${ops%|} in $name.pcap"
	fi
}

# tx_csum_off NS IFACE: turns transmit checksum offload off on IFACE in
# namespace NS (root).  A veth never computes an offloaded checksum: frames
# cross it, and tcpdump records them, with only the pseudo-header sum in the
# UDP checksum field -- which the validator rightly rejects (IPv6 RoCEv2
# carries a real UDP checksum).  Without offload the kernel computes it
# before the frame is seen.  ethtool if installed, else its ioctl from
# Python (ETHTOOL_STXCSUM through SIOCETHTOOL).
tx_csum_off() {
	if command -v ethtool >/dev/null; then
		ip netns exec "$1" ethtool -K "$2" tx off >/dev/null
	else
		ip netns exec "$1" python3 -c '
import array, fcntl, socket, struct, sys
cmd = array.array("B", struct.pack("II", 0x17, 0))  # ETHTOOL_STXCSUM, off
ifr = struct.pack("16sP", sys.argv[1].encode(), cmd.buffer_info()[0])
fcntl.ioctl(socket.socket(), 0x8946, ifr)  # SIOCETHTOOL
' "$2"
	fi
}

# xrc_domain_files: ibv_xsrq_pingpong and perftest's -c XRC open their XRC
# domain through fixed files (/tmp/xrc_domain, /tmp/xrc_domain_server,
# /tmp/xrc_domain_client; O_RDONLY|O_CREAT, mode 0440): one left by a run
# as another user would refuse this one (EACCES).  As root, make each
# readable by all (creating it, owned by root, if missing); otherwise
# return 1 when one of them is unreadable.
xrc_domain_files() {
	local f ok=0
	for f in /tmp/xrc_domain /tmp/xrc_domain_server /tmp/xrc_domain_client; do
		if [ "$(id -u)" -eq 0 ]; then
			[ -e "$f" ] || (umask 0222 && : >"$f")
			chmod a+r "$f"
		elif [ -e "$f" ] && ! [ -r "$f" ]; then
			ok=1
		fi
	done
	return "$ok"
}

# traffic_turn: waits (300 s at most) for this test's turn at heavy
# traffic.  Tests that measure bandwidth or capture every frame take turns
# host-wide (an flock held until the test exits), so that under `ctest -j`
# on 2 cores one does not starve the other of CPU: a bandwidth floor, or a
# tcpdump that must keep up, would then fail for no fault of urxe's.
traffic_turn() {
	local f=/tmp/urxe-it-traffic.lock start=$SECONDS
	[ -e "$f" ] || (umask 0 && : >>"$f") 2>/dev/null || true
	exec {TRAFFIC_FD}<"$f" || die "cannot open $f"
	flock -w 300 "$TRAFFIC_FD" || die "no turn at traffic within 300 s ($f)"
	[ $((SECONDS - start)) -eq 0 ] ||
		note "waited $((SECONDS - start)) s for the other traffic test ($f)"
}
