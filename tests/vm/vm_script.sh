# SPDX-License-Identifier: BSD-2-Clause
# The SCRIPT of t_vm_interop's second boot (`vm.sh cmd`; busybox sh in the
# VM, $GIDX set): kernel rxe serves ib_read_bw, ib_atomic_bw (fetch-add,
# compare-swap) and ib_send_bw -c UD to urxe clients, and runs the
# ibv_rc_pingpong, ibv_ud_pingpong and ib_send_bw -c UD clients against
# urxe's servers (re: again while urxe's next server is not up yet), then
# five ibv_rc_pingpong clients in turn against one urxe server process.
# t_vm_interop.sh parses the "VMT NAME rc=N" lines; comment lines are
# stripped before the script goes on the kernel command line (2000
# characters in base64: keep it short).
cd /tmp || exit 1
bw() { "$@" -d rxe0 -x "$GIDX" -F -n 200; }
re() { o=$1; shift; n=0; while n=$((n+1)); timeout 60 "$@" >$o 2>&1; r=$?; [ $r != 0 ] && [ $n -lt 40 ] && grep -q "connect to" $o; do sleep 1; done; return $r; }
bw ib_read_bw -p 18516 >rd 2>&1 & R=$!
bw ib_atomic_bw -p 18517 >fa 2>&1 & F=$!
bw ib_atomic_bw -A CMP_AND_SWAP -p 18518 >cs 2>&1 & S=$!
bw ib_send_bw -c UD -p 18519 >us 2>&1 & U=$!
timeout 90 ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 100 -s 4096 198.18.1.1 >pp 2>&1
C=$?; echo "VMT pp_client rc=$C"
re up ibv_ud_pingpong -d rxe0 -g "$GIDX" -n 100 -s 1024 -p 18520 198.18.1.1
D=$?; echo "VMT ud_pp_client rc=$D"
re uc ib_send_bw -d rxe0 -x "$GIDX" -c UD -F -n 200 -p 18521 198.18.1.1
E=$?; echo "VMT ud_bw_client rc=$E"
T=0; for i in 1 2 3 4 5; do re t ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 20 -s 64 -p 18522 198.18.1.1; r=$?; echo "VMT turn$i rc=$r"; [ $r = 0 ] || T=1; done
wait $R; R=$?; echo "VMT read_bw_server rc=$R"
wait $F; F=$?; echo "VMT fetch_add_server rc=$F"
wait $S; S=$?; echo "VMT cmp_swap_server rc=$S"
wait $U; U=$?; echo "VMT ud_bw_server rc=$U"
for f in pp up uc rd fa cs us; do echo "----- VMT $f"; cat $f; done
echo "----- VMT counters"; rdma statistic show link rxe0/1
[ $C$D$E$R$F$S$U$T = 00000000 ]
