// SPDX-License-Identifier: BSD-2-Clause
/*
 * The extended verbs through the public library on rxe0 (lo):
 * ibv_create_qp_ex(3) and the ibv_wr_*(3) family — every RC operation in
 * one batch between two QPs, checked byte for byte and completion by
 * completion through an ibv_cq_ex; UC writes and sends; a UD send with
 * ibv_wr_set_ud_addr;
 * what creation refuses (EOPNOTSUPP) and what makes ibv_wr_complete fail
 * (a bad request discards the whole batch, ibv_wr_abort discards too);
 * ibv_create_cq_ex(3) flags and the empty poll (ENOENT);
 * ibv_query_rt_values_ex(3); ibv_query_device_ex(3) with older and newer
 * struct sizes; ibv_modify_cq(3) (EOPNOTSUPP, as kernel
 * rxe); ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3) within
 * the process.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "testutil.h"
#include "verbs_util.h"

#define WC_STD (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
		IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
		IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
		IBV_WC_EX_WITH_DLID_PATH_BITS)
#define RC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq_ex *cqx;
static union ibv_gid gid0;

static struct ibv_cq_ex *make_cqx(uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 64, .wc_flags = wc_flags };

	return ibv_create_cq_ex(ctx, &a);
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	cqx = make_cqx(WC_STD);
	ck_assert_msg(cqx != NULL, "ibv_create_cq_ex: %s", strerror(errno));
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid0), 0);
}

static void teardown(void)
{
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	cqx = NULL;
	pd = NULL;
	ctx = NULL;
	tu_sandbox_fini(&sb);
}

static struct ibv_qp_init_attr_ex qpx_attr(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = ibv_cq_ex_to_cq(cqx),
		.recv_cq = ibv_cq_ex_to_cq(cqx),
		.qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};

	return a;
}

static struct ibv_qp *make_qpx(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = qpx_attr(type, ops);
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	ck_assert_msg(qp != NULL, "ibv_create_qp_ex: %s", strerror(errno));
	ck_assert_ptr_nonnull(ibv_qp_to_qp_ex(qp));
	return qp;
}

/* Every transport, both ends starting at PSN 0. */
static const struct vu_qp_opts conn = {
	.mtu = IBV_MTU_1024, .psn = 0, .hop_limit = 1,
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC,
	.qkey = 0x11111111,
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	.rd_atomic = 4,
};

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	ck_assert_int_eq(ibv_post_recv(qp, &wr, &bad), 0);
}

/* One completion as the accessors read it. */
static void read_wc(struct ibv_wc *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = cqx->wr_id;
	w->status = cqx->status;
	w->opcode = ibv_wc_read_opcode(cqx);
	w->vendor_err = ibv_wc_read_vendor_err(cqx);
	w->byte_len = ibv_wc_read_byte_len(cqx);
	w->imm_data = ibv_wc_read_imm_data(cqx);
	w->qp_num = ibv_wc_read_qp_num(cqx);
	w->src_qp = ibv_wc_read_src_qp(cqx);
	w->wc_flags = ibv_wc_read_wc_flags(cqx);
	w->slid = (uint16_t)ibv_wc_read_slid(cqx);
	w->sl = ibv_wc_read_sl(cqx);
	w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cqx);
}

/* Takes @n completions through start/next/end_poll within a few seconds. */
static void poll_ex(struct ibv_wc *wc, int n)
{
	struct ibv_poll_cq_attr pa = { 0 };
	struct timespec tick = { 0, 1000 * 1000 };
	int got = 0, i, rc;

	for (i = 0; i < 5000 && got < n; i++) {
		rc = ibv_start_poll(cqx, &pa);
		if (rc == ENOENT) {
			nanosleep(&tick, NULL);
			continue;
		}
		ck_assert_int_eq(rc, 0);
		do
			read_wc(&wc[got++]);
		while (got < n && !(rc = ibv_next_poll(cqx)));
		ck_assert(rc == 0 || rc == ENOENT);
		ibv_end_poll(cqx);
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

/* ---- the wr_* family ---- */

struct rc_bufs {
	char src[64];
	char two[32];
	char recv[4][64];
	char target[64];		/* WRITE lands here */
	char readsrc[32];
	char readdst[32];
	uint64_t counter;		/* atomics */
	uint64_t orig[2];
};

static void check_all_ok(const struct ibv_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "wr %llu: %s",
			      (unsigned long long)wc[i].wr_id,
			      ibv_wc_status_str(wc[i].status));
}

/* Every RC operation in one batch: data, results and completions. */
START_TEST(rc_every_operation)
{
	struct ibv_qp *qa = make_qpx(IBV_QPT_RC, RC_OPS);
	struct ibv_qp *qb = make_qpx(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	struct rc_bufs *b = calloc(1, sizeof(*b));
	struct ibv_data_buf inl[2] = { { "in", 2 }, { "line", 5 } };
	struct ibv_sge gather[2];
	struct ibv_wc wc[12];
	const struct ibv_wc *w;
	struct ibv_mr *mr;
	int i;

	ck_assert_ptr_nonnull(b);
	mr = ibv_reg_mr(pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_ptr_nonnull(mr);
	vu_connect(qa, qb->qp_num, &gid0, &conn);
	vu_connect(qb, qa->qp_num, &gid0, &conn);
	strcpy(b->src, "gath");
	strcpy(b->two, "ered");
	strcpy(b->readsrc, "read me");
	b->counter = 40;
	for (i = 0; i < 4; i++)
		post_recv(qb, 100 + i, b->recv[i], sizeof(b->recv[i]), mr->lkey);
	gather[0] = (struct ibv_sge){ (uintptr_t)b->src, 4, mr->lkey };
	gather[1] = (struct ibv_sge){ (uintptr_t)b->two, 5, mr->lkey };

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, gather);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htobe32(0xa1b2c3d4));
	ibv_wr_set_inline_data_list(x, 2, inl);
	x->wr_id = 3;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)b->target);
	ibv_wr_set_inline_data(x, "written", 8);
	x->wr_id = 4;
	ibv_wr_rdma_write_imm(x, mr->rkey, (uintptr_t)b->target + 8,
			      htobe32(7));
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)b->src, 4);
	x->wr_id = 5;
	ibv_wr_rdma_read(x, mr->rkey, (uintptr_t)b->readsrc);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)b->readdst, 8);
	x->wr_id = 6;
	ibv_wr_atomic_fetch_add(x, mr->rkey, (uintptr_t)&b->counter, 2);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)&b->orig[0], 8);
	x->wr_id = 7;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_atomic_cmp_swp(x, mr->rkey, (uintptr_t)&b->counter, 42, 99);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)&b->orig[1], 8);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(x, 0x12345678);
	ibv_wr_set_inline_data(x, "inv", 4);
	ck_assert_int_eq(ibv_wr_complete(x), 0);

	poll_ex(wc, 12);
	check_all_ok(wc, 12);
	w = wc_of(wc, 12, 103);
	ck_assert(w->wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(w->invalidated_rkey, 0x12345678);
	ck_assert_str_eq(b->recv[3], "inv");
	ck_assert_int_eq(wc_of(wc, 12, 8)->opcode, IBV_WC_SEND);
	ck_assert_int_eq(wc_of(wc, 12, 1)->opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc_of(wc, 12, 1)->qp_num, qa->qp_num);
	ck_assert_int_eq(wc_of(wc, 12, 3)->opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(wc_of(wc, 12, 5)->opcode, IBV_WC_RDMA_READ);
	ck_assert_int_eq(wc_of(wc, 12, 6)->opcode, IBV_WC_FETCH_ADD);
	ck_assert_int_eq(wc_of(wc, 12, 7)->opcode, IBV_WC_COMP_SWAP);
	w = wc_of(wc, 12, 100);
	ck_assert_int_eq(w->opcode, IBV_WC_RECV);
	ck_assert_uint_eq(w->byte_len, 9);
	ck_assert_uint_eq(w->qp_num, qb->qp_num);
	ck_assert_str_eq(b->recv[0], "gathered");
	w = wc_of(wc, 12, 101);
	ck_assert_uint_eq(w->byte_len, 7);
	ck_assert(w->wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(w->imm_data), 0xa1b2c3d4);
	ck_assert_str_eq(b->recv[1], "inline");
	w = wc_of(wc, 12, 102);
	ck_assert_int_eq(w->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(be32toh(w->imm_data), 7);
	ck_assert_str_eq(b->target, "written");
	ck_assert_mem_eq(b->target + 8, "gath", 4);
	ck_assert_str_eq(b->readdst, "read me");
	ck_assert_uint_eq(b->orig[0], 40);
	ck_assert_uint_eq(b->orig[1], 42);
	ck_assert_uint_eq(b->counter, 99);

	ck_assert_int_eq(ibv_destroy_qp(qa), 0);
	ck_assert_int_eq(ibv_destroy_qp(qb), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	free(b);
}
END_TEST

/* UD: the destination comes from ibv_wr_set_ud_addr. */
START_TEST(ud_send_imm)
{
	struct ibv_qp *u1 = make_qpx(IBV_QPT_UD, IBV_QP_EX_WITH_SEND_WITH_IMM);
	struct ibv_qp *u2 = make_qpx(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(u1);
	struct ibv_ah_attr av = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = gid0, .hop_limit = 1 },
	};
	char buf[40 + 64] = { 0 };
	struct ibv_wc wc[2];
	const struct ibv_wc *w;
	struct ibv_mr *mr;
	struct ibv_ah *ah;

	vu_connect(u1, 0, &gid0, &conn);
	vu_connect(u2, 0, &gid0, &conn);
	ah = ibv_create_ah(pd, &av);
	ck_assert_ptr_nonnull(ah);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	post_recv(u2, 200, buf, sizeof(buf), mr->lkey);
	ibv_wr_start(x);
	x->wr_id = 9;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(0x55));
	ibv_wr_set_ud_addr(x, ah, u2->qp_num, 0x11111111);
	ibv_wr_set_inline_data(x, "datagram", 9);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	poll_ex(wc, 2);
	check_all_ok(wc, 2);
	w = wc_of(wc, 2, 200);
	ck_assert_uint_eq(w->byte_len, 40 + 9);
	ck_assert_uint_eq(w->src_qp, u1->qp_num);
	ck_assert(w->wc_flags & IBV_WC_GRH);
	ck_assert_uint_eq(w->sl, 2);		/* ibv_wc_read_sl: IPv4 */
	ck_assert(w->wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(w->imm_data), 0x55);
	ck_assert_str_eq(buf + 40, "datagram");
	ck_assert_int_eq(wc_of(wc, 2, 9)->opcode, IBV_WC_SEND);
	ck_assert_int_eq(ibv_destroy_qp(u1), 0);
	ck_assert_int_eq(ibv_destroy_qp(u2), 0);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

/* UC: writes and sends, no acknowledgements. */
START_TEST(uc_write_and_send)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	struct ibv_qp *qa = make_qpx(IBV_QPT_UC, ops);
	struct ibv_qp *qb = make_qpx(IBV_QPT_UC, ops);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	char buf[3][64] = { { 0 } };
	struct ibv_wc wc[5];
	const struct ibv_wc *w;
	struct ibv_mr *mr;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(mr);
	vu_connect(qa, qb->qp_num, &gid0, &conn);
	vu_connect(qb, qa->qp_num, &gid0, &conn);
	post_recv(qb, 300, buf[0], 64, mr->lkey);
	post_recv(qb, 301, buf[1], 64, mr->lkey);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 30;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf[2]);
	ibv_wr_set_inline_data(x, "uc write", 9);
	x->wr_id = 31;
	ibv_wr_rdma_write_imm(x, mr->rkey, (uintptr_t)buf[2] + 32, htobe32(3));
	ibv_wr_set_inline_data(x, "imm", 4);
	x->wr_id = 32;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "uc send", 8);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	poll_ex(wc, 5);
	check_all_ok(wc, 5);
	w = wc_of(wc, 5, 300);
	ck_assert_int_eq(w->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(be32toh(w->imm_data), 3);
	w = wc_of(wc, 5, 301);
	ck_assert_int_eq(w->opcode, IBV_WC_RECV);
	ck_assert_str_eq(buf[1], "uc send");
	ck_assert_str_eq(buf[2], "uc write");
	ck_assert_str_eq(buf[2] + 32, "imm");
	ck_assert_int_eq(wc_of(wc, 5, 30)->opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(ibv_destroy_qp(qa), 0);
	ck_assert_int_eq(ibv_destroy_qp(qb), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
}
END_TEST

static void create_fails(struct ibv_qp_init_attr_ex *a, int err, const char *what)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(ctx, a);
	if (qp)
		ibv_destroy_qp(qp);
	ck_assert_msg(qp == NULL && errno == err, "%s: %s, not %s", what,
		      qp ? "created" : strerror(errno), strerror(err));
}

START_TEST(create_refused)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_init_attr ia = {
		.send_cq = ibv_cq_ex_to_cq(cqx), .recv_cq = ibv_cq_ex_to_cq(cqx),
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1 },
	};
	struct ibv_qp *qp;

	a = qpx_attr(IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW);
	create_fails(&a, EOPNOTSUPP, "UD BIND_MW");
	a = qpx_attr(IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV);
	create_fails(&a, EOPNOTSUPP, "UD LOCAL_INV");
	a = qpx_attr(IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE);
	create_fails(&a, EOPNOTSUPP, "ATOMIC_WRITE");
	a = qpx_attr(IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE);
	create_fails(&a, EOPNOTSUPP, "UD RDMA_WRITE");
	a = qpx_attr(IBV_QPT_UD, IBV_QP_EX_WITH_TSO);
	create_fails(&a, EOPNOTSUPP, "UD TSO");
	a = qpx_attr(IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ);
	create_fails(&a, EOPNOTSUPP, "UC RDMA_READ");
	a = qpx_attr(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	create_fails(&a, EOPNOTSUPP, "create_flags");
	a = qpx_attr(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	create_fails(&a, EOPNOTSUPP, "MAX_TSO_HEADER");
	a = qpx_attr(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_PD;
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;	/* no fallback */
	create_fails(&a, EINVAL, "no PD");
	a = qpx_attr(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.cap.max_send_wr = 1u << 20;
	create_fails(&a, EINVAL, "max_send_wr");

	/* Without SEND_OPS_FLAGS (or from ibv_create_qp) no ibv_qp_ex. */
	a = qpx_attr(IBV_QPT_UC, 0);
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(ctx, &a);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_ge(a.cap.max_send_wr, 8);
	ck_assert_ptr_null(ibv_qp_to_qp_ex(qp));
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	qp = ibv_create_qp(pd, &ia);
	ck_assert_ptr_nonnull(qp);
	ck_assert_ptr_null(ibv_qp_to_qp_ex(qp));
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
}
END_TEST

/* Waits a little and says whether any completion arrived. */
static bool any_completion(void)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int i;

	for (i = 0; i < 50; i++) {
		if (ibv_start_poll(cqx, &pa) == 0) {
			ibv_end_poll(cqx);
			return true;
		}
		usleep(1000);
	}
	return false;
}

/* A failed batch posts nothing: the first error is what wr_complete says. */
START_TEST(complete_errors)
{
	struct ibv_qp *qp = make_qpx(IBV_QPT_RC, IBV_QP_EX_WITH_SEND |
				     IBV_QP_EX_WITH_RDMA_WRITE);
	struct ibv_qp *ud = make_qpx(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	struct ibv_qp *peer = make_qpx(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp), *u = ibv_qp_to_qp_ex(ud);
	struct ibv_sge many[40];
	char big[300] = { 0 }, tgt[8] = { 0 };
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int i;

	/* In RESET the QP takes no work (kernel rxe: EINVAL). */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "x", 1);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);

	vu_connect(qp, peer->qp_num, &gid0, &conn);
	vu_connect(peer, qp->qp_num, &gid0, &conn);
	vu_connect(ud, 0, &gid0, &conn);
	memset(many, 0, sizeof(many));

	/* ATOMIC_WRITE is not there yet. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "x", 1);
	ibv_wr_atomic_write(x, 1, 0, big);
	ck_assert_int_eq(ibv_wr_complete(x), EOPNOTSUPP);
	/* An operation not asked for at creation. */
	ibv_wr_start(x);
	ibv_wr_rdma_read(x, 1, 0);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	/* More SGEs than the QP has, more inline data than it takes. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 5, many);	/* 4 granted */
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, 65);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, sizeof(big));
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	/* A setter without a builder. */
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 0, 0, 0);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	/* UD without a destination. */
	ibv_wr_start(u);
	ibv_wr_send(u);
	ibv_wr_set_inline_data(u, "x", 1);
	ck_assert_int_eq(ibv_wr_complete(u), EINVAL);
	/* A full queue: the whole batch goes. */
	ibv_wr_start(x);
	for (i = 0; i < 9; i++) {
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, "x", 1);
	}
	ck_assert_int_eq(ibv_wr_complete(x), ENOMEM);
	/* Aborted work never runs. */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "x", 1);
	ibv_wr_abort(x);
	ck_assert(!any_completion());
	/* An empty batch is fine, and the queue still works. */
	ibv_wr_start(x);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	ibv_wr_start(x);
	x->wr_id = 77;
	x->wr_flags = IBV_SEND_SIGNALED;
	mr = ibv_reg_mr(pd, tgt, sizeof(tgt), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(mr);
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)tgt);
	ibv_wr_set_inline_data(x, "w", 1);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	poll_ex(&wc, 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_str_eq(tgt, "w");
	ck_assert(!any_completion());
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_qp(ud), 0);
	ck_assert_int_eq(ibv_destroy_qp(peer), 0);
}
END_TEST

/* ---- the extended CQ ---- */

START_TEST(cq_ex_attrs)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 4 };
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_modify_cq_attr m = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = 4, .cq_period = 10 },
	};
	struct ibv_cq_ex *c;

	errno = 0;
	ck_assert_ptr_null(make_cqx(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_ptr_null(make_cqx(IBV_WC_EX_WITH_CVLAN));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq_ex(ctx, &a));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq_ex(ctx, &a));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	a.comp_mask = 0;
	a.cqe = 1u << 22;	/* max_cqe + 1 */
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq_ex(ctx, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.cqe = 4;
	a.comp_vector = 1;
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq_ex(ctx, &a));
	ck_assert_int_eq(errno, EINVAL);

	a.comp_vector = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	c = ibv_create_cq_ex(ctx, &a);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ibv_start_poll(c, &pa), ENOENT);
	pa.comp_mask = 1;
	ck_assert_int_eq(ibv_start_poll(c, &pa), EINVAL);
	/* Kernel rxe has no CQ moderation either. */
	ck_assert_int_eq(ibv_modify_cq(ibv_cq_ex_to_cq(c), &m), EOPNOTSUPP);
	ck_assert_int_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(c)), 0);
	/* An extended CQ is a CQ: ibv_poll_cq works on it too. */
	ck_assert_int_eq(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 1,
				     &(struct ibv_wc){ 0 }), 0);
}
END_TEST

START_TEST(rt_values)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct timespec t0, t1;
	uint64_t a, b;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(ibv_query_rt_values_ex(ctx, &v), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_uint_eq(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	a = (uint64_t)v.raw_clock.tv_sec * 1000000000u + (uint64_t)v.raw_clock.tv_nsec;
	b = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
	ck_assert_uint_ge(a, b);
	b = (uint64_t)t1.tv_sec * 1000000000u + (uint64_t)t1.tv_nsec;
	ck_assert_uint_le(a, b);
	/* Nothing asked, nothing marked; unknown bits are not marked. */
	v.comp_mask = IBV_VALUES_MASK_RESERVED;
	ck_assert_int_eq(ibv_query_rt_values_ex(ctx, &v), 0);
	ck_assert_uint_eq(v.comp_mask, 0);
}
END_TEST

/* The slot behind ibv_query_device_ex, with older and newer struct sizes. */
START_TEST(query_device_ex_sizes)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct {
		struct ibv_device_attr_ex a;
		unsigned char newer[64];
	} big;
	struct ibv_device_attr_ex ex;
	size_t i;

	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(v->query_device_ex);
	ck_assert_int_eq(ibv_query_device_ex(ctx, NULL, &ex), 0);
	ck_assert_uint_eq(ex.phys_port_cnt_ex, 1);
	ck_assert_uint_eq(ex.completion_timestamp_mask, 0);	/* none */
	memset(&big, 0xa5, sizeof(big));
	ck_assert_int_eq(v->query_device_ex(ctx, NULL, &big.a, sizeof(big)), 0);
	ck_assert_mem_eq(&big.a, &ex, sizeof(ex));
	for (i = 0; i < sizeof(big.newer); i++)
		ck_assert_uint_eq(big.newer[i], 0);
	/* An older caller's struct: only that much is written. */
	memset(&big, 0xa5, sizeof(big));
	ck_assert_int_eq(v->query_device_ex(ctx, NULL, &big.a,
					    sizeof(big.a.orig_attr) + 8), 0);
	ck_assert_mem_eq(&big.a, &ex, sizeof(big.a.orig_attr) + 8);
	ck_assert_uint_eq(((unsigned char *)&big.a)[sizeof(big.a.orig_attr) + 8], 0xa5);
	ck_assert_int_eq(v->query_device_ex(ctx, NULL, &big.a, 16), EINVAL);
}
END_TEST

/* ---- import ---- */

START_TEST(import_in_process)
{
	char buf[64];
	struct ibv_context *ic;
	struct ibv_pd *ipd, *other;
	struct ibv_mr *mr, *imr;
	int fd, p[2];

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(mr);
	fd = dup(ctx->cmd_fd);
	ck_assert_int_ge(fd, 0);
	ic = ibv_import_device(fd);
	ck_assert_msg(ic != NULL, "ibv_import_device: %s", strerror(errno));
	ck_assert_int_eq(ic->cmd_fd, fd);
	ck_assert_ptr_eq(ic->device, ctx->device);
	ipd = ibv_import_pd(ic, pd->handle);
	ck_assert_ptr_nonnull(ipd);
	ck_assert_ptr_eq(ipd->context, ic);
	ck_assert_uint_eq(ipd->handle, pd->handle);
	imr = ibv_import_mr(ipd, mr->handle);
	ck_assert_ptr_nonnull(imr);
	ck_assert_uint_eq(imr->lkey, mr->lkey);
	ck_assert_uint_eq(imr->rkey, mr->rkey);
	ck_assert_uint_eq(imr->length, sizeof(buf));
	ck_assert_ptr_eq(imr->pd, ipd);
	/* An imported PD with objects on it is busy, as any PD. */
	ck_assert_int_eq(ibv_dealloc_pd(ipd), EBUSY);

	errno = 0;
	ck_assert_ptr_null(ibv_import_pd(ic, 0xfffffff));
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_ptr_null(ibv_import_mr(ipd, 0xfffffff));
	ck_assert_int_eq(errno, ENOENT);
	other = ibv_alloc_pd(ic);
	ck_assert_ptr_nonnull(other);
	errno = 0;
	ck_assert_ptr_null(ibv_import_mr(other, mr->handle));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_dealloc_pd(other), 0);

	ibv_unimport_mr(imr);
	ibv_unimport_pd(ipd);
	/* The originals are untouched. */
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	/* The imported context closes the descriptor it was given. */
	ck_assert_int_eq(ibv_close_device(ic), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);

	/* Not a urxe cmd_fd of this process, not a descriptor. */
	ck_assert_int_eq(pipe(p), 0);
	errno = 0;
	ck_assert_ptr_null(ibv_import_device(p[0]));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	close(p[0]);
	close(p[1]);
	errno = 0;
	ck_assert_ptr_null(ibv_import_device(-1));
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

static Suite *qpex_suite(void)
{
	Suite *s = suite_create("qpex");
	TCase *tc = tu_tcase(s, "extended", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, rc_every_operation);
	tcase_add_test(tc, ud_send_imm);
	tcase_add_test(tc, uc_write_and_send);
	tcase_add_test(tc, create_refused);
	tcase_add_test(tc, complete_errors);
	tcase_add_test(tc, cq_ex_attrs);
	tcase_add_test(tc, rt_values);
	tcase_add_test(tc, query_device_ex_sizes);
	tcase_add_test(tc, import_in_process);
	return s;
}

int main(void)
{
	return tu_run(qpex_suite());
}
