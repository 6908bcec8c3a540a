// SPDX-License-Identifier: BSD-2-Clause
/*
 * Queue pairs: ibv_create_qp(3), ibv_modify_qp(3), ibv_query_qp(3),
 * ibv_destroy_qp(3), ibv_query_qp_data_in_order(3), and the
 * ibv_context_ops slots behind the inline ibv_post_send(3) and
 * ibv_post_recv(3).  A QP reports its async events into the event pipe of
 * the context it was made in.  All of them return 0 or the errno value.
 */
#include <errno.h>

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
