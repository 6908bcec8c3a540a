// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_open_xrcd(3) / ibv_close_xrcd(3), reached through verbs_context.
 * ibv_close_xrcd returns 0 or the errno value.
 */
#include <errno.h>

#include <urxe/log.h>

#include "core.h"

struct ibv_xrcd *urxe_vctx_open_xrcd(struct ibv_context *context,
				     struct ibv_xrcd_init_attr *attr)
{
	struct ibv_xrcd *x = NULL;
	int rc;

	if (!attr)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_xrcd_open(ctx_dev(context), context, attr, &x);
	if (rc == -EAGAIN)
		urxe_dbg("ibv_open_xrcd: no XRC domain for fd %d and no O_CREAT",
			 attr->fd);
	return urxe_ret_null(rc, x);
}

int urxe_vctx_close_xrcd(struct ibv_xrcd *xrcd)
{
	return urxe_ret_errno(urxe_xrcd_close(xrcd));
}
