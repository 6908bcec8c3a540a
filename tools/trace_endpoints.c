// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who talks to whom.  A packet's destination is in its headers (address,
 * BTH DestQP); its source QP only for UD (DETH SrcQP).  RC, UC and XRC
 * name no source QP: a connected QP sends everything to one peer, so the
 * source is the peer of the destination, learned
 *   1. from the responses: an ACK, READ response or atomic ACK from B to
 *      QP X at A answers a request from A to some QP Y at B with the PSN
 *      it carries (an ACK the last PSN it acknowledges, a READ response
 *      one of the PSNs its READ request reserved): X and Y are peers;
 *   2. else, between two addresses with exactly one QP receiving either
 *      way (UC, a capture of one side's requests): those two.
 * A source still unknown is drawn as the address with "qp ?".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/util.h>
#include <urxe/wire.h>

#include "trace.h"

#define PAIR_LOOKBACK 1024	/* packets back to look for the request */

struct pairs {
	struct trace_ep (*v)[2];
	unsigned int n, cap;
};

static bool ep_is(const struct trace_ep *e, const uint8_t *gid, uint32_t qpn)
{
	return e->qpn == qpn && urxe_gid_eq(e->gid, gid);
}

/* The peer of QP @qpn at @gid; NULL if none is known. */
static const struct trace_ep *peer_of(const struct pairs *ps,
				      const uint8_t *gid, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < ps->n; i++) {
		if (ep_is(&ps->v[i][0], gid, qpn))
			return &ps->v[i][1];
		if (ep_is(&ps->v[i][1], gid, qpn))
			return &ps->v[i][0];
	}
	return NULL;
}

static int add_pair(struct pairs *ps, const uint8_t *ga, uint32_t qa,
		    const uint8_t *gb, uint32_t qb)
{
	if (peer_of(ps, ga, qa) || peer_of(ps, gb, qb))
		return 0;		/* the first answer stands */
	if (ps->n == ps->cap) {
		unsigned int cap = ps->cap ? ps->cap * 2 : 16;
		void *v = realloc(ps->v, cap * sizeof(ps->v[0]));

		if (!v)
			return -ENOMEM;
		ps->v = v;
		ps->cap = cap;
	}
	memcpy(ps->v[ps->n][0].gid, ga, 16);
	ps->v[ps->n][0].qpn = qa;
	memcpy(ps->v[ps->n][1].gid, gb, 16);
	ps->v[ps->n][1].qpn = qb;
	ps->n++;
	return 0;
}

/* A well-formed packet of a connected transport (RC, UC, XRC). */
static bool connected(const struct trace_pkt *p)
{
	enum urxe_transport t = urxe_opcode_transport(p->bth.opcode);

	return !p->hidden && !(p->marks & TM_MALFORMED) &&
	       (urxe_opinfo(p->bth.opcode)->flags & URXE_F_VALID) &&
	       (t == URXE_TR_RC || t == URXE_TR_UC || t == URXE_TR_XRC);
}

/* Response @r answers request @q (same PSN, or within a READ's). */
static bool answers(const struct trace_pkt *r, const struct trace_pkt *q)
{
	const struct urxe_opinfo *oi = urxe_opinfo(q->bth.opcode);
	int32_t d = urxe_psn_diff(r->bth.psn, q->bth.psn);

	if (!(oi->flags & URXE_F_REQ) || !urxe_gid_eq(q->src, r->dst) ||
	    !urxe_gid_eq(q->dst, r->src))
		return false;
	if (oi->flags & URXE_F_READ)
		return d >= 0 && d <= (int32_t)((q->h.reth.len + 255) / 256);
	return d == 0;
}

static int learn_from_responses(const struct trace *tr, struct pairs *ps)
{
	unsigned int i, j;

	for (i = 0; i < tr->npkts; i++) {
		const struct trace_pkt *r = &tr->pkts[i];

		if (!connected(r) ||
		    !(urxe_opinfo(r->bth.opcode)->flags & URXE_F_RESP) ||
		    peer_of(ps, r->dst, r->bth.dqpn))
			continue;
		for (j = i; j-- > 0 && i - j <= PAIR_LOOKBACK;) {
			const struct trace_pkt *q = &tr->pkts[j];

			if (!connected(q) || !answers(r, q))
				continue;
			if (add_pair(ps, r->dst, r->bth.dqpn, q->dst, q->bth.dqpn))
				return -ENOMEM;
			break;
		}
	}
	return 0;
}

/* From one address to another: the QP receiving, 0 if none, 2 if many. */
struct way {
	uint8_t src[16], dst[16];
	uint32_t qpn;
	unsigned int n;
};

static struct way *way_of(struct way *w, unsigned int *n, const uint8_t *src,
			  const uint8_t *dst)
{
	unsigned int i;

	for (i = 0; i < *n; i++)
		if (urxe_gid_eq(w[i].src, src) && urxe_gid_eq(w[i].dst, dst))
			return &w[i];
	memcpy(w[*n].src, src, 16);
	memcpy(w[*n].dst, dst, 16);
	w[*n].n = 0;
	return &w[(*n)++];
}

static int learn_unique(const struct trace *tr, struct pairs *ps)
{
	struct way *w = calloc(tr->npkts ? tr->npkts : 1, sizeof(*w));
	unsigned int n = 0, i, j;
	int rc = 0;

	if (!w)
		return -ENOMEM;
	for (i = 0; i < tr->npkts; i++) {
		const struct trace_pkt *p = &tr->pkts[i];
		struct way *x;

		if (!connected(p))
			continue;
		x = way_of(w, &n, p->src, p->dst);
		if (!x->n || x->qpn != p->bth.dqpn)
			x->n = x->n ? 2 : 1;
		x->qpn = p->bth.dqpn;
	}
	for (i = 0; i < n && !rc; i++)
		for (j = 0; j < n && !rc; j++)
			if (w[i].n == 1 && w[j].n == 1 &&
			    urxe_gid_eq(w[i].src, w[j].dst) &&
			    urxe_gid_eq(w[i].dst, w[j].src))
				rc = add_pair(ps, w[i].dst, w[i].qpn, w[j].dst,
					      w[j].qpn);
	free(w);
	return rc;
}

/* The index of endpoint (@gid, @qpn), added if new; -1 out of memory. */
static int ep_index(struct trace *tr, const uint8_t *gid, uint32_t qpn)
{
	unsigned int i;
	struct trace_ep *e;

	for (i = 0; i < tr->neps; i++)
		if (ep_is(&tr->eps[i], gid, qpn))
			return (int)i;
	e = realloc(tr->eps, (tr->neps + 1) * sizeof(*e));
	if (!e)
		return -1;
	tr->eps = e;
	memcpy(e[tr->neps].gid, gid, 16);
	e[tr->neps].qpn = qpn;
	return (int)tr->neps++;
}

static int assign(struct trace *tr, const struct pairs *ps)
{
	unsigned int i;

	for (i = 0; i < tr->npkts; i++) {
		struct trace_pkt *p = &tr->pkts[i];
		const struct urxe_opinfo *oi = urxe_opinfo(p->bth.opcode);
		const struct trace_ep *peer = peer_of(ps, p->dst, p->bth.dqpn);
		uint32_t sqpn = TRACE_QPN_UNKNOWN;

		if (p->hidden)
			continue;
		if (!(p->marks & TM_MALFORMED) &&
		    (oi->hdrs & URXE_HDR_BIT(URXE_HDR_DETH)))
			sqpn = p->h.sqpn;
		else if (peer && urxe_gid_eq(peer->gid, p->src))
			sqpn = peer->qpn;
		p->from = ep_index(tr, p->src, sqpn);
		p->to = ep_index(tr, p->dst, p->bth.dqpn);
		if (p->from < 0 || p->to < 0)
			return -ENOMEM;
	}
	return 0;
}

int trace_endpoints(struct trace *tr)
{
	struct pairs ps = { 0 };
	int rc;

	rc = learn_from_responses(tr, &ps);
	if (!rc)
		rc = learn_unique(tr, &ps);
	if (!rc)
		rc = assign(tr, &ps);
	free(ps.v);
	return rc;
}
