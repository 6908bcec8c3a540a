// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe's librdmacm: the library's state, its devices, ids and their
 * options (rdma_cm(7)).  Event channels and events are cm_chan.c's, the
 * calls that drive a connection cm_conn.c's; the wire is ibcm.c's,
 * addresses addr.c's, QPs qp.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

int cm_init_locked(void)
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

/* ---- ids ---- */

struct cm_id *cm_id_new(struct cm_channel *chan, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cm_id *cid = calloc(1, sizeof(*cid));

	if (!cid)
		return NULL;
	if (!chan) {
		chan = cm_chan_new();
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
		cm_chan_free(cid->chan);
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
	cm_wait_acks(cid);
	cm_id_free(cid);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}


/* A uint8_t option (TOS, ACK_TIMEOUT): its value, noted as set. */
static int u8_option(const void *optval, size_t optlen, uint8_t *val,
		     bool *set)
{
	if (optlen != sizeof(uint8_t))
		return EINVAL;
	*val = *(const uint8_t *)optval;
	*set = true;
	return 0;
}

/* An int flag only an id not yet bound takes (REUSEADDR, AFONLY). */
static int idle_flag(const struct cm_id *cid, const void *optval,
		     size_t optlen, bool *on)
{
	if (optlen != sizeof(int))
		return EINVAL;
	if (cid->state != ID_IDLE)
		return EINVAL;
	*on = *(const int *)optval != 0;
	return 0;
}

CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen)
{
	struct cm_id *cid;
	bool on = false;
	int rc = 0;

	if (!id || !optval)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (level != RDMA_OPTION_ID)
		return cm_err(ENOSYS);	/* RDMA_OPTION_IB (paths) too */
	pthread_mutex_lock(&cm.lock);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		rc = u8_option(optval, optlen, &cid->tos, &cid->tos_set);
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		rc = idle_flag(cid, optval, optlen, &on);
		if (!rc)
			cid->reuseaddr = on;
		break;
	case RDMA_OPTION_ID_AFONLY:
		rc = idle_flag(cid, optval, optlen, &on);
		if (!rc)
			cid->afonly = on;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		rc = u8_option(optval, optlen, &cid->ack_timeout,
			       &cid->ack_timeout_set);
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
