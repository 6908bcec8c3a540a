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
# shellcheck source=tests/integration/lib.sh
. "$HERE/../integration/lib.sh"

loud_skip() {
	printf '\n%s\nSKIP: %s\n%s\n\n' "!!!!!!!!!!" "$*" "!!!!!!!!!!"
	exit 77
}
[ "$(id -u)" -eq 0 ] || loud_skip "needs root (QEMU on a tap in a network namespace)"
SHARED=${URXE_SHARED:-$SRC/../shared}
VMDIR=$SHARED/vm
[ -x "$VMDIR/vm.sh" ] ||
	loud_skip "../shared/vm not found (no $VMDIR/vm.sh; set URXE_SHARED to the directory holding vm/)"
command -v tshark >/dev/null || loud_skip "no tshark"

urxe_it_init "$@"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

export TAP=rxetap0 HOST_IP=198.18.1.1 VM_IP=198.18.1.2
export URXE_VM_ENV=$WORK/vm-env.sh
declare -p B WORK RUNDIR UHOME TUSER AS_USER SAN_ENV >"$URXE_VM_ENV"
VM_TIMEOUT=${URXE_VM_TIMEOUT:-100}
VMWORK=${URXE_VM_DIR:-/tmp/urxe-vm}
if [ ! -f "$VMWORK/out/vmlinuz" ] || [ ! -f "$VMWORK/out/initramfs.cpio.gz" ]; then
	note "no VM image in $VMWORK/out: building it (downloads Debian packages)"
	capture vm_build "$VMDIR/build.sh"
	[ "$RC" -eq 0 ] || { show vm_build; die "$VMDIR/build.sh failed"; }
fi

# boot NAME SCRIPT HOST_MODE: one vm.sh cmd run with the tap captured.
boot() {
	local name=$1 script=$2 mode=$3 t=$SECONDS
	capture "$name" env TIMEOUT="$VM_TIMEOUT" SERVER_TMO=$((VM_TIMEOUT - 10)) \
		LOGDIR="$WORK/vmlogs" PCAP="$WORK/$name.pcap" \
		"$VMDIR/vm.sh" cmd "$script" -- "$HERE/host_cm.sh" "$mode"
	note "$name: vm.sh cmd exited $RC after $((SECONDS - t)) s"
	if [ "$RC" -eq 0 ]; then
		pass "$name: vm.sh exits 0 (the VM's rping and urxe's)"
	else
		fail "$name: vm.sh exit $RC"
		tail -n 30 "$(out "$name")" | sed 's/^/#     | /'
	fi
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

# 1. kernel passive, urxe active.
boot cm1 'rping -s -a 198.18.1.2 -v -C 10; echo "VMT rping_server rc=$?"' client
check "cm1: urxe's rping client exits 0 (rc $(cat "$WORK/out/cm_client.rc" 2>/dev/null))" \
	test "$(cat "$WORK/out/cm_client.rc" 2>/dev/null)" = 0
n=$(grep -c '^ping data: rdma-ping-' "$(out cm_client)" || true)
check "cm1: urxe's client saw the kernel server's 10 pings ($n)" test "$n" -eq 10
expect_match "cm1: the kernel's rping server exits 0" cm1 '^VMT rping_server rc=0'
handshake cm1 "$HOST_IP"
validate cm1

# 2. urxe passive, kernel active (the VM retries until urxe listens).
boot cm2 'for i in 1 2 3 4 5 6 7 8 9 10; do rping -c -a 198.18.1.1 -v -C 10 && { echo "VMT rping_client rc=0"; break; }; sleep 2; done' server
check "cm2: urxe's rping server exits 0 (rc $(cat "$WORK/out/cm_server.rc" 2>/dev/null))" \
	test "$(cat "$WORK/out/cm_server.rc" 2>/dev/null)" = 0
n=$(grep -c '^server ping data: rdma-ping-' "$(out cm_server)" || true)
check "cm2: urxe's server saw the kernel client's 10 pings ($n)" test "$n" -eq 10
expect_match "cm2: the kernel's rping client exits 0" cm2 '^VMT rping_client rc=0'
handshake cm2 "$VM_IP"
validate cm2

# 3. kernel servers, urxe clients.
boot cm3 'ucmatose -b 198.18.1.2 -C 10; r1=$?; echo "VMT ucmatose rc=$r1"
udaddy -b 198.18.1.2; r2=$?; echo "VMT udaddy rc=$r2"
[ $r1 = 0 ] && [ $r2 = 0 ]' clients
expect_match "cm3: urxe's ucmatose to a port nobody listens on at the kernel's gets RDMA_CM_EVENT_REJECTED, reason 8" \
	cm_rej 'RDMA_CM_EVENT_REJECTED, error: 8'
for p in ucmatose udaddy; do
	check "cm3: urxe's $p client exits 0 (rc $(cat "$WORK/out/cm_$p.rc" 2>/dev/null))" \
		rc_is0 "cm_$p"
	expect_match "cm3: the kernel's $p server exits 0" cm3 "^VMT $p rc=0"
done
expect_match "cm3: urxe's ucmatose moved its 10 messages" cm_ucmatose \
	'data transfers complete'
expect_match "cm3: urxe's udaddy moved its messages" cm_udaddy \
	'data transfers complete'
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
for p in ucmatose udaddy write_bw; do
	check "cm4: urxe's $p server exits 0 (rc $(cat "$WORK/out/cm_s_$p.rc" 2>/dev/null))" \
		rc_is0 "cm_s_$p"
	expect_match "cm4: the kernel's $p client exits 0" cm4 "^VMT $p rc=0"
done
expect_match "cm4: the kernel's ucmatose to a port nobody listens on at urxe's gets RDMA_CM_EVENT_REJECTED, reason 8" \
	cm4 '^VMT reject ok'
expect_match "cm4: urxe's ucmatose server moved its 10 messages" cm_s_ucmatose \
	'data transfers complete'
expect_match "cm4: urxe's udaddy server moved its messages" cm_s_udaddy \
	'data transfers complete'
expect_match "cm4: urxe's ib_write_bw -R server printed its result" cm_s_write_bw \
	'^ *65536 +200 '
carried_rej_sidr cm4
validate cm4

finish
