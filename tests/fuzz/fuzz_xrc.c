// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_rx's XRC SRQs and the checks of the XRC pair (fuzz_world.c has the
 * INI and TGT QPs themselves, their script and their reconnection).
 *
 * XS0 and XS1 belong to the TGT QP's domain: XS0 in PD with one SGE a
 * WQE (the smallest slot), XS1 in PD + 1 with six; XSB belongs to another
 * domain.  Each has its own CQ.  A receive of an XRC SRQ completes once,
 * on that CQ, with the TGT QP's number; the TGT QP points at XS0 or XS1
 * (their PD, their CQ) exactly while a message is under way; XSB is never
 * consumed from, nor XS1 while fz_xsrq_toggle() has it out of the table.
 * XRC SRQ numbers of slot SLOT + 1 stand for another process of the
 * domain: the TGT QP relays requests naming them, untouched.
 */
#include <string.h>

#include "engine_int.h"
#include "fuzz_world.h"

static const char *const xs_name[NXSRQ] = { "XS0", "XS1", "XSB" };

/* ---- relays to another process of the domain ---- */

/* The XRC SRQs of slot SLOT + 1 are another process's of the domain. */
bool fz_xrc_route(void *priv, const struct urxe_eqp *qp, uint32_t srqn,
		  union ibv_gid *gid)
{
	(void)priv;
	check(qp == &fz.q[TGT].qp);
	if (srqn >> URXE_QPN_INDEX_BITS != SLOT + 1)
		return false;
	*gid = fz_gid_v4_owner;
	return true;
}

/*
 * A request TGT relayed to the SRQ's owner: the frame being delivered,
 * BTH fields and the headers and payload after it as they came (only
 * reserved bits, the pad and the ICRC may be new).
 */
void fz_xrc_relayed(const uint8_t *p, uint32_t len)
{
	const uint8_t *f = fz.cur_frame;
	const struct urxe_opinfo *oi;
	uint32_t paylen;

	if (!f)
		fatal("a packet relayed, no frame being delivered");
	oi = urxe_opinfo(f[0]);
	paylen = fz.cur_len - oi->hdr_len - (f[1] >> 4 & 3) - URXE_ICRC_LEN;
	if (p[0] != f[0] || p[1] >> 7 != f[1] >> 7 || memcmp(p + 2, f + 2, 2) ||
	    memcmp(p + 5, f + 5, 3) || p[8] >> 7 != f[8] >> 7 ||
	    memcmp(p + 9, f + 9, 3) || len < oi->hdr_len + paylen +
	    URXE_ICRC_LEN || memcmp(p + URXE_BTH_LEN, f + URXE_BTH_LEN,
				    oi->hdr_len - URXE_BTH_LEN + paylen))
		fatal("relayed packet (%u bytes) differs from the request "
		      "(%u bytes)", len, fz.cur_len);
	fz.relayed++;
	fz_stats.relayed++;
}

/* ---- checks ---- */

/*
 * The TGT QP points at an XRC SRQ of its domain, still in the table, and
 * uses its PD and CQ, exactly while a message is under way (a receive WQE
 * held or being filled, a WRITE half placed).  XSB (another domain) is
 * never consumed from, nor XS1 while it is out of the table.
 */
void fz_xrc_check(void)
{
	const struct urxe_eqp *t = &fz.q[TGT].qp;
	bool busy = t->resp.rq_active || t->srq_held || t->resp.wr_mem;
	unsigned int k;

	if (!t->srq) {
		if (busy || t->pd || t->rcq)
			fatal("TGT QP 0x%x: no SRQ, yet receive %s/held %d/WRITE %s, "
			      "PD %u, CQ %p", t->qpn, t->resp.rq_active ? "active" : "idle",
			      t->srq_held, t->resp.wr_mem ? "active" : "idle", t->pd,
			      (void *)t->rcq);
	} else {
		for (k = 0; k < NXSRQ && t->srq != &fz.xs[k].s; k++)
			;
		if (k == NXSRQ || k == XSB || !fz.xs[k].added)
			fatal("TGT QP 0x%x: points at SRQ %p (XS%u%s)", t->qpn,
			      (void *)t->srq, k, k < NXSRQ && !fz.xs[k].added ?
			      ", removed" : "");
		if (!busy || t->pd != t->srq->pd || t->rcq != &fz.xs[k].cq)
			fatal("TGT QP 0x%x: at %s with no message under way (%d) "
			      "or PD %u (SRQ's %u) or another CQ", t->qpn,
			      xs_name[k], busy, t->pd, t->srq->pd);
	}
	if (atomic_load(&fz.xs[XSB].s.rq.cons) != 0 ||
	    !urxe_cq_empty(&fz.xs[XSB].cq))
		fatal("XRC SRQ of another domain consumed (%u taken)",
		      atomic_load(&fz.xs[XSB].s.rq.cons));
	if (!fz.xs[XS1].added &&
	    atomic_load(&fz.xs[XS1].s.rq.cons) != fz.xs[XS1].frozen_cons)
		fatal("XRC SRQ XS1 consumed from while removed");
}

void fz_xrc_trace(void)
{
	const struct urxe_eqp *t = &fz.q[TGT].qp;
	unsigned int k;

	for (k = 0; k < NXSRQ; k++)
		fprintf(stderr, "fuzz_rx:     %s 0x%06x%s: rq %u/%u, %u out%s\n",
			xs_name[k], fz.xs[k].s.srqn,
			fz.xs[k].added ? "" : " (removed)",
			atomic_load(&fz.xs[k].s.rq.cons),
			atomic_load(&fz.xs[k].s.rq.prod), fz.xs[k].nout,
			t->srq == &fz.xs[k].s ? ", TGT at it" : "");
}

/* ---- receives and completions ---- */

/*
 * An XRC SRQ's receives: 4136 bytes in the MR of its PD (XS0, XSB: MR0;
 * XS1: MR4), XS1's in one to six SGEs; now and then an empty or a tiny
 * one, or one whose last SGE has a key of another PD.
 */
void fz_xrc_fill_recv(const struct fsrq *x, unsigned int k,
		      struct urxe_recv_wqe *r)
{
	uint32_t m = x->seq % 32, len = m == 15 ? 0 : m == 31 ? 64 : 4136;
	const struct urxe_mem *mr = &fz.mr[k == XS1 ? MR4 : MR0];
	const struct urxe_mem *bad = &fz.mr[k == XS1 ? MR0 : MR2];
	uint32_t n = !len ? 0 : k == XS1 && len > 64 ? 1 + x->seq % 6 : 1, i;
	uint64_t base = mr->iova + 32768 + (x->seq % 4) * 4096;

	r->wr_id = WR_ID(WR_RECV, x->qid, x->seq);
	r->length = len;
	r->num_sge = n;
	for (i = 0; i < n; i++) {
		uint32_t a = len * i / n, b = len * (i + 1) / n;

		r->sge[i].addr = base + a;
		r->sge[i].length = b - a;
		r->sge[i].lkey = m == 23 && i == n - 1 ? bad->lkey : mr->lkey;
	}
}

/*
 * An XRC SRQ's CQ: its own receives only, each once, reported by the TGT
 * QP (the QP that took it, IBA A14: the CQE's QP number is the TGT QP's).
 */
void fz_xrc_poll(unsigned int k)
{
	struct fsrq *x = &fz.xs[k];
	struct ibv_wc wc[16];
	int n, i;

	check(!x->cq.overflow);
	while ((n = urxe_cq_pop(&x->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			fz_digest(&wc[i].wr_id, sizeof(wc[i].wr_id));
			fz_digest(&wc[i].status, sizeof(wc[i].status));
			fz_digest(&wc[i].byte_len, sizeof(wc[i].byte_len));
			if (!(wc[i].wr_id & WR_RECV) ||
			    (wc[i].wr_id >> 32 & 0xff) != x->qid)
				fatal("%s: completion of wr 0x%llx", xs_name[k],
				      (unsigned long long)wc[i].wr_id);
			if (wc[i].qp_num != fz.q[TGT].qp.qpn)
				fatal("%s: receive %u completed by QP 0x%x, not "
				      "TGT 0x%x", xs_name[k], (uint32_t)wc[i].wr_id,
				      wc[i].qp_num, fz.q[TGT].qp.qpn);
			check(wc[i].status <= IBV_WC_GENERAL_ERR);
			check(wc[i].status != IBV_WC_SUCCESS ||
			      wc[i].opcode == IBV_WC_RECV ||
			      wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
			if (fz_trace && wc[i].status)
				fprintf(stderr, "fuzz_rx:   %s: wr 0x%llx status %d\n",
					xs_name[k], (unsigned long long)wc[i].wr_id,
					wc[i].status);
			if (wc[i].status)
				fz_stats.xrecv_err++;
			else
				fz_stats.xrecv_ok++;
			fz_check_srq_cqe(x, &wc[i], (uint32_t)wc[i].wr_id);
		}
	}
}

/* ---- the XRC SRQs ---- */

/* XS0's limit fires when a WQE taken leaves fewer than 3 posted. */
static void limit_reached(struct urxe_esrq *srq)
{
	check(srq == &fz.xs[XS0].s && !atomic_load(&srq->limit));
	fz.xs[XS0].limits++;
}

/* An XRC SRQ of @xrcd: its ring (@max_sge a WQE), PD and CQ. */
static void xsrq_init(unsigned int k, uint64_t xrcd, uint32_t pd,
		      uint32_t max_sge)
{
	struct fsrq *x = &fz.xs[k];

	x->qid = XSRQ_Q(k);
	x->s.pd = pd;
	x->s.xrcd = xrcd;
	check(!urxe_wq_init(&x->s.rq, RQ_DEPTH, max_sge, 0,
			    sizeof(struct urxe_recv_wqe)));
	check(!urxe_cq_ring_init(&x->cq, 2 * RQ_DEPTH));
	x->s.cq = &x->cq;
	if (k == XS0)
		x->s.limit_reached = limit_reached;
	check(!urxe_engine_xsrq_add(fz.eng, &x->s));
	check(x->s.srqn >> URXE_QPN_INDEX_BITS == SLOT);
	x->added = true;
}

/* XS0 and XS1 of the TGT QP's domain (small and large WQEs), XSB not. */
void fz_xrc_init(void)
{
	xsrq_init(XS0, XRCD_A, PD, 1);
	xsrq_init(XS1, XRCD_A, PD + 1, 6);
	xsrq_init(XSB, XRCD_B, PD, 2);
	check(fz.xs[XS0].s.rq.stride < fz.xs[XS1].s.rq.stride);
}

/*
 * XS1 leaves the engine's table (a message the TGT QP has under way in it
 * is dropped, its WQE flushed), or comes back under a new number: WQEs
 * already posted at INI name the old one.
 */
void fz_xsrq_toggle(void)
{
	struct fsrq *x = &fz.xs[XS1];

	fz_stats.xsrq_toggles++;
	if (x->added) {
		urxe_engine_xsrq_remove(fz.eng, &x->s);
		check(!urxe_engine_xsrq_lookup(fz.eng, x->s.srqn));
		x->added = false;
		x->frozen_cons = atomic_load(&x->s.rq.cons);
	} else {
		check(!urxe_engine_xsrq_add(fz.eng, &x->s));
		check(urxe_engine_xsrq_lookup(fz.eng, x->s.srqn) == &x->s);
		x->added = true;
	}
	if (fz_trace)
		fprintf(stderr, "fuzz_rx: XS1 %s, number 0x%06x\n",
			x->added ? "added back" : "removed", x->s.srqn);
}

/* After the TGT QP's removal (it flushed the WQE it held to an XRC CQ). */
void fz_xrc_fini(void)
{
	unsigned int i;

	for (i = 0; i < NXSRQ; i++) {
		struct fsrq *x = &fz.xs[i];

		if (x->added)
			urxe_engine_xsrq_remove(fz.eng, &x->s);
		check(!urxe_engine_xsrq_lookup(fz.eng, x->s.srqn));
		urxe_wq_fini(&x->s.rq);
		urxe_cq_ring_fini(&x->cq);
	}
}
