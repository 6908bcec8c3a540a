// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe's librdmacm: event channels and the events on them
 * (rdma_create_event_channel(3), rdma_get_cm_event(3),
 * rdma_migrate_id(3)).
 *
 * A channel is an EFD_SEMAPHORE eventfd and a queue: one count per
 * queued event, so that poll() says POLLIN while events wait and a read
 * takes exactly one (blocking unless the user set O_NONBLOCK on it, as
 * rdma_get_cm_event(3) says).  An event belongs to its id: reported
 * events count until acknowledged, and rdma_destroy_id() waits for them;
 * events still queued for a destroyed id are marked dead and skipped.
 * A synchronous id (no channel) has a channel of its own, and each call
 * that would post an event waits for it there (cm_wait).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <urxe/exit_notice.h>

#include "cm_int.h"

struct cm_channel *cm_chan_new(void)
{
	struct cm_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void cm_chan_free(struct cm_channel *c)
{
	struct cm_event *e;

	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
}

/*
 * exit() has begun (an atexit handler registered on first use, so before
 * the destructors run): the process's other threads still run, and one
 * may be on its way into rdma_get_cm_event on a destroyed channel.
 */
static struct urxe_exit_notice exit_notice;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void register_exit(void)
{
	if (urxe_exit_notice_register(&exit_notice))
		urxe_dbg("RDMA CM: atexit failed");
}

static void graveyard_sweep(bool all);

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *c;

	if (cm_init_locked()) {
		errno = cm.init_err;
		return NULL;
	}
	pthread_once(&exit_once, register_exit);
	c = cm_chan_new();
	pthread_mutex_lock(&cm.lock);
	graveyard_sweep(false);
	pthread_mutex_unlock(&cm.lock);
	return c ? &c->ch : NULL;
}

/*
 * Destroyed channels wait CM_CHAN_GRACE_MS, fd open, before they are
 * freed: a program's event thread may still be on its way into
 * rdma_get_cm_event() on it (rping's, while its main thread tears down),
 * and there it must wait, as on a kernel file, not read freed memory.
 * One that is inside stays until it leaves.  Lock held.
 */
static struct cm_channel *graveyard;

static void graveyard_sweep(bool all)
{
	struct cm_channel **pp = &graveyard, *c;
	uint64_t now = cm_now_ns();

	while ((c = *pp)) {
		if (c->readers || (!all && c->gone_ns > now)) {
			pp = &c->next_gone;
			continue;
		}
		*pp = c->next_gone;
		cm_chan_free(c);
	}
}

CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *c;

	if (!channel)
		return;
	c = to_chan(channel);
	pthread_mutex_lock(&cm.lock);
	if (c->ids) {
		urxe_warn("rdma_destroy_event_channel: %u ids still use the channel: destroy them first (the channel stays)",
		       c->ids);
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	c->closing = true;
	c->gone_ns = cm_now_ns() + CM_CHAN_GRACE_MS * 1000000ull;
	c->next_gone = graveyard;
	graveyard = c;
	graveyard_sweep(false);
	pthread_mutex_unlock(&cm.lock);
}

/*
 * The library goes: every destroyed channel nobody waits in, on dlclose;
 * at exit() none (the kernel takes them back, and a thread still about
 * to read one must find it open: rping -q's server failed with EBADF).
 */
void cm_channels_release(void)
{
	if (!urxe_exit_notice_seen(&exit_notice))
		graveyard_sweep(true);
}

struct cm_event *cm_event_new(struct cm_id *cid, enum rdma_cm_event_type type,
			      int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &cid->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = cid;
	return e;
}

/* Queues @e on @cid's channel (lock held). */
void cm_event_post(struct cm_id *cid, struct cm_event *e)
{
	struct cm_channel *c = cid->chan;
	const uint64_t one = 1;

	if (!e)
		return;
	e->next = NULL;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		urxe_err("event channel: %s", strerror(errno));
}

/* The head of @c's queue, off it (lock held). */
static struct cm_event *chan_pop(struct cm_channel *c)
{
	struct cm_event *e = c->head;

	if (e) {
		c->head = e->next;
		if (!c->head)
			c->tail = NULL;
		e->next = NULL;
	}
	return e;
}

/*
 * Active side: the REP came.  With a QP on the id, the library moves it
 * to RTR and RTS, sends the RTU and reports ESTABLISHED (or
 * CONNECT_ERROR); without one the user gets CONNECT_RESPONSE and calls
 * rdma_establish() (lock held).
 */
static void conn_response(struct cm_event *e)
{
	struct cm_id *cid = e->owner;

	if (!cid->id.qp)
		return;
	if (cm_qp_to_rtr(cid) || cm_qp_to_rts(cid)) {
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -errno;
		cm_send_rej(cid, CM_REJ_CONSUMER, NULL, 0);
		return;
	}
	cm_send_rtu(cid);
	e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
}

static void reader_leaves(struct cm_channel *c)
{
	pthread_mutex_lock(&cm.lock);
	c->readers--;
	pthread_mutex_unlock(&cm.lock);
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct cm_channel *c;
	struct cm_event *e;
	uint64_t v;
	ssize_t r;

	if (!channel || !event)
		return cm_err(EINVAL);
	c = to_chan(channel);
	pthread_mutex_lock(&cm.lock);
	c->readers++;
	pthread_mutex_unlock(&cm.lock);
	for (;;) {
		r = read(c->ch.fd, &v, sizeof(v));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(v)) {
			int err = r < 0 ? errno : EIO;

			reader_leaves(c);
			return cm_err(err);	/* EAGAIN with O_NONBLOCK */
		}
		pthread_mutex_lock(&cm.lock);
		e = chan_pop(c);
		if (!e || e->dead) {
			pthread_mutex_unlock(&cm.lock);
			free(e);
			continue;
		}
		c->readers--;
		e->owner->events_out++;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_RESPONSE)
			conn_response(e);
		if (e->qp_err)
			cm_qp_to_err(e->owner);
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    e->owner->pending > 0)
			e->owner->pending--;
		pthread_mutex_unlock(&cm.lock);
		*event = &e->ev;
		return 0;
	}
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e;
	struct cm_id *owner;

	if (!event)
		return cm_err(EINVAL);
	e = (struct cm_event *)(void *)event;
	owner = e->owner;
	pthread_mutex_lock(&cm.lock);
	if (owner->events_out)
		owner->events_out--;
	pthread_cond_broadcast(&owner->acked);
	pthread_mutex_unlock(&cm.lock);
	free(e);
	return 0;
}

/* Waits, lock held, until every event reported for @cid is acked. */
void cm_wait_acks(struct cm_id *cid)
{
	while (cid->events_out)
		pthread_cond_wait(&cid->acked, &cm.lock);
}

/*
 * A synchronous id's call: its event, left in id->event (the previous one
 * acknowledged first); its status the call's result (lock not held).
 */
int cm_wait(struct cm_id *cid)
{
	struct rdma_cm_event *ev;
	int st;

	if (!cid->sync)
		return 0;
	if (cid->id.event) {
		rdma_ack_cm_event(cid->id.event);
		cid->id.event = NULL;
	}
	if (rdma_get_cm_event(&cid->chan->ch, &ev))
		return -1;
	cid->id.event = ev;
	st = ev->status;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return cm_err(ECONNREFUSED);
	if (st < 0)
		return cm_err(-st);
	if (st > 0)
		return cm_err(st);
	return 0;
}

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) &&
	    names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel)
{
	struct cm_id *cid;
	struct cm_channel *old, *nc;
	struct cm_event *e, **pp, *moved = NULL, **mt = &moved;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (!channel && cid->sync)
		return cm_err(EINVAL);
	nc = channel ? to_chan(channel) : cm_chan_new();
	if (!nc)
		return -1;
	/* A synchronous id's last event is acknowledged by the move. */
	if (cid->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&cm.lock);
	old = cid->chan;
	/* Its queued events move: dead where they were, anew here. */
	for (pp = &old->head; (e = *pp);) {
		if (e->owner == cid && !e->dead) {
			struct cm_event *copy = malloc(sizeof(*copy));

			if (copy) {
				*copy = *e;
				copy->ev.param.conn.private_data =
					e->ev.param.conn.private_data ==
						e->priv ? copy->priv :
						e->ev.param.conn.private_data;
				copy->next = NULL;
				*mt = copy;
				mt = &copy->next;
			}
			e->dead = true;
		}
		pp = &e->next;
	}
	cm_wait_acks(cid);
	old->ids--;
	cid->chan = nc;
	nc->ids++;
	id->channel = &nc->ch;
	while ((e = moved)) {
		moved = e->next;
		cm_event_post(cid, e);		/* on @nc now */
	}
	if (cid->sync && old->ids == 0)
		cm_chan_free(old);
	cid->sync = !channel;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}
