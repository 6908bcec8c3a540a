// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC (IBA annex A14) through the public verbs on rxe0 (lo), one process,
 * two contexts: A has the XRC_SEND (INI) QPs, B the XRC domain (a file's),
 * its XRC SRQs and the XRC_RECV (TGT) QP.
 *
 * Objects:
 *   XRC SRQs: ibv_create_srq_ex needs comp_mask XRCD, CQ and PD of its
 *   context (EINVAL), gets a number (ibv_get_srq_num; EINVAL for a basic
 *   SRQ), resizes, is queried, holds its PD, CQ and XRCD handle (EBUSY),
 *   and attaches to no QP (EINVAL);
 *   XRC QPs: XRC_SEND through ibv_create_qp and _ex (a PD and a send CQ;
 *   receive caps ignored), XRC_RECV through _ex only (comp_mask XRCD; no
 *   PD, CQs or queues), both types' modify rules as the kernel's table
 *   (with the attributes the kernel ignores dropped), ibv_post_recv on
 *   either and ibv_post_send on a TGT QP EINVAL;
 *   ibv_open_qp: a handle on a TGT QP of the same domain made in another
 *   context (comp_mask, type, number and XRCD rules), modify and query
 *   through any handle act on one QP, each handle counts in its XRCD
 *   handle, the QP outlives its creator's handle until the last one goes,
 *   and its async events reach every open handle in its own context.
 * Traffic (INI in A -> TGT in B):
 *   SEND (several packets) into two SRQs addressed alternately, each
 *   completing on its own SRQ's CQ naming the TGT QP; SEND with
 *   immediate; RDMA WRITE, READ and both atomics on an MR of the SRQ's PD;
 *   the same through the ibv_wr_* API with ibv_wr_set_xrc_srqn (inline
 *   data and SGE lists too); an rkey of another PD, and an SRQ number
 *   nobody has, complete with IBV_WC_REM_ACCESS_ERR at the sender; the
 *   SRQ limit event.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <urxe/provider.h>

#include "testutil.h"
#include "verbs_util.h"

#define BUFSZ (128 * 1024)
#define SLOT 8192			/* a receive buffer, in B.buf */
#define MSG 3000			/* 3 packets of the 1024-byte MTU */
#define WAIT_MS 3000
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define OPS_ALL (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE | \
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
		 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct tu_sandbox sb;
static struct side A, B;
static struct ibv_cq *cq2;		/* B: the second SRQ's CQ */
static struct ibv_pd *pd2;		/* B: another PD, with mr2 */
static struct ibv_mr *mr2;
static struct ibv_xrcd *xa, *xb;	/* the domain, opened in A and in B */
static char *dom_path;
static int dom_fd = -1;
static union ibv_gid gid;

/* Objects a test made: teardown destroys what it left. */
static struct ibv_qp *qps[16];
static struct ibv_srq *srqs[8];

/* ---- fixture ---- */

static void side_init(struct side *s)
{
	memset(s, 0, sizeof(*s));
	s->ctx = vu_open_rxe0();
	s->pd = ibv_alloc_pd(s->ctx);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	ck_assert_ptr_nonnull(s->cq);
	ck_assert_int_eq(posix_memalign((void **)&s->buf, 4096, BUFSZ), 0);
	memset(s->buf, 0, BUFSZ);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_ptr_nonnull(s->mr);
}

static void side_fini(struct side *s)
{
	ck_assert_int_eq(ibv_dereg_mr(s->mr), 0);
	ck_assert_int_eq(ibv_destroy_cq(s->cq), 0);
	ck_assert_int_eq(ibv_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(ibv_close_device(s->ctx), 0);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static struct ibv_xrcd *xopen(struct ibv_context *c, int fd)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(c, &a);

	ck_assert_msg(x != NULL, "ibv_open_xrcd: %s", strerror(errno));
	return x;
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	side_init(&A);
	side_init(&B);
	ck_assert_int_eq(ibv_query_gid(A.ctx, 1, 0, &gid), 0);
	cq2 = ibv_create_cq(B.ctx, 256, NULL, NULL, 0);
	pd2 = ibv_alloc_pd(B.ctx);
	ck_assert(cq2 && pd2);
	mr2 = ibv_reg_mr(pd2, B.buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(mr2);
	dom_path = tu_path(sb.dir, "domain");
	ck_assert_int_eq(tu_write_file(dom_path, ""), 0);
	dom_fd = open(dom_path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(dom_fd, 0);
	xb = xopen(B.ctx, dom_fd);
	xa = xopen(A.ctx, dom_fd);
	ck_assert_uint_eq(to_uxrcd(xa)->domain_id, to_uxrcd(xb)->domain_id);
}

static void teardown(void)
{
	size_t i;

	for (i = 0; i < NELEM(qps); i++)
		if (qps[i])
			ck_assert_int_eq(ibv_destroy_qp(qps[i]), 0);
	for (i = 0; i < NELEM(srqs); i++)
		if (srqs[i])
			ck_assert_int_eq(ibv_destroy_srq(srqs[i]), 0);
	memset(qps, 0, sizeof(qps));
	memset(srqs, 0, sizeof(srqs));
	ck_assert_int_eq(ibv_close_xrcd(xa), 0);
	ck_assert_int_eq(ibv_close_xrcd(xb), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr2), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq2), 0);
	side_fini(&A);
	side_fini(&B);
	close(dom_fd);
	dom_fd = -1;
	free(dom_path);
	tu_sandbox_fini(&sb);
}

static void *track(void **tbl, size_t n, void *obj)
{
	size_t i;

	for (i = 0; obj && i < n; i++)
		if (!tbl[i]) {
			tbl[i] = obj;
			return obj;
		}
	ck_assert_msg(!obj, "too many objects for teardown");
	return obj;
}

static void forget(void **tbl, size_t n, void *obj)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tbl[i] == obj)
			tbl[i] = NULL;
}

static struct ibv_qp *track_qp(struct ibv_qp *qp)
{
	return track((void **)qps, NELEM(qps), qp);
}

static void destroy_qp(struct ibv_qp *qp)
{
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	forget((void **)qps, NELEM(qps), qp);
}

static void destroy_srq(struct ibv_srq *s)
{
	ck_assert_int_eq(ibv_destroy_srq(s), 0);
	forget((void **)srqs, NELEM(srqs), s);
}

static int users(struct ibv_xrcd *x)
{
	return atomic_load(&to_uxrcd(x)->users);
}

/* ---- objects ---- */

static struct ibv_srq_init_attr_ex xsrq_attr(struct ibv_cq *cq,
					     struct ibv_pd *pd)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 32;
	a.attr.max_sge = 2;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = xb;
	a.cq = cq;
	a.pd = pd;
	a.srq_context = &sb;
	return a;
}

static struct ibv_srq *xsrq(struct ibv_cq *cq, struct ibv_pd *pd)
{
	struct ibv_srq_init_attr_ex a = xsrq_attr(cq, pd);
	struct ibv_srq *s = ibv_create_srq_ex(B.ctx, &a);

	ck_assert_msg(s != NULL, "XRC SRQ: %s", strerror(errno));
	ck_assert_uint_ge(a.attr.max_wr, 32);
	ck_assert_uint_ge(a.attr.max_sge, 2);
	ck_assert_ptr_eq(s->pd, pd);
	ck_assert_ptr_eq(s->context, B.ctx);
	ck_assert_ptr_eq(s->srq_context, &sb);
	return track((void **)srqs, NELEM(srqs), s);
}

static uint32_t srqn(struct ibv_srq *s)
{
	uint32_t n = 0;

	ck_assert_int_eq(ibv_get_srq_num(s, &n), 0);
	return n;
}

static struct ibv_qp *ini_qp(uint64_t ops)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_SEND;
	a.send_cq = A.cq;
	a.cap.max_send_wr = 64;
	a.cap.max_send_sge = 4;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = A.pd;
	if (ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
	}
	qp = ibv_create_qp_ex(A.ctx, &a);
	ck_assert_msg(qp != NULL, "XRC_SEND QP: %s", strerror(errno));
	ck_assert_int_eq(qp->qp_type, IBV_QPT_XRC_SEND);
	ck_assert_uint_eq(a.cap.max_recv_wr, 0);
	return track_qp(qp);
}

static struct ibv_qp *tgt_qp(void)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = xb;
	a.qp_context = &sb;
	qp = ibv_create_qp_ex(B.ctx, &a);
	ck_assert_msg(qp != NULL, "XRC_RECV QP: %s", strerror(errno));
	ck_assert_int_eq(qp->qp_type, IBV_QPT_XRC_RECV);
	ck_assert_ptr_null(qp->pd);
	ck_assert_ptr_eq(qp->context, B.ctx);
	ck_assert_ptr_eq(qp->qp_context, &sb);
	return track_qp(qp);
}

static struct ibv_qp *open_qp_in(struct ibv_context *c, struct ibv_xrcd *x,
				 uint32_t qpn)
{
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT,
		.qp_num = qpn,
		.xrcd = x,
		.qp_context = &A,
		.qp_type = IBV_QPT_XRC_RECV,
	};

	errno = 0;
	return track_qp(ibv_open_qp(c, &a));
}

/* ---- connecting, as ibv_xsrq_pingpong does (the kernel's masks) ---- */

/* What connect_pair gives both ends; rtr_attr and rts_attr are the same. */
static const struct vu_qp_opts conn = {
	.mtu = IBV_MTU_1024, .psn = 0x123, .hop_limit = 64,
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC,
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.rd_atomic = 4,
};

static struct ibv_qp_attr rtr_attr(uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 0x123, .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .hop_limit = 64 } },
	};

	return a;
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RTR_RESP (IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_REQ (IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		 IBV_QP_MAX_QP_RD_ATOMIC)

static struct ibv_qp_attr rts_attr(void)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 0x123, .max_rd_atomic = 4,
	};

	return a;
}

/* INI @ini <-> TGT @tgt, both RTS. */
static void connect_pair(struct ibv_qp *ini, struct ibv_qp *tgt)
{
	vu_to_init(ini, &conn);
	vu_to_init(tgt, &conn);
	vu_to_rtr(tgt, ini->qp_num, &gid, &conn);
	vu_to_rts(tgt, &conn);
	vu_to_rtr(ini, tgt->qp_num, &gid, &conn);
	vu_to_rts(ini, &conn);
}

/* ---- XRC SRQs ---- */

START_TEST(srq_create_and_number)
{
	struct ibv_srq *s1, *s2, *basic;
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq_attr qa;
	uint32_t n1, n2, n;

	s1 = xsrq(B.cq, B.pd);
	s2 = xsrq(cq2, B.pd);
	n1 = srqn(s1);
	n2 = srqn(s2);
	/* Numbers of the QPN space: 24 bits, the instance's slot above 14. */
	ck_assert_uint_ne(n1, n2);
	ck_assert_uint_le(n1, 0xffffff);
	ck_assert_uint_eq(n1 >> 14, n2 >> 14);
	ck_assert_int_eq(users(xb), 2);
	ck_assert_int_eq(users(xa), 0);
	ck_assert_int_eq(ibv_query_srq(s1, &qa), 0);
	ck_assert_uint_ge(qa.max_wr, 32);
	ck_assert_uint_ge(qa.max_sge, 2);
	ck_assert_uint_eq(qa.srq_limit, 0);

	/* A basic SRQ has no number. */
	basic = ibv_create_srq(B.pd, &ia);
	ck_assert_ptr_nonnull(basic);
	n = 77;
	ck_assert_int_eq(ibv_get_srq_num(basic, &n), EINVAL);
	ck_assert_uint_eq(n, 77);
	ck_assert_int_eq(ibv_destroy_srq(basic), 0);

	destroy_srq(s1);
	destroy_srq(s2);
	ck_assert_int_eq(users(xb), 0);
}
END_TEST

struct srq_bad {
	const char *what;
	uint32_t drop_mask;		/* comp_mask bits left out */
	int field;			/* 1 xrcd, 2 cq, 3 pd: a foreign one */
	int err;
};

static const struct srq_bad srq_bads[] = {
	{ "no XRCD bit", IBV_SRQ_INIT_ATTR_XRCD, 0, EINVAL },
	{ "no CQ bit", IBV_SRQ_INIT_ATTR_CQ, 0, EINVAL },
	{ "no PD bit", IBV_SRQ_INIT_ATTR_PD, 0, EINVAL },
	{ "XRCD of another context", 0, 1, EINVAL },
	{ "CQ of another context", 0, 2, EINVAL },
	{ "PD of another context", 0, 3, EINVAL },
	{ "NULL XRCD", 0, 4, EINVAL },
	{ "NULL CQ", 0, 5, EINVAL },
};

START_TEST(srq_create_bad)
{
	const struct srq_bad *c = &srq_bads[_i];
	struct ibv_srq_init_attr_ex a = xsrq_attr(B.cq, B.pd);

	a.comp_mask &= ~c->drop_mask;
	if (c->field == 1)
		a.xrcd = xa;
	else if (c->field == 2)
		a.cq = A.cq;
	else if (c->field == 3)
		a.pd = A.pd;
	else if (c->field == 4)
		a.xrcd = NULL;
	else if (c->field == 5)
		a.cq = NULL;
	errno = 0;
	ck_assert_msg(ibv_create_srq_ex(B.ctx, &a) == NULL, "%s: created", c->what);
	ck_assert_msg(errno == c->err, "%s: %s", c->what, strerror(errno));
	ck_assert_int_eq(users(xa), 0);
	ck_assert_int_eq(users(xb), 0);
}
END_TEST

/* The SRQ holds its PD, CQ and XRCD handle; no QP may use it. */
START_TEST(srq_holds_and_refuses)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = B.cq, .recv_cq = B.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_srq *s = xsrq(cq2, pd2);

	ck_assert_int_eq(ibv_close_xrcd(xb), EBUSY);
	ck_assert_int_eq(ibv_destroy_cq(cq2), EBUSY);
	ck_assert_int_eq(ibv_dereg_mr(mr2), 0);
	mr2 = NULL;
	ck_assert_int_eq(ibv_dealloc_pd(pd2), EBUSY);
	/* IBA A14: an XRC SRQ takes requests of TGT QPs only. */
	ia.srq = s;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(B.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);
	ia.qp_type = IBV_QPT_UD;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(B.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);
	destroy_srq(s);
	mr2 = ibv_reg_mr(pd2, B.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr2);
}
END_TEST

START_TEST(srq_post_modify_query)
{
	struct ibv_srq *s = xsrq(B.cq, B.pd);
	struct ibv_sge sge[3] = {
		{ (uintptr_t)B.buf, 64, B.mr->lkey },
		{ (uintptr_t)B.buf + 64, 64, B.mr->lkey },
		{ (uintptr_t)B.buf + 128, 64, B.mr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 2 },
			   *bad = NULL;
	struct ibv_srq_attr qa = { .max_wr = 64 };
	int i;

	for (i = 0; i < 10; i++)
		ck_assert_int_eq(ibv_post_srq_recv(s, &wr, &bad), 0);
	wr.num_sge = 3;
	ck_assert_int_eq(ibv_post_srq_recv(s, &wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	/* Resize with WQEs posted; a limit beyond the size is refused. */
	ck_assert_int_eq(ibv_modify_srq(s, &qa, IBV_SRQ_MAX_WR), 0);
	qa.srq_limit = 8;
	ck_assert_int_eq(ibv_modify_srq(s, &qa, IBV_SRQ_LIMIT), 0);
	memset(&qa, 0, sizeof(qa));
	ck_assert_int_eq(ibv_query_srq(s, &qa), 0);
	ck_assert_uint_ge(qa.max_wr, 64);
	ck_assert_uint_eq(qa.srq_limit, 8);
	qa.max_wr = 4;
	ck_assert_int_eq(ibv_modify_srq(s, &qa, IBV_SRQ_MAX_WR), EINVAL);
	qa.srq_limit = 1000;
	ck_assert_int_eq(ibv_modify_srq(s, &qa, IBV_SRQ_LIMIT), EINVAL);
}
END_TEST

/* ---- XRC QPs ---- */

START_TEST(qp_create_rules)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = A.cq, .recv_cq = A.cq, .qp_type = IBV_QPT_XRC_SEND,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	/* XRC_SEND through the old verb: the receive side is ignored. */
	qp = track_qp(ibv_create_qp(A.pd, &ia));
	ck_assert_msg(qp != NULL, "ibv_create_qp XRC_SEND: %s", strerror(errno));
	ck_assert_uint_eq(ia.cap.max_recv_wr, 0);
	ck_assert_uint_eq(ia.cap.max_recv_sge, 0);
	ck_assert_uint_ge(ia.cap.max_send_wr, 8);
	ck_assert_ptr_eq(qp->pd, A.pd);
	ck_assert_ptr_eq(qp->send_cq, A.cq);
	ck_assert_int_eq(ibv_destroy_cq(A.cq), EBUSY);
	destroy_qp(qp);
	ia.send_cq = NULL;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(A.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);
	/* XRC_RECV belongs to a domain: only ibv_create_qp_ex names it. */
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.send_cq = A.cq;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(A.pd, &ia));
	ck_assert_int_eq(errno, EINVAL);

	memset(&ex, 0, sizeof(ex));
	ex.qp_type = IBV_QPT_XRC_RECV;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = B.pd;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(B.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	ex.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(B.ctx, &ex));	/* xrcd NULL */
	ck_assert_int_eq(errno, EINVAL);
	ex.xrcd = xa;						/* A's */
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(B.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	ex.xrcd = xb;
	ex.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ex.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(B.ctx, &ex));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* Queues and CQs asked for are ignored: a TGT QP has none. */
	ex.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ex.send_cq = ex.recv_cq = B.cq;
	ex.cap.max_send_wr = ex.cap.max_recv_wr = 8;
	qp = track_qp(ibv_create_qp_ex(B.ctx, &ex));
	ck_assert_msg(qp != NULL, "XRC_RECV: %s", strerror(errno));
	ck_assert_uint_eq(ex.cap.max_send_wr, 0);
	ck_assert_uint_eq(ex.cap.max_recv_wr, 0);
	ck_assert_ptr_null(qp->send_cq);
	ck_assert_ptr_null(qp->recv_cq);
	ck_assert_ptr_null(qp->pd);
	ck_assert_int_eq(users(xb), 1);
	ck_assert_int_eq(ibv_close_xrcd(xb), EBUSY);
	destroy_qp(qp);
	ck_assert_int_eq(users(xb), 0);

	/* XRC_SEND through _ex: a PD, and every RC operation. */
	memset(&ex, 0, sizeof(ex));
	ex.qp_type = IBV_QPT_XRC_SEND;
	ex.send_cq = A.cq;
	ex.cap.max_send_wr = 4;
	ex.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ex.send_ops_flags = OPS_ALL;
	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(A.ctx, &ex));
	ck_assert_int_eq(errno, EINVAL);
	ini_qp(OPS_ALL);
}
END_TEST

/* One transition's attribute mask: accepted or EINVAL. */
struct mod_case {
	const char *what;
	enum ibv_qp_type type;
	enum ibv_qp_state from;		/* reached the usual way first */
	int mask;
	int err;
};

#define INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
		   IBV_QP_ACCESS_FLAGS)

static const struct mod_case mod_cases[] = {
	{ "INI init", IBV_QPT_XRC_SEND, IBV_QPS_RESET, INIT_MASK, 0 },
	{ "INI init, no access", IBV_QPT_XRC_SEND, IBV_QPS_RESET,
	  INIT_MASK & ~IBV_QP_ACCESS_FLAGS, EINVAL },
	{ "INI init, qkey", IBV_QPT_XRC_SEND, IBV_QPS_RESET,
	  INIT_MASK | IBV_QP_QKEY, EINVAL },
	{ "INI rtr", IBV_QPT_XRC_SEND, IBV_QPS_INIT, RTR_MASK, 0 },
	{ "INI rtr, responder attrs ignored", IBV_QPT_XRC_SEND, IBV_QPS_INIT,
	  RTR_MASK | RTR_RESP, 0 },
	{ "INI rtr, no rq_psn", IBV_QPT_XRC_SEND, IBV_QPS_INIT,
	  RTR_MASK & ~IBV_QP_RQ_PSN, EINVAL },
	{ "INI rtr, no av", IBV_QPT_XRC_SEND, IBV_QPS_INIT,
	  RTR_MASK & ~IBV_QP_AV, EINVAL },
	{ "INI rts", IBV_QPT_XRC_SEND, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | RTS_REQ, 0 },
	{ "INI rts, no retry_cnt", IBV_QPT_XRC_SEND, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY |
	  IBV_QP_MAX_QP_RD_ATOMIC, EINVAL },
	{ "INI rts, min_rnr_timer ignored", IBV_QPT_XRC_SEND, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | RTS_REQ |
	  IBV_QP_MIN_RNR_TIMER, 0 },
	{ "TGT init", IBV_QPT_XRC_RECV, IBV_QPS_RESET, INIT_MASK, 0 },
	{ "TGT init, no port", IBV_QPT_XRC_RECV, IBV_QPS_RESET,
	  INIT_MASK & ~IBV_QP_PORT, EINVAL },
	{ "TGT rtr", IBV_QPT_XRC_RECV, IBV_QPS_INIT, RTR_MASK | RTR_RESP, 0 },
	{ "TGT rtr, no min_rnr_timer", IBV_QPT_XRC_RECV, IBV_QPS_INIT,
	  RTR_MASK | IBV_QP_MAX_DEST_RD_ATOMIC, EINVAL },
	{ "TGT rtr, no max_dest_rd_atomic", IBV_QPT_XRC_RECV, IBV_QPS_INIT,
	  RTR_MASK | IBV_QP_MIN_RNR_TIMER, EINVAL },
	{ "TGT rts", IBV_QPT_XRC_RECV, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN, 0 },
	{ "TGT rts, requester attrs ignored", IBV_QPT_XRC_RECV, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | RTS_REQ, 0 },
	{ "TGT rts, no timeout", IBV_QPT_XRC_RECV, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_SQ_PSN, EINVAL },
	{ "TGT rts, min_rnr_timer", IBV_QPT_XRC_RECV, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN |
	  IBV_QP_MIN_RNR_TIMER, 0 },
	{ "TGT rts, qkey", IBV_QPT_XRC_RECV, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_QKEY, EINVAL },
};

/* Moves @qp (RESET) up to @to with the masks connect_pair uses. */
static void walk(struct ibv_qp *qp, enum ibv_qp_state to, uint32_t dqpn)
{
	if (to == IBV_QPS_RESET)
		return;
	vu_to_init(qp, &conn);
	if (to == IBV_QPS_INIT)
		return;
	vu_to_rtr(qp, dqpn, &gid, &conn);
}

START_TEST(qp_modify_rules)
{
	const struct mod_case *c = &mod_cases[_i];
	struct ibv_qp *qp = c->type == IBV_QPT_XRC_SEND ? ini_qp(0) : tgt_qp();
	enum ibv_qp_state next;
	struct ibv_qp_attr a = rtr_attr(0x42);
	struct ibv_qp_attr rts = rts_attr();
	struct ibv_qp_init_attr ia;
	int rc;

	walk(qp, c->from, 0x42);
	next = c->from == IBV_QPS_RESET ? IBV_QPS_INIT :
	       c->from == IBV_QPS_INIT ? IBV_QPS_RTR : IBV_QPS_RTS;
	a.qp_state = next;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a.port_num = 1;
	a.timeout = rts.timeout;
	a.retry_cnt = rts.retry_cnt;
	a.rnr_retry = rts.rnr_retry;
	a.sq_psn = rts.sq_psn;
	a.max_rd_atomic = rts.max_rd_atomic;
	a.qkey = 0x1111;
	rc = ibv_modify_qp(qp, &a, c->mask);
	ck_assert_msg(rc == c->err, "%s: %s, want %s", c->what, strerror(rc),
		      strerror(c->err));
	ck_assert_int_eq(vu_qp_state(qp), c->err ? c->from : next);
	if (c->err || next != IBV_QPS_RTR)
		return;
	/* What was set reads back. */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(ibv_query_qp(qp, &a, IBV_QP_DEST_QPN, &ia), 0);
	ck_assert_uint_eq(a.dest_qp_num, 0x42);
	ck_assert_uint_eq(a.rq_psn, 0x123);
	ck_assert_int_eq(a.path_mtu, IBV_MTU_1024);
	ck_assert_int_eq(a.qp_access_flags,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_int_eq(ia.qp_type, c->type);
	if (c->type == IBV_QPT_XRC_RECV)
		ck_assert_uint_eq(a.max_dest_rd_atomic, 4);
	else
		ck_assert_uint_eq(a.max_dest_rd_atomic, 0);	/* ignored */
}
END_TEST

START_TEST(post_rules)
{
	struct ibv_qp *ini = ini_qp(0), *tgt = tgt_qp();
	struct ibv_sge sge = { (uintptr_t)A.buf, 8, A.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 },
			   *rbad = NULL;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *sbad = NULL;

	connect_pair(ini, tgt);
	ck_assert_int_eq(ibv_post_recv(ini, &rwr, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	rbad = NULL;
	ck_assert_int_eq(ibv_post_recv(tgt, &rwr, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	ck_assert_int_eq(ibv_post_send(tgt, &swr, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &swr);
	/* What no connected QP does. */
	swr.opcode = IBV_WR_TSO;
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(ini, &swr, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &swr);
	/* An extended TGT QP does not exist: no ibv_qp_ex. */
	errno = 0;
	ck_assert_ptr_null(ibv_qp_to_qp_ex(tgt));
}
END_TEST

/* ---- ibv_open_qp ---- */

START_TEST(open_qp_handles)
{
	struct ibv_qp *tgt = tgt_qp(), *h1, *h2;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	uint32_t qpn = tgt->qp_num;

	h1 = open_qp_in(A.ctx, xa, qpn);
	ck_assert_msg(h1 != NULL, "ibv_open_qp: %s", strerror(errno));
	ck_assert_ptr_ne(h1, tgt);
	ck_assert_uint_eq(h1->qp_num, qpn);
	ck_assert_int_eq(h1->qp_type, IBV_QPT_XRC_RECV);
	ck_assert_ptr_eq(h1->context, A.ctx);
	ck_assert_ptr_eq(h1->qp_context, &A);
	ck_assert_ptr_null(h1->pd);
	ck_assert_int_eq(users(xa), 1);
	ck_assert_int_eq(users(xb), 1);
	/* In the creator's context, through its own XRCD handle, too. */
	h2 = open_qp_in(B.ctx, xb, qpn);
	ck_assert_ptr_nonnull(h2);
	ck_assert_int_eq(users(xb), 2);

	/* One QP, whichever handle drives it. */
	vu_to_init(h1, &conn);
	ck_assert_int_eq(vu_qp_state(tgt), IBV_QPS_INIT);
	ck_assert_int_eq(vu_qp_state(h2), IBV_QPS_INIT);
	a = rtr_attr(0x77);
	ck_assert_int_eq(ibv_modify_qp(h2, &a, RTR_MASK | RTR_RESP), 0);
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(ibv_query_qp(h1, &a, IBV_QP_DEST_QPN, &ia), 0);
	ck_assert_int_eq(a.qp_state, IBV_QPS_RTR);
	ck_assert_uint_eq(a.dest_qp_num, 0x77);
	ck_assert_int_eq(ia.qp_type, IBV_QPT_XRC_RECV);
	ck_assert_ptr_eq(ia.qp_context, &A);
	ck_assert_int_eq(ibv_close_xrcd(xa), EBUSY);

	/* The creator's handle goes; the QP lives in the opened ones. */
	destroy_qp(tgt);
	ck_assert_int_eq(users(xb), 1);
	ck_assert_int_eq(vu_qp_state(h1), IBV_QPS_RTR);
	destroy_qp(h2);
	ck_assert_int_eq(users(xb), 0);
	/* Still there to be opened again, by its number. */
	h2 = open_qp_in(B.ctx, xb, qpn);
	ck_assert_msg(h2 != NULL, "reopen: %s", strerror(errno));
	destroy_qp(h2);
	destroy_qp(h1);
	ck_assert_int_eq(users(xa), 0);
	ck_assert_int_eq(users(xb), 0);
	/* The last handle took the QP with it. */
	ck_assert_ptr_null(open_qp_in(A.ctx, xa, qpn));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(open_qp_bad)
{
	struct ibv_qp *tgt = tgt_qp(), *ini = ini_qp(0), *rc;
	struct ibv_qp_init_attr ia = {
		.send_cq = B.cq, .recv_cq = B.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = tgt->qp_num, .xrcd = xa, .qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_xrcd_init_attr pa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
	};
	struct ibv_xrcd *other;
	static const uint32_t need[] = { IBV_QP_OPEN_ATTR_NUM,
					 IBV_QP_OPEN_ATTR_XRCD,
					 IBV_QP_OPEN_ATTR_TYPE };
	size_t i;

	rc = track_qp(ibv_create_qp(B.pd, &ia));
	ck_assert_ptr_nonnull(rc);
	for (i = 0; i < NELEM(need); i++) {
		a.comp_mask &= ~need[i];
		errno = 0;
		ck_assert_ptr_null(ibv_open_qp(A.ctx, &a));
		ck_assert_int_eq(errno, EINVAL);
		a.comp_mask |= need[i];
	}
	a.comp_mask |= IBV_QP_OPEN_ATTR_RESERVED;
	errno = 0;
	ck_assert_ptr_null(ibv_open_qp(A.ctx, &a));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	a.comp_mask &= ~IBV_QP_OPEN_ATTR_RESERVED;
	a.qp_type = IBV_QPT_RC;
	errno = 0;
	ck_assert_ptr_null(ibv_open_qp(A.ctx, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.qp_type = IBV_QPT_XRC_RECV;
	a.xrcd = xb;				/* B's handle, in A */
	errno = 0;
	ck_assert_ptr_null(ibv_open_qp(A.ctx, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.xrcd = xa;
	/* Numbers of QPs that are not this domain's TGT QPs. */
	ck_assert_ptr_null(open_qp_in(A.ctx, xa, rc->qp_num));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(open_qp_in(A.ctx, xa, ini->qp_num));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(open_qp_in(A.ctx, xa, tgt->qp_num ^ 0x100));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(open_qp_in(A.ctx, xa, (tgt->qp_num & 0x3fff) |
				      ((tgt->qp_num >> 14) + 1) << 14));
	ck_assert_int_eq(errno, EINVAL);
	/* Another domain does not see it. */
	other = ibv_open_xrcd(A.ctx, &pa);
	ck_assert_ptr_nonnull(other);
	ck_assert_ptr_null(open_qp_in(A.ctx, other, tgt->qp_num));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_close_xrcd(other), 0);
	ck_assert_int_eq(users(xa), 0);
}
END_TEST

/* Calls the QP's event callback as the engine would (progress lock aside). */
static void raise_event(struct ibv_qp *any_handle, enum ibv_event_type t)
{
	struct urxe_qp *qp = urxe_qp_real(to_uqp(any_handle));

	qp->e->fatal(qp->eobj, t);
}

static bool get_event(struct ibv_context *c, int ms, struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&p, 1, ms);
	} while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return false;
	ck_assert_int_eq(ibv_get_async_event(c, ev), 0);
	return true;
}

static void expect_event(struct ibv_context *c, enum ibv_event_type t,
			 struct ibv_qp *qp)
{
	struct ibv_async_event ev;

	ck_assert_msg(get_event(c, WAIT_MS, &ev), "no %s", ibv_event_type_str(t));
	ck_assert_int_eq(ev.event_type, t);
	ck_assert_ptr_eq(ev.element.qp, qp);
	ibv_ack_async_event(&ev);
}

static void expect_no_event(struct ibv_context *c)
{
	struct ibv_async_event ev;

	ck_assert_msg(!get_event(c, 50, &ev), "unexpected %s",
		      ibv_event_type_str(ev.event_type));
}

START_TEST(open_qp_events)
{
	struct ibv_qp *tgt = tgt_qp(), *h, *h2;
	struct ibv_async_event ev;

	h = open_qp_in(A.ctx, xa, tgt->qp_num);
	ck_assert_ptr_nonnull(h);
	raise_event(tgt, IBV_EVENT_QP_FATAL);
	expect_event(B.ctx, IBV_EVENT_QP_FATAL, tgt);
	expect_event(A.ctx, IBV_EVENT_QP_FATAL, h);
	expect_no_event(B.ctx);
	expect_no_event(A.ctx);

	/* The creator's handle gone, the opened one still hears. */
	destroy_qp(tgt);
	raise_event(h, IBV_EVENT_QP_ACCESS_ERR);
	expect_event(A.ctx, IBV_EVENT_QP_ACCESS_ERR, h);
	expect_no_event(B.ctx);

	/* A handle's unread events go with it; the others' stay. */
	h2 = open_qp_in(B.ctx, xb, h->qp_num);
	ck_assert_ptr_nonnull(h2);
	raise_event(h, IBV_EVENT_QP_REQ_ERR);
	destroy_qp(h2);
	expect_no_event(B.ctx);
	/* A read event holds destroy until acked: ack, then destroy. */
	ck_assert(get_event(A.ctx, WAIT_MS, &ev));
	ck_assert_ptr_eq(ev.element.qp, h);
	ibv_ack_async_event(&ev);
	destroy_qp(h);
	expect_no_event(A.ctx);
}
END_TEST

/* ---- traffic ---- */

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

static void expect_no_wc(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;

	ck_assert_msg(!vu_wait_wc(cq, 50, &wc), "%s: unexpected completion %llu %s",
		      what, (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* A receive of SLOT bytes into B.buf's slot @slot. */
static void srq_post(struct ibv_srq *s, uint64_t wr_id, unsigned int slot)
{
	struct ibv_sge sge = { (uintptr_t)B.buf + (uint64_t)slot * SLOT, SLOT,
			       B.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
			   *bad = NULL;

	ck_assert_int_eq(ibv_post_srq_recv(s, &wr, &bad), 0);
}

static void post(struct ibv_qp *ini, struct ibv_send_wr *wr, uint32_t srq_num)
{
	struct ibv_send_wr *bad = NULL;

	wr->qp_type.xrc.remote_srqn = srq_num;
	wr->send_flags |= IBV_SEND_SIGNALED;
	ck_assert_int_eq(ibv_post_send(ini, wr, &bad), 0);
}

/* A SEND of message @k (A.buf slot @k, @len bytes) to SRQ @srq_num. */
static void send_msg(struct ibv_qp *ini, uint32_t srq_num, unsigned int k,
		     uint32_t len, bool imm)
{
	struct ibv_sge sge = { (uintptr_t)A.buf + (uint64_t)k * SLOT, len,
			       A.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 100 + k, .sg_list = &sge, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.imm_data = htobe32(0xabc00000u + k),
	};

	fill(A.buf + (size_t)k * SLOT, len, (uint8_t)k);
	post(ini, &wr, srq_num);
}

/* The receive of message @k on @cq: whole, from @tgt, into slot @slot. */
static void expect_msg(struct ibv_cq *cq, struct ibv_qp *tgt, unsigned int k,
		       unsigned int slot, uint32_t len, bool imm)
{
	struct ibv_wc wc = expect_wc(cq, slot, IBV_WC_SUCCESS, "receive");

	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc.qp_num, tgt->qp_num);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_mem_eq(B.buf + (size_t)slot * SLOT, A.buf + (size_t)k * SLOT,
			 len);
	ck_assert_int_eq(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		ck_assert_uint_eq(be32toh(wc.imm_data), 0xabc00000u + k);
}

START_TEST(send_two_srqs)
{
	struct ibv_qp *ini = ini_qp(0), *tgt = tgt_qp();
	struct ibv_srq *s1 = xsrq(B.cq, B.pd), *s2 = xsrq(cq2, B.pd);
	struct ibv_srq *s[2] = { s1, s2 };
	struct ibv_cq *cq[2] = { B.cq, cq2 };
	unsigned int k;

	connect_pair(ini, tgt);
	for (k = 0; k < 8; k++)
		srq_post(s[k & 1], k, k);
	/* Alternately: each message lands in its SRQ, completes on its CQ. */
	for (k = 0; k < 8; k++)
		send_msg(ini, srqn(s[k & 1]), k, MSG, k >= 6);
	for (k = 0; k < 8; k++)
		expect_wc(A.cq, 100 + k, IBV_WC_SUCCESS, "SEND");
	for (k = 0; k < 8; k++)
		expect_msg(cq[k & 1], tgt, k, k, MSG, k >= 6);
	expect_no_wc(B.cq, "4 each");
	expect_no_wc(cq2, "4 each");
	/* Zero bytes, and one byte past nothing: still a message. */
	srq_post(s2, 9, 9);
	send_msg(ini, srqn(s2), 9, 0, false);
	expect_wc(A.cq, 109, IBV_WC_SUCCESS, "empty SEND");
	expect_msg(cq2, tgt, 9, 9, 0, false);
}
END_TEST

START_TEST(rdma_and_atomics)
{
	struct ibv_qp *ini = ini_qp(0), *tgt = tgt_qp();
	struct ibv_srq *s = xsrq(B.cq, B.pd);
	uint64_t *target = (uint64_t *)(B.buf + 64 * 1024);
	uint64_t *result = (uint64_t *)(A.buf + 64 * 1024);
	struct ibv_sge sge = { (uintptr_t)A.buf, MSG, A.mr->lkey };
	struct ibv_send_wr wr;

	connect_pair(ini, tgt);
	fill(A.buf, MSG, 3);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf + 4096;
	wr.wr.rdma.rkey = B.mr->rkey;
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 1, IBV_WC_SUCCESS, "WRITE");
	ck_assert_mem_eq(B.buf + 4096, A.buf, MSG);
	/* READ it back elsewhere. */
	sge.addr = (uintptr_t)A.buf + 16384;
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 2, IBV_WC_SUCCESS, "READ");
	ck_assert_mem_eq(A.buf + 16384, A.buf, MSG);
	/* WRITE with immediate: consumes a WQE of the SRQ, no data in it. */
	srq_post(s, 7, 7);
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0x5150);
	wr.sg_list = &sge;
	sge.addr = (uintptr_t)A.buf;
	sge.length = 100;
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf + 32768;
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 3, IBV_WC_SUCCESS, "WRITE_WITH_IMM");
	{
		struct ibv_wc wc = expect_wc(B.cq, 7, IBV_WC_SUCCESS, "imm");

		ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		ck_assert_uint_eq(be32toh(wc.imm_data), 0x5150);
		ck_assert_uint_eq(wc.qp_num, tgt->qp_num);
	}
	ck_assert_mem_eq(B.buf + 32768, A.buf, 100);
	/* Atomics on an 8-byte word of the SRQ's PD. */
	*target = 40;
	sge = (struct ibv_sge){ (uintptr_t)result, 8, A.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = B.mr->rkey;
	wr.wr.atomic.compare_add = 2;
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 4, IBV_WC_SUCCESS, "FETCH_AND_ADD");
	ck_assert_uint_eq(*result, 40);
	ck_assert_uint_eq(*target, 42);
	wr.wr_id = 5;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 7;
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 5, IBV_WC_SUCCESS, "CMP_AND_SWP");
	ck_assert_uint_eq(*result, 42);
	ck_assert_uint_eq(*target, 7);
}
END_TEST

/* The same through ibv_wr_*, the SRQ set per request. */
START_TEST(wr_api)
{
	struct ibv_qp *ini = ini_qp(OPS_ALL), *tgt = tgt_qp();
	struct ibv_srq *s1 = xsrq(B.cq, B.pd), *s2 = xsrq(cq2, B.pd);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(ini);
	uint64_t *target = (uint64_t *)(B.buf + 64 * 1024);
	uint64_t *result = (uint64_t *)(A.buf + 64 * 1024);
	struct ibv_sge list[2] = {
		{ (uintptr_t)A.buf, 1000, A.mr->lkey },
		{ (uintptr_t)A.buf + 1000, 1500, A.mr->lkey },
	};
	struct ibv_data_buf inl[2] = { { A.buf + 3000, 20 }, { A.buf + 3020, 12 } };
	struct ibv_wc wc;

	ck_assert_ptr_nonnull(x);
	connect_pair(ini, tgt);
	fill(A.buf, 4096, 9);
	*target = 1;
	srq_post(s1, 1, 1);
	srq_post(s2, 2, 2);
	srq_post(s1, 3, 3);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 10;
	ibv_wr_send(x);				/* 2500 bytes from two SGEs */
	ibv_wr_set_xrc_srqn(x, srqn(s1));
	ibv_wr_set_sge_list(x, 2, list);
	x->wr_id = 11;
	ibv_wr_send_imm(x, htobe32(77));	/* 32 inline bytes */
	ibv_wr_set_xrc_srqn(x, srqn(s2));
	ibv_wr_set_inline_data_list(x, 2, inl);
	x->wr_id = 12;
	ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)B.buf + 40960);
	ibv_wr_set_xrc_srqn(x, srqn(s1));
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 2048);
	x->wr_id = 13;
	ibv_wr_rdma_read(x, B.mr->rkey, (uintptr_t)B.buf + 40960);
	ibv_wr_set_xrc_srqn(x, srqn(s2));
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf + 49152, 2048);
	x->wr_id = 14;
	ibv_wr_atomic_fetch_add(x, B.mr->rkey, (uintptr_t)target, 5);
	ibv_wr_set_xrc_srqn(x, srqn(s1));
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)result, 8);
	x->wr_id = 15;
	ibv_wr_send_inv(x, B.mr->rkey);		/* a region's: nothing to do */
	ibv_wr_set_xrc_srqn(x, srqn(s1));
	ibv_wr_set_inline_data(x, A.buf, 16);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	for (uint64_t id = 10; id <= 15; id++)
		expect_wc(A.cq, id, IBV_WC_SUCCESS, "ibv_wr_*");
	wc = expect_wc(B.cq, 1, IBV_WC_SUCCESS, "two SGEs");
	ck_assert_uint_eq(wc.byte_len, 2500);
	ck_assert_mem_eq(B.buf + SLOT, A.buf, 2500);
	wc = expect_wc(cq2, 2, IBV_WC_SUCCESS, "inline");
	ck_assert_uint_eq(wc.byte_len, 32);
	ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert_mem_eq(B.buf + 2 * SLOT, A.buf + 3000, 32);
	ck_assert_mem_eq(B.buf + 40960, A.buf, 2048);
	ck_assert_mem_eq(A.buf + 49152, A.buf, 2048);
	ck_assert_uint_eq(*result, 1);
	ck_assert_uint_eq(*target, 6);
	wc = expect_wc(B.cq, 3, IBV_WC_SUCCESS, "SEND_WITH_INV");
	ck_assert_uint_eq(wc.byte_len, 16);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, B.mr->rkey);
	ck_assert_uint_eq(wc.qp_num, tgt->qp_num);
}
END_TEST

/* Remote errors: an rkey of another PD than the SRQ's, an unknown SRQ. */
START_TEST(remote_access_errors)
{
	struct ibv_qp *ini = ini_qp(0), *tgt = tgt_qp();
	struct ibv_qp *ini2 = ini_qp(OPS_ALL), *tgt2 = tgt_qp();
	struct ibv_srq *s = xsrq(B.cq, B.pd);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(ini2);
	struct ibv_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge,
		.num_sge = 1,
		.wr.rdma = { .remote_addr = (uintptr_t)B.buf, .rkey = mr2->rkey },
	};
	uint32_t nobody = srqn(s) ^ 0x2000;

	connect_pair(ini, tgt);
	connect_pair(ini2, tgt2);
	/* pd2's key, the SRQ being of B.pd: the SRQ's PD decides. */
	post(ini, &wr, srqn(s));
	expect_wc(A.cq, 1, IBV_WC_REM_ACCESS_ERR, "rkey of another PD");
	/* An SRQ number no SRQ has (of the QPN space: it is a QP's slot). */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 2;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, nobody);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 64);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	expect_wc(A.cq, 2, IBV_WC_REM_ACCESS_ERR, "unknown SRQ");
	/* Nothing was delivered anywhere. */
	expect_no_wc(B.cq, "no delivery");
}
END_TEST

START_TEST(srq_limit_event)
{
	struct ibv_qp *ini = ini_qp(0), *tgt = tgt_qp();
	struct ibv_srq *s = xsrq(B.cq, B.pd);
	struct ibv_srq_attr qa = { .srq_limit = 2 };
	struct ibv_async_event ev;
	unsigned int k;

	connect_pair(ini, tgt);
	for (k = 0; k < 3; k++)
		srq_post(s, k, k);
	ck_assert_int_eq(ibv_modify_srq(s, &qa, IBV_SRQ_LIMIT), 0);
	send_msg(ini, srqn(s), 0, 10, false);
	expect_wc(A.cq, 100, IBV_WC_SUCCESS, "SEND");
	expect_msg(B.cq, tgt, 0, 0, 10, false);
	ck_assert_msg(!get_event(B.ctx, 50, &ev), "2 left of limit 2");
	send_msg(ini, srqn(s), 1, 10, false);
	expect_wc(A.cq, 101, IBV_WC_SUCCESS, "SEND");
	expect_msg(B.cq, tgt, 1, 1, 10, false);
	ck_assert(get_event(B.ctx, WAIT_MS, &ev));
	ck_assert_int_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	ck_assert_ptr_eq(ev.element.srq, s);
	ibv_ack_async_event(&ev);
	ck_assert_int_eq(ibv_query_srq(s, &qa), 0);
	ck_assert_uint_eq(qa.srq_limit, 0);
}
END_TEST

static Suite *xrc_suite(void)
{
	Suite *s = suite_create("xrc");
	TCase *tc;

	tc = tu_tcase(s, "objects", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, srq_create_and_number);
	tcase_add_loop_test(tc, srq_create_bad, 0, (int)NELEM(srq_bads));
	tcase_add_test(tc, srq_holds_and_refuses);
	tcase_add_test(tc, srq_post_modify_query);
	tcase_add_test(tc, qp_create_rules);
	tcase_add_loop_test(tc, qp_modify_rules, 0, (int)NELEM(mod_cases));
	tcase_add_test(tc, post_rules);
	tcase_add_test(tc, open_qp_handles);
	tcase_add_test(tc, open_qp_bad);
	tcase_add_test(tc, open_qp_events);

	tc = tu_tcase(s, "traffic", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, send_two_srqs);
	tcase_add_test(tc, rdma_and_atomics);
	tcase_add_test(tc, wr_api);
	tcase_add_test(tc, remote_access_errors);
	tcase_add_test(tc, srq_limit_event);
	return s;
}

int main(void)
{
	return tu_run(xrc_suite());
}
