// SPDX-License-Identifier: BSD-2-Clause
/*
 * RC error paths through the public verbs, on rxe0 (lo), with two contexts
 * in one process: A requests, B responds.  Every case asserts what both
 * sides see: the requester's completions (the failed request, then
 * IBV_WC_WR_FLUSH_ERR for each one behind it), the responder's
 * completions and its affiliated asynchronous event (ibv_get_async_event),
 * the QP states, and that nothing else shows up (no stray completion or
 * event on the other side).
 *
 *   remote access violations (bad rkey, out of bounds, a right missing on
 *   the MR or the QP, for WRITE, WRITE_WITH_IMM, READ and atomics):
 *   IBV_WC_REM_ACCESS_ERR / IBV_EVENT_QP_ACCESS_ERR, the target untouched;
 *   a misaligned atomic: IBV_WC_REM_INV_REQ_ERR / IBV_EVENT_QP_REQ_ERR;
 *   a SEND into a receive with a bad lkey: IBV_WC_REM_OP_ERR at the
 *   requester, IBV_WC_LOC_PROT_ERR on the receive; a receive too short
 *   (one packet or several): IBV_WC_REM_INV_REQ_ERR / IBV_WC_LOC_LEN_ERR;
 *   local protection (bad lkey, beyond the MR, another PD's MR, READ into
 *   memory without LOCAL_WRITE): IBV_WC_LOC_PROT_ERR, the peer untouched;
 *   a QP moved to ERR flushes every send and receive, in order, and what
 *   is posted afterwards; a CQ overrun raises IBV_EVENT_CQ_ERR; posting in
 *   RESET/INIT/RTR is EINVAL, beyond the queue depth ENOMEM (*bad_wr);
 *   no receive posted: rnr_retry 0..6 ends in IBV_WC_RNR_RETRY_EXC_ERR
 *   (the responder unharmed), 7 retries until the receive comes;
 *   a vanished peer (QP destroyed): IBV_WC_RETRY_EXC_ERR no sooner than
 *   (retry_cnt + 1) x 4.096 us x 2^timeout and within twice that + 1 s
 *   (retry_cnt 7 is seven, not forever); timeout 0: no timer, nothing
 *   completes;
 *   frames from a plain UDP socket to the device's 127.117.x.y:4791
 *   (short, unknown opcodes, TVer 1, truncated headers, payload where none
 *   belongs, bad pad, bad ICRC, unknown QPN, wrong transport, oversized,
 *   random) are dropped and counted, and stray responses (ACK, NAKs, READ
 *   response, atomic ACK) to an idle QP are ignored: the QPs stay in RTS
 *   and a transfer still succeeds.
 */
#include <arpa/inet.h>
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <urxe/engine.h>
#include <urxe/icrc.h>
#include <urxe/provider.h>
#include <urxe/wire.h>

#include "testutil.h"
#include "verbs_util.h"

#define BUFSZ (64 * 1024)
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define WAIT_MS 2000

struct side {
	struct vu_side v;		/* v.mr: every right */
	struct ibv_qp *qp;
	struct ibv_mr *mr2;		/* a per-test MR, if any */
};

/* How a test's RC QPs are connected, and their queue depths. */
struct qp_opts {
	struct vu_qp_opts c;		/* c.access: B's QP access flags */
	uint32_t swr, rwr;		/* queue depths */
};

static const struct qp_opts DEF_OPTS = {
	.c = { .mtu = IBV_MTU_4096, .psn = 0x123, .hop_limit = 64,
	       .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC,
	       .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	       .min_rnr_timer = 1, .rd_atomic = 4 },
	.swr = 16, .rwr = 16,
};

static struct tu_sandbox sb;
static struct side A, B;
static union ibv_gid gid;

/* ---- fixture ---- */

static void side_init(struct side *s)
{
	memset(s, 0, sizeof(*s));
	vu_side_open(&s->v, 64, BUFSZ, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC);
}

static void side_fini(struct side *s)
{
	if (s->qp)
		ck_assert_int_eq(ibv_destroy_qp(s->qp), 0);
	if (s->mr2)
		ck_assert_int_eq(ibv_dereg_mr(s->mr2), 0);
	vu_side_close(&s->v);
	memset(s, 0, sizeof(*s));
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	side_init(&A);
	side_init(&B);
	ck_assert_int_eq(ibv_query_gid(A.v.ctx, 1, 0, &gid), 0);
}

static void teardown(void)
{
	side_fini(&A);
	side_fini(&B);
	tu_sandbox_fini(&sb);
}

/* ---- QPs ---- */

static void qp_create(struct side *s, const struct qp_opts *o)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->v.scq, .recv_cq = s->v.rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = o->swr, .max_recv_wr = o->rwr,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};

	s->qp = ibv_create_qp(s->v.pd, &ia);
	ck_assert_msg(s->qp != NULL, "ibv_create_qp: %s", strerror(errno));
}

/* A and B connected to each other: A with @oa, B with @ob. */
static void pair(const struct qp_opts *oa, const struct qp_opts *ob)
{
	qp_create(&A, oa);
	qp_create(&B, ob);
	vu_connect_pair(A.qp, B.qp, &gid, &oa->c, &ob->c);
}

/* ---- posting ---- */

struct op {
	enum ibv_wr_opcode opcode;
	uint64_t wr_id;
	uint64_t laddr;
	uint32_t len, lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t add_cmp, swap;
};

static int post(struct side *s, const struct op *op)
{
	struct ibv_sge sge = { op->laddr, op->len, op->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op->wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = op->opcode, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0x1234),
	}, *bad = NULL;

	if (op->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    op->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = op->raddr;
		wr.wr.atomic.rkey = op->rkey;
		wr.wr.atomic.compare_add = op->add_cmp;
		wr.wr.atomic.swap = op->swap;
	} else {
		wr.wr.rdma.remote_addr = op->raddr;
		wr.wr.rdma.rkey = op->rkey;
	}
	return ibv_post_send(s->qp, &wr, &bad);
}

/* A's SEND of @len bytes from A's buffer (+ @off). */
static void send_from_a(uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct op op = { IBV_WR_SEND, wr_id, (uintptr_t)A.v.buf + off, len,
			 A.v.mr->lkey, 0, 0, 0, 0 };

	ck_assert_int_eq(post(&A, &op), 0);
}

/* A's WRITE of @len bytes into B's buffer at @off (a valid one). */
static void write_to_b(uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct op op = { IBV_WR_RDMA_WRITE, wr_id, (uintptr_t)A.v.buf, len,
			 A.v.mr->lkey, (uintptr_t)B.v.buf + off, B.v.mr->rkey, 0, 0 };

	ck_assert_int_eq(post(&A, &op), 0);
}

static void post_recv(struct side *s, uint64_t wr_id, uint64_t addr,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
			   *bad = NULL;

	ck_assert_int_eq(ibv_post_recv(s->qp, &wr, &bad), 0);
}

/* ---- completions and events ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void expect_wc(struct ibv_cq *cq, struct ibv_qp *qp, uint64_t wr_id,
		      enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;

	ck_assert_msg(vu_wait_wc(cq, WAIT_MS, &wc), "%s: no completion for wr_id %llu (want %s)",
		      what, (unsigned long long)wr_id, ibv_wc_status_str(status));
	ck_assert_msg(wc.wr_id == wr_id && wc.status == status,
		      "%s: completion wr_id %llu %s, want wr_id %llu %s", what,
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		      (unsigned long long)wr_id, ibv_wc_status_str(status));
	ck_assert_uint_eq(wc.qp_num, qp->qp_num);
}

static void expect_no_wc(struct ibv_cq *cq, int ms, const char *what)
{
	struct ibv_wc wc;

	ck_assert_msg(!vu_wait_wc(cq, ms, &wc), "%s: unexpected completion wr_id %llu %s",
		      what, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

/* The next asynchronous event of @ctx within @ms (acknowledged). */
static bool next_async(struct ibv_context *ctx, int ms,
		       struct ibv_async_event *out)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int rc;

	do {
		rc = poll(&p, 1, ms);
	} while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return false;
	ck_assert_int_eq(ibv_get_async_event(ctx, &ev), 0);
	*out = ev;
	ibv_ack_async_event(&ev);
	return true;
}

static void expect_qp_event(struct side *s, enum ibv_event_type type)
{
	struct ibv_async_event ev;

	ck_assert_msg(next_async(s->v.ctx, WAIT_MS, &ev), "no async event (want %s)",
		      ibv_event_type_str(type));
	ck_assert_msg(ev.event_type == type, "async event %s, want %s",
		      ibv_event_type_str(ev.event_type), ibv_event_type_str(type));
	ck_assert_ptr_eq(ev.element.qp, s->qp);
}

static void expect_no_event(struct side *s, int ms, const char *who)
{
	struct ibv_async_event ev;

	ck_assert_msg(!next_async(s->v.ctx, ms, &ev), "%s: unexpected async event %s",
		      who, ibv_event_type_str(ev.event_type));
}

/* A good round trip A -> B after everything: the device still works. */
static void transfer_works(void)
{
	uint32_t i;

	for (i = 0; i < 3000; i++)
		A.v.buf[i] = (uint8_t)(i * 7 + 1);
	post_recv(&B, 0x900, (uintptr_t)B.v.buf + 8192, 4096, B.v.mr->lkey);
	send_from_a(0x901, 0, 3000);
	expect_wc(A.v.scq, A.qp, 0x901, IBV_WC_SUCCESS, "SEND after");
	expect_wc(B.v.rcq, B.qp, 0x900, IBV_WC_SUCCESS, "receive after");
	ck_assert_mem_eq(B.v.buf + 8192, A.v.buf, 3000);
}

/* ---- remote access violations: table-driven ---- */

enum target {
	T_BAD_RKEY,		/* an rkey that names nothing */
	T_OOB,			/* the range runs past the MR */
	T_MR_RIGHT,		/* B's MR lacks the right */
	T_QP_RIGHT,		/* B's QP lacks the right */
	T_MISALIGNED,		/* atomic at an address not 8-aligned */
	T_OOB_MULTI,		/* 3 packets, the MR covers 2 */
};

struct rem_case {
	const char *name;
	enum ibv_wr_opcode opcode;
	enum target target;
	enum ibv_wc_status want;
	enum ibv_event_type event;
};

static const struct rem_case rem_cases[] = {
	{ "WRITE bad rkey", IBV_WR_RDMA_WRITE, T_BAD_RKEY,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "WRITE out of bounds", IBV_WR_RDMA_WRITE, T_OOB,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "WRITE 3 packets, MR covers 2", IBV_WR_RDMA_WRITE, T_OOB_MULTI,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "WRITE, MR without REMOTE_WRITE", IBV_WR_RDMA_WRITE, T_MR_RIGHT,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "WRITE, QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE, T_QP_RIGHT,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "WRITE_WITH_IMM bad rkey", IBV_WR_RDMA_WRITE_WITH_IMM, T_BAD_RKEY,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "READ bad rkey", IBV_WR_RDMA_READ, T_BAD_RKEY,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "READ out of bounds", IBV_WR_RDMA_READ, T_OOB,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "READ, MR without REMOTE_READ", IBV_WR_RDMA_READ, T_MR_RIGHT,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "READ, QP without REMOTE_READ", IBV_WR_RDMA_READ, T_QP_RIGHT,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "FETCH_ADD bad rkey", IBV_WR_ATOMIC_FETCH_AND_ADD, T_BAD_RKEY,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "CMP_SWAP, MR without REMOTE_ATOMIC", IBV_WR_ATOMIC_CMP_AND_SWP,
	  T_MR_RIGHT, IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "FETCH_ADD, QP without REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD,
	  T_QP_RIGHT, IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "FETCH_ADD out of bounds", IBV_WR_ATOMIC_FETCH_AND_ADD, T_OOB,
	  IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
	{ "FETCH_ADD misaligned", IBV_WR_ATOMIC_FETCH_AND_ADD, T_MISALIGNED,
	  IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR },
	{ "CMP_SWAP misaligned", IBV_WR_ATOMIC_CMP_AND_SWP, T_MISALIGNED,
	  IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR },
};

static unsigned int right_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_READ:
		return IBV_ACCESS_REMOTE_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return IBV_ACCESS_REMOTE_WRITE;
	}
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

START_TEST(remote_access)
{
	const struct rem_case *c = &rem_cases[_i];
	struct qp_opts ob = DEF_OPTS;
	unsigned int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct op op = { .opcode = c->opcode, .wr_id = 1,
			 .laddr = (uintptr_t)A.v.buf, .lkey = A.v.mr->lkey,
			 .raddr = (uintptr_t)B.v.buf, .rkey = B.v.mr->rkey,
			 .len = is_atomic(c->opcode) ? 8 : 1000, .add_cmp = 1 };
	uint8_t *before = malloc(BUFSZ);
	uint32_t k;

	ck_assert_ptr_nonnull(before);
	for (k = 0; k < BUFSZ; k++)
		B.v.buf[k] = (uint8_t)(k * 13 + 5);
	memcpy(before, B.v.buf, BUFSZ);
	switch (c->target) {
	case T_BAD_RKEY:
		op.rkey = B.v.mr->rkey ^ 0x5a5a00;
		break;
	case T_OOB:
		op.raddr = (uintptr_t)B.v.buf + BUFSZ - (is_atomic(c->opcode) ? 0 : 500);
		break;
	case T_OOB_MULTI:
		B.mr2 = ibv_reg_mr(B.v.pd, B.v.buf, 8192, all);
		ck_assert_ptr_nonnull(B.mr2);
		op.rkey = B.mr2->rkey;
		op.len = 3 * 4096;
		break;
	case T_MR_RIGHT:
		B.mr2 = ibv_reg_mr(B.v.pd, B.v.buf, BUFSZ, all & ~right_of(c->opcode));
		ck_assert_ptr_nonnull(B.mr2);
		op.rkey = B.mr2->rkey;
		break;
	case T_QP_RIGHT:
		ob.c.access &= ~right_of(c->opcode);
		break;
	case T_MISALIGNED:
		op.raddr += 4;
		break;
	}
	pair(&DEF_OPTS, &ob);
	/* B has a receive waiting: it must be flushed, not consumed. */
	post_recv(&B, 0xb0, (uintptr_t)B.v.buf + 32768, 4096, B.v.mr->lkey);
	ck_assert_int_eq(post(&A, &op), 0);
	write_to_b(2, 16384, 100);
	send_from_a(3, 0, 100);

	expect_wc(A.v.scq, A.qp, 1, c->want, c->name);
	expect_wc(A.v.scq, A.qp, 2, IBV_WC_WR_FLUSH_ERR, c->name);
	expect_wc(A.v.scq, A.qp, 3, IBV_WC_WR_FLUSH_ERR, c->name);
	expect_wc(B.v.rcq, B.qp, 0xb0, IBV_WC_WR_FLUSH_ERR, c->name);
	expect_qp_event(&B, c->event);
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_ERR);
	ck_assert_int_eq(vu_qp_state(B.qp), IBV_QPS_ERR);
	expect_no_event(&A, 100, "requester");
	expect_no_event(&B, 0, "responder");
	expect_no_wc(A.v.rcq, 0, "A's receive CQ");
	expect_no_wc(B.v.scq, 0, "B's send CQ");
	ck_assert_msg(!memcmp(before, B.v.buf, BUFSZ), "%s: the target changed", c->name);
	free(before);
}
END_TEST

/* ---- SEND failures at the receiver ---- */

static void send_fails(uint32_t rlen, uint32_t rlkey, uint32_t slen,
		       enum ibv_wc_status sender, enum ibv_wc_status receiver)
{
	struct ibv_async_event ev;

	pair(&DEF_OPTS, &DEF_OPTS);
	post_recv(&B, 0xb1, (uintptr_t)B.v.buf, rlen, rlkey);
	post_recv(&B, 0xb2, (uintptr_t)B.v.buf + 32768, 4096, B.v.mr->lkey);
	send_from_a(1, 0, slen);
	send_from_a(2, 0, 10);
	expect_wc(A.v.scq, A.qp, 1, sender, "SEND");
	expect_wc(A.v.scq, A.qp, 2, IBV_WC_WR_FLUSH_ERR, "SEND behind");
	expect_wc(B.v.rcq, B.qp, 0xb1, receiver, "receive");
	expect_wc(B.v.rcq, B.qp, 0xb2, IBV_WC_WR_FLUSH_ERR, "receive behind");
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_ERR);
	ck_assert_int_eq(vu_qp_state(B.qp), IBV_QPS_ERR);
	expect_no_event(&A, 100, "requester");
	/* The receiver's error is in its completion; an event may follow. */
	if (next_async(B.v.ctx, 100, &ev)) {
		ck_assert_ptr_eq(ev.element.qp, B.qp);
		printf("note: %s at the receiver also raised %s\n",
		       ibv_wc_status_str(receiver), ibv_event_type_str(ev.event_type));
	}
}

START_TEST(send_bad_recv_lkey)
{
	send_fails(4096, B.v.mr->lkey ^ 0x3c00, 100, IBV_WC_REM_OP_ERR,
		   IBV_WC_LOC_PROT_ERR);
}
END_TEST

START_TEST(recv_too_short)
{
	send_fails(64, B.v.mr->lkey, 100, IBV_WC_REM_INV_REQ_ERR,
		   IBV_WC_LOC_LEN_ERR);
}
END_TEST

START_TEST(recv_too_short_multi)
{
	/* three 4 KiB packets into 5000 bytes: the second overflows */
	send_fails(5000, B.v.mr->lkey, 3 * 4096, IBV_WC_REM_INV_REQ_ERR,
		   IBV_WC_LOC_LEN_ERR);
}
END_TEST

/* ---- local protection ---- */

enum lcase { L_BAD_LKEY, L_OOB, L_OTHER_PD, L_READ_NO_LOCAL_WRITE };

START_TEST(local_protection)
{
	static const char *const names[] = {
		"bad lkey", "beyond the MR", "another PD's MR",
		"READ into memory without LOCAL_WRITE",
	};
	struct op op = { IBV_WR_SEND, 1, (uintptr_t)A.v.buf, 1000, A.v.mr->lkey,
			 (uintptr_t)B.v.buf, B.v.mr->rkey, 0, 0 };
	struct ibv_pd *pd2 = NULL;
	uint8_t saved[1000];

	pair(&DEF_OPTS, &DEF_OPTS);
	post_recv(&B, 0xb1, (uintptr_t)B.v.buf, 4096, B.v.mr->lkey);
	switch (_i) {
	case L_BAD_LKEY:
		op.lkey ^= 0x7700;
		break;
	case L_OOB:
		op.laddr = (uintptr_t)A.v.buf + BUFSZ - 100;
		break;
	case L_OTHER_PD:
		pd2 = ibv_alloc_pd(A.v.ctx);
		ck_assert_ptr_nonnull(pd2);
		A.mr2 = ibv_reg_mr(pd2, A.v.buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(A.mr2);
		op.lkey = A.mr2->lkey;
		break;
	case L_READ_NO_LOCAL_WRITE:
		A.mr2 = ibv_reg_mr(A.v.pd, A.v.buf, BUFSZ, IBV_ACCESS_REMOTE_READ);
		ck_assert_ptr_nonnull(A.mr2);
		op.opcode = IBV_WR_RDMA_READ;
		op.lkey = A.mr2->lkey;
		memset(B.v.buf, 0xee, 1000);
		memcpy(saved, A.v.buf, sizeof(saved));
		break;
	}
	ck_assert_int_eq(post(&A, &op), 0);
	/* (behind a READ it may reach B before the answer fails here) */
	write_to_b(2, 16384, 10);
	expect_wc(A.v.scq, A.qp, 1, IBV_WC_LOC_PROT_ERR, names[_i]);
	expect_wc(A.v.scq, A.qp, 2, IBV_WC_WR_FLUSH_ERR, names[_i]);
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_ERR);
	if (_i == L_READ_NO_LOCAL_WRITE)
		ck_assert_mem_eq(A.v.buf, saved, sizeof(saved));
	/* The peer saw nothing it must act on. */
	ck_assert_int_eq(vu_qp_state(B.qp), IBV_QPS_RTS);
	expect_no_wc(B.v.rcq, 100, names[_i]);
	expect_no_event(&B, 0, "peer");
	if (A.mr2) {
		ck_assert_int_eq(ibv_destroy_qp(A.qp), 0);
		A.qp = NULL;
		ck_assert_int_eq(ibv_dereg_mr(A.mr2), 0);
		A.mr2 = NULL;
	}
	if (pd2)
		ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
}
END_TEST

/* ---- flushing ---- */

/* A -> B with B left in INIT: B ignores everything, nothing completes. */
static void pair_stuck(struct qp_opts *oa)
{
	oa->c.timeout = 0;	/* no transport timer: no retry_cnt to run out */
	qp_create(&A, oa);
	qp_create(&B, &DEF_OPTS);
	vu_to_init(A.qp, &oa->c);
	vu_to_init(B.qp, &DEF_OPTS.c);
	vu_to_rtr(A.qp, B.qp->qp_num, &gid, &oa->c);
	vu_to_rts(A.qp, &oa->c);
}

START_TEST(error_flushes_everything)
{
	struct qp_opts oa = DEF_OPTS;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint64_t k;

	pair_stuck(&oa);
	for (k = 0; k < 5; k++) {
		post_recv(&A, 100 + k, (uintptr_t)A.v.buf + 4096 * k, 4096, A.v.mr->lkey);
		if (k == 2)
			write_to_b(k, 0, 8192);
		else
			send_from_a(k, 0, 100 + (uint32_t)k);
	}
	expect_no_wc(A.v.scq, 200, "stuck sends");
	ck_assert_int_eq(ibv_modify_qp(A.qp, &a, IBV_QP_STATE), 0);
	for (k = 0; k < 5; k++)
		expect_wc(A.v.scq, A.qp, k, IBV_WC_WR_FLUSH_ERR, "send flushed");
	for (k = 0; k < 5; k++)
		expect_wc(A.v.rcq, A.qp, 100 + k, IBV_WC_WR_FLUSH_ERR, "receive flushed");
	/* Posting in ERR is allowed and completes in error at once. */
	send_from_a(7, 0, 10);
	post_recv(&A, 107, (uintptr_t)A.v.buf, 4096, A.v.mr->lkey);
	expect_wc(A.v.scq, A.qp, 7, IBV_WC_WR_FLUSH_ERR, "send posted in ERR");
	expect_wc(A.v.rcq, A.qp, 107, IBV_WC_WR_FLUSH_ERR, "receive posted in ERR");
	expect_no_wc(A.v.scq, 50, "nothing else");
	expect_no_wc(A.v.rcq, 0, "nothing else");
	/* The application moved it: no event. */
	expect_no_event(&A, 100, "A");
}
END_TEST

/* ---- CQ overrun ---- */

START_TEST(cq_overrun_event)
{
	struct qp_opts o = DEF_OPTS;
	struct ibv_async_event ev;
	struct ibv_cq *small;
	uint64_t k;

	small = ibv_create_cq(A.v.ctx, 2, NULL, NULL, 0);
	ck_assert_ptr_nonnull(small);
	ck_assert_int_eq(ibv_destroy_cq(A.v.scq), 0);
	A.v.scq = small;
	pair(&o, &DEF_OPTS);
	for (k = 0; k < (uint64_t)small->cqe + 3; k++)
		write_to_b(k, 0, 64);
	ck_assert_msg(next_async(A.v.ctx, WAIT_MS, &ev), "no IBV_EVENT_CQ_ERR");
	ck_assert_int_eq(ev.event_type, IBV_EVENT_CQ_ERR);
	ck_assert_ptr_eq(ev.element.cq, small);
}
END_TEST

/* ---- posting rules ---- */

START_TEST(post_by_state)
{
	struct qp_opts o = DEF_OPTS;
	struct ibv_sge sge = { (uintptr_t)A.v.buf, 8, A.v.mr->lkey };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
			   *rbad;

	qp_create(&A, &o);
	qp_create(&B, &o);
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(A.qp, &swr, &sbad), EINVAL);	/* RESET */
	ck_assert_ptr_eq(sbad, &swr);
	rbad = NULL;
	ck_assert_int_eq(ibv_post_recv(A.qp, &rwr, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	vu_to_init(A.qp, &o.c);
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(A.qp, &swr, &sbad), EINVAL);	/* INIT */
	ck_assert_ptr_eq(sbad, &swr);
	ck_assert_int_eq(ibv_post_recv(A.qp, &rwr, &rbad), 0);	/* IBA 10.3.1 */
	vu_to_rtr(A.qp, B.qp->qp_num, &gid, &o.c);
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(A.qp, &swr, &sbad), EINVAL);	/* RTR */
	ck_assert_ptr_eq(sbad, &swr);
}
END_TEST

START_TEST(post_beyond_depth)
{
	struct qp_opts o = DEF_OPTS;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sge = { (uintptr_t)A.v.buf, 8, A.v.mr->lkey };
	struct ibv_send_wr swr[40], *sbad;
	struct ibv_recv_wr rwr[40], *rbad;
	uint32_t k, sdepth, rdepth;

	o.swr = 4;
	o.rwr = 4;
	pair_stuck(&o);
	ck_assert_int_eq(ibv_query_qp(A.qp, &qa, IBV_QP_CAP, &ia), 0);
	sdepth = ia.cap.max_send_wr;
	rdepth = ia.cap.max_recv_wr;
	ck_assert(sdepth >= 4 && sdepth < 38 && rdepth >= 4 && rdepth < 38);
	memset(swr, 0, sizeof(swr));
	memset(rwr, 0, sizeof(rwr));
	for (k = 0; k < 40; k++) {
		swr[k] = (struct ibv_send_wr){ .wr_id = k, .sg_list = &sge,
					       .num_sge = 1, .opcode = IBV_WR_SEND,
					       .next = k < 39 ? &swr[k + 1] : NULL };
		rwr[k] = (struct ibv_recv_wr){ .wr_id = k, .sg_list = &sge,
					       .num_sge = 1,
					       .next = k < 39 ? &rwr[k + 1] : NULL };
	}
	/* One list longer than the queue: the first depth go in. */
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(A.qp, swr, &sbad), ENOMEM);
	ck_assert_ptr_eq(sbad, &swr[sdepth]);
	rbad = NULL;
	ck_assert_int_eq(ibv_post_recv(A.qp, rwr, &rbad), ENOMEM);
	ck_assert_ptr_eq(rbad, &rwr[rdepth]);
	/* Nothing completes (B ignores A), so the queues stay full. */
	swr[0].next = NULL;
	rwr[0].next = NULL;
	ck_assert_int_eq(ibv_post_send(A.qp, swr, &sbad), ENOMEM);
	ck_assert_int_eq(ibv_post_recv(A.qp, rwr, &rbad), ENOMEM);
	expect_no_wc(A.v.scq, 100, "stuck");
}
END_TEST

/* ---- RNR ---- */

START_TEST(rnr_exhausted)
{
	struct qp_opts oa = DEF_OPTS;
	enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE_WITH_IMM };
	struct op op = { ops[_i % 2], 1, (uintptr_t)A.v.buf, 2000, A.v.mr->lkey,
			 (uintptr_t)B.v.buf, B.v.mr->rkey, 0, 0 };
	double t0;

	oa.c.rnr_retry = (uint8_t)(_i / 2);	/* 0..6 */
	pair(&oa, &DEF_OPTS);			/* B: min_rnr_timer 1 (10 us) */
	memset(B.v.buf, 0x11, BUFSZ);
	t0 = now_s();
	ck_assert_int_eq(post(&A, &op), 0);
	send_from_a(2, 0, 10);
	expect_wc(A.v.scq, A.qp, 1, IBV_WC_RNR_RETRY_EXC_ERR, "RNR");
	printf("rnr_retry %u (%s): IBV_WC_RNR_RETRY_EXC_ERR after %.6f s\n",
	       oa.c.rnr_retry, _i % 2 ? "WRITE_WITH_IMM" : "SEND", now_s() - t0);
	expect_wc(A.v.scq, A.qp, 2, IBV_WC_WR_FLUSH_ERR, "behind RNR");
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_ERR);
	/* The responder did nothing wrong. */
	ck_assert_int_eq(vu_qp_state(B.qp), IBV_QPS_RTS);
	expect_no_wc(B.v.rcq, 50, "responder");
	expect_no_event(&A, 50, "requester");
	expect_no_event(&B, 0, "responder");
	if (op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		ck_assert_msg(B.v.buf[0] == 0x11 && B.v.buf[1999] == 0x11,
			      "a WRITE_WITH_IMM refused for RNR wrote memory");
}
END_TEST

START_TEST(rnr_forever)
{
	struct qp_opts oa = DEF_OPTS, ob = DEF_OPTS;
	struct ibv_wc wc;
	uint32_t i;

	oa.c.rnr_retry = 7;
	ob.c.min_rnr_timer = 12;	/* 0.64 ms between tries */
	pair(&oa, &ob);
	for (i = 0; i < 5000; i++)
		A.v.buf[i] = (uint8_t)(i ^ 0x5a);
	send_from_a(1, 0, 5000);
	ck_assert_msg(!vu_wait_wc(A.v.scq, 400, &wc),
		      "rnr_retry 7: the SEND completed (%s) with no receive posted",
		      ibv_wc_status_str(wc.status));
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_RTS);
	post_recv(&B, 0xb1, (uintptr_t)B.v.buf, 8192, B.v.mr->lkey);
	expect_wc(A.v.scq, A.qp, 1, IBV_WC_SUCCESS, "SEND once the receive came");
	expect_wc(B.v.rcq, B.qp, 0xb1, IBV_WC_SUCCESS, "receive");
	ck_assert_mem_eq(B.v.buf, A.v.buf, 5000);
}
END_TEST

/* ---- a vanished peer ---- */

static const struct { uint8_t timeout, retry_cnt; } vanish_cases[] = {
	{ 10, 3 }, { 8, 7 }, { 12, 0 },
};

START_TEST(vanished_peer)
{
	struct qp_opts oa = DEF_OPTS;
	double t = 4.096e-6 * (double)(1u << vanish_cases[_i].timeout), t0, dt;
	double budget, bound;
	struct ibv_wc wc;

	oa.c.timeout = vanish_cases[_i].timeout;
	oa.c.retry_cnt = vanish_cases[_i].retry_cnt;
	budget = (oa.c.retry_cnt + 1) * t;
	bound = 2 * budget + 1.0;
	pair(&oa, &DEF_OPTS);
	transfer_works();
	ck_assert_int_eq(ibv_destroy_qp(B.qp), 0);
	B.qp = NULL;
	t0 = now_s();
	write_to_b(1, 0, 10000);
	send_from_a(2, 0, 100);
	ck_assert_msg(vu_wait_wc(A.v.scq, (int)(bound * 1000) + 1000, &wc),
		      "no completion within %.3f s", bound + 1);
	dt = now_s() - t0;
	printf("timeout %u retry_cnt %u: %s after %.6f s (budget %.6f s, bound %.6f s)\n",
	       oa.c.timeout, oa.c.retry_cnt, ibv_wc_status_str(wc.status), dt,
	       budget, bound);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, IBV_WC_RETRY_EXC_ERR);
	ck_assert_msg(dt <= bound, "IBV_WC_RETRY_EXC_ERR after %.6f s > %.6f s", dt, bound);
	ck_assert_msg(dt >= budget - 0.001,
		      "IBV_WC_RETRY_EXC_ERR after %.6f s: sooner than (retry_cnt + 1) x timeout = %.6f s",
		      dt, budget);
	expect_wc(A.v.scq, A.qp, 2, IBV_WC_WR_FLUSH_ERR, "behind");
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_ERR);
	expect_no_event(&A, 50, "requester");
}
END_TEST

START_TEST(timeout_zero_waits_forever)
{
	struct qp_opts oa = DEF_OPTS;

	oa.c.timeout = 0;
	oa.c.retry_cnt = 0;
	pair(&oa, &DEF_OPTS);
	ck_assert_int_eq(ibv_destroy_qp(B.qp), 0);
	B.qp = NULL;
	write_to_b(1, 0, 100);
	expect_no_wc(A.v.scq, 2500, "timeout 0");
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_RTS);
	/* Destroying it with the request outstanding is fine. */
	ck_assert_int_eq(ibv_destroy_qp(A.qp), 0);
	A.qp = NULL;
}
END_TEST

/* ---- frames from outside ---- */

struct junk {
	int fd;
	struct sockaddr_in to;
	union ibv_gid src;
	uint16_t sport;
};

static void junk_open(struct junk *j)
{
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(me);
	int pmtu = IP_PMTUDISC_DO;	/* ID 0 and DF, as urxe peers send */

	j->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(j->fd, 0);
	ck_assert_int_eq(setsockopt(j->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu,
				    sizeof(pmtu)), 0);
	ck_assert_int_eq(bind(j->fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(getsockname(j->fd, (struct sockaddr *)&me, &len), 0);
	j->sport = ntohs(me.sin_port);
	memset(&j->src, 0, sizeof(j->src));
	j->src.raw[10] = j->src.raw[11] = 0xff;
	memcpy(j->src.raw + 12, &me.sin_addr, 4);
	j->to = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_port = htons(URXE_ROCE_UDP_PORT) };
	/* The device's address is its GID 0, ::ffff:127.117.x.y. */
	ck_assert(gid.raw[10] == 0xff && gid.raw[12] == 127);
	memcpy(&j->to.sin_addr, gid.raw + 12, 4);
}

static void junk_send(struct junk *j, const uint8_t *p, size_t len)
{
	ck_assert_int_eq(sendto(j->fd, p, len, 0, (struct sockaddr *)&j->to,
				sizeof(j->to)), (ssize_t)len);
}

/*
 * A RoCE packet: BTH (@op, @dqpn, @psn, @pad, @tver), @hlen bytes of
 * extension headers/payload from @body, a correct ICRC unless @bad_icrc.
 */
static size_t frame(struct junk *j, uint8_t *p, uint8_t op, uint32_t dqpn,
		    uint32_t psn, uint8_t pad, uint8_t tver, const uint8_t *body,
		    size_t hlen, bool bad_icrc)
{
	struct urxe_bth b = { .opcode = op, .pad = pad, .tver = tver,
			      .pkey = 0xffff, .dqpn = dqpn, .psn = psn };
	uint32_t icrc;

	urxe_bth_put(p, &b);
	if (hlen)
		memcpy(p + URXE_BTH_LEN, body, hlen);
	icrc = urxe_icrc_tx(NULL, j->src.raw, gid.raw, j->sport, p,
			    (uint32_t)(URXE_BTH_LEN + hlen));
	urxe_icrc_store(p + URXE_BTH_LEN + hlen, bad_icrc ? ~icrc : icrc);
	return URXE_BTH_LEN + hlen + URXE_ICRC_LEN;
}

static uint64_t dropped_total(const uint64_t *c)
{
	return c[URXE_CNT_DROPPED] + c[URXE_CNT_DROPPED_ICRC] +
	       c[URXE_CNT_DROPPED_NO_QP];
}

START_TEST(malformed_frames_dropped)
{
	struct urxe_engine *eng;
	uint64_t before[URXE_CNT__COUNT], after[URXE_CNT__COUNT], rng = 12345;
	uint8_t p[20000], body[256];
	uint32_t qpn, ghost, k, counted = 0;
	struct junk j;
	struct ibv_wc wc;
	uint64_t end;
	size_t n;

	pair(&DEF_OPTS, &DEF_OPTS);
	transfer_works();
	qpn = B.qp->qp_num;
	ghost = (qpn & ~0x3fffu) | ((qpn + 77) & 0x3fffu);	/* our slot, unused */
	eng = to_uqp(B.qp)->e->eng;
	junk_open(&j);
	memset(body, 0, sizeof(body));
	urxe_engine_counters(eng, before);

#define JUNK(len_expr)	do { n = (len_expr); junk_send(&j, p, n); counted++; } while (0)
	/* shorter than BTH + ICRC */
	for (k = 0; k < 16; k += 3) {
		memset(p, 0x04, k);
		JUNK(k);
	}
	/* reserved / unknown opcodes with a good ICRC */
	JUNK(frame(&j, p, 0x1f, qpn, 0x123, 0, 0, body, 0, false));
	JUNK(frame(&j, p, 0x3f, qpn, 0x123, 0, 0, body, 0, false));
	JUNK(frame(&j, p, 0x7f, qpn, 0x123, 0, 0, body, 8, false));
	JUNK(frame(&j, p, 0xc5, qpn, 0x123, 0, 0, body, 16, false));
	/* TVer 1 */
	JUNK(frame(&j, p, 0x04, qpn, 0x123, 0, 1, body, 4, false));
	/* RDMA WRITE FIRST cut inside its RETH; atomic inside AtomicETH */
	JUNK(frame(&j, p, 0x06, qpn, 0x123, 0, 0, body, 8, false));
	JUNK(frame(&j, p, 0x14, qpn, 0x123, 0, 0, body, 20, false));
	/* payload on an ACK */
	JUNK(frame(&j, p, 0x11, A.qp->qp_num, 0x123, 0, 0, body, 12, false));
	/* pad larger than the payload */
	JUNK(frame(&j, p, 0x04, qpn, 0x123, 3, 0, body, 2, false));
	/* a well-formed SEND with a bad ICRC, to the live QP at its PSN */
	JUNK(frame(&j, p, 0x04, qpn, 0x124, 0, 0, body, 64, true));
	/* well-formed, good ICRC: no such QP; UD opcode to an RC QP */
	JUNK(frame(&j, p, 0x04, ghost, 0, 0, 0, body, 64, false));
	JUNK(frame(&j, p, 0x64, qpn, 0, 0, 0, body, 8 + 32, false));
	/* random bytes, random lengths */
	for (k = 0; k < 200; k++) {
		size_t len = 16 + (rng % 300), i;

		for (i = 0; i < len; i++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			p[i] = (uint8_t)rng;
		}
		JUNK(len);
	}
#undef JUNK
	/* oversized: truncated by the receive buffer, not counted */
	memset(p, 0x04, sizeof(p));
	junk_send(&j, p, sizeof(p));

	/* Let the engine read them all (polling runs it). */
	end = vu_now_ms() + WAIT_MS;
	do {
		ck_assert_int_eq(ibv_poll_cq(A.v.scq, 1, &wc), 0);
		urxe_engine_counters(eng, after);
	} while (after[URXE_CNT_RCVD_PKTS] - before[URXE_CNT_RCVD_PKTS] < counted &&
		 vu_now_ms() < end);
	usleep(20000);
	urxe_engine_counters(eng, after);
	printf("junk: %u frames; received %llu, dropped %llu malformed, %llu bad ICRC, %llu no QP\n",
	       counted,
	       (unsigned long long)(after[URXE_CNT_RCVD_PKTS] - before[URXE_CNT_RCVD_PKTS]),
	       (unsigned long long)(after[URXE_CNT_DROPPED] - before[URXE_CNT_DROPPED]),
	       (unsigned long long)(after[URXE_CNT_DROPPED_ICRC] - before[URXE_CNT_DROPPED_ICRC]),
	       (unsigned long long)(after[URXE_CNT_DROPPED_NO_QP] - before[URXE_CNT_DROPPED_NO_QP]));
	ck_assert_uint_eq(after[URXE_CNT_RCVD_PKTS] - before[URXE_CNT_RCVD_PKTS], counted);
	ck_assert_uint_eq(dropped_total(after) - dropped_total(before), counted);
	ck_assert_uint_ge(after[URXE_CNT_DROPPED_ICRC] - before[URXE_CNT_DROPPED_ICRC], 1);
	ck_assert_uint_ge(after[URXE_CNT_DROPPED_NO_QP] - before[URXE_CNT_DROPPED_NO_QP], 2);
	ck_assert_uint_eq(after[URXE_CNT_SENT_PKTS], before[URXE_CNT_SENT_PKTS]);
	close(j.fd);
	ck_assert_int_eq(vu_qp_state(A.qp), IBV_QPS_RTS);
	ck_assert_int_eq(vu_qp_state(B.qp), IBV_QPS_RTS);
	expect_no_wc(B.v.rcq, 0, "junk");
	expect_no_event(&A, 0, "A");
	expect_no_event(&B, 0, "B");
	transfer_works();
}
END_TEST

/*
 * Responses nobody asked for (a stale incarnation of the QPN, a spoofer):
 * an idle requester ignores them.  IBA 9.7.5.1: a response whose PSN is
 * outside the outstanding requests is a ghost, dropped.
 */
START_TEST(stray_responses_ignored)
{
	static const struct { uint8_t op, aeth; const char *name; } stray[] = {
		{ 0x11, 0x1f, "ACK" },
		{ 0x11, 0x60, "NAK PSN sequence error" },
		{ 0x11, 0x61, "NAK invalid request" },
		{ 0x11, 0x62, "NAK remote access error" },
		{ 0x11, 0x63, "NAK remote operational error" },
		{ 0x11, 0x21, "RNR NAK" },
		{ 0x10, 0x1f, "READ response only" },
		{ 0x12, 0x1f, "atomic ACK" },
	};
	struct qp_opts oa = DEF_OPTS;
	uint8_t p[512], body[64];
	struct ibv_async_event ev;
	struct junk j;
	uint32_t k, r;
	char failed[512] = "";
	size_t used = 0;

	oa.c.rnr_retry = 0;	/* one RNR NAK taken seriously would kill it */
	pair(&oa, &DEF_OPTS);
	transfer_works();	/* A's PSNs: 0x123 used, 0x124 next */
	junk_open(&j);
	for (k = 0; k < NELEM(stray); k++) {
		for (r = 0; r < 3; r++) {
			/* behind, at, and ahead of the next PSN */
			uint32_t psn = r == 0 ? 0x100 : r == 1 ? 0x124 : 0x5000;
			size_t n;

			memset(body, 0, sizeof(body));
			body[0] = stray[k].aeth;
			n = frame(&j, p, stray[k].op, A.qp->qp_num, psn, 0, 0, body,
				  stray[k].op == 0x11 ? 4 : stray[k].op == 0x12 ? 12 : 4 + 16,
				  false);
			junk_send(&j, p, n);
		}
		expect_no_wc(A.v.scq, 30, stray[k].name);
		ck_assert_msg(!next_async(A.v.ctx, 0, &ev), "a stray %s raised %s",
			      stray[k].name, ibv_event_type_str(ev.event_type));
		if (vu_qp_state(A.qp) == IBV_QPS_RTS)
			continue;
		/* Note it, and start over with a fresh pair. */
		used += (size_t)snprintf(failed + used, sizeof(failed) - used,
					 "%s%s", used ? ", " : "", stray[k].name);
		ck_assert_int_eq(ibv_destroy_qp(A.qp), 0);
		ck_assert_int_eq(ibv_destroy_qp(B.qp), 0);
		A.qp = B.qp = NULL;
		pair(&oa, &DEF_OPTS);
		transfer_works();
	}
	close(j.fd);
	ck_assert_msg(!used, "an idle QP left RTS (to ERR) after a stray: %s", failed);
	transfer_works();
}
END_TEST

static Suite *errors_suite(void)
{
	Suite *s = suite_create("errors");
	TCase *tc;

	tc = tu_tcase(s, "remote", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, remote_access, 0, NELEM(rem_cases));
	tcase_add_test(tc, send_bad_recv_lkey);
	tcase_add_test(tc, recv_too_short);
	tcase_add_test(tc, recv_too_short_multi);
	tcase_add_loop_test(tc, local_protection, 0, 4);

	tc = tu_tcase(s, "queues", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, error_flushes_everything);
	tcase_add_test(tc, cq_overrun_event);
	tcase_add_test(tc, post_by_state);
	tcase_add_test(tc, post_beyond_depth);

	tc = tu_tcase(s, "retries", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, rnr_exhausted, 0, 14);
	tcase_add_test(tc, rnr_forever);
	tcase_add_loop_test(tc, vanished_peer, 0, NELEM(vanish_cases));
	tcase_add_test(tc, timeout_zero_waits_forever);

	tc = tu_tcase(s, "wire", setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, malformed_frames_dropped);
	tcase_add_test(tc, stray_responses_ignored);
	return s;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return tu_run(errors_suite());
}
