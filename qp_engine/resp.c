// SPDX-License-Identifier: BSD-2-Clause
/*
 * The responder (IBA 9.7.4 - 9.7.5): checks each request's PSN, places
 * SEND payload in receive WQEs and WRITE payload in registered memory,
 * answers READs and atomics (keeping what it answered for replay), and
 * acknowledges.  Duplicates are re-acknowledged or replayed, never
 * executed twice; an out-of-sequence request earns one PSN-sequence NAK.
 * Receive WQEs come from the QP's own receive queue or from its SRQ
 * (resp_recv.c, with the completions of receives and UD's receives).
 *
 * An XRC TGT QP (IBV_QPT_XRC_RECV, IBA annex A14) is this RC responder
 * with nothing of its own to deliver into: each request's XRCETH names an
 * XRC SRQ of the QP's domain (xrc_target()), whose receive WQEs, PD and CQ
 * the message uses; it answers with XRC opcodes.
 * A request's handler returns its verdict (verdict.h): URXE_V_OK, or the
 * class of its failure, which request_failed() turns into the NAK, event
 * and counter of the verdict table.
 * Progress lock held throughout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/wire.h>

#include "engine_int.h"
#include "resp_int.h"

/* ---- sending ACKs, NAKs and responses ---- */

/* Answers travel on the requester's transport: XRC for a TGT QP. */
static uint8_t resp_opcode(const struct urxe_eqp *qp, enum urxe_op op)
{
	return urxe_opcode(qp->type == IBV_QPT_XRC_RECV ? URXE_TR_XRC
							: URXE_TR_RC, op);
}

static void send_aeth(struct urxe_eqp *qp, uint32_t psn, uint8_t syndrome)
{
	struct urxe_tx_path path;
	struct urxe_bth bth = {
		.opcode = resp_opcode(qp, URXE_OP_ACK), .pkey = 0xffff,
		.dqpn = qp->attr.dest_qpn, .psn = psn,
	};
	const struct urxe_opinfo *oi = urxe_opinfo(bth.opcode);
	uint8_t *buf = urxe_tx_begin(qp->eng, &bth);

	urxe_aeth_put(buf + oi->off[URXE_HDR_AETH], syndrome, qp->resp.msn);
	urxe_qp_path(qp, &path);
	urxe_tx_commit(qp->eng, &path, oi, 0);
}

/* The coalesced ACK of everything up to epsn - 1. */
void urxe_resp_send_ack(struct urxe_eqp *qp)
{
	qp->resp.ack_pending = false;
	if (qp->attr.state == IBV_QPS_ERR || qp->attr.state == IBV_QPS_RESET)
		return;
	send_aeth(qp, qp->resp.ack_psn,
		  URXE_AETH_ACK | URXE_AETH_CREDIT_INVALID);
}

static void schedule_ack(struct urxe_eqp *qp, uint32_t psn)
{
	qp->resp.ack_psn = psn;
	if (!qp->resp.ack_pending) {
		qp->resp.ack_pending = true;
		urxe_qp_schedule(qp);
	}
}

static void send_nak(struct urxe_eqp *qp, uint32_t psn, enum urxe_verdict v)
{
	send_aeth(qp, psn, urxe_verdicts[v].aeth);
}

/* The responder's counter of @v, if it has one. */
static void resp_count(struct urxe_eqp *qp, enum urxe_verdict v)
{
	enum urxe_counter c = urxe_verdicts[v].resp_cnt;

	if (c != URXE_V_NO_COUNTER)
		urxe_count(qp->eng, c, 1);
}

/* READ response packets for @res from @psn on. */
static void send_read_resp(struct urxe_eqp *qp, const struct urxe_rd_res *res,
			   uint32_t psn)
{
	uint32_t mtu = urxe_qp_mtu(qp);
	uint32_t off = (uint32_t)urxe_psn_diff(psn, res->first_psn) * mtu;
	struct urxe_tx_path path;
	struct urxe_mem *mem = NULL;
	uint8_t *src = NULL;

	if (res->length &&
	    urxe_mem_remote(qp, res->rkey, res->va, res->length,
			    IBV_ACCESS_REMOTE_READ, &mem, &src))
		return;		/* deregistered since: the requester times out */
	urxe_qp_path(qp, &path);
	do {
		uint32_t n = res->length - off < mtu ? res->length - off : mtu;
		bool first = off == 0, last = off + n == res->length;
		enum urxe_op op = first && last ? URXE_OP_READ_RESP_ONLY :
				  first ? URXE_OP_READ_RESP_FIRST :
				  last ? URXE_OP_READ_RESP_LAST :
					 URXE_OP_READ_RESP_MIDDLE;
		struct urxe_bth bth = {
			.opcode = resp_opcode(qp, op), .pkey = 0xffff,
			.dqpn = qp->attr.dest_qpn, .psn = psn,
		};
		const struct urxe_opinfo *oi = urxe_opinfo(bth.opcode);
		uint8_t *buf = urxe_tx_begin(qp->eng, &bth);

		if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_AETH))
			urxe_aeth_put(buf + oi->off[URXE_HDR_AETH],
				      URXE_AETH_ACK | URXE_AETH_CREDIT_INVALID,
				      qp->resp.msn);
		if (n)
			memcpy(buf + oi->hdr_len, src + off, n);
		urxe_tx_commit(qp->eng, &path, oi, n);
		off += n;
		psn = urxe_psn_add(psn, 1);
	} while (off < res->length);
	if (mem)
		urxe_mem_put(mem);
}

static void send_atomic_ack(struct urxe_eqp *qp, const struct urxe_rd_res *res)
{
	struct urxe_tx_path path;
	struct urxe_bth bth = {
		.opcode = resp_opcode(qp, URXE_OP_ATOMIC_ACK),
		.pkey = 0xffff, .dqpn = qp->attr.dest_qpn, .psn = res->first_psn,
	};
	const struct urxe_opinfo *oi = urxe_opinfo(bth.opcode);
	uint8_t *buf = urxe_tx_begin(qp->eng, &bth);

	urxe_aeth_put(buf + oi->off[URXE_HDR_AETH],
		      URXE_AETH_ACK | URXE_AETH_CREDIT_INVALID, qp->resp.msn);
	urxe_put64(buf + oi->off[URXE_HDR_ATMACK], res->orig);
	urxe_qp_path(qp, &path);
	urxe_tx_commit(qp->eng, &path, oi, 0);
}

/* ---- XRC targets (IBA annex A14) ---- */

enum xrc_where {
	XRC_NOT_FOUND,		/* no such SRQ, or one of another domain */
	XRC_LOCAL,		/* an XRC SRQ of this engine */
};

/*
 * Where a request to TGT QP @qp goes: the XRC SRQ its XRCETH names, if
 * that belongs to the QP's XRC domain.  The one place that decides it.
 */
static enum xrc_where xrc_target(const struct urxe_eqp *qp,
				 const struct urxe_opinfo *oi,
				 const uint8_t *pkt, struct urxe_esrq **out)
{
	uint32_t srqn = urxe_xrceth_get(pkt + oi->off[URXE_HDR_XRCETH]);
	struct urxe_esrq *srq = urxe_engine_xsrq_lookup(qp->eng, srqn);

	*out = NULL;
	if (!srq || srq->xrcd != qp->xrcd)
		return XRC_NOT_FOUND;
	*out = srq;
	return XRC_LOCAL;
}

/* A message under way: a receive WQE held, a SEND or WRITE half placed. */
static bool msg_in_progress(const struct urxe_eqp *qp)
{
	return qp->resp.rq_active || qp->srq_held || qp->resp.wr_mem != NULL;
}

static void xrc_unbind(struct urxe_eqp *qp)
{
	qp->srq = NULL;
	qp->pd = 0;
	qp->rcq = NULL;
}

/*
 * Points TGT QP @qp at the SRQ the request names: its receive WQEs, its
 * PD (rkeys, receive lkeys) and its CQ serve the message.  A message
 * under way keeps its SRQ: a packet of it naming another is invalid.
 */
static enum urxe_verdict xrc_bind(struct urxe_eqp *qp,
				  const struct urxe_opinfo *oi,
				  const uint8_t *pkt)
{
	struct urxe_esrq *srq;

	if (xrc_target(qp, oi, pkt, &srq) != XRC_LOCAL)
		return URXE_V_NAK_ACCESS;
	if (srq == qp->srq)
		return URXE_V_OK;
	if (msg_in_progress(qp))
		return URXE_V_NAK_INV;
	/* Room for the largest WQE of any XRC SRQ (urxe_engine_xsrq_add). */
	if (!qp->srq_wqe) {
		qp->srq_wqe = malloc(qp->eng->qpt.xsrq_stride);
		if (!qp->srq_wqe)
			return URXE_V_RNR;	/* not ready: RNR NAK */
	}
	qp->srq = srq;
	qp->pd = srq->pd;
	qp->rcq = srq->cq;
	return URXE_V_OK;
}

void urxe_resp_xrc_release(struct urxe_eqp *qp)
{
	if (!qp->srq)
		return;
	if (qp->srq_held)
		urxe_recv_complete(qp, qp->srq_wqe, IBV_WC_WR_FLUSH_ERR,
				   IBV_WC_RECV, 0, NULL, NULL, NULL);
	qp->resp.rq_active = false;
	if (qp->resp.wr_mem) {
		urxe_mem_put(qp->resp.wr_mem);
		qp->resp.wr_mem = NULL;
	}
	qp->resp.wr_resid = 0;
	xrc_unbind(qp);
}

/* ---- request handling ---- */

static enum urxe_verdict handle_send(struct urxe_eqp *qp, const struct urxe_bth *bth,
		       const struct urxe_opinfo *oi, const uint8_t *pkt,
		       uint32_t paylen)
{
	struct urxe_recv_wqe *rwqe;

	if (oi->flags & URXE_F_FIRST) {
		rwqe = urxe_recv_head(qp);
		if (!rwqe)
			return URXE_V_RNR;	/* receiver not ready */
		qp->resp.rq_active = true;
		qp->resp.rq_off = 0;
	} else if (!qp->resp.rq_active) {
		return URXE_V_NAK_INV;		/* a middle with no first */
	}
	rwqe = urxe_recv_head(qp);
	if (qp->resp.rq_off + paylen > rwqe->length) {
		urxe_recv_complete(qp, rwqe, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0,
				   bth, NULL, NULL);
		qp->resp.rq_active = false;
		return URXE_V_NAK_LEN;
	}
	if (urxe_sge_copy_in(qp->eng, urxe_recv_pd(qp), rwqe->sge,
			     rwqe->num_sge, qp->resp.rq_off, pkt + oi->hdr_len,
			     paylen)) {
		/* IBA 9.7.5.2.4: our local failure is the requester's
		 * remote operational error. */
		urxe_recv_complete(qp, rwqe, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV,
				   0, bth, NULL, NULL);
		qp->resp.rq_active = false;
		return URXE_V_NAK_OP;
	}
	qp->resp.rq_off += paylen;
	if ((oi->flags & URXE_F_LAST) && (oi->flags & URXE_F_INV) &&
	    urxe_mw_invalidate(qp, urxe_get32(pkt + oi->off[URXE_HDR_IETH])) ==
	    -EINVAL) {
		/* IBA class J: a window that cannot be invalidated (kernel
		 * rxe: IBV_WC_REM_INV_REQ_ERR on the receive). */
		urxe_recv_complete(qp, rwqe, IBV_WC_REM_INV_REQ_ERR,
				   IBV_WC_RECV, 0, bth, NULL, NULL);
		qp->resp.rq_active = false;
		return URXE_V_NAK_INV;
	}
	if (oi->flags & URXE_F_LAST) {
		urxe_recv_complete(qp, rwqe, IBV_WC_SUCCESS, IBV_WC_RECV,
				   qp->resp.rq_off, bth, oi, pkt);
		qp->resp.rq_active = false;
	}
	return URXE_V_OK;
}

static enum urxe_verdict handle_write(struct urxe_eqp *qp, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt,
			uint32_t paylen)
{
	struct urxe_recv_wqe *rwqe = NULL;

	/*
	 * The last packet of an RDMA WRITE with immediate consumes a receive:
	 * it is looked for before anything of the packet is placed, so that
	 * the RNR retry finds the WRITE as it was (an SRQ's is taken now:
	 * another QP could take it meanwhile).
	 */
	if ((oi->flags & URXE_F_IMM) && !urxe_recv_head(qp))
		return URXE_V_RNR;
	if (oi->flags & URXE_F_FIRST) {
		struct urxe_reth r;
		uint8_t *dst;

		urxe_reth_get(pkt + oi->off[URXE_HDR_RETH], &r);
		/* A WRITE cut short by a new one: its target's reference goes. */
		if (qp->resp.wr_mem) {
			urxe_mem_put(qp->resp.wr_mem);
			qp->resp.wr_mem = NULL;
		}
		if (!(qp->attr.access & IBV_ACCESS_REMOTE_WRITE))
			return URXE_V_NAK_ACCESS;
		if (r.len && urxe_mem_remote(qp, r.rkey, r.va, r.len,
					     IBV_ACCESS_REMOTE_WRITE,
					     &qp->resp.wr_mem, &dst))
			return URXE_V_NAK_ACCESS;
		if (!r.len)
			qp->resp.wr_mem = NULL;
		qp->resp.wr_va = (uint64_t)(uintptr_t)(r.len ? dst : NULL);
		qp->resp.wr_resid = r.len;
		qp->resp.rq_off = r.len;		/* byte_len of WRITE_WITH_IMM */
	} else if (!qp->resp.wr_mem && qp->resp.wr_resid) {
		return URXE_V_NAK_INV;
	}
	if (paylen > qp->resp.wr_resid || ((oi->flags & URXE_F_LAST) &&
				      paylen != qp->resp.wr_resid))
		return URXE_V_NAK_LEN;
	if (paylen) {
		memcpy((uint8_t *)(uintptr_t)qp->resp.wr_va, pkt + oi->hdr_len,
		       paylen);
		qp->resp.wr_va += paylen;
		qp->resp.wr_resid -= paylen;
	}
	if (!(oi->flags & URXE_F_LAST))
		return URXE_V_OK;
	if (qp->resp.wr_mem)
		urxe_mem_put(qp->resp.wr_mem);
	qp->resp.wr_mem = NULL;
	if (oi->flags & URXE_F_IMM) {
		rwqe = urxe_recv_head(qp);
		if (!rwqe)
			return URXE_V_RNR;
		urxe_recv_complete(qp, rwqe, IBV_WC_SUCCESS,
				   IBV_WC_RECV_RDMA_WITH_IMM, qp->resp.rq_off, bth,
				   oi, pkt);
	}
	return URXE_V_OK;
}

static struct urxe_rd_res *rd_res_new(struct urxe_eqp *qp)
{
	struct urxe_rd_res *res = &qp->resp.rd_res[qp->resp.rd_res_next];

	qp->resp.rd_res_next = (qp->resp.rd_res_next + 1) % qp->resp.rd_res_n;
	memset(res, 0, sizeof(*res));
	return res;
}

static enum urxe_verdict handle_read(struct urxe_eqp *qp,
				     const struct urxe_bth *bth,
				     const struct urxe_opinfo *oi,
				     const uint8_t *pkt)
{
	uint32_t mtu = urxe_qp_mtu(qp);
	struct urxe_rd_res *res;
	struct urxe_mem *mem;
	struct urxe_reth r;
	uint8_t *src;

	urxe_reth_get(pkt + oi->off[URXE_HDR_RETH], &r);
	if (!(qp->attr.access & IBV_ACCESS_REMOTE_READ) || !qp->resp.rd_res)
		return URXE_V_NAK_ACCESS;
	if (r.len && urxe_mem_remote(qp, r.rkey, r.va, r.len,
				     IBV_ACCESS_REMOTE_READ, &mem, &src))
		return URXE_V_NAK_ACCESS;
	if (r.len)
		urxe_mem_put(mem);
	res = rd_res_new(qp);
	res->valid = true;
	res->va = r.va;
	res->rkey = r.rkey;
	res->length = r.len;
	res->first_psn = bth->psn;
	res->last_psn = urxe_psn_add(bth->psn, r.len ? (r.len + mtu - 1) / mtu - 1 : 0);
	qp->resp.msn++;
	send_read_resp(qp, res, bth->psn);
	qp->resp.epsn = urxe_psn_add(res->last_psn, 1);
	return URXE_V_OK;
}

static enum urxe_verdict handle_atomic(struct urxe_eqp *qp,
				       const struct urxe_bth *bth,
				       const struct urxe_opinfo *oi,
				       const uint8_t *pkt)
{
	struct urxe_rd_res *res;
	struct urxe_atmeth a;
	struct urxe_mem *mem;
	uint64_t *target, orig;
	uint8_t *p;

	urxe_atmeth_get(pkt + oi->off[URXE_HDR_ATMETH], &a);
	if (!(qp->attr.access & IBV_ACCESS_REMOTE_ATOMIC) || !qp->resp.rd_res)
		return URXE_V_NAK_ACCESS;
	if (a.va & 7)
		return URXE_V_NAK_INV;	/* IBA 9.4.5: misaligned is invalid */
	if (urxe_mem_remote(qp, a.rkey, a.va, 8,
			    IBV_ACCESS_REMOTE_ATOMIC, &mem, &p))
		return URXE_V_NAK_ACCESS;
	/* An MR whose iova and address differ mod 8 (zero-based, reg_mr_iova):
	 * an aligned VA can still be a misaligned host address (as rxe). */
	if ((uintptr_t)p & 7) {
		urxe_mem_put(mem);
		return URXE_V_NAK_INV;
	}
	target = (uint64_t *)(void *)p;
	if (urxe_opcode_op(bth->opcode) == URXE_OP_CMP_SWAP) {
		orig = a.cmp;
		__atomic_compare_exchange_n(target, &orig, a.swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(target, a.swap_add, __ATOMIC_SEQ_CST);
	}
	urxe_mem_put(mem);
	res = rd_res_new(qp);
	res->valid = true;
	res->atomic = true;
	res->first_psn = res->last_psn = bth->psn;
	res->orig = orig;
	qp->resp.msn++;
	send_atomic_ack(qp, res);
	qp->resp.epsn = urxe_psn_add(bth->psn, 1);
	return URXE_V_OK;
}

/*
 * A repeated READ is answered again from memory.  A TGT QP checks the key
 * against the PD of the SRQ the repeat names (it points at none between
 * messages), leaving a message under way as it was.
 */
static void replay_read(struct urxe_eqp *qp, const struct urxe_rd_res *res,
			const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt)
{
	struct urxe_esrq *srq;
	uint32_t pd = qp->pd;

	if (qp->type != IBV_QPT_XRC_RECV) {
		send_read_resp(qp, res, bth->psn);
		return;
	}
	if (xrc_target(qp, oi, pkt, &srq) != XRC_LOCAL)
		return;		/* gone since: the requester times out */
	qp->pd = srq->pd;
	send_read_resp(qp, res, bth->psn);
	qp->pd = pd;
}

/* IBA 9.7.5.1.2: a duplicate is re-acknowledged or its answer replayed. */
static void handle_duplicate(struct urxe_eqp *qp, const struct urxe_bth *bth,
			     const struct urxe_opinfo *oi, const uint8_t *pkt)
{
	uint32_t i;

	if (!(oi->flags & (URXE_F_READ | URXE_F_ATOMIC))) {
		if (bth->ackreq)
			schedule_ack(qp, urxe_psn_add(qp->resp.epsn,
						      URXE_PSN_MASK));
		return;
	}
	for (i = 0; i < qp->resp.rd_res_n; i++) {
		struct urxe_rd_res *res = &qp->resp.rd_res[i];

		if (!res->valid || urxe_psn_before(bth->psn, res->first_psn) ||
		    urxe_psn_before(res->last_psn, bth->psn))
			continue;
		if (res->atomic && !(oi->flags & URXE_F_ATOMIC))
			return;
		if (res->atomic)
			send_atomic_ack(qp, res);	/* never executed twice */
		else
			replay_read(qp, res, bth, oi, pkt);
		return;
	}
}

/*
 * A reliable QP's failed request: the NAK, counter and affiliated event
 * of verdict @v.  An RNR NAK leaves the QP as it is (the requester comes
 * back); any other NAK moves it to ERR, which completes what the request
 * touched.
 */
static void request_failed(struct urxe_eqp *qp, const struct urxe_bth *bth,
			   enum urxe_verdict v)
{
	const struct urxe_verdict_info *vi = &urxe_verdicts[v];

	resp_count(qp, v);
	if (v == URXE_V_RNR) {
		/* IBA 9.7.5.2.8: RNR NAK carrying our min_rnr_timer. */
		send_aeth(qp, bth->psn,
			  vi->aeth | (qp->attr.min_rnr_timer & 0x1f));
		return;
	}
	send_aeth(qp, bth->psn, vi->aeth);
	urxe_qp_err_responder(qp, v, bth->psn);
	urxe_qp_error(qp, vi->resp_event);
}

/* UC: a gap loses the message in progress; resume at the next first. */
static bool uc_sequence(struct urxe_eqp *qp, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi)
{
	if (bth->psn == qp->resp.epsn)
		return true;
	if (qp->resp.rq_active) {
		qp->resp.rq_active = false;		/* the receive WQE is reused */
	}
	if (qp->resp.wr_mem) {
		urxe_mem_put(qp->resp.wr_mem);
		qp->resp.wr_mem = NULL;
	}
	qp->resp.wr_resid = 0;
	if (!(oi->flags & URXE_F_FIRST))
		return false;
	qp->resp.epsn = bth->psn;
	return true;
}

/*
 * UC has no NAK: a WRITE its responder refuses (a bad R_Key or rights:
 * IBA class D/E; a length or opcode sequence that does not fit: class D)
 * is dropped whole, and the QP goes on (kernel rxe does the same).  Were
 * the QP moved to error instead, anyone who can reach it -- another user
 * of the host guessing keys -- could end it with one packet.  Only WRITEs:
 * a SEND's length error has completed its receive in error already.
 */
static bool uc_droppable(const struct urxe_opinfo *oi, enum urxe_verdict v)
{
	return v == URXE_V_NAK_ACCESS ||
	       ((oi->flags & URXE_F_WRITE) &&
		(v == URXE_V_NAK_LEN || v == URXE_V_NAK_INV));
}

/*
 * Forgets the message under way; ePSN stays where it was, so the rest of
 * the message (PSNs past it, not a first) is dropped by uc_sequence() and
 * the next message's first packet starts over.
 */
static void uc_drop_message(struct urxe_eqp *qp, const struct urxe_bth *bth,
			    enum urxe_verdict v)
{
	if (qp->resp.wr_mem) {
		urxe_mem_put(qp->resp.wr_mem);
		qp->resp.wr_mem = NULL;
	}
	qp->resp.wr_resid = 0;
	qp->resp.rq_active = false;
	urxe_dbg("QP 0x%06x: UC request PSN %u refused (%s): message dropped",
		 qp->qpn, bth->psn, urxe_verdicts[v].name);
}

/* Carries out a request in sequence, and acknowledges it. */
static void execute(struct urxe_eqp *qp, const struct urxe_bth *bth,
		    const struct urxe_opinfo *oi, const uint8_t *pkt,
		    uint32_t paylen)
{
	enum urxe_verdict v;

	if (oi->flags & URXE_F_SEND)
		v = handle_send(qp, bth, oi, pkt, paylen);
	else if (oi->flags & URXE_F_WRITE)
		v = handle_write(qp, bth, oi, pkt, paylen);
	else if (oi->flags & URXE_F_READ)
		v = handle_read(qp, bth, oi, pkt);
	else
		v = handle_atomic(qp, bth, oi, pkt);
	if (v != URXE_V_OK) {
		/* UC: no NAK; not ready, the packet is ignored. */
		if (urxe_qp_reliable(qp))
			request_failed(qp, bth, v);
		else if (uc_droppable(oi, v))
			uc_drop_message(qp, bth, v);
		else if (v != URXE_V_RNR)
			urxe_qp_error(qp, IBV_EVENT_QP_FATAL);
		return;
	}
	if (oi->flags & (URXE_F_READ | URXE_F_ATOMIC))
		return;		/* epsn and msn moved; the response acknowledges */
	if (oi->flags & URXE_F_LAST)
		qp->resp.msn++;
	qp->resp.epsn = urxe_psn_add(bth->psn, 1);
	if (urxe_qp_reliable(qp) && bth->ackreq)
		schedule_ack(qp, bth->psn);
}

/*
 * A request on a TGT QP naming an XRC SRQ of another process of the
 * domain goes there whole, untouched: its owner runs the responder on the
 * shared state (docs/design.md, "XRC across processes").  The packet
 * leaves from this engine toward the owner with a new ICRC.  Returns
 * whether it was relayed.
 */
static bool xrc_relay(struct urxe_eqp *qp, const struct urxe_bth *bth,
		      const struct urxe_opinfo *oi, const uint8_t *pkt,
		      uint32_t paylen)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t srqn = urxe_xrceth_get(pkt + oi->off[URXE_HDR_XRCETH]);
	struct urxe_esrq *srq = urxe_engine_xsrq_lookup(eng, srqn);
	struct urxe_tx_path path;
	union ibv_gid owner;
	uint8_t *buf;

	if ((srq && srq->xrcd == qp->xrcd) || !eng->ops->xrc_route ||
	    !eng->ops->xrc_route(eng->priv, qp, srqn, &owner))
		return false;
	buf = urxe_tx_begin(eng, bth);
	memcpy(buf + URXE_BTH_LEN, pkt + URXE_BTH_LEN,
	       oi->hdr_len - URXE_BTH_LEN + paylen);
	urxe_qp_path(qp, &path);
	path.dgid = &owner;
	urxe_tx_commit(eng, &path, oi, paylen);
	return true;
}

static void resp_input_one(struct urxe_eqp *qp, const struct urxe_bth *bth,
			   const struct urxe_opinfo *oi, const uint8_t *pkt,
			   uint32_t paylen, const struct urxe_rx_meta *meta)
{
	enum urxe_verdict v;

	if (qp->attr.state == IBV_QPS_RESET || qp->attr.state == IBV_QPS_INIT ||
	    qp->attr.state == IBV_QPS_ERR)
		return;
	if (qp->type == IBV_QPT_UD) {
		urxe_resp_ud_input(qp, bth, oi, pkt, paylen, meta);
		return;
	}
	if (qp->type == IBV_QPT_UC) {
		if (!uc_sequence(qp, bth, oi))
			return;
	} else if (bth->psn != qp->resp.epsn) {
		/* One sequence NAK, until a request at ePSN comes. */
		v = urxe_psn_before(bth->psn, qp->resp.epsn) ? URXE_V_DUP
							: URXE_V_NAK_SEQ;
		resp_count(qp, v);
		if (v == URXE_V_DUP) {
			handle_duplicate(qp, bth, oi, pkt);
		} else if (!qp->resp.nak_seq_sent) {
			qp->resp.nak_seq_sent = true;
			send_nak(qp, qp->resp.epsn, v);
		}
		return;
	}
	qp->resp.nak_seq_sent = false;
	if (qp->type != IBV_QPT_XRC_RECV) {
		execute(qp, bth, oi, pkt, paylen);
		return;
	}
	v = xrc_bind(qp, oi, pkt);
	if (v != URXE_V_OK)
		request_failed(qp, bth, v);	/* unknown SRQ: NAK access */
	else
		execute(qp, bth, oi, pkt, paylen);
	/* Between messages a TGT QP points at no SRQ. */
	if (!msg_in_progress(qp))
		xrc_unbind(qp);
}

void urxe_resp_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
		     const struct urxe_opinfo *oi, const uint8_t *pkt,
		     uint32_t paylen, const struct urxe_rx_meta *meta)
{
	if (qp->type != IBV_QPT_XRC_RECV) {
		resp_input_one(qp, bth, oi, pkt, paylen, meta);
		return;
	}
	if (xrc_relay(qp, bth, oi, pkt, paylen))
		return;
	urxe_tgt_begin(qp);
	resp_input_one(qp, bth, oi, pkt, paylen, meta);
	urxe_tgt_end(qp);
}
