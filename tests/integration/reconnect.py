# SPDX-License-Identifier: BSD-2-Clause
# Two RC QPs of one process on DEVICE, connected to each other, reconnected
# ROUNDS - 1 times through RESET: each round the QPs go RESET -> INIT ->
# RTR -> RTS with new PSNs, A SENDs MESSAGES messages to B, one at a time
# (each completed on both sides before the next: each gets its own ACK),
# and the round ends with both QPs back in RESET.  Prints "qpn A B" once,
# then per round "round R sq_psn P" (the PSN A sent from), and "done".
# Fed to /usr/bin/python3 on stdin: `python3 - DEVICE ROUNDS MESSAGES`.
import sys
import time

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

SIZE = 256


def poll(cq, what):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                sys.exit(f"{what}: status {wcs[0].status}")
            return wcs[0]
    sys.exit(f"{what}: no completion in 10 s")


def modify(qp, **kw):
    attr = QPAttr()
    mask = 0
    for name, (value, bit) in kw.items():
        setattr(attr, name, value)
        mask |= bit
    qp.modify(attr, mask)


def connect(qp, gid, dest, sq_psn, rq_psn):
    modify(qp, qp_state=(e.IBV_QPS_INIT, e.IBV_QP_STATE),
           pkey_index=(0, e.IBV_QP_PKEY_INDEX), port_num=(1, e.IBV_QP_PORT),
           qp_access_flags=(e.IBV_ACCESS_LOCAL_WRITE, e.IBV_QP_ACCESS_FLAGS))
    ah = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=0), is_global=1,
                port_num=1)
    modify(qp, qp_state=(e.IBV_QPS_RTR, e.IBV_QP_STATE),
           path_mtu=(e.IBV_MTU_1024, e.IBV_QP_PATH_MTU),
           dest_qp_num=(dest, e.IBV_QP_DEST_QPN),
           rq_psn=(rq_psn, e.IBV_QP_RQ_PSN),
           max_dest_rd_atomic=(1, e.IBV_QP_MAX_DEST_RD_ATOMIC),
           min_rnr_timer=(12, e.IBV_QP_MIN_RNR_TIMER),
           ah_attr=(ah, e.IBV_QP_AV))
    modify(qp, qp_state=(e.IBV_QPS_RTS, e.IBV_QP_STATE),
           sq_psn=(sq_psn, e.IBV_QP_SQ_PSN), timeout=(14, e.IBV_QP_TIMEOUT),
           retry_cnt=(7, e.IBV_QP_RETRY_CNT),
           rnr_retry=(7, e.IBV_QP_RNR_RETRY),
           max_rd_atomic=(1, e.IBV_QP_MAX_QP_RD_ATOMIC))


def main():
    dev, rounds, msgs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctx = d.Context(name=dev)
    pd = PD(ctx)
    gid = ctx.query_gid(1, 0)
    cqa, cqb = CQ(ctx, 16), CQ(ctx, 16)
    cap = QPCap(max_send_wr=4, max_recv_wr=4)
    qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
    qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
    ma = MR(pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    mb = MR(pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    print("qpn", qa.qp_num, qb.qp_num, flush=True)
    for r in range(rounds):
        # PSNs far apart: a frame tells its round by its PSN.
        pa, pb = 0x100000 * (r + 1) + 0x10, 0x200000 * (r + 1) + 0x20
        print("round", r, "sq_psn", pa, flush=True)
        connect(qa, gid, qb.qp_num, pa, pb)
        connect(qb, gid, qa.qp_num, pb, pa)
        for m in range(msgs):
            ma.write(bytes([r * 16 + m]) * SIZE, SIZE)
            qb.post_recv(RecvWR(num_sge=1, sg=[SGE(mb.buf, SIZE, mb.lkey)]))
            qa.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                                sg=[SGE(ma.buf, SIZE, ma.lkey)]))
            poll(cqb, f"round {r} message {m} receive")
            poll(cqa, f"round {r} message {m} send")
            if mb.read(SIZE, 0) != bytes([r * 16 + m]) * SIZE:
                sys.exit(f"round {r} message {m}: wrong bytes")
        modify(qa, qp_state=(e.IBV_QPS_RESET, e.IBV_QP_STATE))
        modify(qb, qp_state=(e.IBV_QPS_RESET, e.IBV_QP_STATE))
    print("done", flush=True)


main()
