// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 2: the first RDMA WRITE.  One process, two queue pairs (QPs)
 * connected to each other, one write from A's memory into B's.
 *
 * The objects, in the order they are made:
 *   context  the open device (lesson 1)
 *   PD       a protection domain: QPs and memory regions of one PD may
 *            work together, those of different PDs may not
 *   MR       a memory region: a buffer registered with the device, which
 *            pins it and gives it an lkey (for local use) and an rkey (a
 *            remote peer's permission to access it)
 *   CQ       a completion queue: where finished work requests report
 *   QP       a queue pair: a send queue and a receive queue; RC (reliable
 *            connected) QPs are connected one to one, like TCP sockets,
 *            and the device acknowledges and retransmits by itself
 *
 * An RDMA WRITE puts bytes straight into the remote buffer: B's program
 * takes no part (no receive is posted, B's CPU is not told).  A needs
 * B's buffer address and rkey; here they are in the same process, in
 * lesson 3 they travel between processes.
 *
 *   02_first_write [-d DEV] [-g GIDX]
 */
#include "common.h"

#define A_PSN 0x1000		/* the first packet sequence number of A... */
#define B_PSN 0x2000		/* ...and of B (any 24-bit values) */

static const char message[] = "hello, remote memory";

/*
 * A QP starts in RESET and moves RESET -> INIT -> RTR -> RTS through
 * ibv_modify_qp(); each step names the attributes it sets in a mask.
 *   INIT: which port, and what the remote side may do to this QP's
 *         memory (here: write into it);
 *   RTR (ready to receive): who the peer is (its GID in the address
 *         vector, its QP number), the path MTU, and the PSN the first
 *         packet from the peer will carry;
 *   RTS (ready to send): this QP's own first PSN, and how long and how
 *         often to retry when no acknowledgement comes.
 */
static void connect_qp(struct ibv_qp *qp, uint32_t my_psn, uint32_t peer_qpn,
		       uint32_t peer_psn, const union ibv_gid *peer_gid,
		       int gidx)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;

	check(ibv_query_port(qp->context, PORT_NUM, &pa), "ibv_query_port");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT_NUM;
	a.pkey_index = 0;		/* partition: the default one */
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "ibv_modify_qp(INIT)");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;	/* READs/atomics it serves at once */
	a.min_rnr_timer = 12;		/* lesson 5 */
	/* On RoCE the address vector is always "global": a GRH (here the
	 * IP header) with source GID index @gidx and the peer's GID. */
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = PORT_NUM;
	a.ah_attr.grh.dgid = *peer_gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER), "ibv_modify_qp(RTR)");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;		/* ACK timeout 4.096 us * 2^14 = 67 ms */
	a.retry_cnt = 7;	/* resends after a timeout */
	a.rnr_retry = 7;	/* lesson 5 */
	a.max_rd_atomic = 1;	/* READs/atomics it may have outstanding */
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
	      "ibv_modify_qp(RTS)");
}

static struct ibv_qp *create_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		/* at most 4 work requests queued per direction, 1 SGE each */
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	return qp;
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	union ibv_gid gid;
	char *src = calloc(1, sizeof(message)), *dst = calloc(1, sizeof(message));
	struct ibv_wc wc;

	if (!pd)
		die("ibv_alloc_pd");
	if (!src || !dst)
		die("calloc");
	/* 8 entries: enough for every completion this program can get. */
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");

	/* A's buffer is only read by its own device: no access flags.  B's
	 * may be written from the network: REMOTE_WRITE (which needs
	 * LOCAL_WRITE too, as the device writes it). */
	memcpy(src, message, sizeof(message));
	struct ibv_mr *src_mr = ibv_reg_mr(pd, src, sizeof(message), 0);
	struct ibv_mr *dst_mr = ibv_reg_mr(pd, dst, sizeof(message),
					   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !dst_mr)
		die("ibv_reg_mr");

	struct ibv_qp *a = create_rc_qp(pd, cq), *b = create_rc_qp(pd, cq);

	/* Both QPs live here, so both use this process's GID: A sends to
	 * itself over the network stack, as it would to another host. */
	check(ibv_query_gid(ctx, PORT_NUM, o.gidx, &gid), "ibv_query_gid");
	connect_qp(a, A_PSN, b->qp_num, B_PSN, &gid, o.gidx);
	connect_qp(b, B_PSN, a->qp_num, A_PSN, &gid, o.gidx);
	printf("QPs A and B connected (RC, state RTS)\n");

	/* The work request: gather from A's buffer (scatter/gather element:
	 * address, length, lkey), write at B's address with B's rkey.
	 * SIGNALED asks for a completion when it is done. */
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = sizeof(message),
		.lkey = src_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst,
			     .rkey = dst_mr->rkey },
	}, *bad;
	check(ibv_post_send(a, &wr, &bad), "ibv_post_send");

	/* On RC, the completion comes once B's device has acknowledged:
	 * the data is in B's memory by then. */
	wait_completion(cq, &wc);
	printf("RDMA WRITE of %zu bytes completed: %s\n", sizeof(message),
	       wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_WRITE)
		return 1;
	printf("remote buffer now reads: %s\n", dst);
	if (memcmp(dst, message, sizeof(message)))
		return 1;

	/* Tear down children before parents: QPs and MRs, then the CQ and
	 * the PD (a PD still in use refuses with EBUSY), then the device. */
	check(ibv_destroy_qp(a), "ibv_destroy_qp");
	check(ibv_destroy_qp(b), "ibv_destroy_qp");
	check(ibv_dereg_mr(src_mr), "ibv_dereg_mr");
	check(ibv_dereg_mr(dst_mr), "ibv_dereg_mr");
	check(ibv_destroy_cq(cq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(src);
	free(dst);
	return 0;
}
