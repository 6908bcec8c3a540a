// SPDX-License-Identifier: BSD-2-Clause
/*
 * Event pipes: the completion channel's fd and the context's async_fd.
 * Records are written whole into a pipe, so the application can poll the
 * read end like a kernel event file.  Unlike a kernel event file a pipe
 * cannot drop one entry from its middle; a purge (an object dies with
 * events nobody read) drains the pipe under the lock and writes back the
 * records it keeps, in order.
 *
 * Taking a record happens under the lock and never blocks: poll() with a
 * zero timeout first, then read().  The lock is not held while waiting,
 * and waiting runs progress (urxe_dev_wait_fd), because the event the
 * application waits for may need the engine to run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/provider.h>

int urxe_evpipe_init(struct urxe_evpipe *p, size_t rec_size)
{
	int fds[2];

	if (!rec_size || rec_size > PIPE_BUF)
		return -EINVAL;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/* The write end is ours alone: posting must never block the engine. */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	p->size = rec_size;
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

void urxe_evpipe_fini(struct urxe_evpipe *p)
{
	close(p->rd);
	close(p->wr);
	p->rd = p->wr = -1;
	pthread_mutex_destroy(&p->lock);
}

/* Lock held. */
static int post_locked(struct urxe_evpipe *p, const void *rec)
{
	ssize_t n;

	do {
		n = write(p->wr, rec, p->size);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)p->size)
		return 0;
	return n < 0 ? -errno : -EIO;
}

int urxe_evpipe_post(struct urxe_evpipe *p, const void *rec)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	rc = post_locked(p, rec);
	pthread_mutex_unlock(&p->lock);
	if (rc)
		urxe_warn("event pipe %d: record dropped: %s", p->rd,
			  rc == -EAGAIN ? "the application reads no events"
					: strerror(-rc));
	return rc;
}

/* Lock held: 1 and @rec filled, 0 when the pipe is empty, or -errno. */
static int take_locked(struct urxe_evpipe *p, void *rec)
{
	struct pollfd pfd = { .fd = p->rd, .events = POLLIN };
	ssize_t n;
	int rc;

	do {
		rc = poll(&pfd, 1, 0);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (rc == 0 || !(pfd.revents & POLLIN))
		return 0;
	/* Whole records only, and we are the only reader: this cannot block. */
	do {
		n = read(p->rd, rec, p->size);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)p->size)
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/*
 * A handler interrupted the wait.  The kernel's read() of a verbs file
 * (what ibv_get_cq_event is there) restarts after a handler installed with
 * SA_RESTART and fails with EINTR after one without: programs end their
 * timed loops that way (qperf's SIGALRM, its side blocked in
 * ibv_get_cq_event when its test time ran out waited for ever).  poll()
 * never restarts and does not say which signal it was: restarted when
 * every signal the program catches has SA_RESTART (signal() sets it).
 */
static bool signals_restart(void)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		/*
		 * Not those a fault raises in the faulting thread (ASan's and
		 * crash handlers): they do not come to a thread that waits.
		 */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
		    sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		    sig == SIGTRAP)
			continue;
		if (sigaction(sig, NULL, &sa))
			continue;
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

int urxe_evpipe_get(struct urxe_evpipe *p, struct urxe_dev *dev, void *rec)
{
	int rc, fl;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		rc = take_locked(p, rec);
		pthread_mutex_unlock(&p->lock);
		if (rc)
			return rc < 0 ? rc : 0;
		fl = fcntl(p->rd, F_GETFL);
		if (fl < 0)
			return -errno;
		if (fl & O_NONBLOCK) {
			/* A link change waiting becomes a port event now. */
			if (dev && dev->link && !dev->dead) {
				urxe_dev_link_check(dev);
				pthread_mutex_lock(&p->lock);
				rc = take_locked(p, rec);
				pthread_mutex_unlock(&p->lock);
				if (rc)
					return rc < 0 ? rc : 0;
			}
			return -EAGAIN;
		}
		rc = urxe_dev_wait_fd(dev, p->rd, -1);
		if (rc == -EINTR && signals_restart())
			continue;
		if (rc < 0)
			return rc;
	}
}

unsigned int urxe_evpipe_purge(struct urxe_evpipe *p,
			       bool (*match)(const void *rec, const void *arg),
			       const void *arg)
{
	size_t cap = 64, n = 0, i;
	unsigned int dropped = 0;
	uint8_t *buf, *more;
	int rc;

	buf = malloc(cap * p->size);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (!buf)
			break;
		if (n == cap) {
			more = realloc(buf, 2 * cap * p->size);
			if (!more)
				break;
			buf = more;
			cap *= 2;
		}
		rc = take_locked(p, buf + n * p->size);
		if (rc <= 0)
			break;
		if (match(buf + n * p->size, arg))
			dropped++;
		else
			n++;
	}
	/* The pipe held at least these n records: writing them back fits. */
	for (i = 0; i < n; i++)
		if (post_locked(p, buf + i * p->size))
			urxe_warn("event pipe %d: record lost in a purge", p->rd);
	pthread_mutex_unlock(&p->lock);
	if (!buf)
		urxe_warn("event pipe %d: no memory to purge", p->rd);
	free(buf);
	return dropped;
}
