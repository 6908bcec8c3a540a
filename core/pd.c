// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_alloc_pd(3) / ibv_dealloc_pd(3), ibv_import_pd(3) / ibv_unimport_pd.
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

/* ibv_import_pd(3): a PD of a context of this process (rxe_provider/import.c). */
URXE_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
					 uint32_t pd_handle)
{
	struct ibv_pd *pd = NULL;
	int rc;

	if (!context)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_pd_import(ctx_dev(context), context, pd_handle, &pd);
	return urxe_ret_null(rc, pd);
}

URXE_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd)
		urxe_pd_unimport(pd);
}
