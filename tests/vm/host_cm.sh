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
# Exit 0 iff rping did.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/../integration/lib.sh"
# shellcheck disable=SC1090 # written by t_vm_rdmacm.sh
. "${URXE_VM_ENV:?not started by t_vm_rdmacm.sh}"

VM=${VM_IP:-198.18.1.2}
ENVS=(LD_LIBRARY_PATH="$B/lib" "URXE_DEVICES=rxe0 netdev ${TAP:?}" URXE_LOG=debug)
T_LIMIT=40
case ${1:-} in
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
	echo "usage: host_cm.sh client|server" >&2
	exit 2
	;;
esac
echo "$RC" >"$WORK/out/cm_$1.rc"
exit "$RC"
