// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_alloc_pd(3) / ibv_dealloc_pd(3).
 */
#include <errno.h>

#include "core.h"

URXE_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = NULL;
	int rc;

	/* Two statements: argument evaluation order is unspecified. */
	rc = urxe_pd_alloc(ctx_dev(context), context, &pd);
	return urxe_ret_null(rc, pd);
}

URXE_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return urxe_ret_errno(urxe_pd_dealloc(pd));
}
