// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory regions, completion channels and completion queues of the built
 * libibverbs.so.1 on rxe0 (lo), held to their man pages: ibv_reg_mr(3)
 * (keys, unpredictable ones too, access-flag rules, EFAULT for memory that is not mapped with the
 * rights asked, optional flags ignored, iova and zero-based), the PD
 * refusing to die under an MR, ibv_rereg_mr(3) (input errors, PD, access
 * and translation changes), ibv_dereg_mr while the engine uses the memory;
 * ibv_create_cq(3) limits, ibv_poll_cq on an empty CQ, ibv_resize_cq
 * keeping pending completions in order, ibv_req_notify_cq and
 * ibv_get_cq_event(3) (solicited-only, O_NONBLOCK, waking a blocked
 * reader, destroy waiting for acks and dropping unread events), the
 * channel refusing to die under a CQ, and a CQ overrun raising
 * IBV_EVENT_CQ_ERR on the context.
 *
 * There are no QPs here: completions are pushed straight into the CQ's
 * ring with the engine's urxe_cq_push(), as the engine would.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "testutil.h"
#include "verbs_util.h"

#define MAX_CQE 4194303		/* rxe_provider/provider_int.h */

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static long page;

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	page = sysconf(_SC_PAGESIZE);
	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
}

static void teardown(void)
{
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	pd = NULL;
	ctx = NULL;
	tu_sandbox_fini(&sb);
}

/* Pages of fresh memory, mapped with @prot. */
static void *map_pages(size_t n, int prot)
{
	void *p = mmap(NULL, n * (size_t)page, prot,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static void assert_reg_fails(void *addr, size_t len, unsigned int access,
			     int err)
{
	errno = 0;
	ck_assert_ptr_null(ibv_reg_mr_iova2(pd, addr, len, (uintptr_t)addr,
					    access));
	ck_assert_int_eq(errno, err);
}

/* --- memory regions --- */

START_TEST(mr_reg_keys)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	char *buf = map_pages(2, PROT_READ | PROT_WRITE);
	struct ibv_mr *a, *b, *c;

	a = ibv_reg_mr(pd, buf, (size_t)page, acc);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_eq(a->context, ctx);
	ck_assert_ptr_eq(a->pd, pd);
	ck_assert_ptr_eq(a->addr, buf);
	ck_assert_uint_eq(a->length, (size_t)page);
	ck_assert_uint_ne(a->lkey, 0);
	ck_assert_uint_ne(a->rkey, 0);
	/* Overlapping registrations are separate MRs with their own keys. */
	b = ibv_reg_mr(pd, buf + 100, 2 * (size_t)page - 100, acc);
	c = ibv_reg_mr(pd, buf, 1, 0);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_ne(a->lkey, b->lkey);
	ck_assert_uint_ne(a->lkey, c->lkey);
	ck_assert_uint_ne(b->lkey, c->lkey);
	ck_assert_uint_ne(a->rkey, b->rkey);
	ck_assert_uint_ne(b->rkey, c->rkey);
	ck_assert_int_eq(ibv_dereg_mr(b), 0);
	ck_assert_int_eq(ibv_dereg_mr(a), 0);
	ck_assert_int_eq(ibv_dereg_mr(c), 0);
	munmap(buf, 2 * (size_t)page);
}
END_TEST

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* How often the commonest step between neighbours of @k[0..n) occurs. */
static unsigned int commonest_step(const uint32_t *k, unsigned int n)
{
	uint32_t *d = malloc(n * sizeof(*d));
	unsigned int i, run = 1, most = 1;

	ck_assert_ptr_nonnull(d);
	for (i = 1; i < n; i++)
		d[i - 1] = k[i] - k[i - 1];
	qsort(d, n - 1, sizeof(*d), cmp_u32);
	for (i = 1; i < n - 1; i++) {
		run = d[i] == d[i - 1] ? run + 1 : 1;
		if (run > most)
			most = run;
	}
	free(d);
	return most;
}

/*
 * Keys an attacker cannot guess (qp_engine/keys.c): 100,000 live regions
 * and windows have distinct table names (a key's upper 24 bits), every bit
 * of a region's key is set about half the time, no step between one key
 * and the next recurs beyond chance (a counter's would every time), and
 * another instance's keys have nothing to do with these.
 */
#define NKEYS 100000
#define NWINDOWS 10000
START_TEST(mr_keys_unpredictable)
{
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	struct ibv_mr **mr = calloc(NKEYS, sizeof(*mr));
	struct ibv_mw **mw = calloc(NWINDOWS, sizeof(*mw));
	uint32_t *key = calloc(NKEYS, sizeof(*key));
	uint32_t *name = calloc(NKEYS, sizeof(*name));
	const unsigned int nmr = NKEYS - NWINDOWS;
	struct ibv_context *other;
	struct ibv_pd *opd;
	struct ibv_mr *omr;
	unsigned int i, b, ones, same = 0;

	ck_assert(mr && mw && key && name);
	for (i = 0; i < nmr; i++) {
		mr[i] = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
		ck_assert_msg(mr[i] != NULL, "region %u: %s", i, strerror(errno));
		ck_assert_uint_eq(mr[i]->lkey, mr[i]->rkey);
		key[i] = mr[i]->rkey;
	}
	for (i = 0; i < NWINDOWS; i++) {
		mw[i] = ibv_alloc_mw(pd, i % 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		ck_assert_msg(mw[i] != NULL, "window %u: %s", i, strerror(errno));
		key[nmr + i] = mw[i]->rkey;
	}
	/* Neither a counter nor anything close, in the regions' order. */
	ck_assert_uint_le(commonest_step(key, nmr), 4);
	for (i = 0; i < nmr; i++)
		name[i] = key[i] >> 8;
	ck_assert_uint_le(commonest_step(name, nmr), 4);
	/* Each bit about half the time: n/2 within 6 standard deviations. */
	for (b = 0; b < 32; b++) {
		for (ones = 0, i = 0; i < nmr; i++)
			ones += key[i] >> b & 1;
		ck_assert_msg(ones > nmr / 2 - 6 * 150 && ones < nmr / 2 + 6 * 150,
			      "bit %u of %u region keys set %u times", b, nmr, ones);
	}
	/* Every live key names its own table entry. */
	for (i = 0; i < NKEYS; i++)
		name[i] = key[i] >> 8;
	qsort(name, NKEYS, sizeof(*name), cmp_u32);
	for (i = 1; i < NKEYS; i++)
		ck_assert_msg(name[i] != name[i - 1],
			      "two live keys name entry %06x", name[i]);
	/* Another instance (a second context: its own engine) starts afresh. */
	other = open_dev("rxe0");
	ck_assert_ptr_nonnull(other);
	opd = ibv_alloc_pd(other);
	ck_assert_ptr_nonnull(opd);
	for (i = 0; i < 1000; i++) {
		omr = ibv_reg_mr(opd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(omr);
		same += omr->lkey >> 8 == key[i] >> 8;
		ck_assert_int_eq(ibv_dereg_mr(omr), 0);
	}
	ck_assert_uint_le(same, 1);	/* chance: 1000 in 2^24 */
	ck_assert_int_eq(ibv_dealloc_pd(opd), 0);
	ck_assert_int_eq(ibv_close_device(other), 0);
	/* A freed entry, taken again, gets another key. */
	for (i = 0; i < 1000; i++) {
		uint32_t old = mr[i]->rkey;

		ck_assert_int_eq(ibv_dereg_mr(mr[i]), 0);
		mr[i] = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(mr[i]);
		ck_assert_uint_ne(mr[i]->rkey >> 8, old >> 8);
	}
	for (i = 0; i < NWINDOWS; i++)
		ck_assert_int_eq(ibv_dealloc_mw(mw[i]), 0);
	for (i = 0; i < nmr; i++)
		ck_assert_int_eq(ibv_dereg_mr(mr[i]), 0);
	free(name);
	free(key);
	free(mw);
	free(mr);
	munmap(buf, (size_t)page);
}
END_TEST

START_TEST(mr_efault_unmapped)
{
	char *buf = map_pages(3, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	/* A hole in the middle of the range. */
	ck_assert_int_eq(munmap(buf + page, (size_t)page), 0);
	assert_reg_fails(buf, 3 * (size_t)page, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	assert_reg_fails(buf, 3 * (size_t)page, 0, EFAULT);
	assert_reg_fails(buf + page, 1, 0, EFAULT);
	/* One byte past the end of the first page reaches the hole. */
	assert_reg_fails(buf, (size_t)page + 1, 0, EFAULT);
	mr = ibv_reg_mr(pd, buf, (size_t)page, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	munmap(buf, 3 * (size_t)page);
	/* All of it gone. */
	assert_reg_fails(buf, (size_t)page, 0, EFAULT);
	assert_reg_fails(NULL, 64, 0, EFAULT);
}
END_TEST

START_TEST(mr_readonly_mapping)
{
	char *ro = map_pages(2, PROT_READ);
	char *none = map_pages(1, PROT_NONE);
	struct ibv_mr *mr;

	assert_reg_fails(ro, 2 * (size_t)page, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	assert_reg_fails(ro, 16, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE, EFAULT);
	/* A window bound later could write: ib_access_writable() says so. */
	assert_reg_fails(ro, 16, IBV_ACCESS_MW_BIND, EFAULT);
	/* Guard pages are not readable either. */
	assert_reg_fails(none, 16, 0, EFAULT);

	mr = ibv_reg_mr(pd, ro, 2 * (size_t)page, 0);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(pd, ro, 16, IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	munmap(ro, 2 * (size_t)page);
	munmap(none, (size_t)page);
}
END_TEST

START_TEST(mr_access_rules)
{
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	volatile int relaxed = IBV_ACCESS_RELAXED_ORDERING;
	struct ibv_mr *mr;

	/* ibv_reg_mr(3): remote write or atomic need local write. */
	assert_reg_fails(buf, 64, IBV_ACCESS_REMOTE_WRITE, EINVAL);
	assert_reg_fails(buf, 64, IBV_ACCESS_REMOTE_ATOMIC, EINVAL);
	assert_reg_fails(buf, 64, IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ, EINVAL);
	/* Bits nobody defined, below the optional range. */
	assert_reg_fails(buf, 64, 1u << 15, EINVAL);
	assert_reg_fails(buf, 64, 1u << 31, EINVAL);
	/* No on-demand paging on this device: the tests SKIP on this. */
	assert_reg_fails(buf, 64, IBV_ACCESS_ON_DEMAND, EOPNOTSUPP);
	/* Empty ranges (ib_umem_get) and a missing PD. */
	assert_reg_fails(buf, 0, 0, EINVAL);
	errno = 0;
	ck_assert_ptr_null(ibv_reg_mr_iova2(NULL, buf, 64, (uintptr_t)buf, 0));
	ck_assert_int_eq(errno, EINVAL);

	/* Optional bits are hints, accepted and ignored, by both symbols. */
	mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_RELAXED_ORDERING);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = (ibv_reg_mr)(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | relaxed |
			  IBV_ACCESS_OPTIONAL_RANGE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	munmap(buf, (size_t)page);
}
END_TEST

START_TEST(mr_iova)
{
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	/* The engine translates what work requests address: the iova. */
	mr = (ibv_reg_mr_iova)(pd, buf, 128, 0x10000, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_ptr_eq(mr->addr, buf);
	ck_assert_uint_eq(to_umr(mr)->mem.iova, 0x10000);
	ck_assert_ptr_eq(to_umr(mr)->mem.addr, buf);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(pd, buf, 128, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(to_umr(mr)->mem.iova, (uintptr_t)buf);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(pd, buf + 8, 64, IBV_ACCESS_ZERO_BASED);
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(to_umr(mr)->mem.iova, 0);
	ck_assert_ptr_eq(to_umr(mr)->mem.addr, buf + 8);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	munmap(buf, (size_t)page);
}
END_TEST

START_TEST(mr_pd_busy_and_dereg_busy)
{
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;

	ck_assert_ptr_nonnull(pd2);
	mr = ibv_reg_mr(pd2, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), EBUSY);
	/* A transfer holds a reference of the key table: dereg waits. */
	atomic_fetch_add(&to_umr(mr)->mem.refs, 1);
	ck_assert_int_eq(ibv_dereg_mr(mr), EBUSY);
	ck_assert_int_eq(errno, EBUSY);
	atomic_fetch_sub(&to_umr(mr)->mem.refs, 1);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
	munmap(buf, (size_t)page);
}
END_TEST

static void assert_rereg(struct ibv_mr *mr, int flags, struct ibv_pd *p,
			 void *addr, size_t len, int access, int code, int err)
{
	errno = 0;
	ck_assert_int_eq(ibv_rereg_mr(mr, flags, p, addr, len, access), code);
	if (code)
		ck_assert_int_eq(errno, err);
}

START_TEST(mr_rereg)
{
	char *buf = map_pages(2, PROT_READ | PROT_WRITE);
	char *ro = map_pages(1, PROT_READ);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	uint32_t lkey, rkey;

	ck_assert_ptr_nonnull(pd2);
	mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	lkey = mr->lkey;
	rkey = mr->rkey;

	/* libibverbs' own checks: ERR_INPUT, EINVAL. */
	assert_rereg(mr, 1 << 5, NULL, NULL, 0, 0, IBV_REREG_MR_ERR_INPUT, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 64, 0,
		     IBV_REREG_MR_ERR_INPUT, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf, 0, 0,
		     IBV_REREG_MR_ERR_INPUT, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0,
		     IBV_ACCESS_LOCAL_WRITE, IBV_REREG_MR_ERR_INPUT, EINVAL);
	/* The device's refusals: ERR_CMD with the reason. */
	assert_rereg(mr, 0, NULL, NULL, 0, 0, IBV_REREG_MR_ERR_CMD, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		     IBV_ACCESS_REMOTE_WRITE, IBV_REREG_MR_ERR_CMD, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0,
		     IBV_REREG_MR_ERR_CMD, EINVAL);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro, 64, 0,
		     IBV_REREG_MR_ERR_CMD, EFAULT);
	ck_assert_ptr_eq(mr->addr, buf);
	ck_assert_ptr_eq(mr->pd, pd);

	/* Access and PD change in place: peers keep using the rkey. */
	assert_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, 0);
	ck_assert_uint_eq(to_umr(mr)->mem.access,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, 0, 0);
	ck_assert_ptr_eq(mr->pd, pd2);
	ck_assert_uint_eq(to_umr(mr)->mem.pd, pd2->handle);
	ck_assert_uint_eq(mr->lkey, lkey);
	ck_assert_uint_eq(mr->rkey, rkey);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), EBUSY);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);	/* no longer used */
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);

	/* A new translation, still writable as the access says. */
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf + page, 32,
		     0, 0, 0);
	ck_assert_ptr_eq(mr->addr, buf + page);
	ck_assert_uint_eq(mr->length, 32);
	ck_assert_uint_eq(to_umr(mr)->mem.iova, (uintptr_t)(buf + page));
	ck_assert_uint_ne(mr->lkey, 0);
	/* Read-only memory only with read-only rights. */
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro, 16, 0,
		     IBV_REREG_MR_ERR_CMD, EFAULT);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
		     IBV_REREG_MR_CHANGE_ACCESS | IBV_REREG_MR_CHANGE_PD, pd,
		     ro, 16, IBV_ACCESS_REMOTE_READ, 0, 0);
	ck_assert_ptr_eq(mr->pd, pd);
	ck_assert_uint_eq(to_umr(mr)->mem.access, IBV_ACCESS_REMOTE_READ);
	assert_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		     IBV_ACCESS_LOCAL_WRITE, IBV_REREG_MR_ERR_CMD, EFAULT);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	munmap(buf, 2 * (size_t)page);
	munmap(ro, (size_t)page);
}
END_TEST

/* --- completion queues --- */

static void push(struct ibv_cq *cq, uint64_t wr_id, bool solicited)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	ck_assert(urxe_cq_push(&to_ucq(cq)->ring, &wc, solicited));
}

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

START_TEST(cq_create_limits)
{
	struct ibv_cq *cq;
	struct ibv_wc wc[4];
	int bad[] = { 0, -1, MAX_CQE + 1 };
	size_t i;

	for (i = 0; i < URXE_ARRAY_SIZE(bad); i++) {
		errno = 0;
		ck_assert_ptr_null(ibv_create_cq(ctx, bad[i], NULL, NULL, 0));
		ck_assert_int_eq(errno, EINVAL);
	}
	/* One completion vector: ctx->num_comp_vectors. */
	ck_assert_int_eq(ctx->num_comp_vectors, 1);
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq(ctx, 4, NULL, NULL, 1));
	ck_assert_int_eq(errno, EINVAL);

	cq = ibv_create_cq(ctx, MAX_CQE, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_ge(cq->cqe, MAX_CQE);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);

	cq = ibv_create_cq(ctx, 1, &sb, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_ptr_eq(cq->context, ctx);
	ck_assert_ptr_eq(cq->cq_context, &sb);
	ck_assert_ptr_null(cq->channel);
	ck_assert_int_ge(cq->cqe, 1);
	/* Empty: 0, also after the engine ran. */
	ck_assert_int_eq(ibv_poll_cq(cq, 4, wc), 0);
	ck_assert_int_eq(ibv_poll_cq(cq, 0, wc), 0);
	ck_assert_int_lt(ibv_poll_cq(cq, -1, wc), 0);
	/* Arming without a channel is allowed. */
	ck_assert_int_eq(ibv_req_notify_cq(cq, 0), 0);
	push(cq, 7, false);
	ck_assert_int_eq(ibv_poll_cq(cq, 4, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 7);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
}
END_TEST

START_TEST(cq_resize_keeps_order)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wc wc[16];
	uint64_t id = 0, want = 0;
	int i, n;

	ck_assert_ptr_nonnull(cq);
	/* Run the free-running indices past a few wraps of the small ring. */
	for (i = 0; i < 21; i++) {
		push(cq, id++, false);
		ck_assert_int_eq(ibv_poll_cq(cq, 1, wc), 1);
		ck_assert_uint_eq(wc[0].wr_id, want++);
	}
	push(cq, id++, false);
	push(cq, id++, false);
	push(cq, id++, false);
	/* Smaller than what it holds: EINVAL, nothing lost. */
	ck_assert_int_eq(ibv_resize_cq(cq, 2), EINVAL);
	ck_assert_int_eq(ibv_resize_cq(cq, 0), EINVAL);
	ck_assert_int_eq(ibv_resize_cq(cq, MAX_CQE + 1), EINVAL);
	ck_assert_int_eq(ibv_resize_cq(cq, 11), 0);
	ck_assert_int_ge(cq->cqe, 11);
	while (id - want < 11)
		push(cq, id++, false);
	n = ibv_poll_cq(cq, 16, wc);
	ck_assert_int_eq(n, 11);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(wc[i].wr_id, want++);
	/* Down again, to exactly what it holds. */
	push(cq, id++, false);
	push(cq, id++, false);
	ck_assert_int_eq(ibv_resize_cq(cq, 2), 0);
	ck_assert_int_eq(ibv_poll_cq(cq, 16, wc), 2);
	ck_assert_uint_eq(wc[0].wr_id, want++);
	ck_assert_uint_eq(wc[1].wr_id, want++);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
}
END_TEST

START_TEST(channel_busy_and_events)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *got = NULL;
	struct ibv_wc wc;
	void *cctx = NULL;

	ck_assert_ptr_nonnull(ch);
	ck_assert_ptr_eq(ch->context, ctx);
	ck_assert_int_ge(ch->fd, 0);
	ck_assert_int_ne(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC, 0);
	cq = ibv_create_cq(ctx, 8, &sb, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_ptr_eq(cq->channel, ch);
	ck_assert_int_eq(ibv_destroy_comp_channel(ch), EBUSY);

	/* Not armed: completions, no event. */
	push(cq, 1, false);
	ck_assert_int_eq(readable(ch->fd, 0), 0);
	ck_assert_int_eq(ibv_poll_cq(cq, 1, &wc), 1);

	/* Armed: the next completion posts the CQ, once. */
	ck_assert_int_eq(ibv_req_notify_cq(cq, 0), 0);
	push(cq, 2, false);
	push(cq, 3, false);
	ck_assert_int_eq(readable(ch->fd, 1000), 1);
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	ck_assert_ptr_eq(got, cq);
	ck_assert_ptr_eq(cctx, &sb);
	ck_assert_int_eq(readable(ch->fd, 0), 0);
	ibv_ack_cq_events(cq, 1);
	ck_assert_int_eq(ibv_poll_cq(cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(ibv_poll_cq(cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 3);

	/* Solicited only: an unsolicited success does not fire. */
	ck_assert_int_eq(ibv_req_notify_cq(cq, 1), 0);
	push(cq, 4, false);
	ck_assert_int_eq(readable(ch->fd, 0), 0);
	push(cq, 5, true);
	ck_assert_int_eq(readable(ch->fd, 1000), 1);
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	ck_assert_ptr_eq(got, cq);
	ibv_ack_cq_events(cq, 1);

	/* A non-blocking fd: EAGAIN when there is nothing. */
	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), -1);
	ck_assert_int_eq(errno, EAGAIN);

	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(ch), 0);
}
END_TEST

struct pusher {
	struct ibv_cq *cq;
	int delay_ms;
};

static void *push_later(void *arg)
{
	struct pusher *p = arg;
	struct timespec ts = { 0, p->delay_ms * 1000000L };
	struct ibv_wc wc;

	nanosleep(&ts, NULL);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = 42;
	urxe_cq_push(&to_ucq(p->cq)->ring, &wc, false);
	return NULL;
}

/* A reader blocked in ibv_get_cq_event wakes when the CQ fires. */
START_TEST(channel_wakes_blocked_reader)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *got = NULL;
	struct pusher p;
	pthread_t t;
	void *cctx;

	ck_assert_ptr_nonnull(ch);
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(ibv_req_notify_cq(cq, 0), 0);
	p.cq = cq;
	p.delay_ms = 50;
	ck_assert_int_eq(pthread_create(&t, NULL, push_later, &p), 0);
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	ck_assert_ptr_eq(got, cq);
	pthread_join(t, NULL);
	ibv_ack_cq_events(cq, 1);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(ch), 0);
}
END_TEST

static void on_alarm(int sig)
{
	(void)sig;
}

struct interrupter {
	pthread_t target;
	int fd;			/* made O_NONBLOCK before the second signal */
};

static void *interrupt_later(void *arg)
{
	struct interrupter *in = arg;
	struct timespec ts = { 0, 50 * 1000000L };

	nanosleep(&ts, NULL);
	pthread_kill(in->target, SIGALRM);	/* restarted: still waits */
	nanosleep(&ts, NULL);
	fcntl(in->fd, F_SETFL, fcntl(in->fd, F_GETFL) | O_NONBLOCK);
	pthread_kill(in->target, SIGALRM);	/* restarted: finds O_NONBLOCK */
	return NULL;
}

/*
 * A signal handler ends a blocked ibv_get_cq_event as it ends the kernel's
 * read() of the channel: with EINTR when installed without SA_RESTART
 * (qperf ends its timed loops so), restarted when installed with it.
 */
START_TEST(channel_wait_and_signals)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	static const int others[2] = { SIGINT, SIGTERM };
	struct sigaction sa, old, saved[2];
	struct interrupter in;
	struct ibv_cq *cq, *got = NULL;
	pthread_t t;
	void *cctx;

	ck_assert_ptr_nonnull(ch);
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(ibv_req_notify_cq(cq, 0), 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, &old), 0);
	in.target = pthread_self();
	in.fd = ch->fd;
	ck_assert_int_eq(pthread_create(&t, NULL, interrupt_later, &in), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), -1);
	ck_assert_int_eq(errno, EINTR);
	pthread_join(t, NULL);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK);

	/*
	 * Restarted only when every handler has SA_RESTART (the wait cannot
	 * tell which signal it was): Check's own SIGINT and SIGTERM get it
	 * for the moment.
	 */
	sa.sa_flags = SA_RESTART;
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	for (int i = 0; i < 2; i++) {
		struct sigaction r;

		ck_assert_int_eq(sigaction(others[i], NULL, &saved[i]), 0);
		r = saved[i];
		r.sa_flags |= SA_RESTART;
		ck_assert_int_eq(sigaction(others[i], &r, NULL), 0);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, interrupt_later, &in), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), -1);
	ck_assert_int_eq(errno, EAGAIN);	/* not EINTR: it waited on */
	pthread_join(t, NULL);
	ck_assert_int_eq(sigaction(SIGALRM, &old, NULL), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(sigaction(others[i], &saved[i], NULL), 0);

	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(ch), 0);
}
END_TEST

struct destroyer {
	struct ibv_cq *cq;
	atomic_int done;
	int rc;
};

static void *destroy_cq_thread(void *arg)
{
	struct destroyer *d = arg;

	d->rc = ibv_destroy_cq(d->cq);
	atomic_store(&d->done, 1);
	return NULL;
}

/*
 * ibv_get_cq_event(3): destroying a CQ waits until every event read was
 * acknowledged; events nobody read are dropped with it, and the other
 * CQs' events stay, in order.
 */
START_TEST(channel_destroy_waits_for_acks)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *a, *b, *c, *got = NULL;
	struct timespec tick = { 0, 100 * 1000000L }, limit;
	struct destroyer d;
	pthread_t t;
	void *cctx;

	ck_assert_ptr_nonnull(ch);
	a = ibv_create_cq(ctx, 4, NULL, ch, 0);
	b = ibv_create_cq(ctx, 4, NULL, ch, 0);
	c = ibv_create_cq(ctx, 4, NULL, ch, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ibv_req_notify_cq(b, 0), 0);
	ck_assert_int_eq(ibv_req_notify_cq(a, 0), 0);
	ck_assert_int_eq(ibv_req_notify_cq(c, 0), 0);
	push(b, 1, false);
	push(a, 1, false);
	push(c, 1, false);
	ck_assert_int_eq(ibv_req_notify_cq(a, 0), 0);
	push(a, 2, false);
	/* Pipe: b a c a.  a dies unread: b c remain, in order. */
	ck_assert_int_eq(ibv_destroy_cq(a), 0);
	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	ck_assert_ptr_eq(got, b);

	/* b's event was read, not acknowledged: its destroy waits. */
	memset(&d, 0, sizeof(d));
	d.cq = b;
	ck_assert_int_eq(pthread_create(&t, NULL, destroy_cq_thread, &d), 0);
	nanosleep(&tick, NULL);
	ck_assert_int_eq(atomic_load(&d.done), 0);
	ibv_ack_cq_events(b, 1);
	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += 5;
	ck_assert_int_eq(pthread_timedjoin_np(t, NULL, &limit), 0);
	ck_assert_int_eq(d.rc, 0);

	ck_assert_int_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	ck_assert_ptr_eq(got, c);
	ck_assert_int_eq(readable(ch->fd, 0), 0);
	ibv_ack_cq_events(c, 1);
	ck_assert_int_eq(ibv_destroy_cq(c), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(ch), 0);
}
END_TEST

/* A completion finding the CQ full: IBV_EVENT_CQ_ERR on the context. */
START_TEST(cq_overrun_async_event)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	struct ibv_async_event ev;
	struct ibv_wc wc, w[4];

	ck_assert_ptr_nonnull(cq);
	push(cq, 1, false);
	push(cq, 2, false);
	memset(&wc, 0, sizeof(wc));
	ck_assert(!urxe_cq_push(&to_ucq(cq)->ring, &wc, false));
	ck_assert_int_eq(readable(ctx->async_fd, 1000), 1);
	ck_assert_int_eq(ibv_get_async_event(ctx, &ev), 0);
	ck_assert_int_eq(ev.event_type, IBV_EVENT_CQ_ERR);
	ck_assert_ptr_eq(ev.element.cq, cq);
	/* Reported once. */
	ck_assert(!urxe_cq_push(&to_ucq(cq)->ring, &wc, false));
	ck_assert_int_eq(readable(ctx->async_fd, 0), 0);
	/* What fitted is still there. */
	ck_assert_int_eq(ibv_poll_cq(cq, 4, w), 2);
	ibv_ack_async_event(&ev);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);

	/* Destroyed before anyone read the event: it goes with the CQ. */
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	push(cq, 1, false);
	ck_assert(!urxe_cq_push(&to_ucq(cq)->ring, &wc, false));
	ck_assert_int_eq(readable(ctx->async_fd, 1000), 1);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(readable(ctx->async_fd, 0), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mr_cq");
	TCase *tc;

	tc = tu_tcase(s, "mr", setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, mr_reg_keys);
	tcase_add_test(tc, mr_efault_unmapped);
	tcase_add_test(tc, mr_readonly_mapping);
	tcase_add_test(tc, mr_access_rules);
	tcase_add_test(tc, mr_iova);
	tcase_add_test(tc, mr_pd_busy_and_dereg_busy);
	tcase_add_test(tc, mr_rereg);

	tc = tu_tcase(s, "keys", setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mr_keys_unpredictable);

	tc = tu_tcase(s, "cq", setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, cq_create_limits);
	tcase_add_test(tc, cq_resize_keeps_order);
	tcase_add_test(tc, channel_busy_and_events);
	tcase_add_test(tc, channel_wakes_blocked_reader);
	tcase_add_test(tc, channel_wait_and_signals);
	tcase_add_test(tc, channel_destroy_waits_for_acks);
	tcase_add_test(tc, cq_overrun_async_event);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
