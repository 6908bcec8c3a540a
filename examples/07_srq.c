// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 7: a shared receive queue (SRQ).
 *
 * Each RC QP of lesson 3 had its own receive queue, which must always
 * hold enough buffers for whatever its peer may send: with a thousand
 * connections, a thousand queues of buffers mostly sitting idle.  An SRQ
 * is one pool of receive buffers that many QPs draw from: a QP created
 * with .srq set has no receive queue of its own, ibv_post_srq_recv()
 * fills the pool, and each completion names the QP the message came in
 * on (wc.qp_num).
 *
 * An SRQ can also warn before it runs dry: armed with a limit
 * (ibv_modify_srq, IBV_SRQ_LIMIT), it raises the asynchronous event
 * IBV_EVENT_SRQ_LIMIT_REACHED once fewer buffers than that remain, and
 * disarms itself: time to post more.
 *
 *   07_srq [-d DEV] [-g GIDX]
 *
 * Three senders, each connected to its own receiver QP; the three
 * receiver QPs share one SRQ of six buffers, armed at a limit of four.
 */
#include "common.h"

#include <poll.h>

#define NQP 3
#define NBUF 6
#define LIMIT 4
#define MSG_SIZE 32

static struct ibv_srq *make_srq(struct ibv_pd *pd, struct ibv_mr *mr)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = NBUF,
						  .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &ia);

	if (!srq)
		die("ibv_create_srq");
	for (int i = 0; i < NBUF; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)mr->addr + i * MSG_SIZE,
			.length = MSG_SIZE, .lkey = mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		check(ibv_post_srq_recv(srq, &wr, &bad), "ibv_post_srq_recv");
	}
	/* Arm the limit: an event once fewer than LIMIT buffers remain. */
	struct ibv_srq_attr sa = { .srq_limit = LIMIT };
	check(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "ibv_modify_srq");
	return srq;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			      struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.srq = srq,	/* NULL: a receive queue of its own */
		.cap = { .max_send_wr = 2, .max_recv_wr = srq ? 0 : 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	return qp;
}

static void send_text(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		      const char *text)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	snprintf(mr->addr, MSG_SIZE, "%s", text);
	check(ibv_post_send(qp, &wr, &bad), "ibv_post_send");
	wait_completion(cq, &wc);
	if (wc.status != IBV_WC_SUCCESS) {
		printf("SEND: %s\n", wc_status_name(wc.status));
		exit(1);
	}
}

/* Async events come through the context's async_fd; poll() bounds the
 * wait.  Each event taken must be acknowledged. */
static void wait_limit_event(struct ibv_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&pfd, 1, WAIT_SECONDS * 1000) != 1) {
		printf("no SRQ limit event\n");
		exit(1);
	}
	check(ibv_get_async_event(ctx, &ev), "ibv_get_async_event");
	printf("async event: %s\n", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED)
		exit(1);
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	char *rbuf = calloc(NBUF, MSG_SIZE), *sbuf = calloc(NQP, MSG_SIZE);
	struct ibv_qp *sender[NQP], *receiver[NQP];
	struct ibv_mr *smr[NQP];

	if (!pd || !scq || !rcq || !rbuf || !sbuf)
		die("ibv_alloc_pd/ibv_create_cq/calloc");
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, NBUF * MSG_SIZE,
					IBV_ACCESS_LOCAL_WRITE);
	if (!rmr)
		die("ibv_reg_mr");
	struct ibv_srq *srq = make_srq(pd, rmr);
	printf("SRQ with %d receive buffers, limit armed at %d\n", NBUF, LIMIT);

	for (int i = 0; i < NQP; i++) {
		sender[i] = make_qp(pd, scq, NULL);
		receiver[i] = make_qp(pd, rcq, srq);
		smr[i] = ibv_reg_mr(pd, sbuf + i * MSG_SIZE, MSG_SIZE, 0);
		if (!smr[i])
			die("ibv_reg_mr");
		struct endpoint es = local_endpoint(sender[i], o.gidx, 0x100);
		struct endpoint er = local_endpoint(receiver[i], o.gidx, 0x200);
		rc_connect(sender[i], o.gidx, es.psn, &er, 7);
		rc_connect(receiver[i], o.gidx, er.psn, &es, 7);
	}

	/* One message per sender, one at a time: each takes the SRQ's next
	 * buffer, whichever QP it arrives on. */
	for (int i = 0; i < NQP; i++) {
		char text[MSG_SIZE];
		struct ibv_wc wc;
		int q;

		snprintf(text, sizeof(text), "hello from sender %d", i);
		send_text(sender[i], scq, smr[i], text);
		wait_completion(rcq, &wc);
		for (q = 0; q < NQP && receiver[q]->qp_num != wc.qp_num; q++)
			;
		printf("receiver QP %d: %s, SRQ buffer %llu: \"%s\"\n", q,
		       wc_status_name(wc.status), (unsigned long long)wc.wr_id,
		       rbuf + wc.wr_id * MSG_SIZE);
		if (wc.status != IBV_WC_SUCCESS || q != i)
			return 1;
	}
	/* Six buffers less three: three left, fewer than four. */
	wait_limit_event(ctx);

	for (int i = 0; i < NQP; i++) {
		check(ibv_destroy_qp(sender[i]), "ibv_destroy_qp");
		check(ibv_destroy_qp(receiver[i]), "ibv_destroy_qp");
		check(ibv_dereg_mr(smr[i]), "ibv_dereg_mr");
	}
	/* The SRQ goes after the QPs that use it (else EBUSY). */
	check(ibv_destroy_srq(srq), "ibv_destroy_srq");
	check(ibv_dereg_mr(rmr), "ibv_dereg_mr");
	check(ibv_destroy_cq(scq), "ibv_destroy_cq");
	check(ibv_destroy_cq(rcq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(rbuf);
	free(sbuf);
	return 0;
}
