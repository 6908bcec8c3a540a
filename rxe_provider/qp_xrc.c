// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC TGT QPs and their handles: ibv_open_qp(3), and ibv_destroy_qp(3) of
 * a TGT QP handle (IBA annex A14; the kernel's ib_open_qp semantics).
 *
 * A TGT QP (IBV_QPT_XRC_RECV) belongs to its XRC domain, not to the
 * context that made it: any context of the device instance may open it
 * by number through an XRCD handle of the same domain, each open making a
 * new handle.  The creator's handle is the QP object's own ibv_qp; an
 * opened one is a struct urxe_qp of its own whose ->real names the QP.
 * ibv_modify_qp / ibv_query_qp through any handle act on the one QP; its
 * async events go to every handle still open, each in its own context;
 * ibv_destroy_qp of a handle drops that handle, and the QP goes with the
 * last one, whichever that is.
 *
 * The instance lists its TGT QPs in dev->tgt_qps; dev->xrc_lock guards
 * the list, each QP's handles and their count.  The engine calls
 * urxe_qp_tgt_event() with its progress lock held, so nothing here takes
 * the progress lock under xrc_lock.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "xrc_shared.h"

#define OPEN_ATTR_NEEDED (IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | \
			  IBV_QP_OPEN_ATTR_TYPE)

/*
 * A TGT QP of a file-backed domain is the domain's: its responder state
 * moves to the domain's shared file, where the other processes of the
 * domain find it (docs/design.md, "XRC across processes").  Without room
 * there it stays this process's (a log line says so).
 */
static void tgt_share(struct urxe_qp *qp, struct urxe_xrcd *xrcd)
{
	struct urxe_tgt_shared *st;

	if (xrcd->entry < 0)
		return;		/* a private domain */
	if (urxe_xrc_dom_get(qp->dev, qp->e->xrcd, &qp->xdom))
		goto err;
	if (urxe_xrc_tgt_publish(qp->xdom, qp->e->qpn, &st)) {
		urxe_xrc_dom_put(qp->xdom);
		qp->xdom = NULL;
		goto err;
	}
	/* Nobody knows the QPN yet: the state is set without the lock. */
	urxe_engine_tgt_seed(qp->eobj, st);
	pthread_mutex_lock(&qp->lock);
	qp->e->shared = st;
	pthread_mutex_unlock(&qp->lock);
	return;
err:
	urxe_err("%s: TGT QP 0x%06x: other processes of its XRC domain cannot open it",
		 qp->dev->desc.name, qp->e->qpn);
}

/* The last handle of a TGT QP went: the domain forgets it. */
static void tgt_unshare(struct urxe_qp *qp)
{
	if (qp->view)
		urxe_xrc_view_del(qp->dev, qp->eobj);
	else if (qp->xdom)
		urxe_xrc_tgt_unpublish(qp->xdom, qp->e->shared);
}

void urxe_qp_tgt_publish(struct urxe_qp *qp, struct urxe_xrcd *xrcd)
{
	struct urxe_dev *dev = qp->dev;

	tgt_share(qp, xrcd);
	qp->xrcd = xrcd;
	atomic_fetch_add(&xrcd->users, 1);
	pthread_mutex_lock(&dev->xrc_lock);
	qp->creator_open = true;
	qp->nhandles = 1;
	qp->tgt_next = dev->tgt_qps;
	dev->tgt_qps = qp;
	pthread_mutex_unlock(&dev->xrc_lock);
}

void urxe_qp_tgt_event(struct urxe_qp *qp, enum ibv_event_type type)
{
	struct urxe_qp *h;

	pthread_mutex_lock(&qp->dev->xrc_lock);
	if (qp->creator_open)
		urxe_qp_post_event(qp, type);
	for (h = qp->handles; h; h = h->hnext)
		urxe_qp_post_event(h, type);
	pthread_mutex_unlock(&qp->dev->xrc_lock);
}

/* Takes @h off its QP; true when it was the last handle.  xrc_lock held. */
static bool handle_unlink(struct urxe_qp *qp, struct urxe_qp *h)
{
	struct urxe_qp **pp;

	if (h == qp) {
		qp->creator_open = false;
	} else {
		for (pp = &qp->handles; *pp; pp = &(*pp)->hnext)
			if (*pp == h) {
				*pp = h->hnext;
				break;
			}
	}
	if (--qp->nhandles)
		return false;
	/* Unfindable from now on: ibv_open_qp cannot revive it. */
	for (pp = &qp->dev->tgt_qps; *pp; pp = &(*pp)->tgt_next)
		if (*pp == qp) {
			*pp = qp->tgt_next;
			break;
		}
	return true;
}

void urxe_qp_tgt_close(struct urxe_qp *h)
{
	struct urxe_qp *qp = urxe_qp_real(h);
	struct urxe_dev *dev = qp->dev;
	struct ibv_qp *ibh = &h->vqp.qp_base;
	unsigned int left;
	bool last;

	pthread_mutex_lock(&dev->xrc_lock);
	last = handle_unlink(qp, h);
	left = qp->nhandles;
	pthread_mutex_unlock(&dev->xrc_lock);
	/* No event names @h any more: those posted go, or are waited for. */
	urxe_qp_drain_events(h);
	atomic_fetch_sub(&h->xrcd->users, 1);
	if (h != qp) {
		urxe_dbg("QP 0x%06x: a handle closed%s", qp->e->qpn,
			 last ? ", the last one" : "");
		pthread_mutex_destroy(&ibh->mutex);
		pthread_cond_destroy(&ibh->cond);
		urxe_engine_qp_free(h->eobj);
		free(h);
	} else if (!last) {
		urxe_dbg("QP 0x%06x: its creator's handle closed; it lives on in %u opened",
			 qp->e->qpn, left);
	}
	if (last) {
		struct urxe_xrc_dom *d = qp->xdom;

		tgt_unshare(qp);
		urxe_qp_release(qp);
		if (d)
			urxe_xrc_dom_put(d);
	}
}

/*
 * The TGT QP @qpn of domain @domain_id on @dev that another process made.
 *
 * This is where a lookup across processes goes: the domain's TGT QPs are
 * then known to every process that uses it, and a handle opened here
 * would drive the QP its host process keeps.  Until then no QP of
 * another process is found: -EINVAL, as for a number nobody made.
 */
static void view_fatal(struct urxe_eqp *e, enum ibv_event_type type)
{
	struct urxe_qp *qp = urxe_eqp_pub(e)->owner;

	if (type == IBV_EVENT_QP_LAST_WQE_REACHED)
		return;		/* a TGT QP is attached to no SRQ */
	urxe_dbg("QP 0x%06x (hosted elsewhere): async event %d",
		 urxe_eqp_pub(e)->qpn, type);
	urxe_qp_tgt_event(qp, type);
}

static int tgt_open_remote(struct urxe_dev *dev, uint64_t domain_id,
			   uint32_t qpn, struct urxe_qp *h)
{
	struct urxe_tgt_shared *st = NULL;
	int rc;

	if (h->xrcd->entry < 0)
		goto none;	/* a private domain: this process only */
	rc = urxe_dev_bind(dev);
	if (rc)
		return rc;
	rc = urxe_xrc_dom_get(dev, domain_id, &h->xdom);
	if (rc)
		return rc;
	st = urxe_xrc_tgt_find(h->xdom, qpn);
	if (!st) {
		urxe_xrc_dom_put(h->xdom);
		h->xdom = NULL;
		goto none;
	}
	/*
	 * The handle is this process's view of the QP: requests naming our
	 * SRQs come here (relayed by the host), and run on the shared state.
	 */
	h->view = true;
	h->e->owner = h;
	h->e->eng = dev->eng;
	h->e->xrcd = domain_id;
	h->e->shared = st;
	h->e->fatal = view_fatal;
	h->e->sport = urxe_engine_qp_sport(qpn);
	if (pthread_mutex_lock(&st->lock) == EOWNERDEAD) {
		st->broken = 1;		/* as urxe_tgt_begin() */
		pthread_mutex_consistent(&st->lock);
	}
	h->e->attr = st->attr;
	pthread_mutex_unlock(&st->lock);
	h->e->attr.sgid = dev->gids[0];
	pthread_mutex_init(&h->lock, NULL);
	h->creator_open = true;
	h->nhandles = 1;
	pthread_mutex_lock(&dev->xrc_lock);
	h->tgt_next = dev->tgt_qps;
	dev->tgt_qps = h;
	pthread_mutex_unlock(&dev->xrc_lock);
	rc = urxe_xrc_view_add(dev, h->xdom, h->eobj);
	if (rc) {
		pthread_mutex_lock(&dev->xrc_lock);
		handle_unlink(h, h);
		pthread_mutex_unlock(&dev->xrc_lock);
		pthread_mutex_destroy(&h->lock);
		urxe_xrc_dom_put(h->xdom);
		return rc;
	}
	urxe_engine_xrc_watch(dev->eng, true);
	urxe_dbg("%s: TGT QP 0x%06x of another process opened", dev->desc.name,
		 qpn);
	return 0;
none:
	urxe_dbg("%s: ibv_open_qp: no TGT QP 0x%06x in XRC domain %#llx",
		 dev->desc.name, qpn, (unsigned long long)domain_id);
	return -EINVAL;
}

/* A live TGT QP of the instance; xrc_lock held. */
static struct urxe_qp *tgt_find(struct urxe_dev *dev, uint64_t domain_id,
				uint32_t qpn)
{
	struct urxe_qp *qp;

	for (qp = dev->tgt_qps; qp; qp = qp->tgt_next)
		if (qp->e->qpn == qpn && qp->e->xrcd == domain_id)
			return qp;
	return NULL;
}

static int check_open(struct urxe_dev *dev, struct ibv_context *ctx,
		      const struct ibv_qp_open_attr *a)
{
	/* rdma-core's ibv_cmd_open_qp, then the kernel's ib_open_qp. */
	if (a->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED)
		return -EOPNOTSUPP;
	if ((a->comp_mask & OPEN_ATTR_NEEDED) != OPEN_ATTR_NEEDED) {
		urxe_dbg("ibv_open_qp: comp_mask 0x%x lacks NUM, XRCD or TYPE (all three are needed)",
			 a->comp_mask);
		return -EINVAL;
	}
	if (!a->xrcd || a->xrcd->context != ctx ||
	    to_uxrcd(a->xrcd)->dev != dev) {
		urxe_dbg("ibv_open_qp: the XRCD must be one opened in this context");
		return -EINVAL;
	}
	if (a->qp_type != IBV_QPT_XRC_RECV) {
		urxe_dbg("ibv_open_qp: QP type %d: only XRC_RECV (TGT) QPs can be opened",
			 a->qp_type);
		return -EINVAL;
	}
	return 0;
}

static void init_handle(struct urxe_qp *h, struct ibv_context *ctx,
			const struct ibv_qp_open_attr *a,
			struct urxe_evpipe *async)
{
	struct ibv_qp *q = &h->vqp.qp_base;

	q->context = ctx;
	q->qp_context = a->qp_context;
	q->qp_num = a->qp_num;
	q->handle = a->qp_num;
	q->qp_type = IBV_QPT_XRC_RECV;
	/* As rdma-core: the state is the QP's, known after a query. */
	q->state = IBV_QPS_UNKNOWN;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	h->e->type = IBV_QPT_XRC_RECV;
	h->e->qpn = a->qp_num;
	h->async = async;
	h->xrcd = to_uxrcd(a->xrcd);
	atomic_init(&h->events_reported, 0);
}

int urxe_qp_open(struct urxe_dev *dev, struct ibv_context *ctx,
		 struct ibv_qp_open_attr *attr, struct urxe_evpipe *async,
		 struct ibv_qp **out)
{
	struct urxe_qp *h, *qp;
	unsigned int n = 0;
	uint64_t domain;
	int rc;

	if (!attr || !ctx)
		return -EINVAL;
	rc = check_open(dev, ctx, attr);
	if (rc)
		return rc;
	if (dev->dead)
		return -EIO;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = urxe_engine_qp_new(NULL, &h->eobj);
	if (rc) {
		free(h);
		return rc;
	}
	h->e = urxe_eqp_pub(h->eobj);
	h->dev = dev;
	init_handle(h, ctx, attr, async);
	domain = h->xrcd->domain_id;
	/* Complete before it is linked: events may name it at once. */
	atomic_fetch_add(&h->xrcd->users, 1);
	pthread_mutex_lock(&dev->xrc_lock);
	qp = tgt_find(dev, domain, attr->qp_num);
	if (qp) {
		h->real = qp;
		h->hnext = qp->handles;
		qp->handles = h;
		n = ++qp->nhandles;
	}
	pthread_mutex_unlock(&dev->xrc_lock);
	if (!qp) {
		rc = tgt_open_remote(dev, domain, attr->qp_num, h);
		if (rc)
			goto err_free;
	}
	urxe_dbg("%s: QP 0x%06x opened, %u handles", dev->desc.name,
		 attr->qp_num, n);
	*out = &h->vqp.qp_base;
	return 0;

err_free:
	atomic_fetch_sub(&h->xrcd->users, 1);
	pthread_mutex_destroy(&h->vqp.qp_base.mutex);
	pthread_cond_destroy(&h->vqp.qp_base.cond);
	urxe_engine_qp_free(h->eobj);
	free(h);
	return rc;
}
