// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe's librdmacm: event channels, ids and the calls that drive a
 * connection (rdma_cm(7)).  The wire is ibcm.c's, addresses addr.c's,
 * QPs qp.c's.
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
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cm_int.h"

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.wake_fd = -1,
	.timer_fd = -1,
};

int cm_err(int e)
{
	errno = e;
	return -1;
}

uint64_t cm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t cm_random(void)
{
	uint32_t r = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &r, sizeof(r)) != sizeof(r))
			r = 0;
		close(fd);
	}
	if (!r)
		r = (uint32_t)cm_now_ns() ^ (uint32_t)getpid() << 16;
	return r;
}

/* Opens every device once (lock held): the contexts ids and
 * rdma_get_devices() share. */
int cm_init(void)
{
	struct ibv_device **list;
	struct cm_dev *d;
	int n, i, k;

	if (cm.init)
		return cm.init_err;
	cm.init = true;
	cm.gsi = urxe_private_gsi(URXE_GSI_ABI);
	if (!cm.gsi) {
		urxe_err("this librdmacm.so.1 needs urxe's libibverbs.so.1 beside it (the one it was built with): put both on LD_LIBRARY_PATH, or use `urxe run`");
		return cm.init_err = ENODEV;
	}
	list = ibv_get_device_list(&n);
	if (!list)
		return cm.init_err = errno ? errno : ENODEV;
	for (i = 0; i < n && cm.ndev < CM_MAX_DEVS; i++) {
		d = &cm.dev[cm.ndev];
		d->ctx = ibv_open_device(list[i]);
		if (!d->ctx)
			continue;
		if (ibv_query_device(d->ctx, &d->attr) ||
		    ibv_query_port(d->ctx, 1, &d->port)) {
			ibv_close_device(d->ctx);
			d->ctx = NULL;
			continue;
		}
		cm.gsi->info(d->ctx, &d->info);
		/* _ex: a plain ibv_query_gid of an empty entry is noted as
		 * the program's (urxe_dev_query_gid_user). */
		for (k = 0; k < CM_GIDS && k < d->port.gid_tbl_len; k++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(d->ctx, 1, (uint32_t)k, &e, 0))
				memset(&d->gid[k], 0, sizeof(d->gid[k]));
			else
				d->gid[k] = e.gid;
		}
		d->ngid = k;
		d->gsi_fd = -1;
		cm.ndev++;
	}
	ibv_free_device_list(list);
	if (!cm.ndev)
		return cm.init_err = ENODEV;
	cm.ctx_list = calloc((size_t)cm.ndev + 1, sizeof(*cm.ctx_list));
	if (!cm.ctx_list)
		return cm.init_err = ENOMEM;
	for (i = 0; i < cm.ndev; i++)
		cm.ctx_list[i] = cm.dev[i].ctx;
	cm.next_local_id = cm_random();
	cm.tid_hi = cm_random();
	return 0;
}

static int cm_init_locked(void)
{
	int rc;

	pthread_mutex_lock(&cm.lock);
	rc = cm_init();
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

struct ibv_pd *cm_dev_pd(struct cm_dev *d)
{
	if (!d->pd)
		d->pd = ibv_alloc_pd(d->ctx);
	return d->pd;
}

/* The XRC domain of XRC ids that bring none (a private one, no file). */
struct ibv_xrcd *cm_dev_xrcd(struct cm_dev *d)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};

	if (!d->xrcd)
		d->xrcd = ibv_open_xrcd(d->ctx, &a);
	return d->xrcd;
}

/* ---- channels and events ---- */

static struct cm_channel *chan_new(void)
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

static void chan_free(struct cm_channel *c)
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
static atomic_bool exiting;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* The C++ ABI's: what atexit() calls, with this object's own handle. */
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern void *__dso_handle;

static void note_exit(void *arg)
{
	(void)arg;
	atomic_store(&exiting, true);
}

static void register_exit(void)
{
	if (__cxa_atexit(note_exit, NULL, &__dso_handle))
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
	c = chan_new();
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
		chan_free(c);
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
	if (!atomic_load(&exiting))
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
static void wait_acks(struct cm_id *cid)
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

/* ---- ids ---- */

struct cm_id *cm_id_new(struct cm_channel *chan, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cm_id *cid = calloc(1, sizeof(*cid));

	if (!cid)
		return NULL;
	if (!chan) {
		chan = chan_new();
		if (!chan) {
			free(cid);
			return NULL;
		}
		cid->sync = true;
	}
	cid->chan = chan;
	chan->ids++;
	cid->id.channel = &chan->ch;
	cid->id.context = context;
	cid->id.ps = ps;
	cid->id.qp_type = qp_type;
	cid->port_fd = -1;
	cid->listen_fd = -1;
	cid->afonly = -1;
	pthread_cond_init(&cid->acked, NULL);
	cid->next = cm.ids;
	cm.ids = cid;
	return cid;
}

/* Unlinks and frees @cid (lock held); its queued events die. */
void cm_id_free(struct cm_id *cid)
{
	struct cm_id **pp;
	struct cm_event *e;

	for (pp = &cm.ids; *pp; pp = &(*pp)->next)
		if (*pp == cid) {
			*pp = cid->next;
			break;
		}
	for (e = cid->chan->head; e; e = e->next)
		if (e->owner == cid || e->ev.id == &cid->id)
			e->dead = true;
	cid->chan->ids--;
	if (cid->sync)
		chan_free(cid->chan);
	pthread_cond_destroy(&cid->acked);
	free(cid->ep_attr);
	free(cid);
}

static enum ibv_qp_type ps_qp_type(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD
							 : IBV_QPT_RC;
}

static bool ps_valid(enum rdma_port_space ps)
{
	return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ||
	       ps == RDMA_PS_IB;
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	struct cm_id *cid;
	int rc;

	if (!id || !ps_valid(ps))
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	rc = cm_init();
	if (rc) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(rc);
	}
	cid = cm_id_new(channel ? to_chan(channel) : NULL, context, ps,
			ps_qp_type(ps));
	pthread_mutex_unlock(&cm.lock);
	if (!cid)
		return cm_err(ENOMEM);
	*id = &cid->id;
	return 0;
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *cid, *c;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (cid->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&cm.lock);
	cid->destroying = true;
	cm_mc_leave_all(cid);
	cm_conn_drop(cid);
	cm_port_release(cid);
	/* Its requests not yet fetched go with it. */
	for (c = cm.ids; c; c = c->next)
		if (c->listener == cid)
			c->listener = NULL;
	wait_acks(cid);
	cm_id_free(cid);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel)
{
	struct cm_id *cid;
	struct cm_channel *old, *nc;
	struct cm_event *e, **pp, *moved = NULL, **mt = &moved;
	const uint64_t one = 1;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (!channel && cid->sync)
		return cm_err(EINVAL);
	nc = channel ? to_chan(channel) : chan_new();
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
	wait_acks(cid);
	old->ids--;
	cid->chan = nc;
	nc->ids++;
	id->channel = &nc->ch;
	while ((e = moved)) {
		moved = e->next;
		e->next = NULL;
		if (nc->tail)
			nc->tail->next = e;
		else
			nc->head = e;
		nc->tail = e;
		if (write(nc->ch.fd, &one, sizeof(one)) != sizeof(one))
			urxe_err("event channel: %s", strerror(errno));
	}
	if (cid->sync && old->ids == 0)
		chan_free(old);
	cid->sync = !channel;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen)
{
	struct cm_id *cid;
	int rc = 0;

	if (!id || !optval)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (level != RDMA_OPTION_ID)
		return cm_err(ENOSYS);	/* RDMA_OPTION_IB (paths) too */
	pthread_mutex_lock(&cm.lock);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t)) {
			rc = EINVAL;
			break;
		}
		cid->tos = *(uint8_t *)optval;
		cid->tos_set = true;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int)) {
			rc = EINVAL;
			break;
		}
		if (cid->state != ID_IDLE)
			rc = EINVAL;
		else
			cid->reuseaddr = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int)) {
			rc = EINVAL;
			break;
		}
		if (cid->state != ID_IDLE)
			rc = EINVAL;
		else
			cid->afonly = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t)) {
			rc = EINVAL;
			break;
		}
		cid->ack_timeout = *(uint8_t *)optval;
		cid->ack_timeout_set = true;
		break;
	default:
		rc = ENOSYS;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(rc) : 0;
}

CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int i;

	if (cm_init_locked()) {
		if (num_devices)
			*num_devices = 0;
		errno = cm.init_err;
		return NULL;
	}
	list = calloc((size_t)cm.ndev + 1, sizeof(*list));
	if (!list)
		return NULL;
	for (i = 0; i < cm.ndev; i++)
		list[i] = cm.dev[i].ctx;
	if (num_devices)
		*num_devices = cm.ndev;
	return list;
}

CM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	struct sockaddr *sa = &id->route.addr.src_addr;

	return sa->sa_family == AF_INET6 ?
		((struct sockaddr_in6 *)(void *)sa)->sin6_port :
		((struct sockaddr_in *)(void *)sa)->sin_port;
}

CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	struct sockaddr *sa = &id->route.addr.dst_addr;

	return sa->sa_family == AF_INET6 ?
		((struct sockaddr_in6 *)(void *)sa)->sin6_port :
		((struct sockaddr_in *)(void *)sa)->sin_port;
}

/* ---- connecting ---- */

/* Checks and defaults a connection's responder resources / depth. */
static int conn_limits(struct cm_id *cid, const struct rdma_conn_param *p,
		       bool accept)
{
	const struct ibv_device_attr *a = &cid->dev->attr;
	uint8_t rr = p ? p->responder_resources : RDMA_MAX_RESP_RES;
	uint8_t id = p ? p->initiator_depth : RDMA_MAX_INIT_DEPTH;

	if (rr == RDMA_MAX_RESP_RES)
		rr = (uint8_t)a->max_qp_rd_atom;
	else if (rr > a->max_qp_rd_atom)
		return EINVAL;
	if (id == RDMA_MAX_INIT_DEPTH)
		id = (uint8_t)a->max_qp_init_rd_atom;
	else if (id > a->max_qp_init_rd_atom)
		return EINVAL;
	if (accept) {
		/* No more than the peer asked for. */
		if (rr > cid->resp_res)
			rr = cid->resp_res;
		if (id > cid->init_depth)
			id = cid->init_depth;
	}
	cid->resp_res = rr;
	cid->init_depth = id;
	return 0;
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *conn_param)
{
	struct cm_id *cid;
	size_t max;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	max = id->qp_type == IBV_QPT_UD ? URXE_CM_SIDR_REQ_PRIV : URXE_CM_REQ_PRIV;
	max -= URXE_CMA_HDR_LEN;
	if (conn_param && conn_param->private_data_len > max) {
		urxe_dbg("rdma_connect: %u bytes of private data, at most %zu",
			 conn_param->private_data_len, max);
		return cm_err(EINVAL);
	}
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&cm.lock);
		urxe_dbg("rdma_connect: the id's route is not resolved (state %d)",
			 cid->state);
		return cm_err(EINVAL);
	}
	if (id->qp_type != IBV_QPT_UD) {
		rc = conn_limits(cid, conn_param, false);
		if (rc) {
			pthread_mutex_unlock(&cm.lock);
			urxe_dbg("rdma_connect: responder resources %u or initiator depth %u above the device's %d, %d",
				 conn_param->responder_resources,
				 conn_param->initiator_depth,
				 cid->dev->attr.max_qp_rd_atom,
				 cid->dev->attr.max_qp_init_rd_atom);
			return cm_err(rc);
		}
	}
	rc = cm_send_req(cid, conn_param);
	if (!rc)
		cid->state = ID_CONNECT;
	pthread_mutex_unlock(&cm.lock);
	if (rc) {
		urxe_dbg("rdma_connect: cannot send the request: %s (source family %d, destination %d)",
			 strerror(-rc), id->route.addr.src_addr.sa_family,
			 id->route.addr.dst_addr.sa_family);
		return cm_err(-rc);
	}
	return cm_wait(cid);
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id,
			  struct rdma_conn_param *conn_param)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (conn_param && conn_param->private_data_len >
			  (id->qp_type == IBV_QPT_UD ? URXE_CM_SIDR_REP_PRIV :
						       URXE_CM_REP_PRIV))
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_CONNECT ||
	    (cid->cm != CM_REQ_RCVD && cid->cm != CM_SIDR_REQ_RCVD)) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EINVAL);
	}
	if (id->qp_type != IBV_QPT_UD) {
		rc = conn_limits(cid, conn_param, true);
		if (rc) {
			pthread_mutex_unlock(&cm.lock);
			return cm_err(rc);
		}
		if (id->qp && (cm_qp_to_rtr(cid) || cm_qp_to_rts(cid))) {
			rc = errno;
			cm_send_rej(cid, CM_REJ_CONSUMER, NULL, 0);
			pthread_mutex_unlock(&cm.lock);
			return cm_err(rc);
		}
	}
	rc = cm_send_rep(cid, conn_param);
	pthread_mutex_unlock(&cm.lock);
	if (rc)
		return cm_err(-rc);
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	return cm_wait(cid);
}

CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (id->qp)
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	rc = cid->cm == CM_REP_RCVD ? cm_send_rtu(cid) : -EINVAL;
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}

/* A request refused with @reason; SIDR ones only where @sidr. */
static int reject(struct rdma_cm_id *id, const void *private_data,
		  uint8_t private_data_len, uint16_t reason, bool sidr)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (private_data_len > URXE_CM_REJ_PRIV)
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	if (cid->cm != CM_REQ_RCVD && !(sidr && cid->cm == CM_SIDR_REQ_RCVD))
		rc = -EINVAL;
	else
		rc = cm_send_rej(cid, reason, private_data, private_data_len);
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, CM_REJ_CONSUMER,
		      true);
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len,
		      CM_REJ_VENDOR_OPTION, false);
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *cid;
	struct cm_event *e;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	pthread_mutex_lock(&cm.lock);
	/* Data came before the RTU: the connection is up. */
	if (cid->cm == CM_REP_SENT) {
		cid->cm = CM_ESTABLISHED;
		cid->due_ns = 0;
		cid->established = true;
		e = cm_event_new(cid, RDMA_CM_EVENT_ESTABLISHED, 0);
		cm_event_post(cid, e);
	}
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *cid;
	int rc = 0;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if (id->qp)
		cm_qp_to_err(cid);
	switch (cid->cm) {
	case CM_ESTABLISHED:
	case CM_REP_RCVD:
		rc = cm_send_dreq(cid);
		break;
	case CM_DREQ_RCVD:
		rc = cm_send_drep(cid);
		break;
	case CM_REP_SENT:
		rc = cm_send_dreq(cid);
		break;
	default:
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc)
		return cm_err(-rc);
	return cm_wait(cid);
}

/* ---- ECE: none on a software device ---- */

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return cm_err(EINVAL);
	return 0;
}

CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return cm_err(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}
