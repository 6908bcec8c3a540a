// SPDX-License-Identifier: BSD-2-Clause
/*
 * The conversation in a capture, worked out from its packets alone:
 *  - order: by capture time, then file, then frame (stable, so that the
 *    same captures always draw the same), a dropped frame put back among
 *    the frames sent with it;
 *  - one arrow per packet: URXE_PCAP records a packet where it leaves and
 *    again where it arrives when both ends are captured; the receiver's
 *    copy (inbound, the same bytes between the same addresses, near in
 *    the capture) folds into the sender's;
 *  - endpoints: a packet goes to (destination address, BTH DestQP); it
 *    comes from (source address, DETH SrcQP) for UD, while RC, UC and
 *    XRC name no source QP: the peer is learned from the responses (an
 *    ACK to QP X answering a request with the PSN it acknowledges, sent
 *    to QP Y, pairs X and Y), else from the only QP either way between
 *    two addresses (trace_endpoints.c);
 *  - marks: a PSN sent again on a request stream ([retx]), an ACK of a PSN
 *    acknowledged already ([dup ack]), NAKs, RNR NAKs, and what the fault
 *    injector said about the frame.
 * Then the view: the packets the options keep and their columns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/util.h>
#include <urxe/wire.h>

#include "trace.h"

#define MERGE_WINDOW 256	/* packets either side to look for a copy */
#define STREAMS 8192		/* a power of two */
#define PAUSE_NS 1000000u

static int by_time(const void *a, const void *b)
{
	const struct trace_pkt *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static bool same_stream(const struct trace_pkt *a, const struct trace_pkt *b)
{
	return a->bth.dqpn == b->bth.dqpn && urxe_gid_eq(a->src, b->src) &&
	       urxe_gid_eq(a->dst, b->dst);
}

/*
 * The fault injector records a frame it drops when it drops it, before
 * the frames of the same send burst that did go out are recorded (after
 * the send): a dropped SEND_LAST would come before its SEND_FIRST.  Put
 * each dropped frame back after the frames of its burst (its stream's,
 * sent within the millisecond after it, PSNs between the frame sent
 * before it and its own: not retransmissions); it takes the time of the
 * last of them.
 */
/* The PSN of the stream's packet sent before @i; @i's own if none. */
static uint32_t psn_before(const struct trace *tr, unsigned int i)
{
	unsigned int j;

	for (j = i; j-- > 0;)
		if (tr->pkts[j].dir == 2 && same_stream(&tr->pkts[j], &tr->pkts[i]))
			return tr->pkts[j].bth.psn;
	return urxe_psn_add(tr->pkts[i].bth.psn, URXE_PSN_MASK);
}

static void place_drops(struct trace *tr)
{
	unsigned int i, j, last;

	for (i = tr->npkts; i-- > 0;) {
		struct trace_pkt d = tr->pkts[i];
		uint32_t before;

		if (!(d.marks & TM_DROP) || d.dir != 2)
			continue;
		before = psn_before(tr, i);
		last = i;
		for (j = i + 1; j < tr->npkts &&
		     tr->pkts[j].t_ns - d.t_ns < PAUSE_NS; j++) {
			const struct trace_pkt *q = &tr->pkts[j];

			if (q->dir != 2 || !same_stream(q, &d))
				continue;
			/* the rest of the burst: between the one before and d */
			if (urxe_psn_diff(q->bth.psn, d.bth.psn) >= 0 ||
			    urxe_psn_diff(q->bth.psn, before) <= 0)
				break;
			last = j;
		}
		if (last == i)
			continue;
		memmove(&tr->pkts[i], &tr->pkts[i + 1],
			(last - i) * sizeof(tr->pkts[0]));
		d.t_ns = tr->pkts[last - 1].t_ns;
		tr->pkts[last] = d;
	}
}

static bool same_bytes(const struct trace_pkt *a, const struct trace_pkt *b)
{
	return a->hash == b->hash && a->roce_len == b->roce_len &&
	       urxe_gid_eq(a->src, b->src) && urxe_gid_eq(a->dst, b->dst);
}

/* The sender's copy of inbound @i, nearest first; -1 if none. */
static int sender_copy(struct trace *tr, unsigned int i, uint8_t *used)
{
	const struct trace_pkt *p = &tr->pkts[i];
	bool mcast = urxe_gid_is_mcast(p->dst);
	unsigned int d;

	for (d = 1; d <= MERGE_WINDOW; d++) {
		long c[2] = { (long)i - (long)d, (long)i + (long)d };
		int k;

		for (k = 0; k < 2; k++) {
			const struct trace_pkt *q;

			if (c[k] < 0 || c[k] >= (long)tr->npkts)
				continue;
			q = &tr->pkts[c[k]];
			if (q->dir != 2 || (q->marks & TM_DROP) ||
			    (used[c[k]] && !mcast) || !same_bytes(p, q))
				continue;
			used[c[k]] = 1;
			return (int)c[k];
		}
	}
	return -1;
}

static int merge_copies(struct trace *tr)
{
	uint8_t *used = calloc(tr->npkts ? tr->npkts : 1, 1);
	unsigned int i;

	if (!used)
		return -ENOMEM;
	for (i = 0; i < tr->npkts; i++) {
		if (tr->pkts[i].dir != 1 || sender_copy(tr, i, used) < 0)
			continue;
		tr->pkts[i].hidden = true;
		tr->merged++;
	}
	free(used);
	return 0;
}

/* A stream: one sender's packets of one kind to one QP. */
struct stream {
	uint8_t src[16], dst[16];
	uint32_t dqpn;
	bool resp, used;
	uint32_t front;		/* the next new PSN */
};

static struct stream *stream_of(struct stream *t, const struct trace_pkt *p,
				bool resp)
{
	unsigned int h = p->bth.dqpn * 2654435761u + resp, i;

	for (i = 0; i < 16; i++)
		h = h * 31 + p->src[i] + p->dst[i] * 7u;
	for (i = 0; i < STREAMS; i++) {
		struct stream *s = &t[(h + i) & (STREAMS - 1)];

		if (!s->used) {
			memcpy(s->src, p->src, 16);
			memcpy(s->dst, p->dst, 16);
			s->dqpn = p->bth.dqpn;
			s->resp = resp;
			s->used = true;
			s->front = p->bth.psn;
			return s;
		}
		if (s->dqpn == p->bth.dqpn && s->resp == resp &&
		    urxe_gid_eq(s->src, p->src) && urxe_gid_eq(s->dst, p->dst))
			return s;
	}
	return NULL;
}

/* PSNs a request uses: a READ at least one per 4096 bytes it asks for. */
static uint32_t psn_span(const struct trace_pkt *p, const struct urxe_opinfo *oi)
{
	if (!(oi->flags & URXE_F_READ) || !p->h.reth.len)
		return 1;
	return (p->h.reth.len + 4095) / 4096;
}

static void mark_one(struct stream *t, struct trace_pkt *p)
{
	const struct urxe_opinfo *oi = urxe_opinfo(p->bth.opcode);
	enum urxe_transport tr = urxe_opcode_transport(p->bth.opcode);
	bool resp = oi->flags & URXE_F_RESP;
	struct stream *s;
	int32_t d;

	if (p->marks & TM_MALFORMED || !(oi->flags & URXE_F_VALID) ||
	    tr == URXE_TR_UD || tr == URXE_TR_UC)
		return;
	if (oi->flags & URXE_F_ACK) {
		uint8_t type = p->h.syndrome & URXE_AETH_TYPE_MASK;

		if (type == URXE_AETH_RNR_NAK)
			p->marks |= TM_RNR;
		else if (type == URXE_AETH_NAK)
			p->marks |= TM_NAK;
		if (type != URXE_AETH_ACK)
			return;		/* a NAK names the PSN expected */
	}
	s = stream_of(t, p, resp);
	if (!s)
		return;
	d = urxe_psn_diff(p->bth.psn, s->front);
	if (d < 0 && !(p->marks & (TM_DUP | TM_REORDER)))
		p->marks |= urxe_opcode_op(p->bth.opcode) == URXE_OP_ACK ? TM_DUPACK : TM_RETX;
	if (d >= 0)
		s->front = urxe_psn_add(p->bth.psn, resp ? 1 : psn_span(p, oi));
}

static int mark_all(struct trace *tr)
{
	struct stream *t = calloc(STREAMS, sizeof(*t));
	unsigned int i;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < tr->npkts; i++)
		if (!tr->pkts[i].hidden)	/* dropped ones count: sent twice is retx */
			mark_one(t, &tr->pkts[i]);
	free(t);
	return 0;
}

int trace_model(struct trace *tr)
{
	int rc;

	if (tr->npkts)		/* a capture of no RoCE: no array at all */
		qsort(tr->pkts, tr->npkts, sizeof(tr->pkts[0]), by_time);
	place_drops(tr);
	rc = merge_copies(tr);
	if (!rc)
		rc = mark_all(tr);
	if (!rc)
		rc = trace_endpoints(tr);
	return rc;
}

/* ---- what is drawn: the packets the options keep, and their columns ---- */

static bool shown(const struct trace *tr, const struct trace_pkt *p,
		  const struct trace_opts *o, uint64_t t0)
{
	uint64_t t = p->t_ns - t0;

	if (p->hidden || t < o->from_ns || t > o->to_ns)
		return false;
	return !o->have_qpn || tr->eps[p->from].qpn == o->qpn ||
	       tr->eps[p->to].qpn == o->qpn;
}

static int add_col(struct trace_view *v, int ep)
{
	if (v->col[ep] < 0) {
		v->ep_of_col[v->ncols] = ep;
		v->col[ep] = (int)v->ncols++;
	}
	return 0;
}

void trace_view_free(struct trace_view *v)
{
	free(v->idx);
	free(v->col);
	free(v->ep_of_col);
}

int trace_view_make(const struct trace *tr, const struct trace_opts *o,
		     struct trace_view *v)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->tr = tr;
	v->idx = calloc(tr->npkts + 1, sizeof(*v->idx));
	v->col = malloc((tr->neps + 1) * sizeof(*v->col));
	v->ep_of_col = calloc(tr->neps + 1, sizeof(*v->ep_of_col));
	if (!v->idx || !v->col || !v->ep_of_col) {
		trace_view_free(v);
		return -ENOMEM;
	}
	for (i = 0; i < tr->neps; i++)
		v->col[i] = -1;
	for (i = 0; i < tr->npkts && tr->pkts[i].hidden; i++)
		;
	v->t0 = i < tr->npkts ? tr->pkts[i].t_ns : 0;
	for (i = tr->npkts; i-- > 0 && tr->pkts[i].hidden;)
		;
	/* the whole capture's: a filter does not change the time unit */
	v->span = i < tr->npkts ? tr->pkts[i].t_ns - v->t0 : 0;
	for (i = 0; i < tr->npkts; i++) {
		const struct trace_pkt *p = &tr->pkts[i];

		if (!shown(tr, p, o, v->t0))
			continue;
		if (o->count && v->n == o->count)
			break;
		v->idx[v->n++] = i;
		add_col(v, p->from);
		add_col(v, p->to);
	}
	return 0;
}
