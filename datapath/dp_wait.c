// SPDX-License-Identifier: BSD-2-Clause
/*
 * Waiting outside the engine thread (ibv_get_cq_event,
 * ibv_get_async_event): a thread that waits for a descriptor of its own
 * watches the data path's sockets and the engine's next deadline too,
 * and does the engine's work itself when they fire — no wake-up of the
 * engine thread needed, and no latency added by one.
 */
#include <errno.h>
#include <poll.h>

#include "dp_int.h"

/* Milliseconds to poll for before @until (UINT64_MAX: forever, -1). */
static int wait_ms(uint64_t now, uint64_t until)
{
	if (until == UINT64_MAX)
		return -1;
	return until <= now ? 0 : (int)((until - now + 999999) / 1000000);
}

/* The descriptors of one round: @w's, the sockets, the watch; how many. */
static unsigned int wait_set(const struct urxe_dp_wait *w,
			     struct pollfd *pfd)
{
	int fds[URXE_BACKEND_MAX_FDS];
	unsigned int i, n = 1, k;

	pfd[0].fd = w->fd;
	pfd[0].events = POLLIN;
	k = urxe_dp_rx_fds(w->dp, fds);
	for (i = 0; i < k; i++, n++) {
		pfd[n].fd = fds[i];
		pfd[n].events = POLLIN;
	}
	/* Link changes become port events while someone waits. */
	if (w->watch_fd >= 0) {
		pfd[n].fd = w->watch_fd;
		pfd[n].events = POLLIN;
		n++;
	}
	return n;
}

int urxe_dp_wait(const struct urxe_dp_wait *w, int timeout_ms)
{
	struct pollfd pfd[2 + URXE_BACKEND_MAX_FDS];
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
		       urxe_dp_now() + (uint64_t)timeout_ms * 1000000ull;
	unsigned int n;
	int rc;

	for (;;) {
		uint64_t now = urxe_dp_now(), until = end;

		if (w->deadline) {
			uint64_t d = w->deadline(w->ctx);

			if (d < until)
				until = d;
		}
		n = wait_set(w, pfd);
		rc = poll(pfd, n, wait_ms(now, until));
		if (rc < 0)
			return -errno;	/* EINTR: the caller decides */
		if (rc > 0 && w->watch_fd >= 0 && (pfd[n - 1].revents & POLLIN))
			w->on_watch(w->ctx);
		if (rc > 0 && (pfd[0].revents & (POLLIN | POLLERR | POLLHUP)))
			return 1;
		/* Sockets or timers: do the work ourselves, no wake-up needed. */
		if (w->progress)
			w->progress(w->ctx);
		if (urxe_dp_now() >= end)
			return 0;
	}
}
