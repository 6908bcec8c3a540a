// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB Communication Manager of urxe's librdmacm: CM MADs on QP1, the
 * connection state machines of IBA 12.9 as Linux runs them, their
 * retransmission timers and timewait, and the thread that drives them.
 * This file is the thread, QP1's opening, the timers and what happens
 * when one expires (a cm_resend, or the state's timeout); the messages are
 * built and sent in ibcm_send.c, requests to listeners are taken in
 * ibcm_listen.c, and every other received MAD in ibcm_recv.c.
 *
 * One thread per process (started by the first listen or connect) waits
 * in epoll on each open QP1's eventfd, the loopback listeners' sockets,
 * a timerfd and a wake eventfd; it takes cm.lock for each MAD and each
 * expired timer.  An id's connection is its cm_id fields: the comm IDs,
 * the last MAD sent (resent on its timer), the state.  Ids are found by
 * our comm ID (the remote ID of what the peer sends), a REQ by its
 * sender's comm ID and GID (a duplicate), or by the listener its
 * service ID and destination address name.
 *
 * Timers, as Linux's ib_cm: a REQ waits 2 * ms(packet lifetime) +
 * ms(remote CM response timeout) = 4.6 s and is sent 1 + 15 times, then
 * UNREACHABLE (-ETIMEDOUT); a REP waits ms(the REQ's local CM response
 * timeout) as often; a DREQ as a REQ, then DISCONNECTED (-ETIMEDOUT);
 * timewait lasts ms(local ACK timeout), then TIMEWAIT_EXIT.  ms(t) is
 * 2^(t-8) ms, the kernel's approximation of 4.096 us * 2^t.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ibcm_int.h"

static bool cm_stop;

/* ---- the thread ---- */

static bool is_dev(void *p)
{
	return p >= (void *)&cm.dev[0] && p < (void *)&cm.dev[CM_MAX_DEVS];
}

static bool id_alive(struct cm_id *cid)
{
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c == cid)
			return true;
	return false;
}

static void drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

static void timers_run(void);

static void dev_input(struct cm_dev *d)
{
	struct urxe_gsi_mad g;

	drain(d->gsi_fd);
	while (d->gsi && cm.gsi->recv(d->gsi, &g) > 0)
		cm_handle_mad(d, &g);
}

static void *cm_thread(void *arg)
{
	struct epoll_event ev[16];
	int n, i;

	(void)arg;
	for (;;) {
		n = epoll_wait(cm.epfd, ev, 16, -1);
		if (n < 0 && errno != EINTR) {
			urxe_err("RDMA CM thread: epoll_wait: %s", strerror(errno));
			break;
		}
		pthread_mutex_lock(&cm.lock);
		if (cm_stop) {
			pthread_mutex_unlock(&cm.lock);
			break;
		}
		for (i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &cm.wake_fd)
				drain(cm.wake_fd);
			else if (p == &cm.timer_fd)
				drain(cm.timer_fd);
			else if (is_dev(p))
				dev_input(p);
			else if (id_alive(p) &&
				 ((struct cm_id *)p)->listen_fd >= 0)
				cm_listen_accept(p);
		}
		timers_run();
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

static int ep_add(int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(cm.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Starts the CM thread once (lock held). */
int cm_thread_start(void)
{
	sigset_t all, old;
	int rc;

	if (cm.thread_on)
		return 0;
	cm.epfd = epoll_create1(EPOLL_CLOEXEC);
	cm.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cm.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (cm.epfd < 0 || cm.wake_fd < 0 || cm.timer_fd < 0) {
		rc = -errno;
		goto err;
	}
	rc = ep_add(cm.wake_fd, &cm.wake_fd);
	if (!rc)
		rc = ep_add(cm.timer_fd, &cm.timer_fd);
	if (rc)
		goto err;
	/* The application's signals are its own threads'. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&cm.thread, NULL, cm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto err;
	cm.thread_on = true;
	return 0;
err:
	urxe_err("RDMA CM: cannot start its thread: %s", strerror(-rc));
	if (cm.epfd >= 0)
		close(cm.epfd);
	if (cm.wake_fd >= 0)
		close(cm.wake_fd);
	if (cm.timer_fd >= 0)
		close(cm.timer_fd);
	cm.epfd = cm.wake_fd = cm.timer_fd = -1;
	return rc;
}

/* The library goes (dlclose, exit): its thread first. */
__attribute__((destructor)) static void cm_thread_stop(void)
{
	const uint64_t one = 1;
	struct cm_id *c;
	int i;

	pthread_mutex_lock(&cm.lock);
	cm_channels_release();
	if (!cm.thread_on) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	/*
	 * As the kernel when a process's ids go with it: connections still
	 * up are closed on the wire (DREQ, DREP, REJ), or their peers wait
	 * out every retry of theirs (qperf's server leaves its id: its
	 * client's DREQ got no DREP).
	 */
	for (c = cm.ids; c; c = c->next)
		cm_conn_drop(c);
	cm_parked_free();
	cm_stop = true;
	if (write(cm.wake_fd, &one, sizeof(one)) != sizeof(one))
		urxe_dbg("RDMA CM: wake: %s", strerror(errno));
	pthread_mutex_unlock(&cm.lock);
	pthread_join(cm.thread, NULL);
	cm.thread_on = false;
	for (i = 0; i < cm.ndev; i++)
		if (cm.dev[i].gsi) {
			cm.gsi->close(cm.dev[i].gsi);
			cm.dev[i].gsi = NULL;
		}
	close(cm.epfd);
	close(cm.wake_fd);
	close(cm.timer_fd);
	cm.epfd = cm.wake_fd = cm.timer_fd = -1;
}

/* Opens @d's QP1 for this process once (lock held). */
int cm_dev_gsi(struct cm_dev *d)
{
	int rc = cm_thread_start();

	if (rc)
		return rc;
	if (d->gsi)
		return 0;
	d->gsi = cm.gsi->open(d->ctx, &d->gsi_fd);
	if (!d->gsi) {
		rc = -errno;
		urxe_err("RDMA CM: %s: cannot open QP1: %s",
			 ibv_get_device_name(d->ctx->device), strerror(-rc));
		return rc;
	}
	rc = ep_add(d->gsi_fd, d);
	if (rc) {
		cm.gsi->close(d->gsi);
		d->gsi = NULL;
	}
	return rc;
}

/* ---- timers ---- */

/* Arms the timerfd for the earliest due id (lock held). */
void cm_timer_kick(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t due = 0;
	struct cm_id *c;

	if (cm.timer_fd < 0)
		return;
	for (c = cm.ids; c; c = c->next)
		if (c->due_ns && (!due || c->due_ns < due))
			due = c->due_ns;
	if (cm_parked_due() && (!due || cm_parked_due() < due))
		due = cm_parked_due();
	if (due == cm.timer_due)
		return;
	cm.timer_due = due;
	if (due) {
		its.it_value.tv_sec = (time_t)(due / 1000000000ull);
		its.it_value.tv_nsec = (long)(due % 1000000000ull);
	}
	timerfd_settime(cm.timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* @cid's last MAD is resent every @period_ns, @tries times (0: a single
 * deadline, as timewait). */
void cm_timer_arm(struct cm_id *cid, uint64_t period_ns, unsigned int tries)
{
	cid->period_ns = period_ns;
	cid->tries = 0;
	cid->max_tries = tries;
	cid->due_ns = cm_now_ns() + period_ns;
	cm_timer_kick();
}

void cm_timer_stop(struct cm_id *cid)
{
	cid->due_ns = 0;
}

/* ---- expiry ---- */

static void expire(struct cm_id *c)
{
	if (c->max_tries && c->tries < c->max_tries) {
		c->tries++;
		c->due_ns = cm_now_ns() + c->period_ns;
		/* The MAD header's AttributeID: bytes 16-17. */
		urxe_dbg("RDMA CM: no answer: %s again (%u of %u)",
			 urxe_cm_attr_name((uint16_t)(c->mad[16] << 8 |
						      c->mad[17])),
			 c->tries, c->max_tries);
		cm_resend(c);
		return;
	}
	c->due_ns = 0;
	switch (c->cm) {
	case CM_REQ_SENT:
	case CM_SIDR_REQ_SENT:
		c->cm = CM_IDLE;
		cm_post(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_REP_SENT:
		c->cm = CM_IDLE;
		cm_post_qp_err(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_DREQ_SENT:
		cm_enter_timewait(c);
		cm_disconnected(c, -ETIMEDOUT);
		break;
	case CM_TIMEWAIT:
		c->cm = CM_IDLE;
		cm_post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
		break;
	default:
		break;
	}
}

static void timers_run(void)
{
	uint64_t now = cm_now_ns();
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c->due_ns && c->due_ns <= now && !c->destroying)
			expire(c);
	cm_parked_run(false);
	cm.timer_due = 0;	/* re-armed below */
	cm_timer_kick();
}
