// SPDX-License-Identifier: BSD-2-Clause
/*
 * The responder's receive side: the receive WQE a message fills (from
 * the QP's own receive queue, the consumer side of the ring the
 * application posts to, or held from its SRQ), the completions of
 * receives, UD's receives (with the 40 bytes in front), and the flush of
 * what a QP was given to receive.  Progress lock held throughout.
 */
#include <string.h>

#include <urxe/wire.h>

#include "engine_int.h"
#include "resp_int.h"

static void push_recv_cqe(struct urxe_eqp *qp, struct ibv_wc *wc, bool se)
{
	wc->qp_num = qp->qpn;
	urxe_cq_push(qp->rcq, wc, se);
	qp->eng->ctr.cqes++;
}

static struct urxe_recv_wqe *rq_head(struct urxe_eqp *qp)
{
	uint32_t cons = atomic_load_explicit(&qp->rq.cons,
					     memory_order_relaxed);

	if (cons == atomic_load_explicit(&qp->rq.prod, memory_order_acquire))
		return NULL;
	return urxe_wq_slot(&qp->rq, cons);
}

/*
 * Takes the oldest WQE of the QP's SRQ into the QP: other QPs share the
 * ring, so a message holds its own copy from its first packet on.  The
 * slot is released only after the copy (release store of cons).  Taking
 * one may fire the armed limit (SRQ Limit Reached: fewer WQEs posted than
 * the limit), which then disarms.
 */
static bool srq_take(struct urxe_eqp *qp)
{
	struct urxe_esrq *srq = qp->srq;
	struct urxe_wq *q = &srq->rq;
	uint32_t cons = atomic_load_explicit(&q->cons, memory_order_relaxed);
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_acquire);
	const struct urxe_recv_wqe *w;
	uint32_t lim;

	if (cons == prod)
		return false;
	w = urxe_wq_slot(q, cons);
	memcpy(qp->srq_wqe, w, sizeof(*w) + w->num_sge * sizeof(w->sge[0]));
	atomic_store_explicit(&q->cons, cons + 1, memory_order_release);
	qp->srq_held = true;
	/* What is left now, posts made meanwhile included. */
	prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	lim = atomic_load_explicit(&srq->limit, memory_order_relaxed);
	if (lim && prod - (cons + 1) < lim &&
	    atomic_compare_exchange_strong(&srq->limit, &lim, 0) &&
	    srq->limit_reached)
		srq->limit_reached(srq);
	return true;
}

/*
 * The receive WQE of the message in progress, or of the next one: the
 * head of the receive queue, or the WQE held from the SRQ (taking one if
 * none is held).  NULL: no receive posted (RNR).
 */
struct urxe_recv_wqe *urxe_recv_head(struct urxe_eqp *qp)
{
	if (!qp->srq)
		return rq_head(qp);
	if (!qp->srq_held && !srq_take(qp))
		return NULL;
	return qp->srq_wqe;
}

/* The receive WQE is completed: its slot (or the QP's hold) is free. */
static void rq_pop(struct urxe_eqp *qp)
{
	if (qp->srq) {
		qp->srq_held = false;
		return;
	}
	atomic_store_explicit(&qp->rq.cons, atomic_load(&qp->rq.cons) + 1,
			      memory_order_release);
}

/* Receive WQEs' keys belong to the SRQ's PD when there is one. */
uint32_t urxe_recv_pd(const struct urxe_eqp *qp)
{
	return qp->srq ? qp->srq->pd : qp->pd;
}

/*
 * What a RoCE UD receive reports in wc.sl: the network header type of the
 * packet, as mlx5 reports it (2 for IPv4, 1 for IPv6), since RoCEv2 carries
 * no service level.  Consumers read it to know where the destination
 * address sits in the 40 bytes in front of the data: UCX's UD transport
 * drops every datagram whose address it cannot find there.
 */
enum {
	UD_L3_IPV6 = 1,
	UD_L3_IPV4 = 2,
};

static void complete_recv_sl(struct urxe_eqp *qp, struct urxe_recv_wqe *rwqe,
			     enum ibv_wc_status status, enum ibv_wc_opcode op,
			     uint32_t len, const struct urxe_bth *bth,
			     const struct urxe_opinfo *oi, const uint8_t *pkt,
			     uint8_t sl)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.sl = sl;
	wc.wr_id = rwqe->wr_id;
	wc.status = status;
	wc.opcode = op;
	wc.byte_len = len;
	if (oi && (oi->flags & URXE_F_IMM)) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		memcpy(&wc.imm_data, pkt + oi->off[URXE_HDR_IMMDT], 4);
	}
	if (oi && (oi->flags & URXE_F_INV)) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = urxe_get32(pkt + oi->off[URXE_HDR_IETH]);
	}
	if (qp->type == IBV_QPT_UD && pkt && oi) {
		wc.src_qp = urxe_get24(pkt + oi->off[URXE_HDR_DETH] + 5);
		wc.wc_flags |= IBV_WC_GRH;
	}
	rq_pop(qp);
	push_recv_cqe(qp, &wc, bth && bth->se);
}

void urxe_recv_complete(struct urxe_eqp *qp, struct urxe_recv_wqe *rwqe,
			enum ibv_wc_status status, enum ibv_wc_opcode op,
			uint32_t len, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt)
{
	complete_recv_sl(qp, rwqe, status, op, len, bth, oi, pkt, 0);
}

/*
 * The 40 bytes in front of every UD receive: for IPv4, 20 zero bytes and
 * the IPv4 header (with a valid checksum: applications check it); for
 * IPv6, the IPv6 header.  Built from what the socket told us; returns the
 * network header type wc.sl reports.
 */
static uint8_t ud_grh(uint8_t *grh, const struct urxe_rx_meta *meta,
		      uint32_t paylen)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	uint32_t roce = URXE_BTH_LEN + URXE_DETH_LEN + paylen + URXE_ICRC_LEN;
	uint32_t sum = 0;
	int i;

	memset(grh, 0, 40);
	if (!memcmp(meta->sgid.raw, v4_prefix, 12)) {
		uint8_t *ip = grh + 20;

		ip[0] = 0x45;
		ip[1] = meta->tos;
		urxe_put16(ip + 2, (uint16_t)(20 + 8 + roce));
		ip[6] = 0x40;			/* DF */
		ip[8] = meta->ttl;
		ip[9] = 17;
		memcpy(ip + 12, meta->sgid.raw + 12, 4);
		memcpy(ip + 16, meta->dgid.raw + 12, 4);
		for (i = 0; i < 20; i += 2)
			sum += urxe_get16(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		urxe_put16(ip + 10, (uint16_t)~sum);
		return UD_L3_IPV4;
	}
	urxe_put32(grh, 6u << 28 | (uint32_t)meta->tos << 20);
	urxe_put16(grh + 4, (uint16_t)(8 + roce));
	grh[6] = 17;
	grh[7] = meta->ttl;
	memcpy(grh + 8, meta->sgid.raw, 16);
	memcpy(grh + 24, meta->dgid.raw, 16);
	return UD_L3_IPV6;
}

void urxe_resp_ud_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt,
			uint32_t paylen, const struct urxe_rx_meta *meta)
{
	uint8_t grh[40], l3;
	struct urxe_recv_wqe *rwqe;
	uint32_t qkey = urxe_get32(pkt + oi->off[URXE_HDR_DETH]);

	if (qkey != qp->attr.qkey)
		return;				/* IBA 10.2.5: Q_Key violation */
	rwqe = urxe_recv_head(qp);
	if (!rwqe)
		return;				/* UD drops when not ready */
	if (paylen + sizeof(grh) > rwqe->length) {
		urxe_recv_complete(qp, rwqe, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0,
				   bth, NULL, NULL);
		return;
	}
	l3 = ud_grh(grh, meta, paylen);
	if (urxe_sge_copy_in(qp->eng, urxe_recv_pd(qp), rwqe->sge,
			     rwqe->num_sge, 0, grh, sizeof(grh)) ||
	    urxe_sge_copy_in(qp->eng, urxe_recv_pd(qp), rwqe->sge,
			     rwqe->num_sge, sizeof(grh), pkt + oi->hdr_len,
			     paylen)) {
		urxe_recv_complete(qp, rwqe, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV,
				   0, bth, NULL, NULL);
		return;
	}
	complete_recv_sl(qp, rwqe, IBV_WC_SUCCESS, IBV_WC_RECV,
			 paylen + (uint32_t)sizeof(grh), bth, oi, pkt, l3);
}

void urxe_resp_flush(struct urxe_eqp *qp)
{
	struct urxe_recv_wqe *rwqe;

	if (qp->resp.wr_mem) {
		urxe_mem_put(qp->resp.wr_mem);
		qp->resp.wr_mem = NULL;
	}
	qp->resp.rq_active = false;
	qp->resp.ack_pending = false;
	if (qp->type == IBV_QPT_XRC_RECV) {
		/*
		 * A TGT QP has no receive queue: only the WQE it took goes
		 * (to its SRQ's CQ).  No Last WQE Reached: it is attached to
		 * no SRQ, it visits them.
		 */
		urxe_resp_xrc_release(qp);
		return;
	}
	if (qp->srq) {
		/*
		 * The SRQ's WQEs are the other QPs' too: only the one this QP
		 * took is flushed.  IBA 10.3.1 (Last WQE Reached): an SRQ QP in
		 * error reports that it will consume no more.
		 */
		if (qp->srq_held)
			urxe_recv_complete(qp, qp->srq_wqe, IBV_WC_WR_FLUSH_ERR,
					   IBV_WC_RECV, 0, NULL, NULL, NULL);
		if (qp->fatal)
			qp->fatal(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
		return;
	}
	if (!qp->rq.buf)
		return;
	while ((rwqe = rq_head(qp)))
		urxe_recv_complete(qp, rwqe, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV,
				   0, NULL, NULL, NULL);
}
