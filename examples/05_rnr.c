// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 5: what RNR looks like.
 *
 * A SEND needs a receive work request waiting at the other end (lesson 3).
 * When an RC responder has none, it does not drop the message: it answers
 * with an RNR NAK ("receiver not ready", IBA 9.7.5.2.8) that tells the
 * requester how long to wait -- the responder's min_rnr_timer, set at RTR
 * (12 means 0.64 ms; 0 means the longest, 655 ms).  The requester then
 * sends again, at most rnr_retry times (set at RTS; 7 means forever).
 * When the retries run out, the SEND completes with
 * IBV_WC_RNR_RETRY_EXC_ERR and the requester's QP goes to the error state.
 *
 *   05_rnr [-d DEV] [-g GIDX]
 *
 * Part 1: rnr_retry 0 and no receive ever posted: the sender gives up at
 *         the first RNR NAK.
 * Part 2: rnr_retry 7 and the receive posted 200 ms late: the sender keeps
 *         trying, and the SEND succeeds once the receive is there.
 * To see the RNR NAKs on the wire, capture UDP port 4791 (tcpdump,
 * Wireshark: ACKs whose AETH syndrome says RNR), or under urxe set
 * URXE_PCAP=rnr.pcap.
 */
#include "common.h"

#include <unistd.h>

#define MSG "are you ready?"

struct pair {
	struct ibv_qp *sender, *receiver;
};

static struct pair make_pair(struct ibv_pd *pd, struct ibv_cq *cq, int gidx,
			     int rnr_retry)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct pair p = { ibv_create_qp(pd, &ia), ibv_create_qp(pd, &ia) };

	if (!p.sender || !p.receiver)
		die("ibv_create_qp");
	struct endpoint es = local_endpoint(p.sender, gidx, 0x10);
	struct endpoint er = local_endpoint(p.receiver, gidx, 0x20);
	/* Only the sender's rnr_retry matters: the receiver sends nothing
	 * but acknowledgements. */
	rc_connect(p.sender, gidx, es.psn, &er, rnr_retry);
	rc_connect(p.receiver, gidx, er.psn, &es, 7);
	return p;
}

static void post_send(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = sizeof(MSG), .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	check(ibv_post_send(qp, &wr, &bad), "ibv_post_send");
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = sizeof(MSG), .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	check(ibv_post_recv(qp, &wr, &bad), "ibv_post_recv");
}

static const char *qp_state_name(struct ibv_qp *qp)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	check(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), "ibv_query_qp");
	return a.qp_state <= IBV_QPS_ERR ? names[a.qp_state] : "unknown";
}

static void destroy_pair(struct pair p)
{
	check(ibv_destroy_qp(p.sender), "ibv_destroy_qp");
	check(ibv_destroy_qp(p.receiver), "ibv_destroy_qp");
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	char *sbuf = calloc(1, sizeof(MSG)), *rbuf = calloc(1, sizeof(MSG));
	struct ibv_wc wc;

	if (!pd || !cq || !sbuf || !rbuf)
		die("ibv_alloc_pd/ibv_create_cq/calloc");
	strcpy(sbuf, MSG);
	struct ibv_mr *smr = ibv_reg_mr(pd, sbuf, sizeof(MSG), 0);
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, sizeof(MSG),
					IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr)
		die("ibv_reg_mr");

	printf("part 1: rnr_retry 0, no receive posted\n");
	struct pair p = make_pair(pd, cq, o.gidx, 0);
	post_send(p.sender, smr);
	wait_completion(cq, &wc);
	printf("  SEND completed: %s\n", wc_status_name(wc.status));
	printf("  the sender's QP is now in state %s\n",
	       qp_state_name(p.sender));
	if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
		return 1;
	destroy_pair(p);

	printf("part 2: rnr_retry 7 (forever), the receive posted 200 ms late\n");
	p = make_pair(pd, cq, o.gidx, 7);
	post_send(p.sender, smr);
	usleep(200 * 1000);
	/* Meanwhile the receiver has answered RNR NAK after RNR NAK, and
	 * the SEND waits: there is no completion yet. */
	if (ibv_poll_cq(cq, 1, &wc) != 0) {
		printf("  unexpected: a completion before the receive was posted\n");
		return 1;
	}
	printf("  after 200 ms: no completion yet, the sender is still retrying\n");
	post_recv(p.receiver, rmr);
	/* Two completions now, the RECV's and the SEND's (whose ACK leaves
	 * after the data is placed), in whatever order they come. */
	enum ibv_wc_status send_st = IBV_WC_GENERAL_ERR, recv_st = send_st;
	for (int i = 0; i < 2; i++) {
		wait_completion(cq, &wc);
		if (wc.opcode == IBV_WC_SEND)
			send_st = wc.status;
		else
			recv_st = wc.status;
	}
	printf("  SEND completed: %s\n", wc_status_name(send_st));
	printf("  RECV completed: %s\n", wc_status_name(recv_st));
	if (send_st != IBV_WC_SUCCESS || recv_st != IBV_WC_SUCCESS)
		return 1;
	printf("  the receiver got: \"%s\"\n", rbuf);
	destroy_pair(p);

	check(ibv_dereg_mr(smr), "ibv_dereg_mr");
	check(ibv_dereg_mr(rmr), "ibv_dereg_mr");
	check(ibv_destroy_cq(cq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(sbuf);
	free(rbuf);
	return 0;
}
