// SPDX-License-Identifier: BSD-2-Clause
/*
 * The QP table (add, remove, lookup, the index space shared with the XRC
 * SRQs) and the effects of a QP's state changes: modify, reset, flush,
 * move to ERR.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

int urxe_index_alloc(struct urxe_engine *eng)
{
	uint32_t i, idx;

	for (i = 0; i < URXE_QP_SLOTS; i++) {
		idx = (eng->qpt.qp_next + i) & (URXE_QP_SLOTS - 1);
		if (!eng->qpt.qps[idx] && !(eng->qpt.xsrqs && eng->qpt.xsrqs[idx])) {
			/* Round robin: a freed number is not reused at once. */
			eng->qpt.qp_next = idx + 1;
			return (int)idx;
		}
	}
	return -ENOMEM;
}

uint16_t urxe_engine_qp_sport(uint32_t qpn)
{
	/* Flow entropy for ECMP and the source-port pool (IBA A17.5.1). */
	return (uint16_t)(0xc000 | ((qpn * 2654435761u) >> 18));
}

int urxe_engine_qp_add(struct urxe_engine *eng, struct urxe_eqp *qp)
{
	uint32_t idx = 0;
	int rc = 0;

	/* Lock order: the progress lock, then qp_lock (as qp_remove). */
	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qpt.qp_lock);
	if (eng->qpt.nlive == eng->qpt.live_cap) {
		uint32_t cap = eng->qpt.live_cap ? eng->qpt.live_cap * 2 : 16;
		struct urxe_eqp **l = realloc(eng->qpt.live, cap * sizeof(*l));

		if (!l) {
			rc = -ENOMEM;
			goto out;
		}
		eng->qpt.live = l;
		eng->qpt.live_cap = cap;
	}
	rc = urxe_index_alloc(eng);
	if (rc < 0)
		goto out;
	idx = (uint32_t)rc;
	rc = 0;
	qp->eng = eng;
	qp->qpn = eng->slot << URXE_QPN_INDEX_BITS | idx;
	qp->attr.state = IBV_QPS_RESET;
	qp->sport = urxe_engine_qp_sport(qp->qpn);
	memset(qp->cnt, 0, sizeof(qp->cnt));
	eng->qpt.qps[idx] = qp;
	eng->qpt.live[eng->qpt.nlive++] = qp;
	urxe_window_update(eng);
	urxe_qpstats_publish(eng);
out:
	pthread_mutex_unlock(&eng->qpt.qp_lock);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

void urxe_engine_qp_remove(struct urxe_engine *eng, struct urxe_eqp *qp)
{
	uint32_t idx = qp->qpn & (URXE_QP_SLOTS - 1), i;

	/* The progress lock orders us after any packet still using @qp. */
	pthread_mutex_lock(&eng->lock);
	/* An ACK still owed (deferred by a poller) leaves before the QP. */
	if (qp->resp.ack_pending) {
		urxe_resp_send_ack(qp);
		urxe_tx_flush(eng);
	}
	/* Its room in the budget is everyone's again. */
	urxe_budget_unwait(qp);
	eng->budget.inflight -= qp->req.budget_held;
	qp->req.budget_held = 0;
	pthread_mutex_lock(&eng->qpt.qp_lock);
	if (eng->qpt.qps[idx] == qp)
		eng->qpt.qps[idx] = NULL;
	for (i = 0; i < eng->qpt.nlive; i++) {
		if (eng->qpt.live[i] == qp) {
			urxe_qpstats_retire(eng, qp);
			eng->qpt.live[i] = eng->qpt.live[--eng->qpt.nlive];
			break;
		}
	}
	urxe_window_update(eng);
	urxe_qpstats_publish(eng);
	pthread_mutex_unlock(&eng->qpt.qp_lock);
	urxe_pending_remove(qp);
	urxe_mcast_qp_gone(eng, qp);
	if (qp->type == IBV_QPT_XRC_RECV) {
		/* The WQE a TGT QP holds goes back to its owner as flushed. */
		urxe_resp_xrc_release(qp);
		free(qp->srq_wqe);
		qp->srq_wqe = NULL;
	}
	if (qp->resp.wr_mem)
		urxe_mem_put(qp->resp.wr_mem);
	qp->resp.wr_mem = NULL;
	free(qp->resp.rd_res);
	qp->resp.rd_res = NULL;
	pthread_mutex_unlock(&eng->lock);
}

struct urxe_eqp *urxe_qp_lookup(struct urxe_engine *eng, uint32_t qpn)
{
	if (qpn >> URXE_QPN_INDEX_BITS != eng->slot)
		return NULL;
	return eng->qpt.qps[qpn & (URXE_QP_SLOTS - 1)];
}

void urxe_qp_flush(struct urxe_eqp *qp)
{
	urxe_comp_flush(qp);
	urxe_resp_flush(qp);
}

/*
 * An ACK a poller deferred ("ACKs wait for the next call") is owed for
 * messages this side has already completed; a device would have sent it
 * as the packet arrived.  It leaves before the QP changes state: dropped,
 * the peer's send of a message its receiver saw ends flushed when the
 * application moves that QP to ERR on disconnect (DAPL's dapltest -T P
 * did, 6 runs in 10), or retried into a responder that is gone.
 */
static void ack_owed_out(struct urxe_eqp *qp)
{
	if (qp->resp.ack_pending)
		urxe_resp_send_ack(qp);
}

void urxe_qp_error(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	if (qp->attr.state == IBV_QPS_ERR)
		return;
	ack_owed_out(qp);
	qp->attr.state = IBV_QPS_ERR;
	urxe_qp_flush(qp);
	urxe_qpstats_publish(qp->eng);
	if (qp->fatal && ev != URXE_NO_EVENT)
		qp->fatal(qp, ev);
}

/*
 * Modify to RESET (IBA 10.3.1): the QP keeps its attributes, nothing of
 * its connection.  Its queues are emptied (the provider drops their
 * completions), no message is under way either way, no timer armed, and
 * the next connection starts with MSN 0, full retry budgets and no RTT
 * estimate — the path may be another.  The PSNs are not cleared: the
 * modifies back to RTR and RTS must set them (rq_psn, sq_psn).  Kernel
 * rxe's rxe_qp_reset clears the same state.
 */
static void reset_requester(struct urxe_eqp *qp)
{
	qp->req.sq_next = qp->comp.sq_comp = atomic_load(&qp->sq.cons);
	atomic_store(&qp->sq.prod, qp->req.sq_next);
	qp->req.rd_outstanding = 0;
	qp->req.unacked_pkts = 0;
	qp->req.resending = false;
	qp->req.resend_end = qp->req.psn;
	qp->req.resp_pkts = 0;
	qp->req.flow_deadline = 0;
	atomic_store_explicit(&qp->req.streaming, false, memory_order_relaxed);
}

static void reset_completer(struct urxe_eqp *qp)
{
	qp->comp.last_retired_psn = urxe_psn_add(qp->req.psn, URXE_PSN_MASK);
	qp->comp.acked_psn = qp->req.psn;
	qp->comp.retx_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->comp.progress_ns = 0;
	qp->comp.stall_since = 0;
	qp->comp.srtt_ns = 0;
	qp->comp.rto_ns = 0;
	qp->comp.rtt_active = false;
	qp->comp.retries_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
}

static void reset_responder(struct urxe_eqp *qp)
{
	/* A TGT QP's WQE goes back to its SRQ's CQ, as it always has. */
	if (qp->type == IBV_QPT_XRC_RECV)
		urxe_resp_xrc_release(qp);
	atomic_store(&qp->rq.prod, atomic_load(&qp->rq.cons));
	qp->resp.msn = 0;
	qp->resp.rq_active = false;
	qp->resp.rq_off = 0;
	/*
	 * A WQE taken from an SRQ for a message cut short stays held, its
	 * offset 0: the next message fills it.  Dropped, it would be a
	 * receive the application posted and never sees again (fuzz_rx's
	 * accounting of an SRQ's receives caught that).
	 */
	if (qp->resp.wr_mem)
		urxe_mem_put(qp->resp.wr_mem);
	qp->resp.wr_mem = NULL;
	qp->resp.wr_va = 0;
	qp->resp.wr_resid = 0;
	qp->resp.ack_pending = false;
	qp->resp.ack_psn = 0;
	qp->resp.nak_seq_sent = false;
	qp->resp.rd_res_next = 0;
	if (qp->resp.rd_res)
		memset(qp->resp.rd_res, 0,
		       qp->resp.rd_res_n * sizeof(*qp->resp.rd_res));
}

static void qp_reset(struct urxe_eqp *qp)
{
	reset_requester(qp);
	reset_completer(qp);
	reset_responder(qp);
}

/*
 * Packets waiting in the sockets reached the device before the verb that
 * calls this: a device would have handled them already.  An ACK there
 * completes a send that a move to ERR would otherwise flush — the peer's
 * receiver saw the message, so its sender must see success.  (DAPL's
 * dapltest -T P: the server, given the client's last SEND, disconnects;
 * the client's CM thread moved its QP to ERR while the ACK waited for the
 * engine thread, and the test failed 6 runs in 10.)  Progress lock held.
 */
static void input_arrived(struct urxe_engine *eng)
{
	unsigned int rounds = 16;
	int n;

	if (!eng->ops->rx_poll)
		return;
	eng->clk.clock_ns = urxe_now(eng);
	eng->clk.clock_valid = true;
	do
		n = eng->ops->rx_poll(eng->io_priv, eng, 64);
	while (n >= 64 && --rounds);
	eng->clk.clock_valid = false;
}

static bool state_takes_input(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD ||
	       s == IBV_QPS_SQE;
}

/*
 * A requester's new path: a destination on this host that nobody owns
 * (the peer exited between exchanging its address and now, or the GID
 * is wrong) is said at once, not only when the retries run out.  The
 * peer's sockets exist from its QP's creation, before it can have told
 * its QPN.  Progress lock held.
 */
static void dst_check(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	atomic_store(&qp->req.dst_absent, false);
	atomic_store(&qp->req.dst_absent_said, false);
	if (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC &&
	    qp->type != IBV_QPT_XRC_SEND)
		return;
	if (eng->ops->peer_absent &&
	    eng->ops->peer_absent(eng->priv, &qp->attr.dgid))
		urxe_engine_qp_dst_absent(qp, &qp->attr.dgid);
}

/* Moves the responder's READ/atomic resources to @a's count. */
static int modify_rd_res(struct urxe_eqp *qp, const struct urxe_qp_attr *a)
{
	uint32_t n = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
	struct urxe_rd_res *r = calloc(n, sizeof(*r));

	if (!r)
		return -ENOMEM;
	free(qp->resp.rd_res);
	qp->resp.rd_res = r;
	qp->resp.rd_res_n = n;
	qp->resp.rd_res_next = 0;
	return 0;
}

/* The PSNs a modify sets: the requester's and completer's, the responder's. */
static void modify_psns(struct urxe_eqp *qp, const struct urxe_qp_attr *a,
			int mask)
{
	if (mask & IBV_QP_SQ_PSN) {
		qp->attr.sq_psn = a->sq_psn & URXE_PSN_MASK;
		qp->req.psn = qp->attr.sq_psn;
		qp->comp.acked_psn = qp->req.psn;
		qp->req.resend_end = qp->req.psn;
		/* A rewind before the first retirement resumes here. */
		qp->comp.last_retired_psn = urxe_psn_add(qp->req.psn,
							 URXE_PSN_MASK);
	}
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = a->rq_psn & URXE_PSN_MASK;
		qp->resp.epsn = qp->attr.rq_psn;
	}
}

/* The attributes a modify copies, with the retry budgets they reset. */
static void modify_attrs(struct urxe_eqp *qp, const struct urxe_qp_attr *a,
			 int mask)
{
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qpn = a->dest_qpn;
	modify_psns(qp, a, mask);
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.access = a->access;
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->comp.retries_left = qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->comp.rnr_left = qp->attr.rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey = a->pkey;
	if (a->port_mtu)
		qp->attr.port_mtu = a->port_mtu;
	if (mask & IBV_QP_AV) {
		qp->attr.dgid = a->dgid;
		qp->attr.sgid = a->sgid;
		qp->attr.tclass = a->tclass;
		qp->attr.hop_limit = a->hop_limit;
		qp->attr.flow_label = a->flow_label;
		dst_check(qp);
	}
}

/* The new state's effects: reset, flush, or send what is queued. */
static void modify_state(struct urxe_eqp *qp, enum ibv_qp_state state)
{
	enum ibv_qp_state old = qp->attr.state;

	if (state != old) {
		ack_owed_out(qp);
		urxe_tx_flush(qp->eng);
	}
	qp->attr.state = state;
	if (state == IBV_QPS_RESET)
		qp_reset(qp);
	else if (state == IBV_QPS_ERR && old != IBV_QPS_ERR)
		urxe_qp_flush(qp);
	else if (state == IBV_QPS_RTS)
		urxe_qp_schedule(qp);
	if (state != old)
		urxe_qpstats_publish(qp->eng);
}

int urxe_engine_qp_modify(struct urxe_eqp *qp, const struct urxe_qp_attr *a,
			  int mask)
{
	struct urxe_engine *eng = qp->eng;
	int rc = 0;

	pthread_mutex_lock(&eng->lock);
	if ((mask & IBV_QP_STATE) && a->state != qp->attr.state &&
	    state_takes_input(qp->attr.state))
		input_arrived(eng);
	urxe_tgt_begin(qp);
	/*
	 * The transport may have moved the QP to ERR since the caller looked:
	 * from ERR only RESET (or ERR again) is a legal next state.
	 */
	if (qp->attr.state == IBV_QPS_ERR && (mask & IBV_QP_STATE) &&
	    a->state != IBV_QPS_RESET && a->state != IBV_QPS_ERR) {
		rc = -EINVAL;
		goto out;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		rc = modify_rd_res(qp, a);
		if (rc)
			goto out;
	}
	modify_attrs(qp, a, mask);
	if (mask & IBV_QP_STATE)
		modify_state(qp, a->state);
	urxe_budget_sync(qp);
out:
	urxe_tgt_end(qp);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

void urxe_engine_qp_fail(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	urxe_qp_error(qp, ev);
}
