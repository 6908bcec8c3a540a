// SPDX-License-Identifier: BSD-2-Clause
/*
 * Queue pairs: ibv_create_qp(3), ibv_modify_qp(3), ibv_query_qp(3),
 * ibv_destroy_qp(3), ibv_query_qp_data_in_order(3), ibv_create_qp_ex(3),
 * ibv_open_qp(3) (XRC TGT QPs, rxe_provider/qp_xrc.c),
 * ibv_attach_mcast(3) (rxe_provider/mcast.c)
 * with ibv_qp_to_qp_ex (the ibv_wr_* family is rxe_provider/qp_ex.c's;
 * wr_complete converts here), and the
 * ibv_context_ops slots behind the inline ibv_post_send(3) and
 * ibv_post_recv(3).  A QP reports its async events into the event pipe of
 * the context it was made in.  All of them return 0 or the errno value.
 */
#include <errno.h>

#include <urxe/log.h>

#include "core.h"

URXE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp *qp = NULL;
	int rc;

	if (!pd)
		return urxe_ret_null(-EINVAL, NULL);
	/* Two statements: argument evaluation order is unspecified. */
	rc = urxe_qp_create(ctx_dev(pd->context), pd, qp_init_attr,
			    &to_uctx(pd->context)->async, &qp);
	return urxe_ret_null(rc, qp);
}

/* The verbs_context slot behind the inline ibv_create_qp_ex(3). */
struct ibv_qp *urxe_vctx_create_qp_ex(struct ibv_context *context,
				      struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp = NULL;
	struct ibv_qp_ex *qpx;
	int rc;

	if (!context || !attr)
		return urxe_ret_null(-EINVAL, NULL);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd &&
	    attr->pd->context != context)
		return urxe_ret_null(-EINVAL, NULL);
	/* As the kernel's handles: an XRCD of this context. */
	if (attr->qp_type == IBV_QPT_XRC_RECV &&
	    (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) && attr->xrcd &&
	    attr->xrcd->context != context) {
		urxe_dbg("ibv_create_qp_ex: the XRCD was opened in another context: open it in this one");
		return urxe_ret_null(-EINVAL, NULL);
	}
	rc = urxe_qp_create_ex(ctx_dev(context), attr,
			       &to_uctx(context)->async, &qp);
	if (rc)
		return urxe_ret_null(rc, NULL);
	/* ibv_wr_complete(3) returns an errno value: core converts. */
	qpx = urxe_qp_to_qp_ex(qp);
	if (qpx)
		qpx->wr_complete = urxe_ops_wr_complete;
	return qp;
}

/* The verbs_context slot behind the inline ibv_open_qp(3). */
struct ibv_qp *urxe_vctx_open_qp(struct ibv_context *context,
				 struct ibv_qp_open_attr *attr)
{
	struct ibv_qp *qp = NULL;
	int rc;

	if (!context)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_qp_open(ctx_dev(context), context, attr,
			  &to_uctx(context)->async, &qp);
	return urxe_ret_null(rc, qp);
}

int urxe_ops_wr_complete(struct ibv_qp_ex *qpx)
{
	return urxe_ret_errno(urxe_qpx_complete(qpx));
}

/* NULL unless the QP was made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. */
URXE_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct ibv_qp_ex *qpx;

	if (!qp)
		return urxe_ret_null(-EINVAL, NULL);
	qpx = urxe_qp_to_qp_ex(qp);
	return urxe_ret_null(qpx ? 0 : -EOPNOTSUPP, qpx);
}

URXE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			      int attr_mask)
{
	return urxe_ret_errno(urxe_qp_modify(qp, attr, attr_mask));
}

URXE_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	return urxe_ret_errno(urxe_qp_query(qp, attr, attr_mask, init_attr));
}

URXE_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	return urxe_ret_errno(urxe_qp_destroy(qp));
}

URXE_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				 uint16_t lid)
{
	(void)lid;			/* RoCE: no LIDs */
	return urxe_ret_errno(urxe_qp_attach_mcast(qp, gid));
}

URXE_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				 uint16_t lid)
{
	(void)lid;
	return urxe_ret_errno(urxe_qp_detach_mcast(qp, gid));
}

/*
 * 1 would promise that a receiver may poll the data instead of the CQ.
 * The responder copies payloads with memcpy(), whose stores x86 "fast
 * string" copies may make visible out of order; rdma-core's rxe provider
 * answers 0 too.
 */
URXE_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					   enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp; (void)op; (void)flags;
	return 0;
}

int urxe_ops_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr)
{
	return urxe_ret_errno(urxe_qp_post_send(qp, wr, bad_wr));
}

int urxe_ops_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	return urxe_ret_errno(urxe_qp_post_recv(qp, wr, bad_wr));
}
