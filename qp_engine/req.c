// SPDX-License-Identifier: BSD-2-Clause
/*
 * The requester: turns send WQEs into request packets (IBA 9.7.1 - 9.7.4).
 * Messages are cut at the path MTU; PSNs are assigned as packets first
 * leave, so a go-back-N rewind resends the very same PSNs.  An XRC INI
 * QP (IBV_QPT_XRC_SEND) is an RC requester whose requests carry XRC
 * opcodes and, each packet, XRCETH naming the remote SRQ (the WQE's
 * remote_qpn).  RC and XRC keep at
 * most a window of packets unacknowledged (and as many READ response
 * packets awaited), its share of what the receive socket holds: an
 * unprivileged UDP socket holds ~208 KiB, and what overflows it is lost.
 * Progress lock held throughout.
 */
#include <errno.h>
#include <string.h>

#include <urxe/wire.h>

#include "engine_int.h"

/* How many READ answer packets may be awaited (and asked for at once). */
static uint32_t read_window(const struct urxe_engine *eng)
{
	return eng->budget.read_window && eng->budget.read_window < eng->budget.window ?
	       eng->budget.read_window : eng->budget.window;
}

uint32_t urxe_wqe_pkts(const struct urxe_eqp *qp,
		       const struct urxe_send_wqe *wqe)
{
	unsigned int mtu = urxe_qp_mtu(qp);

	switch (wqe->opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return 1;
	default:
		return wqe->length ? (wqe->length + mtu - 1) / mtu : 1;
	}
}

static bool is_rd_atomic(const struct urxe_send_wqe *wqe)
{
	return wqe->opcode == IBV_WR_RDMA_READ ||
	       wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static enum urxe_transport qp_transport(const struct urxe_eqp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return URXE_TR_UC;
	case IBV_QPT_UD:
		return URXE_TR_UD;
	case IBV_QPT_XRC_SEND:
		return URXE_TR_XRC;
	default:
		return URXE_TR_RC;
	}
}

/* The operation of one packet of a SEND or WRITE. */
static enum urxe_op data_op(const struct urxe_send_wqe *wqe, bool first,
			    bool last)
{
	bool send = wqe->opcode == IBV_WR_SEND ||
		    wqe->opcode == IBV_WR_SEND_WITH_IMM ||
		    wqe->opcode == IBV_WR_SEND_WITH_INV;
	bool imm = wqe->opcode == IBV_WR_SEND_WITH_IMM ||
		   wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool inv = wqe->opcode == IBV_WR_SEND_WITH_INV;

	if (send) {
		if (first && last)
			return imm ? URXE_OP_SEND_ONLY_IMM :
			       inv ? URXE_OP_SEND_ONLY_INV : URXE_OP_SEND_ONLY;
		if (first)
			return URXE_OP_SEND_FIRST;
		if (!last)
			return URXE_OP_SEND_MIDDLE;
		return imm ? URXE_OP_SEND_LAST_IMM :
		       inv ? URXE_OP_SEND_LAST_INV : URXE_OP_SEND_LAST;
	}
	if (first && last)
		return imm ? URXE_OP_WRITE_ONLY_IMM : URXE_OP_WRITE_ONLY;
	if (first)
		return URXE_OP_WRITE_FIRST;
	if (!last)
		return URXE_OP_WRITE_MIDDLE;
	return imm ? URXE_OP_WRITE_LAST_IMM : URXE_OP_WRITE_LAST;
}

static void wqe_path(const struct urxe_eqp *qp, const struct urxe_send_wqe *wqe,
		     struct urxe_tx_path *p)
{
	urxe_qp_path(qp, p);
	if (qp->type != IBV_QPT_UD)
		return;
	p->dgid = &wqe->dgid;
	p->sgid = wqe->sgid.global.interface_id || wqe->sgid.global.subnet_prefix ?
		  &wqe->sgid : &qp->eng->gid0;
	p->tclass = wqe->tclass;
	p->hop_limit = wqe->hop_limit;
}

/* Writes the extension headers @oi asks for. */
static void put_ext_hdrs(const struct urxe_eqp *qp,
			 const struct urxe_send_wqe *wqe,
			 const struct urxe_opinfo *oi, uint8_t *buf,
			 uint64_t va, uint32_t len)
{
	/* XRC annex A14: every request packet names the SRQ it is for. */
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH))
		urxe_xrceth_put(buf + oi->off[URXE_HDR_XRCETH], wqe->remote_qpn);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_DETH)) {
		/* IBA 10.2.5: a Q_Key with the high bit set means the QP's. */
		uint32_t qkey = wqe->remote_qkey & 0x80000000u ?
				qp->attr.qkey : wqe->remote_qkey;

		urxe_deth_put(buf + oi->off[URXE_HDR_DETH], qkey, qp->qpn);
	}
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_RETH)) {
		struct urxe_reth r = { va, wqe->rkey, len };

		urxe_reth_put(buf + oi->off[URXE_HDR_RETH], &r);
	}
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH)) {
		struct urxe_atmeth a = { wqe->remote_addr, wqe->rkey, 0, 0 };

		if (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			a.swap_add = wqe->swap;
			a.cmp = wqe->compare_add;
		} else {
			a.swap_add = wqe->compare_add;
		}
		urxe_atmeth_put(buf + oi->off[URXE_HDR_ATMETH], &a);
	}
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_IMMDT))
		memcpy(buf + oi->off[URXE_HDR_IMMDT], &wqe->imm_inv, 4);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_IETH))
		urxe_put32(buf + oi->off[URXE_HDR_IETH], wqe->imm_inv);
}

static void bth_init(const struct urxe_eqp *qp, const struct urxe_send_wqe *wqe,
		     enum urxe_op op, bool last, struct urxe_bth *b)
{
	memset(b, 0, sizeof(*b));
	b->opcode = urxe_opcode(qp_transport(qp), op);
	b->se = last && (wqe->send_flags & IBV_SEND_SOLICITED) &&
		(wqe->opcode == IBV_WR_SEND || wqe->opcode == IBV_WR_SEND_WITH_IMM ||
		 wqe->opcode == IBV_WR_SEND_WITH_INV ||
		 wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	b->pkey = 0xffff;
	b->dqpn = qp->type == IBV_QPT_UD ? wqe->remote_qpn : qp->attr.dest_qpn;
	b->psn = qp->req.psn;
}

static bool is_local_op(const struct urxe_send_wqe *wqe)
{
	return wqe->opcode == IBV_WR_BIND_MW || wqe->opcode == IBV_WR_LOCAL_INV;
}

/*
 * Whether the end of the message being sent (at sq_next) should ask for
 * an ACK: nothing that sends is posted behind it (a local operation next,
 * a bind, sends nothing to ask for it), or a READ or an atomic is — it
 * waits for every earlier packet's acknowledgement when it needs the
 * budget's whole room (a loopback READ asks for a window's worth).
 */
static bool ack_at_end(struct urxe_eqp *qp)
{
	uint32_t next = qp->req.sq_next + 1;
	const struct urxe_send_wqe *w;

	if (next == atomic_load_explicit(&qp->sq.prod, memory_order_acquire))
		return true;
	w = urxe_wq_slot(&qp->sq, next);
	return is_local_op(w) || is_rd_atomic(w);
}

/* Whether the data packet with @psn asks for an ACK (its AckReq bit). */
static bool want_ack(struct urxe_eqp *qp, uint32_t psn, bool last)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t every;

	/*
	 * Ask for an ACK at the end of the last message posted, every few
	 * packets (every window, if smaller), and on the packet that fills
	 * the window: a window smaller than the ACK interval must not wait
	 * for a timeout.  A stream of small messages is acknowledged every
	 * few packets, not message by message (an ACK covers all before it).
	 */
	every = eng->budget.window < 2 * URXE_ACK_EVERY ? eng->budget.window : URXE_ACK_EVERY;
	/*
	 * ... and on the packet that fills the engine's budget: the QP may
	 * then wait for room, and the room comes back with ACKs.  Likewise
	 * at the end of a message a READ or an atomic follows, and on the
	 * last packet a rewind resends: what the QP then waits for must be
	 * asked for, or a responder answers nothing (its resends included).
	 */
	return (last && ack_at_end(qp)) ||
	       (qp->req.resending && urxe_psn_add(psn, 1) == qp->req.resend_end) ||
	       qp->req.unacked_pkts >= (every ? every : 1) ||
	       urxe_psn_diff(urxe_psn_add(qp->req.psn, 1), qp->comp.acked_psn) >=
	       (int32_t)eng->budget.window ||
	       (eng->budget.budget_pkts &&
		eng->budget.inflight + 1 + urxe_qp_inflight(qp) -
		qp->req.budget_held >= eng->budget.budget_pkts);
}

/* One packet of a SEND or WRITE; returns 0 or -EACCES (local key). */
static int send_data_pkt(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t mtu = urxe_qp_mtu(qp), paylen = wqe->length - wqe->sent;
	const struct urxe_opinfo *oi;
	struct urxe_tx_path path;
	struct urxe_bth bth;
	struct urxe_tx_piece pieces[URXE_TX_PIECES];
	bool first = wqe->sent == 0, last;
	int rc = 0, npieces;
	uint8_t *buf;

	if (paylen > mtu)
		paylen = mtu;
	last = wqe->sent + paylen == wqe->length;
	bth_init(qp, wqe, data_op(wqe, first, last), last, &bth);
	qp->req.unacked_pkts++;
	if (qp->req.resending && !urxe_psn_before(bth.psn, qp->req.resend_end))
		qp->req.resending = false;
	bth.ackreq = urxe_qp_reliable(qp) && want_ack(qp, bth.psn, last);
	if (bth.ackreq)
		qp->req.unacked_pkts = 0;
	oi = urxe_opinfo(bth.opcode);
	buf = urxe_tx_begin(eng, &bth);
	put_ext_hdrs(qp, wqe, oi, buf, wqe->remote_addr, wqe->length);
	wqe_path(qp, wqe, &path);
	npieces = -E2BIG;
	if (!(wqe->send_flags & IBV_SEND_INLINE) && paylen > URXE_TX_COPY_MAX)
		npieces = urxe_sge_pieces(eng, qp->pd, wqe->sge, wqe->num_sge,
					  wqe->sent, paylen, pieces,
					  URXE_TX_PIECES);
	if (npieces >= 0) {
		/* Zero copy: the packet points into the registered memory. */
		urxe_tx_commit_pieces(eng, &path, oi, pieces,
				      (unsigned int)npieces);
	} else {
		if (wqe->send_flags & IBV_SEND_INLINE)
			memcpy(buf + oi->hdr_len,
			       (uint8_t *)wqe->sge + wqe->sent, paylen);
		else if (npieces == -E2BIG)
			rc = urxe_sge_copy_out(eng, qp->pd, wqe->sge,
					       wqe->num_sge, wqe->sent,
					       buf + oi->hdr_len, paylen);
		else
			rc = npieces;
		if (rc)
			return rc;	/* the packet is not committed */
		urxe_tx_commit(eng, &path, oi, paylen);
	}
	urxe_rtt_start(qp, bth.psn);
	wqe->sent += paylen;
	qp->req.psn = urxe_psn_add(qp->req.psn, 1);
	if (last)
		wqe->state = URXE_WQE_SENT;
	return 0;
}

/*
 * A READ request for the part of the message not yet received, or an
 * atomic request.  Response packets count against the window: a large
 * READ is asked for in pieces, each a READ request of its own.
 */
static void send_rd_atomic_pkt(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	uint32_t mtu = urxe_qp_mtu(qp), len = 0, npkts = 1;
	const struct urxe_opinfo *oi;
	struct urxe_tx_path path;
	struct urxe_bth bth;
	enum urxe_op op;
	uint8_t *buf;

	if (wqe->opcode == IBV_WR_RDMA_READ) {
		uint32_t piece, end;

		/*
		 * Pieces start at multiples of the window the READ began with,
		 * and a retry asks for the rest of its piece only: a repeated
		 * request must lie inside the one it repeats, or a responder
		 * drops it (IBA 9.7.5.1.3; kernel rxe does).
		 */
		if (!wqe->piece)
			wqe->piece = read_window(qp->eng) * mtu;
		piece = wqe->piece;
		end = (wqe->sent / piece + 1) * piece;
		op = URXE_OP_READ_REQ;
		len = (end < wqe->length ? end : wqe->length) - wqe->sent;
		npkts = len ? (len + mtu - 1) / mtu : 1;
	} else {
		op = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
		     URXE_OP_CMP_SWAP : URXE_OP_FETCH_ADD;
	}
	bth_init(qp, wqe, op, true, &bth);
	bth.ackreq = 1;
	qp->req.unacked_pkts = 0;
	oi = urxe_opinfo(bth.opcode);
	buf = urxe_tx_begin(qp->eng, &bth);
	put_ext_hdrs(qp, wqe, oi, buf, wqe->remote_addr + wqe->sent, len);
	wqe_path(qp, wqe, &path);
	urxe_tx_commit(qp->eng, &path, oi, 0);
	urxe_rtt_start(qp, urxe_psn_add(bth.psn, npkts - 1));
	qp->req.resp_pkts += npkts;
	qp->req.rd_outstanding++;
	wqe->sent += len;
	qp->req.psn = urxe_psn_add(qp->req.psn, npkts);
	if (op != URXE_OP_READ_REQ || wqe->sent == wqe->length)
		wqe->state = URXE_WQE_SENT;
}

/*
 * UC and UD: is there room for @wqe's next packet at its destination
 * (ops->tx_wait)?  If not, the QP keeps the WQE and asks again when its
 * flow timer expires.  RC never asks: its window and ACKs pace it.
 */
static bool flow_room(struct urxe_eqp *qp, const struct urxe_send_wqe *wqe)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t mtu = urxe_qp_mtu(qp), len;
	struct urxe_tx_path path;
	uint64_t wait;

	if (!eng->ops->tx_wait)
		return true;
	if (qp->req.flow_deadline)
		return false;		/* its timer asks again */
	len = wqe->state == URXE_WQE_POSTED ? wqe->length
					    : wqe->length - wqe->sent;
	if (qp->type == IBV_QPT_UD && len > mtu)
		return true;		/* sends nothing (send_wqe) */
	wqe_path(qp, wqe, &path);
	wait = eng->ops->tx_wait(eng->priv, path.dgid,
				 (len < mtu ? len : mtu) + URXE_ROCE_OVERHEAD);
	if (!wait)
		return true;
	urxe_timer_set(qp, &qp->req.flow_deadline, urxe_clock(eng) + wait);
	return false;
}

/* May @wqe send (more) now? */
static bool may_send(struct urxe_eqp *qp, const struct urxe_send_wqe *wqe)
{
	uint32_t max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

	if (!urxe_qp_reliable(qp))
		return flow_room(qp, wqe);
	/* (After a rewind, late answers may put acked_psn ahead of psn.) */
	if (urxe_psn_diff(qp->req.psn, qp->comp.acked_psn) >= (int32_t)qp->eng->budget.window)
		return false;
	if (is_rd_atomic(wqe)) {
		if (qp->req.rd_outstanding >= max_rd)
			return false;
		if (qp->req.resp_pkts >= read_window(qp->eng))
			return false;
	}
	/* The engine's budget: a READ asks for up to a read window. */
	if (!urxe_budget_room(qp,
			      is_rd_atomic(wqe) ? read_window(qp->eng) : 1))
		return false;
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READs and atomics. */
	if ((wqe->send_flags & IBV_SEND_FENCE) && wqe->state == URXE_WQE_POSTED &&
	    qp->req.rd_outstanding)
		return false;
	return true;
}

static void start_wqe(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	wqe->state = URXE_WQE_SENDING;
	wqe->first_psn = qp->req.psn;
	wqe->last_psn = urxe_psn_add(qp->req.psn, urxe_wqe_pkts(qp, wqe) - 1);
	wqe->sent = 0;
	wqe->rcvd = 0;
	wqe->status = IBV_WC_SUCCESS;
}

/* Sends what @wqe may send now; false when it must wait. */
static bool send_wqe(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	while (wqe->state != URXE_WQE_SENT) {
		if (!may_send(qp, wqe))
			return false;
		if (wqe->state == URXE_WQE_POSTED)
			start_wqe(qp, wqe);
		/*
		 * IBA C10-93.1.1: a UD message longer than the MTU emits no
		 * packet and no error: it completes successfully (kernel rxe
		 * does the same).  UD has one-packet opcodes only.
		 */
		if (qp->type == IBV_QPT_UD && wqe->length > urxe_qp_mtu(qp)) {
			wqe->state = URXE_WQE_SENT;
			break;
		}
		if (is_rd_atomic(wqe)) {
			send_rd_atomic_pkt(qp, wqe);
			continue;
		}
		if (send_data_pkt(qp, wqe)) {
			urxe_qp_err_requester(qp, URXE_V_LOC_PROT,
					      wqe->first_psn);
			urxe_comp_send(qp, wqe,
				       urxe_verdicts[URXE_V_LOC_PROT].status);
			urxe_qp_error(qp, IBV_EVENT_QP_FATAL);
			return false;
		}
	}
	return true;
}

/*
 * A local operation (IBA 10.6.7: bind, local invalidate) sends nothing:
 * it is executed when the requester reaches it and completes at once, in
 * order behind what was sent before it.  It takes no PSN (its last PSN is
 * the one before), and a rewind does not run it again.  A failure
 * completes it in error and moves the QP to ERR, as kernel rxe does.
 */
static bool run_local_op(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	int rc;

	if (wqe->state == URXE_WQE_DONE) {
		qp->req.sq_next++;		/* executed before a rewind */
		return true;
	}
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READs and atomics. */
	if ((wqe->send_flags & IBV_SEND_FENCE) && qp->req.rd_outstanding)
		return false;
	wqe->first_psn = qp->req.psn;
	wqe->last_psn = urxe_psn_add(qp->req.psn, URXE_PSN_MASK);
	wqe->sent = 0;
	if (wqe->opcode == IBV_WR_BIND_MW)
		rc = urxe_mw_bind(qp, wqe);
	else
		rc = urxe_mw_invalidate(qp, wqe->imm_inv);
	/* Past it first: completing it may retire it (and move sq_next). */
	qp->req.sq_next++;
	if (rc) {
		enum urxe_verdict v = wqe->opcode == IBV_WR_BIND_MW ?
				      URXE_V_MW_BIND : URXE_V_LOC_INV;

		urxe_qp_err_requester(qp, v, wqe->first_psn);
		urxe_comp_send(qp, wqe, urxe_verdicts[v].status);
		urxe_qp_error(qp, IBV_EVENT_QP_FATAL);
		return false;
	}
	urxe_comp_send(qp, wqe, IBV_WC_SUCCESS);
	return true;
}

void urxe_req_run(struct urxe_eqp *qp)
{
	uint32_t prod;

	if (qp->attr.state != IBV_QPS_RTS || qp->comp.rnr_deadline)
		return;
	prod = atomic_load_explicit(&qp->sq.prod, memory_order_acquire);
	while (qp->req.sq_next != prod) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq,
							 qp->req.sq_next);

		if (is_local_op(wqe)) {
			if (!run_local_op(qp, wqe))
				break;
			continue;
		}
		if (!send_wqe(qp, wqe))
			break;
		qp->req.sq_next++;
		/* Unreliable transports complete once the packets are out. */
		if (!urxe_qp_reliable(qp))
			urxe_comp_send(qp, wqe, IBV_WC_SUCCESS);
	}
	if (urxe_qp_reliable(qp) && !qp->comp.retx_deadline)
		urxe_retx_arm(qp);
}

void urxe_req_rewind(struct urxe_eqp *qp, uint32_t psn)
{
	uint32_t mtu = urxe_qp_mtu(qp), i;

	if (!qp->req.resending ||
	    urxe_psn_before(qp->req.resend_end, qp->req.psn))
		qp->req.resend_end = qp->req.psn;
	qp->req.resending = urxe_psn_before(psn, qp->req.resend_end);

	qp->req.rd_outstanding = 0;
	qp->req.resp_pkts = 0;
	qp->req.unacked_pkts = 0;
	qp->comp.rtt_active = false;		/* Karn: resent PSNs give no samples */
	for (i = qp->comp.sq_comp; i != qp->req.sq_next + 1; i++) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq, i);

		if (i == atomic_load(&qp->sq.prod))
			break;
		if (wqe->state == URXE_WQE_DONE || wqe->state == URXE_WQE_POSTED)
			continue;
		if (urxe_psn_before(wqe->last_psn, psn))
			continue;	/* wholly acknowledged, awaiting its turn */
		/* Resend from the packet holding @psn (or the WQE's start). */
		if (urxe_psn_before(psn, wqe->first_psn))
			psn = wqe->first_psn;
		wqe->sent = is_rd_atomic(wqe) && wqe->opcode != IBV_WR_RDMA_READ ?
			    0 : (uint32_t)urxe_psn_diff(psn, wqe->first_psn) * mtu;
		if (wqe->opcode == IBV_WR_RDMA_READ)
			wqe->sent = wqe->rcvd;
		wqe->state = URXE_WQE_SENDING;
		qp->req.sq_next = i;
		qp->req.psn = wqe->opcode == IBV_WR_RDMA_READ ?
			  urxe_psn_add(wqe->first_psn, wqe->rcvd / mtu) : psn;
		/* Later WQEs go again from the start, with the same PSNs. */
		for (i++; i != atomic_load(&qp->sq.prod); i++) {
			struct urxe_send_wqe *w = urxe_wq_slot(&qp->sq, i);

			if (w->state == URXE_WQE_POSTED)
				break;
			if (is_local_op(w))
				continue;	/* executed: not again */
			w->state = URXE_WQE_POSTED;
		}
		return;
	}
}
