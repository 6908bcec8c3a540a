// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory windows: ibv_alloc_mw(3), ibv_dealloc_mw(3) and ibv_bind_mw(3)
 * (types 1 and 2B, as kernel rxe).  A window is a key of the engine's key
 * table with no local key; binding it is a work request on a send queue
 * (IBV_WR_BIND_MW, qp_post.c), which the engine's requester executes in
 * order (qp_engine/mw.c).  ibv_bind_mw posts that request for a type 1
 * window with the next rkey (ibv_inc_rkey), as rdma-core's rxe provider
 * does, and gives the window that rkey at once.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/provider.h>

#include "provider_int.h"

int urxe_mw_alloc(struct urxe_dev *dev, struct ibv_pd *ibpd,
		  enum ibv_mw_type type, struct ibv_mw **out)
{
	struct urxe_mw *mw;
	int rc;

	if (!ibpd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2))
		return -EINVAL;
	if (dev->dead)
		return -EIO;
	if (!dev->eng)
		return -ENODEV;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	mw->dev = dev;
	mw->pd = to_upd(ibpd);
	mw->mem.mw_type = type == IBV_MW_TYPE_1 ? 1 : 2;
	mw->mem.pd = ibpd->handle;
	rc = urxe_engine_mem_add(dev->eng, &mw->mem);
	if (rc < 0) {
		free(mw);
		return rc;
	}
	atomic_fetch_add(&mw->pd->users, 1);
	mw->ibv.context = ibpd->context;
	mw->ibv.pd = ibpd;
	mw->ibv.rkey = mw->mem.rkey;
	mw->ibv.handle = mw->mem.lkey;
	mw->ibv.type = type;
	*out = &mw->ibv;
	return 0;
}

/* A bound window is unbound first (kernel rxe); -EBUSY while in use. */
int urxe_mw_dealloc(struct ibv_mw *ibmw)
{
	struct urxe_mw *mw = to_umw(ibmw);
	int rc;

	if (!mw->dev->dead) {
		rc = urxe_engine_mw_remove(mw->dev->eng, &mw->mem);
		if (rc)
			return rc;
	}
	atomic_fetch_sub(&mw->pd->users, 1);
	free(mw);
	return 0;
}

int urxe_mw_post_bind(struct ibv_qp *qp, struct ibv_mw *mw,
		      struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int rc;

	/* rdma-core's rxe: type 1 windows are never zero-based (o10-36.2.2). */
	if (!qp || !mw || !bind || mw->context != qp->context ||
	    (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED))
		return -EINVAL;
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	rc = urxe_qp_post_send(qp, &wr, &bad);
	if (rc)
		return rc;
	/* The rkey it will have: an error completion leaves it to the user. */
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
