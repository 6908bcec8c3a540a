#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_srq_pingpong BUILD_DIR: two processes exchange RC SENDs over many QPs
# whose receives all come from one shared receive queue per process.
# Debian's unmodified ibv_srq_pingpong, server and client, run as an
# ordinary user: 16 QPs (its default) with messages of 1 B and 4 KiB, 4
# QPs with 64 KiB, 2 QPs with 1 MiB; each once with -c (the server checks
# the data) and once with -c -e (completion events instead of polling);
# and the smallest receive depth (-r) the program allows, the QP count:
# every receive the SRQ holds is in use at once.  (It never runs dry, as
# each QP has one message in flight; test_srq covers the RNR NAKs of an
# empty SRQ.)  Both ends must exit 0, report the
# transfer, name each other's GID, and the server must find no invalid
# data.
#   (a) on loopback: rxe0 on lo, GID index 0;
#   (b) across two network namespaces joined by a veth pair (root only):
#       rxe0 on vethA (198.18.0.1) and vethB (198.18.0.2), GID index 1.
# One run of each part is captured by tcpdump (root) and the project's
# frame validator must accept every frame.  Heavy traffic: it takes turns
# with the other such tests (traffic_turn).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ibv_srq_pingpong >/dev/null || skip "no ibv_srq_pingpong (ibverbs-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

ROOT=0
[ "$(id -u)" -ne 0 ] || ROOT=1
PCAP=$ROOT
command -v tcpdump >/dev/null || PCAP=0
[ "$PCAP" -eq 1 ] || note "captures skipped: they need root and tcpdump"
LIB="LD_LIBRARY_PATH=$B/lib"
# SIZE:ITERATIONS:QPS[:RX_DEPTH]
RUNS=(1:200:16 4096:200:16 65536:40:4 1048576:6:2)
DRY=4096:300:8:8

# pp WHERE SPEC FLAGS [capture]: one server/client run; WHERE is lo or
# ns4, SPEC SIZE:ITERS:QPS[:RX_DEPTH].  Checks both exit codes, the
# server's data check, what each end says about the transfer and the
# peer's GIDs, and (with "capture", as root) the frames.
pp() {
	local where=$1 spec=$2 flags=$3 port name desc srv cli host gidx \
		srv_gid cli_gid iface pns="" bytes cap=0 size n q rx
	local -a fl hosts genv=() extra=()
	IFS=: read -r size n q rx <<<"$spec"
	[ -z "$rx" ] || extra=(-r "$rx")
	[ "${4:-}" != capture ] || cap=$PCAP
	[ "$cap" -eq 0 ] || genv=(URXE_GSO=0)
	read -ra fl <<<"$flags"
	next_port port
	name="${where}_${size}_q${q}${rx:+_r$rx}${flags// /}"
	case $where in
	lo)
		srv=(as_user) cli=(as_user) host=localhost gidx=0 iface=lo
		srv_gid='::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+' cli_gid=$srv_gid
		;;
	ns4)
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
		cli=(ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB")
		host=198.18.0.1 iface=vethA pns=$A gidx=1
		srv_gid='::ffff:198\.18\.0\.1' cli_gid='::ffff:198\.18\.0\.2'
		;;
	esac
	desc="$where: ibv_srq_pingpong -g $gidx -s $size -n $n -q $q${rx:+ -r $rx} $flags"
	[ "$cap" -eq 0 ] || pcap_start "pp_$name" "$iface" "$pns"
	local args=(ibv_srq_pingpong -d rxe0 -g "$gidx" -p "$port" -s "$size"
		    -n "$n" -q "$q" "${extra[@]}" "${fl[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a scmd=("${srv[@]}" "${genv[@]}" "$LIB" "${args[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a ccmd=("${cli[@]}" "${genv[@]}" "$LIB" "${args[@]}" "$host")
	if ! run_pair "$name" "$desc" "$port" scmd ccmd; then
		[ "$cap" -eq 0 ] || pcap_abort
		return
	fi
	pp_data_ok "$desc" "$name"
	bytes=$((2 * size * n))
	pp_reports "$desc: the client" "$name.cli" "$CRC" "$bytes" "$n"
	pp_reports "$desc: the server" "$name.srv" "$SRC" "$bytes" "$n"
	# One "remote address" line per QP, each the peer's GID.
	local want=$q got
	got=$(grep -cE "^  remote address: .* GID $srv_gid\$" "$(out "$name.cli")" || true)
	check "$desc: the client names the server's GID for its $want QPs (got $got)" \
		test "$got" -eq "$want"
	got=$(grep -cE "^  remote address: .* GID $cli_gid\$" "$(out "$name.srv")" || true)
	check "$desc: the server names the client's GID for its $want QPs (got $got)" \
		test "$got" -eq "$want"
	if [ "$cap" -eq 1 ]; then
		mapfile -t hosts < <(gid_hosts "$name.srv" "$name.cli")
		pcap_check "pp_$name" "$desc" "${hosts[@]}"
		pcap_has "pp_$name" "$desc: the capture holds RC SENDs" 00 01 02 03 04 05
		pcap_has "pp_$name" "$desc: the capture holds RC ACKs" 11
	fi
}

# --- (a) loopback ------------------------------------------------------------

for r in "${RUNS[@]}"; do
	for f in "-c" "-c -e"; do
		pp lo "$r" "$f"
	done
done
pp lo "$DRY" "-c"
pp lo 4096:50:4 "-c" capture

# --- (b) two namespaces over a veth pair --------------------------------------

if [ "$ROOT" -eq 0 ] || ! command -v ip >/dev/null; then
	note "SKIP the namespace part: network namespaces need root and ip"
	finish
fi
veth_pair 198.18.0
assert_lib_loaded "$A"

for r in "${RUNS[@]}"; do
	for f in "-c" "-c -e"; do
		pp ns4 "$r" "$f"
	done
done
pp ns4 "$DRY" "-c -e"
pp ns4 4096:50:4 "-c -e" capture

finish
