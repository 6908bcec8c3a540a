// SPDX-License-Identifier: BSD-2-Clause
/*
 * The completer: acknowledgements, NAKs, READ responses and atomic
 * acknowledgements retire send WQEs in order (IBA 9.7.5 - 9.7.7), for RC
 * and XRC INI QPs alike (their answers carry no XRCETH); the
 * transport timer and the RNR timer send the requester back (go-back-N);
 * flushing completes everything with IBV_WC_WR_FLUSH_ERR.
 * An AETH reads as a verdict (verdict.h); a WQE fails with a verdict,
 * whose table entry gives its status, counter and log line.
 * Progress lock held throughout.
 */
#include <string.h>

#include <urxe/wire.h>

#include "engine_int.h"

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
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
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * Retires the WQE at the head: its completion is built, its slot freed,
 * then the completion published -- an application that polls it may post
 * into that slot at once (the send queue must not look full then).
 */
static void retire_head(struct urxe_eqp *qp, const struct urxe_send_wqe *wqe)
{
	bool report = wqe->status != IBV_WC_SUCCESS || qp->sq_sig_all ||
		      (wqe->send_flags & IBV_SEND_SIGNALED);
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.status = wqe->status;
	wc.opcode = wc_opcode(wqe->opcode);
	wc.qp_num = qp->qpn;
	if (wqe->status == IBV_WC_SUCCESS)
		wc.byte_len = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			      wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			      8 : wqe->length;
	qp->comp.last_retired_psn = wqe->last_psn;
	/*
	 * Packets waiting in the transmit batch may point into this WQE's
	 * memory (zero copy: a resend, or an unreliable send just built):
	 * they leave before the application may reuse it.
	 */
	if (qp->eng->txb.ntx)
		urxe_tx_flush(qp->eng);
	qp->comp.sq_comp++;
	atomic_store_explicit(&qp->sq.cons, qp->comp.sq_comp,
			      memory_order_release);
	if (report)
		urxe_cq_push(qp->scq, &wc, false);
}

/* Reports, in order, every finished WQE at the head of the queue. */
static void retire(struct urxe_eqp *qp)
{
	uint32_t prod = atomic_load_explicit(&qp->sq.prod, memory_order_acquire);

	while (qp->comp.sq_comp != prod) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq,
							 qp->comp.sq_comp);

		if (wqe->state != URXE_WQE_DONE)
			break;
		retire_head(qp, wqe);
	}
	/*
	 * Late answers (READ responses, an atomic ACK) can finish the very WQE
	 * a rewind sent the requester back to: it resumes after it, with the
	 * PSNs the WQEs after it had.  Never leave sq_next behind sq_comp.
	 */
	if ((int32_t)(qp->comp.sq_comp - qp->req.sq_next) > 0) {
		/* (the slot is free already: its PSN was noted before) */
		qp->req.sq_next = qp->comp.sq_comp;
		qp->req.psn = urxe_psn_add(qp->comp.last_retired_psn, 1);
	}
}

void urxe_comp_send(struct urxe_eqp *qp, struct urxe_send_wqe *wqe,
		    enum ibv_wc_status status)
{
	wqe->status = status;
	wqe->state = URXE_WQE_DONE;
	retire(qp);
}

static bool is_rd_atomic(const struct urxe_send_wqe *wqe)
{
	return wqe->opcode == IBV_WR_RDMA_READ ||
	       wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static uint64_t iba_timeout_ns(const struct urxe_eqp *qp)
{
	return 4096ull << qp->attr.timeout;	/* IBA 9.7.6.1.3 */
}

/*
 * The timer that resends.  The IBA's local ACK timeout (4.096 us x
 * 2^timeout, 67 ms for the usual 14) is how long the requester may go
 * without progress before a retry counts; waiting that long before every
 * resend would make each tail loss cost 67 ms.  So resends happen after a
 * fast timeout from the measured round trip (4 x srtt + 2 ms, at least
 * 5 ms — a scheduler tick or two on a busy machine — doubling while
 * nothing moves, never above the IBA's), and a
 * retry is counted once per IBA timeout without progress: the retry
 * budget stays (retry_cnt + 1) x the IBA timeout.
 */
static uint64_t fast_rto_ns(const struct urxe_eqp *qp)
{
	uint64_t rto = qp->comp.srtt_ns ? 4ull * qp->comp.srtt_ns + 2000000 : 8000000;

	if (qp->comp.rto_ns)
		rto = qp->comp.rto_ns;
	if (rto < 5000000)
		rto = 5000000;
	return rto < iba_timeout_ns(qp) ? rto : iba_timeout_ns(qp);
}

static bool in_flight(struct urxe_eqp *qp)
{
	return qp->comp.sq_comp != qp->req.sq_next ||
	       (qp->req.sq_next != atomic_load(&qp->sq.prod) &&
		((struct urxe_send_wqe *)urxe_wq_slot(&qp->sq,
						      qp->req.sq_next))->state
			== URXE_WQE_SENDING);
}

void urxe_retx_arm(struct urxe_eqp *qp)
{
	uint64_t now;

	if (!qp->attr.timeout || !in_flight(qp)) {
		qp->comp.retx_deadline = 0;	/* timeout 0: no transport timer */
		return;
	}
	now = urxe_clock(qp->eng);
	if (!qp->comp.retx_deadline)
		qp->comp.progress_ns = now;	/* starting from idle */
	urxe_timer_set(qp, &qp->comp.retx_deadline, now + fast_rto_ns(qp));
}

/* Forward progress: the retry budget starts over, the timer is re-armed. */
static void progressed(struct urxe_eqp *qp, uint32_t acked)
{
	uint64_t now = urxe_clock(qp->eng);

	qp->comp.retries_left = qp->attr.retry_cnt;
	qp->comp.progress_ns = now;
	qp->comp.stall_since = 0;
	qp->comp.rto_ns = 0;
	if (qp->comp.rtt_active && !urxe_psn_before(acked, qp->comp.rtt_psn)) {
		uint32_t sample = (uint32_t)(now - qp->comp.rtt_start);

		qp->comp.srtt_ns = qp->comp.srtt_ns ? (7 * qp->comp.srtt_ns + sample) / 8 : sample;
		qp->comp.rtt_active = false;
	}
	qp->comp.retx_deadline = 0;
	urxe_retx_arm(qp);
}

/* Forward progress: acknowledgements up to and including @psn. */
static void ack_upto(struct urxe_eqp *qp, uint32_t psn)
{
	uint32_t next = urxe_psn_add(psn, 1);

	while (qp->comp.sq_comp != qp->req.sq_next) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq,
							 qp->comp.sq_comp);

		/*
		 * READs and atomics complete with their responses only, and
		 * nothing acknowledges past one still unanswered (IBA 9.7.5.1.4):
		 * a later response means its answer was lost.
		 */
		if (is_rd_atomic(wqe)) {
			uint32_t lim = urxe_psn_add(wqe->first_psn,
				wqe->opcode == IBV_WR_RDMA_READ ?
				wqe->rcvd / urxe_qp_mtu(qp) : 0);

			if (urxe_psn_before(lim, next))
				next = lim;
			break;
		}
		if (urxe_psn_before(psn, wqe->last_psn))
			break;
		urxe_comp_send(qp, wqe, IBV_WC_SUCCESS);
	}
	if (urxe_psn_before(qp->comp.acked_psn, next) &&
	    !urxe_psn_before(qp->req.psn, next)) {
		qp->comp.acked_psn = next;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		progressed(qp, psn);
	}
	urxe_qp_schedule(qp);
}

/* The completer's counter of @v, if it has one. */
static void comp_count(struct urxe_eqp *qp, enum urxe_verdict v)
{
	enum urxe_counter c = urxe_verdicts[v].comp_cnt;

	if (c != URXE_V_NO_COUNTER)
		urxe_count(qp->eng, c, 1);
}

static struct urxe_send_wqe *wqe_at_psn(struct urxe_eqp *qp, uint32_t psn)
{
	uint32_t prod = atomic_load(&qp->sq.prod), i;

	for (i = qp->comp.sq_comp; i != prod; i++) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq, i);

		if (wqe->state == URXE_WQE_POSTED)
			break;
		if (!urxe_psn_before(psn, wqe->first_psn) &&
		    !urxe_psn_before(wqe->last_psn, psn))
			return wqe;
	}
	return NULL;
}

/*
 * Verdict @v fails the WQE holding @psn (or the oldest): its counter, the
 * WQE's status, the QP to ERR.  The WQE completes in error as the flush
 * reaches it; the requester's QP reports no async event.
 */
static void fail(struct urxe_eqp *qp, uint32_t psn, enum urxe_verdict v)
{
	const struct urxe_verdict_info *vi = &urxe_verdicts[v];
	struct urxe_send_wqe *wqe = wqe_at_psn(qp, psn);

	if (!wqe)
		wqe = urxe_wq_slot(&qp->sq, qp->comp.sq_comp);
	if (qp->comp.sq_comp == atomic_load(&qp->sq.prod))
		wqe = NULL;
	comp_count(qp, v);
	if (wqe) {
		wqe->status = vi->status;
		wqe->state = URXE_WQE_DONE;
	}
	urxe_qp_err_requester(qp, v, psn);
	urxe_qp_error(qp, URXE_NO_EVENT);
}

/*
 * A NAK other than RNR (@v from its code): what it names before @psn is
 * acknowledged; a sequence error sends the requester back to @psn, any
 * other fails the WQE.
 */
static void nak(struct urxe_eqp *qp, uint32_t psn, enum urxe_verdict v)
{
	if (urxe_psn_before(qp->comp.acked_psn, psn))
		ack_upto(qp, urxe_psn_add(psn, URXE_PSN_MASK));	/* psn - 1 */
	if (v == URXE_V_NAK_SEQ) {
		comp_count(qp, v);
		urxe_req_rewind(qp, psn);
		urxe_qp_schedule(qp);
		return;
	}
	fail(qp, psn, v);
}

static void rnr_nak(struct urxe_eqp *qp, uint32_t psn, uint8_t syn)
{
	comp_count(qp, URXE_V_RNR);
	if (urxe_psn_before(qp->comp.acked_psn, psn))
		ack_upto(qp, urxe_psn_add(psn, URXE_PSN_MASK));
	/* IBA 9.7.5.2.8: rnr_retry 7 means retry forever. */
	if (qp->attr.rnr_retry != 7) {
		if (!qp->comp.rnr_left) {
			fail(qp, psn, URXE_V_RNR_RETRY_EXC);
			return;
		}
		qp->comp.rnr_left--;
	}
	urxe_req_rewind(qp, psn);
	urxe_timer_set(qp, &qp->comp.rnr_deadline,
		       urxe_clock(qp->eng) + (uint64_t)urxe_rnr_timer_us(syn) * 1000);
	qp->comp.retx_deadline = 0;
	urxe_qp_schedule(qp);
}

/*
 * An answer (READ response, atomic ACK) for @wqe acknowledges everything
 * before it (IBA 9.7.5.1.4).  If @wqe is then still not the oldest WQE,
 * an earlier READ or atomic lost its answer: that is an implied NAK, and
 * the requester goes back to it.  True when @wqe is at the head.
 */
static bool answer_at_head(struct urxe_eqp *qp, struct urxe_send_wqe *wqe)
{
	if (wqe != urxe_wq_slot(&qp->sq, qp->comp.sq_comp))
		ack_upto(qp, urxe_psn_add(wqe->first_psn, URXE_PSN_MASK));
	if (wqe == urxe_wq_slot(&qp->sq, qp->comp.sq_comp))
		return true;
	urxe_req_rewind(qp, qp->comp.acked_psn);
	urxe_qp_schedule(qp);
	return false;
}

static void read_resp(struct urxe_eqp *qp, const struct urxe_bth *bth,
		      const struct urxe_opinfo *oi, const uint8_t *pkt,
		      uint32_t paylen)
{
	uint32_t mtu = urxe_qp_mtu(qp), expect;
	struct urxe_send_wqe *wqe = wqe_at_psn(qp, bth->psn);

	if (!wqe || wqe->opcode != IBV_WR_RDMA_READ || wqe->state == URXE_WQE_DONE)
		return;		/* a duplicate or a stray */
	if (!answer_at_head(qp, wqe))
		return;
	expect = urxe_psn_add(wqe->first_psn, wqe->rcvd / mtu);
	if (bth->psn != expect) {
		if (urxe_psn_before(expect, bth->psn)) {
			/* Lost responses: ask again from the first missing. */
			urxe_req_rewind(qp, expect);
			urxe_qp_schedule(qp);
		}
		return;
	}
	if (paylen > wqe->length - wqe->rcvd ||
	    urxe_sge_copy_in(qp->eng, qp->pd, wqe->sge, wqe->num_sge, wqe->rcvd,
			     pkt + oi->hdr_len, paylen)) {
		fail(qp, bth->psn, URXE_V_LOC_PROT);
		return;
	}
	wqe->rcvd += paylen;
	if (qp->req.resp_pkts)
		qp->req.resp_pkts--;
	qp->comp.acked_psn = urxe_psn_add(bth->psn, 1);
	/*
	 * Answers to a request sent before a rewind keep coming: what they
	 * bring need not be asked for again.
	 */
	if (wqe->state == URXE_WQE_SENDING && wqe->sent < wqe->rcvd &&
	    wqe == urxe_wq_slot(&qp->sq, qp->req.sq_next) &&
	    urxe_psn_before(qp->req.psn, qp->comp.acked_psn)) {
		wqe->sent = wqe->rcvd;
		qp->req.psn = qp->comp.acked_psn;
	}
	if (oi->flags & URXE_F_LAST) {
		if (qp->req.rd_outstanding)
			qp->req.rd_outstanding--;
		if (wqe->rcvd == wqe->length)
			urxe_comp_send(qp, wqe, IBV_WC_SUCCESS);
	}
	progressed(qp, bth->psn);
	urxe_qp_schedule(qp);
}

static void atomic_ack(struct urxe_eqp *qp, const struct urxe_bth *bth,
		       const struct urxe_opinfo *oi, const uint8_t *pkt)
{
	struct urxe_send_wqe *wqe = wqe_at_psn(qp, bth->psn);
	uint64_t orig;

	if (!wqe || wqe->state == URXE_WQE_DONE ||
	    (wqe->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	     wqe->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD))
		return;
	if (!answer_at_head(qp, wqe))
		return;
	/* The original value lands in local memory in host order. */
	orig = urxe_get64(pkt + oi->off[URXE_HDR_ATMACK]);
	if (urxe_sge_copy_in(qp->eng, qp->pd, wqe->sge, wqe->num_sge, 0,
			     &orig, sizeof(orig))) {
		fail(qp, bth->psn, URXE_V_LOC_PROT);
		return;
	}
	if (qp->req.rd_outstanding)
		qp->req.rd_outstanding--;
	if (qp->req.resp_pkts)
		qp->req.resp_pkts--;
	urxe_comp_send(qp, wqe, IBV_WC_SUCCESS);
	qp->comp.acked_psn = urxe_psn_add(bth->psn, 1);
	progressed(qp, bth->psn);
	urxe_qp_schedule(qp);
}

void urxe_comp_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
		     const struct urxe_opinfo *oi, const uint8_t *pkt,
		     uint32_t paylen)
{
	enum urxe_verdict v;
	uint8_t syn;

	/* (input.c lets XRC answers reach INI QPs only) */
	if ((qp->type != IBV_QPT_RC && qp->type != IBV_QPT_XRC_SEND) ||
	    (qp->attr.state != IBV_QPS_RTS && qp->attr.state != IBV_QPS_SQD))
		return;
	if (oi->flags & URXE_F_READ) {
		read_resp(qp, bth, oi, pkt, paylen);
		return;
	}
	if (oi->flags & URXE_F_ATOMIC) {
		atomic_ack(qp, bth, oi, pkt);
		return;
	}
	syn = pkt[oi->off[URXE_HDR_AETH]];
	v = urxe_aeth_verdict(syn);
	/*
	 * A NAK names a PSN the requester sent and has not seen answered;
	 * any other is a ghost (a stale incarnation, a spoofer): dropped.
	 */
	if (v != URXE_V_OK &&
	    (urxe_psn_before(bth->psn, qp->comp.acked_psn) ||
	     !urxe_psn_before(bth->psn, qp->req.psn)))
		return;
	switch (v) {
	case URXE_V_OK:
		ack_upto(qp, bth->psn);
		break;
	case URXE_V_DROP:
		break;			/* a reserved AETH type */
	case URXE_V_RNR:
		rnr_nak(qp, bth->psn, syn);
		break;
	default:
		nak(qp, bth->psn, v);
		break;
	}
}

#define URXE_PEER_STALL_MAX_NS 60000000000ull	/* a minute */

/*
 * The peer is an instance on this host that has not read what it was sent
 * (ops->peer_unread): stopped, in a debugger, starved of CPU.  A kernel
 * device answers for a process in that state, so its QPs' peers never see
 * a timeout; here the silence is not counted as a retry either, for up to
 * URXE_PEER_STALL_MAX_NS in a row — then the retries count as usual, so
 * a peer that never reads again still ends the QP.
 */
static bool peer_stalled(struct urxe_eqp *qp, uint64_t now)
{
	struct urxe_engine *e = qp->eng;
	struct urxe_tx_path path;

	if (!e->ops->peer_unread)
		return false;
	urxe_qp_path(qp, &path);
	if (!e->ops->peer_unread(e->priv, path.dgid)) {
		qp->comp.stall_since = 0;
		return false;
	}
	if (!qp->comp.stall_since) {
		qp->comp.stall_since = now;
		urxe_dbg("QP 0x%06x: no answer from QP 0x%06x, whose process (on this host) has not read its socket: not counted as a retry",
			 qp->qpn, qp->attr.dest_qpn);
	}
	return now - qp->comp.stall_since < URXE_PEER_STALL_MAX_NS;
}

/*
 * A timeout without an answer: is there anyone at the destination at all?
 * One netlink query per timeout, until the answer is no (then said once).
 */
static void check_absent(struct urxe_eqp *qp)
{
	struct urxe_engine *e = qp->eng;
	struct urxe_tx_path path;

	if (!e->ops->peer_absent || atomic_load(&qp->req.dst_absent))
		return;
	urxe_qp_path(qp, &path);
	if (e->ops->peer_absent(e->priv, path.dgid))
		urxe_engine_qp_dst_absent(qp, path.dgid);
}

void urxe_comp_timers(struct urxe_eqp *qp, uint64_t now)
{
	if (qp->req.flow_deadline && now >= qp->req.flow_deadline) {
		qp->req.flow_deadline = 0;	/* UC/UD: ask for room again */
		urxe_qp_schedule(qp);
	}
	if (qp->comp.rnr_deadline && now >= qp->comp.rnr_deadline) {
		qp->comp.rnr_deadline = 0;
		qp->comp.retx_deadline = 0;
		urxe_retx_arm(qp);
		urxe_qp_schedule(qp);
	}
	if (!qp->comp.retx_deadline || now < qp->comp.retx_deadline)
		return;
	if (qp->comp.sq_comp == atomic_load(&qp->sq.prod)) {
		qp->comp.retx_deadline = 0;
		return;
	}
	/* IBA 9.7.6.1.3: a retry per timeout without progress; retry_cnt
	 * retries, then the WQE fails (7 means 7). */
	if (now - qp->comp.progress_ns >= iba_timeout_ns(qp) && peer_stalled(qp, now)) {
		/* Nothing lost: wait for it to read, without resending. */
		qp->comp.progress_ns = now;
		urxe_timer_set(qp, &qp->comp.retx_deadline,
			       now + iba_timeout_ns(qp));
		return;
	}
	if (now - qp->comp.progress_ns >= iba_timeout_ns(qp)) {
		check_absent(qp);
		if (!qp->comp.retries_left) {
			struct urxe_engine *e = qp->eng;

			urxe_info("QP 0x%06x: no ACK for PSN %u from QP 0x%06x after its retries: retry exceeded (this instance so far: %llu packets received, %llu refused by the ICRC check, %llu for no QP, %llu malformed)",
				  qp->qpn, qp->comp.acked_psn, qp->attr.dest_qpn,
				  (unsigned long long)atomic_load(&e->ctr.cnt[URXE_CNT_RCVD_PKTS]),
				  (unsigned long long)atomic_load(&e->ctr.cnt[URXE_CNT_DROPPED_ICRC]),
				  (unsigned long long)atomic_load(&e->ctr.cnt[URXE_CNT_DROPPED_NO_QP]),
				  (unsigned long long)atomic_load(&e->ctr.cnt[URXE_CNT_DROPPED]));
			fail(qp, qp->comp.acked_psn, URXE_V_RETRY_EXC);
			return;
		}
		urxe_count(qp->eng, URXE_CNT_COMPLETER_RETRY_ERR, 1);
		urxe_dbg("QP 0x%06x: no progress for a timeout: retry from PSN %u (%u left)",
			 qp->qpn, qp->comp.acked_psn, qp->comp.retries_left);
		qp->comp.retries_left--;
		qp->comp.progress_ns = now;
	}
	urxe_req_rewind(qp, qp->comp.acked_psn);
	qp->comp.rtt_active = false;		/* Karn: no samples from resends */
	qp->comp.rto_ns = (uint32_t)(2 * fast_rto_ns(qp) < iba_timeout_ns(qp) ?
				2 * fast_rto_ns(qp) : iba_timeout_ns(qp));
	urxe_timer_set(qp, &qp->comp.retx_deadline, now + qp->comp.rto_ns);
	urxe_qp_schedule(qp);
}

void urxe_comp_flush(struct urxe_eqp *qp)
{
	uint32_t prod = atomic_load_explicit(&qp->sq.prod, memory_order_acquire);

	while (qp->comp.sq_comp != prod) {
		struct urxe_send_wqe *wqe = urxe_wq_slot(&qp->sq,
							 qp->comp.sq_comp);

		if (wqe->state != URXE_WQE_DONE)
			wqe->status = IBV_WC_WR_FLUSH_ERR;
		wqe->state = URXE_WQE_DONE;
		retire_head(qp, wqe);
	}
	qp->req.sq_next = qp->comp.sq_comp;
	qp->comp.retx_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->req.flow_deadline = 0;
	qp->req.rd_outstanding = 0;
	qp->req.resp_pkts = 0;
}
