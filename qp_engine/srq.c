// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared receive queues on the engine's side: attaching a QP (it gets
 * room to hold the one WQE it takes per message), resizing the ring
 * while QPs consume from it, and the table of XRC SRQs, numbered in the
 * QPs' index space, that XRCETH names.  The responder (resp.c) takes the
 * WQEs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

int urxe_engine_srq_attach(struct urxe_eqp *qp, struct urxe_esrq *srq)
{
	/* A WQE taken is copied whole: the SRQ's slot size holds any. */
	qp->srq_wqe = malloc(srq->rq.stride);
	if (!qp->srq_wqe)
		return -ENOMEM;
	qp->srq = srq;
	qp->srq_held = false;
	return 0;
}

void urxe_engine_srq_detach(struct urxe_eqp *qp)
{
	free(qp->srq_wqe);
	qp->srq_wqe = NULL;
	qp->srq = NULL;
	qp->srq_held = false;
}

/*
 * The progress lock keeps the responder out, the ring's lock the
 * posters; the posted WQEs move to the same free-running indices of the
 * new array, so neither side notices anything but the new size.
 */
int urxe_engine_srq_resize(struct urxe_esrq *srq, uint32_t max_wr)
{
	struct urxe_wq *q = &srq->rq;
	uint32_t slots = urxe_pow2_at_least(max_wr ? max_wr : 1), i, cons, prod;
	uint8_t *buf;
	int rc = 0;

	buf = aligned_alloc(64, (size_t)slots * q->stride);
	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&srq->eng->lock);
	pthread_spin_lock(&q->lock);
	cons = atomic_load_explicit(&q->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	if (prod - cons > max_wr) {
		rc = -EINVAL;
		goto out;
	}
	for (i = cons; i != prod; i++)
		memcpy(buf + (size_t)(i & (slots - 1)) * q->stride,
		       urxe_wq_slot(q, i), q->stride);
	free(q->buf);
	q->buf = buf;
	buf = NULL;
	q->mask = slots - 1;
	q->max_wr = max_wr;
out:
	pthread_spin_unlock(&q->lock);
	pthread_mutex_unlock(&srq->eng->lock);
	free(buf);
	return rc;
}

/* ---- XRC SRQs (IBA annex A14) ---- */

/*
 * Gives every TGT QP's WQE buffer @stride bytes (progress lock and
 * qp_lock held).  One grown before another fails stays so: bigger than
 * needed is harmless.
 */
static int tgt_bufs_grow(struct urxe_engine *eng, uint32_t stride)
{
	uint32_t i;

	for (i = 0; i < eng->qpt.nlive; i++) {
		struct urxe_eqp *qp = eng->qpt.live[i];
		void *p;

		if (qp->type != IBV_QPT_XRC_RECV || !qp->srq_wqe)
			continue;
		p = realloc(qp->srq_wqe, stride);
		if (!p)
			return -ENOMEM;
		qp->srq_wqe = p;
	}
	return 0;
}

int urxe_engine_xsrq_add(struct urxe_engine *eng, struct urxe_esrq *srq)
{
	int rc;

	if (!srq->cq || !srq->rq.stride)
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qpt.qp_lock);
	if (!eng->qpt.xsrqs) {
		eng->qpt.xsrqs = calloc(URXE_QP_SLOTS, sizeof(*eng->qpt.xsrqs));
		if (!eng->qpt.xsrqs) {
			rc = -ENOMEM;
			goto out;
		}
	}
	/* A TGT QP copies the WQE it takes: its buffer holds any. */
	if (srq->rq.stride > eng->qpt.xsrq_stride) {
		rc = tgt_bufs_grow(eng, srq->rq.stride);
		if (rc)
			goto out;
		eng->qpt.xsrq_stride = srq->rq.stride;
	}
	rc = urxe_index_alloc(eng);
	if (rc < 0)
		goto out;
	srq->eng = eng;
	srq->srqn = eng->slot << URXE_QPN_INDEX_BITS | (uint32_t)rc;
	eng->qpt.xsrqs[rc] = srq;
	rc = 0;
out:
	pthread_mutex_unlock(&eng->qpt.qp_lock);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

/*
 * Unpublished first; then no TGT QP keeps pointing at it: the WQE one
 * holds is flushed to the SRQ's CQ, its message dropped (what follows of
 * it finds no SRQ: NAK).
 */
void urxe_engine_xsrq_remove(struct urxe_engine *eng, struct urxe_esrq *srq)
{
	uint32_t idx = srq->srqn & (URXE_QP_SLOTS - 1), i;

	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qpt.qp_lock);
	if (eng->qpt.xsrqs && eng->qpt.xsrqs[idx] == srq)
		eng->qpt.xsrqs[idx] = NULL;
	pthread_mutex_unlock(&eng->qpt.qp_lock);
	/* (live changes under both locks: the progress lock suffices) */
	for (i = 0; i < eng->qpt.nlive; i++) {
		struct urxe_eqp *qp = eng->qpt.live[i];

		if (qp->type == IBV_QPT_XRC_RECV && qp->srq == srq)
			urxe_resp_xrc_release(qp);
	}
	pthread_mutex_unlock(&eng->lock);
}

struct urxe_esrq *urxe_engine_xsrq_lookup(struct urxe_engine *eng,
					  uint32_t srqn)
{
	if (srqn >> URXE_QPN_INDEX_BITS != eng->slot || !eng->qpt.xsrqs)
		return NULL;
	return eng->qpt.xsrqs[srqn & (URXE_QP_SLOTS - 1)];
}
