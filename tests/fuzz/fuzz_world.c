// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_rx's world: an engine driven in this thread (capturing xmit, fake
 * clock), an RC pair, a UC pair and a UD QP in RTS, MRs open to remote
 * access, receives kept posted and sends kept in flight; completions are
 * checked as they come (each work request once, in order, on its own CQ),
 * QPs that end in ERR are reset and connected again.  RC1 and UC1 take
 * their receives from one SRQ: its receives complete once each, in any
 * order, on either QP's CQ.
 *
 * XRC: an INI QP sends to a TGT QP of domain XRCD_A, each request naming
 * one of the domain's XRC SRQs (XS0: PD, one SGE a WQE; XS1: PD + 1, six
 * SGEs); XSB belongs to another domain.  Now and then a request names XSB,
 * a number that is no SRQ's, or carries a key of the other SRQ's PD.  An
 * XRC SRQ's receives complete once each, on its own CQ, with the TGT
 * QP's number; XSB's are never taken; the TGT QP points at an SRQ (its
 * PD, its CQ) exactly while a message is under way.  Every SRQ's WQEs are
 * accounted for: posted and not completed = still in the ring + held by
 * a QP.  The XRC SRQs, their completions and the XRC checks are in
 * fuzz_xrc.c.
 */
#include <endian.h>
#include <string.h>

#include <urxe/wire.h>

#include "engine_int.h"
#include "fuzz_world.h"

struct fz_world fz;
struct fz_stats fz_stats;
bool fz_trace;

const union ibv_gid fz_gid_v4_local = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 1 } };
const union ibv_gid fz_gid_v4_peer = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 2 } };
const union ibv_gid fz_gid_v4_owner = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 3 } };
const union ibv_gid fz_gid_v6_local = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 1 } };
const union ibv_gid fz_gid_v6_peer = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 2 } };

/* ---- the engine's ops ---- */

/* Only the plain driver compares digests; libFuzzer need not pay for them. */
void fz_digest(const void *p, size_t n)
{
#ifndef URXE_FUZZ_LIBFUZZER
	const uint8_t *b = p;

	while (n--)
		fz.digest = (fz.digest ^ *b++) * 0x100000001b3ull;	/* FNV-1a */
#else
	(void)p;
	(void)n;
#endif
}

/* Payload may be pieces of registered memory (zero copy). */
static void gather(const struct urxe_pkt *pkt, uint8_t *to)
{
	uint32_t off = 0;
	unsigned int k;

	for (k = 0; k < pkt->niov; k++) {
		check(off + pkt->iov[k].iov_len <= WIRE_BUF);
		memcpy(to + off, pkt->iov[k].iov_base, pkt->iov[k].iov_len);
		off += (uint32_t)pkt->iov[k].iov_len;
	}
	check(off == pkt->len);
}

/*
 * Captures every packet; a full ring forgets its oldest.  Relayed ones
 * (to another process of the XRC domain) are checked and leave.
 */
static int wire_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	static uint8_t relay_buf[WIRE_BUF];
	unsigned int i;

	(void)priv;
	for (i = 0; i < n; i++) {
		struct wire_pkt *p;

		check(pkts[i].niov >= 1 && pkts[i].niov <= 4);
		check(pkts[i].len >= URXE_BTH_LEN + URXE_ICRC_LEN &&
		      pkts[i].len <= WIRE_BUF);
		check(!(pkts[i].len & 3));
		if (!memcmp(&pkts[i].dgid, &fz_gid_v4_owner,
			    sizeof(pkts[i].dgid))) {
			gather(&pkts[i], relay_buf);
			fz_xrc_relayed(relay_buf, pkts[i].len);
			fz_digest(relay_buf, pkts[i].len);
			continue;
		}
		if (fz.wire_tail - fz.wire_head == WIRE_SLOTS)
			fz.wire_head++;
		p = &fz.wire[fz.wire_tail++ % WIRE_SLOTS];
		gather(&pkts[i], p->data);
		p->len = pkts[i].len;
		p->sgid = pkts[i].sgid;
		p->dgid = pkts[i].dgid;
		p->sport = pkts[i].sport;
		fz_digest(p->data, p->len);
	}
	return (int)n;
}

static uint64_t fake_now(void *priv)
{
	(void)priv;
	return fz.now;
}

static const struct urxe_engine_ops ops = {
	.xmit = wire_xmit,
	.now = fake_now,
	.xrc_route = fz_xrc_route,
};

static void qp_event(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	struct fq *f = (struct fq *)(void *)qp;	/* qp is the first member */

	/* Last WQE Reached: a QP attached to the basic SRQ, never TGT. */
	check(ev == IBV_EVENT_QP_FATAL || ev == IBV_EVENT_QP_REQ_ERR ||
	      ev == IBV_EVENT_QP_ACCESS_ERR ||
	      (ev == IBV_EVENT_QP_LAST_WQE_REACHED && qp->srq == &fz.srq.s &&
	       qp->attr.state == IBV_QPS_ERR));
	if (fz_trace)
		fprintf(stderr, "fuzz_rx:   QP 0x%06x: event %d\n", qp->qpn, ev);
	f->events++;
}

/* The engine's own indices stay ordered: retired <= started <= posted. */
void fz_check_queues(void)
{
	unsigned int qi, k;

	for (qi = 0; qi < NQP; qi++) {
		const struct urxe_eqp *qp = &fz.q[qi].qp;
		uint32_t prod = atomic_load(&qp->sq.prod);
		uint32_t cons = atomic_load(&qp->sq.cons);

		if (qp->comp.sq_comp != cons || qp->req.sq_next - cons > prod - cons ||
		    prod - cons > SQ_DEPTH ||
		    atomic_load(&qp->rq.prod) - atomic_load(&qp->rq.cons) > RQ_DEPTH)
			fatal("QP 0x%x: send queue retired %u, next %u, posted %u; "
			      "receive queue taken %u, posted %u", qp->qpn, cons,
			      qp->req.sq_next, prod, atomic_load(&qp->rq.cons),
			      atomic_load(&qp->rq.prod));
	}
	if (fz_srq_queued(&fz.srq) > RQ_DEPTH)
		fatal("SRQ: %u taken, %u posted", atomic_load(&fz.srq.s.rq.cons),
		      atomic_load(&fz.srq.s.rq.prod));
	for (k = 0; k < NXSRQ; k++)
		if (fz_srq_queued(&fz.xs[k]) > RQ_DEPTH)
			fatal("XRC SRQ %u: %u taken, %u posted", k,
			      atomic_load(&fz.xs[k].s.rq.cons),
			      atomic_load(&fz.xs[k].s.rq.prod));
	fz_xrc_check();
}

void fz_trace_qps(void)
{
	unsigned int qi;

	for (qi = 0; qi < NQP; qi++) {
		const struct urxe_eqp *qp = &fz.q[qi].qp;

		fprintf(stderr, "fuzz_rx:     %u: state %d ePSN 0x%06x PSN 0x%06x "
			"acked 0x%06x sq %u/%u/%u rq %u/%u%s%s%s", qi,
			qp->attr.state, qp->resp.epsn, qp->req.psn, qp->comp.acked_psn,
			qp->comp.sq_comp, qp->req.sq_next, atomic_load(&qp->sq.prod),
			atomic_load(&qp->rq.cons), atomic_load(&qp->rq.prod),
			qp->resp.rq_active ? " recv-active" : "",
			qp->resp.wr_mem ? " write-active" : "",
			qp->srq_held ? " srq-held" : "");
		fputc('\n', stderr);
	}
	fz_xrc_trace();
}

/* ---- work requests ---- */

struct send_op {
	enum ibv_wr_opcode op;
	uint32_t len;
	uint32_t remote_off;		/* in the peer's MR0 (XS1: MR4) */
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

/* XRC: both SRQs of the domain (xrc_srq), messages of one and more packets. */
static const struct send_op xrc_script[] = {
	{ IBV_WR_SEND, 3000, 0, IBV_SEND_SOLICITED },
	{ IBV_WR_RDMA_WRITE, 2500, 16384, 0 },
	{ IBV_WR_RDMA_READ, 5000, 24576, 0 },
	{ IBV_WR_SEND_WITH_IMM, 100, 0, 0 },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 256, 0 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 1024, 20480, 0 },
	{ IBV_WR_SEND, 40, 0, IBV_SEND_INLINE },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, 8, 256, IBV_SEND_FENCE },
	{ IBV_WR_RDMA_READ, 2000, 24576, 0 },
	{ IBV_WR_SEND, 0, 0, 0 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 0, 20480, 0 },
	{ IBV_WR_SEND_WITH_INV, 2100, 0, 0 },
};

static const uint8_t xrc_srq[] = {
	XS0, XS1, XS0, XS1, XS1, XS0, XS1, XS0, XS1, XS0, XS1, XS1,
};

static const struct send_op ud_script[] = {
	{ IBV_WR_SEND, 500, 0, 0 },
	{ IBV_WR_SEND_WITH_IMM, 40, 0, IBV_SEND_INLINE },
	{ IBV_WR_SEND, 1024, 0, 0 },
};

/*
 * The oracle for completion opcodes, written from ibv_post_send(3),
 * ibv_poll_cq(3) and IBA 11.4.2.1 (Poll for Completion), not from the
 * engine's completer: for each opcode a WR is posted with, what the
 * requester's completion reports, and whether the operation consumes a
 * receive WQE at the responder and, if so, what that completion reports
 * (opcode and the IBV_WC_WITH_IMM / IBV_WC_WITH_INV flags).  The man page
 * promises the opcode only for successful completions; urxe reports it
 * for failed and flushed ones too, and the send side is held to that.
 */
static const struct wc_expect {
	enum ibv_wr_opcode wr;
	enum ibv_wc_opcode send;	/* at the requester */
	bool recv;			/* consumes a receive WQE */
	enum ibv_wc_opcode recv_op;	/* ... and completes it as */
	unsigned int recv_flags;
} wc_table[] = {
	{ IBV_WR_SEND, IBV_WC_SEND, true, IBV_WC_RECV, 0 },
	{ IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, true, IBV_WC_RECV,
	  IBV_WC_WITH_IMM },
	{ IBV_WR_SEND_WITH_INV, IBV_WC_SEND, true, IBV_WC_RECV,
	  IBV_WC_WITH_INV },
	{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, false, 0, 0 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE, true,
	  IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_WITH_IMM },
	{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, false, 0, 0 },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP, false, 0, 0 },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, false, 0, 0 },
	{ IBV_WR_LOCAL_INV, IBV_WC_LOCAL_INV, false, 0, 0 },
	{ IBV_WR_BIND_MW, IBV_WC_BIND_MW, false, 0, 0 },
};

#define WC_TABLE_N (sizeof(wc_table) / sizeof(wc_table[0]))

/* The requester's completion opcode for a WR posted as @op. */
static enum ibv_wc_opcode wc_op(enum ibv_wr_opcode op)
{
	size_t i;

	for (i = 0; i < WC_TABLE_N; i++)
		if (wc_table[i].wr == op)
			return wc_table[i].send;
	fatal("no expected completion for WR opcode %d", op);
}

/*
 * A successful receive completion is one the table allows: the opcode
 * and immediate/invalidate flags of some operation that consumes a
 * receive WQE.
 */
static void check_recv_kind(const struct ibv_wc *wc)
{
	unsigned int fl = wc->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
	size_t i;

	if (wc->status != IBV_WC_SUCCESS)
		return;
	for (i = 0; i < WC_TABLE_N; i++)
		if (wc_table[i].recv && wc_table[i].recv_op == wc->opcode &&
		    wc_table[i].recv_flags == fl)
			return;
	fatal("QP 0x%x: receive completed as opcode %d, flags 0x%x",
	      wc->qp_num, wc->opcode, wc->wc_flags);
}

/*
 * An INI QP's WQE names the XRC SRQ its script says, with a key of that
 * SRQ's PD; now and then XSB (another domain), a number that is a QP's
 * (no SRQ's), or a key of the other SRQ's PD: remote access errors.
 */
static void xrc_dest(const struct fq *f, struct urxe_send_wqe *s,
		     const struct send_op *o)
{
	unsigned int xs = xrc_srq[o - xrc_script];
	const struct urxe_mem *m = &fz.mr[xs == XS1 ? MR4 : MR0];
	uint32_t k = f->sq_seq % 64;

	_Static_assert(sizeof(xrc_srq) == sizeof(xrc_script) /
		       sizeof(xrc_script[0]), "an SRQ for each XRC send");
	s->remote_qpn = k == 45 ? fz.xs[XSB].s.srqn :
			k == 53 ? fz.q[INI].qp.qpn : fz.xs[xs].s.srqn;
	if (k == 59)
		m = &fz.mr[xs == XS1 ? MR0 : MR4];
	s->remote_addr = m->iova + o->remote_off;
	s->rkey = m->rkey;
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
	s->remote_addr = fz.mr[MR0].iova + o->remote_off;
	s->rkey = fz.mr[MR0].rkey;
	s->compare_add = 5;
	s->swap = f->sq_seq;
	s->remote_qpn = f->qp.qpn;		/* UD: to itself */
	if (qi == INI)
		xrc_dest(f, s, o);
	s->remote_qkey = f->qp.attr.qkey;
	s->dgid = fz_gid_v4_local;
	s->hop_limit = 64;
	s->state = URXE_WQE_POSTED;
	if (o->flags & IBV_SEND_INLINE) {
		memset(s->sge, 0x5a, o->len);
		return;
	}
	s->num_sge = 1;
	/* Now and then a key of another PD: a local protection error. */
	s->sge[0].lkey = fz.mr[f->sq_seq % 64 == 37 ? MR2 : MR0].lkey;
	s->sge[0].length = o->len;
	s->sge[0].addr = fz.mr[MR0].iova +
		(o->op == IBV_WR_RDMA_READ ? 40960 :
		 o->len == 8 ? 512 : 0);
}

static void post_send(unsigned int qi)
{
	struct fq *f = &fz.q[qi];
	const struct send_op *script = qi == INI ? xrc_script :
				       qi == UD ? ud_script :
				       qi >= UC0 ? uc_script : rc_script;
	unsigned int n = qi == INI ? sizeof(xrc_script) / sizeof(xrc_script[0]) :
			 qi == UD ? sizeof(ud_script) / sizeof(ud_script[0]) :
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
 * one in two SGEs, one in MR1; now and then an empty or a tiny one, or one
 * with a key of another PD.
 */
static void fill_recv(struct fq *f, unsigned int qi, struct urxe_recv_wqe *r)
{
	uint32_t k = f->rq_seq % 32, len = k == 15 ? 0 : k == 31 ? 64 : 4136;

	r->wr_id = WR_ID(WR_RECV, qi, f->rq_seq);
	r->length = len;
	r->num_sge = len ? 1 : 0;
	r->sge[0].addr = fz.mr[MR0].iova + 32768 + (f->rq_seq % 4) * 4096;
	r->sge[0].length = len;
	r->sge[0].lkey = fz.mr[k == 23 ? MR2 : MR0].lkey;	/* another PD */
	if (len > 64 && (f->rq_seq & 1)) {
		r->num_sge = 2;
		r->sge[0].length = len / 2;
		r->sge[1].addr = fz.mr[MR1].iova + 4096;
		r->sge[1].length = len / 2;
		r->sge[1].lkey = fz.mr[MR1].lkey;
	}
}

static void post_recv(unsigned int qi)
{
	struct fq *f = &fz.q[qi];
	uint32_t p = atomic_load(&f->qp.rq.prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(&f->qp.rq, p);

	fill_recv(f, qi, r);
	f->rq_len[f->rq_seq % (sizeof(f->rq_len) / sizeof(f->rq_len[0]))] =
		r->length;
	f->rq_seq++;
	atomic_store(&f->qp.rq.prod, p + 1);
}

/* An SRQ's receives: numbered in a sequence of their own. */
static void post_srq_recv(struct fsrq *x)
{
	struct fq tmp = { .rq_seq = x->seq };
	uint32_t p = atomic_load(&x->s.rq.prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(&x->s.rq, p);

	check(x->nout < SRQ_MAX_OUT);
	if (x == &fz.srq)
		fill_recv(&tmp, SRQ_Q, r);
	else
		fz_xrc_fill_recv(x, (unsigned int)(x - fz.xs), r);
	check(r->num_sge <= x->s.rq.max_sge);
	x->out[x->nout] = x->seq++;
	x->out_len[x->nout++] = r->length;
	atomic_store(&x->s.rq.prod, p + 1);
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
	check_recv_kind(wc);
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    wc->byte_len > cap)
		fatal("QP 0x%x: receive %u of %u bytes got %u", f->qp.qpn, seq,
		      cap, wc->byte_len);
	f->rq_next_cqe++;
}

/* An SRQ receive completes once, within its size. */
void fz_check_srq_cqe(struct fsrq *x, const struct ibv_wc *wc, uint32_t seq)
{
	unsigned int i;

	for (i = 0; i < x->nout && x->out[i] != seq; i++)
		;
	if (i == x->nout)
		fatal("QP 0x%x: SRQ %u receive %u completed, not outstanding",
		      wc->qp_num, x->qid, seq);
	check_recv_kind(wc);
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    wc->byte_len > x->out_len[i])
		fatal("QP 0x%x: SRQ %u receive %u of %u bytes got %u", wc->qp_num,
		      x->qid, seq, x->out_len[i], wc->byte_len);
	x->nout--;
	x->out[i] = x->out[x->nout];
	x->out_len[i] = x->out_len[x->nout];
}

static void poll_cq(unsigned int qi)
{
	struct fq *f = &fz.q[qi];
	struct ibv_wc wc[16];
	int n, i;

	if (qi == TGT)
		return;			/* no CQ of its own */
	check(!f->cq.overflow);
	while ((n = urxe_cq_pop(&f->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t seq = (uint32_t)wc[i].wr_id;

			fz_digest(&wc[i].wr_id, sizeof(wc[i].wr_id));
			fz_digest(&wc[i].status, sizeof(wc[i].status));
			fz_digest(&wc[i].byte_len, sizeof(wc[i].byte_len));
			check(wc[i].qp_num == f->qp.qpn);
			if ((wc[i].wr_id >> 32 & 0xff) == SRQ_Q &&
			    (wc[i].wr_id & WR_RECV)) {
				if (f->qp.srq != &fz.srq.s)
					fatal("QP 0x%x: completion of SRQ receive %u",
					      f->qp.qpn, seq);
				fz_check_srq_cqe(&fz.srq, &wc[i], seq);
				continue;
			}
			/* Nothing of another queue: no XRC receive either. */
			if ((wc[i].wr_id >> 32 & 0xff) != qi)
				fatal("QP %u: completion of wr 0x%llx", qi,
				      (unsigned long long)wc[i].wr_id);
			check(wc[i].status <= IBV_WC_GENERAL_ERR);
			if (fz_trace && wc[i].status)
				fprintf(stderr, "fuzz_rx:   QP %u: wr 0x%llx status %d\n",
					qi, (unsigned long long)wc[i].wr_id,
					wc[i].status);
			if (qi == INI) {
				check(!(wc[i].wr_id & WR_RECV));
				if (wc[i].status)
					fz_stats.ini_err++;
				else
					fz_stats.ini_ok++;
			}
			if (wc[i].wr_id & WR_RECV)
				check_recv_cqe(f, &wc[i], seq);
			else
				check_send_cqe(f, &wc[i], seq);
		}
	}
}

static void poll_all(void)
{
	unsigned int i;

	for (i = 0; i < NQP; i++)
		poll_cq(i);
	for (i = 0; i < NXSRQ; i++)
		fz_xrc_poll(i);
}

/*
 * Once the CQs are drained, every receive of an SRQ posted and not
 * completed is in its ring or held by a QP (one each): none lost, none
 * taken twice.
 */
static void check_srq_account(const struct fsrq *x)
{
	unsigned int qi, held = 0;

	for (qi = 0; qi < NQP; qi++)
		held += fz.q[qi].qp.srq == &x->s && fz.q[qi].qp.srq_held;
	if (x->nout != fz_srq_queued(x) + held)
		fatal("SRQ %u: %u receives outstanding, %u in the ring, %u held",
		      x->qid, x->nout, fz_srq_queued(x), held);
}

/* ---- QP lifecycle ---- */

/*
 * Every third connection allows remote READ only: WRITEs, atomics fail.
 * INI and TGT get what their types use (the provider drops the rest); the
 * TGT QP stays in RTR every other time (a responder needs no more).
 */
static void qp_connect(unsigned int qi, uint32_t psn)
{
	struct fq *f = &fz.q[qi];
	struct urxe_qp_attr a = {
		.state = IBV_QPS_INIT, .qkey = 0x11111111, .pkey = 0xffff,
		.access = fz.reconnects % 3 == 2 ? IBV_ACCESS_REMOTE_READ :
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.port_mtu = 4096,
	};
	bool rc = qi <= RC1 || qi == INI || qi == TGT, ud = qi == UD;
	int no_req = qi == INI ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER :
		     qi == TGT ? IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY : 0;

	check(!urxe_engine_qp_modify(&f->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			(ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)));
	a.state = IBV_QPS_RTR;
	a.dest_qpn = fz.q[f->peer].qp.qpn;
	a.rq_psn = psn;
	a.path_mtu = 1024;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.dgid = a.sgid = fz_gid_v4_local;
	a.hop_limit = 64;
	check(!urxe_engine_qp_modify(&f->qp, &a, (IBV_QP_STATE | (ud ? 0 :
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN) | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
			IBV_QP_MIN_RNR_TIMER : 0)) & ~no_req));
	if (qi == TGT && !(fz.reconnects & 1))
		return;
	a.state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 3;
	a.rnr_retry = 2;
	a.max_rd_atomic = 2;
	check(!urxe_engine_qp_modify(&f->qp, &a, (IBV_QP_STATE | IBV_QP_SQ_PSN |
			(rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MAX_QP_RD_ATOMIC : 0)) & ~no_req));
}

/* Takes a QP that ended in ERR back to RTS; what was posted is gone. */
static void qp_reset(unsigned int qi)
{
	struct fq *f = &fz.q[qi];
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
		unsigned int peer = fz.q[qi].peer;
		uint32_t psn;

		if (fz.q[qi].qp.attr.state != IBV_QPS_ERR &&
		    fz.q[peer].qp.attr.state != IBV_QPS_ERR)
			continue;
		/* New PSNs each time, near and across the wrap. */
		psn = (0xfffff8u + ++fz.reconnects * 0x9e3779u) & URXE_PSN_MASK;
		if (fz_trace)
			fprintf(stderr, "fuzz_rx: QP %u/%u in ERR: reconnect, PSN 0x%06x\n",
				qi, peer, psn);
		fz_stats.reconnects++;
		qp_reset(qi);
		if (peer != qi)
			qp_reset(peer);
		qp_connect(qi, psn);
		if (peer != qi)
			qp_connect(peer, psn);
	}
}

/* Completions taken, errors repaired, receives and sends topped up. */
void fz_housekeeping(void)
{
	unsigned int qi, k;

	urxe_engine_progress(fz.eng);
	fz_check_queues();
	poll_all();
	reconnect_errored();
	poll_all();			/* what the resets flushed */
	check_srq_account(&fz.srq);
	for (k = 0; k < NXSRQ; k++)
		check_srq_account(&fz.xs[k]);
	while (!fz.rq_starved && fz_srq_queued(&fz.srq) < RQ_FILL)
		post_srq_recv(&fz.srq);
	for (k = 0; k < NXSRQ; k++)
		while (!fz.rq_starved && fz_srq_queued(&fz.xs[k]) < RQ_FILL)
			post_srq_recv(&fz.xs[k]);
	if (!atomic_load(&fz.xs[XS0].s.limit))
		atomic_store(&fz.xs[XS0].s.limit, 3);
	for (qi = 0; qi < NQP; qi++) {
		struct fq *f = &fz.q[qi];
		bool posted = false;

		/* (INI and TGT have no receive queue, TGT no send queue) */
		while (!fz.rq_starved && !f->qp.srq && f->qp.rq.max_wr &&
		       atomic_load(&f->qp.rq.prod) - atomic_load(&f->qp.rq.cons) <
		       RQ_FILL)
			post_recv(qi);
		while (f->qp.sq.max_wr &&
		       atomic_load(&f->qp.sq.prod) - atomic_load(&f->qp.sq.cons) <
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
	struct urxe_mem *m = &fz.mr[i];

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
	check(urxe_engine_mem_add(fz.eng, m) > 0);
}

/*
 * As the provider makes them: an INI QP has no receive queue and no
 * receive CQ; a TGT QP has no PD, queues or CQs, only its domain.
 */
static void qp_init(unsigned int qi, enum ibv_qp_type type, unsigned int peer,
		    bool srq)
{
	struct fq *f = &fz.q[qi];
	bool tgt = type == IBV_QPT_XRC_RECV, ini = type == IBV_QPT_XRC_SEND;

	f->peer = peer;
	f->qp.type = type;
	f->qp.pd = tgt ? 0 : PD;
	f->qp.xrcd = tgt ? XRCD_A : 0;
	f->qp.fatal = qp_event;
	if (!tgt) {
		check(!urxe_cq_ring_init(&f->cq, SQ_DEPTH + RQ_DEPTH));
		f->qp.scq = &f->cq;
		f->qp.rcq = ini ? NULL : &f->cq;
	}
	check(!urxe_wq_init(&f->qp.sq, tgt ? 0 : SQ_DEPTH, tgt ? 0 : 2,
			    tgt ? 0 : 64, sizeof(struct urxe_send_wqe)));
	check(!urxe_wq_init(&f->qp.rq, tgt || ini ? 0 : RQ_DEPTH, 2, 0,
			    sizeof(struct urxe_recv_wqe)));
	if (srq)
		check(!urxe_engine_srq_attach(&f->qp, &fz.srq.s));
	check(!urxe_engine_qp_add(fz.eng, &f->qp));
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
	uint32_t qp_next, key_next, key_count;
	uint64_t key_rng;
	uint64_t deadline_hint;
} fresh;

static void engine_new(void)
{
	struct urxe_engine_conf conf = {
		.slot = SLOT, .ops = &ops, .gid0 = fz_gid_v4_local,
		.key_seed = 0x6b6579,	/* the same keys on every engine */
	};

	check(!urxe_engine_create(&conf, &fz.eng));
	fresh.qp_next = fz.eng->qpt.qp_next;
	fresh.key_next = fz.eng->keyt.key_next;
	fresh.key_count = fz.eng->keyt.key_count;
	fresh.key_rng = fz.eng->keyt.key_rng;
	fresh.deadline_hint = atomic_load(&fz.eng->clk.deadline_hint);
}

static void engine_rewind(void)
{
	struct urxe_engine *e = fz.eng;
	unsigned int i;

	check(!e->qpt.nlive && !e->sched.pending && !e->txb.ntx && !e->ctr.acct && !e->ctr.stats);
	e->qpt.qp_next = fresh.qp_next;
	e->keyt.key_next = fresh.key_next;
	e->keyt.key_count = fresh.key_count;
	e->keyt.key_rng = fresh.key_rng;
	atomic_store(&e->clk.deadline_hint, fresh.deadline_hint);
	atomic_store(&e->clk.timer_moved, false);
	atomic_store(&e->work, false);
	for (i = 0; i < URXE_CNT__COUNT; i++)
		atomic_store(&e->ctr.cnt[i], 0);
}

/* MRs, QPs connected, receives and sends posted: on a new engine or not. */
void fz_world_init(bool new_engine)
{
	unsigned int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct wire_pkt *wire = fz.wire;
	struct urxe_engine *eng = fz.eng;
	unsigned int qi;

	memset(&fz, 0, sizeof(fz));
	fz.wire = wire ? wire : malloc(WIRE_SLOTS * sizeof(*fz.wire));
	check(fz.wire);
	fz.now = 1000000000ull;
	fz.eng = eng;
	if (new_engine || !fz.eng) {
		urxe_engine_destroy(fz.eng);
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
	mr_init(MR4, 65536, 0x400000000ull, PD + 1, all, 0);	/* XS1's PD */
	fz.srq.s.eng = fz.eng;
	fz.srq.s.pd = PD;
	fz.srq.qid = SRQ_Q;
	check(!urxe_wq_init(&fz.srq.s.rq, RQ_DEPTH, 2, 0,
			    sizeof(struct urxe_recv_wqe)));
	qp_init(RC0, IBV_QPT_RC, RC1, false);
	qp_init(RC1, IBV_QPT_RC, RC0, true);
	qp_init(UC0, IBV_QPT_UC, UC1, false);
	qp_init(UC1, IBV_QPT_UC, UC0, true);
	qp_init(UD, IBV_QPT_UD, UD, false);
	qp_init(INI, IBV_QPT_XRC_SEND, TGT, false);
	qp_init(TGT, IBV_QPT_XRC_RECV, INI, false);
	fz_xrc_init();
	for (qi = 0; qi < NQP; qi++)
		qp_connect(qi, 0xfffff0);
	fz_housekeeping();
}

void fz_world_fini(bool keep_engine)
{
	uint64_t cnt[URXE_CNT__COUNT];
	unsigned int i;

	urxe_engine_counters(fz.eng, cnt);
	for (i = 0; i < URXE_CNT__COUNT; i++) {
		fz_stats.cnt[i] += cnt[i];
		fz_stats.ini_cnt[i] += fz.q[INI].qp.cnt[i];
		fz_stats.tgt_cnt[i] += fz.q[TGT].qp.cnt[i];
	}
	for (i = 0; i < NQP; i++) {
		urxe_engine_qp_remove(fz.eng, &fz.q[i].qp);
		urxe_engine_srq_detach(&fz.q[i].qp);
		urxe_wq_fini(&fz.q[i].qp.sq);
		urxe_wq_fini(&fz.q[i].qp.rq);
		if (i != TGT)
			urxe_cq_ring_fini(&fz.q[i].cq);
	}
	urxe_wq_fini(&fz.srq.s.rq);
	fz_xrc_fini();	/* (after TGT: it flushed its WQE to an XRC CQ) */
	for (i = 0; i < NMR; i++) {
		check(!urxe_engine_mem_remove(fz.eng, &fz.mr[i]));
		if (!keep_engine) {
			free(mrbuf[i]);
			mrbuf[i] = NULL;
		}
	}
	if (!keep_engine) {
		urxe_engine_destroy(fz.eng);
		fz.eng = NULL;
	}
}

/* The frame counts alone (also every so often: a SIGINT skips atexit). */
void fz_print_frames(void)
{
	fprintf(stderr, "fuzz_rx: %llu inputs, %llu frames into the engine "
		"(%llu made by the fuzzer, %llu of them raw; %llu fed back from "
		"the wire), %llu reconnects\n",
		(unsigned long long)fz_stats.inputs,
		(unsigned long long)fz_stats.frames,
		(unsigned long long)(fz_stats.frames - fz_stats.fed_back),
		(unsigned long long)fz_stats.raw,
		(unsigned long long)fz_stats.fed_back,
		(unsigned long long)fz_stats.reconnects);
	fprintf(stderr, "fuzz_rx: XRC: %llu INI completions (%llu in error), "
		"%llu XRC SRQ receives (%llu in error), XS1 removed or added "
		"back %llu times, %llu requests relayed\n",
		(unsigned long long)(fz_stats.ini_ok + fz_stats.ini_err),
		(unsigned long long)fz_stats.ini_err,
		(unsigned long long)(fz_stats.xrecv_ok + fz_stats.xrecv_err),
		(unsigned long long)fz_stats.xrecv_err,
		(unsigned long long)fz_stats.xsrq_toggles,
		(unsigned long long)fz_stats.relayed);
}

void fz_print_stats(void)
{
	unsigned int i;

	if (fz.eng)
		fz_world_fini(false);
	free(fz.wire);
	fz.wire = NULL;
	if (!fz_stats.print)
		return;
	fz_print_frames();
	fprintf(stderr, "fuzz_rx:   %-24s %12s %12s %12s\n", "counter", "engine",
		"XRC INI", "XRC TGT");
	for (i = 0; i < URXE_CNT__COUNT; i++)
		fprintf(stderr, "fuzz_rx:   %-24s %12llu %12llu %12llu\n",
			urxe_counter_names[i], (unsigned long long)fz_stats.cnt[i],
			(unsigned long long)fz_stats.ini_cnt[i],
			(unsigned long long)fz_stats.tgt_cnt[i]);
}

/*
 * Every key reference the engine took is given back, but for the
 * multi-packet WRITE target a QP holds: checked at the end of the input
 * that leaked it (urxe_engine_mem_remove() would only fail at the next).
 */
void fz_check_mem_refs(void)
{
	unsigned int i, qi;

	for (i = 0; i < NMR; i++) {
		int want = 1;

		for (qi = 0; qi < NQP; qi++)
			want += fz.q[qi].qp.resp.wr_mem == &fz.mr[i];
		if (atomic_load(&fz.mr[i].refs) != want)
			fatal("MR%u: %d references, expected %d", i,
			      atomic_load(&fz.mr[i].refs), want);
	}
}
