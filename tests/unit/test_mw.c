// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory windows through the public library on rxe0 (lo), between
 * loopback RC QPs: ibv_alloc_mw(3) / ibv_dealloc_mw of types 1 and 2;
 * type 1 bound with ibv_bind_mw(3) (IBV_WC_BIND_MW, a new rkey each
 * time: the old one fails); remote WRITE, READ and atomics through a
 * window, and what its range and rights refuse (IBV_WC_REM_ACCESS_ERR);
 * type 2 bound by IBV_WR_BIND_MW and ibv_wr_bind_mw, usable only through
 * the QP it is bound to (2B), invalidated by IBV_WR_LOCAL_INV and by a
 * SEND with Invalidate (IBV_WC_WITH_INV at the responder; a type 1
 * window's rkey refused, IBA class J); bind errors
 * (IBV_WC_MW_BIND_ERR), LOCAL_INV of a region's key, deallocation of a
 * bound window, and the device's capability bits.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "testutil.h"
#include "verbs_util.h"

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid0;

/* Two connected RC QPs, each with its own CQ; the peer's memory. */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct ibv_mr *mra;		/* A's buffer: sources, READ targets */
	uint8_t bufa[4096] __attribute__((aligned(64)));
};

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid0), 0);
}

static void teardown(void)
{
	if (pd)
		ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	if (ctx)
		ibv_close_device(ctx);
	pd = NULL;
	ctx = NULL;
	tu_sandbox_fini(&sb);
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	if (ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
	}
	qp = ibv_create_qp_ex(ctx, &a);
	ck_assert_msg(qp != NULL, "ibv_create_qp_ex: %s", strerror(errno));
	return qp;
}

/* RC both ways, both ends starting at PSN 0. */
static const struct vu_qp_opts conn = {
	.mtu = IBV_MTU_1024, .psn = 0, .hop_limit = 1,
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC,
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.rd_atomic = 4,
};

static struct pair *pair_new(uint64_t ops)
{
	struct pair *p = calloc(1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	p->cqa = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	ck_assert(p->cqa && p->cqb);
	p->a = make_qp(p->cqa, ops);
	p->b = make_qp(p->cqb, ops);
	vu_connect(p->a, p->b->qp_num, &gid0, &conn);
	vu_connect(p->b, p->a->qp_num, &gid0, &conn);
	p->mra = ibv_reg_mr(pd, p->bufa, sizeof(p->bufa),
			    IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(p->mra);
	return p;
}

static void pair_free(struct pair *p)
{
	ck_assert_int_eq(ibv_destroy_qp(p->a), 0);
	ck_assert_int_eq(ibv_destroy_qp(p->b), 0);
	ck_assert_int_eq(ibv_destroy_cq(p->cqa), 0);
	ck_assert_int_eq(ibv_destroy_cq(p->cqb), 0);
	ck_assert_int_eq(ibv_dereg_mr(p->mra), 0);
	free(p);
}

/* One completion from @cq within a few seconds. */
static struct ibv_wc poll1(struct ibv_cq *cq)
{
	struct timespec tick = { 0, 1000 * 1000 };
	struct ibv_wc wc;
	int i, n;

	for (i = 0; i < 5000; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		ck_assert_int_ge(n, 0);
		if (n)
			return wc;
		nanosleep(&tick, NULL);
	}
	ck_abort_msg("no completion");
	return wc;
}

static void post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ck_assert_int_eq(ibv_post_send(qp, wr, &bad), 0);
}

/* A's WRITE (or READ) of @len bytes at @va with @rkey: its status. */
static enum ibv_wc_status rdma(struct pair *p, enum ibv_wr_opcode op,
			       uint32_t rkey, uint64_t va, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)p->bufa, len, p->mra->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .opcode = op, .sg_list = &s, .num_sge = 1,
		.wr.rdma = { .remote_addr = va, .rkey = rkey },
	};
	struct ibv_wc wc;

	post(p->a, &wr);
	wc = poll1(p->cqa);
	ck_assert_uint_eq(wc.wr_id, op);
	return wc.status;
}

static enum ibv_wc_status fetch_add(struct pair *p, uint32_t rkey,
				    uint64_t va, uint64_t add)
{
	struct ibv_sge s = { (uintptr_t)p->bufa, 8, p->mra->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sg_list = &s,
		.num_sge = 1,
		.wr.atomic = { .remote_addr = va, .rkey = rkey,
			       .compare_add = add },
	};

	post(p->a, &wr);
	return poll1(p->cqa).status;
}

/* Binds type 1 @mw on @qp with ibv_bind_mw; the completion's status. */
static enum ibv_wc_status bind1(struct ibv_qp *qp, struct ibv_cq *cq,
				struct ibv_mw *mw, struct ibv_mr *mr, void *addr,
				uint64_t len, unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = 77, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)addr,
			       .length = len, .mw_access_flags = access },
	};
	struct ibv_wc wc;

	ck_assert_int_eq(ibv_bind_mw(qp, mw, &b), 0);
	wc = poll1(cq);
	ck_assert_uint_eq(wc.wr_id, 77);
	if (wc.status == IBV_WC_SUCCESS)
		ck_assert_int_eq(wc.opcode, IBV_WC_BIND_MW);
	return wc.status;
}

/* Binds @mw on @qp with an IBV_WR_BIND_MW work request; returns the rkey. */
static uint32_t bind_wr(struct ibv_qp *qp, struct ibv_cq *cq,
			struct ibv_mw *mw, struct ibv_mr *mr, void *addr,
			uint64_t len, unsigned int access,
			enum ibv_wc_status want)
{
	struct ibv_send_wr wr = {
		.wr_id = 88, .opcode = IBV_WR_BIND_MW,
		.bind_mw = {
			.mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = { .mr = mr, .addr = (uintptr_t)addr,
				       .length = len, .mw_access_flags = access },
		},
	};
	struct ibv_wc wc;

	post(qp, &wr);
	wc = poll1(cq);
	ck_assert_uint_eq(wc.wr_id, 88);
	ck_assert_int_eq(wc.status, want);
	if (want == IBV_WC_SUCCESS)
		ck_assert_int_eq(wc.opcode, IBV_WC_BIND_MW);
	return wr.bind_mw.rkey;
}

static enum ibv_wc_status local_inv(struct ibv_qp *qp, struct ibv_cq *cq,
				    uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = 99, .opcode = IBV_WR_LOCAL_INV,
		.invalidate_rkey = rkey,
	};
	struct ibv_wc wc;

	post(qp, &wr);
	wc = poll1(cq);
	ck_assert_uint_eq(wc.wr_id, 99);
	if (wc.status == IBV_WC_SUCCESS)
		ck_assert_int_eq(wc.opcode, IBV_WC_LOCAL_INV);
	return wc.status;
}

/* Memory B owns, registered for windows only (no remote rights). */
static uint8_t target[8192] __attribute__((aligned(64)));

static struct ibv_mr *bindable_mr(void)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, target, sizeof(target),
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_MW_BIND);

	ck_assert_ptr_nonnull(mr);
	return mr;
}

START_TEST(device_caps)
{
	struct ibv_device_attr a;

	ck_assert_int_eq(ibv_query_device(ctx, &a), 0);
	ck_assert(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	ck_assert(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	ck_assert_int_gt(a.max_mw, 0);
}
END_TEST

START_TEST(alloc_dealloc)
{
	struct ibv_mw *m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);

	ck_assert_ptr_nonnull(m1);
	ck_assert_ptr_nonnull(m2);
	ck_assert_int_eq(m1->type, IBV_MW_TYPE_1);
	ck_assert_int_eq(m2->type, IBV_MW_TYPE_2);
	ck_assert_ptr_eq(m1->pd, pd);
	ck_assert_uint_ne(m1->rkey, m2->rkey);
	/* pyverbs' test_reg_mw_wrong_type: not EOPNOTSUPP. */
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_mw(pd, (enum ibv_mw_type)3));
	ck_assert_int_eq(errno, EINVAL);
	/* The PD has windows on it. */
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(ibv_dealloc_mw(m1), 0);
	ck_assert_int_eq(ibv_dealloc_mw(m2), 0);
}
END_TEST

START_TEST(type1_write_read)
{
	struct pair *p = pair_new(0);
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	uint32_t rkey0;

	ck_assert_ptr_nonnull(mw);
	rkey0 = mw->rkey;
	/* Unbound: nothing gets through. */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, mw->rkey,
			      (uintptr_t)target, 8), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);

	p = pair_new(0);
	ck_assert_int_eq(bind1(p->b, p->cqb, mw, mr, target + 1024, 2048,
			       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC), IBV_WC_SUCCESS);
	ck_assert_uint_eq(mw->rkey, ibv_inc_rkey(rkey0));
	/* The region is held by the window. */
	ck_assert_int_eq(ibv_dereg_mr(mr), EBUSY);

	memcpy(p->bufa, "through the window", 19);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, mw->rkey,
			      (uintptr_t)target + 1100, 19), IBV_WC_SUCCESS);
	ck_assert_str_eq((char *)target + 1100, "through the window");
	memcpy(target + 3000, "read back", 10);
	memset(p->bufa, 0, 32);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, mw->rkey,
			      (uintptr_t)target + 3000, 10), IBV_WC_SUCCESS);
	ck_assert_str_eq((char *)p->bufa, "read back");
	memset(target + 2048, 0, 8);
	*(uint64_t *)(void *)(target + 2048) = 40;
	ck_assert_int_eq(fetch_add(p, mw->rkey, (uintptr_t)target + 2048, 2),
			 IBV_WC_SUCCESS);
	ck_assert_uint_eq(*(uint64_t *)(void *)(target + 2048), 42);
	ck_assert_uint_eq(*(uint64_t *)(void *)p->bufa, 40);
	/* The region's own keys grant nothing remote. */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, mr->rkey,
			      (uintptr_t)target + 1100, 8), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);

	/* Deallocating a bound type 1 window unbinds it. */
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

START_TEST(type1_range_and_rights)
{
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct pair *p = pair_new(0);

	ck_assert_int_eq(bind1(p->b, p->cqb, mw, mr, target + 64, 64,
			       IBV_ACCESS_REMOTE_READ), IBV_WC_SUCCESS);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, mw->rkey,
			      (uintptr_t)target + 64, 64), IBV_WC_SUCCESS);
	/* Past the end of the window (inside the region). */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, mw->rkey,
			      (uintptr_t)target + 120, 16), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	p = pair_new(0);
	/* Before its start. */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, mw->rkey,
			      (uintptr_t)target + 60, 8), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	p = pair_new(0);
	/* A right it does not grant. */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, mw->rkey,
			      (uintptr_t)target + 64, 8), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	p = pair_new(0);
	ck_assert_int_eq(fetch_add(p, mw->rkey, (uintptr_t)target + 64, 1),
			 IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

START_TEST(type1_rebind)
{
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct pair *p = pair_new(0);
	uint32_t k1, k2;

	ck_assert_int_eq(bind1(p->b, p->cqb, mw, mr, target, 128,
			       IBV_ACCESS_REMOTE_WRITE), IBV_WC_SUCCESS);
	k1 = mw->rkey;
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, k1, (uintptr_t)target, 8),
			 IBV_WC_SUCCESS);
	/* Rebound (from the other QP: type 1 belongs to no QP). */
	ck_assert_int_eq(bind1(p->a, p->cqa, mw, mr, target + 256, 128,
			       IBV_ACCESS_REMOTE_WRITE), IBV_WC_SUCCESS);
	k2 = mw->rkey;
	ck_assert_uint_ne(k1, k2);
	ck_assert_uint_eq(k2 >> 8, k1 >> 8);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, k2,
			      (uintptr_t)target + 256, 8), IBV_WC_SUCCESS);
	/* The old binding's range through the new key: outside. */
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, k2, (uintptr_t)target, 8),
			 IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	p = pair_new(0);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, k1,
			      (uintptr_t)target + 256, 8), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	p = pair_new(0);
	/* Length 0 unbinds (pyverbs' invalidate_mw_type1). */
	ck_assert_int_eq(bind1(p->b, p->cqb, mw, mr, target, 0, 0),
			 IBV_WC_SUCCESS);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);	/* no window holds it */
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
}
END_TEST

START_TEST(type2_bind_access_local_inv)
{
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct pair *p = pair_new(0), *q = pair_new(0);
	uint32_t rkey;

	ck_assert_ptr_nonnull(mw);
	rkey = bind_wr(p->b, p->cqb, mw, mr, target + 512, 512,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		       IBV_WC_SUCCESS);
	ck_assert_uint_eq(rkey, ibv_inc_rkey(mw->rkey));
	memcpy(p->bufa, "type 2", 7);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey,
			      (uintptr_t)target + 600, 7), IBV_WC_SUCCESS);
	ck_assert_str_eq((char *)target + 600, "type 2");
	*(uint64_t *)(void *)(target + 1016) = 1;
	ck_assert_int_eq(fetch_add(p, rkey, (uintptr_t)target + 1016, 1),
			 IBV_WC_SUCCESS);
	ck_assert_uint_eq(*(uint64_t *)(void *)(target + 1016), 2);
	/* Type 2B: through another QP, the window grants nothing. */
	ck_assert_int_eq(rdma(q, IBV_WR_RDMA_WRITE, rkey,
			      (uintptr_t)target + 600, 7), IBV_WC_REM_ACCESS_ERR);
	pair_free(q);
	/* A bound type 2 window cannot be bound again before invalidation. */
	ck_assert_int_eq(local_inv(p->b, p->cqb, rkey), IBV_WC_SUCCESS);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey,
			      (uintptr_t)target + 600, 7), IBV_WC_REM_ACCESS_ERR);
	pair_free(p);

	/* Bound again, with a fresh key, after the invalidation. */
	p = pair_new(0);
	mw->rkey = rkey;
	rkey = bind_wr(p->b, p->cqb, mw, mr, target, 64,
		       IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, rkey, (uintptr_t)target, 64),
			 IBV_WC_SUCCESS);
	/* Deallocated while bound: gone. */
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, rkey, (uintptr_t)target, 64),
			 IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

START_TEST(type2_send_with_inv)
{
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct pair *p = pair_new(0);
	char rbuf[32] = { 0 };
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { (uintptr_t)rbuf, sizeof(rbuf), rmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_sge ss = { (uintptr_t)p->bufa, 4, p->mra->lkey };
	struct ibv_send_wr swr = {
		.wr_id = 6, .opcode = IBV_WR_SEND_WITH_INV, .sg_list = &ss,
		.num_sge = 1,
	};
	struct ibv_wc wc;
	uint32_t rkey;

	rkey = bind_wr(p->b, p->cqb, mw, mr, target, 256,
		       IBV_ACCESS_REMOTE_WRITE, IBV_WC_SUCCESS);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey, (uintptr_t)target, 8),
			 IBV_WC_SUCCESS);
	ck_assert_int_eq(ibv_post_recv(p->b, &rwr, &rbad), 0);
	memcpy(p->bufa, "inv", 4);
	swr.invalidate_rkey = rkey;
	post(p->a, &swr);
	wc = poll1(p->cqa);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
	wc = poll1(p->cqb);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, rkey);
	ck_assert_str_eq(rbuf, "inv");
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey, (uintptr_t)target, 8),
			 IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_dereg_mr(rmr), 0);
}
END_TEST

/* A's SEND with Invalidate of @rkey into a receive at B: both statuses. */
static void send_inv(struct pair *p, uint32_t rkey, enum ibv_wc_status *snd,
		     enum ibv_wc_status *rcv, struct ibv_wc *rwc)
{
	struct ibv_sge rs = { (uintptr_t)p->bufa + 2048, 64, p->mra->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_sge ss = { (uintptr_t)p->bufa, 4, p->mra->lkey };
	struct ibv_send_wr swr = {
		.wr_id = 6, .opcode = IBV_WR_SEND_WITH_INV, .sg_list = &ss,
		.num_sge = 1, .invalidate_rkey = rkey,
	};

	ck_assert_int_eq(ibv_post_recv(p->b, &rwr, &rbad), 0);
	post(p->a, &swr);
	*snd = poll1(p->cqa).status;
	*rwc = poll1(p->cqb);
	*rcv = rwc->status;
}

START_TEST(send_with_inv_refused)
{
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	enum ibv_wc_status snd, rcv;
	struct pair *p = pair_new(0);
	struct ibv_wc wc;

	/* A region's key names no window: nothing to invalidate (urxe). */
	send_inv(p, mr->rkey, &snd, &rcv, &wc);
	ck_assert_int_eq(snd, IBV_WC_SUCCESS);
	ck_assert_int_eq(rcv, IBV_WC_SUCCESS);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, mr->rkey);
	/* A type 1 window cannot be invalidated: IBA class J. */
	ck_assert_int_eq(bind1(p->b, p->cqb, m1, mr, target, 64,
			       IBV_ACCESS_REMOTE_READ), IBV_WC_SUCCESS);
	send_inv(p, m1->rkey, &snd, &rcv, &wc);
	ck_assert_int_eq(snd, IBV_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(rcv, IBV_WC_REM_INV_REQ_ERR);
	pair_free(p);
	/* The window is still bound. */
	p = pair_new(0);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_READ, m1->rkey, (uintptr_t)target,
			      64), IBV_WC_SUCCESS);
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(m1), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

START_TEST(bind_errors)
{
	struct ibv_mr *plain = ibv_reg_mr(pd, target, sizeof(target),
					  IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *ro = ibv_reg_mr(pd, target, sizeof(target),
				       IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw *m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw_bind zb = {
		.bind_info = { .mr = mr, .addr = (uintptr_t)target, .length = 8,
			       .mw_access_flags = IBV_ACCESS_ZERO_BASED },
	};
	struct pair *p;
	uint32_t rkey;

	ck_assert(plain && ro && mw && m1);
	/* A region without MW_BIND (C10-73); the QP goes to error. */
	p = pair_new(0);
	bind_wr(p->b, p->cqb, mw, plain, target, 64, IBV_ACCESS_REMOTE_READ,
		IBV_WC_MW_BIND_ERR);
	ck_assert_int_eq(local_inv(p->b, p->cqb, 0), IBV_WC_WR_FLUSH_ERR);
	pair_free(p);
	/* A writable window on a region without LOCAL_WRITE (C10-74). */
	p = pair_new(0);
	bind_wr(p->b, p->cqb, mw, ro, target, 64, IBV_ACCESS_REMOTE_WRITE,
		IBV_WC_MW_BIND_ERR);
	pair_free(p);
	/* Outside the region (C10-75). */
	p = pair_new(0);
	bind_wr(p->b, p->cqb, mw, mr, target + 8000, 256,
		IBV_ACCESS_REMOTE_READ, IBV_WC_MW_BIND_ERR);
	pair_free(p);
	/* Type 2 with length 0 (o10-37.2.40). */
	p = pair_new(0);
	bind_wr(p->b, p->cqb, mw, mr, target, 0, 0, IBV_WC_MW_BIND_ERR);
	pair_free(p);
	/* Bound already (o10-37.2.30). */
	p = pair_new(0);
	rkey = bind_wr(p->b, p->cqb, mw, mr, target, 64,
		       IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS);
	mw->rkey = rkey;
	bind_wr(p->b, p->cqb, mw, mr, target, 64, IBV_ACCESS_REMOTE_READ,
		IBV_WC_MW_BIND_ERR);
	pair_free(p);
	/* Type 1 windows are not invalidated (o10-37.2.26), nor regions. */
	p = pair_new(0);
	ck_assert_int_eq(bind1(p->b, p->cqb, m1, mr, target, 64,
			       IBV_ACCESS_REMOTE_READ), IBV_WC_SUCCESS);
	ck_assert_int_eq(local_inv(p->b, p->cqb, m1->rkey), IBV_WC_LOC_QP_OP_ERR);
	pair_free(p);
	p = pair_new(0);
	ck_assert_int_eq(local_inv(p->b, p->cqb, plain->rkey),
			 IBV_WC_LOC_QP_OP_ERR);
	pair_free(p);
	/* ibv_bind_mw refuses what it can see at once. */
	p = pair_new(0);
	ck_assert_int_eq(ibv_bind_mw(p->b, m1, &zb), EINVAL);
	ck_assert_int_eq(ibv_bind_mw(p->b, mw, &zb), EINVAL);	/* type 2 */
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(ibv_dealloc_mw(m1), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_dereg_mr(plain), 0);
	ck_assert_int_eq(ibv_dereg_mr(ro), 0);
}
END_TEST

START_TEST(qp_ex_bind_local_inv)
{
	struct pair *p = pair_new(IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(p->b);
	struct ibv_mr *mr = bindable_mr();
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info info = {
		.mr = mr, .addr = (uintptr_t)target, .length = 128,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;

	ck_assert_ptr_nonnull(x);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, mw, rkey, &info);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	wc = poll1(p->cqb);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_BIND_MW);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey, (uintptr_t)target, 8),
			 IBV_WC_SUCCESS);
	ibv_wr_start(x);
	x->wr_id = 2;
	ibv_wr_local_inv(x, rkey);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	wc = poll1(p->cqb);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_LOCAL_INV);
	ck_assert_int_eq(rdma(p, IBV_WR_RDMA_WRITE, rkey, (uintptr_t)target, 8),
			 IBV_WC_REM_ACCESS_ERR);
	pair_free(p);
	ck_assert_int_eq(ibv_dealloc_mw(mw), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

static Suite *mw_suite(void)
{
	Suite *s = suite_create("mw");
	TCase *tc = tu_tcase(s, "windows", setup, teardown);

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, device_caps);
	tcase_add_test(tc, alloc_dealloc);
	tcase_add_test(tc, type1_write_read);
	tcase_add_test(tc, type1_range_and_rights);
	tcase_add_test(tc, type1_rebind);
	tcase_add_test(tc, type2_bind_access_local_inv);
	tcase_add_test(tc, type2_send_with_inv);
	tcase_add_test(tc, send_with_inv_refused);
	tcase_add_test(tc, bind_errors);
	tcase_add_test(tc, qp_ex_bind_local_inv);
	return s;
}

int main(void)
{
	return tu_run(mw_suite());
}
