// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_create_ah(3) / ibv_destroy_ah(3).  ibv_create_ah_from_wc(3) and
 * ibv_init_ah_from_wc(3) build on the GRH of a UD receive and live with
 * the UD receive path.
 */
#include <errno.h>

#include "core.h"

URXE_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = NULL;
	int rc;

	if (!pd)
		return urxe_ret_null(-EINVAL, NULL);
	/* Two statements: argument evaluation order is unspecified. */
	rc = urxe_ah_create(ctx_dev(pd->context), pd, attr, &ah);
	return urxe_ret_null(rc, ah);
}

URXE_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return urxe_ret_errno(urxe_ah_destroy(ah));
}
