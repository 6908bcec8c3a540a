#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_vm_rdmacm BUILD_DIR: RDMA CM between urxe and Linux's kernel Soft-RoCE
# (rdma_rxe, rdma_cm) in ../shared/vm's QEMU VM, over a tap, both ways:
#   1. the VM's kernel rping server (198.18.1.2) and urxe's rping client;
#   2. urxe's rping server (198.18.1.1) and the VM's kernel rping client.
# rping -v -C 10 each time: 10 pings must be seen on urxe's side, both
# ends exit 0, and the tap's capture holds the whole handshake in both
# directions (REQ, REP, RTU, DREQ, DREP).  That the REQ's and REP's
# Starting PSNs mean what Linux means (each side sends from the PSN the
# other announced) is what the pings prove.  Root (QEMU on a tap in a
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

# handshake NAME: the CM attributes the capture holds, in order of first
# appearance, both directions: REQ 0x10 ... DREP 0x16.
handshake() {
	local f=$WORK/$1.pcap ids want=" 0x0010 0x0013 0x0014 0x0015 0x0016" id miss=""
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
}

# 1. kernel passive, urxe active.
boot cm1 'rping -s -a 198.18.1.2 -v -C 10; echo "VMT rping_server rc=$?"' client
check "cm1: urxe's rping client exits 0 (rc $(cat "$WORK/out/cm_client.rc" 2>/dev/null))" \
	test "$(cat "$WORK/out/cm_client.rc" 2>/dev/null)" = 0
n=$(grep -c '^ping data: rdma-ping-' "$(out cm_client)" || true)
check "cm1: urxe's client saw the kernel server's 10 pings ($n)" test "$n" -eq 10
expect_match "cm1: the kernel's rping server exits 0" cm1 '^VMT rping_server rc=0'
handshake cm1

# 2. urxe passive, kernel active (the VM retries until urxe listens).
boot cm2 'for i in 1 2 3 4 5 6 7 8 9 10; do rping -c -a 198.18.1.1 -v -C 10 && { echo "VMT rping_client rc=0"; break; }; sleep 2; done' server
check "cm2: urxe's rping server exits 0 (rc $(cat "$WORK/out/cm_server.rc" 2>/dev/null))" \
	test "$(cat "$WORK/out/cm_server.rc" 2>/dev/null)" = 0
n=$(grep -c '^server ping data: rdma-ping-' "$(out cm_server)" || true)
check "cm2: urxe's server saw the kernel client's 10 pings ($n)" test "$n" -eq 10
expect_match "cm2: the kernel's rping client exits 0" cm2 '^VMT rping_client rc=0'
handshake cm2

finish
