// SPDX-License-Identifier: BSD-2-Clause
/*
 * Queue pairs and address handles through the public verbs on rxe0 (lo):
 * ibv_create_qp(3) for RC/UC/UD with the granted caps written back and
 * bad caps/types refused; ibv_modify_qp(3) held to the IBA/kernel state
 * table (every required attribute missing, every attribute outside the
 * allowed set, invalid transitions, all EINVAL; every valid transition
 * with all its optional attributes accepted) and to the value ranges;
 * ibv_query_qp(3) returning what was set; ibv_post_send(3) and
 * ibv_post_recv(3) refusing by state, opcode, SGE count, inline size,
 * atomic size, a full queue (ENOMEM) with *bad_wr naming the culprit;
 * EBUSY of the PD and CQs while a QP or AH lives; a QP moved to RESET
 * taking its completions out of its CQs; ibv_create_ah(3) on RoCE (GRH
 * required, source GID must exist).
 *
 * The expected transition table below is written from IBA 11.2.5.2 and
 * Linux's qp_state_table, independently of rxe_provider/qp_state.c.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <urxe/provider.h>

#include "testutil.h"
#include "verbs_util.h"

#define N_OBJ 8
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid0;
static struct ibv_qp *qps[N_OBJ];
static struct ibv_ah *ahs[N_OBJ];

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ck_assert_msg(cq != NULL, "ibv_create_cq: %s", strerror(errno));
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid0), 0);
}

static void teardown(void)
{
	int i;

	for (i = 0; i < N_OBJ; i++) {
		if (qps[i])
			ibv_destroy_qp(qps[i]);
		if (ahs[i])
			ibv_destroy_ah(ahs[i]);
		qps[i] = NULL;
		ahs[i] = NULL;
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	cq = NULL;
	pd = NULL;
	ctx = NULL;
	tu_sandbox_fini(&sb);
}

static struct ibv_qp *track_qp(struct ibv_qp *qp)
{
	int i;

	for (i = 0; qp && i < N_OBJ; i++)
		if (!qps[i]) {
			qps[i] = qp;
			break;
		}
	return qp;
}

static void destroy_qp(struct ibv_qp *qp)
{
	int i;

	for (i = 0; i < N_OBJ; i++)
		if (qps[i] == qp)
			qps[i] = NULL;
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
}

static struct ibv_qp_init_attr init_attr(enum ibv_qp_type type,
					 uint32_t swr, uint32_t rwr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = {
			.max_send_wr = swr,
			.max_recv_wr = rwr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = 0,
		},
	};

	return a;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, uint32_t swr,
			      uint32_t rwr)
{
	struct ibv_qp_init_attr a = init_attr(type, swr, rwr);
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	ck_assert_msg(qp != NULL, "ibv_create_qp(%d): %s", type,
		      strerror(errno));
	return track_qp(qp);
}

static enum ibv_qp_state qp_state_of(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	ck_assert_int_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	return a.qp_state;
}

static struct ibv_ah_attr good_av(void)
{
	struct ibv_ah_attr av = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = gid0,
			.sgid_index = 0,
			.hop_limit = 1,
			.traffic_class = 0,
		},
	};

	return av;
}

/* Every attribute valid, so only the mask decides. */
static void full_attr(struct ibv_qp_attr *a, struct ibv_qp *qp,
		      enum ibv_qp_state from, enum ibv_qp_state to)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	a->cur_qp_state = from;
	a->path_mtu = IBV_MTU_1024;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->qkey = 0x11111111;
	a->rq_psn = 0x123;
	a->sq_psn = 0x456;
	a->dest_qp_num = qp->qp_num;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a->ah_attr = good_av();
	a->alt_ah_attr = good_av();
	a->max_rd_atomic = 1;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->port_num = 1;
	a->alt_port_num = 1;
	a->timeout = 14;
	a->alt_timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
}

/* ---- the expected state table ---- */

enum { RC, UC, UD, NT };
static const enum ibv_qp_type types[NT] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define ACC IBV_QP_ACCESS_FLAGS
#define QKEY IBV_QP_QKEY
#define CUR IBV_QP_CUR_STATE
#define ALT IBV_QP_ALT_PATH
#define MIG IBV_QP_PATH_MIG_STATE
#define RNRT IBV_QP_MIN_RNR_TIMER
#define ALL_BITS ((IBV_QP_DEST_QPN << 1) - 1)

struct step {
	enum ibv_qp_state from, to;
	int req[NT];
	int opt[NT];
};

/* A walk through every transition of RC, UC and UD but SQE -> RTS. */
static const struct step walk[] = {
	{ IBV_QPS_RESET, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_RESET, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_ERR, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_ERR, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  { PKEY | PORT | ACC, PKEY | PORT | ACC, PKEY | PORT | QKEY }, { 0 } },
	{ IBV_QPS_INIT, IBV_QPS_INIT,
	  { 0 }, { PKEY | PORT | ACC, PKEY | PORT | ACC, PKEY | PORT | QKEY } },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  { IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	    IBV_QP_MAX_DEST_RD_ATOMIC | RNRT,
	    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
	    0 },
	  { ALT | ACC | PKEY, ALT | ACC | PKEY, PKEY | QKEY } },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  { IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
	    IBV_QP_SQ_PSN, IBV_QP_SQ_PSN },
	  { CUR | ALT | ACC | RNRT | MIG, CUR | ALT | ACC | MIG, CUR | QKEY } },
	{ IBV_QPS_RTS, IBV_QPS_RTS,
	  { 0 }, { CUR | ACC | ALT | MIG | RNRT, CUR | ACC | ALT | MIG, CUR | QKEY } },
	{ IBV_QPS_RTS, IBV_QPS_SQD,
	  { 0 }, { IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY,
		   IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	{ IBV_QPS_SQD, IBV_QPS_SQD,
	  { 0 },
	  { PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
	    IBV_QP_MAX_DEST_RD_ATOMIC | ALT | ACC | PKEY | RNRT | MIG,
	    IBV_QP_AV | ALT | ACC | PKEY | MIG,
	    PKEY | QKEY } },
	{ IBV_QPS_SQD, IBV_QPS_RTS,
	  { 0 }, { CUR | ALT | ACC | RNRT | MIG, CUR | ALT | ACC | MIG, CUR | QKEY } },
	{ IBV_QPS_RTS, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_ERR, IBV_QPS_RESET, { 0 }, { 0 } },
};

static bool valid_transition(enum ibv_qp_state from, enum ibv_qp_state to)
{
	size_t i;

	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return true;
	for (i = 0; i < NELEM(walk); i++)
		if (walk[i].from == from && walk[i].to == to)
			return true;
	return false;
}

static void modify_expect(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			  int want, enum ibv_qp_state after, const char *what)
{
	int rc = ibv_modify_qp(qp, a, mask);

	ck_assert_msg(rc == want, "%s: mask 0x%x: got %d (%s), want %d",
		      what, mask, rc, strerror(rc), want);
	ck_assert_int_eq(qp_state_of(qp), after);
}

static void check_step(struct ibv_qp *qp, int t, const struct step *s)
{
	int req = s->req[t], opt = s->opt[t], bit, st;
	struct ibv_qp_attr a;
	char what[96];

	full_attr(&a, qp, s->from, s->to);
	snprintf(what, sizeof(what), "type %d %d->%d", types[t], s->from, s->to);
	ck_assert_int_eq(qp_state_of(qp), s->from);
	/* Each required attribute missing. */
	for (bit = 1; bit <= ALL_BITS; bit <<= 1)
		if (req & bit)
			modify_expect(qp, &a, (IBV_QP_STATE | req | opt) & ~bit,
				      EINVAL, s->from, what);
	/* Each attribute this transition does not take. */
	for (bit = 1; bit <= ALL_BITS; bit <<= 1)
		if (!(bit & (req | opt | IBV_QP_STATE)))
			modify_expect(qp, &a, IBV_QP_STATE | req | bit, EINVAL,
				      s->from, what);
	/* Invalid targets, with everything the target could want. */
	for (st = IBV_QPS_RESET; st <= IBV_QPS_ERR; st++) {
		if (valid_transition(s->from, st))
			continue;
		a.qp_state = st;
		modify_expect(qp, &a, ALL_BITS & ~IBV_QP_CAP & ~CUR, EINVAL,
			      s->from, what);
		modify_expect(qp, &a, IBV_QP_STATE, EINVAL, s->from, what);
	}
	a.qp_state = s->to;
	/* Staying put without IBV_QP_STATE: the same rules. */
	if (s->from == s->to) {
		modify_expect(qp, &a, req | opt, 0, s->from, what);
		modify_expect(qp, &a, req, 0, s->from, what);
		for (bit = 1; bit <= ALL_BITS; bit <<= 1)
			if (!(bit & (req | opt | IBV_QP_STATE)))
				modify_expect(qp, &a, req | bit, EINVAL,
					      s->from, what);
	}
	modify_expect(qp, &a, IBV_QP_STATE | req | opt, 0, s->to, what);
	ck_assert_int_eq(qp->state, s->to);
}

START_TEST(transition_table)
{
	struct ibv_qp *qp = make_qp(types[_i], 4, 4);
	size_t k;

	for (k = 0; k < NELEM(walk); k++)
		check_step(qp, _i, &walk[k]);
	destroy_qp(qp);
}
END_TEST

/* The plain sequences applications use, pyverbs' among them. */
static void to_rts(struct ibv_qp *qp, uint32_t dqpn, uint8_t timeout)
{
	struct ibv_qp_attr a;
	int t = qp->qp_type == IBV_QPT_RC ? RC : qp->qp_type == IBV_QPT_UC ? UC : UD;
	size_t k;

	for (k = 4; k < NELEM(walk); k++) {
		const struct step *s = &walk[k];

		if (s->from == s->to)
			continue;
		full_attr(&a, qp, s->from, s->to);
		a.dest_qp_num = dqpn;
		a.timeout = timeout;
		a.rq_psn = a.sq_psn;	/* both ends start at one PSN */
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | s->req[t]), 0);
		if (s->to == IBV_QPS_RTS)
			break;
	}
	ck_assert_int_eq(qp_state_of(qp), IBV_QPS_RTS);
}

START_TEST(minimal_sequences)
{
	int t;

	for (t = 0; t < NT; t++) {
		struct ibv_qp *qp = make_qp(types[t], 4, 4);

		to_rts(qp, qp->qp_num, 14);
		destroy_qp(qp);
	}
}
END_TEST

/* ---- creation ---- */

START_TEST(create_types)
{
	int t;

	for (t = 0; t < NT; t++) {
		struct ibv_qp_init_attr a = init_attr(types[t], 10, 20);
		struct ibv_qp_init_attr qi;
		struct ibv_qp_attr qa;
		struct ibv_qp *qp;

		a.cap.max_send_sge = 3;
		a.cap.max_recv_sge = 2;
		a.cap.max_inline_data = 17;
		a.qp_context = &a;
		a.sq_sig_all = 1;
		qp = track_qp(ibv_create_qp(pd, &a));
		ck_assert_msg(qp != NULL, "%s", strerror(errno));
		ck_assert_int_eq(qp->qp_type, types[t]);
		ck_assert_int_eq(qp->state, IBV_QPS_RESET);
		ck_assert_ptr_eq(qp->context, ctx);
		ck_assert_ptr_eq(qp->pd, pd);
		ck_assert_ptr_eq(qp->send_cq, cq);
		ck_assert_ptr_eq(qp->recv_cq, cq);
		ck_assert_ptr_null(qp->srq);
		ck_assert_ptr_eq(qp->qp_context, &a);
		ck_assert_uint_ne(qp->qp_num, 0);
		ck_assert_uint_lt(qp->qp_num, 0xffffff);
		/* ibv_create_qp(3): the actual caps, at least those asked. */
		ck_assert_uint_ge(a.cap.max_send_wr, 10);
		ck_assert_uint_ge(a.cap.max_recv_wr, 20);
		ck_assert_uint_ge(a.cap.max_send_sge, 3);
		ck_assert_uint_ge(a.cap.max_recv_sge, 2);
		ck_assert_uint_ge(a.cap.max_inline_data, 17);
		ck_assert_uint_le(a.cap.max_inline_data, 256);
		ck_assert_uint_le(a.cap.max_send_sge, 32);
		ck_assert_int_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP,
					      &qi), 0);
		ck_assert_int_eq(qa.qp_state, IBV_QPS_RESET);
		ck_assert_mem_eq(&qa.cap, &a.cap, sizeof(a.cap));
		ck_assert_mem_eq(&qi.cap, &a.cap, sizeof(a.cap));
		ck_assert_int_eq(qi.qp_type, types[t]);
		ck_assert_ptr_eq(qi.send_cq, cq);
		ck_assert_ptr_eq(qi.recv_cq, cq);
		ck_assert_ptr_eq(qi.qp_context, &a);
		ck_assert_int_eq(qi.sq_sig_all, 1);
	}
}
END_TEST

START_TEST(create_unique_qpns)
{
	struct ibv_qp *a = make_qp(IBV_QPT_RC, 1, 1);
	struct ibv_qp *b = make_qp(IBV_QPT_UD, 1, 1);

	ck_assert_uint_ne(a->qp_num, b->qp_num);
}
END_TEST

static void create_fails(struct ibv_pd *p, struct ibv_qp_init_attr *a,
			 int want, const char *what)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = track_qp(ibv_create_qp(p, a));
	ck_assert_msg(qp == NULL, "%s: created", what);
	ck_assert_msg(errno == want, "%s: errno %d (%s), want %d", what, errno,
		      strerror(errno), want);
}

START_TEST(create_bad)
{
	static const struct { uint32_t sw, rw, ss, rs, inl; } caps[] = {
		{ 16385, 1, 1, 1, 0 }, { 1, 16385, 1, 1, 0 },
		{ 0xffffffff, 1, 1, 1, 0 }, { 1, 0xffffffff, 1, 1, 0 },
		{ 1, 1, 33, 1, 0 }, { 1, 1, 1, 33, 0 },
		{ 1, 1, 0xffff, 1, 0 }, { 1, 1, 1, 0xffff, 0 },
		{ 1, 1, 1, 1, 257 },
	};
	struct ibv_qp_init_attr a;
	struct ibv_context *c2;
	struct ibv_cq *cq2;
	size_t i;

	for (i = 0; i < NELEM(caps); i++) {
		a = init_attr(IBV_QPT_UD, caps[i].sw, caps[i].rw);
		a.cap.max_send_sge = caps[i].ss;
		a.cap.max_recv_sge = caps[i].rs;
		a.cap.max_inline_data = caps[i].inl;
		create_fails(pd, &a, EINVAL, "caps");
	}
	/* XRC: an INI QP needs a send CQ; a TGT QP ibv_create_qp_ex. */
	a = init_attr(IBV_QPT_XRC_SEND, 1, 1);
	a.send_cq = NULL;
	create_fails(pd, &a, EINVAL, "XRC_SEND without a send CQ");
	a = init_attr(IBV_QPT_XRC_RECV, 1, 1);
	create_fails(pd, &a, EINVAL, "XRC_RECV");
	a = init_attr(IBV_QPT_RAW_PACKET, 1, 1);
	create_fails(pd, &a, EOPNOTSUPP, "RAW_PACKET");
	a = init_attr((enum ibv_qp_type)77, 1, 1);
	create_fails(pd, &a, EINVAL, "type 77");
	a = init_attr(IBV_QPT_RC, 1, 1);
	a.send_cq = NULL;
	create_fails(pd, &a, EINVAL, "no send CQ");
	a = init_attr(IBV_QPT_RC, 1, 1);
	a.recv_cq = NULL;
	create_fails(pd, &a, EINVAL, "no recv CQ");
	a = init_attr(IBV_QPT_RC, 1, 1);
	create_fails(NULL, &a, EINVAL, "no PD");

	/* A CQ of another context. */
	c2 = open_dev("rxe0");
	ck_assert_ptr_nonnull(c2);
	cq2 = ibv_create_cq(c2, 4, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq2);
	a = init_attr(IBV_QPT_RC, 1, 1);
	a.recv_cq = cq2;
	create_fails(pd, &a, EINVAL, "foreign CQ");
	ck_assert_int_eq(ibv_destroy_cq(cq2), 0);
	ck_assert_int_eq(ibv_close_device(c2), 0);
}
END_TEST

START_TEST(busy_parents)
{
	struct ibv_cq *rcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr a = init_attr(IBV_QPT_RC, 1, 1);
	struct ibv_qp *qp;

	ck_assert_ptr_nonnull(rcq);
	a.recv_cq = rcq;
	qp = track_qp(ibv_create_qp(pd, &a));
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(ibv_destroy_cq(cq), EBUSY);
	ck_assert_int_eq(ibv_destroy_cq(rcq), EBUSY);
	destroy_qp(qp);
	ck_assert_int_eq(ibv_destroy_cq(rcq), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	cq = NULL;
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	pd = NULL;
}
END_TEST

/* ---- attribute values ---- */

static void bad_value(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		      enum ibv_qp_state cur, const char *what)
{
	int rc = ibv_modify_qp(qp, a, mask);

	ck_assert_msg(rc == EINVAL, "%s: got %d, want EINVAL", what, rc);
	ck_assert_int_eq(qp_state_of(qp), cur);
}

#define RC_INIT (IBV_QP_STATE | PKEY | PORT | ACC)
#define RC_RTR (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | RNRT)
#define RC_RTS (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | \
		IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

START_TEST(bad_values)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 1, 1);
	struct ibv_qp_attr a;

	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	a.port_num = 2;
	bad_value(qp, &a, RC_INIT, IBV_QPS_RESET, "port 2");
	a.port_num = 0;
	bad_value(qp, &a, RC_INIT, IBV_QPS_RESET, "port 0");
	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	a.pkey_index = 1;
	bad_value(qp, &a, RC_INIT, IBV_QPS_RESET, "pkey index 1");
	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	a.qp_access_flags |= IBV_ACCESS_ZERO_BASED;
	bad_value(qp, &a, RC_INIT, IBV_QPS_RESET, "zero-based access");
	a.qp_state = IBV_QPS_UNKNOWN;
	bad_value(qp, &a, IBV_QP_STATE, IBV_QPS_RESET, "state UNKNOWN");
	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_INIT), 0);

	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.path_mtu = (enum ibv_mtu)6;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "path_mtu 6");
	a.path_mtu = (enum ibv_mtu)0;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "path_mtu 0");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.ah_attr.is_global = 0;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "AV without GRH");
	a.ah_attr = good_av();
	a.ah_attr.grh.sgid_index = 5;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "AV empty sgid");
	a.ah_attr.grh.sgid_index = 200;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "AV sgid out of range");
	a.ah_attr = good_av();
	a.ah_attr.port_num = 2;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "AV port 2");
	a.ah_attr = good_av();
	memset(&a.ah_attr.grh.dgid, 0, sizeof(a.ah_attr.grh.dgid));
	a.ah_attr.grh.dgid.raw[0] = 0xfe;
	a.ah_attr.grh.dgid.raw[1] = 0x80;
	a.ah_attr.grh.dgid.raw[15] = 1;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "IPv6 dgid from an IPv4 GID");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.dest_qp_num = 0x1000000;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "dest QPN 2^24");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.max_dest_rd_atomic = 129;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "max_dest_rd_atomic 129");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.min_rnr_timer = 32;
	bad_value(qp, &a, RC_RTR, IBV_QPS_INIT, "min_rnr_timer 32");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.alt_port_num = 2;
	bad_value(qp, &a, RC_RTR | ALT, IBV_QPS_INIT, "alt port 2");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.cur_qp_state = IBV_QPS_INIT;
	bad_value(qp, &a, RC_RTR | CUR, IBV_QPS_INIT, "CUR_STATE from INIT");
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_RTR), 0);

	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.timeout = 32;
	bad_value(qp, &a, RC_RTS, IBV_QPS_RTR, "timeout 32");
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.retry_cnt = 8;
	bad_value(qp, &a, RC_RTS, IBV_QPS_RTR, "retry_cnt 8");
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.rnr_retry = 8;
	bad_value(qp, &a, RC_RTS, IBV_QPS_RTR, "rnr_retry 8");
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.max_rd_atomic = 129;
	bad_value(qp, &a, RC_RTS, IBV_QPS_RTR, "max_rd_atomic 129");
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_RTS;	/* it is RTR */
	bad_value(qp, &a, RC_RTS | CUR, IBV_QPS_RTR, "wrong CUR_STATE");
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_RTS | CUR), 0);
	ck_assert_int_eq(qp_state_of(qp), IBV_QPS_RTS);

	/* Beyond the legacy mask: the extended command only (rdma-core). */
	full_attr(&a, qp, IBV_QPS_RTS, IBV_QPS_RTS);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_RATE_LIMIT), EOPNOTSUPP);
	ck_assert_int_eq(ibv_modify_qp(qp, NULL, IBV_QP_STATE), EINVAL);
}
END_TEST

/* ---- query ---- */

START_TEST(query_returns_set)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 2, 3);
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr a, q;

	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	a.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_INIT), 0);
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	a.path_mtu = IBV_MTU_2048;
	a.dest_qp_num = 0xabcdef;
	a.rq_psn = 0x1abcdef;		/* 24 bits kept */
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 31;
	a.ah_attr.grh.hop_limit = 9;
	a.ah_attr.grh.traffic_class = 0x20;
	a.ah_attr.grh.flow_label = 0x12345;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_RTR), 0);
	full_attr(&a, qp, IBV_QPS_RTR, IBV_QPS_RTS);
	a.sq_psn = 0xfedcba;
	a.timeout = 0;
	a.retry_cnt = 3;
	a.rnr_retry = 6;
	a.max_rd_atomic = 8;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_RTS), 0);

	memset(&q, 0xa5, sizeof(q));
	ck_assert_int_eq(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_AV |
				      IBV_QP_SQ_PSN, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_RTS);
	ck_assert_int_eq(q.cur_qp_state, IBV_QPS_RTS);
	ck_assert_int_eq(q.qp_access_flags,
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(q.port_num, 1);
	ck_assert_int_eq(q.pkey_index, 0);
	ck_assert_int_eq(q.path_mtu, IBV_MTU_2048);
	ck_assert_uint_eq(q.dest_qp_num, 0xabcdef);
	ck_assert_uint_eq(q.rq_psn, 0xabcdef);
	ck_assert_uint_eq(q.sq_psn, 0xfedcba);
	ck_assert_int_eq(q.max_dest_rd_atomic, 16);
	ck_assert_int_eq(q.min_rnr_timer, 31);
	ck_assert_int_eq(q.timeout, 0);
	ck_assert_int_eq(q.retry_cnt, 3);
	ck_assert_int_eq(q.rnr_retry, 6);
	ck_assert_int_eq(q.max_rd_atomic, 8);
	ck_assert_int_eq(q.sq_draining, 0);
	ck_assert_int_eq(q.ah_attr.is_global, 1);
	ck_assert_int_eq(q.ah_attr.port_num, 1);
	ck_assert_mem_eq(&q.ah_attr.grh.dgid, &gid0, sizeof(gid0));
	ck_assert_int_eq(q.ah_attr.grh.sgid_index, 0);
	ck_assert_int_eq(q.ah_attr.grh.hop_limit, 9);
	ck_assert_int_eq(q.ah_attr.grh.traffic_class, 0x20);
	ck_assert_uint_eq(q.ah_attr.grh.flow_label, 0x12345);
	ck_assert_uint_ge(q.cap.max_send_wr, 2);
	ck_assert_uint_ge(q.cap.max_recv_wr, 3);
	ck_assert_int_eq(qi.qp_type, IBV_QPT_RC);
	ck_assert_mem_eq(&qi.cap, &q.cap, sizeof(q.cap));

	/* UD: the Q_Key, as pyverbs' test_modify_ud_qp checks it. */
	qp = make_qp(IBV_QPT_UD, 1, 1);
	to_rts(qp, 0, 0);
	ck_assert_int_eq(ibv_query_qp(qp, &q, IBV_QP_QKEY | IBV_QP_SQ_PSN, &qi), 0);
	ck_assert_uint_eq(q.qkey, 0x11111111);
	ck_assert_uint_eq(q.sq_psn, 0x456);
	a.qp_state = IBV_QPS_RESET;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(qp->state, IBV_QPS_RESET);
}
END_TEST

/* ---- posting ---- */

static int post_send1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, wr, &bad);

	if (rc)
		ck_assert_ptr_eq(bad, wr);
	else
		ck_assert_ptr_null(bad);
	return rc;
}

static int post_recv1(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad = NULL;
	int rc = ibv_post_recv(qp, wr, &bad);

	if (rc)
		ck_assert_ptr_eq(bad, wr);
	else
		ck_assert_ptr_null(bad);
	return rc;
}

START_TEST(post_by_state)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 2);
	struct ibv_send_wr swr = { .wr_id = 1, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rwr = { .wr_id = 2 }, rwr3[3];
	struct ibv_recv_wr *bad;
	struct ibv_qp_attr a;

	ck_assert_int_eq(post_send1(qp, &swr), EINVAL);
	ck_assert_int_eq(post_recv1(qp, &rwr), EINVAL);
	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_INIT), 0);
	ck_assert_int_eq(post_send1(qp, &swr), EINVAL);
	/* Receives may be posted from INIT on; the queue holds two. */
	memset(rwr3, 0, sizeof(rwr3));
	rwr3[0].next = &rwr3[1];
	rwr3[1].next = &rwr3[2];
	bad = NULL;
	ck_assert_int_eq(ibv_post_recv(qp, rwr3, &bad), ENOMEM);
	ck_assert_ptr_eq(bad, &rwr3[2]);
	ck_assert_int_eq(post_recv1(qp, &rwr), ENOMEM);
	full_attr(&a, qp, IBV_QPS_INIT, IBV_QPS_RTR);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_RTR), 0);
	ck_assert_int_eq(post_send1(qp, &swr), EINVAL);
	/* Back to RESET: the receive queue is empty again. */
	a.qp_state = IBV_QPS_RESET;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), EINVAL);
	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, RC_INIT), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), ENOMEM);
}
END_TEST

START_TEST(post_recv_checks)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_UD, 1, 4);
	uint64_t buf[4];
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)buf, .length = 8 },
		{ .addr = (uintptr_t)&buf[1], .length = 8 },
	};
	struct ibv_recv_wr rwr = { .sg_list = sge, .num_sge = 2 };
	struct ibv_qp_attr a;

	full_attr(&a, qp, IBV_QPS_RESET, IBV_QPS_INIT);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | PKEY | PORT | QKEY), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), EINVAL);	/* max_recv_sge 1 */
	rwr.num_sge = 1;
	ck_assert_int_eq(post_recv1(qp, &rwr), 0);
}
END_TEST

/* A QPN of this process's slot that no QP has: its packets are dropped. */
static uint32_t nowhere(struct ibv_qp *qp)
{
	return (qp->qp_num & ~0x3fffu) | 0x3ffe;
}

START_TEST(post_send_checks)
{
	struct ibv_qp_init_attr ia = init_attr(IBV_QPT_RC, 4, 1);
	uint8_t buf[300];
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)buf, .length = 8 },
		{ .addr = (uintptr_t)buf + 8, .length = 8 },
	};
	struct ibv_send_wr wr, wr2, *bad;
	struct ibv_qp *qp;
	int i;

	ia.cap.max_inline_data = 64;
	qp = track_qp(ibv_create_qp(pd, &ia));
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_eq(ia.cap.max_inline_data, 64);
	/* timeout 0: no transport timer, so the requests stay outstanding. */
	to_rts(qp, nowhere(qp), 0);

	memset(&wr, 0, sizeof(wr));
	wr.opcode = (enum ibv_wr_opcode)99;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	wr.opcode = IBV_WR_BIND_MW;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sge;
	wr.num_sge = 2 + (int)ia.cap.max_send_sge;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	/* Inline: at most max_inline_data, only for what goes out. */
	sge[0].length = 65;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	sge[0].length = 8;
	wr.opcode = IBV_WR_RDMA_READ;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	/* Atomics: one 8-byte buffer. */
	wr.send_flags = 0;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	sge[0].length = 4;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);
	sge[0].length = 8;
	wr.num_sge = 0;
	ck_assert_int_eq(post_send1(qp, &wr), EINVAL);

	/* A list stops at its first bad request; those before it are posted. */
	memset(&wr, 0, sizeof(wr));
	memset(&wr2, 0, sizeof(wr2));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.next = &wr2;
	wr2.opcode = (enum ibv_wr_opcode)99;
	bad = NULL;
	ck_assert_int_eq(ibv_post_send(qp, &wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr2);
	/* The queue holds four: three more, then ENOMEM. */
	wr.next = NULL;
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(post_send1(qp, &wr), 0);
	ck_assert_int_eq(post_send1(qp, &wr), ENOMEM);
}
END_TEST

START_TEST(post_opcodes_per_type)
{
	struct ibv_qp *uc = make_qp(IBV_QPT_UC, 4, 1);
	struct ibv_qp *ud = make_qp(IBV_QPT_UD, 4, 1);
	static const enum ibv_wr_opcode not_uc[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV,
	};
	static const enum ibv_wr_opcode not_ud[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV,
	};
	uint64_t word = 0;
	struct ibv_sge sge = { .addr = (uintptr_t)&word, .length = 8 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_ah_attr av = good_av();
	struct ibv_ah *ah;
	size_t i;

	to_rts(uc, nowhere(uc), 0);
	to_rts(ud, 0, 0);
	for (i = 0; i < NELEM(not_uc); i++) {
		wr.opcode = not_uc[i];
		ck_assert_int_eq(post_send1(uc, &wr), EINVAL);
	}
	ah = ibv_create_ah(pd, &av);
	ck_assert_ptr_nonnull(ah);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = nowhere(ud);
	wr.wr.ud.remote_qkey = 0x11111111;
	for (i = 0; i < NELEM(not_ud); i++) {
		wr.opcode = not_ud[i];
		ck_assert_int_eq(post_send1(ud, &wr), EINVAL);
	}
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = NULL;
	ck_assert_int_eq(post_send1(ud, &wr), EINVAL);
	wr.wr.ud.ah = ah;
	ck_assert_int_eq(post_send1(ud, &wr), 0);
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_INLINE;
	ck_assert_int_eq(post_send1(ud, &wr), 0);
	wr.opcode = IBV_WR_RDMA_WRITE;
	ck_assert_int_eq(post_send1(uc, &wr), 0);
	/* The AH may go while its sends are in flight: they hold a copy. */
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/* ---- through the engine: what a post hands over ---- */

/* Takes @n completions from the CQ within a few seconds. */
static void poll_n(struct ibv_wc *wc, int n)
{
	struct timespec tick = { 0, 1000 * 1000 };
	int got = 0, i, r;

	for (i = 0; i < 5000 && got < n; i++) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		ck_assert_int_ge(r, 0);
		got += r;
		if (got < n)
			nanosleep(&tick, NULL);
	}
	ck_assert_msg(got == n, "%d of %d completions", got, n);
}

static const struct ibv_wc *wc_of(const struct ibv_wc *wc, int n,
				  uint64_t wr_id)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	ck_abort_msg("no completion for wr_id %llu", (unsigned long long)wr_id);
	return NULL;
}

START_TEST(post_in_error_flushes)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 4);
	struct ibv_send_wr swr = {
		.wr_id = 7, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr rwr = { .wr_id = 8 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[2];

	to_rts(qp, nowhere(qp), 0);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(post_send1(qp, &swr), 0);
	ck_assert_int_eq(post_recv1(qp, &rwr), 0);
	poll_n(wc, 2);
	ck_assert_int_eq(wc_of(wc, 2, 7)->status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc_of(wc, 2, 8)->status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[0].qp_num, qp->qp_num);
	ck_assert_uint_eq(wc[1].qp_num, qp->qp_num);
}
END_TEST

/* Completions waiting in @c, looked at without taking them. */
static uint32_t pending(struct ibv_cq *c)
{
	struct urxe_cq_ring *r = &to_ucq(c)->ring;

	return atomic_load(&r->prod) - atomic_load(&r->cons);
}

static void wait_pending(struct ibv_cq *c, uint32_t n)
{
	struct timespec tick = { 0, 1000 * 1000 };
	int i;

	for (i = 0; i < 5000 && pending(c) < n; i++)
		nanosleep(&tick, NULL);
	ck_assert_uint_eq(pending(c), n);
}

/*
 * ibv_modify_qp to RESET takes the QP's completions out of its CQs, as
 * rdma-core's mlx4/mlx5 providers do: pyverbs restates QPs through RESET
 * after an error and expects no stale flush errors.  Another QP's
 * completions stay, in order, also across the ring's wrap.
 */
START_TEST(reset_drops_completions)
{
	struct ibv_cq *shared = ibv_create_cq(ctx, 6, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = 0 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr ia;
	const uint64_t kept[] = { 1, 3, 11 };
	struct ibv_qp *q1, *q2;
	struct ibv_wc wc[8];
	int i;

	ck_assert_ptr_nonnull(shared);
	ck_assert_ptr_nonnull(rcq);
	ia = init_attr(IBV_QPT_RC, 4, 4);
	ia.send_cq = shared;
	ia.recv_cq = rcq;
	q1 = track_qp(ibv_create_qp(pd, &ia));
	ia.recv_cq = shared;
	q2 = track_qp(ibv_create_qp(pd, &ia));
	ck_assert_ptr_nonnull(q1);
	ck_assert_ptr_nonnull(q2);
	to_rts(q1, nowhere(q1), 0);
	to_rts(q2, nowhere(q2), 0);
	ck_assert_int_eq(ibv_modify_qp(q1, &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(ibv_modify_qp(q2, &a, IBV_QP_STATE), 0);
	/* Run the free-running indices near the end of the 8-slot ring. */
	for (i = 0; i < 7; i++) {
		swr.wr_id = 100;
		ck_assert_int_eq(post_send1(q2, &swr), 0);
		wait_pending(shared, 1);
		ck_assert_int_eq(ibv_poll_cq(shared, 8, wc), 1);
	}
	/* Flush errors interleaved: q1, q2, q1, q2, then q1's receive. */
	for (i = 0; i < 4; i++) {
		swr.wr_id = (uint64_t)i;
		ck_assert_int_eq(post_send1(i & 1 ? q2 : q1, &swr), 0);
		wait_pending(shared, (uint32_t)i + 1);
	}
	rwr.wr_id = 10;
	ck_assert_int_eq(post_recv1(q1, &rwr), 0);
	wait_pending(rcq, 1);
	rwr.wr_id = 11;
	ck_assert_int_eq(post_recv1(q2, &rwr), 0);
	wait_pending(shared, 5);

	a.qp_state = IBV_QPS_RESET;
	ck_assert_int_eq(ibv_modify_qp(q1, &a, IBV_QP_STATE), 0);
	ck_assert_uint_eq(pending(rcq), 0);
	ck_assert_int_eq(ibv_poll_cq(rcq, 8, wc), 0);
	ck_assert_int_eq(ibv_poll_cq(shared, 8, wc), 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(wc[i].wr_id, kept[i]);
		ck_assert_uint_eq(wc[i].qp_num, q2->qp_num);
		ck_assert_int_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	/* Reused after RESET: q1 flushes anew once in ERR again. */
	to_rts(q1, nowhere(q1), 0);
	a.qp_state = IBV_QPS_ERR;
	ck_assert_int_eq(ibv_modify_qp(q1, &a, IBV_QP_STATE), 0);
	rwr.wr_id = 12;
	ck_assert_int_eq(post_recv1(q1, &rwr), 0);
	wait_pending(rcq, 1);
	ck_assert_int_eq(ibv_poll_cq(rcq, 8, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 12);
	destroy_qp(q1);
	destroy_qp(q2);
	ck_assert_int_eq(ibv_destroy_cq(shared), 0);
	ck_assert_int_eq(ibv_destroy_cq(rcq), 0);
}
END_TEST

/* Inline data is copied at post time: the buffer may change right after. */
START_TEST(rc_send_inline_and_sge)
{
	struct ibv_qp_init_attr ia = init_attr(IBV_QPT_RC, 4, 4);
	char src[32] = "gathered", dst[2][64], msg[32] = "inline, copied at post";
	struct ibv_qp *qa, *qb;
	struct ibv_mr *smr, *rmr;
	struct ibv_sge ss = { .addr = (uintptr_t)src, .length = 9 };
	struct ibv_sge ms = { .addr = (uintptr_t)msg, .length = 23 };
	struct ibv_sge rs[2];
	struct ibv_recv_wr rwr[2];
	struct ibv_send_wr swr[2], *bad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	struct ibv_wc wc[4];
	const struct ibv_wc *w;
	int i;

	ia.cap.max_inline_data = 64;
	qa = track_qp(ibv_create_qp(pd, &ia));
	ia = init_attr(IBV_QPT_RC, 4, 4);
	qb = track_qp(ibv_create_qp(pd, &ia));
	ck_assert_ptr_nonnull(qa);
	ck_assert_ptr_nonnull(qb);
	smr = ibv_reg_mr(pd, src, sizeof(src), 0);
	rmr = ibv_reg_mr(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(smr);
	ck_assert_ptr_nonnull(rmr);
	ss.lkey = smr->lkey;
	to_rts(qa, qb->qp_num, 14);
	to_rts(qb, qa->qp_num, 14);

	memset(dst, 0, sizeof(dst));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 2; i++) {
		rs[i] = (struct ibv_sge){ .addr = (uintptr_t)dst[i],
					  .length = 64, .lkey = rmr->lkey };
		rwr[i].wr_id = 100 + i;
		rwr[i].sg_list = &rs[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i ? NULL : &rwr[1];
	}
	ck_assert_int_eq(ibv_post_recv(qb, rwr, &rbad), 0);
	memset(swr, 0, sizeof(swr));
	swr[0] = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &ms, .num_sge = 1,
				       .opcode = IBV_WR_SEND_WITH_IMM,
				       .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
				       .imm_data = htobe32(0x01020304),
				       .next = &swr[1] };
	swr[1] = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				       .opcode = IBV_WR_SEND,
				       .send_flags = IBV_SEND_SIGNALED };
	ck_assert_int_eq(ibv_post_send(qa, swr, &bad), 0);
	memset(msg, 'X', sizeof(msg));
	poll_n(wc, 4);
	for (i = 0; i < 4; i++)
		ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "wr %llu: %s",
			      (unsigned long long)wc[i].wr_id,
			      ibv_wc_status_str(wc[i].status));
	w = wc_of(wc, 4, 100);
	ck_assert_int_eq(w->opcode, IBV_WC_RECV);
	ck_assert_uint_eq(w->byte_len, 23);
	ck_assert(w->wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(w->imm_data), 0x01020304);
	ck_assert_uint_eq(w->qp_num, qb->qp_num);
	ck_assert_str_eq(dst[0], "inline, copied at post");
	w = wc_of(wc, 4, 101);
	ck_assert_uint_eq(w->byte_len, 9);
	ck_assert_str_eq(dst[1], "gathered");
	ck_assert_int_eq(wc_of(wc, 4, 1)->opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc_of(wc, 4, 2)->qp_num, qa->qp_num);
	destroy_qp(qa);
	destroy_qp(qb);
	ck_assert_int_eq(ibv_dereg_mr(smr), 0);
	ck_assert_int_eq(ibv_dereg_mr(rmr), 0);
}
END_TEST

/* A UD send carries the AH's path and the WR's QPN and Q_Key. */
START_TEST(ud_send_through_ah)
{
	struct ibv_qp *u1 = make_qp(IBV_QPT_UD, 4, 4);
	struct ibv_qp *u2 = make_qp(IBV_QPT_UD, 4, 4);
	struct ibv_ah_attr av = good_av();
	char msg[16] = "datagram", buf[2][40 + 64];
	struct ibv_sge ms = { .addr = (uintptr_t)msg, .length = 9 };
	struct ibv_sge rs[2];
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_send_wr swr, *bad;
	struct ibv_wc wc[4];
	const struct ibv_wc *w;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int i;

	to_rts(u1, 0, 0);
	to_rts(u2, 0, 0);
	ah = ibv_create_ah(pd, &av);
	ck_assert_ptr_nonnull(ah);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	memset(buf, 0, sizeof(buf));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 2; i++) {
		rs[i] = (struct ibv_sge){ .addr = (uintptr_t)buf[i],
					  .length = sizeof(buf[i]),
					  .lkey = mr->lkey };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 200 + i,
					       .sg_list = &rs[i], .num_sge = 1 };
	}
	rbad = NULL;
	ck_assert_int_eq(ibv_post_recv(u2, &rwr[0], &rbad), 0);
	ck_assert_int_eq(ibv_post_recv(u2, &rwr[1], &rbad), 0);
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 3;
	swr.sg_list = &ms;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = u2->qp_num;
	swr.wr.ud.remote_qkey = 0x11111111;
	bad = NULL;
	ck_assert_int_eq(ibv_post_send(u1, &swr, &bad), 0);
	/* IBA 10.2.5: a Q_Key with its high bit set means the sender's own. */
	swr.wr_id = 4;
	swr.wr.ud.remote_qkey = 0x80000000;
	ck_assert_int_eq(ibv_post_send(u1, &swr, &bad), 0);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);	/* sends hold a copy */
	poll_n(wc, 4);
	for (i = 0; i < 4; i++)
		ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "wr %llu: %s",
			      (unsigned long long)wc[i].wr_id,
			      ibv_wc_status_str(wc[i].status));
	for (i = 0; i < 2; i++) {
		w = wc_of(wc, 4, 200 + i);
		ck_assert_uint_eq(w->byte_len, 40 + 9);
		ck_assert_uint_eq(w->src_qp, u1->qp_num);
		ck_assert(w->wc_flags & IBV_WC_GRH);
		ck_assert_str_eq(buf[i] + 40, "datagram");
	}
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

/* ---- address handles ---- */

static struct ibv_ah *track_ah(struct ibv_ah *ah)
{
	int i;

	for (i = 0; ah && i < N_OBJ; i++)
		if (!ahs[i]) {
			ahs[i] = ah;
			break;
		}
	return ah;
}

static void ah_fails(struct ibv_ah_attr *av, const char *what)
{
	struct ibv_ah *ah;

	errno = 0;
	ah = track_ah(ibv_create_ah(pd, av));
	ck_assert_msg(ah == NULL, "%s: created", what);
	ck_assert_msg(errno == EINVAL, "%s: errno %d", what, errno);
}

START_TEST(ah_create)
{
	struct ibv_ah_attr av = good_av();
	struct ibv_ah *ah;
	int i;

	av.is_global = 0;
	ah_fails(&av, "no GRH on RoCE");
	av = good_av();
	av.grh.sgid_index = 5;
	ah_fails(&av, "empty sgid");
	av.grh.sgid_index = 255;
	ah_fails(&av, "sgid out of range");
	av = good_av();
	av.port_num = 2;
	ah_fails(&av, "port 2");
	av = good_av();
	ah = track_ah(ibv_create_ah(pd, &av));
	ck_assert_msg(ah != NULL, "%s", strerror(errno));
	ck_assert_ptr_eq(ah->context, ctx);
	ck_assert_ptr_eq(ah->pd, pd);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	for (i = 0; i < N_OBJ; i++)
		if (ahs[i] == ah)
			ahs[i] = NULL;
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	pd = NULL;
}
END_TEST

static Suite *qp_suite(void)
{
	Suite *s = suite_create("qp");
	TCase *tc;

	tc = tu_tcase(s, "create", setup, teardown);
	tcase_add_test(tc, create_types);
	tcase_add_test(tc, create_unique_qpns);
	tcase_add_test(tc, create_bad);
	tcase_add_test(tc, busy_parents);

	tc = tu_tcase(s, "modify", setup, teardown);
	tcase_add_loop_test(tc, transition_table, 0, NT);
	tcase_add_test(tc, minimal_sequences);
	tcase_add_test(tc, bad_values);
	tcase_add_test(tc, query_returns_set);

	tc = tu_tcase(s, "post", setup, teardown);
	tcase_add_test(tc, post_by_state);
	tcase_add_test(tc, post_recv_checks);
	tcase_add_test(tc, post_send_checks);
	tcase_add_test(tc, post_opcodes_per_type);

	tc = tu_tcase(s, "traffic", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, post_in_error_flushes);
	tcase_add_test(tc, reset_drops_completions);
	tcase_add_test(tc, rc_send_inline_and_sge);
	tcase_add_test(tc, ud_send_through_ah);

	tc = tu_tcase(s, "ah", setup, teardown);
	tcase_add_test(tc, ah_create);
	return s;
}

int main(void)
{
	return tu_run(qp_suite());
}
