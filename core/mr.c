// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_reg_mr(3), ibv_reg_mr_iova, ibv_reg_mr_iova2, ibv_rereg_mr(3),
 * ibv_dereg_mr, ibv_import_mr(3) / ibv_unimport_mr.  ibv_reg_dmabuf_mr
 * stays unimplemented (unimpl.c).
 */
#include <errno.h>
#include <stdint.h>

#include "core.h"

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t length,
			  uint64_t iova, unsigned int access)
{
	struct ibv_mr *mr = NULL;
	int rc = -EINVAL;

	if (pd)
		rc = urxe_mr_reg(ctx_dev(pd->context), pd, addr, length, iova,
				 access, &mr);
	return urxe_ret_null(rc, mr);
}

/* verbs.h defines ibv_reg_mr and ibv_reg_mr_iova as macros too. */
URXE_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr,
					size_t length, int access)
{
	return reg(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

URXE_EXPORT struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr,
					     size_t length, uint64_t iova,
					     int access)
{
	return reg(pd, addr, length, iova, (unsigned int)access);
}

URXE_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					    size_t length, uint64_t iova,
					    unsigned int access)
{
	return reg(pd, addr, length, iova, access);
}

/*
 * Failure is a negative enum ibv_rereg_mr_err_code with errno set: the
 * checks libibverbs itself makes leave the MR as it was (ERR_INPUT); the
 * device's refusals are ERR_CMD, as from the kernel's command.
 */
URXE_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			     void *addr, size_t length, int access)
{
	if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)))
		return urxe_ret_negcode(-EINVAL, IBV_REREG_MR_ERR_INPUT);
	return urxe_ret_negcode(urxe_mr_rereg(mr, flags, pd, addr, length,
					      (unsigned int)access),
				IBV_REREG_MR_ERR_CMD);
}

URXE_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (!mr)
		return urxe_ret_errno(-EINVAL);
	return urxe_ret_errno(urxe_mr_dereg(mr));
}

/* ibv_import_mr(3): an MR of a context of this process (rxe_provider/import.c). */
URXE_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct ibv_mr *mr = NULL;
	int rc;

	if (!pd)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_mr_import(pd, mr_handle, &mr);
	return urxe_ret_null(rc, mr);
}

URXE_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (mr)
		urxe_mr_unimport(mr);
}
