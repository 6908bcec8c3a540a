// SPDX-License-Identifier: BSD-2-Clause
/*
 * Protection domains.  A PD only groups objects; it refuses to die while
 * any of them lives.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/provider.h>

#include "provider_int.h"

static atomic_uint next_handle = 1;

int urxe_pd_alloc(struct urxe_dev *dev, struct ibv_context *ctx,
		  struct ibv_pd **out)
{
	struct urxe_pd *pd;

	if (dev->dead)
		return -EIO;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ibv.context = ctx;
	pd->ibv.handle = atomic_fetch_add(&next_handle, 1);
	pd->dev = dev;
	atomic_init(&pd->users, 0);
	urxe_import_add_pd(pd);
	*out = &pd->ibv;
	return 0;
}

int urxe_pd_dealloc(struct ibv_pd *ibpd)
{
	struct urxe_pd *pd = to_upd(ibpd);

	if (atomic_load(&pd->users) > 0)
		return -EBUSY;
	if (!pd->imported)
		urxe_import_del_pd(pd);
	free(pd);
	return 0;
}
