/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs fixture of the suites that drive the library through the
 * public verbs: opening rxe0, one "side" (context, PD, two CQs, a
 * registered buffer) and its teardown, and bringing a QP of any transport
 * from RESET to RTS with the attributes ibv_modify_qp(3) requires of that
 * transport.  Every value a suite chooses (PSN, MTU, timers, rights) is in
 * struct vu_qp_opts, so suites differ only where they mean to.
 *
 * Header-only, like testutil.h: each suite is its own executable.
 * Helpers whose name ends in a verb assert success with Check.
 */
#ifndef URXE_TEST_VERBS_UTIL_H
#define URXE_TEST_VERBS_UTIL_H

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

/* Opens the device called @name (NULL if there is none or it fails). */
static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i;

	list = ibv_get_device_list(NULL);
	if (!list)
		return NULL;
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return c;
}

/* rxe0, which every verbs suite configures; the test fails without it. */
static inline struct ibv_context *vu_open_rxe0(void)
{
	struct ibv_context *c = open_dev("rxe0");

	ck_assert_msg(c != NULL, "cannot open rxe0: %s", strerror(errno));
	return c;
}

/* The QP's state as ibv_query_qp(3) reports it. */
static inline enum ibv_qp_state vu_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ck_assert_int_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* Milliseconds of CLOCK_MONOTONIC. */
static inline uint64_t vu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Polls @cq for one completion for up to @ms (polling is what runs the
 * engine in these suites); true with one in @wc.
 */
static inline bool vu_wait_wc(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	uint64_t end = vu_now_ms() + (uint64_t)ms;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		ck_assert_int_ge(n, 0);
		if (n)
			return true;
	} while (vu_now_ms() < end);
	return false;
}

/*
 * One end of a loopback test: a context on rxe0, a PD, a send and a
 * receive CQ, and @len bytes (page aligned, zeroed) registered with
 * @access.  Suites embed it in their own struct for the QPs they add.
 */
struct vu_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static inline void vu_side_open(struct vu_side *s, int cqe, size_t len,
				unsigned int access)
{
	memset(s, 0, sizeof(*s));
	s->ctx = vu_open_rxe0();
	s->pd = ibv_alloc_pd(s->ctx);
	ck_assert_ptr_nonnull(s->pd);
	s->scq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	ck_assert(s->scq && s->rcq);
	ck_assert_int_eq(posix_memalign((void **)&s->buf, 4096, len), 0);
	memset(s->buf, 0, len);
	s->mr = ibv_reg_mr(s->pd, s->buf, len, access);
	ck_assert_ptr_nonnull(s->mr);
}

/* Destroys what vu_side_open made (the suite's QPs must be gone first). */
static inline void vu_side_close(struct vu_side *s)
{
	if (s->mr)
		ck_assert_int_eq(ibv_dereg_mr(s->mr), 0);
	if (s->scq)
		ck_assert_int_eq(ibv_destroy_cq(s->scq), 0);
	if (s->rcq)
		ck_assert_int_eq(ibv_destroy_cq(s->rcq), 0);
	if (s->pd)
		ck_assert_int_eq(ibv_dealloc_pd(s->pd), 0);
	if (s->ctx)
		ck_assert_int_eq(ibv_close_device(s->ctx), 0);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/*
 * What a suite chooses when it connects a QP; the same for both ends
 * unless it passes two.  The peer's GID is given apart: it is known only
 * once the device is open, and these are meant to be static const.
 */
struct vu_qp_opts {
	enum ibv_mtu mtu;
	uint32_t psn;		/* both ends start here: sq_psn = rq_psn */
	uint8_t hop_limit;
	unsigned int access;	/* qp_access_flags (not UD) */
	uint32_t qkey;		/* UD */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t rd_atomic;	/* max_rd_atomic and max_dest_rd_atomic */
};

/*
 * Which attributes a transport takes, as ibv_modify_qp(3) lists them: a
 * responder (RC, XRC TGT) takes the RNR timer and the READ/atomic depth it
 * accepts at RTR; a reliable requester (RC, XRC INI) takes its retry
 * counters and READ/atomic depth at RTS.  The transport timer goes to
 * every reliable QP.
 */
static inline bool vu_responder(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV;
}

static inline bool vu_requester(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_SEND;
}

static inline void vu_to_init(struct ibv_qp *qp, const struct vu_qp_opts *o)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = o->access, .qkey = o->qkey,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, mask), 0);
}

/* INIT -> RTR towards QP @dqpn at @dgid (both ignored for UD). */
static inline void vu_to_rtr(struct ibv_qp *qp, uint32_t dqpn,
			     const union ibv_gid *dgid,
			     const struct vu_qp_opts *o)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = o->mtu,
		.dest_qp_num = dqpn, .rq_psn = o->psn,
		.max_dest_rd_atomic = o->rd_atomic,
		.min_rnr_timer = o->min_rnr_timer,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid,
				      .hop_limit = o->hop_limit } },
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (qp->qp_type == IBV_QPT_UD)
		mask = IBV_QP_STATE;
	else if (vu_responder(qp))
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, mask), 0);
}

static inline void vu_to_rts(struct ibv_qp *qp, const struct vu_qp_opts *o)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = o->timeout,
		.retry_cnt = o->retry_cnt, .rnr_retry = o->rnr_retry,
		.sq_psn = o->psn, .max_rd_atomic = o->rd_atomic,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (vu_responder(qp) || vu_requester(qp))
		mask |= IBV_QP_TIMEOUT;
	if (vu_requester(qp))
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, mask), 0);
}

/* RESET -> RTS towards @dqpn in one go. */
static inline void vu_connect(struct ibv_qp *qp, uint32_t dqpn,
			      const union ibv_gid *dgid,
			      const struct vu_qp_opts *o)
{
	vu_to_init(qp, o);
	vu_to_rtr(qp, dqpn, dgid, o);
	vu_to_rts(qp, o);
}

/*
 * @a <-> @b, each step taken by both before the next (as applications
 * exchanging QPNs do): @a with @oa, @b with @ob.
 */
static inline void vu_connect_pair(struct ibv_qp *a, struct ibv_qp *b,
				   const union ibv_gid *dgid,
				   const struct vu_qp_opts *oa,
				   const struct vu_qp_opts *ob)
{
	vu_to_init(a, oa);
	vu_to_init(b, ob);
	vu_to_rtr(a, b->qp_num, dgid, oa);
	vu_to_rtr(b, a->qp_num, dgid, ob);
	vu_to_rts(a, oa);
	vu_to_rts(b, ob);
}

#endif
