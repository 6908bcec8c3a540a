#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_lossy BUILD_DIR: RC stays reliable on a bad wire.  This build's
# urxe_xfer (a verbs program: one RC QP, 16 requests in flight, patterned
# data checked byte for byte, every completion and every atomic result
# checked against a sequential model; spinning on its CQ, or sleeping for
# completion events with -e), server and client as an ordinary user,
# moves data while the wire misbehaves:
#   (a) on loopback, with URXE_FAULTS=drop=0.05,dup=0.01,reorder=0.01,
#       corrupt=0.01 in both processes (a seed per run, printed: rerun one
#       with URXE_LOSSY_SEED): 64 MiB each of RDMA WRITE, RDMA READ and
#       SEND/RECV, ATOMICS atomics, then all four interleaved on one QP
#       (a quarter of the size), and a SEND with both ends spinning.
#       Both ends must exit 0 and say every byte and value checked out;
#       the debug counters must show that faults really happened (frames
#       dropped for a bad ICRC, retransmissions).  One run is captured
#       with URXE_PCAP (%p: one file per process) and the project's frame
#       validator must accept every frame (-l: drops leave PSN gaps); the
#       frames corrupted on purpose must be all it rejects, for a bad
#       ICRC, and a run without corruption must pass it whole.
#   (b) as root, across two network namespaces joined by a veth pair: the
#       kernel drops ~5% of UDP/4791 in namespace A (nftables, numgen
#       random, in and out), no URXE_FAULTS; WRITE, READ, SEND, ATOMIC
#       must succeed the same way.
# URXE_LOSSY_MIB (default 64) lowers the size for slow builds (ASan);
# URXE_LOSSY_ATOMICS (default 4000) the atomics.  Each run reports its
# MB/s; each program bounds its own time (-t).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
XFER=$B/tests/urxe_xfer
VALIDATE=$B/tests/urxe-validate
[ -x "$XFER" ] || die "$XFER is not built"
[ -x "$VALIDATE" ] || die "$VALIDATE is not built"
traffic_turn

MIB=${URXE_LOSSY_MIB:-64}
ATOMICS=${URXE_LOSSY_ATOMICS:-4000}
SEED=${URXE_LOSSY_SEED:-$((RANDOM * 32768 + RANDOM))}
FAULTS="drop=0.05,dup=0.01,reorder=0.01,corrupt=0.01"
XFER_T=100		# urxe_xfer's own limit (-t)
T_LIMIT=$((XFER_T + 15))
LIB="LD_LIBRARY_PATH=$B/lib"
note "seed $SEED, $MIB MiB per data stream, $ATOMICS atomics (URXE_LOSSY_SEED, URXE_LOSSY_MIB, URXE_LOSSY_ATOMICS)"
declare -A SUMMARY=()

# counter NAME WHO COUNTER: a debug counter (summed over slots) that run
# NAME's WHO (srv or cli) printed when its device closed; 0 if none.
counter() {
	awk -v c="$3" '$3 == "slot" && $5 == c { s += $6 } END { print s + 0 }' \
		"$(err "$1.$2")"
}

# xfer NAME DESC WHERE MODE [ENV...] -- [XFER ARGS...]: one server/client
# run on loopback (WHERE lo) or across the namespaces (ns); ENV goes to
# both ends, XFER ARGS to the client, SRV_ARGS (an array) to the server.
# Checks exit codes, the verify lines, the status report.  Sets XFER_OK.
SRV_ARGS=()
xfer() {
	local name=$1 desc=$2 where=$3 mode=$4 port host gidx
	local -a env=() args=() srv cli
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
	[ $# -eq 0 ] || shift
	args=("$@")
	if [ "$where" = lo ]; then
		srv=(as_user) cli=(as_user) host=localhost gidx=0
	else
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
		cli=(ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB")
		host=198.18.0.1 gidx=1
	fi
	XFER_OK=0
	next_port port
	if ! serve "$name.srv" "$port" "${srv[@]}" URXE_LOG=debug "$LIB" \
		"${env[@]}" "$XFER" -d rxe0 -g "$gidx" -p "$port" -t "$XFER_T" \
		"${SRV_ARGS[@]}"; then
		reap "$BG_PID"
		fail "$desc: the server did not listen on TCP $port"
		show "$name.srv"
		return
	fi
	local spid=$BG_PID start=$SECONDS
	capture "$name.cli" "${cli[@]}" URXE_LOG=debug "$LIB" "${env[@]}" \
		"$XFER" -d rxe0 -g "$gidx" -p "$port" -t "$XFER_T" -m "$mode" \
		"${args[@]}" "$host"
	local crc=$RC
	reap "$spid"
	local src=$RC secs=$((SECONDS - start))
	if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ]; then
		pass "$desc: server and client exit 0 ($secs s)"
	else
		fail "$desc: server exit $src, client exit $crc ($secs s)"
		show "$name.cli" "$crc"
		show "$name.srv" "$src"
		return
	fi
	if grep -q '^verify: FAIL\|^FAIL' "$(out "$name.cli")" "$(out "$name.srv")" ||
	   ! grep -q '^PASS client' "$(out "$name.cli")"; then
		fail "$desc: a check failed"
		show "$name.cli" "$crc"
		return
	fi
	case $mode in
	all) expect_match "$desc: every stream checked out" "$name.cli" \
		'^verify: atomic ok' ;;
	*) expect_match "$desc: every byte / value checked out" "$name.cli" \
		"^verify: (ok )?$mode ok|^verify: ok $mode" ;;
	esac
	expect_match "$desc: every completion successful" "$name.cli" \
		'^statuses: client success=[0-9]+$'
	SUMMARY[$desc]=$(sed -En 's/^result: .* seconds ([0-9.]+) MB\/s ([0-9.]+)$/\2 MB\/s (\1 s)/p' \
		"$(out "$name.cli")")
	note "$desc: ${SUMMARY[$desc]}"
	XFER_OK=1
}

# faults_seen NAME DESC: the counters of run NAME show the wire's damage.
faults_seen() {
	local icrc retx
	icrc=$(( $(counter "$1" srv dropped_icrc) + $(counter "$1" cli dropped_icrc) ))
	retx=$(( $(counter "$1" srv duplicate_request) + $(counter "$1" cli rcvd_seq_err) +
		 $(counter "$1" cli completer_retry_err) + $(counter "$1" srv out_of_seq_request) ))
	note "$2: counters: dropped_icrc $icrc, duplicates/sequence errors/retries $retx"
	check "$2: faults happened (frames dropped for a bad ICRC: $icrc, recovery events: $retx)" \
		test "$icrc" -gt 0 -a "$retx" -gt 0
}

# tshark_opinion DESC FILE: the second opinion (tshark checks no ICRC
# and calls XRC opcodes unknown): it opens the capture and dissects its
# frames as RoCEv2 (RRoCE), every one of them.
tshark_opinion() {
	local desc=$1 file=$2 total roce
	if ! command -v tshark >/dev/null; then
		note "SKIP: tshark is not installed: no second opinion on $file"
		return
	fi
	capture tshark_total tshark -r "$file" -T fields -e frame.number
	total=$(wc -l <"$(out tshark_total)")
	capture tshark_roce tshark -r "$file" -Y infiniband -T fields -e infiniband.bth.opcode
	roce=$(wc -l <"$(out tshark_roce)")
	check "$desc: tshark opens the capture and dissects all $total frames as RoCEv2 ($roce)" \
		test "$total" -gt 0 -a "$roce" -eq "$total"
}

# validate_caps NAME DESC CORRUPT: the URXE_PCAP files of run NAME
# ($WORK/tmp/NAME-*.pcap) through the validator with -l.  CORRUPT=0: it
# must accept them whole; 1: the only frames it rejects are the corrupted
# ones (bad ICRC), at most 3% of them, at least one.
validate_caps() {
	local name=$1 desc=$2 corrupt=$3 files bad other frames
	mapfile -t files < <(ls "$WORK/tmp/$name"-*.pcap 2>/dev/null)
	if [ "${#files[@]}" -ne 2 ]; then
		fail "$desc: expected 2 capture files (one per process), found ${#files[@]}"
		return
	fi
	capture "$name.validate" "$VALIDATE" -l "${files[@]}"
	sed 's/^/#     validate: /' "$(out "$name.validate")" | head -n 8
	frames=$(sed -En 's/^[0-9]+ frames, ([0-9]+) RoCEv2, .*/\1/p' \
		"$(out "$name.validate")" | head -n 1)
	bad=$(grep -c ': bad ICRC$' "$(err "$name.validate")" || true)
	other=$(grep -v ': bad ICRC$' "$(err "$name.validate")" | grep -c '^frame' || true)
	if [ "$corrupt" -eq 0 ]; then
		if [ "$RC" -eq 0 ]; then
			pass "$desc: urxe-validate -l accepts every frame"
		else
			fail "$desc: urxe-validate -l exit $RC"
			head -n 20 "$(err "$name.validate")" | sed 's/^/#     | /'
		fi
		tshark_opinion "$desc" "${files[0]}"
		return
	fi
	if [ "$other" -eq 0 ] && [ "$bad" -gt 0 ] &&
	   { [ -z "$frames" ] || [ "$bad" -le $((frames * 3 / 100 + 1)) ]; }; then
		pass "$desc: urxe-validate -l rejects only the corrupted frames ($bad with a bad ICRC of ${frames:-?})"
	else
		fail "$desc: urxe-validate -l: $bad bad ICRC, $other other rejections (of ${frames:-?} frames)"
		head -n 20 "$(err "$name.validate")" | sed 's/^/#     | /'
	fi
}

# --- (a) loopback, URXE_FAULTS ------------------------------------------------

# How each end waits: the client spins in ibv_poll_cq, the server of a
# WRITE, READ or atomic run sleeps in read() (the engine thread serves
# it); a receiving server waits for completion events (-e), and in "all"
# both do.  Two processes spinning on a 2-core machine under loss is a
# case of its own, slow: one smaller SEND run below.
events_for() {
	case $1 in
	send) SRV_ARGS=(-e) CLI_EV=() ;;
	all) SRV_ARGS=(-e) CLI_EV=(-e) ;;
	*) SRV_ARGS=() CLI_EV=() ;;
	esac
}

nrun=0
for mode in write read send atomic all; do
	nrun=$((nrun + 1))
	seed=$((SEED + nrun))
	args=(-s "$MIB" -a "$ATOMICS")
	[ "$mode" != all ] || args=(-s $((MIB / 4 > 0 ? MIB / 4 : 1)) -a $((ATOMICS / 2)))
	events_for "$mode"
	args+=("${CLI_EV[@]}")
	pcap=()
	[ "$mode" != write ] || pcap=("URXE_PCAP=$WORK/tmp/lo_write-%p.pcap")
	desc="lo: $mode ${args[*]}${SRV_ARGS[*]:+ (server ${SRV_ARGS[*]})} under $FAULTS,seed=$seed"
	xfer "lo_$mode" "$desc" lo "$mode" \
		"URXE_FAULTS=$FAULTS,seed=$seed" "${pcap[@]}" -- "${args[@]}"
	[ "$XFER_OK" -eq 0 ] || faults_seen "lo_$mode" "$desc"
done

# Both ends spinning: a smaller SEND, its time reported.
SRV_ARGS=()
seed=$((SEED + 50))
desc="lo: send -s $((MIB / 4 > 0 ? MIB / 4 : 1)), both ends spinning, under $FAULTS,seed=$seed"
xfer lo_send_spin "$desc" lo send "URXE_FAULTS=$FAULTS,seed=$seed" -- \
	-s $((MIB / 4 > 0 ? MIB / 4 : 1))
validate_caps lo_write "lo: write capture (corrupted frames included)" 1

# The capture must also pass whole where nothing was corrupted on purpose.
seed=$((SEED + 100))
desc="lo: all -s 4 -a 500 under drop/dup/reorder, seed=$seed, captured"
events_for all
xfer lo_cap "$desc" lo all \
	"URXE_FAULTS=drop=0.05,dup=0.01,reorder=0.01,seed=$seed" \
	"URXE_PCAP=$WORK/tmp/lo_cap-%p.pcap" -- -s 4 -a 500 -e
validate_caps lo_cap "lo: capture without corruption" 0

# --- (b) two namespaces, the kernel drops 5% of UDP/4791 ---------------------

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	note "SKIP the namespace part: network namespaces need root and ip"
elif ! command -v nft >/dev/null; then
	fail "the namespace part needs nft (Debian package nftables)"
else
	ns_add A a
	ns_add NB b
	ip -n "$A" link add vethA type veth peer name vethB netns "$NB"
	ip -n "$A" addr add 198.18.0.1/24 dev vethA
	ip -n "$NB" addr add 198.18.0.2/24 dev vethB
	ip -n "$A" link set vethA mtu 9000 up
	ip -n "$NB" link set vethB mtu 9000 up
	ip netns exec "$A" nft -f - <<-'EOF'
	table inet lossy {
		chain in {
			type filter hook input priority 0; policy accept;
			udp dport 4791 numgen random mod 100 < 5 counter drop
		}
		chain out {
			type filter hook output priority 0; policy accept;
			udp dport 4791 numgen random mod 100 < 5 counter drop
		}
	}
	EOF
	assert_lib_loaded "$A"
	for mode in write read send atomic; do
		events_for "$mode"
		desc="netns: $mode -s $MIB -a $ATOMICS, nftables drops 5% of UDP/4791"
		xfer "ns_$mode" "$desc" ns "$mode" -- -s "$MIB" -a "$ATOMICS" \
			"${CLI_EV[@]}"
	done
	drops=$(ip netns exec "$A" nft list table inet lossy |
		sed -En 's/.*counter packets ([0-9]+) .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
	note "netns: nftables dropped $drops RoCE packets"
	check "netns: the kernel really dropped packets ($drops)" test "$drops" -gt 0
fi

while read -r k; do
	note "summary: $k: ${SUMMARY[$k]}"
done < <(printf '%s\n' "${!SUMMARY[@]}" | sort)
finish
