// SPDX-License-Identifier: BSD-2-Clause
/*
 * Time and timers: the engine's clock, QP timers and the deadline hint
 * waiters sleep by, the run of expired timers, the XRC watch.
 */

#include "engine_int.h"

uint64_t urxe_now(struct urxe_engine *eng)
{
	return eng->ops->now(eng->priv);
}

uint64_t urxe_engine_clock(struct urxe_engine *eng)
{
	return urxe_clock(eng);
}

void urxe_timer_set(struct urxe_eqp *qp, uint64_t *slot, uint64_t deadline)
{
	*slot = deadline;
	if (deadline && deadline < atomic_load_explicit(&qp->eng->clk.deadline_hint,
							memory_order_relaxed)) {
		atomic_store_explicit(&qp->eng->clk.deadline_hint, deadline,
				      memory_order_relaxed);
		atomic_store(&qp->eng->clk.timer_moved, true);
	}
}

/* Runs the expired transport and RNR timers of every QP. */
void urxe_timers_run(struct urxe_engine *eng)
{
	/* A statistics publish due is a deadline too (urxe_qpstats_tick). */
	uint64_t now = urxe_clock(eng), hint = eng->ctr.stats_due ? eng->ctr.stats_due
							    : UINT64_MAX;
	uint32_t i;

	if (now < atomic_load_explicit(&eng->clk.deadline_hint,
				       memory_order_relaxed))
		return;
	atomic_store_explicit(&eng->clk.deadline_hint, UINT64_MAX,
			      memory_order_relaxed);
	for (i = 0; i < eng->qpt.nlive; i++) {
		struct urxe_eqp *qp = eng->qpt.live[i];

		if (qp->comp.retx_deadline || qp->comp.rnr_deadline ||
		    qp->req.flow_deadline) {
			eng->ctr.acct = qp;
			urxe_comp_timers(qp, now);
			urxe_streaming_update(qp);
			eng->ctr.acct = NULL;
		}
		if (qp->comp.retx_deadline && qp->comp.retx_deadline < hint)
			hint = qp->comp.retx_deadline;
		if (qp->comp.rnr_deadline && qp->comp.rnr_deadline < hint)
			hint = qp->comp.rnr_deadline;
		if (qp->req.flow_deadline && qp->req.flow_deadline < hint)
			hint = qp->req.flow_deadline;
	}
	if (eng->clk.xrc_watch_due) {
		if (now >= eng->clk.xrc_watch_due) {
			eng->clk.xrc_watch_due = now + URXE_XRC_WATCH_NS;
			if (eng->ops->xrc_watch)
				eng->ops->xrc_watch(eng->priv);
		}
		if (eng->clk.xrc_watch_due && eng->clk.xrc_watch_due < hint)
			hint = eng->clk.xrc_watch_due;
	}
	if (hint < atomic_load_explicit(&eng->clk.deadline_hint,
					memory_order_relaxed))
		atomic_store_explicit(&eng->clk.deadline_hint, hint,
				      memory_order_relaxed);
}

void urxe_engine_xrc_watch(struct urxe_engine *eng, bool on)
{
	uint64_t due;

	pthread_mutex_lock(&eng->lock);
	if (!on) {
		eng->clk.xrc_watch_due = 0;
	} else if (!eng->clk.xrc_watch_due) {
		due = urxe_now(eng) + URXE_XRC_WATCH_NS;
		eng->clk.xrc_watch_due = due;
		if (due < atomic_load_explicit(&eng->clk.deadline_hint,
					       memory_order_relaxed)) {
			atomic_store_explicit(&eng->clk.deadline_hint, due,
					      memory_order_relaxed);
			atomic_store(&eng->clk.timer_moved, true);
		}
	}
	pthread_mutex_unlock(&eng->lock);
	if (on)
		urxe_engine_thread_wake(eng);
}

uint64_t urxe_engine_next_deadline(struct urxe_engine *eng)
{
	return atomic_load_explicit(&eng->clk.deadline_hint,
				    memory_order_relaxed);
}
