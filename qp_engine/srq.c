// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared receive queues on the engine's side: attaching a QP (it gets
 * room to hold the one WQE it takes per message) and resizing the ring
 * while QPs consume from it.  The responder (resp.c) takes the WQEs.
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

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * The progress lock keeps the responder out, the ring's lock the
 * posters; the posted WQEs move to the same free-running indices of the
 * new array, so neither side notices anything but the new size.
 */
int urxe_engine_srq_resize(struct urxe_esrq *srq, uint32_t max_wr)
{
	struct urxe_wq *q = &srq->rq;
	uint32_t slots = pow2_at_least(max_wr ? max_wr : 1), i, cons, prod;
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
