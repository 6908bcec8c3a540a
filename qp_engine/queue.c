// SPDX-License-Identifier: BSD-2-Clause
/*
 * Work queue and completion rings: power-of-two slot arrays with
 * free-running indices.  Posters hold the ring's spinlock; the engine
 * consumes under the progress lock.  prod is published with release
 * ordering after the slot is written, read with acquire before it is read.
 * The posting side of the work rings is here (urxe_engine_sq_*, the
 * receive posts), so that the provider never touches a ring's indices.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>

#include "eqp.h"

int urxe_wq_init(struct urxe_wq *q, uint32_t max_wr, uint32_t max_sge,
		 uint32_t max_inline, size_t hdr_size)
{
	size_t data = (size_t)max_sge * sizeof(struct urxe_sge);
	uint32_t slots = urxe_pow2_at_least(max_wr ? max_wr : 1);

	memset(q, 0, sizeof(*q));
	if (max_inline > data)
		data = max_inline;
	q->stride = (uint32_t)((hdr_size + data + 63) & ~(size_t)63);
	q->mask = slots - 1;
	q->max_wr = max_wr;
	q->max_sge = max_sge;
	q->max_inline = max_inline;
	if (max_wr) {
		q->buf = aligned_alloc(64, (size_t)slots * q->stride);
		if (!q->buf)
			return -ENOMEM;
	}
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	atomic_init(&q->prod, 0);
	atomic_init(&q->cons, 0);
	return 0;
}

void urxe_wq_fini(struct urxe_wq *q)
{
	free(q->buf);
	q->buf = NULL;
	pthread_spin_destroy(&q->lock);
}

/* ---- the engine's QP and SRQ objects (eqp.h), rings and all ---- */

int urxe_engine_qp_new(const struct ibv_qp_cap *cap, struct urxe_eqp **out)
{
	static const struct ibv_qp_cap none;
	struct urxe_eqp *qp;
	int rc;

	if (!cap)
		cap = &none;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	rc = urxe_wq_init(&qp->sq, cap->max_send_wr, cap->max_send_sge,
			  cap->max_inline_data, sizeof(struct urxe_send_wqe));
	if (rc)
		goto err_free;
	rc = urxe_wq_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge, 0,
			  sizeof(struct urxe_recv_wqe));
	if (rc)
		goto err_sq;
	*out = qp;
	return 0;

err_sq:
	urxe_wq_fini(&qp->sq);
err_free:
	free(qp);
	return rc;
}

void urxe_engine_qp_free(struct urxe_eqp *qp)
{
	if (!qp)
		return;
	urxe_wq_fini(&qp->sq);
	urxe_wq_fini(&qp->rq);
	free(qp);
}

int urxe_engine_srq_new(uint32_t max_wr, uint32_t max_sge,
			struct urxe_esrq **out)
{
	struct urxe_esrq *srq = calloc(1, sizeof(*srq));
	int rc;

	if (!srq)
		return -ENOMEM;
	rc = urxe_wq_init(&srq->rq, max_wr, max_sge, 0,
			  sizeof(struct urxe_recv_wqe));
	if (rc) {
		free(srq);
		return rc;
	}
	*out = srq;
	return 0;
}

void urxe_engine_srq_free(struct urxe_esrq *srq)
{
	if (!srq)
		return;
	urxe_wq_fini(&srq->rq);
	free(srq);
}

void urxe_engine_srq_caps(struct urxe_esrq *srq, uint32_t *max_wr,
			  uint32_t *max_sge)
{
	*max_wr = srq->rq.max_wr;
	*max_sge = srq->rq.max_sge;
}

/* ---- posting: the producer side (urxe_engine_sq_*, *_post) ---- */

static bool wq_full(struct urxe_wq *q, uint32_t prod)
{
	return prod - atomic_load_explicit(&q->cons, memory_order_acquire) >=
	       q->max_wr;
}

uint64_t urxe_sge_len(const struct ibv_sge *sg, int n)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += sg[i].length;
	return sum;
}

uint32_t urxe_engine_sq_begin(struct urxe_eqp *qp)
{
	pthread_spin_lock(&qp->sq.lock);
	return atomic_load_explicit(&qp->sq.prod, memory_order_relaxed);
}

struct urxe_send_wqe *urxe_engine_sq_slot(struct urxe_eqp *qp, uint32_t idx)
{
	return wq_full(&qp->sq, idx) ? NULL : urxe_wq_slot(&qp->sq, idx);
}

void urxe_engine_sq_publish(struct urxe_eqp *qp, uint32_t end)
{
	/* Release: every slot before @end is written. */
	atomic_store_explicit(&qp->sq.prod, end, memory_order_release);
}

void urxe_engine_sq_end(struct urxe_eqp *qp)
{
	pthread_spin_unlock(&qp->sq.lock);
}

static int recv_post(struct urxe_wq *q, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad, unsigned int *posted)
{
	struct urxe_recv_wqe *w;
	uint64_t len;
	uint32_t prod;
	int rc = 0, i;

	*posted = 0;
	pthread_spin_lock(&q->lock);
	prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	for (; wr; wr = wr->next, prod++, (*posted)++) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge ||
		    (wr->num_sge && !wr->sg_list))
			rc = -EINVAL;
		else if (wq_full(q, prod))
			rc = -ENOMEM;
		if (rc) {
			*bad = wr;
			break;
		}
		len = urxe_sge_len(wr->sg_list, wr->num_sge);
		w = urxe_wq_slot(q, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		/* No message exceeds 2^31 bytes: more room changes nothing. */
		w->length = len > URXE_MAX_MSG_SZ ? URXE_MAX_MSG_SZ : (uint32_t)len;
		for (i = 0; i < wr->num_sge; i++)
			w->sge[i] = (struct urxe_sge){
				.addr = wr->sg_list[i].addr,
				.length = wr->sg_list[i].length,
				.lkey = wr->sg_list[i].lkey,
			};
		/* Slot written: hands it to the engine. */
		atomic_store_explicit(&q->prod, prod + 1, memory_order_release);
	}
	pthread_spin_unlock(&q->lock);
	return rc;
}


int urxe_engine_rq_post(struct urxe_eqp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad, unsigned int *posted)
{
	return recv_post(&qp->rq, wr, bad, posted);
}

int urxe_engine_srq_post(struct urxe_esrq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, unsigned int *posted)
{
	return recv_post(&srq->rq, wr, bad, posted);
}

int urxe_cq_ring_init(struct urxe_cq_ring *r, uint32_t cqe)
{
	uint32_t slots = urxe_pow2_at_least(cqe + 1);

	memset(r, 0, sizeof(*r));
	r->wc = calloc(slots, sizeof(*r->wc));
	if (!r->wc)
		return -ENOMEM;
	r->mask = slots - 1;
	r->cqe = cqe;
	pthread_spin_init(&r->lock, PTHREAD_PROCESS_PRIVATE);
	atomic_init(&r->prod, 0);
	atomic_init(&r->cons, 0);
	return 0;
}

void urxe_cq_ring_fini(struct urxe_cq_ring *r)
{
	free(r->wc);
	r->wc = NULL;
	pthread_spin_destroy(&r->lock);
}

bool urxe_cq_push(struct urxe_cq_ring *r, const struct ibv_wc *wc,
		  bool solicited)
{
	bool fire = false, over = false;
	uint32_t prod;

	pthread_spin_lock(&r->lock);
	prod = atomic_load_explicit(&r->prod, memory_order_relaxed);
	/* The application sized the CQ at cqe entries: more is an overrun. */
	if (prod - atomic_load_explicit(&r->cons, memory_order_acquire) >= r->cqe) {
		over = !r->overflow;
		r->overflow = true;
	} else {
		r->wc[prod & r->mask] = *wc;
		atomic_store_explicit(&r->prod, prod + 1, memory_order_release);
		if (r->armed == 1 || (r->armed == 2 && (solicited ||
				      wc->status != IBV_WC_SUCCESS))) {
			r->armed = 0;
			fire = true;
		}
	}
	pthread_spin_unlock(&r->lock);
	if (over && r->overrun)
		r->overrun(r);
	if (fire && r->notify)
		r->notify(r);
	return !over && !r->overflow;
}

int urxe_cq_pop(struct urxe_cq_ring *r, int n, struct ibv_wc *wc)
{
	uint32_t cons, prod;
	int i = 0;

	pthread_spin_lock(&r->lock);
	cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&r->prod, memory_order_acquire);
	for (; i < n && cons != prod; i++, cons++)
		wc[i] = r->wc[cons & r->mask];
	atomic_store_explicit(&r->cons, cons, memory_order_release);
	pthread_spin_unlock(&r->lock);
	return i;
}
