// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who makes progress, with a real engine thread.  An engine whose input
 * is a pipe (a byte written stands for a frame arriving) and whose
 * transmit can stall while holding the progress lock, as a slow send()
 * does:
 *   - input arriving while a poster holds the lock is read by that
 *     poster before it lets go, and the engine thread, which cannot take
 *     the lock, does not spin on the readable descriptor meanwhile (the
 *     process burns next to no CPU while the poster sleeps in its send);
 *   - afterwards the engine thread watches the descriptor again: input
 *     with nobody calling in is read by it;
 *   - the same when the application stops calling in just as the engine
 *     thread's backoff looks (it saw the application active, then gone
 *     by the time it ran): a scripted clock puts the end of the
 *     application's activity between those two looks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urxe/engine.h>

#include "engine_int.h"		/* URXE_APP_ACTIVE_NS */
#include "engine_wire.h"	/* a node's pieces; no wire: a pipe */
#include "testutil.h"

#define STALL_MS 200

static int pipefd[2];
static pthread_t main_thread;
static atomic_bool stall;		/* the next xmit stalls */
static atomic_uint rx_by_main, rx_by_other;	/* bytes read, by whom */

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The engine's clock: real time, or (clock_mode) a scripted one.  FROZEN:
 * every reading is fake_t0, so an application that polled at fake_t0 stays
 * active.  ARMED: the engine thread's first reading after a pause (the
 * first look of a backoff pass: passes are a millisecond or more apart)
 * is still within URXE_APP_ACTIVE_NS of fake_t0; from then on (GONE) its
 * readings are a second past fake_t0 and run on in real time: the
 * application stopped calling in between that look and the next.
 */
enum { CLOCK_REAL, CLOCK_FROZEN, CLOCK_ARMED, CLOCK_GONE };
#define LOOK_GAP_NS 500000ull
static atomic_int clock_mode;
static uint64_t fake_t0;
static _Atomic uint64_t last_engine_read, gone_at;

static uint64_t test_now(void *priv)
{
	uint64_t real = clock_ns(CLOCK_MONOTONIC), prev;
	int mode = atomic_load(&clock_mode);

	(void)priv;
	if (mode == CLOCK_REAL)
		return real;
	if (pthread_equal(pthread_self(), main_thread))
		return fake_t0;
	prev = atomic_exchange(&last_engine_read, real);
	if (mode == CLOCK_ARMED && real - prev > LOOK_GAP_NS) {
		atomic_store(&gone_at, real);
		atomic_store(&clock_mode, CLOCK_GONE);
		return fake_t0 + URXE_APP_ACTIVE_NS / 2;
	}
	if (mode == CLOCK_GONE)
		return fake_t0 + 1000000000ull + (real - atomic_load(&gone_at));
	return fake_t0;
}

/*
 * A frame arrives (a byte in the pipe) while the send is under way, and
 * the send takes STALL_MS: the progress lock is held all that time.
 */
static int stall_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	struct timespec ts = { 0, STALL_MS * 1000000L };

	(void)priv;
	(void)pkts;
	if (atomic_exchange(&stall, false)) {
		ck_assert_int_eq(write(pipefd[1], "x", 1), 1);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return (int)n;
}

static int pipe_rx(void *priv, struct urxe_engine *eng, int budget)
{
	char buf[64];
	ssize_t r = read(pipefd[0], buf, sizeof(buf));

	(void)priv;
	(void)eng;
	(void)budget;
	if (r <= 0)
		return 0;
	if (pthread_equal(pthread_self(), main_thread))
		atomic_fetch_add(&rx_by_main, (unsigned int)r);
	else
		atomic_fetch_add(&rx_by_other, (unsigned int)r);
	return (int)r;
}

static const struct urxe_engine_ops ops = {
	.xmit = stall_xmit,
	.now = test_now,
	.rx_poll = pipe_rx,
};

static struct urxe_engine *eng;
static struct urxe_eqp qp;
static struct urxe_cq_ring cq;
static struct urxe_mem mem;
static uint8_t buf[4096];

static void setup(void)
{
	struct urxe_engine_conf conf = { .slot = 1, .ops = &ops };
	struct urxe_qp_attr at;

	main_thread = pthread_self();
	atomic_store(&clock_mode, CLOCK_REAL);
	atomic_store(&stall, false);
	atomic_store(&rx_by_main, 0);
	atomic_store(&rx_by_other, 0);
	ck_assert_int_eq(pipe2(pipefd, O_NONBLOCK | O_CLOEXEC), 0);
	wire_gid_v4(&conf.gid0, 198, 18, 0, 1);
	ck_assert_int_eq(urxe_engine_create(&conf, &eng), 0);
	wire_mem_add(eng, &mem, buf, sizeof(buf), 7, IBV_ACCESS_LOCAL_WRITE);
	/* UC: no ACKs, no timers, nothing sent but the SENDs posted */
	wire_qp_add(eng, &qp, &cq, IBV_QPT_UC, 7,
		    &(struct wire_qp_shape){ .cqe = 64, .depth = 16,
					     .max_sge = 1 });
	memset(&at, 0, sizeof(at));
	at.state = IBV_QPS_RTS;
	at.dest_qpn = 2 << URXE_QPN_INDEX_BITS | 5;
	at.path_mtu = IBV_MTU_1024;
	wire_gid_v4(&at.dgid, 198, 18, 0, 2);
	at.sgid = conf.gid0;
	ck_assert_int_eq(urxe_engine_qp_modify(&qp, &at, IBV_QP_STATE |
			 IBV_QP_DEST_QPN | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
			 IBV_QP_PATH_MTU | IBV_QP_AV), 0);
	ck_assert_int_eq(urxe_engine_thread_start(eng, &pipefd[0], 1), 0);
}

static void teardown(void)
{
	urxe_engine_thread_stop(eng);
	wire_qp_del(eng, &qp, &cq);
	urxe_engine_mem_remove(eng, &mem);
	urxe_engine_destroy(eng);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Posts one 64-byte SEND and kicks it out (this thread is the poster). */
static void post_send(void)
{
	uint32_t p = atomic_load(&qp.sq.prod);
	struct urxe_send_wqe *w = urxe_wq_slot(&qp.sq, p);

	memset(w, 0, sizeof(*w));
	w->wr_id = p;
	w->opcode = IBV_WR_SEND;
	w->length = 64;
	w->num_sge = 1;
	w->sge[0].addr = mem.iova;
	w->sge[0].length = 64;
	w->sge[0].lkey = mem.lkey;
	w->state = URXE_WQE_POSTED;
	atomic_store(&qp.sq.prod, p + 1);
	urxe_engine_kick(&qp);
}

/* Waits up to @ms for @v to reach @want. */
static bool wait_for(atomic_uint *v, unsigned int want, unsigned int ms)
{
	struct timespec ts = { 0, 1000000L };

	while (atomic_load(v) < want && ms--)
		nanosleep(&ts, NULL);
	return atomic_load(v) >= want;
}

/* Waits up to @ms for the scripted clock to reach @mode. */
static bool wait_for_mode(int mode, unsigned int ms)
{
	struct timespec ts = { 0, 1000000L };

	while (atomic_load(&clock_mode) != mode && ms--)
		nanosleep(&ts, NULL);
	return atomic_load(&clock_mode) == mode;
}

START_TEST(poster_reads_input_engine_waits)
{
	unsigned int by_main, by_other;
	uint64_t cpu0, cpu;

	/* Let the engine thread settle into its loop, watching the pipe. */
	usleep(20000);
	atomic_store(&stall, true);
	cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	post_send();
	cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	ck_assert(!atomic_load(&stall));	/* the send did stall */
	/*
	 * The engine thread did not spin meanwhile: this thread slept
	 * STALL_MS in its send, and a spinning engine thread would have
	 * burnt about as much CPU.
	 */
	ck_assert_msg(cpu < STALL_MS * 1000000ull / 4,
		      "the process used %llu us of CPU during a %d ms stall",
		      (unsigned long long)(cpu / 1000), STALL_MS);
	/*
	 * The frame that came during the send was read before the poster
	 * returned, by the poster: the engine thread could not.
	 */
	by_main = atomic_load(&rx_by_main);
	by_other = atomic_load(&rx_by_other);
	ck_assert_uint_eq(by_main, 1);
	ck_assert_uint_eq(by_other, 0);
}
END_TEST

START_TEST(engine_thread_watches_again)
{
	unsigned int by_main;

	atomic_store(&stall, true);
	post_send();
	by_main = atomic_load(&rx_by_main);
	ck_assert_uint_eq(by_main, 1);
	/* Nobody calls in now: the next frame is the engine thread's. */
	usleep(5000);
	ck_assert_int_eq(write(pipefd[1], "y", 1), 1);
	ck_assert_msg(wait_for(&rx_by_other, 1, 2000),
		      "the engine thread did not read the input within 2 s");
	by_main = atomic_load(&rx_by_main);
	ck_assert_uint_eq(by_main, 1);
}
END_TEST

/*
 * An application polls, then stops for good (it waits in read()) just as
 * the engine thread's backoff looks: the backoff sees it active, and by
 * the time it runs, it is gone.  The engine thread takes over then, and
 * must watch the descriptor again — or it hears no input, ever (it has
 * no timer to wake it).
 */
START_TEST(engine_thread_takes_over_after_backoff)
{
	usleep(20000);
	fake_t0 = clock_ns(CLOCK_MONOTONIC) + 1000000000ull;
	atomic_store(&clock_mode, CLOCK_FROZEN);
	/* An application polls (at fake_t0) ... */
	urxe_engine_progress(eng);
	/* ... so the woken engine thread stops watching, backs off ... */
	urxe_engine_thread_wake(eng);
	usleep(10000);
	ck_assert_uint_eq(atomic_load(&rx_by_other), 0);
	/* ... and its next look sees the application leave. */
	atomic_store(&clock_mode, CLOCK_ARMED);
	ck_assert_msg(wait_for_mode(CLOCK_GONE, 2000),
		      "the engine thread's backoff did not look within 2 s");
	usleep(10000);
	ck_assert_int_eq(write(pipefd[1], "z", 1), 1);
	ck_assert_msg(wait_for(&rx_by_other, 1, 2000),
		      "the engine thread did not read the input within 2 s");
	ck_assert_uint_eq(atomic_load(&rx_by_main), 0);
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tu_tcase(s, "handoff", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, poster_reads_input_engine_waits);
	tcase_add_test(tc, engine_thread_watches_again);
	tcase_add_test(tc, engine_thread_takes_over_after_backoff);
	return s;
}

int main(void)
{
	return tu_run(progress_suite());
}
