# SPDX-License-Identifier: BSD-2-Clause
# Verbs mistakes whose log lines t_errors checks, on DEVICE, as a user:
#   modify  - an RC QP's INIT->RTR without IBV_QP_RQ_PSN and
#             IBV_QP_DEST_QPN and with IBV_QP_SQ_PSN: ibv_modify_qp fails
#             (EINVAL); prints "modify refused QPN";
#   deadpeer - runs `ibv_devinfo -v -d DEVICE` (another device instance,
#             another address: this one holds its own), reads its GID[0],
#             and once it has exited connects an RC QP there (timeout 8,
#             retry_cnt 1): one SEND ends in IBV_WC_RETRY_EXC_ERR; prints
#             "dead GID", "qpn QPN", then "status retry exceeded".
# Fed to /usr/bin/python3: `python3 -c "$(<errors_verbs.py)" DEVICE CASE..`.
import ipaddress
import re
import subprocess
import sys
import time

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.addr import GID, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR


def modify(qp, **kw):
    attr = QPAttr()
    mask = 0
    for name, (value, bit) in kw.items():
        setattr(attr, name, value)
        mask |= bit
    qp.modify(attr, mask)


def to_init(qp):
    modify(qp, qp_state=(e.IBV_QPS_INIT, e.IBV_QP_STATE),
           pkey_index=(0, e.IBV_QP_PKEY_INDEX), port_num=(1, e.IBV_QP_PORT),
           qp_access_flags=(e.IBV_ACCESS_LOCAL_WRITE, e.IBV_QP_ACCESS_FLAGS))


def av(dgid):
    # pyverbs reads GIDs in eight groups: 0000:...:ffff:7f75:0102.
    g = GID(ipaddress.IPv6Address(dgid).exploded)
    return AHAttr(gr=GlobalRoute(dgid=g, sgid_index=0), is_global=1,
                  port_num=1)


def case_modify(ctx, pd, cq):
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    to_init(qp)
    gid = ipaddress.IPv6Address(bytes.fromhex(
        str(ctx.query_gid(1, 0)).replace(":", "")))
    try:
        modify(qp, qp_state=(e.IBV_QPS_RTR, e.IBV_QP_STATE),
               path_mtu=(e.IBV_MTU_1024, e.IBV_QP_PATH_MTU),
               sq_psn=(0, e.IBV_QP_SQ_PSN),
               max_dest_rd_atomic=(1, e.IBV_QP_MAX_DEST_RD_ATOMIC),
               min_rnr_timer=(12, e.IBV_QP_MIN_RNR_TIMER),
               ah_attr=(av(str(gid)), e.IBV_QP_AV))
    except PyverbsRDMAError as ex:
        print(f"modify refused 0x{qp.qp_num:06x} errno {ex.error_code}",
              flush=True)
        return
    sys.exit("modify: the incomplete mask was accepted")


def case_noowner(ctx, pd, cq, dgid):
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    print(f"qpn 0x{qp.qp_num:06x}", flush=True)
    to_init(qp)
    modify(qp, qp_state=(e.IBV_QPS_RTR, e.IBV_QP_STATE),
           path_mtu=(e.IBV_MTU_1024, e.IBV_QP_PATH_MTU),
           dest_qp_num=(0x123, e.IBV_QP_DEST_QPN),
           rq_psn=(0, e.IBV_QP_RQ_PSN),
           max_dest_rd_atomic=(1, e.IBV_QP_MAX_DEST_RD_ATOMIC),
           min_rnr_timer=(12, e.IBV_QP_MIN_RNR_TIMER),
           ah_attr=(av(dgid), e.IBV_QP_AV))
    modify(qp, qp_state=(e.IBV_QPS_RTS, e.IBV_QP_STATE),
           sq_psn=(0, e.IBV_QP_SQ_PSN), timeout=(8, e.IBV_QP_TIMEOUT),
           retry_cnt=(1, e.IBV_QP_RETRY_CNT),
           rnr_retry=(1, e.IBV_QP_RNR_RETRY),
           max_rd_atomic=(1, e.IBV_QP_MAX_QP_RD_ATOMIC))
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                sg=[SGE(mr.buf, 64, mr.lkey)])
    qp.post_send(wr)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        n, wcs = cq.poll()
        if n:
            st = wcs[0].status
            if st == e.IBV_WC_RETRY_EXC_ERR:
                print("status retry exceeded", flush=True)
                return
            sys.exit(f"noowner: status {st}")
        time.sleep(0.001)
    sys.exit("noowner: no completion in 10 s")


def main():
    dev = sys.argv[1]
    with d.Context(name=dev) as ctx:
        pd = PD(ctx)
        cq = CQ(ctx, 16)
        args = sys.argv[2:]
        while args:
            case = args.pop(0)
            if case == "modify":
                case_modify(ctx, pd, cq)
            elif case == "deadpeer":
                out = subprocess.run(["ibv_devinfo", "-v", "-d", dev],
                                     check=True, capture_output=True,
                                     text=True, timeout=20).stdout
                gid = re.search(r"GID\[ *0\]:\s*([^,\s]+)", out).group(1)
                print(f"dead {gid}", flush=True)
                case_noowner(ctx, pd, cq, gid)
            else:
                sys.exit(f"unknown case {case}")


main()
