// SPDX-License-Identifier: BSD-2-Clause
/*
 * RESET means reset (IBA 10.3.1; kernel rxe's rxe_qp_reset): a connected
 * RC pair, reconnected through RESET with new PSNs, starts over on the
 * wire — the first ACK after each reconnect carries MSN 1 — and keeps
 * nothing of the old connection: no message half received (into a
 * receive WQE, an SRQ WQE or a WRITE's region), no timers, retries, RTT
 * estimate or rewind.  Engines driven deterministically, as test_engine
 * (engine_wire.h), with every packet logged.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>
#include <urxe/wire.h>

#include "engine_wire.h"
#include "testutil.h"

#include "engine_int.h"

struct node {
	struct urxe_engine *eng;
	union ibv_gid gid;
	struct urxe_eqp qp;
	struct urxe_cq_ring cq;
	struct urxe_mem mem;
	uint8_t *buf;
};

static struct node nodes[2];
static struct urxe_esrq srq;
static bool with_srq;

static void node_init(struct node *nd, unsigned int slot)
{
	memset(nd, 0, sizeof(*nd));
	wire_gid_v4(&nd->gid, 127, 118, 1, (uint8_t)(slot + 1));
	nd->eng = wire_engine(slot, &nd->gid, NULL);
	nd->buf = calloc(1, 1 << 20);
	wire_mem_add(nd->eng, &nd->mem, nd->buf, 1 << 20, 7, WIRE_ACCESS_ALL);
	wire_qp_add(nd->eng, &nd->qp, &nd->cq, IBV_QPT_RC, 7,
		    &(struct wire_qp_shape){ .cqe = 256, .depth = 64,
					     .max_sge = 4, .max_inline = 64 });
}

/* @a to RTS towards @b, sending from @sq_psn and expecting @rq_psn. */
static void connect(struct node *a, struct node *b, uint32_t sq_psn,
		    uint32_t rq_psn)
{
	struct urxe_qp_attr at;

	wire_rc_attr(&at, b->qp.qpn, &a->gid, &b->gid);
	at.sq_psn = sq_psn;
	at.rq_psn = rq_psn;
	at.access = a->mem.access;
	at.min_rnr_timer = 1;
	ck_assert_int_eq(urxe_engine_qp_modify(&a->qp, &at, WIRE_RC_MASK |
			 IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER), 0);
}

/* Both QPs through RESET and back to RTS, with PSNs of round @round. */
static void reconnect(unsigned int round)
{
	struct urxe_qp_attr at = { .state = IBV_QPS_RESET };
	uint32_t p0 = (0xfffff0u + round * 0x10101u) & URXE_PSN_MASK;
	uint32_t p1 = (0x123456u + round * 0x777u) & URXE_PSN_MASK;

	if (round) {
		ck_assert_int_eq(urxe_engine_qp_modify(&nodes[0].qp, &at,
						       IBV_QP_STATE), 0);
		ck_assert_int_eq(urxe_engine_qp_modify(&nodes[1].qp, &at,
						       IBV_QP_STATE), 0);
		/* What was on the wire belongs to the old connection. */
		wire_n = 0;
	}
	connect(&nodes[0], &nodes[1], p0, p1);
	connect(&nodes[1], &nodes[0], p1, p0);
}

static void setup(void)
{
	wire_setup(true);
	node_init(&nodes[0], 1);
	node_init(&nodes[1], 2);
	if (with_srq) {
		memset(&srq, 0, sizeof(srq));
		srq.eng = nodes[1].eng;
		srq.pd = 7;
		ck_assert_int_eq(urxe_wq_init(&srq.rq, 16, 1, 0,
					      sizeof(struct urxe_recv_wqe)), 0);
		/* Before any traffic: as good as before qp_add. */
		ck_assert_int_eq(urxe_engine_srq_attach(&nodes[1].qp, &srq), 0);
	}
	reconnect(0);
}

static void teardown(void)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct node *nd = &nodes[i];

		wire_qp_del(nd->eng, &nd->qp, &nd->cq);
		urxe_engine_mem_remove(nd->eng, &nd->mem);
		urxe_engine_destroy(nd->eng);
		free(nd->buf);
	}
	if (with_srq) {
		urxe_engine_srq_detach(&nodes[1].qp);
		urxe_wq_fini(&srq.rq);
	}
	wire_teardown();
}

static void srq_setup(void)
{
	with_srq = true;
	setup();
}

static void srq_teardown(void)
{
	teardown();
	with_srq = false;
}

static void pump(void)
{
	struct urxe_engine *eng[2] = { nodes[0].eng, nodes[1].eng };

	wire_pump(eng, 2, 10000);
}

static void post_recv(uint64_t id, uint64_t off, uint32_t len)
{
	struct urxe_wq *q = with_srq ? &srq.rq : &nodes[1].qp.rq;
	uint32_t p = atomic_load(&q->prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(q, p);

	r->wr_id = id;
	r->num_sge = 1;
	r->length = len;
	r->sge[0].addr = nodes[1].mem.iova + off;
	r->sge[0].length = len;
	r->sge[0].lkey = nodes[1].mem.lkey;
	atomic_store(&q->prod, p + 1);
}

/*
 * Node 0 posts @op of @len bytes at @off (a WRITE goes to offset 64 KiB
 * of node 1's region) and sends its first packet, which takes 10 us.
 */
static struct urxe_send_wqe *send(enum ibv_wr_opcode op, uint64_t off,
				  uint32_t len)
{
	struct urxe_send_wqe *w = wire_send_wqe(&nodes[0].qp, &nodes[0].mem,
						op, off, len);

	w->remote_addr = nodes[1].mem.iova + 65536;
	w->rkey = nodes[1].mem.rkey;
	atomic_store(&nodes[0].qp.sq.prod, atomic_load(&nodes[0].qp.sq.prod) + 1);
	urxe_engine_kick(&nodes[0].qp);
	urxe_engine_progress(nodes[0].eng);
	fake_now += 10000;		/* an RTT to measure */
	return w;
}

static struct ibv_wc poll_one(struct node *nd)
{
	struct ibv_wc wc;

	ck_assert_int_eq(urxe_cq_pop(&nd->cq, 1, &wc), 1);
	return wc;
}

static void cq_empty(struct node *nd)
{
	struct ibv_wc wc;

	ck_assert_int_eq(urxe_cq_pop(&nd->cq, 1, &wc), 0);
}

/*
 * The MSN of the first ACK node 1 sent from log entry @from on (-1: none).
 * An ACK is opcode 0x11 (RC Acknowledge) with the AETH right after the BTH.
 */
static int first_ack_msn(unsigned int from)
{
	unsigned int i;

	for (i = from; i < nlog; i++) {
		const uint8_t *p = sent_log[i].data;

		if (memcmp(&sent_log[i].src, &nodes[1].gid, sizeof(union ibv_gid)))
			continue;
		if (p[0] == 0x11)
			return (int)urxe_get24(p + URXE_BTH_LEN + 1);
	}
	return -1;
}

/* One single-packet SEND, acknowledged with MSN @msn; both complete. */
static void send_one(uint64_t id, uint32_t msn)
{
	unsigned int mark = nlog;
	struct ibv_wc wc;

	wire_fill(nodes[0].buf, 200, (uint8_t)id);
	post_recv(id, 4096 * id, 200);
	send(IBV_WR_SEND, 0, 200);
	pump();
	ck_assert_int_eq(first_ack_msn(mark), (int)msn);
	wc = poll_one(&nodes[1]);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, id);
	ck_assert_uint_eq(wc.byte_len, 200);
	ck_assert(!memcmp(nodes[1].buf + 4096 * id, nodes[0].buf, 200));
	ck_assert_int_eq(poll_one(&nodes[0]).status, IBV_WC_SUCCESS);
}

/* Reconnected twice: each connection's ACKs count messages from 1. */
START_TEST(rc_reset_msn)
{
	unsigned int round, i;

	for (round = 0; round < 3; round++) {
		if (round)
			reconnect(round);
		for (i = 1; i <= 3; i++)
			send_one(10 * round + i, i);
	}
}
END_TEST

/*
 * Everything per connection, as it must be after a modify to RESET,
 * whatever the QP was doing: the requester's, the completer's and the
 * responder's state (IBA 10.3.1: RESET empties the queues; kernel rxe's
 * rxe_qp_reset clears the same).
 */
static void assert_reset(const struct urxe_eqp *qp)
{
	ck_assert_int_eq(qp->attr.state, IBV_QPS_RESET);
	/* requester */
	ck_assert_uint_eq(qp->req.sq_next, atomic_load(&qp->sq.prod));
	ck_assert_uint_eq(qp->req.rd_outstanding, 0);
	ck_assert_uint_eq(qp->req.unacked_pkts, 0);
	ck_assert(!qp->req.resending);
	ck_assert_uint_eq(qp->req.resp_pkts, 0);
	ck_assert(!atomic_load(&qp->req.streaming));
	/* completer */
	ck_assert_uint_eq(qp->comp.sq_comp, atomic_load(&qp->sq.cons));
	ck_assert_uint_eq(qp->comp.sq_comp, qp->req.sq_next);
	ck_assert_uint_eq(qp->comp.retx_deadline, 0);
	ck_assert_uint_eq(qp->comp.rnr_deadline, 0);
	ck_assert(!qp->comp.rtt_active);
	ck_assert_uint_eq(qp->comp.srtt_ns, 0);
	ck_assert_uint_eq(qp->comp.rto_ns, 0);
	ck_assert_uint_eq(qp->comp.retries_left, qp->attr.retry_cnt);
	ck_assert_uint_eq(qp->comp.rnr_left, qp->attr.rnr_retry);
	/* responder */
	ck_assert_uint_eq(qp->resp.msn, 0);
	ck_assert(!qp->resp.rq_active);
	ck_assert_uint_eq(qp->resp.rq_off, 0);
	/* An SRQ WQE taken stays held (from offset 0) for the next message. */
	ck_assert(!qp->srq_held || qp->srq);
	ck_assert_ptr_null(qp->resp.wr_mem);
	ck_assert_uint_eq(qp->resp.wr_resid, 0);
	ck_assert(!qp->resp.ack_pending);
	ck_assert(!qp->resp.nak_seq_sent);
	ck_assert_uint_eq(qp->resp.rd_res_next, 0);
	if (!qp->srq)
		ck_assert_uint_eq(atomic_load(&qp->rq.prod),
				  atomic_load(&qp->rq.cons));
}

/*
 * Reset in the middle of a message: node 0 SENDs (or WRITEs) 3 packets
 * whose last is lost, so node 1 holds the message half received (its
 * receive WQE, an SRQ WQE, or the WRITE's region) and node 0 has its
 * timer armed and an RTT measured.  After RESET all of it is gone; after
 * the reconnect a new SEND lands whole in a new receive WQE, acknowledged
 * with MSN 1, and nothing of the old messages completes.
 */
static void reset_mid_message(enum ibv_wr_opcode op)
{
	struct urxe_qp_attr at = { .state = IBV_QPS_RESET };
	struct urxe_send_wqe *w;
	struct ibv_wc wc;
	unsigned int mark;

	send_one(1, 1);			/* an RTT sample, MSN 1 */
	if (op == IBV_WR_SEND)
		post_recv(2, 8192, 4096);
	drop_at = (int)wire_sent + 2;
	w = send(op, 0, 3000);
	pump();
	ck_assert(nodes[1].qp.resp.rq_active || nodes[1].qp.srq_held ||
		  nodes[1].qp.resp.wr_mem);
	ck_assert_uint_ne(nodes[0].qp.comp.retx_deadline, 0);
	ck_assert_uint_ne(nodes[0].qp.comp.srtt_ns, 0);
	ck_assert_uint_eq(nodes[1].qp.resp.msn, 1);
	ck_assert_int_eq(urxe_engine_qp_modify(&nodes[0].qp, &at,
					       IBV_QP_STATE), 0);
	ck_assert_int_eq(urxe_engine_qp_modify(&nodes[1].qp, &at,
					       IBV_QP_STATE), 0);
	assert_reset(&nodes[0].qp);
	assert_reset(&nodes[1].qp);
	wire_n = 0;
	cq_empty(&nodes[0]);
	cq_empty(&nodes[1]);

	reconnect(1);
	mark = nlog;
	wire_fill(nodes[0].buf, 3000, 9);
	post_recv(3, 16384, 4096);
	send(IBV_WR_SEND, 0, 3000);
	pump();
	ck_assert_int_eq(first_ack_msn(mark), 1);
	/* With an SRQ, the WQE held across RESET (2) takes it, not lost. */
	wc = poll_one(&nodes[1]);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, with_srq && op == IBV_WR_SEND ? 2 : 3);
	ck_assert_uint_eq(wc.byte_len, 3000);
	ck_assert(!memcmp(nodes[1].buf + (with_srq && op == IBV_WR_SEND ?
					  8192 : 16384), nodes[0].buf, 3000));
	cq_empty(&nodes[1]);
	if (with_srq && op == IBV_WR_SEND)	/* and 3 waits in the SRQ */
		ck_assert_uint_eq(atomic_load(&srq.rq.prod) -
				  atomic_load(&srq.rq.cons), 1);
	wc = poll_one(&nodes[0]);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, w->wr_id);	/* its slot, reused */
	cq_empty(&nodes[0]);
}

START_TEST(rc_reset_mid_send)
{
	reset_mid_message(IBV_WR_SEND);
}
END_TEST

START_TEST(rc_reset_mid_write)
{
	reset_mid_message(IBV_WR_RDMA_WRITE);
}
END_TEST

/* With an SRQ: the WQE node 1 took from it is kept for the next message. */
START_TEST(srq_reset_mid_send)
{
	reset_mid_message(IBV_WR_SEND);
}
END_TEST

/*
 * A disconnect right after the last message (DAPL's: the server, given
 * the client's last SEND, moves its QP to ERR and tells the client's CM,
 * which moves the client's QP to ERR): what already reached either end is
 * handled first, so the sender's SEND completes successfully, as on a
 * device, instead of flushed.
 */
static struct urxe_send_wqe *last_message(void)
{
	struct urxe_send_wqe *w;
	struct ibv_wc wc;

	post_recv(1, 0, 200);
	w = send(IBV_WR_SEND, 0, 200);
	/* Node 1's application polls its message; the ACK waits (deferred). */
	urxe_engine_progress(nodes[1].eng);
	wc = poll_one(&nodes[1]);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert(nodes[1].qp.resp.ack_pending);
	return w;
}

static void assert_sent(const struct urxe_send_wqe *w)
{
	struct ibv_wc wc = poll_one(&nodes[0]);

	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, w->wr_id);
	ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
	cq_empty(&nodes[0]);
}

/* The receiver moves to ERR with the ACK still owed: the ACK leaves. */
START_TEST(err_sends_owed_ack)
{
	struct urxe_qp_attr at = { .state = IBV_QPS_ERR };
	struct urxe_send_wqe *w = last_message();
	unsigned int before = wire_sent;

	ck_assert_int_eq(urxe_engine_qp_modify(&nodes[1].qp, &at,
					       IBV_QP_STATE), 0);
	ck_assert_uint_eq(wire_sent, before + 1);
	ck_assert(!nodes[1].qp.resp.ack_pending);
	pump();
	assert_sent(w);
}
END_TEST

/* The ACK reached the sender, which moves to ERR before it polls. */
START_TEST(err_takes_arrived_ack)
{
	struct urxe_qp_attr at = { .state = IBV_QPS_ERR };
	struct urxe_send_wqe *w = last_message();

	urxe_engine_progress(nodes[1].eng);	/* its next call: the ACK */
	ck_assert_uint_eq(wire_n, 1);
	ck_assert_int_eq(urxe_engine_qp_modify(&nodes[0].qp, &at,
					       IBV_QP_STATE), 0);
	ck_assert_uint_eq(wire_n, 0);
	assert_sent(w);
}
END_TEST

static Suite *reset_suite(void)
{
	Suite *s = suite_create("reset");
	TCase *tc = tu_tcase(s, "rc", setup, teardown);
	TCase *ts = tu_tcase(s, "srq", srq_setup, srq_teardown);

	tcase_add_test(tc, rc_reset_msn);
	tcase_add_test(tc, rc_reset_mid_send);
	tcase_add_test(tc, rc_reset_mid_write);
	tcase_add_test(tc, err_sends_owed_ack);
	tcase_add_test(tc, err_takes_arrived_ack);
	tcase_add_test(ts, srq_reset_mid_send);
	return s;
}

int main(void)
{
	return tu_run(reset_suite());
}
