# SPDX-License-Identifier: BSD-2-Clause
# The SCRIPT of t_vm_interop's third boot (`vm.sh cmd`; busybox sh in the
# VM, $GIDX set), against urxe on the packet backend: kernel rxe serves
# ibv_rc_pingpong and ib_write_bw to urxe's clients while its own clients
# of the same programs talk to urxe's servers (re: again while a server
# does not listen yet).  t_vm_interop.sh parses the "VMT NAME rc=N" lines;
# comment lines are stripped (the kernel command line holds the script).
cd /tmp || exit 1
re() { o=$1; shift; n=0; while n=$((n+1)); timeout 60 "$@" >$o 2>&1; r=$?; [ $r != 0 ] && [ $n -lt 40 ] && grep -q "connect to" $o; do sleep 1; done; return $r; }
timeout 120 ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 100 -s 4096 -p 18532 >ps 2>&1 & P=$!
timeout 120 ib_write_bw -d rxe0 -x "$GIDX" -F -n 200 -p 18533 >ws 2>&1 & W=$!
re pc ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 100 -s 4096 -p 18530 198.18.1.1
C=$?; echo "VMT pp_client rc=$C"
re wc ib_write_bw -d rxe0 -x "$GIDX" -F -n 200 -p 18531 198.18.1.1
D=$?; echo "VMT write_bw_client rc=$D"
wait $P; P=$?; echo "VMT pp_server rc=$P"
wait $W; W=$?; echo "VMT write_bw_server rc=$W"
for f in pc wc ps ws; do echo "----- VMT $f"; cat $f; done
echo "----- VMT counters"; rdma statistic show link rxe0/1
[ $C$D$P$W = 0000 ]
