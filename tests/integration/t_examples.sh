#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_examples BUILD_DIR: the tutorial's programs (examples/, built into
# BUILD_DIR/examples against the system's libibverbs and librdmacm), each
# run as the ordinary user under this build's `urxe run`, as
# examples/README.md tells a student to:
#   - every lesson exits 0 and prints exactly the lines the tutorial
#     quotes (01's machine-dependent lines by pattern), nothing on stderr
#     (05: urxe's one-line explanation of the RNR failure it causes);
#   - 03 and 09 as server and client, two processes (TCP rendezvous; RDMA
#     CM on 127.0.0.1);
#   - 05 ends a SEND with IBV_WC_RNR_RETRY_EXC_ERR, then waits out a late
#     receive; its URXE_PCAP capture holds the SENDs and RNR NAKs (tshark);
#   - the error paths: a device that does not exist is named, exit 1; an
#     unknown option gives the usage, exit 2;
#   - the binaries link the system's libibverbs (not the build's) and load
#     the build's under urxe run;
#   - the student path: the installed-as-documentation sources and their
#     Makefile build with cc -std=c11 -Wall -Wextra -Werror -Wpedantic,
#     and a program built so runs;
#   - each lesson stays under 250 lines.
# Under a sanitizer build the programs run with libasan preloaded and leak
# checking on (lib.sh): a lesson that forgets to free fails here.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../examples" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
EX=$B/examples
[ -x "$EX/02_first_write" ] || skip "examples not built (URXE_EXAMPLES=OFF or no libibverbs-dev)"
# shellcheck disable=SC2119 # no namespace: the host's
assert_lib_loaded

T_LIMIT=30		# per program
URXE=$B/bin/urxe

# lesson NAME [VAR=VAL...] ARGS...: runs examples/NAME under urxe run as
# the user, output captured as NAME (or $TAG when set).
lesson() {
	local name=$1 env=()
	shift
	while [ $# -gt 0 ] && [[ $1 == *=* ]]; do env+=("$1"); shift; done
	capture "${TAG:-$name}" as_user "${env[@]}" "$URXE" run -- "$EX/$name" "$@"
}

# expect_output DESC NAME: NAME exited 0, printed exactly the text on
# stdin, and nothing on stderr (with ERR_WANT set: one line matching that
# ERE, urxe's explanation of an error the lesson causes on purpose).
expect_output() {
	local want=$WORK/$2.want
	cat >"$want"
	expect_rc "$1: exit 0" 0 "$2"
	if diff -u "$want" "$(out "$2")" >"$WORK/$2.diff"; then
		pass "$1: prints exactly the lesson's $(wc -l <"$want") lines"
	else
		fail "$1: the output differs from the lesson's"
		sed 's/^/#     | /' "$WORK/$2.diff"
	fi
	if [ -n "${ERR_WANT:-}" ]; then
		check "$1: one line on stderr, urxe's explanation" \
			test "$(wc -l <"$(err "$2")")" -eq 1
		expect_match "$1: it says why" "$2" "$ERR_WANT" err
		return
	fi
	check "$1: nothing on stderr" test ! -s "$(err "$2")"
	if [ -s "$(err "$2")" ]; then show "$2"; fi
}

# --- how they are built --------------------------------------------------------

for f in "$SRC"/[0-9][0-9]_*.c; do
	n=$(wc -l <"$f")
	check "${f##*/}: $n lines, under 250 (a lesson read in one sitting)" \
		test "$n" -lt 250
done
capture ldd_plain as_user_plain ldd "$EX/09_rdma_cm"
expect_match "09_rdma_cm links the system's libibverbs.so.1 (not the build's)" \
	ldd_plain "^[[:space:]]+libibverbs\.so\.1 => /(usr/)?lib/"
expect_match "... and the system's librdmacm.so.1" \
	ldd_plain "^[[:space:]]+librdmacm\.so\.1 => /(usr/)?lib/"
capture ldd_run as_user_plain "$URXE" run -- ldd "$EX/09_rdma_cm"
expect_match "under urxe run, 09_rdma_cm loads this build's librdmacm.so.1" \
	ldd_run "^[[:space:]]+librdmacm\.so\.1 => $B/lib/librdmacm\.so\.1 "

# --- 01: devices -----------------------------------------------------------------

lesson 01_devices
expect_rc "01_devices: exit 0" 0 01_devices
for re in '^1 RDMA device\(s\): rxe0$' '^device rxe0: 1 port\(s\)$' \
	'^  limits: max_qp [0-9]+, max_cqe [0-9]+, max_mr_size [0-9]+, max_sge [0-9]+$' \
	'^  atomics: supported$' \
	'^  port 1: state active, MTU 4096 \(max 4096\), link layer Ethernet$' \
	'^  port 1: [0-9]+ GID table entries$' \
	'^  GID\[0\]: ::ffff:127\.[0-9]+\.[0-9]+\.[0-9]+, RoCE v2$'; do
	expect_match "01_devices prints /$re/" 01_devices "$re"
done
check "01_devices prints 7 lines" test "$(wc -l <"$(out 01_devices)")" -eq 7
TAG=01_nodev lesson 01_devices -d nosuch0
expect_rc "01_devices -d nosuch0: exit 1" 1 01_nodev
expect_match "... naming the device it did not find" 01_nodev \
	'^01_devices: no RDMA device nosuch0$' err

TAG=03_usage lesson 03_send_recv -x
expect_rc "03_send_recv -x: exit 2" 2 03_usage
expect_match "... with its usage" 03_usage \
	'^usage: 03_send_recv \[-d DEV\] \[-g GIDX\] \[-p PORT\] \[SERVER\]$' err

# --- 02: the first RDMA WRITE ---------------------------------------------------

lesson 02_first_write
expect_output 02_first_write 02_first_write <<'EOF'
QPs A and B connected (RC, state RTS)
RDMA WRITE of 21 bytes completed: IBV_WC_SUCCESS
remote buffer now reads: hello, remote memory
EOF

# --- 03: SEND/RECV, two processes -----------------------------------------------

next_port port
if serve 03_srv "$port" as_user "$URXE" run -- "$EX/03_send_recv" -p "$port"; then
	spid=$BG_PID
	TAG=03_cli lesson 03_send_recv -p "$port" 127.0.0.1
	crc=$RC
	reap "$spid"
	expect_output "03_send_recv (server)" 03_srv <<EOF
server: waiting for a client on TCP port $port
server: connected to the client's QP
server: received 5 bytes, immediate data 0x1234: "ping"
server: sent "pong" with immediate data 0x5678: IBV_WC_SUCCESS
EOF
	RC=$crc
	expect_output "03_send_recv (client)" 03_cli <<'EOF'
client: connected to the server's QP
client: sent "ping" with immediate data 0x1234: IBV_WC_SUCCESS
client: received 5 bytes, immediate data 0x5678: "pong"
EOF
else
	reap "$BG_PID"
	fail "03_send_recv: the server did not listen on TCP $port"
	show 03_srv
fi

# --- 04: READ and atomics ------------------------------------------------------

lesson 04_read_atomic
expect_output 04_read_atomic 04_read_atomic <<'EOF'
RDMA READ of 32 bytes: IBV_WC_SUCCESS
  read from B: "data that lives in B"
B's counter starts at 100
FETCH_AND_ADD 5: IBV_WC_SUCCESS
  returned 100, B's counter now 105
COMPARE_AND_SWAP 105 -> 500: IBV_WC_SUCCESS
  returned 105 (equal: swapped), B's counter now 500
COMPARE_AND_SWAP 105 -> 7: IBV_WC_SUCCESS
  returned 500 (not equal: not swapped), B's counter now 500
EOF

# --- 05: RNR, with a capture -----------------------------------------------------

mkdir -m 1777 "$WORK/cap"
lesson 05_rnr "URXE_PCAP=$WORK/cap/rnr.pcap"
ERR_WANT='^urxe: warning: rxe0: QP 0x[0-9a-f]+ moved to ERR: RNR retry exceeded \(the peer had no receive posted\) at PSN [0-9]+, peer QP 0x[0-9a-f]+: post receives before the peer sends, or raise rnr_retry \(7: forever\)$' \
expect_output 05_rnr 05_rnr <<'EOF'
part 1: rnr_retry 0, no receive posted
  SEND completed: IBV_WC_RNR_RETRY_EXC_ERR
  the sender's QP is now in state ERR
part 2: rnr_retry 7 (forever), the receive posted 200 ms late
  after 200 ms: no completion yet, the sender is still retrying
  SEND completed: IBV_WC_SUCCESS
  RECV completed: IBV_WC_SUCCESS
  the receiver got: "are you ready?"
EOF
if ! command -v tshark >/dev/null; then
	note "SKIP 05_rnr's capture check: no tshark"
else
	# The process records each packet as sent and as received: a SEND
	# (opcode 4, SEND_ONLY) and an RNR NAK (ACK, opcode 17, whose AETH
	# syndrome's top bits say RNR, with the timer, 12, of min_rnr_timer).
	tshark -r "$WORK/cap/rnr.pcap" -Y infiniband -T fields \
		-e infiniband.bth.opcode -e infiniband.aeth.syndrome.opcode \
		-e infiniband.aeth.syndrome.timer \
		>"$WORK/out/rnr.fields" 2>"$WORK/out/rnr.tshark" || true
	sends=$(awk '$1 == 4' "$WORK/out/rnr.fields" | wc -l)
	naks=$(awk '$1 == 17 && $2 == 1 && $3 == 12' "$WORK/out/rnr.fields" | wc -l)
	note "05_rnr's capture: $(wc -l <"$WORK/out/rnr.fields") RoCE frames, $sends SEND_ONLY, $naks RNR NAKs"
	check "05_rnr's capture holds SEND_ONLY frames" test "$sends" -gt 0
	# Part 1's one NAK and part 2's, every 0.64 ms or so for 200 ms.
	check "05_rnr's capture holds RNR NAKs with timer 12 (more than 2)" \
		test "$naks" -gt 2
fi

# --- 06 to 08 --------------------------------------------------------------------

lesson 06_ud_multicast
expect_output 06_ud_multicast 06_ud_multicast <<'EOF'
SEND "one datagram for receiver 1": IBV_WC_SUCCESS
  receiver 1 got 104 bytes (40 of GRH): "one datagram for receiver 1"
receivers 1 and 2 attached to group 239.255.0.1
SEND "one datagram for the group": IBV_WC_SUCCESS
  receiver 1 got 104 bytes (40 of GRH): "one datagram for the group"
  receiver 2 got 104 bytes (40 of GRH): "one datagram for the group"
EOF
grp=239.255.$((RANDOM % 256)).$((1 + RANDOM % 254))
TAG=06_group lesson 06_ud_multicast -G "$grp"
expect_rc "06_ud_multicast -G $grp: exit 0" 0 06_group
expect_match "... both receivers get the group's datagram" 06_group \
	"^receivers 1 and 2 attached to group $grp\$"
check "... a copy each" test "$(grep -c '"one datagram for the group"$' "$(out 06_group)")" -eq 2

lesson 07_srq
expect_output 07_srq 07_srq <<'EOF'
SRQ with 6 receive buffers, limit armed at 4
receiver QP 0: IBV_WC_SUCCESS, SRQ buffer 0: "hello from sender 0"
receiver QP 1: IBV_WC_SUCCESS, SRQ buffer 1: "hello from sender 1"
receiver QP 2: IBV_WC_SUCCESS, SRQ buffer 2: "hello from sender 2"
async event: SRQ limit reached
EOF

lesson 08_xrc
expect_output 08_xrc 08_xrc <<'EOF'
XRC domain with 2 XRC SRQs
INI QP connected to TGT QP
SEND "for the first SRQ": IBV_WC_SUCCESS
SEND "for the second SRQ": IBV_WC_SUCCESS
SRQ 0's CQ: IBV_WC_SUCCESS, "for the first SRQ" (wc.qp_num: the TGT QP)
SRQ 1's CQ: IBV_WC_SUCCESS, "for the second SRQ" (wc.qp_num: the TGT QP)
EOF

# --- 09: RDMA CM, two processes --------------------------------------------------

next_port port
bg_user 09_srv as_user "$URXE" run -- "$EX/09_rdma_cm" -p "$port"
spid=$BG_PID
if wait_for 20 grep -q '^server: listening' "$(out 09_srv)"; then
	TAG=09_cli lesson 09_rdma_cm -p "$port" 127.0.0.1
	crc=$RC
	reap "$spid"
	expect_output "09_rdma_cm (server)" 09_srv <<EOF
server: listening on port $port
server: a connection request
server: accepted
server: received "hello through the RDMA CM": IBV_WC_SUCCESS
server: sent "hello back": IBV_WC_SUCCESS
server: disconnected
EOF
	RC=$crc
	expect_output "09_rdma_cm (client)" 09_cli <<EOF
client: connected to 127.0.0.1 port $port
client: sent "hello through the RDMA CM": IBV_WC_SUCCESS
client: received "hello back": IBV_WC_SUCCESS
client: disconnected
EOF
else
	stop_pid "$spid"
	fail "09_rdma_cm: the server never said it listens"
	show 09_srv
fi

# --- the student path: the Makefile ------------------------------------------------

mkdir "$WORK/student"
cp "$SRC"/*.c "$SRC"/common.h "$SRC"/Makefile "$WORK/student/"
capture make make -C "$WORK/student" \
	CFLAGS="-Wall -Wextra -Werror -Wpedantic -O2"
expect_rc "make (cc -std=c11 -Wall -Wextra -Werror -Wpedantic ... -libverbs)" 0 make
n=$(find "$WORK/student" -maxdepth 1 -type f -perm -u+x | wc -l)
check "make built the 9 programs ($n)" test "$n" -eq 9
expect_match "make compiled with -std=c11 and linked -libverbs" make \
	'-std=c11 .*-o 02_first_write 02_first_write\.c -libverbs$'
chmod -R a+rX "$WORK/student"
capture student_02 as_user "$URXE" run -- "$WORK/student/02_first_write"
expect_output "the student's 02_first_write" student_02 <<'EOF'
QPs A and B connected (RC, state RTS)
RDMA WRITE of 21 bytes completed: IBV_WC_SUCCESS
remote buffer now reads: hello, remote memory
EOF

finish
