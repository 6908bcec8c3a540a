#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_vm_interop BUILD_DIR: RC over real RoCEv2 against Linux's own Soft-RoCE.
# ../shared/vm boots a Debian kernel with rdma_rxe under QEMU on a tap in a
# private network namespace (host side 198.18.1.1, the VM 198.18.1.2);
# unmodified Debian verbs programs on urxe ("rxe0 netdev $TAP", run as the
# ordinary test user with this build's libibverbs.so.1) talk to kernel rxe.
# Two boots, several checks each:
#   1. `vm.sh server`, SRV=both: kernel rxe serves ibv_rc_pingpong, then
#      ib_write_bw; urxe is the client of each (host.sh server).
#   2. `vm.sh cmd`: urxe serves ibv_rc_pingpong, ibv_ud_pingpong and
#      ib_send_bw -c UD to the VM's clients; kernel rxe serves ib_read_bw,
#      ib_atomic_bw and ib_send_bw -c UD to urxe clients, which retry
#      until the VM has booted (host.sh cmd, vm_script.sh).  UD thus runs
#      both ways: datagrams (and their GRHs) from kernel rxe to urxe and
#      back.  And five kernel rxe ibv_rc_pingpong clients in turn against
#      one long-lived urxe server process (tests/urxe_turns -P): each new
#      client's IDs must be taken, dropped_icrc stays 0.
#   3. `vm.sh cmd` again, urxe on the packet backend (AF_PACKET rings,
#      the user holding CAP_NET_RAW): ibv_rc_pingpong and ib_write_bw, each
#      once with urxe as the client of kernel rxe and once the other way
#      round, urxe's servers and clients running at the same time on the
#      tap's one address (host.sh packet, vm_script_packet.sh).  Its frames
#      bypass the qdisc, so a tcpdump on the tap shows only kernel rxe's:
#      QEMU records both directions at the VM's NIC (filter-dump, added to
#      vm.sh's QEMU command line by a wrapper first in PATH), where urxe's
#      frames arrive.  Both captures are validated.
# host.sh captures the tap while its programs run (not vm.sh's PCAP, which
# drops frames under load: see there); every capture, and each side's half
# of it, must pass urxe-validate (-o: urxe sends GSO runs with real UDP
# checksums, which the tap device computes after tcpdump sees the frames),
# with no frame dropped by the capture, and
# each side must have sent the opcodes its role implies.  Both sides of
# every program must exit 0, and no perftest may print "Failed status".
#
# Root only (network namespaces, a tap, QEMU); the VM scripts are looked
# for in $URXE_SHARED/vm (default: ../shared/vm next to the source tree);
# either missing skips, loudly.  The boots take some 15-20 s each under
# emulation, each bounded by URXE_VM_TIMEOUT (100 s).  A first run also
# builds the VM image (build.sh: downloads Debian packages).
# URXE_VM_PACKET=0 leaves out the third boot.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/vm/vm_lib.sh
. "$HERE/vm_lib.sh"

vm_require
vm_start "$@"
readonly URXE_IP=$HOST_IP KERNEL_IP=$VM_IP
VALIDATE=$B/tests/urxe-validate
[ -x "$VALIDATE" ] || die "$VALIDATE is not built"
vm_image
command -v tcpdump >/dev/null || die "no tcpdump (build.sh installs it)"

T0=$SECONDS
# host_rc NAME: the exit status host.sh recorded for its program NAME.
host_rc() { cat "$WORK/out/$1.rc" 2>/dev/null || echo "missing (never ran)"; }

# host_ok DESC NAME ERE: urxe's program NAME exited 0, printed a line
# matching ERE and no "Failed status".  A program that failed has its
# instance's counters shown (`urxe stats --all --qp`: exited instances
# keep theirs), which say whether packets were dropped and why: as
# host.sh took them when it failed, else now.
host_ok() {
	local rc
	rc=$(host_rc "$2")
	if [ "$rc" != 0 ]; then
		fail "$1: exit $rc"
		show "$2" "$rc"
		[ -e "$(out "$2.stats")" ] ||
			capture "$2.stats" urxe_cli stats --all --qp
		show "$2.stats"
	elif ! grep -Eq -- "$3" "$(out "$2")"; then
		fail "$1: no line matches /$3/"
		show "$2" "$rc"
	elif grep -q 'Failed status' "$(out "$2")" "$(err "$2")"; then
		fail "$1: \"Failed status\""
		show "$2" "$rc"
	else
		pass "$1"
	fi
	counters "$2"
}

# counters NAME: urxe's engine counters (URXE_LOG=debug prints them at exit).
counters() {
	local c
	c=$(sed -En 's/.*slot [0-9]+: ([a-z_]+) ([0-9]+)$/\1=\2/p' "$(err "$1")" 2>/dev/null |
		tr '\n' ' ')
	note "$1 counters: ${c:-none printed}"
}

# ip_fields PCAP: how many frames had each (TTL, IP flags, IP ID) header,
# for the log: urxe's wire habits next to kernel rxe's.
ip_fields() {
	tcpdump -nv -r "$1" 2>/dev/null |
		sed -En 's/.*\(tos (0x[0-9a-f]+)[^,]*, ttl ([0-9]+), id ([0-9]+), offset [0-9]+, flags \[([^]]*)\].*/tos \1 ttl \2 flags \4 id \3/p' |
		sed -E 's/id [1-9][0-9]*$/id !=0/' | sort | uniq -c | sed 's/^ */x/' | tr '\n' ';'
}

# pcap_ok CAP: capture CAP (host.sh's cap-CAP.pcap) is complete and
# passes the validator.
pcap_ok() {
	local f=$WORK/cap-$1.pcap t=$WORK/out/cap-$1.tcpdump
	if [ ! -s "$f" ]; then
		fail "capture $1: no $f"
		return
	fi
	# "N packets captured", "N packets received by filter", "0 packets
	# dropped by kernel": a frame missing here is the capture's fault,
	# and the validator would blame the stream for it.
	if [ "$(sed -n 's/ packets captured$//p' "$t")" != \
	     "$(sed -n 's/ packets received by filter$//p' "$t")" ] ||
	   ! grep -q '^0 packets dropped by kernel$' "$t"; then
		fail "capture $1 is incomplete: $(grep packets "$t" | tr '\n' ' ')"
		return
	fi
	pcap_valid "$1"
}

# pcap_valid CAP: capture CAP (written by QEMU, which drops nothing)
# passes the validator.
pcap_valid() {
	local f=$WORK/cap-$1.pcap
	if [ ! -s "$f" ]; then
		fail "capture $1: no $f"
		return
	fi
	capture "val-$1" "$VALIDATE" -o "$f"
	if [ "$RC" -eq 0 ]; then
		pass "capture $1 passes urxe-validate ($(head -n 1 "$(out "val-$1")"))"
	else
		fail "capture $1 fails urxe-validate: exit $RC"
		show "val-$1"
	fi
}

# pcap_side CAP SIDE SRC OPCODE...: SRC's half of capture CAP passes the
# validator and holds every OPCODE (the validator's names).
pcap_side() {
	local cap=$1 side=$2 src=$3 f=$WORK/cap-$1.$2.pcap op miss="" v
	shift 3
	v=val-$cap.$side
	tcpdump -r "$WORK/cap-$cap.pcap" -w "$f" "src host $src" 2>/dev/null
	capture "$v" "$VALIDATE" -o "$f"
	if [ "$RC" -ne 0 ]; then
		fail "capture $cap: $side's frames ($src) fail urxe-validate: exit $RC"
		show "$v"
		return
	fi
	for op in "$@"; do
		grep -Eq "^  0x[0-9a-f]{2} $op " "$(out "$v")" || miss+=" $op"
	done
	if [ -z "$miss" ]; then
		pass "capture $cap: $side ($src) sent valid $*"
	else
		fail "capture $cap: $side ($src) sent no$miss"
		show "$v"
	fi
	note "capture $cap: $side IPv4: $(ip_fields "$f")"
}

PPOK='^100 iters in [0-9.]+ seconds'
BWOK='^ *65536 +200 +[0-9.]+ +[0-9.]+'
ATOK='^ *8 +200 +[0-9.]+ +[0-9.]+'
UDOK='^ *1024 +200 +[0-9.]+ +[0-9.]+'
SENDS=(SEND_FIRST SEND_MIDDLE SEND_LAST ACKNOWLEDGE)

# Boot 1: kernel rxe servers, urxe clients.
vm_boot boot1 SRV=both PPARGS="-n 100 -s 4096" BWARGS="-F -n 200" \
	server -- "$HERE/host.sh" server
host_ok "boot1: urxe ibv_rc_pingpong client -> kernel rxe server (4096 B x 100)" \
	pp_client "$PPOK"
expect_match "boot1: kernel rxe ibv_rc_pingpong server exits 0" boot1 \
	'RXEVM: SERVER-DONE pingpong rc=0'
host_ok "boot1: urxe ib_write_bw client -> kernel rxe server" write_bw_client "$BWOK"
expect_match "boot1: kernel rxe ib_write_bw server exits 0" boot1 \
	'RXEVM: SERVER-DONE write_bw rc=0'
expect_no_match "boot1: no \"Failed status\" on the VM" boot1 'Failed status'
pcap_ok pingpong
pcap_side pingpong urxe "$URXE_IP" "${SENDS[@]}"
pcap_side pingpong kernel "$KERNEL_IP" "${SENDS[@]}"
pcap_ok write_bw
pcap_side write_bw urxe "$URXE_IP" RDMA_WRITE_FIRST RDMA_WRITE_MIDDLE RDMA_WRITE_LAST
pcap_side write_bw kernel "$KERNEL_IP" ACKNOWLEDGE

# Boot 2: urxe's pingpong server (up before the VM boots), kernel rxe's
# read and atomic servers.
vm_boot boot2 cmd "$(sed '/^#/d' "$HERE/vm_script.sh")" -- "$HERE/host.sh" cmd
host_ok "boot2: urxe ibv_rc_pingpong server <- kernel rxe client (4096 B x 100)" \
	pp_server "$PPOK"
expect_match "boot2: kernel rxe ibv_rc_pingpong client exits 0" boot2 '^VMT pp_client rc=0'
expect_match "boot2: kernel rxe ibv_rc_pingpong client did 100 iters" boot2 "$PPOK"
host_ok "boot2: urxe ib_read_bw client -> kernel rxe server" read_bw_client "$BWOK"
expect_match "boot2: kernel rxe ib_read_bw server exits 0" boot2 '^VMT read_bw_server rc=0'
host_ok "boot2: urxe ib_atomic_bw (fetch-add) client -> kernel rxe server" \
	fetch_add_client "$ATOK"
expect_match "boot2: kernel rxe ib_atomic_bw (fetch-add) server exits 0" boot2 \
	'^VMT fetch_add_server rc=0'
host_ok "boot2: urxe ib_atomic_bw (compare-swap) client -> kernel rxe server" \
	cmp_swap_client "$ATOK"
expect_match "boot2: kernel rxe ib_atomic_bw (compare-swap) server exits 0" boot2 \
	'^VMT cmp_swap_server rc=0'
host_ok "boot2: urxe ibv_ud_pingpong server <- kernel rxe client (1024 B x 100)" \
	ud_pp_server "$PPOK"
expect_match "boot2: kernel rxe ibv_ud_pingpong client exits 0" boot2 '^VMT ud_pp_client rc=0'
host_ok "boot2: urxe ib_send_bw -c UD server <- kernel rxe client" ud_bw_server "$UDOK"
expect_match "boot2: kernel rxe ib_send_bw -c UD client exits 0" boot2 '^VMT ud_bw_client rc=0'
host_ok "boot2: urxe ib_send_bw -c UD client -> kernel rxe server" ud_bw_client "$UDOK"
expect_match "boot2: kernel rxe ib_send_bw -c UD server exits 0" boot2 '^VMT ud_bw_server rc=0'
host_ok "boot2: one urxe server process (urxe_turns -P) <- 5 kernel rxe ibv_rc_pingpong clients in turn" \
	turns_server '^round 4 ok$'
expect_no_match "boot2: that urxe server dropped no frame for its ICRC" turns_server \
	'dropped_icrc [1-9]' err
for i in 1 2 3 4 5; do
	expect_match "boot2: kernel rxe ibv_rc_pingpong client $i of 5 (in turn) exits 0" boot2 \
		"^VMT turn$i rc=0"
done
expect_no_match "boot2: no \"Failed status\" on the VM" boot2 'Failed status'
pcap_ok cmd
pcap_side cmd urxe "$URXE_IP" "${SENDS[@]}" RDMA_READ_REQUEST FETCH_ADD COMPARE_SWAP
pcap_side cmd kernel "$KERNEL_IP" "${SENDS[@]}" RDMA_READ_RESPONSE_FIRST \
	RDMA_READ_RESPONSE_MIDDLE RDMA_READ_RESPONSE_LAST ATOMIC_ACKNOWLEDGE
# UD SEND_ONLY is 0x64 (RC's SEND_ONLY, 0x04, has the same name).
for side in urxe kernel; do
	if grep -Eq '^  0x64 ' "$(out "val-cmd.$side")"; then
		pass "capture cmd: $side sent UD SEND_ONLY (0x64)"
	else
		fail "capture cmd: $side sent no UD SEND_ONLY (0x64)"
	fi
done

# Boot 3: urxe on the packet backend, both ways, servers and clients at
# once.  The wrapper adds QEMU's own capture of the VM's NIC to vm.sh's
# QEMU command line (netdev n0 is vm.sh's tap), and takes the virtio
# header off the tap (vnet_hdr=off): with it, every frame of the dump
# would start with one.
if [ "${URXE_VM_PACKET:-1}" != 0 ]; then
	QEMU=$(command -v qemu-system-x86_64) || die "no qemu-system-x86_64"
	mkdir -p "$WORK/qemu-wrap"
	cat >"$WORK/qemu-wrap/qemu-system-x86_64" <<-EOF
		#!/bin/sh
		for a; do
			shift
			case \$a in tap,id=n0,*) a=\$a,vnet_hdr=off ;; esac
			set -- "\$@" "\$a"
		done
		exec "$QEMU" "\$@" -object filter-dump,id=urxedump,netdev=n0,file="$WORK/cap-packetvm.pcap"
	EOF
	chmod 755 "$WORK/qemu-wrap/qemu-system-x86_64"
	vm_boot boot3 PATH="$WORK/qemu-wrap:$PATH" \
		cmd "$(sed '/^#/d' "$HERE/vm_script_packet.sh")" -- "$HERE/host.sh" packet
	host_ok "boot3: urxe (packet backend) ibv_rc_pingpong client -> kernel rxe server (4096 B x 100)" \
		pkt_pp_client "$PPOK"
	expect_match "boot3: kernel rxe ibv_rc_pingpong server exits 0" boot3 '^VMT pp_server rc=0'
	host_ok "boot3: urxe (packet backend) ib_write_bw client -> kernel rxe server" \
		pkt_write_bw_client "$BWOK"
	expect_match "boot3: kernel rxe ib_write_bw server exits 0" boot3 '^VMT write_bw_server rc=0'
	host_ok "boot3: urxe (packet backend) ibv_rc_pingpong server <- kernel rxe client (4096 B x 100)" \
		pkt_pp_server "$PPOK"
	expect_match "boot3: kernel rxe ibv_rc_pingpong client exits 0" boot3 '^VMT pp_client rc=0'
	expect_match "boot3: kernel rxe ibv_rc_pingpong client did 100 iters" boot3 "$PPOK"
	host_ok "boot3: urxe (packet backend) ib_write_bw server <- kernel rxe client" \
		pkt_write_bw_server "$BWOK"
	expect_match "boot3: kernel rxe ib_write_bw client exits 0" boot3 '^VMT write_bw_client rc=0'
	expect_no_match "boot3: no \"Failed status\" on the VM" boot3 'Failed status'
	# The tap's capture: kernel rxe's frames, as urxe received them.
	pcap_ok packet
	pcap_side packet kernel "$KERNEL_IP" "${SENDS[@]}" RDMA_WRITE_FIRST \
		RDMA_WRITE_MIDDLE RDMA_WRITE_LAST
	# The VM's NIC: urxe's frames as kernel rxe received them (and its own).
	pcap_valid packetvm
	pcap_side packetvm urxe "$URXE_IP" "${SENDS[@]}" RDMA_WRITE_FIRST \
		RDMA_WRITE_MIDDLE RDMA_WRITE_LAST
	pcap_side packetvm kernel "$KERNEL_IP" "${SENDS[@]}"
fi

note "VM boots in $((SECONDS - T0)) s"
finish
