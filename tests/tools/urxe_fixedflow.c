// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_fixedflow: a fixed workload whose packets are the same from run to
 * run, for comparing two builds on the wire (bench/wire_compare.sh).
 *
 *   urxe_fixedflow [-d dev] [-g gid-index] [-n rounds] [-m mtu] [-M max]
 *                  [-t secs]
 *
 * One process, one context, two RC QPs (A and B) connected to each other
 * with fixed starting PSNs (A's near the 2^24 wrap, so that relative PSNs
 * are tested across it).  Each round, one operation at a time, each
 * waited for before the next is posted: SENDs of 1, 1000, 4096, 10000 and
 * 65536 bytes from A to B and back, a SEND with immediate; RDMA WRITEs of
 * 8, 5000 and 65536 bytes and a WRITE with immediate; RDMA READs of 8,
 * 5000 and 65536 bytes; a fetch-and-add and a compare-and-swap.  Every
 * payload is a pattern of (round, operation, size, offset), and every
 * byte received, written, read or returned is checked.  Nothing on the
 * wire depends on the time or on randomness the program chooses: with a
 * fresh runtime directory the QPNs are the same too (they follow the
 * slot's claim generation and the user, docs/design.md "Slots"), so that
 * URXE_FAULTS (a hash of seed, QPN, PSN, opcode, ...) decides alike.
 * Addresses and keys (RETH, AtomicETH) do differ: they are not compared.
 * -M leaves out messages longer than max bytes (a small capture to keep
 * in the tree: tests/vectors/fixedflow-faults.pcapng).
 *
 * It prints the QPNs and the libibverbs.so.1 it runs with (dladdr), so
 * that a caller can check which build it measured.
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <dlfcn.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BIG 65536u			/* the largest message */
#define PSN_A 0xfffff0u			/* wraps in the first round */
#define PSN_B 0x123456u
#define ATOMIC_START 0x1000000000000000ull

enum { EXIT_CHECK = 1, EXIT_SETUP = 2, EXIT_TIME = 3 };

/* Each side's region: what it sends, receives, exposes, reads into. */
enum { OFF_TX = 0, OFF_RX = BIG, OFF_EXPO = 2 * BIG, OFF_LOCAL = 3 * BIG,
       OFF_ATOM = 4 * BIG, OFF_ATRES = 4 * BIG + 8, REGION = 4 * BIG + 64 };

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	char name;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct side A = { .name = 'A' }, B = { .name = 'B' };
static uint64_t deadline_ns;
static uint32_t max_bytes = BIG;
static int gidx;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Byte @i of the payload of operation @op (a letter) of @size in @round. */
static uint8_t pat(int round, int op, uint32_t size, uint32_t i)
{
	uint32_t x = (uint32_t)round * 2654435761u ^ (uint32_t)op << 24 ^
		     size * 40503u ^ i * 2246822519u;

	return (uint8_t)(x ^ x >> 13 ^ x >> 24);
}

static void fill(uint8_t *p, int round, int op, uint32_t size)
{
	uint32_t i;

	for (i = 0; i < size; i++)
		p[i] = pat(round, op, size, i);
}

/* The first byte of @p that is not the pattern, or -1. */
static long mismatch(const uint8_t *p, int round, int op, uint32_t size)
{
	uint32_t i;

	for (i = 0; i < size; i++)
		if (p[i] != pat(round, op, size, i))
			return (long)i;
	return -1;
}

static int side_open(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->buf = aligned_alloc(4096, REGION);
	s->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!s->buf || !s->cq)
		return -1;
	memset(s->buf, 0, REGION);
	s->mr = ibv_reg_mr(pd, s->buf, REGION, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = s->mr ? ibv_create_qp(pd, &ia) : NULL;
	return s->qp ? 0 : -1;
}

static int side_connect(struct side *s, const struct side *peer,
			uint32_t my_psn, uint32_t peer_psn, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	if (ibv_query_gid(ctx, 1, gidx, &a.ah_attr.grh.dgid) ||
	    ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;			/* 16.8 ms: drops recover quickly */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One completion of @s's CQ, which must be @want with success. */
static int wait_wc(struct side *s, enum ibv_wc_opcode want, uint32_t *len,
		   uint32_t *imm)
{
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(s->cq, 1, &wc))) {
		if (now_ns() > deadline_ns) {
			fprintf(stderr, "urxe_fixedflow: timed out waiting on %c\n",
				s->name);
			return EXIT_TIME;
		}
		sched_yield();
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != want) {
		fprintf(stderr, "urxe_fixedflow: %c: completion %s, opcode %d (want %d)\n",
			s->name, n < 0 ? "poll failed" : ibv_wc_status_str(wc.status),
			wc.opcode, want);
		return EXIT_CHECK;
	}
	if (len)
		*len = wc.byte_len;
	if (imm)
		*imm = be32toh(wc.imm_data);
	return 0;
}

static int post_recv(struct side *s)
{
	struct ibv_sge sg = { (uintptr_t)(s->buf + OFF_RX), BIG, s->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad) ? EXIT_SETUP : 0;
}

/* Posts one signaled WR from @s: @op, local bytes at @off, @size. */
static int post(struct side *s, const struct side *peer, enum ibv_wr_opcode op,
		uint32_t off, uint32_t size, uint32_t remote_off, uint32_t imm)
{
	struct ibv_sge sg = { (uintptr_t)(s->buf + off), size, s->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = size ? 1 : 0,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = (uintptr_t)(peer->buf + remote_off);
	wr.wr.rdma.rkey = peer->mr->rkey;
	return ibv_post_send(s->qp, &wr, &bad) ? EXIT_SETUP : 0;
}

static int bad(const char *what, int round, uint32_t size, long at)
{
	fprintf(stderr, "urxe_fixedflow: round %d: %s of %u bytes differs at byte %ld\n",
		round, what, size, at);
	return EXIT_CHECK;
}

/* A SEND (with immediate when @imm) of @size from @s to @r, received whole. */
static int one_send(struct side *s, struct side *r, int round, uint32_t size,
		    bool imm)
{
	int op = imm ? 'i' : s->name, rc;
	uint32_t len = 0, got = 0, want_imm = 0x5e000000u | (uint32_t)round;
	long at;

	fill(s->buf + OFF_TX, round, op, size);
	memset(r->buf + OFF_RX, 0, size);
	if ((rc = post_recv(r)) ||
	    (rc = post(s, r, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, OFF_TX,
		       size, 0, want_imm)) ||
	    (rc = wait_wc(s, IBV_WC_SEND, NULL, NULL)) ||
	    (rc = wait_wc(r, IBV_WC_RECV, &len, &got)))
		return rc;
	if (len != size || (imm && got != want_imm))
		return bad("a received SEND's length or immediate", round, size, -1);
	at = mismatch(r->buf + OFF_RX, round, op, size);
	return at < 0 ? 0 : bad("a received SEND", round, size, at);
}

/* An RDMA WRITE (with immediate when @imm) of @size from A into B. */
static int one_write(int round, uint32_t size, bool imm)
{
	int op = imm ? 'j' : 'w', rc;
	uint32_t len = 0, got = 0, want_imm = 0x3e000000u | (uint32_t)round;
	long at;

	fill(A.buf + OFF_TX, round, op, size);
	memset(B.buf + OFF_EXPO, 0, size);
	if ((imm && (rc = post_recv(&B))) ||
	    (rc = post(&A, &B, imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		       OFF_TX, size, OFF_EXPO, want_imm)) ||
	    (rc = wait_wc(&A, IBV_WC_RDMA_WRITE, NULL, NULL)))
		return rc;
	if (imm && (rc = wait_wc(&B, IBV_WC_RECV_RDMA_WITH_IMM, &len, &got)))
		return rc;
	if (imm && got != want_imm)
		return bad("a WRITE's immediate", round, size, -1);
	at = mismatch(B.buf + OFF_EXPO, round, op, size);
	return at < 0 ? 0 : bad("an RDMA WRITE", round, size, at);
}

/* An RDMA READ of @size by A from what B exposes. */
static int one_read(int round, uint32_t size)
{
	long at;
	int rc;

	fill(B.buf + OFF_EXPO, round, 'r', size);
	memset(A.buf + OFF_LOCAL, 0, size);
	if ((rc = post(&A, &B, IBV_WR_RDMA_READ, OFF_LOCAL, size, OFF_EXPO, 0)) ||
	    (rc = wait_wc(&A, IBV_WC_RDMA_READ, NULL, NULL)))
		return rc;
	at = mismatch(A.buf + OFF_LOCAL, round, 'r', size);
	return at < 0 ? 0 : bad("an RDMA READ", round, size, at);
}

/* A fetch-and-add then a compare-and-swap by A on B's word. */
static int atomics(int round)
{
	struct ibv_sge sg = { (uintptr_t)(A.buf + OFF_ATRES), 8, A.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad_wr;
	uint64_t *word = (uint64_t *)(B.buf + OFF_ATOM);
	uint64_t *res = (uint64_t *)(A.buf + OFF_ATRES);
	uint64_t start = ATOMIC_START + (uint64_t)round * 0x100000001ull;
	uint64_t add = 0x10001ull * (uint64_t)(round + 1);
	int rc;

	*word = start;
	wr.wr.atomic.remote_addr = (uintptr_t)word;
	wr.wr.atomic.rkey = B.mr->rkey;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = add;
	if (ibv_post_send(A.qp, &wr, &bad_wr))
		return EXIT_SETUP;
	if ((rc = wait_wc(&A, IBV_WC_FETCH_ADD, NULL, NULL)))
		return rc;
	if (*res != start || *word != start + add)
		return bad("a fetch-and-add", round, 8, -1);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = start + add;
	wr.wr.atomic.swap = ~start;
	if (ibv_post_send(A.qp, &wr, &bad_wr))
		return EXIT_SETUP;
	if ((rc = wait_wc(&A, IBV_WC_COMP_SWAP, NULL, NULL)))
		return rc;
	if (*res != start + add || *word != ~start)
		return bad("a compare-and-swap", round, 8, -1);
	return 0;
}

static int one_round(int round)
{
	static const uint32_t sends[] = { 1, 1000, 4096, 10000, BIG };
	static const uint32_t rdma[] = { 8, 5000, BIG };
	unsigned int i;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(sends) / sizeof(sends[0]); i++)
		if (sends[i] <= max_bytes &&
		    !(rc = one_send(&A, &B, round, sends[i], false)))
			rc = one_send(&B, &A, round, sends[i], false);
	if (!rc)
		rc = one_send(&A, &B, round, 64, true);
	for (i = 0; !rc && i < sizeof(rdma) / sizeof(rdma[0]); i++)
		if (rdma[i] <= max_bytes)
			rc = one_write(round, rdma[i], false);
	if (!rc)
		rc = one_write(round, 100, true);
	for (i = 0; !rc && i < sizeof(rdma) / sizeof(rdma[0]); i++)
		if (rdma[i] <= max_bytes)
			rc = one_read(round, rdma[i]);
	return rc ? rc : atomics(round);
}

static enum ibv_mtu mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return 0;
	}
}

static int open_device(const char *want)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (list && list[i])
		ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	return pd ? 0 : -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: urxe_fixedflow [-d dev] [-g gid-index] [-n rounds] [-m mtu] [-M max] [-t secs]\n"
		"  defaults: the first device, 0, 3 rounds, 4096, 65536 bytes, 120 s\n");
	return EXIT_SETUP;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int c, rounds = 3, mtu = 4096, secs = 120, r, rc = 0;
	Dl_info dl;

	while ((c = getopt(argc, argv, "d:g:n:m:M:t:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		case 'm': mtu = atoi(optarg); break;
		case 'M': max_bytes = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': secs = atoi(optarg); break;
		default: return usage();
		}
	}
	if (optind != argc || rounds < 1 || secs < 1 || !mtu_enum(mtu))
		return usage();
	deadline_ns = now_ns() + (uint64_t)secs * 1000000000ull;
	if (open_device(dev) || side_open(&A) || side_open(&B) ||
	    side_connect(&A, &B, PSN_A, PSN_B, mtu_enum(mtu)) ||
	    side_connect(&B, &A, PSN_B, PSN_A, mtu_enum(mtu))) {
		perror("urxe_fixedflow: set-up");
		return EXIT_SETUP;
	}
	if (dladdr((void *)ibv_open_device, &dl) && dl.dli_fname)
		printf("fixedflow: lib %s\n", dl.dli_fname);
	printf("fixedflow: qpn A 0x%06x psn 0x%06x, B 0x%06x psn 0x%06x, mtu %d\n",
	       A.qp->qp_num, PSN_A, B.qp->qp_num, PSN_B, mtu);
	for (r = 0; !rc && r < rounds; r++)
		rc = one_round(r);
	printf("%s after %d round%s\n", rc ? "FAIL" : "PASS", rc ? r : rounds,
	       rounds == 1 ? "" : "s");
	ibv_destroy_qp(A.qp);
	ibv_destroy_qp(B.qp);
	return rc;
}
