# SPDX-License-Identifier: BSD-2-Clause
# The SCRIPT of t_vm_interop's second boot (`vm.sh cmd`; busybox sh in the
# VM, $GIDX set): kernel rxe serves ib_read_bw and ib_atomic_bw (fetch-add,
# compare-swap) to urxe clients, and runs the ibv_rc_pingpong client
# against urxe's server.  t_vm_interop.sh parses the "VMT NAME rc=N"
# lines; comment lines are stripped before the script goes on the kernel
# command line.
cd /tmp || exit 1
bw() { "$@" -d rxe0 -x "$GIDX" -F -n 200; }
bw ib_read_bw -p 18516 >rd 2>&1 & R=$!
bw ib_atomic_bw -p 18517 >fa 2>&1 & F=$!
bw ib_atomic_bw -A CMP_AND_SWAP -p 18518 >cs 2>&1 & S=$!
timeout 90 ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 100 -s 4096 198.18.1.1 >pp 2>&1
C=$?; echo "VMT pp_client rc=$C"
wait $R; R=$?; echo "VMT read_bw_server rc=$R"
wait $F; F=$?; echo "VMT fetch_add_server rc=$F"
wait $S; S=$?; echo "VMT cmp_swap_server rc=$S"
for f in pp rd fa cs; do echo "----- VMT $f"; cat $f; done
echo "----- VMT counters"; rdma statistic show link rxe0/1
[ $C$R$F$S = 0000 ]
