// SPDX-License-Identifier: BSD-2-Clause
/*
 * Completion queues.  The engine pushes work completions into the CQ's
 * ring (qp_engine/queue.c); the application pops them in ibv_poll_cq,
 * which runs the engine itself when the ring is empty, so a busy-polling
 * application needs no other thread.  Arming (ibv_req_notify_cq) makes the
 * ring call back on its next completion: the CQ then posts itself to its
 * channel.  A ring overrun raises IBV_EVENT_CQ_ERR on the context.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

_Static_assert(offsetof(struct ibv_cq_ex, async_events_completed) ==
	       offsetof(struct ibv_cq, async_events_completed),
	       "struct ibv_cq must be the prefix of struct ibv_cq_ex");

static atomic_uint next_handle = 1;

static struct ibv_cq *ucq_ibv(struct urxe_cq *cq)
{
	return ibv_cq_ex_to_cq(&cq->ibv);
}

/* Ring callback, ring lock not held: an armed ring got its completion. */
static void cq_notify(struct urxe_cq_ring *ring)
{
	struct urxe_cq *cq = urxe_container_of(ring, struct urxe_cq, ring);
	struct ibv_cq *ibcq = ucq_ibv(cq);

	if (cq->ch && !urxe_evpipe_post(&cq->ch->ev, &ibcq))
		atomic_fetch_add(&cq->comp_events, 1);
}

/* Ring callback, once: a completion found the ring full. */
static void cq_overrun(struct urxe_cq_ring *ring)
{
	struct urxe_cq *cq = urxe_container_of(ring, struct urxe_cq, ring);
	struct ibv_async_event ev;

	urxe_warn("CQ %u overrun: IBV_EVENT_CQ_ERR", cq->ibv.handle);
	if (!cq->async)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.element.cq = ucq_ibv(cq);
	ev.event_type = IBV_EVENT_CQ_ERR;
	if (!urxe_evpipe_post(cq->async, &ev))
		atomic_fetch_add(&cq->async_events, 1);
}

static int check_cqe(int cqe)
{
	return cqe < 1 || cqe > URXE_MAX_CQE ? -EINVAL : 0;
}

int urxe_cq_create(struct urxe_dev *dev, struct ibv_context *ctx, int cqe,
		   void *cq_context, struct ibv_comp_channel *ibch,
		   int comp_vector, struct urxe_evpipe *async,
		   struct ibv_cq **out)
{
	struct urxe_cq *cq;
	int rc;

	if (!ctx || check_cqe(cqe)) {
		urxe_dbg("create_cq: %d entries (1 .. %d): EINVAL", cqe,
			 URXE_MAX_CQE);
		return -EINVAL;
	}
	if (comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		urxe_dbg("create_cq: completion vector %d (0 .. %d): EINVAL",
			 comp_vector, ctx->num_comp_vectors - 1);
		return -EINVAL;
	}
	if (ibch && ibch->context != ctx) {
		urxe_dbg("create_cq: the completion channel is another context's: EINVAL");
		return -EINVAL;
	}
	if (dev->dead)
		return -EIO;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	rc = urxe_cq_ring_init(&cq->ring, (uint32_t)cqe);
	if (rc) {
		free(cq);
		return rc;
	}
	cq->ring.notify = cq_notify;
	cq->ring.overrun = cq_overrun;
	cq->dev = dev;
	cq->async = async;
	if (ibch) {
		cq->ch = to_uch(ibch);
		atomic_fetch_add(&cq->ch->users, 1);
	}
	atomic_init(&cq->users, 0);
	atomic_init(&cq->comp_events, 0);
	atomic_init(&cq->async_events, 0);
	cq->ibv.context = ctx;
	cq->ibv.channel = ibch;
	cq->ibv.cq_context = cq_context;
	cq->ibv.handle = atomic_fetch_add(&next_handle, 1);
	cq->ibv.cqe = cqe;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	pthread_mutex_init(&cq->poll_lock, NULL);
	*out = ucq_ibv(cq);
	return 0;
}

static bool is_this_cq(const void *rec, const void *cq)
{
	const struct ibv_cq *const *p = rec;

	return *p == cq;
}

static bool is_this_cq_event(const void *rec, const void *cq)
{
	const struct ibv_async_event *ev = rec;

	return ev->event_type == IBV_EVENT_CQ_ERR && ev->element.cq == cq;
}

/* Events posted and not yet acknowledged: (comp, async). */
static void unacked(struct urxe_cq *cq, unsigned int *comp,
		    unsigned int *async)
{
	struct ibv_cq *ibcq = ucq_ibv(cq);

	pthread_mutex_lock(&ibcq->mutex);
	*comp = atomic_load(&cq->comp_events) - ibcq->comp_events_completed;
	*async = atomic_load(&cq->async_events) - ibcq->async_events_completed;
	pthread_mutex_unlock(&ibcq->mutex);
}

int urxe_cq_destroy(struct ibv_cq *ibcq)
{
	struct urxe_cq *cq = to_ucq(ibcq);
	unsigned int comp, async;

	if (atomic_load(&cq->users) > 0)
		return -EBUSY;
	/*
	 * No QP completes here any more, so no event can be added.  Events
	 * still in a pipe would name a freed CQ: drop them (the kernel drops
	 * unread events of a destroyed CQ too), then wait for the acks of
	 * those the application read.
	 */
	unacked(cq, &comp, &async);
	if (comp && cq->ch)
		atomic_fetch_sub(&cq->comp_events,
				 urxe_evpipe_purge(&cq->ch->ev, is_this_cq, ibcq));
	if (async && cq->async)
		atomic_fetch_sub(&cq->async_events,
				 urxe_evpipe_purge(cq->async, is_this_cq_event, ibcq));
	pthread_mutex_lock(&ibcq->mutex);
	while ((int)(atomic_load(&cq->comp_events) - ibcq->comp_events_completed) > 0 ||
	       (int)(atomic_load(&cq->async_events) - ibcq->async_events_completed) > 0)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	if (cq->ch)
		atomic_fetch_sub(&cq->ch->users, 1);
	urxe_cq_ring_fini(&cq->ring);
	pthread_mutex_destroy(&cq->poll_lock);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

/*
 * Moves the pending completions to a ring of the new size.  The indices
 * run free and stay as they are; only the slots move, under the ring lock
 * the engine pushes under, so nothing is lost or reordered.
 */
int urxe_cq_resize(struct ibv_cq *ibcq, int cqe)
{
	struct urxe_cq *cq = to_ucq(ibcq);
	struct urxe_cq_ring *r = &cq->ring;
	uint32_t slots, prod, cons, i;
	struct ibv_wc *wc, *old;

	if (check_cqe(cqe))
		return -EINVAL;
	/*
	 * Completions of work posted so far count: a post that found the
	 * engine busy left its work flagged for the holder, maybe not done.
	 */
	if (cq->dev->eng && !cq->dev->dead)
		urxe_engine_settle(cq->dev->eng);
	slots = urxe_pow2_at_least((uint32_t)cqe + 1);
	wc = calloc(slots, sizeof(*wc));
	if (!wc)
		return -ENOMEM;
	pthread_spin_lock(&r->lock);
	cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&r->prod, memory_order_relaxed);
	if (prod - cons > (uint32_t)cqe) {
		pthread_spin_unlock(&r->lock);
		free(wc);
		return -EINVAL;		/* fewer entries than it holds */
	}
	for (i = cons; i != prod; i++)
		wc[i & (slots - 1)] = r->wc[i & r->mask];
	old = r->wc;
	r->wc = wc;
	r->mask = slots - 1;
	r->cqe = (uint32_t)cqe;
	pthread_spin_unlock(&r->lock);
	free(old);
	ibcq->cqe = cqe;
	return 0;
}

/*
 * Under the ring lock the engine pushes under, walking from the newest
 * entry back: each kept entry slides toward prod by the number dropped
 * after it, then cons skips the freed slots.
 */
unsigned int urxe_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct urxe_cq_ring *r = &to_ucq(ibcq)->ring;
	unsigned int dropped = 0;
	uint32_t cons, i;

	pthread_spin_lock(&r->lock);
	cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	i = atomic_load_explicit(&r->prod, memory_order_relaxed);
	while (i != cons) {
		i--;
		if (r->wc[i & r->mask].qp_num == qpn)
			dropped++;
		else if (dropped)
			r->wc[(i + dropped) & r->mask] = r->wc[i & r->mask];
	}
	atomic_store_explicit(&r->cons, cons + dropped, memory_order_release);
	pthread_spin_unlock(&r->lock);
	return dropped;
}

int urxe_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct urxe_cq *cq = to_ucq(ibcq);
	struct urxe_engine *eng;

	if (urxe_unlikely(n < 0))
		return -EINVAL;
	if (!urxe_cq_empty(&cq->ring))
		return urxe_cq_pop(&cq->ring, n, wc);
	/* Nothing waiting: run the engine here, no wake-up needed. */
	eng = cq->dev->eng;
	if (eng && !cq->dev->dead)
		urxe_engine_progress(eng);
	if (!urxe_cq_empty(&cq->ring)) {
		cq->idle_polls = 0;
		return urxe_cq_pop(&cq->ring, n, wc);
	}
	/*
	 * Still nothing: the peer (or this process's engine thread) has yet
	 * to run.  On a machine with fewer cores than busy threads, it may
	 * be queued behind this very spinner until the time slice ends,
	 * milliseconds away: give the core up now and then.
	 */
	if (++cq->idle_polls % URXE_IDLE_POLLS_YIELD == 0)
		sched_yield();
	return 0;
}

int urxe_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct urxe_cq_ring *r = &to_ucq(ibcq)->ring;

	/* As kernel rxe: "next completion" overrides "next solicited". */
	pthread_spin_lock(&r->lock);
	if (!solicited_only)
		r->armed = 1;
	else if (!r->armed)
		r->armed = 2;
	pthread_spin_unlock(&r->lock);
	return 0;
}

void urxe_cq_ack_events(struct ibv_cq *ibcq, unsigned int nevents)
{
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->comp_events_completed += nevents;
	pthread_cond_broadcast(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}

void urxe_cq_ack_async(struct ibv_cq *ibcq)
{
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->async_events_completed++;
	pthread_cond_broadcast(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}
