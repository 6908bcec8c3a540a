// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared receive queues: ibv_create_srq(3), ibv_modify_srq(3),
 * ibv_query_srq(3), ibv_destroy_srq(3), the verbs_context slots behind the
 * inline ibv_create_srq_ex(3) (XRC SRQs too) and ibv_get_srq_num(3), and
 * the ibv_context_ops slot behind the inline ibv_post_srq_recv(3).  An
 * SRQ reports its async events into the event pipe of the context it was
 * made in.  Constructors return NULL with errno, the others 0 or the
 * errno value.
 */
#include <errno.h>
#include <string.h>

#include "core.h"

static int create(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr,
		  struct ibv_srq **out)
{
	/* Two statements: argument evaluation order is unspecified. */
	return urxe_srq_create(ctx_dev(ctx), ctx, attr, &to_uctx(ctx)->async,
			       out);
}

URXE_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					   struct ibv_srq_init_attr *srq_init_attr)
{
	struct ibv_srq_init_attr_ex ex;
	struct ibv_srq *srq = NULL;
	int rc;

	if (!pd || !srq_init_attr)
		return urxe_ret_null(-EINVAL, NULL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = srq_init_attr->srq_context;
	ex.attr = srq_init_attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd;
	rc = create(pd->context, &ex, &srq);
	if (!rc)
		srq_init_attr->attr = ex.attr;	/* the granted sizes */
	return urxe_ret_null(rc, srq);
}

/* The verbs_context slot behind the inline ibv_create_srq_ex(3). */
struct ibv_srq *urxe_vctx_create_srq_ex(struct ibv_context *context,
					struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq = NULL;
	int rc;

	if (!context || !attr)
		return urxe_ret_null(-EINVAL, NULL);
	rc = create(context, attr, &srq);
	return urxe_ret_null(rc, srq);
}

URXE_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			       int srq_attr_mask)
{
	return urxe_ret_errno(urxe_srq_modify(srq, srq_attr, srq_attr_mask));
}

URXE_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	return urxe_ret_errno(urxe_srq_query(srq, srq_attr));
}

URXE_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	return urxe_ret_errno(urxe_srq_destroy(srq));
}

/* The verbs_context slot behind the inline ibv_get_srq_num(3). */
int urxe_vctx_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	return urxe_ret_errno(urxe_srq_get_num(srq, srq_num));
}

int urxe_ops_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	return urxe_ret_errno(urxe_srq_post_recv(srq, wr, bad_wr));
}
