// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB CM's received MADs (ibcm.c has the overview): their dispatch,
 * the answers to what this side sent (REP, RTU, REJ, MRA, SIDR_REP), the
 * disconnection (DREQ, DREP), and the events they cm_post on the ids'
 * channels.  Requests to listeners are ibcm_listen.c's.  Lock held.
 */
#include <string.h>

#include "ibcm_int.h"

/*
 * Reports @type on @cid's channel.  @qp_err: the id's QP moves to ERR
 * when the program fetches the event (rdma_get_cm_event), in its own
 * thread, as librdmacm does: never from this thread, where the QP may
 * already be gone.
 */
static void post_ev(struct cm_id *cid, enum rdma_cm_event_type type,
		    int status, const uint8_t *priv, uint8_t len, bool qp_err)
{
	struct cm_event *e = cm_event_new(cid, type, status);

	if (!e)
		return;
	e->qp_err = qp_err;
	if (priv && len) {
		memcpy(e->priv, priv, len);
		e->ev.param.conn.private_data = e->priv;
		e->ev.param.conn.private_data_len = len;
	}
	cm_event_post(cid, e);
}

void cm_post(struct cm_id *cid, enum rdma_cm_event_type type, int status,
		 const uint8_t *priv, uint8_t len)
{
	post_ev(cid, type, status, priv, len, false);
}

void cm_post_qp_err(struct cm_id *cid, enum rdma_cm_event_type type,
			int status, const uint8_t *priv, uint8_t len)
{
	post_ev(cid, type, status, priv, len, true);
}

struct cm_id *cm_by_local_id(uint32_t id)
{
	struct cm_id *c;

	if (!id)
		return NULL;
	for (c = cm.ids; c; c = c->next)
		if (c->local_id == id && c->cm != CM_IDLE)
			return c;
	return NULL;
}

/* A REQ (or SIDR_REQ) seen before: the same sender and comm ID. */
struct cm_id *cm_by_remote(uint32_t remote_id, const union ibv_gid *gid)
{
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c->remote_id == remote_id && c->cm != CM_IDLE &&
		    !memcmp(c->id.route.addr.addr.ibaddr.dgid.raw, gid->raw, 16))
			return c;
	return NULL;
}

/* Replies to a MAD nobody here owns (REJ, DREP, SIDR_REP). */
void cm_reply_raw(struct cm_dev *d, const struct urxe_gsi_mad *g,
		      const struct urxe_cm_msg *m)
{
	uint8_t mad[URXE_MAD_LEN];
	uint8_t index = 0;
	int i;

	for (i = 0; i < d->ngid; i++)
		if (!memcmp(d->gid[i].raw, g->dgid.raw, 16)) {
			index = (uint8_t)i;
			break;
		}
	if (urxe_cm_encode(m, mad))
		return;
	urxe_dbg("RDMA CM: reply %s remote %#x", urxe_cm_attr_name(m->attr),
		 m->remote_id);
	cm_send_raw(d, index, &g->sgid, g->tos, mad);
}

static void on_sidr_rep(const struct urxe_gsi_mad *g,
			const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->local_id);
	struct cm_event *e;

	(void)g;
	if (!c || c->cm != CM_SIDR_REQ_SENT)
		return;
	cm_timer_stop(c);
	c->cm = CM_IDLE;
	if (m->sidr_status != CM_SIDR_SUCCESS) {
		e = cm_event_new(c, RDMA_CM_EVENT_UNREACHABLE, m->sidr_status);
		if (!e)
			return;
	} else {
		e = cm_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return;
		e->ev.param.ud.qp_num = m->local_qpn;
		e->ev.param.ud.qkey = m->local_qkey;
		cm_ah_attr(c, &e->ev.param.ud.ah_attr);
	}
	memcpy(e->priv, m->priv, URXE_CM_SIDR_REP_PRIV);
	e->ev.param.ud.private_data = e->priv;
	e->ev.param.ud.private_data_len = URXE_CM_SIDR_REP_PRIV;
	cm_event_post(c, e);
}

static void on_rep(const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);
	struct cm_event *e;

	if (!c)
		return;
	if (c->cm == CM_ESTABLISHED && c->remote_id == m->local_id) {
		cm_send_rtu(c);		/* our RTU was lost */
		return;
	}
	if (c->cm != CM_REQ_SENT)
		return;
	cm_timer_stop(c);
	c->cm = CM_REP_RCVD;
	c->remote_id = m->local_id;
	c->remote_qpn = m->local_qpn;
	c->sq_psn = m->start_psn;	/* we send from the REP's PSN */
	c->rnr_retry = m->rnr_retry;
	/* What we may do is what the peer will take. */
	if (c->init_depth > m->resp_resources)
		c->init_depth = m->resp_resources;
	if (c->resp_res > m->init_depth)
		c->resp_res = m->init_depth;
	e = cm_event_new(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (!e)
		return;
	memcpy(e->priv, m->priv, URXE_CM_REP_PRIV);
	e->ev.param.conn.private_data = e->priv;
	e->ev.param.conn.private_data_len = URXE_CM_REP_PRIV;
	e->ev.param.conn.responder_resources = m->resp_resources;
	e->ev.param.conn.initiator_depth = m->init_depth;
	e->ev.param.conn.flow_control = m->e2e_flow;
	e->ev.param.conn.rnr_retry_count = m->rnr_retry;
	e->ev.param.conn.srq = m->srq;
	e->ev.param.conn.qp_num = m->local_qpn;
	cm_event_post(c, e);
}

static void on_rtu(const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);

	if (!c || c->cm != CM_REP_SENT || c->remote_id != m->local_id)
		return;
	cm_timer_stop(c);
	c->cm = CM_ESTABLISHED;
	if (!c->established) {
		c->established = true;
		cm_post(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
}

static void on_rej(const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);

	if (!c)
		return;
	switch (c->cm) {
	case CM_REQ_SENT:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		break;
	case CM_ESTABLISHED:
		/* A REJ for an RTU the peer never took: as Linux, a drop. */
		if (c->remote_id != m->local_id)
			return;
		break;
	default:
		return;
	}
	cm_timer_stop(c);
	c->cm = CM_IDLE;
	cm_post_qp_err(c, RDMA_CM_EVENT_REJECTED, m->reason, m->priv,
		    URXE_CM_REJ_PRIV);
}

static void on_mra(const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);

	if (!c)
		return;
	if ((c->cm == CM_REQ_SENT && m->msg_rejected == 0) ||
	    (c->cm == CM_REP_SENT && m->msg_rejected == 1)) {
		/* The peer is slow, not gone: wait as long as it says. */
		c->due_ns = cm_now_ns() + cm_ms_ns(m->service_timeout) +
			    c->period_ns;
		cm_timer_kick();
	}
}

void cm_disconnected(struct cm_id *c, int status)
{
	if (c->disc_reported)
		return;
	c->disc_reported = true;
	cm_post(c, RDMA_CM_EVENT_DISCONNECTED, status, NULL, 0);
}

static void on_dreq(struct cm_dev *d, const struct urxe_gsi_mad *g,
		    const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);
	struct urxe_cm_msg r;

	if (!c || c->remote_id != m->local_id || m->local_qpn != cm_our_qpn(c)) {
		/* Not (or no longer) ours: the peer may finish. */
		memset(&r, 0, sizeof(r));
		r.attr = URXE_CM_DREP;
		r.tid = m->tid;
		r.local_id = m->remote_id;
		r.remote_id = m->local_id;
		cm_reply_raw(d, g, &r);
		return;
	}
	switch (c->cm) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		cm_timer_stop(c);
		c->cm = CM_DREQ_RCVD;
		c->tid = m->tid;
		c->established = true;
		cm_disconnected(c, 0);
		break;
	case CM_TIMEWAIT:
		c->tid = m->tid;
		memset(&r, 0, sizeof(r));
		r.attr = URXE_CM_DREP;
		r.tid = m->tid;
		r.local_id = c->local_id;
		r.remote_id = c->remote_id;
		cm_send(c, &r, false);
		break;
	default:
		break;
	}
}

static void on_drep(const struct urxe_cm_msg *m)
{
	struct cm_id *c = cm_by_local_id(m->remote_id);

	if (!c || c->cm != CM_DREQ_SENT)
		return;
	cm_enter_timewait(c);
	cm_disconnected(c, 0);
}

void cm_handle_mad(struct cm_dev *d, const struct urxe_gsi_mad *g)
{
	struct urxe_cm_msg m;

	if (urxe_cm_decode(g->mad, sizeof(g->mad), &m)) {
		urxe_dbg("RDMA CM: a MAD that is not the CM's: dropped");
		return;
	}
	urxe_dbg("RDMA CM: recv %s local %#x remote %#x",
		 urxe_cm_attr_name(m.attr), m.local_id, m.remote_id);
	switch (m.attr) {
	case URXE_CM_REQ:
		cm_on_req(d, g, &m);
		break;
	case URXE_CM_MRA:
		on_mra(&m);
		break;
	case URXE_CM_REJ:
		on_rej(&m);
		break;
	case URXE_CM_REP:
		on_rep(&m);
		break;
	case URXE_CM_RTU:
		on_rtu(&m);
		break;
	case URXE_CM_DREQ:
		on_dreq(d, g, &m);
		break;
	case URXE_CM_DREP:
		on_drep(&m);
		break;
	case URXE_CM_SIDR_REQ:
		cm_on_sidr_req(d, g, &m);
		break;
	case URXE_CM_SIDR_REP:
		on_sidr_rep(g, &m);
		break;
	default:
		break;		/* LAP, APR: no alternate paths here */
	}
}
