// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory windows (IBA 10.6.7): binding a window to a range of a region,
 * and invalidating it.  Windows sit in the engine's key table beside the
 * regions; a bind rewrites the window's range and rights and the low byte
 * of its rkey (the key the consumer chose, ibv_inc_rkey(3)).  Binds and
 * invalidations run under the progress lock -- the requester's, in send
 * queue order, and the responder's for a SEND with Invalidate -- as do the
 * remote checks that read a binding; the rkey, which lookups compare under
 * the key table's lock, changes under that lock too.  The checks are
 * those of kernel rxe (rxe_mw.c), with the clauses it cites.
 */
#include <errno.h>

#include "engine_int.h"

/* What a window may grant: kernel rxe's MR rights plus ZERO_BASED. */
#define MW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
		   IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

static void set_rkey(struct urxe_engine *eng, struct urxe_mem *mw,
		     uint32_t rkey)
{
	pthread_spin_lock(&eng->keyt.key_lock);
	mw->rkey = rkey;
	pthread_spin_unlock(&eng->keyt.key_lock);
}

/* The window grants nothing any more; its region's reference goes. */
static void unbind(struct urxe_mem *mw)
{
	if (mw->mr)
		urxe_mem_put(mw->mr);
	mw->mr = NULL;
	mw->qpn = 0;
	mw->length = 0;
	mw->access = 0;
	mw->iova = 0;
	mw->addr = NULL;
}

/*
 * The window a bind names by its handle, the key it got when allocated
 * (its lkey, never valid as a local key): its rkey changes with every
 * bind, and a type 2 window's current rkey is the consumer's business.
 */
static struct urxe_mem *mw_get(struct urxe_engine *eng, uint32_t handle)
{
	uint32_t idx = urxe_engine_key_index(eng, handle);
	struct urxe_mem *m;

	if (!idx)
		return NULL;
	pthread_spin_lock(&eng->keyt.key_lock);
	m = eng->keyt.keys[idx];
	if (m && m->mw_type && m->lkey == handle)
		atomic_fetch_add(&m->refs, 1);
	else
		m = NULL;
	pthread_spin_unlock(&eng->keyt.key_lock);
	return m;
}

static int bind_check(const struct urxe_eqp *qp,
		      const struct urxe_send_wqe *wqe,
		      const struct urxe_mem *mw, const struct urxe_mem *mr)
{
	unsigned int acc = wqe->mw_access;
	uint64_t va = wqe->remote_addr, len = wqe->compare_add;

	if (acc & ~MW_ACCESS)
		return -EINVAL;
	if (mw->mw_type == 1 && (acc & IBV_ACCESS_ZERO_BASED))
		return -EINVAL;			/* o10-36.2.2 */
	if (mw->mw_type == 2 && (mw->length || qp->pd != mw->pd || !mr))
		return -EINVAL;	/* o10-37.2.30 free, C10-72 PD, o10-37.2.40 */
	if (!mr)
		return 0;			/* type 1, length 0: unbind */
	if (mr->pd != mw->pd || (mr->access & IBV_ACCESS_ZERO_BASED) ||
	    !(mr->access & IBV_ACCESS_MW_BIND))
		return -EINVAL;			/* C10-73 */
	if ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;			/* C10-74 */
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return -EINVAL;			/* C10-75 */
	return 0;
}

int urxe_mw_bind(struct urxe_eqp *qp, const struct urxe_send_wqe *wqe)
{
	struct urxe_engine *eng = qp->eng;
	struct urxe_mem *mw, *mr = NULL;
	int rc = -EINVAL;

	mw = mw_get(eng, wqe->imm_inv);
	if (!mw)
		goto out;
	if (wqe->compare_add) {
		mr = urxe_mem_get(eng, wqe->mr_lkey, false);
		if (!mr)
			goto out;
	}
	rc = bind_check(qp, wqe, mw, mr);
	if (rc)
		goto out;
	unbind(mw);
	mw->access = wqe->mw_access;
	if (mr) {
		mw->mr = mr;		/* the lookup's reference: the binding's */
		mw->addr = mr->addr + (wqe->remote_addr - mr->iova);
		/* IBA 10.6.3.2: a zero-based window is addressed from 0. */
		mw->iova = wqe->mw_access & IBV_ACCESS_ZERO_BASED ?
			   0 : wqe->remote_addr;
		mw->length = wqe->compare_add;
		mw->qpn = mw->mw_type == 2 ? qp->qpn : 0;	/* type 2B */
		mr = NULL;
	}
	set_rkey(eng, mw, (mw->rkey & ~0xffu) | (wqe->rkey & 0xffu));
out:
	if (mr)
		urxe_mem_put(mr);
	if (mw)
		urxe_mem_put(mw);
	return rc;
}

/*
 * -ENOENT: @rkey names no window (a region's, or nothing); -EINVAL: a
 * window that cannot be invalidated -- type 1 (o10-37.2.26), not bound,
 * or of another PD.
 */
int urxe_mw_invalidate(struct urxe_eqp *qp, uint32_t rkey)
{
	struct urxe_mem *mw = urxe_mem_get(qp->eng, rkey, true);
	int rc = -EINVAL;

	if (!mw)
		return -ENOENT;
	if (!mw->mw_type) {
		rc = -ENOENT;
	} else if (mw->mw_type == 2 && mw->length && mw->pd == qp->pd) {
		unbind(mw);
		rc = 0;
	}
	urxe_mem_put(mw);
	return rc;
}

int urxe_engine_mw_remove(struct urxe_engine *eng, struct urxe_mem *mem)
{
	int rc = urxe_engine_mem_remove(eng, mem);

	if (rc)
		return rc;
	/* Unpublished, and nobody held it: the engine cannot reach it now. */
	unbind(mem);
	return 0;
}
