// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_rx's world: an engine driven in this thread (capturing xmit, fake
 * clock), an RC pair, a UC pair and a UD QP in RTS, MRs open to remote
 * access, receives kept posted and sends kept in flight; completions are
 * checked as they come (each work request once, in order, on its own CQ),
 * QPs that end in ERR are reset and connected again.  RC1 and UC1 take
 * their receives from one SRQ: its receives complete once each, in any
 * order, on either QP's CQ.
 */
#include <endian.h>
#include <string.h>

#include "engine_int.h"
#include "fuzz_world.h"
#include "psn.h"

struct fz_world fz;
struct fz_stats fz_stats;
bool fz_trace;

const union ibv_gid fz_gid_v4_local = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 1 } };
const union ibv_gid fz_gid_v4_peer = { .raw = {
	[10] = 0xff, [11] = 0xff, 127, 117, 0, 2 } };
const union ibv_gid fz_gid_v6_local = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 1 } };
const union ibv_gid fz_gid_v6_peer = { .raw = {
	0x20, 0x01, 0x0d, 0xb8, [15] = 2 } };

/* ---- the engine's ops ---- */

/* Only the plain driver compares digests; libFuzzer need not pay for them. */
static void digest(const void *p, size_t n)
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

/* Captures every packet; a full ring forgets its oldest. */
static int wire_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	unsigned int i, k;
	uint32_t off;

	(void)priv;
	for (i = 0; i < n; i++) {
		struct wire_pkt *p;

		check(pkts[i].niov >= 1 && pkts[i].niov <= 4);
		check(pkts[i].len >= URXE_BTH_LEN + URXE_ICRC_LEN &&
		      pkts[i].len <= WIRE_BUF);
		check(!(pkts[i].len & 3));
		if (fz.wire_tail - fz.wire_head == WIRE_SLOTS)
			fz.wire_head++;
		p = &fz.wire[fz.wire_tail++ % WIRE_SLOTS];
		/* Payload may be pieces of registered memory (zero copy). */
		for (k = 0, off = 0; k < pkts[i].niov; k++) {
			check(off + pkts[i].iov[k].iov_len <= WIRE_BUF);
			memcpy(p->data + off, pkts[i].iov[k].iov_base,
			       pkts[i].iov[k].iov_len);
			off += (uint32_t)pkts[i].iov[k].iov_len;
		}
		check(off == pkts[i].len);
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
	return fz.now;
}

static const struct urxe_engine_ops ops = {
	.xmit = wire_xmit,
	.now = fake_now,
};

static void qp_event(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	struct fq *f = (struct fq *)(void *)qp;	/* qp is the first member */

	check(ev == IBV_EVENT_QP_FATAL || ev == IBV_EVENT_QP_REQ_ERR ||
	      ev == IBV_EVENT_QP_ACCESS_ERR ||
	      (ev == IBV_EVENT_QP_LAST_WQE_REACHED && qp->srq == &fz.srq &&
	       qp->attr.state == IBV_QPS_ERR));
	if (fz_trace)
		fprintf(stderr, "fuzz_rx:   QP 0x%06x: event %d\n", qp->qpn, ev);
	f->events++;
}

/* The engine's own indices stay ordered: retired <= started <= posted. */
void fz_check_queues(void)
{
	unsigned int qi;

	for (qi = 0; qi < NQP; qi++) {
		const struct urxe_eqp *qp = &fz.q[qi].qp;
		uint32_t prod = atomic_load(&qp->sq.prod);
		uint32_t cons = atomic_load(&qp->sq.cons);

		if (qp->sq_comp != cons || qp->sq_next - cons > prod - cons ||
		    prod - cons > SQ_DEPTH ||
		    atomic_load(&qp->rq.prod) - atomic_load(&qp->rq.cons) > RQ_DEPTH ||
		    atomic_load(&fz.srq.rq.prod) - atomic_load(&fz.srq.rq.cons) >
		    RQ_DEPTH)
			fatal("QP 0x%x: send queue retired %u, next %u, posted %u; "
			      "receive queue taken %u, posted %u", qp->qpn, cons,
			      qp->sq_next, prod, atomic_load(&qp->rq.cons),
			      atomic_load(&qp->rq.prod));
	}
}



void fz_trace_qps(void)
{
	unsigned int qi;

	for (qi = 0; qi < NQP; qi++) {
		const struct urxe_eqp *qp = &fz.q[qi].qp;

		fprintf(stderr, "fuzz_rx:     %u: state %d ePSN 0x%06x PSN 0x%06x "
			"acked 0x%06x sq %u/%u/%u rq %u/%u%s%s\n", qi,
			qp->attr.state, qp->epsn, qp->psn, qp->acked_psn,
			qp->sq_comp, qp->sq_next, atomic_load(&qp->sq.prod),
			atomic_load(&qp->rq.cons), atomic_load(&qp->rq.prod),
			qp->rq_active ? " recv-active" : "",
			qp->wr_mem ? " write-active" : "");
	}
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
	s->remote_addr = fz.mr[MR0].iova + o->remote_off;
	s->rkey = fz.mr[MR0].rkey;
	s->compare_add = 5;
	s->swap = f->sq_seq;
	s->remote_qpn = f->qp.qpn;		/* UD: to itself */
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

/* The SRQ's receives: as a QP's, numbered in a sequence of their own. */
static void post_srq_recv(void)
{
	struct fq tmp = { .rq_seq = fz.srq_seq };
	uint32_t p = atomic_load(&fz.srq.rq.prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(&fz.srq.rq, p);

	check(fz.srq_nout < SRQ_MAX_OUT);
	fill_recv(&tmp, SRQ_Q, r);
	fz.srq_out[fz.srq_nout] = fz.srq_seq++;
	fz.srq_out_len[fz.srq_nout++] = r->length;
	atomic_store(&fz.srq.rq.prod, p + 1);
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

/* An SRQ receive completes once, on a QP of the SRQ, within its size. */
static void check_srq_cqe(struct fq *f, const struct ibv_wc *wc, uint32_t seq)
{
	unsigned int i;

	if (f->qp.srq != &fz.srq)
		fatal("QP 0x%x: completion of SRQ receive %u", f->qp.qpn, seq);
	for (i = 0; i < fz.srq_nout && fz.srq_out[i] != seq; i++)
		;
	if (i == fz.srq_nout)
		fatal("QP 0x%x: SRQ receive %u completed, not outstanding",
		      f->qp.qpn, seq);
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    wc->byte_len > fz.srq_out_len[i])
		fatal("QP 0x%x: SRQ receive %u of %u bytes got %u", f->qp.qpn,
		      seq, fz.srq_out_len[i], wc->byte_len);
	fz.srq_nout--;
	fz.srq_out[i] = fz.srq_out[fz.srq_nout];
	fz.srq_out_len[i] = fz.srq_out_len[fz.srq_nout];
}

static void poll_cq(unsigned int qi)
{
	struct fq *f = &fz.q[qi];
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
			if ((wc[i].wr_id >> 32 & 0xff) == SRQ_Q &&
			    (wc[i].wr_id & WR_RECV)) {
				check_srq_cqe(f, &wc[i], seq);
				continue;
			}
			check((wc[i].wr_id >> 32 & 0xff) == qi);
			check(wc[i].status <= IBV_WC_GENERAL_ERR);
			if (fz_trace && wc[i].status)
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

/* Every third connection allows remote READ only: WRITEs, atomics fail. */
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
	bool rc = qi <= RC1, ud = qi == UD;

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
	unsigned int qi;

	urxe_engine_progress(fz.eng);
	fz_check_queues();
	for (qi = 0; qi < NQP; qi++)
		poll_cq(qi);
	reconnect_errored();
	while (!fz.rq_starved &&
	       atomic_load(&fz.srq.rq.prod) - atomic_load(&fz.srq.rq.cons) <
	       RQ_FILL)
		post_srq_recv();
	for (qi = 0; qi < NQP; qi++) {
		struct fq *f = &fz.q[qi];
		bool posted = false;

		while (!fz.rq_starved && !f->qp.srq &&
		       atomic_load(&f->qp.rq.prod) - atomic_load(&f->qp.rq.cons) <
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

static void qp_init(unsigned int qi, enum ibv_qp_type type, unsigned int peer,
		    bool srq)
{
	struct fq *f = &fz.q[qi];

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
	if (srq)
		check(!urxe_engine_srq_attach(&f->qp, &fz.srq));
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
	uint32_t qp_next, key_next;
	uint8_t key_tag;
	uint64_t deadline_hint;
} fresh;

static void engine_new(void)
{
	struct urxe_engine_conf conf = {
		.slot = SLOT, .ops = &ops, .gid0 = fz_gid_v4_local,
	};

	check(!urxe_engine_create(&conf, &fz.eng));
	fresh.qp_next = fz.eng->qp_next;
	fresh.key_next = fz.eng->key_next;
	fresh.key_tag = fz.eng->key_tag;
	fresh.deadline_hint = atomic_load(&fz.eng->deadline_hint);
}

static void engine_rewind(void)
{
	struct urxe_engine *e = fz.eng;
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
	fz.srq.eng = fz.eng;
	fz.srq.pd = PD;
	check(!urxe_wq_init(&fz.srq.rq, RQ_DEPTH, 2, 0,
			    sizeof(struct urxe_recv_wqe)));
	qp_init(RC0, IBV_QPT_RC, RC1, false);
	qp_init(RC1, IBV_QPT_RC, RC0, true);
	qp_init(UC0, IBV_QPT_UC, UC1, false);
	qp_init(UC1, IBV_QPT_UC, UC0, true);
	qp_init(UD, IBV_QPT_UD, UD, false);
	for (qi = 0; qi < NQP; qi++)
		qp_connect(qi, 0xfffff0);
	fz_housekeeping();
}

void fz_world_fini(bool keep_engine)
{
	uint64_t cnt[URXE_CNT__COUNT];
	unsigned int i;

	urxe_engine_counters(fz.eng, cnt);
	for (i = 0; i < URXE_CNT__COUNT; i++)
		fz_stats.cnt[i] += cnt[i];
	for (i = 0; i < NQP; i++) {
		urxe_engine_qp_remove(fz.eng, &fz.q[i].qp);
		urxe_engine_srq_detach(&fz.q[i].qp);
		urxe_wq_fini(&fz.q[i].qp.sq);
		urxe_wq_fini(&fz.q[i].qp.rq);
		urxe_cq_ring_fini(&fz.q[i].cq);
	}
	urxe_wq_fini(&fz.srq.rq);
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
	for (i = 0; i < URXE_CNT__COUNT; i++)
		fprintf(stderr, "fuzz_rx:   %-24s %llu\n", urxe_counter_names[i],
			(unsigned long long)fz_stats.cnt[i]);
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
			want += fz.q[qi].qp.wr_mem == &fz.mr[i];
		if (atomic_load(&fz.mr[i].refs) != want)
			fatal("MR%u: %d references, expected %d", i,
			      atomic_load(&fz.mr[i].refs), want);
	}
}
