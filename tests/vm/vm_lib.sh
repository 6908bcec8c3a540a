# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# What the VM tier's tests (t_vm_interop.sh, t_vm_rdmacm.sh) share,
# sourced after HERE and SRC are set: lib.sh, the loud skip, the checks
# that the tier can run here, the test's state handed to the host-side
# scripts, and the VM image.
# shellcheck source=tests/integration/lib.sh
. "$HERE/../integration/lib.sh"

# A skipped tier hides a whole class of bugs: say so where it shows.
loud_skip() {
	printf '\n%s\nSKIP: %s\n%s\n\n' "!!!!!!!!!!" "$*" "!!!!!!!!!!"
	exit 77
}

# vm_require: skips unless root and ../shared/vm's scripts are there
# ($URXE_SHARED/vm, default next to the source tree); sets VMDIR.
vm_require() {
	[ "$(id -u)" -eq 0 ] || loud_skip "needs root (the VM tier boots QEMU on a tap in a network namespace)"
	SHARED=${URXE_SHARED:-$SRC/../shared}
	VMDIR=$SHARED/vm
	[ -x "$VMDIR/vm.sh" ] ||
		loud_skip "../shared/vm not found (no $VMDIR/vm.sh; set URXE_SHARED to the directory holding vm/)"
}

# vm_start BUILD_DIR: lib.sh's state for the build (its library checked
# to be the one loaded), the tap and its two addresses (urxe's host side
# HOST_IP, the VM's VM_IP), and the boots' bound VM_TIMEOUT.
vm_start() {
	urxe_it_init "$@"
	# shellcheck disable=SC2119 # no namespace: the host's
	assert_lib_loaded
	export TAP=rxetap0 HOST_IP=198.18.1.1 VM_IP=198.18.1.2
	export URXE_VM_ENV=$WORK/vm-env.sh
	# The host-side scripts run inside vm.sh's namespace and take over
	# this state.
	declare -p B WORK RUNDIR UHOME TUSER AS_USER SAN_ENV >"$URXE_VM_ENV"
	VM_TIMEOUT=${URXE_VM_TIMEOUT:-100}
}

# vm_image: the VM's kernel and initramfs, built on first use (build.sh
# downloads Debian packages) in $URXE_VM_DIR (/tmp/urxe-vm).
vm_image() {
	local vmwork=${URXE_VM_DIR:-/tmp/urxe-vm}

	if [ ! -f "$vmwork/out/vmlinuz" ] || [ ! -f "$vmwork/out/initramfs.cpio.gz" ]; then
		note "no VM image in $vmwork/out: building it (downloads Debian packages)"
		capture vm_build "$VMDIR/build.sh"
		[ "$RC" -eq 0 ] || { show vm_build; die "$VMDIR/build.sh failed"; }
	fi
}

# vm_boot NAME VAR=VAL... MODE [SCRIPT] -- HOST_CMD...: one vm.sh run,
# bounded by VM_TIMEOUT, its output in NAME.out (the VM's console
# included); PASS when it exits 0.
vm_boot() {
	local name=$1 t=$SECONDS vars=()
	shift
	while [[ $1 == *=* ]]; do vars+=("$1"); shift; done
	capture "$name" env "${vars[@]}" TIMEOUT="$VM_TIMEOUT" \
		SERVER_TMO=$((VM_TIMEOUT - 10)) LOGDIR="$WORK/vmlogs" \
		"$VMDIR/vm.sh" "$@"
	note "$name: vm.sh $1 exited $RC after $((SECONDS - t)) s"
	if [ "$RC" -eq 0 ]; then
		pass "$name: vm.sh $1 exits 0 (VM side and host side)"
	else
		fail "$name: vm.sh $1 exit $RC"
		tail -n 40 "$(out "$name")" | sed 's/^/#     | /'
	fi
}
