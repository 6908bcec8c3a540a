#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_uc_ud BUILD_DIR: the unreliable transports through urxe with Debian's
# unmodified programs, run as an ordinary user.
#   ibv_uc_pingpong and ibv_ud_pingpong, server and client, with -c (the
#   receiver checks the data), each polling and with -e (completion
#   events); both ends must exit 0, report every iteration and name the
#   other's GID:
#   (a) on loopback: rxe0 on lo, GID index 0;
#   (b) across two network namespaces joined by a veth pair (root only):
#       rxe0 on vethA (198.18.0.1) and vethB (198.18.0.2), GID index 1
#       (IPv4); one run of each over GID index 2 (IPv6, 2001:db8::).
#   tcpdump records every pingpong run (one datagram per packet,
#   URXE_GSO=0) and the project's frame validator must accept every frame;
#   the capture must hold UC SENDs / UD SEND_ONLYs.
#   (d) fan-in on loopback: 8 UD senders at once (urxe_fanin) to one
#       receiver with all their receives posted, 4 KiB messages, and 16
#       senders of 64 B: every message arrives once (each sender counts
#       the others and takes its share of the receive socket; before, 8
#       senders lost a quarter of their messages); and 4 senders that each
#       reopen the device 50 times, every instance sending its share at
#       once, so that each new one takes over the slot (address and source
#       ports) that another sent from an instant before: every message
#       arrives, and the receiver's dropped_icrc stays 0 (before, the
#       first datagram of about one new instance in two was refused for
#       its IPv4 ID).
#   (c) perftest on loopback, unpaced: ib_send_bw and ib_send_lat with
#       -c UC at 2 B and 64 KiB and -c UD at 2 B and the MTU (4096), and
#       ib_write_bw -c UC; as the ordinary user and (when run as root) as
#       root: both ends exit 0 and print no "Failed status" / "Couldn't",
#       the client prints its result line.  UC and UD have no flow
#       control on the wire, and a sender faster than its receiver used to
#       lose what overflowed the receive socket (ib_send_bw's server then
#       waited for ever): between instances on one host the sender now
#       waits for room (docs/design.md, "Flow control on one host").
# Without root (b) and the captures are skipped.  Heavy traffic: it takes
# turns with the other such tests (traffic_turn).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
command -v ibv_ud_pingpong >/dev/null || skip "no ibv_ud_pingpong (ibverbs-utils)"
command -v ibv_uc_pingpong >/dev/null || skip "no ibv_uc_pingpong (ibverbs-utils)"
urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded
traffic_turn

T_LIMIT=30		# per program
ITERS=200
ROOT=0
[ "$(id -u)" -ne 0 ] || ROOT=1
PCAP=$ROOT
command -v tcpdump >/dev/null || PCAP=0
[ "$PCAP" -eq 1 ] || note "captures skipped: they need root and tcpdump"
LIB="LD_LIBRARY_PATH=$B/lib"

# pp PROG WHERE SIZE FLAGS: one server/client run of ibv_PROG_pingpong
# (uc or ud); WHERE is lo, ns4 or ns6.
pp() {
	local prog=$1 where=$2 size=$3 flags=$4 port name desc srv cli host \
		gidx srv_gid cli_gid iface pns="" genv=()
	local -a fl hosts
	read -ra fl <<<"$flags"
	next_port port
	name="${prog}_${where}_${size}${flags// /}"
	case $where in
	lo)
		srv=(as_user) cli=(as_user) host=localhost gidx=0 iface=lo
		srv_gid='::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+' cli_gid=$srv_gid
		;;
	ns4 | ns6)
		srv=(ns_user "$A" "URXE_DEVICES=rxe0 netdev vethA")
		cli=(ns_user "$NB" "URXE_DEVICES=rxe0 netdev vethB")
		host=198.18.0.1 iface=vethA pns=$A
		if [ "$where" = ns4 ]; then
			gidx=1 srv_gid='::ffff:198\.18\.0\.1' cli_gid='::ffff:198\.18\.0\.2'
		else
			gidx=2 srv_gid='2001:db8::1' cli_gid='2001:db8::2'
		fi
		;;
	esac
	desc="$where: ibv_${prog}_pingpong -g $gidx -s $size -n $ITERS $flags"
	[ "$PCAP" -eq 0 ] || { pcap_start "pp_$name" "$iface" "$pns"; genv=(URXE_GSO=0); }
	local args=("ibv_${prog}_pingpong" -d rxe0 -g "$gidx" -p "$port"
		    -s "$size" -n "$ITERS" "${fl[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a scmd=("${srv[@]}" "${genv[@]}" URXE_LOG=debug "$LIB" "${args[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a ccmd=("${cli[@]}" "${genv[@]}" URXE_LOG=debug "$LIB" "${args[@]}" "$host")
	if ! run_pair "$name" "$desc" "$port" scmd ccmd; then
		[ "$PCAP" -eq 0 ] || pcap_abort
		return
	fi
	pp_data_ok "$desc" "$name"
	pp_reports "$desc: the client" "$name.cli" "$CRC" $((2 * size * ITERS)) "$ITERS"
	pp_reports "$desc: the server" "$name.srv" "$SRC" $((2 * size * ITERS)) "$ITERS"
	expect_match "$desc: the client's peer is the server's GID" \
		"$name.cli" "^  remote address: .* GID $srv_gid\$"
	expect_match "$desc: the server's peer is the client's GID" \
		"$name.srv" "^  remote address: .* GID $cli_gid\$"
	[ "$PCAP" -eq 1 ] || return 0
	mapfile -t hosts < <(gid_hosts "$name.srv" "$name.cli")
	pcap_check "pp_$name" "$desc" "${hosts[@]}"
	if [ "$prog" = uc ]; then
		pcap_has "pp_$name" "$desc: the capture holds UC SENDs" 20 21 22 24
		if grep -Eq '^  0x11 ' "$(out "pp_$name.validate")"; then
			fail "$desc: an ACK in a UC capture"
		else
			pass "$desc: no ACK in the UC capture"
		fi
	else
		pcap_has "pp_$name" "$desc: the capture holds UD SEND_ONLYs" 64
	fi
}

# perftest is not leak-clean (its device list, its CQs, its buffers): as
# in t_perftest, its leaks are not ours and leak checking is off for it
# under ASan; ASan and UBSan stay on.
NOLEAK=()
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	NOLEAK=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")

# pt RUNNER PROG CONN [SIZE]: one perftest server/client run on loopback,
# both ends run by RUNNER (as_user, as_root).
pt() {
	local runner=$1 prog=$2 conn=$3 size=${4:-} port name desc line
	local -a n extra=()
	next_port port
	name="pt_${runner}_${prog}_$conn${size:+_$size}"
	[ -z "$size" ] || extra=(-s "$size")
	desc="lo ($runner): $prog -c $conn -x 0 -n $ITERS${size:+ -s $size}"
	local args=("$B/bin/urxe" run -- "$prog" -d rxe0 -x 0 -c "$conn" -F
		    -n "$ITERS" -p "$port" "${extra[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a scmd=("$runner" "${NOLEAK[@]}" URXE_LOG=debug "${args[@]}")
	# shellcheck disable=SC2034 # run_pair reads it by name
	local -a ccmd=("$runner" "${NOLEAK[@]}" URXE_LOG=debug "${args[@]}"
		       localhost)
	run_pair "$name" "$desc" "$port" scmd ccmd || return 0
	local crc=$CRC
	pt_no_errors "$desc" "$name"
	line=$(awk '/^ *#bytes/ { getline; print; exit }' "$(out "$name.cli")")
	read -ra n <<<"$line"
	if [ "${#n[@]}" -ge 5 ] && [ "${n[1]}" = "$ITERS" ]; then
		pass "$desc: the client reports: $line"
	else
		fail "$desc: no result line with $ITERS iterations (got '$line')"
		show "$name.cli" "$crc"
	fi
}

# --- (a) loopback ------------------------------------------------------------

for f in "-c" "-c -e"; do
	pp uc lo 4096 "$f"
	pp uc lo 65536 "$f"
	pp ud lo 4096 "$f"
	pp ud lo 64 "$f"
done

# --- (c) perftest on loopback -------------------------------------------------

RUNNERS=(as_user)
[ "$ROOT" -eq 0 ] || RUNNERS+=(as_root)
for r in "${RUNNERS[@]}"; do
	for prog in ib_send_bw ib_send_lat; do
		pt "$r" "$prog" UC 2
		pt "$r" "$prog" UC 65536
		pt "$r" "$prog" UD 2
		pt "$r" "$prog" UD 4096
	done
done
pt as_user ib_write_bw UC

# --- (d) fan-in on loopback ---------------------------------------------------

# fanin SENDERS COUNT SIZE [ROUNDS]: SENDERS UD senders at once, COUNT
# messages each (in ROUNDS device instances one after another); the
# receiver must get every one, and refuse none for its ICRC.
fanin() {
	local senders=$1 count=$2 size=$3 rounds=${4:-1} i rpid qpn gid
	local name="fanin_${1}x$3_r$rounds" desc icrc
	local total=$((senders * count)) bad=0 pids=()
	desc="lo: $senders UD senders at once, $count messages of $size B each"
	[ "$rounds" -eq 1 ] || desc+=" from $rounds device instances in turn"
	bg_user "$name.recv" as_user URXE_LOG=debug "$LIB" \
		"$B/tests/urxe_fanin" recv -n "$total" -s "$size" \
		-t $((T_LIMIT - 5))
	rpid=$BG_PID
	if ! wait_for 10 grep -q '^qpn ' "$(out "$name.recv")"; then
		reap "$rpid"
		fail "$desc: the receiver did not start"
		show "$name.recv"
		return
	fi
	read -r _ qpn _ gid < <(grep '^qpn ' "$(out "$name.recv")")
	for i in $(seq 1 "$senders"); do
		bg_user "$name.s$i" as_user URXE_LOG=debug "$LIB" \
			"$B/tests/urxe_fanin" send \
			-q "$qpn" -G "$gid" -i "$i" -n "$count" -s "$size" \
			-r "$rounds" -t "$T_LIMIT"
		pids+=("$BG_PID")
	done
	for i in "${!pids[@]}"; do
		reap "${pids[$i]}"
		[ "$RC" -eq 0 ] || { bad=1; show "$name.s$((i + 1))"; }
	done
	if [ "$bad" -eq 0 ]; then
		pass "$desc: every sender completes"
	else
		fail "$desc: a sender failed"
	fi
	reap "$rpid"
	icrc=$(sed -n 's/.*: dropped_icrc \([0-9]*\)$/\1/p' \
		"$WORK/out/$name.recv.err" | head -1)
	if [ "$RC" -eq 0 ] && [ "${icrc:-0}" -eq 0 ]; then
		pass "$desc: the receiver gets all $total, each once, and refuses none for its ICRC"
	else
		fail "$desc: receiver exit $RC, dropped_icrc ${icrc:-0}"
		show "$name.recv"
		grep -h "flow control\|udp" "$WORK"/out/"$name".s*.err |
			sed 's/^/#     | /'
	fi
}

fanin 8 1200 4096
fanin 16 600 64
fanin 4 1000 64 50

# --- (b) two namespaces over a veth pair --------------------------------------

if [ "$ROOT" -eq 0 ] || ! command -v ip >/dev/null; then
	note "SKIP the namespace part: network namespaces need root and ip"
	finish
fi
veth_pair 198.18.0 v6
# So that the IPv6 frames tcpdump records carry their real UDP checksums.
tx_csum_off "$A" vethA
tx_csum_off "$NB" vethB
assert_lib_loaded "$A"

# veth's MTU 1500: the active MTU is 1024, the largest UD message.
for f in "-c" "-c -e"; do
	pp uc ns4 16384 "$f"
	pp ud ns4 1024 "$f"
done
pp uc ns6 4096 "-c"
pp ud ns6 1024 "-c -e"

finish
