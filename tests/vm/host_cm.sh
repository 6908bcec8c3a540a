#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# host_cm.sh client|server: the HOST_CMD of t_vm_rdmacm's boots.  vm.sh
# runs it as root inside its private network namespace, on the host side
# of the tap ($TAP, 198.18.1.1); rping runs as the test's user with this
# build's librdmacm.so.1 and libibverbs.so.1 and the device
# "rxe0 netdev $TAP", exactly as lib.sh's runners run programs.
# URXE_VM_ENV names the file with t_vm_rdmacm.sh's lib.sh state; outputs
# land in its $WORK/out as NAME.out/.err, exit statuses in NAME.rc.
#
#   client  urxe's rping client of the VM's kernel rping server, retried
#           (every 2 s, 40 s at most) until that server listens.
#   server  urxe's rping server for the VM's kernel rping client.
#   clients urxe's clients of the VM's kernel servers, in turn, each retried
#           until it succeeds (40 s at most each): first ucmatose to a port
#           nobody listens on there, until the kernel's REJ comes back
#           (RDMA_CM_EVENT_REJECTED, reason 8: cm_rej), then ucmatose -C 10
#           (cm_ucmatose) and udaddy (cm_udaddy, SIDR).
#   servers urxe's servers for the VM's kernel clients, in turn, once the
#           tap has carrier: ucmatose -C 10, udaddy, ib_write_bw -R
#           (cm_s_ucmatose, cm_s_udaddy, cm_s_write_bw); while the last one
#           runs, the VM asks for a port nobody listens on, which urxe's
#           RDMA CM must refuse with a REJ.
# Exit 0 iff every program did.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/../integration/lib.sh"
# shellcheck disable=SC1090 # written by t_vm_rdmacm.sh
. "${URXE_VM_ENV:?not started by t_vm_rdmacm.sh}"

VM=${VM_IP:-198.18.1.2}
ENVS=(LD_LIBRARY_PATH="$B/lib" "URXE_DEVICES=rxe0 netdev ${TAP:?}" URXE_LOG=debug)
# perftest is not leak-clean: leak checking off in a sanitizer build (as
# t_rdmacm and t_perftest do); ASan and UBSan stay on.
[ "${#SAN_ENV[@]}" -eq 0 ] ||
	ENVS+=("ASAN_OPTIONS=${URXE_TEST_ASAN_OPTIONS:-detect_leaks=1}:detect_leaks=0")
T_LIMIT=40
# retry NAME SECONDS CMD...: CMD as the test's user until it exits 0.
retry() {
	local name=$1 deadline=$((SECONDS + $2))
	shift 2
	while :; do
		capture "$name" as_user "${ENVS[@]}" "$@"
		if [ "$RC" -eq 0 ] || [ "$SECONDS" -ge "$deadline" ]; then
			break
		fi
		sleep 1
	done
	echo "$RC" >"$WORK/out/$name.rc"
}

case ${1:-} in
clients)
	deadline=$((SECONDS + 40))
	while :; do
		capture cm_rej as_user "${ENVS[@]}" ucmatose -s "$VM" -p 7999 -C 1
		if grep -q 'RDMA_CM_EVENT_REJECTED, error: 8' "$(out cm_rej)" ||
		   [ "$SECONDS" -ge "$deadline" ]; then
			break
		fi
		sleep 1
	done
	retry cm_ucmatose 40 ucmatose -s "$VM" -C 10
	retry cm_udaddy 40 udaddy -s "$VM"
	RC=0
	for n in cm_ucmatose cm_udaddy; do
		[ "$(cat "$WORK/out/$n.rc")" = 0 ] || RC=1
	done
	;;
servers)
	wait_for 60 grep -qx 1 "/sys/class/net/$TAP/carrier" 2>/dev/null || true
	RC=0
	capture cm_s_ucmatose as_user "${ENVS[@]}" ucmatose -b 198.18.1.1 -C 10
	echo "$RC" >"$WORK/out/cm_s_ucmatose.rc"
	capture cm_s_udaddy as_user "${ENVS[@]}" udaddy -b 198.18.1.1
	echo "$RC" >"$WORK/out/cm_s_udaddy.rc"
	capture cm_s_write_bw as_user "${ENVS[@]}" ib_write_bw -R -d rxe0 -n 200 -F
	echo "$RC" >"$WORK/out/cm_s_write_bw.rc"
	for n in cm_s_ucmatose cm_s_udaddy cm_s_write_bw; do
		[ "$(cat "$WORK/out/$n.rc")" = 0 ] || RC=1
	done
	;;
client)
	deadline=$((SECONDS + 40))
	while :; do
		capture cm_client as_user "${ENVS[@]}" rping -c -a "$VM" -v -C 10
		if [ "$RC" -eq 0 ] || [ "$SECONDS" -ge "$deadline" ]; then
			break
		fi
		sleep 2
	done
	;;
server)
	capture cm_server as_user "${ENVS[@]}" rping -s -a 198.18.1.1 -v -C 10
	;;
*)
	echo "usage: host_cm.sh client|server|clients|servers" >&2
	exit 2
	;;
esac
echo "$RC" >"$WORK/out/cm_$1.rc"
exit "$RC"
