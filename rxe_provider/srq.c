// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared receive queues: ibv_create_srq(3) and ibv_create_srq_ex(3)
 * (basic SRQs on a PD, XRC SRQs of an XRC domain), ibv_modify_srq(3),
 * ibv_query_srq(3), ibv_destroy_srq(3), ibv_post_srq_recv(3) and
 * ibv_get_srq_num(3).  An XRC SRQ (IBA annex A14) is numbered by the
 * engine; the requests of the domain's TGT QPs that name its number take
 * its WQEs, are checked against its PD and complete to its CQ.  The ring
 * is the engine's
 * (struct urxe_esrq): posting fills it under its spinlock like a QP's
 * receive queue, the responder takes one WQE per message for whichever
 * QP the message came to.  The limits are kernel rxe's (rxe_srq.c):
 * 1 .. max_srq_wr WRs, up to max_srq_sge SGEs (at least 1 granted), a
 * limit no larger than the ring; a resize keeps the posted WRs and fails
 * when they do not fit.  The limit, once armed, fires
 * IBV_EVENT_SRQ_LIMIT_REACHED once and disarms (ibv_modify_srq(3)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "xrc_shared.h"

#define SRQ_ATTR_MASK_ALL (IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)

/* ---- creation ---- */

/* An XRC SRQ's XRCD and CQ: this context's (as the kernel's handles). */
static int check_xrc(struct urxe_dev *dev, struct ibv_context *ctx,
		     const struct ibv_srq_init_attr_ex *a)
{
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
	    !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ)) {
		urxe_dbg("ibv_create_srq_ex: an XRC SRQ needs comp_mask IBV_SRQ_INIT_ATTR_XRCD, _CQ and _PD");
		return -EINVAL;
	}
	if (!a->xrcd || a->xrcd->context != ctx ||
	    to_uxrcd(a->xrcd)->dev != dev || !a->cq || a->cq->context != ctx) {
		urxe_dbg("ibv_create_srq_ex: the XRCD and CQ of an XRC SRQ must be of its context");
		return -EINVAL;
	}
	return 0;
}

/* rdma-core's checks (cmd_srq.c), then the device's. */
static int check_init(struct urxe_dev *dev, struct ibv_context *ctx,
		      const struct ibv_srq_init_attr_ex *a)
{
	enum ibv_srq_type type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ?
				 a->srq_type : IBV_SRQT_BASIC;

	if (a->comp_mask >= IBV_SRQ_INIT_ATTR_RESERVED)
		return -EOPNOTSUPP;
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd ||
	    a->pd->context != ctx)
		return -EINVAL;
	switch (type) {
	case IBV_SRQT_BASIC:
		break;
	case IBV_SRQT_XRC:
		if (check_xrc(dev, ctx, a))
			return -EINVAL;
		break;
	case IBV_SRQT_TM:
		if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
		    !(a->comp_mask & IBV_SRQ_INIT_ATTR_TM) ||
		    !a->tm_cap.max_num_tags)
			return -EINVAL;
		urxe_dbg("ibv_create_srq_ex: no tag matching");
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	if (!a->attr.max_wr || a->attr.max_wr > URXE_MAX_QP_WR ||
	    a->attr.max_sge > URXE_MAX_SGE)
		return -EINVAL;
	return 0;
}

/* Engine context, progress lock held: report the event, never block. */
static void limit_reached(struct urxe_esrq *e)
{
	struct urxe_srq *srq = urxe_esrq_pub(e)->owner;
	struct ibv_async_event ev = {
		.element.srq = &srq->ibv,
		.event_type = IBV_EVENT_SRQ_LIMIT_REACHED,
	};

	urxe_dbg("SRQ %u: limit reached", srq->ibv.handle);
	if (srq->async && !urxe_evpipe_post(srq->async, &ev))
		atomic_fetch_add(&srq->events_reported, 1);
}

static void init_ibv_srq(struct urxe_srq *srq,
			 const struct ibv_srq_init_attr_ex *a)
{
	static atomic_uint next_handle;
	struct ibv_srq *s = &srq->ibv;

	s->context = a->pd->context;
	s->srq_context = a->srq_context;
	s->pd = a->pd;
	/* Basic SRQs have no number on the wire: a handle for logs. */
	s->handle = atomic_fetch_add(&next_handle, 1) + 1;
	s->events_completed = 0;
	pthread_mutex_init(&s->mutex, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static bool is_xrc(const struct ibv_srq_init_attr_ex *a)
{
	return (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	       a->srq_type == IBV_SRQT_XRC;
}

/* Numbers @srq and makes it reachable; last, as it publishes. */
static int xrc_add(struct urxe_srq *srq, const struct ibv_srq_init_attr_ex *a)
{
	int rc;

	srq->xrcd = to_uxrcd(a->xrcd);
	srq->cq = to_ucq(a->cq);
	srq->e->xrcd = srq->xrcd->domain_id;
	srq->e->cq = &srq->cq->ring;
	rc = urxe_engine_xsrq_add(srq->dev->eng, srq->eobj);
	if (rc) {
		urxe_err("%s: no number left for an XRC SRQ (QPs and XRC SRQs share %u)",
			 srq->dev->desc.name, 1u << URXE_QPN_INDEX_BITS);
		return rc;
	}
	/*
	 * A file-backed domain's SRQs are known to its other processes: a
	 * TGT QP one of them hosts relays requests naming this one here.
	 */
	if (srq->xrcd->entry >= 0) {
		rc = urxe_dev_bind(srq->dev);
		if (!rc)
			rc = urxe_xrc_dom_get(srq->dev, srq->e->xrcd, &srq->xdom);
		if (!rc) {
			rc = urxe_xrc_srq_publish(srq->xdom, srq->e->srqn,
						  &srq->dev->gids[0]);
			if (rc) {
				urxe_xrc_dom_put(srq->xdom);
				srq->xdom = NULL;
			}
		}
		if (rc) {
			urxe_engine_xsrq_remove(srq->dev->eng, srq->eobj);
			return rc;
		}
	}
	atomic_fetch_add(&srq->xrcd->users, 1);
	atomic_fetch_add(&srq->cq->users, 1);
	return 0;
}

int urxe_srq_create(struct urxe_dev *dev, struct ibv_context *ctx,
		    struct ibv_srq_init_attr_ex *attr,
		    struct urxe_evpipe *async, struct ibv_srq **out)
{
	uint32_t max_sge;
	struct urxe_srq *srq;
	int rc;

	if (!attr)
		return -EINVAL;
	rc = check_init(dev, ctx, attr);
	if (rc)
		return rc;
	if (dev->dead)
		return -EIO;
	/* TGT QPs of other processes may relay requests to an XRC SRQ. */
	if (is_xrc(attr)) {
		rc = urxe_dev_bind(dev);
		if (rc)
			return rc;
	}
	if (atomic_fetch_add(&dev->nsrq, 1) >= 1 << URXE_QPN_INDEX_BITS) {
		rc = -ENOMEM;		/* max_srq */
		goto err_count;
	}
	max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		rc = -ENOMEM;
		goto err_count;
	}
	rc = urxe_engine_srq_new(attr->attr.max_wr, max_sge, &srq->eobj);
	if (rc)
		goto err_free;
	srq->e = urxe_esrq_pub(srq->eobj);
	srq->e->owner = srq;
	srq->dev = dev;
	srq->async = async;
	srq->e->eng = dev->eng;
	srq->e->pd = attr->pd->handle;
	srq->e->limit_reached = limit_reached;
	/* Created disarmed: srq_limit is not an input of ibv_create_srq(3). */
	atomic_init(&srq->e->limit, 0);
	atomic_init(&srq->events_reported, 0);
	atomic_init(&srq->users, 0);
	pthread_mutex_init(&srq->lock, NULL);
	init_ibv_srq(srq, attr);
	if (is_xrc(attr)) {
		rc = xrc_add(srq, attr);
		if (rc)
			goto err_init;
	}
	atomic_fetch_add(&to_upd(attr->pd)->users, 1);
	attr->attr.max_sge = max_sge;
	urxe_dbg("%s: SRQ %u created: %u WRs of %u SGEs%s", dev->desc.name,
		 srq->ibv.handle, attr->attr.max_wr, max_sge,
		 srq->xrcd ? ", XRC" : "");
	*out = &srq->ibv;
	return 0;

err_init:
	pthread_mutex_destroy(&srq->lock);
	pthread_mutex_destroy(&srq->ibv.mutex);
	pthread_cond_destroy(&srq->ibv.cond);
	urxe_engine_srq_free(srq->eobj);
err_free:
	free(srq);
err_count:
	atomic_fetch_sub(&dev->nsrq, 1);
	return rc;
}

/* ---- destruction ---- */

static bool event_of_srq(const void *rec, const void *arg)
{
	const struct ibv_async_event *ev = rec;

	return urxe_event_is_srq(ev->event_type) && ev->element.srq == arg;
}

int urxe_srq_destroy(struct ibv_srq *ibsrq)
{
	struct urxe_srq *srq;
	unsigned int reported;

	if (!ibsrq)
		return -EINVAL;
	srq = to_usrq(ibsrq);
	/* ibv_destroy_srq(3): not while a QP is associated with it. */
	if (atomic_load(&srq->users))
		return -EBUSY;
	/* No request reaches it after this; a message into it is dropped. */
	if (srq->xdom)
		urxe_xrc_srq_unpublish(srq->xdom, srq->e->srqn);
	if (srq->xrcd)
		urxe_engine_xsrq_remove(srq->dev->eng, srq->eobj);
	if (srq->xdom)
		urxe_xrc_dom_put(srq->xdom);
	reported = atomic_load(&srq->events_reported);
	if (srq->async && reported)
		reported -= urxe_evpipe_purge(srq->async, event_of_srq, ibsrq);
	/* ibv_get_async_event(3): wait for the events handed out. */
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);

	atomic_fetch_sub(&to_upd(ibsrq->pd)->users, 1);
	if (srq->xrcd) {
		atomic_fetch_sub(&srq->xrcd->users, 1);
		atomic_fetch_sub(&srq->cq->users, 1);
	}
	atomic_fetch_sub(&srq->dev->nsrq, 1);
	urxe_engine_srq_free(srq->eobj);
	pthread_mutex_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}

void urxe_srq_ack_async(struct ibv_srq *ibsrq)
{
	pthread_mutex_lock(&ibsrq->mutex);
	ibsrq->events_completed++;
	pthread_cond_signal(&ibsrq->cond);
	pthread_mutex_unlock(&ibsrq->mutex);
}

/* ---- modify and query ---- */

/* The ring's size now (a resize changes it). */
static uint32_t srq_max_wr(struct urxe_srq *srq)
{
	uint32_t max_wr, max_sge;

	urxe_engine_srq_caps(srq->eobj, &max_wr, &max_sge);
	return max_wr;
}

/*
 * Kernel rxe's rules (rxe_srq_chk_attr), judged on the state the modify
 * would leave: 1 .. max_srq_wr WRs, never fewer than an armed limit, and
 * a limit no larger than the ring.  srq->lock held.
 */
static int check_modify(struct urxe_srq *srq, const struct ibv_srq_attr *a,
			int mask)
{
	uint32_t max_wr = (mask & IBV_SRQ_MAX_WR) ? a->max_wr
						  : srq_max_wr(srq);
	uint32_t limit = (mask & IBV_SRQ_LIMIT) ? a->srq_limit
				: atomic_load(&srq->e->limit);

	if (mask & ~SRQ_ATTR_MASK_ALL)
		return -EINVAL;
	if ((mask & IBV_SRQ_MAX_WR) &&
	    (!max_wr || max_wr > URXE_MAX_QP_WR || (limit && max_wr < limit)))
		return -EINVAL;
	if ((mask & IBV_SRQ_LIMIT) && limit > max_wr)
		return -EINVAL;
	return 0;
}

int urxe_srq_modify(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct urxe_srq *srq;
	int rc;

	if (!ibsrq || !attr)
		return -EINVAL;
	srq = to_usrq(ibsrq);
	pthread_mutex_lock(&srq->lock);
	rc = check_modify(srq, attr, mask);
	/* The resize is the step that can fail (WRs posted beyond the size). */
	if (!rc && (mask & IBV_SRQ_MAX_WR) && attr->max_wr != srq_max_wr(srq))
		rc = urxe_engine_srq_resize(srq->eobj, attr->max_wr);
	/* Arming: the responder checks it at each WQE it takes. */
	if (!rc && (mask & IBV_SRQ_LIMIT))
		atomic_store(&srq->e->limit, attr->srq_limit);
	pthread_mutex_unlock(&srq->lock);
	if (rc)
		urxe_dbg("SRQ %u: modify (mask 0x%x, max_wr %u, limit %u): %d",
			 ibsrq->handle, mask, attr->max_wr, attr->srq_limit, rc);
	return rc;
}

int urxe_srq_query(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct urxe_srq *srq;

	if (!ibsrq || !attr)
		return -EINVAL;
	srq = to_usrq(ibsrq);
	pthread_mutex_lock(&srq->lock);
	urxe_engine_srq_caps(srq->eobj, &attr->max_wr, &attr->max_sge);
	/* 0 once the limit event fired: no longer armed (ibv_query_srq(3)). */
	attr->srq_limit = atomic_load(&srq->e->limit);
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

/* ---- posting ---- */

/*
 * Nothing to kick: a QP that found the SRQ empty sent an RNR NAK, and the
 * requester comes back when its RNR timer says (as with a receive queue).
 */
int urxe_srq_post_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	unsigned int posted;

	return urxe_engine_srq_post(to_usrq(ibsrq)->eobj, wr, bad, &posted);
}

int urxe_srq_get_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct urxe_srq *srq;

	if (!ibsrq || !srq_num)
		return -EINVAL;
	srq = to_usrq(ibsrq);
	if (!srq->xrcd) {
		urxe_dbg("ibv_get_srq_num: SRQ %u is a basic SRQ: only XRC SRQs (IBV_SRQT_XRC) have numbers",
			 ibsrq->handle);
		return -EINVAL;
	}
	*srq_num = srq->e->srqn;
	return 0;
}
