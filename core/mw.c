// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory windows: ibv_alloc_mw(3), ibv_bind_mw(3) and ibv_dealloc_mw are
 * inline in verbs.h and call these ibv_context_ops slots; they convert
 * to each verb's convention (rxe_provider/mw.c does the work).
 */
#include <errno.h>

#include "core.h"

struct ibv_mw *urxe_ops_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = NULL;
	int rc = -EINVAL;

	if (pd)
		rc = urxe_mw_alloc(ctx_dev(pd->context), pd, type, &mw);
	return urxe_ret_null(rc, mw);
}

int urxe_ops_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		     struct ibv_mw_bind *bind)
{
	return urxe_ret_errno(urxe_mw_post_bind(qp, mw, bind));
}

int urxe_ops_dealloc_mw(struct ibv_mw *mw)
{
	if (!mw)
		return urxe_ret_errno(-EINVAL);
	return urxe_ret_errno(urxe_mw_dealloc(mw));
}
