// SPDX-License-Identifier: BSD-2-Clause
/*
 * The flow-control budget: packets in flight, all QPs' together,
 * shared by the QPs as they need it, and one QP's window.
 */

#include "engine_int.h"

void urxe_budget_unwait(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	struct urxe_eqp **pp, *prev = NULL;

	if (!qp->req.budget_waiting)
		return;
	for (pp = &eng->budget.budget_wait; *pp;
	     prev = *pp, pp = &(*pp)->req.budget_next) {
		if (*pp != qp)
			continue;
		*pp = qp->req.budget_next;
		if (eng->budget.budget_wait_tail == qp)
			eng->budget.budget_wait_tail = prev;
		break;
	}
	qp->req.budget_next = NULL;
	qp->req.budget_waiting = false;
}

void urxe_budget_sync(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t now = urxe_qp_inflight(qp), freed, room;
	struct urxe_eqp *w;

	if (now == qp->req.budget_held)
		return;
	freed = qp->req.budget_held > now ? qp->req.budget_held - now : 0;
	eng->budget.inflight += now - qp->req.budget_held;
	qp->req.budget_held = now;
	if (!freed || !eng->budget.budget_wait)
		return;
	/* Room came back: as many waiters as it can serve, oldest first. */
	room = eng->budget.inflight < eng->budget.budget_pkts ?
	       eng->budget.budget_pkts - eng->budget.inflight : 0;
	while (room && (w = eng->budget.budget_wait)) {
		eng->budget.budget_wait = w->req.budget_next;
		if (!eng->budget.budget_wait)
			eng->budget.budget_wait_tail = NULL;
		w->req.budget_next = NULL;
		w->req.budget_waiting = false;
		urxe_qp_schedule(w);
		room = room > URXE_ACK_EVERY ? room - URXE_ACK_EVERY : 0;
	}
}

bool urxe_budget_room(struct urxe_eqp *qp, uint32_t pkts)
{
	struct urxe_engine *eng = qp->eng;

	if (!eng->budget.budget_pkts)
		return true;
	urxe_budget_sync(qp);
	/* An empty budget always lets one request through. */
	if (!eng->budget.inflight || eng->budget.inflight + pkts <= eng->budget.budget_pkts)
		return true;
	if (!qp->req.budget_waiting) {
		qp->req.budget_waiting = true;
		qp->req.budget_next = NULL;
		if (eng->budget.budget_wait_tail)
			eng->budget.budget_wait_tail->req.budget_next = qp;
		else
			eng->budget.budget_wait = qp;
		eng->budget.budget_wait_tail = qp;
	}
	return false;
}

/* Whether @qp has packets in flight, for posters (urxe_engine_kick). */
void urxe_streaming_update(struct urxe_eqp *qp)
{
	urxe_budget_sync(qp);
	atomic_store_explicit(&qp->req.streaming,
			      urxe_qp_reliable(qp) &&
			      urxe_psn_diff(qp->req.psn,
					    qp->comp.acked_psn) > 0,
			      memory_order_relaxed);
}

/*
 * One QP's window: the whole budget, within bounds.  The budget is the
 * engine's, not divided among its QPs: QPs that send take room as they
 * need it (urxe_budget_room), so 1,000 QPs keep the windows, and the
 * ACK interval, of one.  Under qp_lock.
 */
void urxe_window_update(struct urxe_engine *eng)
{
	uint32_t w = URXE_WINDOW_PKTS;

	if (eng->budget.budget_pkts) {
		w = eng->budget.budget_pkts;
		w = w < URXE_WINDOW_MIN ? URXE_WINDOW_MIN :
		    w > URXE_WINDOW_MAX ? URXE_WINDOW_MAX : w;
	}
	eng->budget.window = w;
}

void urxe_engine_set_read_window(struct urxe_engine *eng, uint32_t pkts)
{
	pthread_mutex_lock(&eng->lock);
	eng->budget.read_window = pkts;
	pthread_mutex_unlock(&eng->lock);
}

void urxe_engine_set_budget(struct urxe_engine *eng, uint32_t pkts)
{
	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qpt.qp_lock);
	eng->budget.budget_pkts = pkts;
	urxe_window_update(eng);
	pthread_mutex_unlock(&eng->qpt.qp_lock);
	pthread_mutex_unlock(&eng->lock);
}
