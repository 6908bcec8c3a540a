// SPDX-License-Identifier: BSD-2-Clause
/*
 * Completion channels and queues: ibv_create_comp_channel(3),
 * ibv_create_cq(3), ibv_create_cq_ex(3) (its polling API is
 * rxe_provider/cq_ex.c's; start_poll and next_poll convert here),
 * ibv_resize_cq(3), ibv_get_cq_event(3), and the
 * ibv_context_ops slots behind the inline ibv_poll_cq(3) and
 * ibv_req_notify_cq(3).  A CQ reports IBV_EVENT_CQ_ERR into the event pipe
 * of the context it was made in.
 */
#include <errno.h>

#include "core.h"

URXE_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch = NULL;
	int rc;

	if (!context)
		return urxe_ret_null(-EINVAL, NULL);
	/* Two statements: argument evaluation order is unspecified. */
	rc = urxe_channel_create(ctx_dev(context), context, &ch);
	return urxe_ret_null(rc, ch);
}

URXE_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return urxe_ret_errno(-EINVAL);
	return urxe_ret_errno(urxe_channel_destroy(channel));
}

URXE_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					 void *cq_context,
					 struct ibv_comp_channel *channel,
					 int comp_vector)
{
	struct ibv_cq *cq = NULL;
	int rc;

	if (!context)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_cq_create(ctx_dev(context), context, cqe, cq_context,
			    channel, comp_vector, &to_uctx(context)->async, &cq);
	return urxe_ret_null(rc, cq);
}

/* The verbs_context slot behind the inline ibv_create_cq_ex(3). */
struct ibv_cq_ex *urxe_vctx_create_cq_ex(struct ibv_context *context,
					 struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *cq = NULL;
	int rc;

	if (!context)
		return urxe_ret_null(-EINVAL, NULL);
	rc = urxe_cq_create_ex(ctx_dev(context), context, attr,
			       &to_uctx(context)->async, &cq);
	if (rc)
		return urxe_ret_null(rc, NULL);
	/* These two return errno values (ENOENT: empty): core converts. */
	cq->start_poll = urxe_ops_start_poll;
	cq->next_poll = urxe_ops_next_poll;
	return cq;
}

/* ibv_start_poll(3) / ibv_next_poll: 0, ENOENT when empty, or an errno. */
int urxe_ops_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	return urxe_ret_errno(urxe_cq_start_poll(cq, attr));
}

int urxe_ops_next_poll(struct ibv_cq_ex *cq)
{
	return urxe_ret_errno(urxe_cq_next_poll(cq));
}

URXE_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (!cq)
		return urxe_ret_errno(-EINVAL);
	return urxe_ret_errno(urxe_cq_resize(cq, cqe));
}

URXE_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (!cq)
		return urxe_ret_errno(-EINVAL);
	return urxe_ret_errno(urxe_cq_destroy(cq));
}

URXE_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				 struct ibv_cq **cq, void **cq_context)
{
	struct ibv_cq *got;
	int rc;

	if (!channel || !cq || !cq_context)
		return urxe_ret_minus1(-EINVAL);
	rc = urxe_channel_get_event(channel, &got);
	if (rc)
		return urxe_ret_minus1(rc);
	*cq = got;
	*cq_context = got->cq_context;
	return 0;
}

URXE_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq && nevents)
		urxe_cq_ack_events(cq, nevents);
}

/* ibv_poll_cq: a count or a negative value, the provider's own convention. */
int urxe_ops_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return urxe_cq_poll(cq, num_entries, wc);
}

int urxe_ops_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return urxe_ret_errno(urxe_cq_req_notify(cq, solicited_only));
}
