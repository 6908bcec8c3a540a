#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_vm_rdmacm BUILD_DIR: RDMA CM between urxe and Linux's kernel Soft-RoCE
# (rdma_rxe, rdma_cm) in ../shared/vm's QEMU VM, over a tap, both ways:
#   1. the VM's kernel rping server (198.18.1.2) and urxe's rping client;
#   2. urxe's rping server (198.18.1.1) and the VM's kernel rping client.
# rping -v -C 10 each time: 10 pings must be seen on urxe's side, both
# ends exit 0, and the tap's capture holds the whole handshake in both
# directions (REQ, REP, RTU, DREQ, DREP), the disconnect begun by the
# active side each time (urxe's DREQ to the kernel, then the kernel's to
# urxe).  That the REQ's and REP's Starting PSNs mean what Linux means
# (each side sends from the PSN the other announced) is what the pings
# prove.  Then, in one boot each way, in turn:
#   3. the VM's kernel servers and urxe's clients: ucmatose to a port
#      nobody listens on (the kernel's REJ, reason 8, must reach urxe's
#      program as RDMA_CM_EVENT_REJECTED), ucmatose -C 10, udaddy (UD
#      through SIDR_REQ/SIDR_REP).  Not ib_write_bw -R: its client
#      connects twice, the second time 2 ms after the first exchange, and
#      the kernel server in an emulated VM listens again later than that
#      (the kernel refuses at once: REJ, and perftest gives up);
#   4. urxe's servers and the VM's kernel clients: the same three, and
#      while urxe's ib_write_bw server runs, a kernel ucmatose to a port
#      nobody listens on at urxe's (urxe's REJ, reason 8).
# Every program must exit 0 on both sides, and every capture pass
# urxe-validate, which holds each MAD on QP1, the kernel's and urxe's,
# to the GSI's and the CM's rules (-o: urxe's UDP checksums are left to
# the device; -l: tcpdump on the tap may miss frames of a busy run).  Root (QEMU on a tap in a
# network namespace); skips without ../shared/vm (URXE_SHARED).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/vm/vm_lib.sh
. "$HERE/vm_lib.sh"

vm_require
command -v tshark >/dev/null || loud_skip "no tshark"
vm_start "$@"
vm_image

# boot NAME SCRIPT HOST_MODE: one vm.sh cmd run with the tap captured.
boot() {
	vm_boot "$1" PCAP="$WORK/$1.pcap" cmd "$2" -- "$HERE/host_cm.sh" "$3"
}

# handshake NAME DREQ_FROM: the CM attributes the capture holds, both
# directions: REQ 0x10 ... DREP 0x16; and the first DREQ came from
# DREQ_FROM (the side that began the disconnect).
handshake() {
	local f=$WORK/$1.pcap ids want=" 0x0010 0x0013 0x0014 0x0015 0x0016" id miss="" from
	ids=$(tshark -r "$f" -Y infiniband.mad -T fields -e infiniband.mad.attributeid \
		2>/dev/null | sort -u | tr '\n' ' ')
	for id in $want; do
		[[ " $ids " == *" $id "* ]] || miss+=" $id"
	done
	if [ -z "$miss" ]; then
		pass "$1: the tap carried REQ, REP, RTU, DREQ and DREP (attributes: $ids)"
	else
		fail "$1: no CM attribute$miss on the tap (saw: ${ids:-none})"
	fi
	from=$(tshark -r "$f" -Y 'infiniband.mad.attributeid == 0x0015 && !icmp' \
		-T fields -e ip.src 2>/dev/null | head -1)
	check "$1: the disconnect began at $2 (first DREQ from ${from:-nobody})" \
		test "$from" = "$2"
}

# validate NAME: the capture passes urxe-validate.
validate() {
	capture "val-$1" "$B/tests/urxe-validate" -o -l "$WORK/$1.pcap"
	if [ "$RC" -eq 0 ]; then
		pass "$1: urxe-validate takes every frame, MADs included ($(grep -m1 frames "$(out "val-$1")"))"
	else
		fail "$1: urxe-validate exit $RC"
		show "val-$1"
	fi
}

# attrs NAME: the CM attributes a capture holds, sorted, one line.
attrs() {
	tshark -r "$WORK/$1.pcap" -Y 'infiniband.mad && !icmp' -T fields \
		-e infiniband.mad.attributeid 2>/dev/null | sort -u | tr '\n' ' '
}

# carried_rej_sidr NAME: the capture holds a REJ, a SIDR_REQ and a SIDR_REP.
carried_rej_sidr() {
	local a id
	a=$(attrs "$1")
	for id in 0x0012 0x0017 0x0018; do
		check "$1: the tap carried attribute $id (REJ, SIDR_REQ, SIDR_REP; saw $a)" \
			grep -q -- "$id" <<<"$a"
	done
}

# rc_is0 NAME: the exit status host_cm.sh noted for NAME is 0.
rc_is0() {
	test "$(cat "$WORK/out/$1.rc" 2>/dev/null)" = 0
}

# both_exit0 BOOT PREFIX ROLE PEER_ROLE PROGRAM...: each PROGRAM exited 0
# on urxe's side (host_cm.sh's PREFIXPROGRAM, the ROLE) and in the VM.
both_exit0() {
	local boot=$1 prefix=$2 role=$3 peer=$4 p
	shift 4
	for p in "$@"; do
		check "$boot: urxe's $p $role exits 0 (rc $(cat "$WORK/out/$prefix$p.rc" 2>/dev/null))" \
			rc_is0 "$prefix$p"
		expect_match "$boot: the kernel's $p $peer exits 0" "$boot" "^VMT $p rc=0"
	done
}

# moved BOOT PREFIX [ROLE]: urxe's ucmatose and udaddy (host_cm.sh's
# PREFIXucmatose, PREFIXudaddy) finished their transfers.
moved() {
	expect_match "$1: urxe's ucmatose${3:+ $3} moved its 10 messages" "${2}ucmatose" \
		'data transfers complete'
	expect_match "$1: urxe's udaddy${3:+ $3} moved its messages" "${2}udaddy" \
		'data transfers complete'
}

# rping_ok BOOT ROLE PEER_ROLE PREFIX: urxe's rping ROLE (host_cm.sh's
# cm_ROLE) exited 0 having printed 10 "PREFIXping data" lines, and the
# VM's rping PEER_ROLE exited 0.
rping_ok() {
	local n
	check "$1: urxe's rping $2 exits 0 (rc $(cat "$WORK/out/cm_$2.rc" 2>/dev/null))" \
		rc_is0 "cm_$2"
	n=$(grep -c "^${4}ping data: rdma-ping-" "$(out "cm_$2")" || true)
	check "$1: urxe's $2 saw the kernel $3's 10 pings ($n)" test "$n" -eq 10
	expect_match "$1: the kernel's rping $3 exits 0" "$1" "^VMT rping_$3 rc=0"
}

# 1. kernel passive, urxe active.
boot cm1 'rping -s -a 198.18.1.2 -v -C 10; echo "VMT rping_server rc=$?"' client
rping_ok cm1 client server ""
handshake cm1 "$HOST_IP"
validate cm1

# 2. urxe passive, kernel active (the VM retries until urxe listens).
boot cm2 'for i in 1 2 3 4 5 6 7 8 9 10; do rping -c -a 198.18.1.1 -v -C 10 && { echo "VMT rping_client rc=0"; break; }; sleep 2; done' server
rping_ok cm2 server client "server "
handshake cm2 "$VM_IP"
validate cm2

# 3. kernel servers, urxe clients.
boot cm3 'ucmatose -b 198.18.1.2 -C 10; r1=$?; echo "VMT ucmatose rc=$r1"
udaddy -b 198.18.1.2; r2=$?; echo "VMT udaddy rc=$r2"
[ $r1 = 0 ] && [ $r2 = 0 ]' clients
expect_match "cm3: urxe's ucmatose to a port nobody listens on at the kernel's gets RDMA_CM_EVENT_REJECTED, reason 8" \
	cm_rej 'RDMA_CM_EVENT_REJECTED, error: 8'
both_exit0 cm3 cm_ client server ucmatose udaddy
moved cm3 cm_
carried_rej_sidr cm3

validate cm3

# 4. urxe servers, kernel clients (the VM retries until urxe listens).
boot cm4 'try() { k=$1; shift; while [ $k -gt 0 ]; do "$@" && return 0; k=$((k - 1)); sleep 1; done; return 1; }
rej() { ucmatose -s 198.18.1.1 -p 7999 -C 1 >/tmp/rej 2>&1; cat /tmp/rej; grep -q "REJECTED, error: 8" /tmp/rej; }
n=0
try 40 ucmatose -s 198.18.1.1 -C 10 && { echo "VMT ucmatose rc=0"; n=$((n + 1)); }
try 40 udaddy -s 198.18.1.1 && { echo "VMT udaddy rc=0"; n=$((n + 1)); }
sleep 2
try 10 rej && { echo "VMT reject ok"; n=$((n + 1)); }
try 40 ib_write_bw -R -d rxe0 -n 200 -F 198.18.1.1 && { echo "VMT write_bw rc=0"; n=$((n + 1)); }
[ $n = 4 ]' servers
both_exit0 cm4 cm_s_ server client ucmatose udaddy write_bw
expect_match "cm4: the kernel's ucmatose to a port nobody listens on at urxe's gets RDMA_CM_EVENT_REJECTED, reason 8" \
	cm4 '^VMT reject ok'
moved cm4 cm_s_ server
expect_match "cm4: urxe's ib_write_bw -R server printed its result" cm_s_write_bw \
	'^ *65536 +200 '
carried_rej_sidr cm4
validate cm4

finish
