// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared receive queues through the public verbs on rxe0 (lo), with two
 * contexts in one process: A's QPs send, B's QPs take their receives from
 * one SRQ.
 *
 *   two QPs share one SRQ, for RC, UC and UD: messages of several packets
 *   sent alternately over both land whole in the WQEs in the order they
 *   were posted, each completion on B's receive CQ naming its QP, the
 *   UD ones with their 40-byte GRH;
 *   the limit (ibv_modify_srq IBV_SRQ_LIMIT): IBV_EVENT_SRQ_LIMIT_REACHED
 *   when a WQE taken leaves fewer than the limit posted, once (then
 *   ibv_query_srq says 0), again after re-arming; unread events go with
 *   the SRQ when it is destroyed, read ones are waited for until acked;
 *   IBV_EVENT_QP_LAST_WQE_REACHED when an SRQ QP enters ERR, by modify
 *   or by a transport error (then beside IBV_EVENT_QP_ACCESS_ERR), once
 *   per visit to ERR, again after RESET; the other QP keeps working;
 *   ibv_destroy_srq is EBUSY while a QP uses it, ibv_dealloc_pd while an
 *   SRQ lives;
 *   EINVAL (and EOPNOTSUPP for tag matching, unknown comp_mask
 *   bits) from create, modify, post_srq_recv and post_recv, with nothing
 *   changed; ENOMEM on a full SRQ; a resize keeps the posted WQEs in
 *   order and refuses to drop any;
 *   an empty SRQ: RNR NAKs until a receive is posted (rnr_retry 7), or
 *   IBV_WC_RNR_RETRY_EXC_ERR (rnr_retry 0), the responder unharmed;
 *   threads at once: the test's thread sending over both QPs, a receiver
 *   checking every message and reposting its WQE, another resizing the
 *   SRQ and arming its limit, the engine thread running too: every
 *   message arrives whole and in order per QP (for ThreadSanitizer).
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "testutil.h"
#include "verbs_util.h"

#define BUFSZ (256 * 1024)
#define NQP 2
#define MSG 5000			/* 5 packets of the 1024-byte MTU */
#define SLOT 8192			/* a receive buffer, in B.v.buf */
#define WAIT_MS 2000
#define QKEY 0x11111111u
#define GRH 40
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct side {
	struct vu_side v;
	struct ibv_qp *qp[NQP];
};

static struct tu_sandbox sb;
static struct side A, B;
static struct ibv_srq *srq;
static struct ibv_ah *ah;
static union ibv_gid gid;

/* ---- fixture ---- */

static void side_init(struct side *s)
{
	memset(s, 0, sizeof(*s));
	vu_side_open(&s->v, 256, BUFSZ, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE);
}

static void side_fini(struct side *s)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (s->qp[i])
			ck_assert_int_eq(ibv_destroy_qp(s->qp[i]), 0);
	if (s == &B && srq)
		ck_assert_int_eq(ibv_destroy_srq(srq), 0);
	if (s == &A && ah)
		ck_assert_int_eq(ibv_destroy_ah(ah), 0);
	vu_side_close(&s->v);
	memset(s, 0, sizeof(*s));
}

static struct ibv_srq *make_srq(struct ibv_pd *pd, uint32_t max_wr,
				uint32_t max_sge)
{
	struct ibv_srq_init_attr ia = {
		.srq_context = &sb,
		.attr = { .max_wr = max_wr, .max_sge = max_sge, .srq_limit = 0 },
	};
	struct ibv_srq *s = ibv_create_srq(pd, &ia);

	ck_assert_msg(s != NULL, "ibv_create_srq: %s", strerror(errno));
	ck_assert_uint_ge(ia.attr.max_wr, max_wr);
	ck_assert_uint_ge(ia.attr.max_sge, max_sge);
	ck_assert_ptr_eq(s->context, pd->context);
	ck_assert_ptr_eq(s->pd, pd);
	ck_assert_ptr_eq(s->srq_context, &sb);
	return s;
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	side_init(&A);
	side_init(&B);
	ck_assert_int_eq(ibv_query_gid(A.v.ctx, 1, 0, &gid), 0);
	srq = make_srq(B.v.pd, 64, 2);
}

static void teardown(void)
{
	side_fini(&A);
	side_fini(&B);
	srq = NULL;
	ah = NULL;
	tu_sandbox_fini(&sb);
}

/* ---- QPs ---- */

static struct ibv_qp *qp_create(struct side *s, enum ibv_qp_type t,
				struct ibv_srq *q)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->v.scq, .recv_cq = s->v.rcq, .srq = q, .qp_type = t,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qp = ibv_create_qp(s->v.pd, &ia);

	ck_assert_msg(qp != NULL, "ibv_create_qp: %s", strerror(errno));
	if (q) {
		/* ibv_create_qp(3): the receive caps of an SRQ QP are ignored. */
		ck_assert_uint_eq(ia.cap.max_recv_wr, 0);
		ck_assert_ptr_eq(qp->srq, q);
	}
	return qp;
}

/* Both ends start at PSN 0x77; the requesters' rnr_retry is per test. */
static const struct vu_qp_opts conn = {
	.mtu = IBV_MTU_1024, .psn = 0x77, .hop_limit = 64,
	.access = IBV_ACCESS_REMOTE_WRITE, .qkey = QKEY,
	.timeout = 14, .retry_cnt = 7, .min_rnr_timer = 1, .rd_atomic = 1,
};

/* A.qp[i] <-> B.qp[i], B's on the SRQ; RTS both ways. */
static void pairs(enum ibv_qp_type t, uint8_t rnr_retry)
{
	struct vu_qp_opts o = conn;
	int i;

	o.rnr_retry = rnr_retry;
	for (i = 0; i < NQP; i++) {
		A.qp[i] = qp_create(&A, t, NULL);
		B.qp[i] = qp_create(&B, t, srq);
		vu_connect_pair(A.qp[i], B.qp[i], &gid, &o, &o);
	}
	if (t == IBV_QPT_UD) {
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .hop_limit = 64 },
		};

		ah = ibv_create_ah(A.v.pd, &aa);
		ck_assert_ptr_nonnull(ah);
	}
}

/* ---- posting ---- */

/* A SEND of @len bytes from A.v.buf + @off over A.qp[@i]. */
static void send_on(int i, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)A.v.buf + off, len, A.v.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;

	if (A.qp[i]->qp_type == IBV_QPT_UD) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = B.qp[i]->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
	}
	ck_assert_int_eq(ibv_post_send(A.qp[i], &wr, &bad), 0);
}

/* Receive @wr_id into B.v.buf's slot @slot (SLOT bytes). */
static int srq_post(uint64_t wr_id, unsigned int slot)
{
	struct ibv_sge sge = { (uintptr_t)B.v.buf + (uint64_t)slot * SLOT, SLOT,
			       B.v.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
			   *bad = NULL;
	int rc = ibv_post_srq_recv(srq, &wr, &bad);

	if (rc)
		ck_assert_ptr_eq(bad, &wr);
	return rc;
}

/* ---- completions and events ---- */

static struct ibv_wc expect_wc(struct ibv_cq *cq, uint64_t wr_id,
			       enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;

	ck_assert_msg(vu_wait_wc(cq, WAIT_MS, &wc), "%s: no completion (want %llu %s)",
		      what, (unsigned long long)wr_id, ibv_wc_status_str(status));
	ck_assert_msg(wc.wr_id == wr_id && wc.status == status,
		      "%s: completion %llu %s, want %llu %s", what,
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		      (unsigned long long)wr_id, ibv_wc_status_str(status));
	return wc;
}

static void expect_no_wc(struct ibv_cq *cq, int ms, const char *what)
{
	struct ibv_wc wc;

	ck_assert_msg(!vu_wait_wc(cq, ms, &wc), "%s: unexpected completion %llu %s",
		      what, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

/* The next async event of B within @ms; acknowledged unless @keep. */
static bool next_event(int ms, struct ibv_async_event *out, bool keep)
{
	struct pollfd p = { .fd = B.v.ctx->async_fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&p, 1, ms);
	} while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return false;
	ck_assert_int_eq(ibv_get_async_event(B.v.ctx, out), 0);
	if (!keep)
		ibv_ack_async_event(out);
	return true;
}

static void expect_event(enum ibv_event_type type, void *element)
{
	struct ibv_async_event ev;

	ck_assert_msg(next_event(WAIT_MS, &ev, false), "no async event (want %s)",
		      ibv_event_type_str(type));
	ck_assert_msg(ev.event_type == type, "async event %s, want %s",
		      ibv_event_type_str(ev.event_type), ibv_event_type_str(type));
	ck_assert_ptr_eq(ev.element.qp, element);	/* a union of pointers */
}

static void expect_no_event(int ms, const char *why)
{
	struct ibv_async_event ev;

	ck_assert_msg(!next_event(ms, &ev, false), "%s: unexpected event %s", why,
		      ibv_event_type_str(ev.event_type));
}

static uint32_t srq_limit(void)
{
	struct ibv_srq_attr a;

	memset(&a, 0xff, sizeof(a));
	ck_assert_int_eq(ibv_query_srq(srq, &a), 0);
	return a.srq_limit;
}

static void arm(uint32_t limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };

	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT), 0);
	ck_assert_uint_eq(srq_limit(), limit);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 13 + seed);
}

/* Sends message @k (A.v.buf + k * SLOT) over A.qp[@i]: both ends complete. */
static void exchange(int i, unsigned int k, uint32_t len)
{
	struct ibv_wc wc;
	uint32_t hdr = A.qp[i]->qp_type == IBV_QPT_UD ? GRH : 0;

	fill(A.v.buf + (size_t)k * SLOT, len, (uint8_t)k);
	send_on(i, 1000 + k, k * SLOT, len);
	expect_wc(A.v.scq, 1000 + k, IBV_WC_SUCCESS, "SEND");
	wc = expect_wc(B.v.rcq, k, IBV_WC_SUCCESS, "receive");
	ck_assert_uint_eq(wc.qp_num, B.qp[i]->qp_num);
	ck_assert_uint_eq(wc.byte_len, len + hdr);
	ck_assert_mem_eq(B.v.buf + (size_t)k * SLOT + hdr, A.v.buf + (size_t)k * SLOT,
			 len);
}

/* ---- sharing ---- */

static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

START_TEST(shared_by_two_qps)
{
	enum ibv_qp_type t = types[_i];
	uint32_t len = t == IBV_QPT_UD ? 1000 : MSG;
	unsigned int k, n = 16;
	struct ibv_wc wc;
	bool seen[16] = { false };

	pairs(t, 7);
	for (k = 0; k < n; k++) {
		ck_assert_int_eq(srq_post(k, k), 0);
		fill(A.v.buf + (size_t)k * SLOT, len, (uint8_t)k);
	}
	/*
	 * Both QPs' messages in flight at once: each takes the SRQ's oldest
	 * WQE at its first packet, so every message lands whole in one WQE.
	 */
	for (k = 0; k < n; k++)
		send_on((int)(k % NQP), 1000 + k, k * SLOT, len);
	for (k = 0; k < n; k++) {
		ck_assert_msg(vu_wait_wc(A.v.scq, WAIT_MS, &wc), "send %u", k);
		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	}
	for (k = 0; k < n; k++) {
		uint32_t hdr = t == IBV_QPT_UD ? GRH : 0, m;
		int q;

		ck_assert_msg(vu_wait_wc(B.v.rcq, WAIT_MS, &wc), "receive %u", k);
		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
		ck_assert_uint_lt(wc.wr_id, n);
		ck_assert_uint_eq(wc.byte_len, len + hdr);
		for (q = 0; q < NQP; q++)
			if (wc.qp_num == B.qp[q]->qp_num)
				break;
		ck_assert_int_lt(q, NQP);
		if (t == IBV_QPT_UD)
			ck_assert_uint_eq(wc.src_qp, A.qp[q]->qp_num);
		/*
		 * Which message went into which WQE depends on arrival; the
		 * data says which: a whole message, sent over that QP, and
		 * no message twice.
		 */
		for (m = 0; m < n; m++)
			if (!memcmp(B.v.buf + wc.wr_id * SLOT + hdr,
				    A.v.buf + (size_t)m * SLOT, len))
				break;
		ck_assert_msg(m < n, "WQE %llu holds no whole message",
			      (unsigned long long)wc.wr_id);
		ck_assert_uint_eq(m % NQP, (uint32_t)q);
		ck_assert(!seen[m]);
		seen[m] = true;
	}
	expect_no_wc(B.v.rcq, 50, "all 16 taken");
	/* One at a time, in the posting order, over either QP. */
	for (k = 0; k < 4; k++) {
		ck_assert_int_eq(srq_post(k, k), 0);
		exchange((int)(k & 1), k, len);
	}
	expect_no_event(0, "no limit armed, no error");
}
END_TEST

/* ---- the limit ---- */

START_TEST(limit_fires_once)
{
	unsigned int k;

	pairs(IBV_QPT_RC, 7);
	ck_assert_uint_eq(srq_limit(), 0);
	for (k = 0; k < 8; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	arm(4);
	/* 8 -> 4 posted: not fewer than the limit yet. */
	for (k = 0; k < 4; k++)
		exchange((int)(k & 1), k, 100);
	expect_no_event(50, "4 left of limit 4");
	ck_assert_uint_eq(srq_limit(), 4);
	/* 3 left: below the limit (ibv_modify_srq(3)). */
	exchange(0, 4, 100);
	expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	/* ibv_query_srq(3): 0 means no longer armed. */
	ck_assert_uint_eq(srq_limit(), 0);
	exchange(1, 5, 100);
	exchange(0, 6, 100);
	expect_no_event(50, "disarmed");
	/* Re-armed above what is posted: the next WQE taken fires it. */
	for (k = 8; k < 12; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	arm(10);
	exchange(1, 7, 100);
	expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	ck_assert_uint_eq(srq_limit(), 0);
	exchange(0, 8, 100);
	expect_no_event(50, "disarmed again");
}
END_TEST

/* Destroying an SRQ drops its unread events; read ones must be acked. */
START_TEST(limit_event_and_destroy)
{
	struct ibv_async_event ev;
	unsigned int k;

	pairs(IBV_QPT_RC, 7);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	arm(2);
	exchange(0, 0, 10);
	ck_assert(next_event(WAIT_MS, &ev, true));	/* read, not acked */
	ck_assert_int_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	ck_assert_ptr_eq(ev.element.srq, srq);
	arm(1);
	exchange(1, 1, 10);				/* fires, unread */
	for (k = 0; k < NQP; k++) {
		ck_assert_int_eq(ibv_destroy_qp(B.qp[k]), 0);
		B.qp[k] = NULL;
	}
	/* The ack the destroy waits for (it would hang without it). */
	ibv_ack_async_event(&ev);
	ck_assert_int_eq(ibv_destroy_srq(srq), 0);
	srq = NULL;
	expect_no_event(50, "the unread event went with its SRQ");
}
END_TEST

/* ---- last WQE reached ---- */

START_TEST(last_wqe_on_modify_to_err)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	unsigned int k;

	pairs(IBV_QPT_RC, 7);
	for (k = 0; k < 4; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	ck_assert_int_eq(ibv_modify_qp(B.qp[0], &a, IBV_QP_STATE), 0);
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, B.qp[0]);
	/* The SRQ's WQEs are the other QP's still: nothing was flushed. */
	expect_no_wc(B.v.rcq, 50, "an SRQ is not flushed by one QP");
	exchange(1, 0, MSG);
	expect_no_event(50, "one QP in ERR, one event");
}
END_TEST

START_TEST(last_wqe_once_per_error)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr rwr = { .wr_id = 5 }, *rbad = NULL;
	struct ibv_send_wr swr = { .wr_id = 6, .opcode = IBV_WR_SEND },
			   *sbad = NULL;

	pairs(IBV_QPT_UC, 7);
	ck_assert_int_eq(ibv_modify_qp(B.qp[1], &a, IBV_QP_STATE), 0);
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, B.qp[1]);
	/* Work posted to it is flushed: the flush says nothing new. */
	ck_assert_int_eq(ibv_post_send(B.qp[1], &swr, &sbad), 0);
	expect_wc(B.v.scq, 6, IBV_WC_WR_FLUSH_ERR, "send in ERR");
	expect_no_event(50, "LAST_WQE once per error");
	/* An SRQ QP has no receive queue of its own, in any state. */
	ck_assert_int_eq(ibv_post_recv(B.qp[1], &rwr, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	/* Through RESET and back to ERR: reported again. */
	a.qp_state = IBV_QPS_RESET;
	ck_assert_int_eq(ibv_modify_qp(B.qp[1], &a, IBV_QP_STATE), 0);
	vu_to_init(B.qp[1], &conn);
	a.qp_state = IBV_QPS_ERR;
	ck_assert_int_eq(ibv_modify_qp(B.qp[1], &a, IBV_QP_STATE), 0);
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, B.qp[1]);
	expect_no_event(50, "once more only");
}
END_TEST

/* A transport error (a WRITE to a bad rkey) moves B's QP to ERR. */
START_TEST(last_wqe_on_transport_error)
{
	struct ibv_sge sge = { (uintptr_t)A.v.buf, 64, A.v.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)B.v.buf, B.v.mr->rkey ^ 0x5a5a00 },
	}, *bad = NULL;
	struct ibv_async_event ev[2];
	bool access = false, last = false;
	int i;

	pairs(IBV_QPT_RC, 7);
	ck_assert_int_eq(srq_post(1, 1), 0);
	ck_assert_int_eq(ibv_post_send(A.qp[0], &wr, &bad), 0);
	expect_wc(A.v.scq, 9, IBV_WC_REM_ACCESS_ERR, "WRITE with a bad rkey");
	for (i = 0; i < 2; i++) {
		ck_assert_msg(next_event(WAIT_MS, &ev[i], false), "event %d", i);
		ck_assert_ptr_eq(ev[i].element.qp, B.qp[0]);
		access |= ev[i].event_type == IBV_EVENT_QP_ACCESS_ERR;
		last |= ev[i].event_type == IBV_EVENT_QP_LAST_WQE_REACHED;
	}
	ck_assert(access && last);
	expect_no_event(50, "two events");
	ck_assert_int_eq(vu_qp_state(B.qp[0]), IBV_QPS_ERR);
	/* The SRQ's WQE went to the other QP's message. */
	exchange(1, 1, 300);
}
END_TEST

/* ---- lifetime ---- */

START_TEST(destroy_busy)
{
	struct ibv_qp *qp = qp_create(&B, IBV_QPT_RC, srq);
	struct ibv_pd *pd2 = ibv_alloc_pd(B.v.ctx);
	struct ibv_srq *s2;

	/* ibv_destroy_srq(3): not while a QP is associated with it. */
	ck_assert_int_eq(ibv_destroy_srq(srq), EBUSY);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_srq(srq), 0);
	srq = NULL;
	/* The SRQ holds its PD. */
	ck_assert_ptr_nonnull(pd2);
	s2 = make_srq(pd2, 4, 1);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), EBUSY);
	ck_assert_int_eq(ibv_destroy_srq(s2), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
}
END_TEST

/* ---- invalid requests ---- */

START_TEST(create_invalid)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr ia;
	struct ibv_srq_init_attr_ex ex;
	struct ibv_srq_attr qa;
	struct ibv_srq *s;
	struct { uint32_t wr, sge; } bad[3];
	unsigned int i;

	ck_assert_int_eq(ibv_query_device(B.v.ctx, &da), 0);
	ck_assert_int_gt(da.max_srq, 0);
	ck_assert(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	bad[0].wr = 0;
	bad[0].sge = 1;
	bad[1].wr = (uint32_t)da.max_srq_wr + 1;
	bad[1].sge = 1;
	bad[2].wr = 16;
	bad[2].sge = (uint32_t)da.max_srq_sge + 1;
	for (i = 0; i < NELEM(bad); i++) {
		memset(&ia, 0, sizeof(ia));
		ia.attr.max_wr = bad[i].wr;
		ia.attr.max_sge = bad[i].sge;
		errno = 0;
		ck_assert_ptr_null(ibv_create_srq(B.v.pd, &ia));
		ck_assert_int_eq(errno, EINVAL);
	}
	/* The largest allowed, and max_sge 0 granted as 1 (kernel rxe). */
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = (uint32_t)da.max_srq_wr;
	ia.attr.max_sge = 0;
	s = ibv_create_srq(B.v.pd, &ia);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(ia.attr.max_sge, 1);
	ck_assert_int_eq(ibv_query_srq(s, &qa), 0);
	ck_assert_uint_eq(qa.max_wr, (uint32_t)da.max_srq_wr);
	ck_assert_uint_eq(qa.max_sge, 1);
	ck_assert_uint_eq(qa.srq_limit, 0);
	ck_assert_int_eq(ibv_destroy_srq(s), 0);

	/* ibv_create_srq_ex(3): basic with a CQ (ignored) reaches us. */
	memset(&ex, 0, sizeof(ex));
	ex.attr.max_wr = 8;
	ex.attr.max_sge = 3;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ;
	ex.srq_type = IBV_SRQT_BASIC;
	ex.pd = B.v.pd;
	ex.cq = B.v.rcq;
	s = ibv_create_srq_ex(B.v.ctx, &ex);
	ck_assert_msg(s != NULL, "ibv_create_srq_ex: %s", strerror(errno));
	ck_assert_uint_eq(ex.attr.max_sge, 3);
	ck_assert_int_eq(ibv_destroy_srq(s), 0);
	/* XRC: no XRCD -> EINVAL (rdma-core's check); a NULL one too. */
	ex.srq_type = IBV_SRQT_XRC;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	ex.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	/* Tag matching: never. */
	ex.srq_type = IBV_SRQT_TM;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	ex.tm_cap.max_num_tags = 4;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* Unknown comp_mask bits; no PD; another context's PD. */
	ex.srq_type = IBV_SRQT_BASIC;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_RESERVED;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	ex.pd = A.v.pd;
	errno = 0;
	ck_assert_ptr_null(ibv_create_srq_ex(B.v.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(qp_with_foreign_srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = A.v.scq, .recv_cq = A.v.rcq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};

	/* The SRQ is B's context's; the QP would be A's. */
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(A.v.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_destroy_srq(srq), 0);	/* no user counted */
	srq = NULL;
}
END_TEST

static void query(struct ibv_srq_attr *a)
{
	ck_assert_int_eq(ibv_query_srq(srq, a), 0);
}

START_TEST(modify_invalid)
{
	struct ibv_srq_attr a, q;
	unsigned int k;

	query(&q);
	ck_assert_uint_eq(q.max_wr, 64);
	ck_assert_uint_eq(q.max_sge, 2);
	a = (struct ibv_srq_attr){ .max_wr = 32, .srq_limit = 8 };
	ck_assert_int_eq(ibv_modify_srq(srq, &a, 1 << 2), EINVAL);
	a.max_wr = 0;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = 16385;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.srq_limit = 65;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT), EINVAL);
	/* Both or neither: a limit above the new size fails the resize too. */
	a.max_wr = 32;
	a.srq_limit = 40;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT),
			 EINVAL);
	query(&q);
	ck_assert_uint_eq(q.max_wr, 64);
	ck_assert_uint_eq(q.srq_limit, 0);
	/* Armed at 8: no resize below it (kernel rxe). */
	arm(8);
	a.max_wr = 4;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	/* No resize below what is posted. */
	arm(0);
	for (k = 0; k < 10; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	a.max_wr = 9;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	query(&q);
	ck_assert_uint_eq(q.max_wr, 64);
	a.max_wr = 10;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
	query(&q);
	ck_assert_uint_eq(q.max_wr, 10);
	ck_assert_uint_eq(q.max_sge, 2);
	/* Now full: ENOMEM, *bad_wr the refused one. */
	ck_assert_int_eq(srq_post(10, 10), ENOMEM);
}
END_TEST

START_TEST(post_invalid)
{
	struct ibv_sge sge[3] = {
		{ (uintptr_t)B.v.buf, 64, B.v.mr->lkey },
		{ (uintptr_t)B.v.buf + 64, 64, B.v.mr->lkey },
		{ (uintptr_t)B.v.buf + 128, 64, B.v.mr->lkey },
	};
	struct ibv_recv_wr w2 = { .wr_id = 2, .sg_list = sge, .num_sge = 3 };
	struct ibv_recv_wr w1 = { .wr_id = 1, .next = &w2, .sg_list = sge,
				  .num_sge = 2 };
	struct ibv_recv_wr *bad = NULL;

	/* Three SGEs on an SRQ of two: the first WR stays posted. */
	ck_assert_int_eq(ibv_post_srq_recv(srq, &w1, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w2);
	w2.num_sge = -1;
	ck_assert_int_eq(ibv_post_srq_recv(srq, &w2, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w2);
	/* The one posted receives a SEND (two SGEs, 128 bytes). */
	pairs(IBV_QPT_RC, 7);
	fill(A.v.buf, 100, 3);
	send_on(0, 50, 0, 100);
	expect_wc(B.v.rcq, 1, IBV_WC_SUCCESS, "the WR before the bad one");
	ck_assert_mem_eq(B.v.buf, A.v.buf, 100);
}
END_TEST

START_TEST(resize_keeps_posted)
{
	struct ibv_srq_attr a = { .max_wr = 8 };
	unsigned int k;

	pairs(IBV_QPT_RC, 7);
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
	for (k = 0; k < 6; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	/* Two taken: the ring's indices are past its start. */
	exchange(0, 0, 100);
	exchange(1, 1, 100);
	for (k = 6; k < 10; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	ck_assert_int_eq(srq_post(10, 10), ENOMEM);
	a.max_wr = 200;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
	for (k = 10; k < 20; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	/* Taken in the order posted, across the resize. */
	for (k = 2; k < 20; k++)
		exchange((int)(k & 1), k, 100 + k);
	a.max_wr = 1;
	ck_assert_int_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
}
END_TEST

/* ---- receiver not ready ---- */

START_TEST(rnr_until_posted)
{
	struct ibv_wc wc;

	pairs(IBV_QPT_RC, 7);
	fill(A.v.buf, MSG, 9);
	send_on(1, 60, 0, MSG);
	/* RNR NAKs, retried for ever (rnr_retry 7): nothing completes. */
	ck_assert(!vu_wait_wc(A.v.scq, 200, &wc));
	expect_no_wc(B.v.rcq, 0, "nothing posted");
	ck_assert_int_eq(srq_post(3, 3), 0);
	expect_wc(A.v.scq, 60, IBV_WC_SUCCESS, "SEND after the receive came");
	wc = expect_wc(B.v.rcq, 3, IBV_WC_SUCCESS, "the receive");
	ck_assert_uint_eq(wc.qp_num, B.qp[1]->qp_num);
	ck_assert_uint_eq(wc.byte_len, MSG);
	ck_assert_mem_eq(B.v.buf + 3 * SLOT, A.v.buf, MSG);
}
END_TEST

START_TEST(rnr_exhausted)
{
	pairs(IBV_QPT_RC, 0);
	send_on(0, 61, 0, 10);
	expect_wc(A.v.scq, 61, IBV_WC_RNR_RETRY_EXC_ERR, "no receive, rnr_retry 0");
	ck_assert_int_eq(vu_qp_state(B.qp[0]), IBV_QPS_RTS);
	expect_no_event(50, "the responder is unharmed");
	ck_assert_int_eq(srq_post(0, 0), 0);
	exchange(1, 0, 10);
}
END_TEST

/* ---- threads ---- */

#define T_MSGS 2000			/* per QP */
#define T_DEPTH 8			/* sends in flight per QP */
#define T_RECV 16			/* WQEs circulating through the SRQ */
#define T_LEN 3000

static atomic_bool t_stop;
static atomic_int t_received, t_bad, t_resizes;

static uint8_t t_byte(uint32_t tag, uint32_t i)
{
	return (uint8_t)(tag * 31 + i);
}

/* Checks every receive (tag: QP << 24 | sequence) and reposts its WQE. */
static void *t_receiver(void *arg)
{
	uint32_t expect[NQP] = { 0 };
	uint64_t end = vu_now_ms() + 60000;
	struct ibv_wc wc;
	uint32_t tag, i;
	int n, q;

	(void)arg;
	while (atomic_load(&t_received) < NQP * T_MSGS && vu_now_ms() < end) {
		n = ibv_poll_cq(B.v.rcq, 1, &wc);
		if (n <= 0) {
			if (n < 0)
				atomic_fetch_add(&t_bad, 1);
			continue;
		}
		memcpy(&tag, B.v.buf + wc.wr_id * SLOT, 4);
		q = (int)(tag >> 24);
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != T_LEN ||
		    q >= NQP || wc.qp_num != B.qp[q]->qp_num ||
		    (tag & 0xffffff) != expect[q]++)
			atomic_fetch_add(&t_bad, 1);
		for (i = 4; i < T_LEN; i++)
			if (B.v.buf[wc.wr_id * SLOT + i] != t_byte(tag, i)) {
				atomic_fetch_add(&t_bad, 1);
				break;
			}
		atomic_fetch_add(&t_received, 1);
		if (srq_post(wc.wr_id, (unsigned int)wc.wr_id))
			atomic_fetch_add(&t_bad, 1);
	}
	return NULL;
}

/* Resizes the SRQ back and forth and arms its limit; drains the events. */
static void *t_resizer(void *arg)
{
	struct timespec ts = { 0, 200000 };
	struct pollfd p = { .fd = B.v.ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct ibv_srq_attr a;
	uint32_t k = 0;

	(void)arg;
	while (!atomic_load(&t_stop)) {
		a.max_wr = k & 1 ? T_RECV : 4 * T_RECV;
		a.srq_limit = 4;
		if (ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
			atomic_fetch_add(&t_bad, 1);
		else
			atomic_fetch_add(&t_resizes, 1);
		while (poll(&p, 1, 0) == 1 && !ibv_get_async_event(B.v.ctx, &ev)) {
			if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED)
				atomic_fetch_add(&t_bad, 1);
			ibv_ack_async_event(&ev);
		}
		k++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void t_send(int q, uint32_t seq)
{
	uint32_t slot = (uint32_t)q * T_DEPTH + seq % T_DEPTH, i;
	uint32_t tag = (uint32_t)q << 24 | seq;
	uint8_t *p = A.v.buf + (size_t)slot * SLOT;

	memcpy(p, &tag, 4);
	for (i = 4; i < T_LEN; i++)
		p[i] = t_byte(tag, i);
	send_on(q, (uint64_t)q << 32 | seq, slot * SLOT, T_LEN);
}

START_TEST(threads)
{
	uint32_t sent[NQP] = { 0 }, done[NQP] = { 0 };
	pthread_t rx, rs;
	uint64_t end;
	struct ibv_wc wc;
	unsigned int k;
	int q, n;

	pairs(IBV_QPT_RC, 7);
	for (k = 0; k < T_RECV; k++)
		ck_assert_int_eq(srq_post(k, k), 0);
	atomic_store(&t_stop, false);
	atomic_store(&t_received, 0);
	atomic_store(&t_bad, 0);
	atomic_store(&t_resizes, 0);
	ck_assert_int_eq(pthread_create(&rx, NULL, t_receiver, NULL), 0);
	ck_assert_int_eq(pthread_create(&rs, NULL, t_resizer, NULL), 0);
	end = vu_now_ms() + 60000;
	while ((done[0] < T_MSGS || done[1] < T_MSGS) && vu_now_ms() < end) {
		for (q = 0; q < NQP; q++)
			while (sent[q] < T_MSGS && sent[q] - done[q] < T_DEPTH)
				t_send(q, sent[q]++);
		n = ibv_poll_cq(A.v.scq, 1, &wc);
		ck_assert_int_ge(n, 0);
		if (!n)
			continue;
		ck_assert_msg(wc.status == IBV_WC_SUCCESS, "send: %s",
			      ibv_wc_status_str(wc.status));
		q = (int)(wc.wr_id >> 32);
		ck_assert_uint_eq(wc.wr_id & 0xffffffff, done[q]);
		done[q]++;
	}
	pthread_join(rx, NULL);
	atomic_store(&t_stop, true);
	pthread_join(rs, NULL);
	ck_assert_uint_eq(done[0] + done[1], NQP * T_MSGS);
	ck_assert_int_eq(atomic_load(&t_received), NQP * T_MSGS);
	ck_assert_int_eq(atomic_load(&t_bad), 0);
	ck_assert_int_gt(atomic_load(&t_resizes), 0);
}
END_TEST

static Suite *srq_suite(void)
{
	Suite *s = suite_create("srq");
	TCase *tc = tu_tcase(s, "sharing", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, shared_by_two_qps, 0, NELEM(types));
	tcase_add_test(tc, resize_keeps_posted);
	tcase_add_test(tc, rnr_until_posted);
	tcase_add_test(tc, rnr_exhausted);

	tc = tu_tcase(s, "threads", setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, threads);

	tc = tu_tcase(s, "events", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, limit_fires_once);
	tcase_add_test(tc, limit_event_and_destroy);
	tcase_add_test(tc, last_wqe_on_modify_to_err);
	tcase_add_test(tc, last_wqe_once_per_error);
	tcase_add_test(tc, last_wqe_on_transport_error);

	tc = tu_tcase(s, "checks", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, destroy_busy);
	tcase_add_test(tc, create_invalid);
	tcase_add_test(tc, qp_with_foreign_srq);
	tcase_add_test(tc, modify_invalid);
	tcase_add_test(tc, post_invalid);
	return s;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return tu_run(srq_suite());
}
