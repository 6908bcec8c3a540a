/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Placeholders for the exported verbs that urxe does not implement yet,
 * with the exact prototypes of <infiniband/verbs.h>.  Each fails the way
 * its man page says failure looks, with errno EOPNOTSUPP: constructors
 * return NULL, errno-style verbs return EOPNOTSUPP, -1-style verbs return
 * -1.  EOPNOTSUPP is what the pyverbs tests turn into a SKIP.
 *
 * Grouped by object; as an object gets implemented its group moves out of
 * this file (and out of the unused-parameter waiver below) in one piece.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <urxe/log.h>
#include <urxe/util.h>

#include "retconv.h"

/* Placeholders ignore their arguments by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int unimpl(const char *verb)
{
	urxe_dbg("%s: not implemented", verb);
	return -EOPNOTSUPP;
}

/* --- Memory regions: ibv_reg_dmabuf_mr(3) (the rest is in mr.c) --- */

URXE_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					     size_t length, uint64_t iova,
					     int fd, int access)
{
	return urxe_ret_null(unimpl(__func__), NULL);
}

/* --- Enhanced connection establishment: ibv_set_ece(3), ibv_query_ece(3) --- */

URXE_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return urxe_ret_errno(unimpl(__func__));
}

URXE_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return urxe_ret_errno(unimpl(__func__));
}

/* --- ibv_resolve_eth_l2_from_gid (core/ah.c has the address handles) --- */

/*
 * No man page; rdma-core returns a negative errno (or -1 from
 * ibv_query_gid).  Providers use it, applications do not.
 */
URXE_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					    struct ibv_ah_attr *attr,
					    uint8_t eth_mac[ETHERNET_LL_SIZE],
					    uint16_t *vid)
{
	return (int)urxe_ret_negerrno(unimpl(__func__));
}

/* --- Device memory import: ibv_import_dm(3) (core/context.c, pd.c, mr.c have the rest) --- */

URXE_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
					 uint32_t dm_handle)
{
	return urxe_ret_null(unimpl(__func__), NULL);
}

URXE_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}
