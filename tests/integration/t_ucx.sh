#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_ucx BUILD_DIR: UCX, and Open MPI and MPICH over it, on rxe0, unmodified,
# as an ordinary user, in a network namespace of the test's own (lo only:
# nothing the MPI launchers open reaches any other address).  UCX skips a
# device without a character device /dev/infiniband/<dev_name> it may read
# and write; `urxe run --dev-node` gives the program one, in a user and
# mount namespace of its own, without privilege.  The only UCX variables
# set choose the transport and the device (UCX_TLS, UCX_NET_DEVICES), plus
# UCX_SOCKADDR_TLS_PRIORITY to pick the rdmacm connection manager.
#   - urxe run --dev-node: /dev/infiniband/uverbs0 is a character device
#     the user may read and write; the user keeps its uid; ucx_info lists
#     rc_verbs and ud_verbs on rxe0:1 and the rdmacm connection manager
#     (and, without the option on a host with no such node, no rxe0);
#   - ucx_perftest over rc_verbs (am_lat, put_bw zcopy) and ud_verbs (am_lat,
#     am_bw bcopy): both sides exit 0 with a final line.  ud_verbs finds each
#     datagram's address through wc.sl (2: IPv4, as mlx5);
#   - UCX's own example ucp_client_server (built here from libucx-dev's
#     examples, unmodified) connecting through RDMA CM (rdmacm): the
#     client's message arrives;
#   - Open MPI 4.1 --mca pml ucx and MPICH (ch4:ucx), two ranks each over
#     rc_verbs and over ud_verbs: tests/tools/mpi_pingpong's ping-pong (1 B
#     .. 64 KiB, every byte checked) and its MPI_Allreduce check pass, both
#     ranks mapping this build's libibverbs.so.1;
#   - after each program, `urxe stats --all` (a runtime directory per
#     program) counts the packets it sent
#     over rxe0.
# Skips (77) without ucx_perftest (ucx-utils), or where user namespaces are
# off; the MPI parts skip alone without mpirun/mpicc (openmpi-bin,
# libopenmpi-dev) or mpirun.mpich/mpicc.mpich (mpich, libmpich-dev).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"

command -v ucx_perftest >/dev/null || skip "no ucx_perftest (install ucx-utils)"
urxe_it_init "$@"
as_user_plain unshare -U true >/dev/null 2>&1 || skip "no user namespaces for $TUSER here"
ns_add NS ucx
assert_lib_loaded "$NS"
WANT=$(readlink -f "$B/lib/libibverbs.so.1")
RUN=("$B/bin/urxe" run --dev-node --)
DEV=(UCX_NET_DEVICES=rxe0:1)
T_LIMIT=90

# phase NAME: a fresh runtime directory for the programs
# that follow, so that `urxe stats --all` (which keeps the last instance of
# each slot) counts theirs alone.  The user's own: inside the program's
# user namespace only the user itself has a name (root shows as nobody,
# and the library refuses a runtime directory nobody owns).
phase() {
	RUNDIR=$WORK/run.$1
	mkdir -m 700 "$RUNDIR"
	chown "$(id -u "$TUSER"):$(id -g "$TUSER")" "$RUNDIR"
	PHASE=$1
}
# sent_over DESC MIN: the phase's programs sent at least MIN packets over
# rxe0, by `urxe stats --all rxe0`.
sent_over() {
	local n
	capture "stats.$PHASE" ns_user "$NS" "$B/bin/urxe" stats --all rxe0
	n=$(awk '$1 == "sent_pkts" && NF == 2 { print $2; exit }' \
		"$(out "stats.$PHASE")")
	if [ "${n:-0}" -ge "$2" ]; then
		pass "$1: urxe stats counts $n packets sent over rxe0"
	else
		fail "$1: urxe stats counts ${n:-no} packets sent over rxe0, expected >= $2"
		show "stats.$PHASE"
	fi
}

# --- the device node ---------------------------------------------------------

phase node
capture node ns_user_plain "$NS" "${RUN[@]}" sh -c \
	'stat -c "%F %a" /dev/infiniband/uverbs0; id -u; test -r /dev/infiniband/uverbs0 -a -w /dev/infiniband/uverbs0 && echo rw'
expect_rc "urxe run --dev-node runs the program" 0 node
expect_match "it sees /dev/infiniband/uverbs0, a character device" node \
	'^character special file 666$'
expect_match "it may read and write it" node '^rw$'
expect_match "it keeps its uid" node "^$(id -u "$TUSER")\$"
capture info ns_user "$NS" ASAN_OPTIONS=detect_leaks=0 "${RUN[@]}" ucx_info -d
expect_rc "ucx_info -d exits 0" 0 info
for tl in rc_verbs ud_verbs; do
	if awk -v t="$tl" '$2 == "Transport:" && $3 == t { getline; print }' \
		"$(out info)" | grep -q 'Device: rxe0:1'; then
		pass "ucx_info lists $tl on rxe0:1"
	else
		fail "ucx_info does not list $tl on rxe0:1"
		show info
	fi
done
expect_match "ucx_info lists the rdmacm connection manager" info \
	'Connection manager: rdmacm'
if [ ! -e /dev/infiniband/uverbs0 ]; then
	capture info_plain ns_user "$NS" ASAN_OPTIONS=detect_leaks=0 "$B/bin/urxe" run -- ucx_info -d
	expect_no_match "without --dev-node UCX skips rxe0 (no /dev/infiniband here)" \
		info_plain 'Device: rxe0'
fi

# --- ucx_perftest --------------------------------------------------------------

# perftest NAME TL TEST [ARGS...]: server and client of one ucx_perftest.
perftest() {
	local name=$1 tl=$2 t=$3 port spid
	shift 3
	next_port port
	if ! serve "$name.srv" "$port" ns_user "$NS" "${RUN[@]}" \
		ucx_perftest -p "$port" -d rxe0:1 -x "$tl"; then
		fail "$name: the ucx_perftest server did not listen"
		show "$name.srv"
		return
	fi
	spid=$BG_PID
	capture "$name" ns_user "$NS" "${RUN[@]}" ucx_perftest 127.0.0.1 \
		-p "$port" -d rxe0:1 -x "$tl" -t "$t" "$@"
	expect_rc "ucx_perftest -x $tl -t $t $* exits 0" 0 "$name"
	expect_match "ucx_perftest -x $tl -t $t reports its final figures" \
		"$name" '^Final: +[0-9]+ '
	reap "$spid"
	expect_rc "its server exits 0" 0 "$name.srv"
}
phase rc_lat
perftest rc_lat rc_verbs am_lat -n 20000
sent_over "ucx_perftest rc_verbs am_lat" 40000
phase rc_bw
perftest rc_bw rc_verbs put_bw -D zcopy -s 65536 -n 2000
sent_over "ucx_perftest rc_verbs put_bw" 2000
phase ud_lat
perftest ud_lat ud_verbs am_lat -n 20000
sent_over "ucx_perftest ud_verbs am_lat" 40000
phase ud_bw
perftest ud_bw ud_verbs am_bw -D bcopy -s 1024 -n 20000
sent_over "ucx_perftest ud_verbs am_bw" 20000

# --- UCX over RDMA CM: its client/server example -----------------------------

EX=/usr/share/doc/libucx-dev/examples/ucp_client_server.c
if [ -r "$EX" ]; then
	gcc -O2 -o "$WORK/ucp_client_server" "$EX" -lucp -lucs ||
		die "cannot build $EX"
	chmod 755 "$WORK/ucp_client_server"
	CM=(UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_TLS=rc_verbs,ud_verbs,self
	    "${DEV[@]}")
	next_port port
	phase cm
	# Its listener is RDMA CM's, not a TCP socket: wait for its word.
	# Line-buffered: the test stops it, which would lose a full buffer.
	bg_user cs.srv ns_user "$NS" "${RUN[@]}" env "${CM[@]}" \
		UCX_LOG_LEVEL=debug stdbuf -oL "$WORK/ucp_client_server" -p "$port"
	spid=$BG_PID
	if wait_for 20 grep -q 'server is listening' "$(err cs.srv)" \
		"$(out cs.srv)"; then
		capture cs ns_user "$NS" "${RUN[@]}" env "${CM[@]}" \
			"$WORK/ucp_client_server" -a 127.0.0.1 -p "$port"
		expect_rc "ucp_client_server's client exits 0" 0 cs
		wait_for 10 grep -q 'ABCDEFGHIJKLMNO' "$(out cs.srv)" || true
		expect_match "its server got the client's message" cs.srv \
			'ABCDEFGHIJKLMNO'
		expect_match "the server took the connection through rdmacm" \
			cs.srv 'connection request on the rdmacm sockaddr transport'
		sent_over "ucp_client_server over rdmacm" 4
	else
		fail "ucp_client_server's server did not start listening"
		show cs.srv
	fi
	stop_pid "$spid"
else
	note "no $EX (libucx-dev): UCX over RDMA CM not tried"
fi

# --- MPI over UCX ------------------------------------------------------------

# mpi_check NAME DESC: mpi_pingpong's run NAME passed, on this build.
mpi_check() {
	local n
	expect_rc "$2 exits 0" 0 "$1"
	expect_match "$2: every ping-pong message came back intact" "$1" \
		'^pingpong: [0-9]+ rounds of .* 0 bad bytes$'
	n=$(grep -cE '^rank [01] allreduce: [0-9]+ longs, 0 wrong$' "$(out "$1")" || true)
	if [ "$n" -eq 2 ]; then
		pass "$2: MPI_Allreduce right on both ranks"
	else
		fail "$2: MPI_Allreduce right on $n of 2 ranks"
		show "$1"
	fi
	n=$(grep -cE "^rank [01] libibverbs: $WANT\$" "$(out "$1")" || true)
	if [ "$n" -eq 2 ]; then
		pass "$2: both ranks mapped $WANT"
	else
		fail "$2: $n of 2 ranks mapped $WANT"
		show "$1"
	fi
}

if command -v mpirun.openmpi >/dev/null && command -v mpicc.openmpi >/dev/null; then
	mpicc.openmpi -O2 -Wall -Wextra -Werror -o "$WORK/pp.ompi" \
		"$HERE/../tools/mpi_pingpong.c" || die "mpicc.openmpi failed"
	chmod 755 "$WORK/pp.ompi"
	for tls in rc_verbs,ud_verbs,self ud_verbs,self; do
		n=ompi.${tls%%,*}
		phase "$n"
		# Open MPI is not leak-clean; its leaks are not ours.
		capture "$n" ns_user "$NS" ASAN_OPTIONS=detect_leaks=0 "${RUN[@]}" \
			mpirun.openmpi -np 2 --oversubscribe --mca pml ucx \
			-x UCX_TLS="$tls" -x "${DEV[0]}" "$WORK/pp.ompi"
		mpi_check "$n" "Open MPI pml ucx, UCX_TLS=$tls"
		sent_over "Open MPI pml ucx, UCX_TLS=$tls" 400
	done
else
	note "no Open MPI (openmpi-bin, libopenmpi-dev): not tried"
fi

if command -v mpirun.mpich >/dev/null && command -v mpicc.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -Wextra -Werror -o "$WORK/pp.mpich" \
		"$HERE/../tools/mpi_pingpong.c" || die "mpicc.mpich failed"
	chmod 755 "$WORK/pp.mpich"
	for tls in rc_verbs,ud_verbs,self ud_verbs,self; do
		n=mpich.${tls%%,*}
		phase "$n"
		capture "$n" ns_user "$NS" ASAN_OPTIONS=detect_leaks=0 "${RUN[@]}" \
			env UCX_TLS="$tls" "${DEV[@]}" \
			mpirun.mpich -np 2 "$WORK/pp.mpich"
		mpi_check "$n" "MPICH ch4:ucx, UCX_TLS=$tls"
		sent_over "MPICH ch4:ucx, UCX_TLS=$tls" 400
	done
else
	note "no MPICH (mpich, libmpich-dev): not tried"
fi
finish
