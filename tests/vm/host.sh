#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# host.sh server|cmd: the HOST_CMD of t_vm_interop's boots.  vm.sh runs it
# as root inside its private network namespace, on the host side of the
# tap ($TAP, 198.18.1.1); every verbs program drops to the test's user with
# a clean environment, exactly as lib.sh's runners do, and uses the device
# "rxe0 netdev $TAP" (GID index 0 = ::ffff:198.18.1.1).  URXE_VM_ENV names
# the file in which t_vm_interop.sh saved its lib.sh state (build, user,
# work tree, run directory); outputs land in its $WORK/out as NAME.out and
# NAME.err, exit statuses in NAME.rc, for t_vm_interop.sh to judge.
#
# Each invocation captures the RoCEv2 frames on the tap while its programs
# run, into $WORK/cap-ROLE.pcap (tcpdump's report in out/cap-ROLE.tcpdump).
# Not vm.sh's PCAP: its tcpdump keeps the default 2 MiB buffer and, with
# QEMU busy on every core, drops frames of a bandwidth run; one missing
# frame and the validator rightly sees the PSN jump ahead.  A 128 MiB
# buffer holds a whole run; immediate mode leaves no frame in a half-full
# ring block when tcpdump stops.
#
#   server  once per VM server ($VM_SERVER = pingpong | write_bw): the urxe
#           client of that server.
#   cmd     started before the VM boots: urxe's ibv_rc_pingpong server for
#           the VM's client, its ibv_ud_pingpong and ib_send_bw -c UD
#           servers for the VM's next clients (which retry until each
#           listens), then the urxe clients of ib_read_bw, ib_atomic_bw
#           (FETCH_AND_ADD, the default, then CMP_AND_SWAP) and
#           ib_send_bw -c UD, each retried until the VM's server listens;
#           then one urxe_turns -P process (the udp backend serves one
#           process per interface: after the others), the long-lived
#           server of five ibv_rc_pingpong clients the VM runs in turn.
#   packet  started before the VM boots, urxe on the packet backend
#           ("rxe0 netdev $TAP backend packet", the user holding
#           CAP_NET_RAW): its ibv_rc_pingpong and ib_write_bw servers for
#           the VM's clients, in the background, while its clients of the
#           VM's servers run (retried until each listens) — so processes
#           share the tap's one address, as the backend is meant to.  Its
#           frames leave past the qdisc and the tap's tcpdump never sees
#           them: t_vm_interop.sh records them where they arrive, at the
#           VM's NIC (QEMU's filter-dump).
# Exit 0 iff every program did.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/../integration/lib.sh"
# shellcheck disable=SC1090 # written by t_vm_interop.sh
. "${URXE_VM_ENV:?not started by t_vm_interop.sh}"

VM=${VM_IP:-198.18.1.2}
DEVS="URXE_DEVICES=rxe0 netdev ${TAP:?}"
VERBS=(LD_LIBRARY_PATH="$B/lib" "$DEVS" URXE_LOG=debug)
PP=(ibv_rc_pingpong -d rxe0 -g 0 -n 100 -s 4096)
BW=(-d rxe0 -x 0 -F -n 200)
STATUS=0
CAP_PID=""
RUNNER=(as_user)
trap '[ -z "$CAP_PID" ] || kill -INT "$CAP_PID" 2>/dev/null' EXIT
trap 'exit 143' TERM

# cap_start ROLE: captures until cap_stop; returns once tcpdump listens.
cap_start() {
	local log=$WORK/out/cap-$1.tcpdump
	tcpdump -i "$TAP" -B 131072 -s 0 -n -Z root --immediate-mode \
		-w "$WORK/cap-$1.pcap" udp port 4791 2>"$log" &
	CAP_PID=$!
	wait_for 10 grep -q 'listening on' "$log" ||
		{ echo "host.sh: tcpdump does not listen on $TAP" >&2; STATUS=1; }
}

# cap_stop: lets the last frames (a peer's final ACK) in, then stops.
cap_stop() {
	sleep 1
	kill -INT "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" || true
	CAP_PID=""
}

# perftest leaks by itself (the device list, its CQs): under ASan its
# leak check is off, as in t_perftest; everything else keeps it.
NOLEAK=()
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	NOLEAK=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")

# env_for PROGRAM: the environment a program runs with.
env_for() {
	ENV=("${VERBS[@]}")
	case $1 in
	ib_*) ENV+=("${NOLEAK[@]}") ;;
	esac
}

# snapshot NAME: a failed program's counters, taken at once: the next
# program may take over its slot (t_vm_interop shows them).
snapshot() {
	local rc=$RC

	capture "$1.stats" urxe_cli stats --all --qp
	RC=$rc
}

# run NAME ARGS...: one program as the user; its status in NAME.rc.
run() {
	local name=$1
	shift
	env_for "$1"
	capture "$name" "${RUNNER[@]}" "${ENV[@]}" "$@"
	echo "$RC" >"$WORK/out/$name.rc"
	printf '[host] %s: exit %d\n' "$name" "$RC"
	[ "$RC" -eq 0 ] || { STATUS=1; snapshot "$name"; }
}

# run_bg NAME ARGS...: run in the background (BG_PID); run_end NAME PID
# waits for it and records its status as run does.
run_bg() {
	local name=$1
	shift
	env_for "$1"
	bg_user "$name" "${RUNNER[@]}" "${ENV[@]}" "$@"
}
run_end() {
	reap "$2"
	echo "$RC" >"$WORK/out/$1.rc"
	printf '[host] %s: exit %d\n' "$1" "$RC"
	[ "$RC" -eq 0 ] || { STATUS=1; snapshot "$1"; }
}

# client NAME SECONDS ARGS...: run, again while the server is not there
# yet (the VM is still booting): perftest then fails before it opens
# anything.  Any other failure stands.
client() {
	local name=$1 deadline=$((SECONDS + $2)) n=0
	shift 2
	env_for "$1"
	while :; do
		n=$((n + 1))
		capture "$name" "${RUNNER[@]}" "${ENV[@]}" "$@"
		if [ "$RC" -eq 0 ] || [ "$SECONDS" -ge "$deadline" ] ||
		   ! grep -q "Couldn't connect to" "$(out "$name")" "$(err "$name")"; then
			break
		fi
		sleep 1
	done
	echo "$RC" >"$WORK/out/$name.rc"
	printf '[host] %s: exit %d after %d attempt(s)\n' "$name" "$RC" "$n"
	[ "$RC" -eq 0 ] || { STATUS=1; snapshot "$name"; }
}

case ${1:-} in
server)
	cap_start "${VM_SERVER:-}"
	case ${VM_SERVER:-} in
	pingpong) T_LIMIT=60 run pp_client "${PP[@]}" "$VM" ;;
	write_bw) T_LIMIT=60 run write_bw_client ib_write_bw "${BW[@]}" "$VM" ;;
	*) echo "host.sh: unknown VM_SERVER '${VM_SERVER:-}'" >&2; STATUS=2 ;;
	esac
	cap_stop
	;;
cmd)
	cap_start cmd
	# The VM boots meanwhile: its client connects some 15 s from now.
	T_LIMIT=120 run pp_server "${PP[@]}"
	# UD: the veth-like tap's MTU 1500 makes 1024 B the largest datagram.
	T_LIMIT=60 run ud_pp_server ibv_ud_pingpong -d rxe0 -g 0 -n 100 -s 1024 \
		-p 18520
	T_LIMIT=60 run ud_bw_server ib_send_bw "${BW[@]}" -c UD -p 18521
	T_LIMIT=60 client read_bw_client 60 ib_read_bw "${BW[@]}" -p 18516 "$VM"
	T_LIMIT=60 client fetch_add_client 30 ib_atomic_bw "${BW[@]}" -p 18517 "$VM"
	T_LIMIT=60 client cmp_swap_client 30 ib_atomic_bw "${BW[@]}" -A CMP_AND_SWAP \
		-p 18518 "$VM"
	# Paced (perftest's limiter): UD has no flow control, and a datagram
	# the emulated VM drops leaves its ib_send_bw server waiting for ever.
	T_LIMIT=60 client ud_bw_client 30 ib_send_bw "${BW[@]}" -c UD -p 18519 \
		--rate_limit=20000 --rate_units=p --rate_limit_type=SW \
		--burst_size=8 "$VM"
	T_LIMIT=100 run turns_server "$B/tests/urxe_turns" -P -d rxe0 -g 0 \
		-n 5 -m 20 -p 18522 -t 90
	cap_stop
	;;
packet)
	# The user with CAP_NET_RAW (inherited and ambient), in this namespace.
	RUNNER=(ns_user_cap "")
	VERBS=(LD_LIBRARY_PATH="$B/lib" "$DEVS backend packet" URXE_LOG=debug)
	cap_start packet
	T_LIMIT=150 run_bg pkt_pp_server "${PP[@]}" -p 18530
	pp_srv=$BG_PID
	T_LIMIT=150 run_bg pkt_write_bw_server ib_write_bw "${BW[@]}" -p 18531
	bw_srv=$BG_PID
	T_LIMIT=60 client pkt_pp_client 90 "${PP[@]}" -p 18532 "$VM"
	T_LIMIT=60 client pkt_write_bw_client 60 ib_write_bw "${BW[@]}" -p 18533 "$VM"
	run_end pkt_pp_server "$pp_srv"
	run_end pkt_write_bw_server "$bw_srv"
	cap_stop
	;;
*)
	echo "usage: host.sh server|cmd|packet" >&2
	exit 2
	;;
esac
exit "$STATUS"
