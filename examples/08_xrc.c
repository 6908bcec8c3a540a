// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 8: XRC, extended reliable connection (IBA annex A14).
 *
 * With RC, a process that talks to P processes on each of N other hosts
 * needs N * P connected QPs.  XRC splits the receiving end from the
 * connection: a sending process needs one XRC_SEND QP (the "initiator",
 * INI) per remote host, and each SEND names, in the work request, the
 * XRC SRQ on that host that must receive it -- whichever process owns it.
 * On the receiving host one XRC_RECV QP (the "target", TGT) ends the
 * connection; it has no receive queue of its own and belongs to no
 * process: it lives in an XRC domain (XRCD), which processes share by
 * opening it through the same file (ibv_open_xrcd with a file
 * descriptor).  The SRQs of the domain are what receive.
 *
 *   08_xrc [-d DEV] [-g GIDX]
 *
 * One process plays both hosts: an XRC domain, two XRC SRQs (each with
 * its own CQ: "process 1" and "process 2"), a TGT QP, and an INI QP that
 * sends one message to each SRQ over the one connection.
 */
#include "common.h"

#include <fcntl.h>

#define MSG_SIZE 32

struct target {
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	uint32_t srqn;		/* what an INI names as remote_srqn */
};

/* An XRC SRQ: of a domain, with the CQ its completions go to. */
static struct target make_target(struct ibv_context *ctx, struct ibv_pd *pd,
				 struct ibv_xrcd *xrcd, struct ibv_mr *mr,
				 int index)
{
	struct target t = { .cq = ibv_create_cq(ctx, 4, NULL, NULL, 0) };
	struct ibv_srq_init_attr_ex ia = {
		.attr = { .max_wr = 2, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .xrcd = xrcd, .cq = t.cq, .pd = pd,
	};
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + index * MSG_SIZE,
			       .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (!t.cq)
		die("ibv_create_cq");
	t.srq = ibv_create_srq_ex(ctx, &ia);
	if (!t.srq)
		die("ibv_create_srq_ex");
	check(ibv_get_srq_num(t.srq, &t.srqn), "ibv_get_srq_num");
	check(ibv_post_srq_recv(t.srq, &wr, &bad), "ibv_post_srq_recv");
	return t;
}

/* RESET -> INIT: the same for both ends. */
static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = PORT_NUM };

	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "ibv_modify_qp(INIT)");
}

/* INIT -> RTR toward @peer: the TGT also takes responder attributes. */
static void to_rtr(struct ibv_qp *qp, uint32_t peer, uint32_t psn,
		   const union ibv_gid *gid, int gidx)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .dest_qp_num = peer, .rq_psn = psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = PORT_NUM,
			     .grh = { .dgid = *gid, .hop_limit = 64,
				      .sgid_index = (uint8_t)gidx } },
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	check(ibv_query_port(qp->context, PORT_NUM, &pa), "ibv_query_port");
	a.path_mtu = pa.active_mtu;
	if (qp->qp_type == IBV_QPT_XRC_RECV)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	check(ibv_modify_qp(qp, &a, mask), "ibv_modify_qp(RTR)");
}

/* RTR -> RTS: only the INI sends requests, so only it needs RTS. */
static void to_rts(struct ibv_qp *qp, uint32_t psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = psn,
				 .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7, .max_rd_atomic = 1 };

	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
	      "ibv_modify_qp(RTS)");
}

/* A SEND on the one INI QP, addressed to one SRQ of the domain. */
static void send_to_srq(struct ibv_qp *ini, struct ibv_cq *cq,
			struct ibv_mr *mr, const struct target *t,
			const char *text)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.qp_type.xrc.remote_srqn = t->srqn,
	}, *bad;
	struct ibv_wc wc;

	snprintf(mr->addr, MSG_SIZE, "%s", text);
	check(ibv_post_send(ini, &wr, &bad), "ibv_post_send");
	wait_completion(cq, &wc);
	printf("SEND \"%s\": %s\n", text, wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	char *sbuf = calloc(1, MSG_SIZE), *rbuf = calloc(2, MSG_SIZE);
	union ibv_gid gid;

	if (!pd || !scq || !sbuf || !rbuf)
		die("ibv_alloc_pd/ibv_create_cq/calloc");
	struct ibv_mr *smr = ibv_reg_mr(pd, sbuf, MSG_SIZE, 0);
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, 2 * MSG_SIZE,
					IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr)
		die("ibv_reg_mr");

	/* The domain.  fd -1: a private one; processes that share one
	 * pass the same file's descriptor instead. */
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
	if (!xrcd)
		die("ibv_open_xrcd");
	struct target t[2] = { make_target(ctx, pd, xrcd, rmr, 0),
			       make_target(ctx, pd, xrcd, rmr, 1) };
	printf("XRC domain with 2 XRC SRQs\n");

	/* The TGT QP: of the domain, no PD, no CQs, no queues. */
	struct ibv_qp_init_attr_ex tia = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = xrcd,
	};
	struct ibv_qp *tgt = ibv_create_qp_ex(ctx, &tia);
	/* The INI QP: a send queue and a send CQ, no receive side. */
	struct ibv_qp_init_attr_ex iia = {
		.qp_type = IBV_QPT_XRC_SEND, .send_cq = scq,
		.cap = { .max_send_wr = 2, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
	};
	struct ibv_qp *ini = ibv_create_qp_ex(ctx, &iia);
	if (!tgt || !ini)
		die("ibv_create_qp_ex");

	check(ibv_query_gid(ctx, PORT_NUM, o.gidx, &gid), "ibv_query_gid");
	to_init(ini);
	to_init(tgt);
	to_rtr(tgt, ini->qp_num, 0x300, &gid, o.gidx);
	to_rtr(ini, tgt->qp_num, 0, &gid, o.gidx);
	to_rts(ini, 0x300);
	printf("INI QP connected to TGT QP\n");

	send_to_srq(ini, scq, smr, &t[0], "for the first SRQ");
	send_to_srq(ini, scq, smr, &t[1], "for the second SRQ");
	for (int i = 0; i < 2; i++) {
		struct ibv_wc wc;

		/* Each message completes on its own SRQ's CQ, reporting the
		 * TGT QP it came through. */
		wait_completion(t[i].cq, &wc);
		printf("SRQ %d's CQ: %s, \"%s\" (wc.qp_num: the %s QP)\n", i,
		       wc_status_name(wc.status), rbuf + i * MSG_SIZE,
		       wc.qp_num == tgt->qp_num ? "TGT" : "wrong");
		if (wc.status != IBV_WC_SUCCESS || wc.qp_num != tgt->qp_num)
			return 1;
	}

	check(ibv_destroy_qp(ini), "ibv_destroy_qp");
	check(ibv_destroy_qp(tgt), "ibv_destroy_qp");
	for (int i = 0; i < 2; i++) {
		check(ibv_destroy_srq(t[i].srq), "ibv_destroy_srq");
		check(ibv_destroy_cq(t[i].cq), "ibv_destroy_cq");
	}
	check(ibv_close_xrcd(xrcd), "ibv_close_xrcd");
	check(ibv_dereg_mr(smr), "ibv_dereg_mr");
	check(ibv_dereg_mr(rmr), "ibv_dereg_mr");
	check(ibv_destroy_cq(scq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(sbuf);
	free(rbuf);
	return 0;
}
