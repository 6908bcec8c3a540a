// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 4: RDMA READ and the two atomic operations.
 *
 * Like a WRITE (lesson 2), these act on the remote memory without the
 * remote program: the remote device answers by itself.
 *   RDMA READ        copies remote bytes into a local buffer;
 *   FETCH_AND_ADD    adds to a remote 64-bit integer and returns the value
 *                    it had before;
 *   COMPARE_AND_SWAP replaces a remote 64-bit integer with `swap` only if
 *                    it equals `compare`, and returns the value it had (so
 *                    the caller sees whether the swap happened).
 * Atomics work on 8 bytes aligned to 8, and the device guarantees that no
 * other atomic on that integer (through this device) comes in between.
 * The remote memory region must allow each: REMOTE_READ, REMOTE_ATOMIC;
 * so must the remote QP (its qp_access_flags, set in rc_connect()).  The
 * responder serves only max_dest_rd_atomic of them at once (RTR).
 *
 * Here, as in lesson 2, both QPs live in one process: A asks, B's memory
 * answers.
 *
 *   04_read_atomic [-d DEV] [-g GIDX]
 */
#include "common.h"

#include <stdalign.h>

/* B's memory: a text to read and a counter for the atomics. */
struct remote_area {
	char text[32];
	alignas(8) uint64_t counter;
};

struct pair {
	struct ibv_qp *a;		/* the requester */
	struct ibv_cq *cq;
	struct ibv_mr *local;		/* A's buffer: READ data, atomic results */
	struct ibv_mr *remote;		/* B's remote_area */
};

/* Posts @wr on A with A's buffer as its one SGE, waits, checks. */
static void run(struct pair *p, struct ibv_send_wr *wr, uint32_t len,
		const char *what)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->local->addr,
			       .length = len, .lkey = p->local->lkey };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	check(ibv_post_send(p->a, wr, &bad), "ibv_post_send");
	wait_completion(p->cq, &wc);
	printf("%s: %s\n", what, wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

static void rdma_read(struct pair *p, struct remote_area *b)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_RDMA_READ,
		.wr.rdma = { .remote_addr = (uintptr_t)b->text,
			     .rkey = p->remote->rkey },
	};

	run(p, &wr, sizeof(b->text), "RDMA READ of 32 bytes");
	printf("  read from B: \"%s\"\n", (char *)p->local->addr);
}

/* An atomic: the value the remote integer had lands in A's buffer. */
static uint64_t atomic(struct pair *p, struct remote_area *b,
		       enum ibv_wr_opcode op, uint64_t compare_add,
		       uint64_t swap, const char *what)
{
	struct ibv_send_wr wr = {
		.opcode = op,
		.wr.atomic = { .remote_addr = (uintptr_t)&b->counter,
			       .compare_add = compare_add, .swap = swap,
			       .rkey = p->remote->rkey },
	};
	uint64_t before;

	run(p, &wr, sizeof(uint64_t), what);
	/* (rxe returns it in host byte order; some older HCAs in big
	 * endian: see IBV_ATOMIC_HCA vs IBV_ATOMIC_GLOB.) */
	memcpy(&before, p->local->addr, sizeof(before));
	return before;
}

/* COMPARE_AND_SWAP: the returned value tells whether it swapped. */
static void cas(struct pair *p, struct remote_area *b, uint64_t compare,
		uint64_t swap)
{
	char what[64];
	uint64_t v;

	snprintf(what, sizeof(what), "COMPARE_AND_SWAP %llu -> %llu",
		 (unsigned long long)compare, (unsigned long long)swap);
	v = atomic(p, b, IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap, what);
	printf("  returned %llu (%s), B's counter now %llu\n",
	       (unsigned long long)v, v == compare ? "equal: swapped" :
	       "not equal: not swapped", (unsigned long long)b->counter);
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_device_attr da;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct remote_area *b = aligned_alloc(8, sizeof(*b));
	char *abuf = calloc(1, sizeof(b->text));
	struct pair p = { .cq = cq };

	if (!pd || !cq || !b || !abuf)
		die("ibv_alloc_pd/ibv_create_cq/malloc");
	check(ibv_query_device(ctx, &da), "ibv_query_device");
	if (da.atomic_cap == IBV_ATOMIC_NONE) {
		printf("this device has no atomic operations\n");
		return 1;
	}
	memset(b, 0, sizeof(*b));
	strcpy(b->text, "data that lives in B");
	b->counter = 100;

	p.local = ibv_reg_mr(pd, abuf, sizeof(b->text), IBV_ACCESS_LOCAL_WRITE);
	p.remote = ibv_reg_mr(pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!p.local || !p.remote)
		die("ibv_reg_mr");

	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	p.a = ibv_create_qp(pd, &ia);
	struct ibv_qp *qb = ibv_create_qp(pd, &ia);
	if (!p.a || !qb)
		die("ibv_create_qp");
	struct endpoint ea = local_endpoint(p.a, o.gidx, 0x100);
	struct endpoint eb = local_endpoint(qb, o.gidx, 0x200);
	rc_connect(p.a, o.gidx, ea.psn, &eb, 7);
	rc_connect(qb, o.gidx, eb.psn, &ea, 7);

	rdma_read(&p, b);

	printf("B's counter starts at %llu\n", (unsigned long long)b->counter);
	uint64_t v = atomic(&p, b, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0,
			    "FETCH_AND_ADD 5");
	printf("  returned %llu, B's counter now %llu\n",
	       (unsigned long long)v, (unsigned long long)b->counter);

	cas(&p, b, 105, 500);	/* the counter is 105: swapped */
	cas(&p, b, 105, 7);	/* now it is 500: left alone */
	if (b->counter != 500)
		return 1;

	check(ibv_destroy_qp(p.a), "ibv_destroy_qp");
	check(ibv_destroy_qp(qb), "ibv_destroy_qp");
	check(ibv_dereg_mr(p.local), "ibv_dereg_mr");
	check(ibv_dereg_mr(p.remote), "ibv_dereg_mr");
	check(ibv_destroy_cq(cq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(b);
	free(abuf);
	return 0;
}
