// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine's side of the slot's statistics record (host/stats.c).  The
 * engine-wide counters live in the record itself (eng->ctr.cnt points there),
 * bumped as they happen.  Per-QP counters are plain fields of each QP,
 * bumped under the progress lock, and copied into the record's QP table
 * here — when the set of QPs or a state changes, and at most every
 * URXE_STATS_PUBLISH_NS while packets move — so the packet path never
 * touches the table nor its sequence lock.  Progress lock held.
 */
#include <string.h>

#include <urxe/host.h>

#include "engine_int.h"

_Static_assert(URXE_CNT__COUNT <= URXE_STATS_COUNTERS,
	       "the statistics record has room for every counter");

_Static_assert(URXE_CNT__QP <= URXE_STATS_QP_COUNTERS,
	       "the statistics record has room for every counter of a QP");
#define QP_COUNTERS URXE_CNT__QP

static uint64_t packets(struct urxe_engine *eng)
{
	return atomic_load_explicit(&eng->ctr.cnt[URXE_CNT_SENT_PKTS],
				    memory_order_relaxed) +
	       atomic_load_explicit(&eng->ctr.cnt[URXE_CNT_RCVD_PKTS],
				    memory_order_relaxed);
}

static void qp_entry(const struct urxe_eqp *qp, struct urxe_stats_qp *e)
{
	memset(e, 0, sizeof(*e));
	e->qpn = qp->qpn;
	e->type = (uint8_t)qp->type;
	e->state = (uint8_t)qp->attr.state;
	memcpy(e->cnt, qp->cnt, QP_COUNTERS * sizeof(e->cnt[0]));
}

void urxe_qpstats_publish(struct urxe_engine *eng)
{
	struct urxe_stats_rec *rec = eng->ctr.stats;
	struct urxe_stats_qp e;
	uint32_t i, n;

	if (!rec)
		return;
	n = eng->qpt.nlive < URXE_STATS_QPS ? eng->qpt.nlive : URXE_STATS_QPS;
	urxe_stats_shape(rec, URXE_CNT__COUNT, QP_COUNTERS);
	urxe_stats_qps_begin(rec);
	for (i = 0; i < n; i++) {
		qp_entry(eng->qpt.live[i], &e);
		urxe_stats_qp_put(rec, i, &e);
	}
	urxe_stats_qps_end(rec, n, eng->qpt.nlive);
	eng->ctr.stats_mark = packets(eng);
	eng->ctr.stats_due = 0;
}

/*
 * @qp leaves: its figures now, not as last published (up to
 * URXE_STATS_PUBLISH_NS old), are the ones kept.
 */
void urxe_qpstats_retire(struct urxe_engine *eng, const struct urxe_eqp *qp)
{
	struct urxe_stats_qp e;

	if (!eng->ctr.stats)
		return;
	qp_entry(qp, &e);
	urxe_stats_qp_retire(eng->ctr.stats, &e);
}

void urxe_qpstats_tick(struct urxe_engine *eng)
{
	uint64_t now;

	if (!eng->ctr.stats ||
	    (!eng->ctr.stats_due && packets(eng) == eng->ctr.stats_mark))
		return;		/* the idle (busy-polling) path: two loads */
	now = urxe_clock(eng);
	if (eng->ctr.stats_due && now >= eng->ctr.stats_due) {
		urxe_qpstats_publish(eng);
		return;
	}
	if (eng->ctr.stats_due)
		return;
	/*
	 * Packets moved since the last publish: publish once the period is
	 * over, even if nothing calls in by then — the deadline wakes the
	 * engine thread (run_timers keeps it in the hint).
	 */
	eng->ctr.stats_due = now + URXE_STATS_PUBLISH_NS;
	if (eng->ctr.stats_due < atomic_load_explicit(&eng->clk.deadline_hint,
						  memory_order_relaxed)) {
		atomic_store_explicit(&eng->clk.deadline_hint,
				      eng->ctr.stats_due, memory_order_relaxed);
		atomic_store(&eng->clk.timer_moved, true);
	}
}
