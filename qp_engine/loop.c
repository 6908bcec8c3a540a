// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine thread.  A NIC works while the application does something
 * else (the passive side of a WRITE may sleep in read()), so each engine
 * has a thread parked in a private libev loop: an ev_io per socket, one
 * ev_timer for the earliest transport deadline and an ev_async doorbell.
 * It runs progress exactly as application threads do, under the same
 * progress lock.  Signals are blocked in it: they belong to the
 * application.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include <urxe/log.h>

#include "engine_int.h"

static void rearm_timer(struct urxe_engine *eng)
{
	uint64_t d = urxe_engine_next_deadline(eng), now;

	ev_timer_stop(eng->th.loop, &eng->th.timer);
	if (d == UINT64_MAX)
		return;
	now = urxe_now(eng);
	ev_timer_set(&eng->th.timer, d > now ? (double)(d - now) / 1e9 : 0.0,
		     0.0);
	ev_timer_start(eng->th.loop, &eng->th.timer);
}

static bool apps_active(struct urxe_engine *eng);

/*
 * Input arrived while an application was calling in.  One that polls a
 * CQ calls again within a microsecond or so and reads it; one that has
 * turned to spinning on memory (ib_write_lat waits so for the peer's
 * WRITE, its own send completed) or lost its core never will, or not
 * soon.  Wait until it calls, or until URXE_APP_SILENT_NS have passed
 * since its last call: then this thread takes the input itself, at once
 * rather than after a backoff.
 */
static bool app_takes_input(struct urxe_engine *eng, uint64_t silent)
{
	uint64_t t0 = urxe_now(eng), now = t0, last;

	for (;;) {
		last = atomic_load_explicit(&eng->app.app_progress_ns,
					    memory_order_relaxed);
		if (last > t0 ||
		    atomic_load_explicit(&eng->app.app_in_progress,
					 memory_order_relaxed))
			return true;
		if (now - last >= silent)
			break;
		urxe_cpu_relax();
		now = urxe_now(eng);
	}
	eng->th.taken++;
	eng->app.app_takes = 0;
	return false;
}

/*
 * A poller deferred ACKs and has not come back for them: the peer waits.
 * Anything else flagged is the active application threads' to do.
 */
static bool acks_overdue(struct urxe_engine *eng)
{
	uint64_t t = atomic_load_explicit(&eng->app.acks_deferred_ns,
					  memory_order_relaxed);

	return t && urxe_now(eng) - t >= URXE_ACK_OVERDUE_NS;
}
static void park_io(struct urxe_engine *eng, bool park);

static void arm_backoff(struct urxe_engine *eng)
{
	if (ev_is_active(&eng->th.backoff))
		return;
	ev_timer_set(&eng->th.backoff, eng->th.backoff_s, 0.0);
	ev_timer_start(eng->th.loop, &eng->th.backoff);
}

/* Is input waiting in a socket? */
static bool input_waiting(struct urxe_engine *eng)
{
	struct pollfd p[sizeof(eng->th.io) / sizeof(eng->th.io[0])];
	unsigned int i;

	for (i = 0; i < eng->th.nio; i++)
		p[i] = (struct pollfd){ .fd = eng->th.io[i].fd, .events = POLLIN };
	return poll(p, eng->th.nio, 0) > 0;
}

/*
 * Nobody polls (the target of ib_read_lat sleeps in read()): after work,
 * stay a little for more.  A thread woken from epoll takes ~10 us to run
 * on a busy or sleeping core, longer than a requester takes to ask again
 * (ib_read_lat: 26 -> 11.6 us a round trip).  Returns progress's
 * negative errno if it failed (the lock held), else 0.
 */
static int linger(struct urxe_engine *eng)
{
	uint64_t last = urxe_now(eng);
	int did;

	while (!apps_active(eng) && !atomic_load(&eng->th.thread_stopping) &&
	       urxe_now(eng) - last < URXE_LINGER_NS) {
		did = urxe_engine_progress_thread(eng);
		if (did < 0)
			return did;
		if (did > 0)
			last = urxe_now(eng);
	}
	return 0;
}

/* Runs progress itself: the applications are not calling in. */
static void take_over(struct urxe_engine *eng)
{
	int did;

	eng->th.runs++;
	did = urxe_engine_progress_thread(eng);
	if (did > 0)
		did = linger(eng);
	if (did == -EBUSY) {
		/*
		 * An application thread holds the progress lock and reads the
		 * input before it lets go: until it has, the socket stays
		 * readable, and watching it would wake this thread again and
		 * again for nothing.  Look again in a while.
		 */
		eng->th.busy++;
		park_io(eng, true);
		arm_backoff(eng);
		return;
	}
	rearm_timer(eng);
}

/*
 * The applications stopped calling in: this thread takes over, watching
 * the sockets again.  Whatever parked them (a backoff pass that saw the
 * applications still active a moment ago) may not look again: this
 * thread may have no timer either (a responder has none), and unwatched
 * sockets would then never be read.
 */
static void take_over_watching(struct urxe_engine *eng)
{
	park_io(eng, false);
	eng->th.backoff_s = URXE_BACKOFF_S;
	eng->app.app_takes = 0;
	take_over(eng);
}

/*
 * Runs progress — unless application threads are calling in: then they
 * do the work (timers included), and this thread, which could be
 * preempted while holding the progress lock, keeps out of their way.
 * ACKs a poller deferred and did not come back for, it sends itself.
 * INPUT: the sockets woke it.
 */
static void run(struct urxe_engine *eng, bool input)
{
	if (!apps_active(eng) ||
	    (input && !app_takes_input(eng, URXE_APP_SILENT_NS))) {
		take_over_watching(eng);
		return;
	}
	/* Pollers took this input: after a few such, stop watching. */
	if (!input || ++eng->app.app_takes >= URXE_APP_TAKES) {
		eng->app.app_takes = 0;
		eng->th.parks++;
		park_io(eng, true);
		arm_backoff(eng);
	}
	if (acks_overdue(eng))
		take_over(eng);
}

/* Were application threads driving progress a moment ago? */
static bool apps_active(struct urxe_engine *eng)
{
	uint64_t last = atomic_load_explicit(&eng->app.app_progress_ns,
					     memory_order_relaxed);

	return atomic_load_explicit(&eng->app.app_in_progress,
				    memory_order_relaxed) ||
	       (last && urxe_now(eng) - last < URXE_APP_ACTIVE_NS);
}

static void park_io(struct urxe_engine *eng, bool park)
{
	unsigned int i;

	if (park == eng->th.io_parked)
		return;
	for (i = 0; i < eng->th.nio; i++) {
		if (park)
			ev_io_stop(eng->th.loop, &eng->th.io[i]);
		else
			ev_io_start(eng->th.loop, &eng->th.io[i]);
	}
	eng->th.io_parked = park;
}

/*
 * On a 2-core machine a busy-polling application and this thread would
 * fight over the cores and the progress lock.  While the application
 * calls in, it does the work: this thread stops watching the sockets and
 * looks again every URXE_BACKOFF_S; it takes over when the calls stop.
 */
static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct urxe_engine *eng = ev_userdata(loop);

	(void)w;
	(void)revents;
	eng->th.wakes[0]++;
	run(eng, true);
}

static void on_backoff(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct urxe_engine *eng = ev_userdata(loop);

	(void)w;
	(void)revents;
	eng->th.wakes[3]++;
	/*
	 * The applications stopped calling in, or input waits that none of
	 * them takes (they poll no more: ib_write_lat's spins on memory for
	 * the peer's WRITE): take over, watching the sockets again.
	 */
	if (!apps_active(eng) ||
	    (input_waiting(eng) && !app_takes_input(eng, URXE_LOOK_SILENT_NS))) {
		take_over_watching(eng);
		return;
	}
	/*
	 * Each look costs a busy core a context switch: while applications
	 * keep polling, look less often (up to URXE_BACKOFF_MAX_S, well
	 * within a peer's shortest retransmission timeout).
	 */
	if (eng->th.backoff_s < URXE_BACKOFF_MAX_S)
		eng->th.backoff_s *= 2;
	run(eng, false);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct urxe_engine *eng = ev_userdata(loop);

	(void)w;
	(void)revents;
	eng->th.wakes[1]++;
	run(eng, false);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
	struct urxe_engine *eng = ev_userdata(loop);

	(void)w;
	(void)revents;
	eng->th.wakes[2]++;
	run(eng, false);
}

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Which engine, if any, the calling thread runs. */
static __thread const struct urxe_engine *engine_self;

bool urxe_in_engine_thread(const struct urxe_engine *eng)
{
	return engine_self == eng;
}

static void *engine_main(void *arg)
{
	struct urxe_engine *eng = arg;

	engine_self = eng;
	ev_run(eng->th.loop, 0);
	return NULL;
}

int urxe_engine_thread_start(struct urxe_engine *eng, const int *fds,
			     unsigned int nfds)
{
	sigset_t all, old;
	unsigned int i;
	int rc;

	if (eng->th.thread_running)
		return 0;
	if (nfds > sizeof(eng->th.io) / sizeof(eng->th.io[0]))
		return -EINVAL;
	/* A private loop: the default loop belongs to the application. */
	eng->th.loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!eng->th.loop)
		return -ENOMEM;
	ev_set_userdata(eng->th.loop, eng);
	for (i = 0; i < nfds; i++) {
		ev_io_init(&eng->th.io[i], on_io, fds[i], EV_READ);
		ev_io_start(eng->th.loop, &eng->th.io[i]);
	}
	eng->th.nio = nfds;
	ev_timer_init(&eng->th.timer, on_timer, 0.0, 0.0);
	ev_timer_init(&eng->th.backoff, on_backoff, URXE_BACKOFF_S, 0.0);
	eng->th.backoff_s = URXE_BACKOFF_S;
	eng->th.io_parked = false;
	ev_async_init(&eng->th.wake, on_wake);
	ev_async_start(eng->th.loop, &eng->th.wake);
	ev_async_init(&eng->th.stop, on_stop);
	ev_async_start(eng->th.loop, &eng->th.stop);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&eng->th.thread, NULL, engine_main, eng);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		ev_loop_destroy(eng->th.loop);
		eng->th.loop = NULL;
		return -rc;
	}
	eng->th.thread_running = true;
	return 0;
}

void urxe_engine_thread_stop(struct urxe_engine *eng)
{
	if (!eng->th.thread_running)
		return;
	atomic_store(&eng->th.thread_stopping, true);
	ev_async_send(eng->th.loop, &eng->th.stop);
	pthread_join(eng->th.thread, NULL);
	atomic_store(&eng->th.thread_stopping, false);
	urxe_dbg("slot %u: engine thread woken by io %lu, timer %lu, doorbell %lu, backoff %lu; ran %lu (input no poller took %lu), parked %lu, found the lock held %lu",
		 eng->slot, eng->th.wakes[0], eng->th.wakes[1], eng->th.wakes[2],
		 eng->th.wakes[3], eng->th.runs, eng->th.taken, eng->th.parks, eng->th.busy);
	ev_loop_destroy(eng->th.loop);
	eng->th.loop = NULL;
	eng->th.thread_running = false;
}

void urxe_engine_thread_forget(struct urxe_engine *eng)
{
	if (!eng->th.thread_running)
		return;
	/* libev's destroy closes and frees; it makes no epoll_ctl call. */
	ev_loop_destroy(eng->th.loop);
	eng->th.loop = NULL;
	eng->th.thread_running = false;
}

void urxe_engine_thread_wake(struct urxe_engine *eng)
{
	if (eng->th.thread_running)
		ev_async_send(eng->th.loop, &eng->th.wake);
}
