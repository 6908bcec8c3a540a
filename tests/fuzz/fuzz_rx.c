// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzzer for the engine's receive path with live QPs behind it.
 *
 * One engine, driven in this thread with a fake clock, holds an RC pair
 * (rc0 <-> rc1), a UC pair (uc0 <-> uc1) and a UD QP that sends to itself,
 * all in RTS, with registered memory open to remote access, receives
 * posted and sends in flight: SEND, WRITE, READ, atomics.  What the
 * engine transmits is captured in a ring (the "wire"); it reaches the
 * engine again only when the input says so.  An input is a list of
 * records, each a 4-byte header and (for frames) the frame's bytes:
 *
 *   flag  bits 0-2: 0-4 a frame for rc0 rc1 uc0 uc1 ud (its BTH DestQP is
 *                   patched to that QP), 5 a frame with DestQP as it is,
 *                   6 a wire operation, 7 a clock jump (no bytes follow);
 *         bit 3: raw: no fix-up at all, the last 4 bytes are the ICRC;
 *         bit 4: the opcode's transport is made the target QP's;
 *         bits 5-7: the frame is delivered 1 + this many times.
 *   mode  bits 0-1: PSN: 0 as is, 1 the one the QP expects next
 *                   (responder: ePSN; completer: the oldest unacked),
 *                   2 that + (int8_t) the PSN's low byte, 3 that - 1;
 *         bit 2: RETH/AtomicETH R_Key and VA made to name one of the
 *                MRs (which one, and the offset, from the fuzzed values);
 *         bit 3: IPv6 GIDs in the receive metadata (else IPv4-mapped);
 *         bit 4: the metadata carries the IP header (packet backend);
 *         bits 5-7: clock advance before the frame, 1 us .. 1 s.
 *   len   16-bit little-endian: frame length (BTH .. ICRC); for a wire
 *         operation: low byte a count (0: all), high byte & 3 the action
 *         (0 deliver in order, 1 drop, 2 deliver copies and keep them,
 *         3 deliver the count-th alone: reordering); for a clock jump:
 *         len x 50 us.
 *
 * Unless raw, the harness writes the ICRC the engine's own icrc functions
 * compute, so frames get past the ICRC check to header parsing, the PSN
 * checks and the responder / completer.  After each record the engine
 * runs, completions are taken and checked (each work request completes
 * once, in order, on its own QP's CQ, which never overflows), QPs that
 * ended in ERR are reset and connected again (the pair together), receives
 * are replenished and sends topped up.  At the end of the input the wire
 * is drained a few times so the real traffic plays the perturbation out.
 *
 * Every input starts from a fresh engine, so a crash reproduces from its
 * input alone; URXE_FUZZ_PERSIST=N keeps an engine for N inputs instead
 * (state accumulates; crashes may then need the inputs before them).
 *
 * Built with libFuzzer (-DURXE_FUZZ_LIBFUZZER) or as a plain driver whose
 * main() runs the files (or directories of files) named on its command
 * line; files ending in .hex are hex text ('#' comments, any spacing).
 */
#include <dirent.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <urxe/engine.h>

#include "engine_int.h"
#include "hdr.h"
#include "icrc.h"
#include "opcode.h"
#include "psn.h"

#define SLOT 1
#define SPORT 0xc0de
#define WIRE_SLOTS 64			/* captured packets kept */
#define WIRE_BUF 8192
#define MAX_FRAME 8192
#define MAX_RECORDS 1024
#define SQ_DEPTH 16
#define RQ_DEPTH 16
#define SQ_BUSY 4			/* sends kept outstanding per QP */
#define RQ_FILL 8			/* receives kept posted per QP */
#define DRAIN_ROUNDS 1
#define PD 7

#define fatal(...) do { fprintf(stderr, "fuzz_rx: " __VA_ARGS__); \
	fputc('\n', stderr); abort(); } while (0)
#define check(cond) do { if (!(cond)) fatal("%s:%d: %s", __FILE__, \
	__LINE__, #cond); } while (0)

enum { RC0, RC1, UC0, UC1, UD, NQP };
enum { MR0, MR1, MR2, MR3, NMR };

/* Each WR's wr_id: bit 63 for receives, QP index, sequence number. */
#define WR_RECV (1ull << 63)
#define WR_ID(recv, q, seq) ((recv) | (uint64_t)(q) << 32 | (seq))

struct fq {
	struct urxe_eqp qp;
	struct urxe_cq_ring cq;
	uint32_t sq_seq, sq_next_cqe;	/* posted, next expected completion */
	uint32_t rq_seq, rq_next_cqe;
	uint8_t sq_op[SQ_DEPTH * 4];	/* IBV_WC_* expected, by sequence */
	uint8_t sq_sig[SQ_DEPTH * 4];
	uint32_t rq_len[RQ_DEPTH * 4];	/* bytes the receive could take */
	unsigned int script;		/* next send to post */
	unsigned int peer;
	int events;
};

struct wire_pkt {
	uint8_t data[WIRE_BUF];
	uint32_t len;
	union ibv_gid sgid, dgid;
	uint16_t sport;
};

static struct world {
	struct urxe_engine *eng;
	struct fq q[NQP];
	struct urxe_mem mr[NMR];
	uint64_t now;
	unsigned int reconnects;
	struct wire_pkt *wire;		/* WIRE_SLOTS */
	uint32_t wire_head, wire_tail;	/* free-running */
	uint64_t digest;		/* of every packet sent, every CQE */
} w;

static struct {
	uint64_t inputs, frames, raw, fed_back, reconnects;
	uint64_t cnt[URXE_CNT__COUNT];
	bool print;
} stats;

static unsigned int persist = 1;
static bool trace;			/* URXE_FUZZ_TRACE=1: say what happens */

static const union ibv_gid gid_v4_local = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 1 } };
static const union ibv_gid gid_v4_peer = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 2 } };
static const union ibv_gid gid_v6_local = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 1 } };
static const union ibv_gid gid_v6_peer = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 2 } };

/* ---- the engine's ops ---- */

/* Only the plain driver compares digests; libFuzzer need not pay for them. */
static void digest(const void *p, size_t n)
{
#ifndef URXE_FUZZ_LIBFUZZER
	const uint8_t *b = p;

	while (n--)
		w.digest = (w.digest ^ *b++) * 0x100000001b3ull;	/* FNV-1a */
#else
	(void)p;
	(void)n;
#endif
}

/* Captures every packet; a full ring forgets its oldest. */
static int wire_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	unsigned int i;

	(void)priv;
	for (i = 0; i < n; i++) {
		struct wire_pkt *p;

		check(pkts[i].niov == 1 && pkts[i].len == pkts[i].iov[0].iov_len);
		check(pkts[i].len >= URXE_BTH_LEN + URXE_ICRC_LEN &&
		      pkts[i].len <= WIRE_BUF);
		check(!(pkts[i].len & 3));
		if (w.wire_tail - w.wire_head == WIRE_SLOTS)
			w.wire_head++;
		p = &w.wire[w.wire_tail++ % WIRE_SLOTS];
		memcpy(p->data, pkts[i].iov[0].iov_base, pkts[i].len);
		p->len = pkts[i].len;
		p->sgid = pkts[i].sgid;
		p->dgid = pkts[i].dgid;
		p->sport = pkts[i].sport;
		digest(p->data, p->len);
	}
	return (int)n;
}

static uint64_t fake_now(void *priv)
{
	(void)priv;
	return w.now;
}

static const struct urxe_engine_ops ops = {
	.xmit = wire_xmit,
	.now = fake_now,
};

static void qp_event(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	struct fq *f = (struct fq *)(void *)qp;	/* qp is the first member */

	check(ev == IBV_EVENT_QP_FATAL || ev == IBV_EVENT_QP_REQ_ERR ||
	      ev == IBV_EVENT_QP_ACCESS_ERR);
	if (trace)
		fprintf(stderr, "fuzz_rx:   QP 0x%06x: event %d\n", qp->qpn, ev);
	f->events++;
}

/* The engine's own indices stay ordered: retired <= started <= posted. */
static void check_queues(void)
{
	unsigned int qi;

	for (qi = 0; qi < NQP; qi++) {
		const struct urxe_eqp *qp = &w.q[qi].qp;
		uint32_t prod = atomic_load(&qp->sq.prod);
		uint32_t cons = atomic_load(&qp->sq.cons);

		if (qp->sq_comp != cons || qp->sq_next - cons > prod - cons ||
		    prod - cons > SQ_DEPTH ||
		    atomic_load(&qp->rq.prod) - atomic_load(&qp->rq.cons) > RQ_DEPTH)
			fatal("QP 0x%x: send queue retired %u, next %u, posted %u; "
			      "receive queue taken %u, posted %u", qp->qpn, cons,
			      qp->sq_next, prod, atomic_load(&qp->rq.cons),
			      atomic_load(&qp->rq.prod));
	}
}



/* ---- delivering frames ---- */

/* The engine sees exactly @len bytes: ASan catches any read beyond. */
static void deliver(const uint8_t *bytes, uint32_t len,
		    const struct urxe_rx_meta *meta)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (trace && len >= URXE_BTH_LEN)
		fprintf(stderr, "fuzz_rx:   frame %s QPN 0x%06x PSN 0x%06x, %u bytes\n",
			urxe_opinfo(bytes[0])->name ? urxe_opinfo(bytes[0])->name : "?",
			urxe_get24(bytes + 5), urxe_get24(bytes + 9), len);
	check(copy);
	memcpy(copy, bytes, len);
	urxe_engine_input(w.eng, copy, len, meta);
	free(copy);
	stats.frames++;
	check_queues();
}

static void deliver_wire(uint32_t idx)
{
	const struct wire_pkt *p = &w.wire[idx % WIRE_SLOTS];
	struct urxe_rx_meta meta = {
		.sgid = p->sgid, .dgid = p->dgid, .sport = p->sport,
		.dport = URXE_ROCE_UDP_PORT, .ttl = 64, .now_ns = w.now,
	};

	/* deliver() copies first: what the engine sends may reuse the slot. */
	deliver(p->data, p->len, &meta);
	stats.fed_back++;
}

static void wire_op(uint16_t arg)
{
	uint32_t have = w.wire_tail - w.wire_head, n = arg & 0xff, i;

	if (!n || n > have)
		n = have;
	switch (arg >> 8 & 3) {
	case 0:				/* in order */
		for (i = 0; i < n && w.wire_head != w.wire_tail; i++)
			deliver_wire(w.wire_head++);
		break;
	case 1:				/* lost */
		w.wire_head += n;
		break;
	case 2:				/* duplicated */
		for (i = 0; i < n; i++)
			deliver_wire(w.wire_head + i);
		break;
	default:			/* the n-th overtakes the others */
		if (!have)
			break;
		i = (arg & 0xff) % have;
		deliver_wire(w.wire_head + i);
		for (; i > 0; i--)
			w.wire[(w.wire_head + i) % WIRE_SLOTS] =
				w.wire[(w.wire_head + i - 1) % WIRE_SLOTS];
		w.wire_head++;
		break;
	}
}

/* ---- fix-ups ---- */

static uint8_t transport_of(unsigned int target)
{
	return target == UD ? URXE_TR_UD :
	       target >= UC0 ? URXE_TR_UC : URXE_TR_RC;
}

/* The PSN the target would accept next, for this direction. */
static uint32_t expected_psn(const struct urxe_eqp *qp, uint8_t opcode)
{
	return urxe_opinfo(opcode)->flags & URXE_F_REQ ? qp->epsn : qp->acked_psn;
}

static void fix_psn(uint8_t *f, const struct urxe_eqp *qp, unsigned int mode)
{
	uint32_t psn = expected_psn(qp, f[0]);

	if (mode == 2)
		psn = urxe_psn_add(psn, (uint32_t)(int32_t)(int8_t)f[11]);
	else if (mode == 3)
		psn = urxe_psn_add(psn, URXE_PSN_MASK);
	urxe_put24(f + 9, psn);
}

/* R_Key and VA of a RETH or AtomicETH at @p made to fall in an MR. */
static void fix_key(uint8_t *p, bool atomic)
{
	uint64_t va = urxe_get64(p);
	const struct urxe_mem *m = &w.mr[urxe_get32(p + 8) % NMR];
	uint64_t nva = m->iova + va % m->length;

	if (atomic && !(va >> 63))
		nva &= ~7ull;		/* usually aligned, sometimes not */
	urxe_put64(p, nva);
	urxe_put32(p + 8, m->rkey);
}

static void fix_keys(uint8_t *f, uint32_t len)
{
	const struct urxe_opinfo *oi = urxe_opinfo(f[0]);

	if ((oi->hdrs & URXE_HDR_BIT(URXE_HDR_RETH)) &&
	    (uint32_t)oi->off[URXE_HDR_RETH] + URXE_RETH_LEN <= len) {
		uint8_t *r = f + oi->off[URXE_HDR_RETH];
		uint32_t dma = urxe_get32(r + 12);

		fix_key(r, false);
		/* A DMA length with the top bit set: the payload's length. */
		if ((dma >> 31) && len >= (uint32_t)oi->hdr_len + URXE_ICRC_LEN)
			urxe_put32(r + 12, len - oi->hdr_len - URXE_ICRC_LEN);
	}
	if ((oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH)) &&
	    (uint32_t)oi->off[URXE_HDR_ATMETH] + URXE_ATMETH_LEN <= len)
		fix_key(f + oi->off[URXE_HDR_ATMETH], true);
}

static void fix_up(uint8_t *f, uint32_t len, uint8_t flag, uint8_t mode,
		   const struct urxe_rx_meta *meta)
{
	unsigned int target = flag & 7;

	if (len < URXE_BTH_LEN + URXE_ICRC_LEN)
		return;
	if (target < NQP) {
		const struct urxe_eqp *qp = &w.q[target].qp;

		if (flag & 0x10)
			f[0] = (uint8_t)((f[0] & 0x1f) | transport_of(target));
		urxe_put24(f + 5, qp->qpn);
		if (mode & 3)
			fix_psn(f, qp, mode & 3);
	}
	if (mode & 4)
		fix_keys(f, len);
	urxe_icrc_store(f + len - URXE_ICRC_LEN,
			urxe_icrc_tx(meta->sgid.raw, meta->dgid.raw, meta->sport,
				     f, len - URXE_ICRC_LEN));
}

static const uint64_t clock_steps[8] = {
	1000, 10000, 100000, 1000000, 4000000, 16000000, 70000000, 1000000000,
};

static void frame_record(uint8_t flag, uint8_t mode, const uint8_t *data,
			 uint32_t len)
{
	uint8_t f[MAX_FRAME], hdr[40 + 8], *ip = NULL;
	struct urxe_rx_meta meta = {
		.sport = SPORT, .dport = URXE_ROCE_UDP_PORT, .ttl = 64,
	};
	unsigned int i;

	if (len > sizeof(f))
		len = sizeof(f);
	memcpy(f, data, len);
	w.now += clock_steps[mode >> 5];
	meta.now_ns = w.now;
	meta.sgid = mode & 8 ? gid_v6_peer : gid_v4_peer;
	meta.dgid = mode & 8 ? gid_v6_local : gid_v4_local;
	if (mode & 0x10) {
		/* The IP and UDP headers, in a buffer of their exact size. */
		meta.ip_len = (uint32_t)urxe_icrc_pseudo_hdr(hdr, meta.sgid.raw,
				meta.dgid.raw, meta.sport, meta.dport, len, 0, true);
		ip = malloc(meta.ip_len + 8);
		check(ip);
		memcpy(ip, hdr, meta.ip_len + 8);
		meta.ip = ip;
		meta.ip_hdr_known = true;
	}
	if (flag & 8)
		stats.raw++;
	else
		fix_up(f, len, flag, mode, &meta);
	for (i = 0; i <= (unsigned int)(flag >> 5); i++) {
		deliver(f, len, &meta);
		urxe_engine_progress(w.eng);
	}
	free(ip);
}

/* ---- work requests ---- */

struct send_op {
	enum ibv_wr_opcode op;
	uint32_t len;
	uint32_t remote_off;		/* in the peer's MR0 */
	unsigned int flags;
};

static const struct send_op rc_script[] = {
	{ IBV_WR_SEND, 3000, 0, IBV_SEND_SOLICITED },
	{ IBV_WR_RDMA_WRITE, 2500, 16384, 0 },
	{ IBV_WR_RDMA_READ, 5000, 24576, 0 },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 256, 0 },
	{ IBV_WR_SEND_WITH_IMM, 0, 0, IBV_SEND_FENCE },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, 8, 256, 0 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 1024, 20480, 0 },
	{ IBV_WR_RDMA_READ, 0, 24576, IBV_SEND_FENCE },
	{ IBV_WR_SEND_WITH_INV, 16, 0, 0 },
	{ IBV_WR_SEND, 40, 0, IBV_SEND_INLINE },
};

static const struct send_op uc_script[] = {
	{ IBV_WR_SEND, 1500, 0, 0 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 2000, 16384, 0 },
	{ IBV_WR_SEND_WITH_IMM, 0, 0, 0 },
	{ IBV_WR_RDMA_WRITE, 100, 20480, 0 },
};

static const struct send_op ud_script[] = {
	{ IBV_WR_SEND, 500, 0, 0 },
	{ IBV_WR_SEND_WITH_IMM, 40, 0, IBV_SEND_INLINE },
	{ IBV_WR_SEND, 1024, 0, 0 },
};

static enum ibv_wc_opcode wc_op(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static void fill_send(struct fq *f, unsigned int qi, struct urxe_send_wqe *s,
		      const struct send_op *o)
{
	memset(s, 0, sizeof(*s));
	s->wr_id = WR_ID(0, qi, f->sq_seq);
	s->opcode = o->op;
	/* Every fifth unsignaled: it completes silently when it succeeds. */
	s->send_flags = o->flags | (f->sq_seq % 5 == 4 ? 0 : IBV_SEND_SIGNALED);
	s->length = o->len;
	s->imm_inv = htobe32(0x1000 + f->sq_seq);
	s->remote_addr = w.mr[MR0].iova + o->remote_off;
	s->rkey = w.mr[MR0].rkey;
	s->compare_add = 5;
	s->swap = f->sq_seq;
	s->remote_qpn = f->qp.qpn;		/* UD: to itself */
	s->remote_qkey = f->qp.attr.qkey;
	s->dgid = gid_v4_local;
	s->hop_limit = 64;
	s->state = URXE_WQE_POSTED;
	if (o->flags & IBV_SEND_INLINE) {
		memset(s->sge, 0x5a, o->len);
		return;
	}
	s->num_sge = 1;
	s->sge[0].lkey = w.mr[MR0].lkey;
	s->sge[0].length = o->len;
	s->sge[0].addr = w.mr[MR0].iova +
		(o->op == IBV_WR_RDMA_READ ? 40960 :
		 o->len == 8 ? 512 : 0);
}

static void post_send(unsigned int qi)
{
	struct fq *f = &w.q[qi];
	const struct send_op *script = qi == UD ? ud_script :
				       qi >= UC0 ? uc_script : rc_script;
	unsigned int n = qi == UD ? sizeof(ud_script) / sizeof(ud_script[0]) :
			 qi >= UC0 ? sizeof(uc_script) / sizeof(uc_script[0]) :
				     sizeof(rc_script) / sizeof(rc_script[0]);
	const struct send_op *o = &script[f->script++ % n];
	uint32_t p = atomic_load(&f->qp.sq.prod);

	fill_send(f, qi, urxe_wq_slot(&f->qp.sq, p), o);
	f->sq_op[f->sq_seq % sizeof(f->sq_op)] = (uint8_t)wc_op(o->op);
	f->sq_sig[f->sq_seq % sizeof(f->sq_sig)] = f->sq_seq % 5 != 4;
	f->sq_seq++;
	atomic_store(&f->qp.sq.prod, p + 1);
}

/*
 * Receives of 4136 bytes (a 4096-byte UD message and its GRH), every other
 * one in two SGEs, one in MR1; now and then an empty or a tiny one.
 */
static void fill_recv(struct fq *f, unsigned int qi, struct urxe_recv_wqe *r)
{
	uint32_t k = f->rq_seq % 32, len = k == 15 ? 0 : k == 31 ? 64 : 4136;

	r->wr_id = WR_ID(WR_RECV, qi, f->rq_seq);
	r->length = len;
	r->num_sge = len ? 1 : 0;
	r->sge[0].addr = w.mr[MR0].iova + 32768 + (f->rq_seq % 4) * 4096;
	r->sge[0].length = len;
	r->sge[0].lkey = w.mr[MR0].lkey;
	if (len > 64 && (f->rq_seq & 1)) {
		r->num_sge = 2;
		r->sge[0].length = len / 2;
		r->sge[1].addr = w.mr[MR1].iova + 4096;
		r->sge[1].length = len / 2;
		r->sge[1].lkey = w.mr[MR1].lkey;
	}
}

static void post_recv(unsigned int qi)
{
	struct fq *f = &w.q[qi];
	uint32_t p = atomic_load(&f->qp.rq.prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(&f->qp.rq, p);

	fill_recv(f, qi, r);
	f->rq_len[f->rq_seq % (sizeof(f->rq_len) / sizeof(f->rq_len[0]))] =
		r->length;
	f->rq_seq++;
	atomic_store(&f->qp.rq.prod, p + 1);
}

/* ---- completions: each WR once, in order, on its QP's CQ ---- */

static void check_send_cqe(struct fq *f, const struct ibv_wc *wc, uint32_t seq)
{
	/* Successful unsignaled WRs before it completed silently. */
	while (f->sq_next_cqe != seq &&
	       !f->sq_sig[f->sq_next_cqe % sizeof(f->sq_sig)])
		f->sq_next_cqe++;
	if (seq != f->sq_next_cqe || seq >= f->sq_seq)
		fatal("QP 0x%x: send completion %u, expected %u (%u posted)",
		      f->qp.qpn, seq, f->sq_next_cqe, f->sq_seq);
	if (wc->opcode != (enum ibv_wc_opcode)f->sq_op[seq % sizeof(f->sq_op)])
		fatal("QP 0x%x: send %u completed as opcode %d",
		      f->qp.qpn, seq, wc->opcode);
	f->sq_next_cqe++;
}

static void check_recv_cqe(struct fq *f, const struct ibv_wc *wc, uint32_t seq)
{
	uint32_t cap = f->rq_len[seq % (sizeof(f->rq_len) / sizeof(f->rq_len[0]))];

	if (seq != f->rq_next_cqe || seq >= f->rq_seq)
		fatal("QP 0x%x: receive completion %u, expected %u (%u posted)",
		      f->qp.qpn, seq, f->rq_next_cqe, f->rq_seq);
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    wc->byte_len > cap)
		fatal("QP 0x%x: receive %u of %u bytes got %u", f->qp.qpn, seq,
		      cap, wc->byte_len);
	f->rq_next_cqe++;
}

static void poll_cq(unsigned int qi)
{
	struct fq *f = &w.q[qi];
	struct ibv_wc wc[16];
	int n, i;

	check(!f->cq.overflow);
	while ((n = urxe_cq_pop(&f->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t seq = (uint32_t)wc[i].wr_id;

			digest(&wc[i].wr_id, sizeof(wc[i].wr_id));
			digest(&wc[i].status, sizeof(wc[i].status));
			digest(&wc[i].byte_len, sizeof(wc[i].byte_len));
			check(wc[i].qp_num == f->qp.qpn);
			check((wc[i].wr_id >> 32 & 0xff) == qi);
			check(wc[i].status <= IBV_WC_GENERAL_ERR);
			if (trace && wc[i].status)
				fprintf(stderr, "fuzz_rx:   QP %u: wr 0x%llx status %d\n",
					qi, (unsigned long long)wc[i].wr_id,
					wc[i].status);
			if (wc[i].wr_id & WR_RECV)
				check_recv_cqe(f, &wc[i], seq);
			else
				check_send_cqe(f, &wc[i], seq);
		}
	}
}

/* ---- QP lifecycle ---- */

static void qp_connect(unsigned int qi, uint32_t psn)
{
	struct fq *f = &w.q[qi];
	struct urxe_qp_attr a = {
		.state = IBV_QPS_INIT, .qkey = 0x11111111, .pkey = 0xffff,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.port_mtu = 4096,
	};
	bool rc = qi <= RC1, ud = qi == UD;

	check(!urxe_engine_qp_modify(&f->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			(ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)));
	a.state = IBV_QPS_RTR;
	a.dest_qpn = w.q[f->peer].qp.qpn;
	a.rq_psn = psn;
	a.path_mtu = 1024;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.dgid = a.sgid = gid_v4_local;
	a.hop_limit = 64;
	check(!urxe_engine_qp_modify(&f->qp, &a, IBV_QP_STATE | (ud ? 0 :
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN) | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
			IBV_QP_MIN_RNR_TIMER : 0)));
	a.state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 3;
	a.rnr_retry = 2;
	a.max_rd_atomic = 2;
	check(!urxe_engine_qp_modify(&f->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			(rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MAX_QP_RD_ATOMIC : 0)));
}

/* Takes a QP that ended in ERR back to RTS; what was posted is gone. */
static void qp_reset(unsigned int qi)
{
	struct fq *f = &w.q[qi];
	struct urxe_qp_attr a = { .state = IBV_QPS_RESET };

	poll_cq(qi);
	check(!urxe_engine_qp_modify(&f->qp, &a, IBV_QP_STATE));
	f->sq_next_cqe = f->sq_seq;
	f->rq_next_cqe = f->rq_seq;
}

static void reconnect_errored(void)
{
	unsigned int qi;

	for (qi = 0; qi < NQP; qi++) {
		unsigned int peer = w.q[qi].peer;
		uint32_t psn;

		if (w.q[qi].qp.attr.state != IBV_QPS_ERR &&
		    w.q[peer].qp.attr.state != IBV_QPS_ERR)
			continue;
		/* New PSNs each time, near and across the wrap. */
		psn = (0xfffff8u + ++w.reconnects * 0x9e3779u) & URXE_PSN_MASK;
		if (trace)
			fprintf(stderr, "fuzz_rx: QP %u/%u in ERR: reconnect, PSN 0x%06x\n",
				qi, peer, psn);
		stats.reconnects++;
		qp_reset(qi);
		if (peer != qi)
			qp_reset(peer);
		qp_connect(qi, psn);
		if (peer != qi)
			qp_connect(peer, psn);
	}
}

/* Completions taken, errors repaired, receives and sends topped up. */
static void housekeeping(void)
{
	unsigned int qi;

	urxe_engine_progress(w.eng);
	check_queues();
	for (qi = 0; qi < NQP; qi++)
		poll_cq(qi);
	reconnect_errored();
	for (qi = 0; qi < NQP; qi++) {
		struct fq *f = &w.q[qi];
		bool posted = false;

		while (atomic_load(&f->qp.rq.prod) - atomic_load(&f->qp.rq.cons) <
		       RQ_FILL)
			post_recv(qi);
		while (atomic_load(&f->qp.sq.prod) - atomic_load(&f->qp.sq.cons) <
		       SQ_BUSY) {
			post_send(qi);
			posted = true;
		}
		if (posted)
			urxe_engine_kick(&f->qp);
	}
}

/* ---- the world ---- */

static uint8_t *mrbuf[NMR];

static void mr_init(unsigned int i, size_t len, uint64_t iova, uint32_t pd,
		    unsigned int access, size_t misalign)
{
	struct urxe_mem *m = &w.mr[i];

	/* Kept from input to input (page faults cost), cleared each time. */
	if (!mrbuf[i])
		mrbuf[i] = malloc(len + misalign);
	check(mrbuf[i]);
	memset(mrbuf[i], 0, len + misalign);
	m->addr = mrbuf[i] + misalign;
	m->iova = iova;
	m->length = len;
	m->pd = pd;
	m->access = access;
	check(urxe_engine_mem_add(w.eng, m) > 0);
}

static void qp_init(unsigned int qi, enum ibv_qp_type type, unsigned int peer)
{
	struct fq *f = &w.q[qi];

	f->peer = peer;
	f->qp.type = type;
	f->qp.pd = PD;
	f->qp.fatal = qp_event;
	check(!urxe_cq_ring_init(&f->cq, SQ_DEPTH + RQ_DEPTH));
	f->qp.scq = f->qp.rcq = &f->cq;
	check(!urxe_wq_init(&f->qp.sq, SQ_DEPTH, 2, 64,
			    sizeof(struct urxe_send_wqe)));
	check(!urxe_wq_init(&f->qp.rq, RQ_DEPTH, 2, 0,
			    sizeof(struct urxe_recv_wqe)));
	check(!urxe_engine_qp_add(w.eng, &f->qp));
}

/*
 * What urxe_engine_create() sets in the fields an engine changes as QPs
 * and keys come and go.  Creating an engine per input would cost more
 * than the input (a 2 MiB key table under ASan); an engine whose QPs and
 * keys are all gone, with these fields set back, hands out the same QPNs
 * and keys and behaves as a new one.  White box: the plain driver checks
 * it, running every file on a rewound and on a new engine (digests).
 */
static struct {
	uint32_t qp_next, key_next;
	uint8_t key_tag;
	uint64_t deadline_hint;
} fresh;

static void engine_new(void)
{
	struct urxe_engine_conf conf = {
		.slot = SLOT, .ops = &ops, .gid0 = gid_v4_local,
	};

	check(!urxe_engine_create(&conf, &w.eng));
	fresh.qp_next = w.eng->qp_next;
	fresh.key_next = w.eng->key_next;
	fresh.key_tag = w.eng->key_tag;
	fresh.deadline_hint = atomic_load(&w.eng->deadline_hint);
}

static void engine_rewind(void)
{
	struct urxe_engine *e = w.eng;
	unsigned int i;

	check(!e->nlive && !e->pending && !e->ntx && !e->acct && !e->stats);
	e->qp_next = fresh.qp_next;
	e->key_next = fresh.key_next;
	e->key_tag = fresh.key_tag;
	atomic_store(&e->deadline_hint, fresh.deadline_hint);
	atomic_store(&e->timer_moved, false);
	atomic_store(&e->work, false);
	for (i = 0; i < URXE_CNT__COUNT; i++)
		atomic_store(&e->cnt[i], 0);
}

/* MRs, QPs connected, receives and sends posted: on a new engine or not. */
static void world_init(bool new_engine)
{
	unsigned int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct wire_pkt *wire = w.wire;
	struct urxe_engine *eng = w.eng;
	unsigned int qi;

	memset(&w, 0, sizeof(w));
	w.wire = wire ? wire : malloc(WIRE_SLOTS * sizeof(*w.wire));
	check(w.wire);
	w.now = 1000000000ull;
	w.eng = eng;
	if (new_engine || !w.eng) {
		urxe_engine_destroy(w.eng);
		engine_new();
	} else {
		engine_rewind();
	}
	mr_init(MR0, 65536, 0x100000000ull, PD, all, 0);
	/* No remote write or atomic; its range ends at the top of the VA space. */
	mr_init(MR1, 8192, 0xffffffffffffe000ull, PD,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0);
	mr_init(MR2, 4096, 0x200000000ull, PD + 1, all, 0);	/* another PD */
	mr_init(MR3, 4096, 0x300000000ull, PD, all, 4);	/* host misaligned */
	qp_init(RC0, IBV_QPT_RC, RC1);
	qp_init(RC1, IBV_QPT_RC, RC0);
	qp_init(UC0, IBV_QPT_UC, UC1);
	qp_init(UC1, IBV_QPT_UC, UC0);
	qp_init(UD, IBV_QPT_UD, UD);
	for (qi = 0; qi < NQP; qi++)
		qp_connect(qi, 0xfffff0);
	housekeeping();
}

static void world_fini(bool keep_engine)
{
	uint64_t cnt[URXE_CNT__COUNT];
	unsigned int i;

	urxe_engine_counters(w.eng, cnt);
	for (i = 0; i < URXE_CNT__COUNT; i++)
		stats.cnt[i] += cnt[i];
	for (i = 0; i < NQP; i++) {
		urxe_engine_qp_remove(w.eng, &w.q[i].qp);
		urxe_wq_fini(&w.q[i].qp.sq);
		urxe_wq_fini(&w.q[i].qp.rq);
		urxe_cq_ring_fini(&w.q[i].cq);
	}
	for (i = 0; i < NMR; i++) {
		check(!urxe_engine_mem_remove(w.eng, &w.mr[i]));
		if (!keep_engine) {
			free(mrbuf[i]);
			mrbuf[i] = NULL;
		}
	}
	if (!keep_engine) {
		urxe_engine_destroy(w.eng);
		w.eng = NULL;
	}
}

static void print_stats(void)
{
	unsigned int i;

	if (w.eng)
		world_fini(false);
	free(w.wire);
	w.wire = NULL;
	if (!stats.print)
		return;
	fprintf(stderr, "fuzz_rx: %llu inputs, %llu frames into the engine "
		"(%llu raw, %llu fed back from the wire), %llu reconnects\n",
		(unsigned long long)stats.inputs,
		(unsigned long long)stats.frames, (unsigned long long)stats.raw,
		(unsigned long long)stats.fed_back,
		(unsigned long long)stats.reconnects);
	for (i = 0; i < URXE_CNT__COUNT; i++)
		fprintf(stderr, "fuzz_rx:   %-24s %llu\n", urxe_counter_names[i],
			(unsigned long long)stats.cnt[i]);
}

/* ---- the entry points ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *p = getenv("URXE_FUZZ_PERSIST");
	int i;

	trace = getenv("URXE_FUZZ_TRACE") && atoi(getenv("URXE_FUZZ_TRACE"));
	for (i = 1; i < *argc; i++)
		if (!strcmp((*argv)[i], "-print_final_stats=1"))
			stats.print = true;
	if (p && atoi(p) > 0)
		persist = (unsigned int)atoi(p);
	world_init(true);
	atexit(print_stats);
	return 0;
}

static void run_input(const uint8_t *data, size_t size)
{
	unsigned int nrec = 0, i;

	while (size >= 4 && nrec++ < MAX_RECORDS) {
		uint8_t flag = data[0], mode = data[1];
		uint16_t len = (uint16_t)(data[2] | data[3] << 8);

		data += 4;
		size -= 4;
		if (trace)
			fprintf(stderr, "fuzz_rx: record %u: flag 0x%02x mode 0x%02x "
				"len %u\n", nrec, flag, mode, len);
		if ((flag & 7) == 6) {
			wire_op(len);
		} else if ((flag & 7) == 7) {
			w.now += (uint64_t)len * 50000;
		} else {
			if (len > size)
				len = (uint16_t)size;
			frame_record(flag, mode, data, len);
			data += len;
			size -= len;
		}
		housekeeping();
	}
	/* Let the real traffic play out what the frames started. */
	for (i = 0; i < DRAIN_ROUNDS; i++) {
		wire_op(0);
		w.now += 1000000;
		housekeeping();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (stats.inputs++ && stats.inputs % persist == 0) {
		world_fini(true);
		world_init(false);
	}
	run_input(data, size);
	return 0;
}

#ifndef URXE_FUZZ_LIBFUZZER
/* ---- the plain driver: regressions and corpus, no libFuzzer ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex text to bytes in place; '#' starts a comment. */
static size_t unhex(uint8_t *buf, size_t len)
{
	size_t i, n = 0;
	int hi = -1;

	for (i = 0; i < len; i++) {
		int v = hexval(buf[i]);

		if (buf[i] == '#') {
			while (i < len && buf[i] != '\n')
				i++;
			continue;
		}
		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			buf[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return n;
}

static int run_file(const char *path)
{
	size_t len, plen = strlen(path);
	uint64_t d;
	uint8_t *buf;
	FILE *fp = fopen(path, "rb");
	long sz;

	if (!fp || fseek(fp, 0, SEEK_END) || (sz = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET)) {
		perror(path);
		if (fp)
			fclose(fp);
		return 1;
	}
	buf = malloc((size_t)sz + 1);
	check(buf);
	len = fread(buf, 1, (size_t)sz, fp);
	fclose(fp);
	if (plen > 4 && !strcmp(path + plen - 4, ".hex"))
		len = unhex(buf, len);
	LLVMFuzzerTestOneInput(buf, len);
	d = w.digest;
	/* Again on a new engine: a rewound one must behave the same. */
	world_fini(false);
	world_init(true);
	run_input(buf, len);
	fprintf(stderr, "fuzz_rx: %s (%zu bytes): digest %016llx\n", path, len,
		(unsigned long long)d);
	if (w.digest != d)
		fatal("%s: digest %016llx on a new engine", path,
		      (unsigned long long)w.digest);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's files, in name order (dot files skipped). */
static int run_dir(const char *dir, unsigned int *nfiles)
{
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d) {
		perror(dir);
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		check(names);
		names[n] = strdup(de->d_name);
		check(names[n++]);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc |= run_file(path);
		(*nfiles)++;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned int nfiles = 0;
	struct stat st;
	int i, rc = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	stats.print = true;
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) {
			rc |= run_dir(argv[i], &nfiles);
		} else {
			rc |= run_file(argv[i]);
			nfiles++;
		}
	}
	fprintf(stderr, "fuzz_rx: %u file(s) run%s\n", nfiles,
		rc ? ", some unreadable" : "");
	return rc;
}
#endif
