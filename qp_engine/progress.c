// SPDX-License-Identifier: BSD-2-Clause
/*
 * Progress: the list of QPs with work, who runs it (pollers, posters,
 * the engine thread), and the flags by which they hand work to whoever
 * holds the progress lock.
 *
 * The hand-off protocol.  Nobody waits for the progress lock on the
 * packet path: a thread that finds it held leaves a flag, and the holder
 * looks at the flags before it lets go (and once more after: progress()).
 * "holder" is the thread that holds the progress lock (eng->lock); "no
 * lock" means an atomic store or exchange on its own.
 *
 * flag               set by                cleared by            under
 * ------------------ --------------------- --------------------- --------------
 * eng->sched.pending,posters               the holder            list_lock
 * qp->on_list,       (urxe_engine_kick);   (pop_pending); QP     (removal:
 * qp->pending_next   the holder            removal               and the
 *                    (urxe_qp_schedule)    (urxe_pending_remove) progress lock)
 *
 * eng->work          posters after their   the holder, at the    no lock: set
 *                    push; a kick or the   start of each round   after a push,
 *                    engine thread finding of progress_locked,   cleared with a
 *                    the lock held; the    before it reads the   full barrier
 *                    holder leaving work   list
 *                    (16 rounds, ACKs a
 *                    poller deferred);
 *                    urxe_qp_schedule
 *
 * eng->input_wanted  the engine thread     the holder, which     no lock
 *                    finding the lock held then reads the input  (exchange)
 *
 * eng->app.acks_     a polling holder that the holder, at the    progress lock;
 *   deferred_ns      returns with ACKs     start of each round   read by loop.c
 *                    owed
 *
 * eng->clk.          whoever lowers        progress() after      set: progress
 *   timer_moved      deadline_hint         unlocking; it wakes   lock; cleared:
 *                    (timer.c, stats.c)    the engine thread     exchange
 *
 * eng->clk.          lowered: timer_set,   recomputed by         progress lock;
 *   deadline_hint    xrc_watch, stats      urxe_timers_run       read without
 *
 * qp->req.streaming  the holder (urxe_     the holder (the same  progress lock;
 *                    streaming_update)     store)                read: posters
 *
 * eng->app.app_in_   a polling application the same thread,      no lock; read:
 *   progress         thread entering       after progress        the engine
 *                    progress                                    thread
 *
 * eng->app.app_      a polling application (a time:              no lock; read:
 *   progress_ns      thread after progress overwritten)          kick, loop.c
 *
 * eng->app.app_      posters (kick)        (a time: overwritten) no lock
 *   post_ns
 *
 * eng->clk.          the holder, a round   the holder, at the    progress lock
 *   clock_valid      (progress_locked,     round's end
 *                    input_arrived)
 */
#include <errno.h>
#include <time.h>

#include "engine_int.h"

/* Puts @qp on the work list: posters push without the progress lock. */
static void schedule_push(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	pthread_spin_lock(&eng->sched.list_lock);
	if (!atomic_load_explicit(&qp->on_list, memory_order_relaxed)) {
		atomic_store_explicit(&qp->on_list, true, memory_order_relaxed);
		qp->pending_next = eng->sched.pending;
		__atomic_store_n(&eng->sched.pending, qp, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&eng->sched.list_lock);
}

/* Takes @qp off the work list, if it is there (the QP is going away). */
void urxe_pending_remove(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	struct urxe_eqp **pp;

	pthread_spin_lock(&eng->sched.list_lock);
	for (pp = &eng->sched.pending; *pp; pp = &(*pp)->pending_next) {
		if (*pp == qp) {
			__atomic_store_n(pp, qp->pending_next,
					 __ATOMIC_RELAXED);
			break;
		}
	}
	atomic_store_explicit(&qp->on_list, false, memory_order_relaxed);
	pthread_spin_unlock(&eng->sched.list_lock);
}

/*
 * The process is exiting: the ACKs pollers deferred ("ACKs wait for the
 * next call") leave now, or never: the application saw those messages
 * complete, and the peer would retry them into nobody and fail a message
 * delivered (perftest -z's last handshake, every run).  Bounded: a thread
 * that called exit() holding the progress lock must not hang there.
 */
void urxe_engine_exit_acks(struct urxe_engine *eng)
{
	struct timespec until;
	uint32_t i;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 20 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_mutex_timedlock(&eng->lock, &until))
		return;
	for (i = 0; i < eng->qpt.nlive; i++)
		if (eng->qpt.live[i]->resp.ack_pending)
			urxe_resp_send_ack(eng->qpt.live[i]);
	urxe_tx_flush(eng);
	pthread_mutex_unlock(&eng->lock);
}

/*
 * Progress lock held: only its holder takes QPs off the list, so a QP
 * seen on it stays there until this holder's run_pending() looks.
 */
void urxe_qp_schedule(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	if (atomic_load_explicit(&qp->on_list, memory_order_relaxed))
		return;
	schedule_push(qp);
	if (!atomic_load_explicit(&eng->work, memory_order_relaxed))
		atomic_store(&eng->work, true);
}

/*
 * Takes QPs off the work list one at a time: a QP may be scheduled again
 * (by another thread posting, or by its own work) while it is processed,
 * and must then come back on the list, not corrupt a walk of it.
 */
static struct urxe_eqp *pop_pending(struct urxe_engine *eng)
{
	struct urxe_eqp *qp;

	/* The idle (busy-polling) path: no lock for an empty list. */
	if (!__atomic_load_n(&eng->sched.pending, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_spin_lock(&eng->sched.list_lock);
	qp = eng->sched.pending;
	if (qp) {
		__atomic_store_n(&eng->sched.pending, qp->pending_next,
				 __ATOMIC_RELAXED);
		qp->pending_next = NULL;
		atomic_store_explicit(&qp->on_list, false,
				      memory_order_relaxed);
	}
	pthread_spin_unlock(&eng->sched.list_lock);
	return qp;
}

static void run_pending(struct urxe_engine *eng)
{
	struct urxe_eqp *qp;
	unsigned int budget = 4096;

	while (budget-- && (qp = pop_pending(eng))) {
		if (qp->attr.state == IBV_QPS_ERR) {
			/* Work posted to a QP in error is flushed. */
			urxe_qp_flush(qp);
			continue;
		}
		eng->ctr.acct = qp;
		if (qp->resp.ack_pending)
			urxe_resp_send_ack(qp);
		urxe_req_run(qp);
		urxe_streaming_update(qp);
		eng->ctr.acct = NULL;
	}
}

/*
 * Who runs progress.  A thread polling a CQ wants its completions at once
 * and will call again soon; a poster wants its packets out and may not
 * call again (ib_write_lat spins on memory); the engine thread does all.
 */
enum prog_mode {
	PROG_POLL,	/* return as soon as input made completions */
	PROG_KICK,	/* send what is flagged; input is the others' job */
	PROG_ENGINE,
};

/*
 * Progress lock held: do everything flagged, then drain the sockets.
 * Returns 1 if input arrived (or completions were made); @clock, if not
 * NULL, gets the time its last round began.
 */
static int progress_locked(struct urxe_engine *eng, enum prog_mode mode,
			   uint64_t *clock)
{
	uint64_t cqes = eng->ctr.cqes;
	int did = 0, n, rounds = 0;
	bool input;

	do {
		/*
		 * Bounded: with both ends of a connection in this process,
		 * traffic could keep the holder here for ever, away from its
		 * application.  Leftover work stays flagged for the next one.
		 */
		if (++rounds > 16) {
			atomic_store(&eng->work, true);
			break;
		}
		eng->clk.clock_ns = urxe_now(eng);
		eng->clk.clock_valid = true;
		/*
		 * Cleared before the list is read, with a full barrier (a
		 * poster sets it after its push).  Read first: an idle poll
		 * finds it clear, and an atomic exchange less each time.
		 */
		if (atomic_load_explicit(&eng->work, memory_order_relaxed))
			atomic_store(&eng->work, false);
		atomic_store_explicit(&eng->app.acks_deferred_ns, 0,
				      memory_order_relaxed);
		run_pending(eng);
		/*
		 * A poster reads no input (the pollers' and the engine
		 * thread's job) unless the engine thread, finding the lock
		 * held, left it to the holder.
		 */
		input = mode != PROG_KICK;
		if (atomic_load_explicit(&eng->input_wanted,
					 memory_order_relaxed))
			input = atomic_exchange(&eng->input_wanted, false) ||
				input;
		if (!input) {
			n = 0;
			urxe_timers_run(eng);
			break;
		}
		/* Input first: a late ACK waiting in the socket is not a loss. */
		n = eng->ops->rx_poll ?
		    eng->ops->rx_poll(eng->io_priv, eng, 64) : 0;
		if (n > 0)
			did = 1;
		urxe_timers_run(eng);
		if (mode == PROG_POLL && eng->ctr.cqes != cqes) {
			/*
			 * Messages arrived: the caller returns to them now.
			 * The ACKs this input owes stay flagged and leave at
			 * its next call — typically the post of its answer,
			 * in the same batch — or from the engine thread if it
			 * does not call again.  (Input that only completes
			 * sends, or WRITEs without immediate, defers nothing:
			 * a program spinning on memory may never call.)
			 */
			if (__atomic_load_n(&eng->sched.pending,
					    __ATOMIC_RELAXED)) {
				if (!atomic_load_explicit(&eng->work,
							  memory_order_relaxed))
					atomic_store(&eng->work, true);
				atomic_store_explicit(&eng->app.acks_deferred_ns,
						      urxe_clock(eng),
						      memory_order_relaxed);
			}
			break;
		}
		run_pending(eng);
	} while (n > 0 || atomic_load(&eng->work));
	urxe_tx_flush(eng);
	urxe_qpstats_tick(eng);
	if (clock)
		*clock = eng->clk.clock_ns;
	eng->clk.clock_valid = false;
	return did;
}

static int progress(struct urxe_engine *eng, enum prog_mode mode,
		    uint64_t *clock);

/*
 * Progress from a thread that polls (an empty CQ, a wait for an event):
 * it will call again soon, so the engine thread may keep out of its way.
 * It called in until it returns: a run made slow by system calls (or a
 * tracer) must not make the next post think it gone.
 */
int urxe_engine_progress(struct urxe_engine *eng)
{
	uint64_t clock = 0;
	int did;

	if (urxe_in_engine_thread(eng)) {
		did = progress(eng, PROG_ENGINE, NULL);
		return did > 0 ? did : 0;
	}
	/*
	 * Stamped at the end only: while it runs, app_in_progress says so
	 * (a clock read less on every poll of an empty CQ).
	 */
	atomic_store_explicit(&eng->app.app_in_progress, true,
			      memory_order_relaxed);
	did = progress(eng, PROG_POLL, &clock);
	atomic_store_explicit(&eng->app.app_in_progress, false,
			      memory_order_relaxed);
	/* The last round's clock (a run lasts microseconds), or a reading. */
	if (!clock)
		clock = urxe_now(eng);
	atomic_store_explicit(&eng->app.app_progress_ns, clock,
			      memory_order_relaxed);
	return did;
}

int urxe_engine_progress_thread(struct urxe_engine *eng)
{
	return progress(eng, PROG_ENGINE, NULL);
}

static int progress(struct urxe_engine *eng, enum prog_mode mode,
		    uint64_t *clock)
{
	int did;

	if (pthread_mutex_trylock(&eng->lock)) {
		/*
		 * The holder drains the sockets anyway; new work (a post) it
		 * must be told about.  A poller that flagged it each time
		 * would keep the holder looping, away from its own caller.
		 */
		if (mode == PROG_POLL)
			return 0;
		if (mode == PROG_KICK) {
			atomic_store(&eng->work, true);
			return 0;
		}
		/*
		 * The engine thread, woken by input (or a timer) while a
		 * poster holds the lock — and a poster reads no input.  The
		 * socket stays readable until someone does: waking on it again
		 * and again would only spin.  The holder reads it before it
		 * lets go; one more try covers a holder that let go meanwhile
		 * (it looks at the flags after unlocking, we at the lock after
		 * raising them).
		 */
		atomic_store(&eng->input_wanted, true);
		atomic_store(&eng->work, true);
		if (pthread_mutex_trylock(&eng->lock))
			return -EBUSY;
	}
	did = progress_locked(eng, mode, clock);
	pthread_mutex_unlock(&eng->lock);
	/*
	 * Work flagged after our last check, while we were unlocking (a
	 * poller leaves posts to the holder; input it takes when asked).
	 */
	if (((mode != PROG_POLL && atomic_load(&eng->work)) ||
	     atomic_load(&eng->input_wanted)) &&
	    !pthread_mutex_trylock(&eng->lock)) {
		did |= progress_locked(eng, mode, clock);
		pthread_mutex_unlock(&eng->lock);
	}
	/* An earlier deadline: the engine thread's timer must know it. */
	if (atomic_load_explicit(&eng->clk.timer_moved, memory_order_relaxed) &&
	    atomic_exchange(&eng->clk.timer_moved, false) &&
	    !urxe_in_engine_thread(eng))
		urxe_engine_thread_wake(eng);
	return did;
}

/*
 * After a post: send now if the lock is free.  A poster need not call
 * again (ib_write_lat spins on memory after posting), so this does not
 * count as an application driving progress, and leaves input to pollers
 * and the engine thread.
 */
void urxe_engine_kick(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	uint64_t last, post, now;

	/* Pushed, then flagged: a holder that clears the flag sees the QP. */
	schedule_push(qp);
	if (!atomic_load_explicit(&eng->work, memory_order_relaxed))
		atomic_store(&eng->work, true);
	/*
	 * A QP streaming to its peer while the application polls: these
	 * packets join the next poll's batch (one GSO send for many posts)
	 * rather than leaving one system call per post.  An idle QP — a
	 * latency test's — sends at once.  "Recently" is since the poll or
	 * the last post, whichever came later: a burst of posts after a poll
	 * waits for the next poll whole, even if a post of it had to send
	 * (a slow system call, under a tracer, would otherwise make every
	 * later post of the burst send alone).  Posts that never end in a
	 * poll leave their packets to the engine thread, which the ACKs of
	 * those in flight wake.
	 */
	if (atomic_load_explicit(&qp->req.streaming, memory_order_relaxed)) {
		last = atomic_load_explicit(&eng->app.app_progress_ns,
					    memory_order_relaxed);
		post = atomic_load_explicit(&eng->app.app_post_ns,
					    memory_order_relaxed);
		now = urxe_now(eng);
		if (last && now - (post > last ? post : last) <
			    URXE_POST_DEFER_NS) {
			atomic_store_explicit(&eng->app.app_post_ns, now,
					      memory_order_relaxed);
			return;
		}
	}
	progress(eng, PROG_KICK, NULL);
	atomic_store_explicit(&eng->app.app_post_ns, urxe_now(eng),
			      memory_order_relaxed);
}

void urxe_engine_settle(struct urxe_engine *eng)
{
	pthread_mutex_lock(&eng->lock);
	progress_locked(eng, PROG_KICK, NULL);
	pthread_mutex_unlock(&eng->lock);
}

bool urxe_engine_has_work(struct urxe_engine *eng)
{
	return atomic_load(&eng->work);
}
