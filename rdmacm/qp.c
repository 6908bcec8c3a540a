// SPDX-License-Identifier: BSD-2-Clause
/*
 * QPs made through RDMA CM, and the attributes the CM computes for any
 * QP (rdma_create_qp(3), rdma_init_qp_attr(3), rdma_create_ep(3)).
 *
 * A connected QP starts in INIT (P_Key index 0, port 1, no remote
 * access); the CM takes it on: RTR and RTS when the passive side accepts,
 * or when the active side fetches the REP's event, ERR when it
 * disconnects.  A UD QP goes to RTS at once with the RDMA CM's Q_Key.
 * The values are the connection's (cm_id): the peer's QPN and starting
 * PSN, our own random receive PSN, the negotiated read/atomic depths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_int.h"

/* An address handle's attributes for @cid's peer (the RTR's, a UD one's). */
void cm_ah_attr(const struct cm_id *cid, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = cid->id.route.addr.addr.ibaddr.dgid;
	ah->grh.sgid_index = cid->sgid_index;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = cid->tos;
	ah->grh.flow_label = ntohl(cid->path.flow_label);
}

static int init_attr(struct cm_id *cid, struct ibv_qp_attr *a, int *mask,
		     bool connected, bool ud)
{
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	a->pkey_index = 0;
	a->port_num = 1;
	if (ud) {
		*mask |= IBV_QP_QKEY;
		a->qkey = CM_QKEY_UDP;
	} else {
		*mask |= IBV_QP_ACCESS_FLAGS;
		if (connected) {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (cid->resp_res)
				a->qp_access_flags |=
					IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_ATOMIC;
		}
	}
	return 0;
}

static int rtr_attr(struct cm_id *cid, struct ibv_qp_attr *a, int *mask,
		    bool connected, bool ud, bool rc)
{
	*mask = IBV_QP_STATE;
	if (ud)
		return 0;
	if (!connected)
		return -EINVAL;
	*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		 IBV_QP_RQ_PSN;
	cm_ah_attr(cid, &a->ah_attr);
	a->path_mtu = cid->path_mtu ? (enum ibv_mtu)cid->path_mtu :
				      IBV_MTU_1024;
	a->dest_qp_num = cid->remote_qpn;
	a->rq_psn = cid->rq_psn;
	if (rc) {
		*mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER;
		a->max_dest_rd_atomic = cid->resp_res;
		a->min_rnr_timer = 0;
	}
	return 0;
}

static int rts_attr(struct cm_id *cid, struct ibv_qp_attr *a, int *mask,
		    bool connected, bool ud, bool rc)
{
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (ud) {
		a->sq_psn = 0;
		return 0;
	}
	if (!connected)
		return -EINVAL;
	a->sq_psn = cid->sq_psn;
	if (rc) {
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		a->timeout = cid->ack_timeout_set ? cid->ack_timeout :
						     CM_PACKET_LIFETIME + 1;
		a->retry_cnt = cid->retry_count;
		a->rnr_retry = cid->rnr_retry;
		a->max_rd_atomic = cid->init_depth;
	}
	return 0;
}

int cm_qp_init_attr(struct cm_id *cid, struct ibv_qp_attr *a, int *mask)
{
	bool connected = cid->cm != CM_IDLE;
	bool ud = cid->id.qp_type == IBV_QPT_UD;
	bool rc = cid->id.qp_type == IBV_QPT_RC ||
		  cid->id.qp_type == IBV_QPT_XRC_SEND ||
		  cid->id.qp_type == IBV_QPT_XRC_RECV;
	enum ibv_qp_state state = a->qp_state;

	if (!cid->dev)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		return init_attr(cid, a, mask, connected, ud);
	case IBV_QPS_RTR:
		return rtr_attr(cid, a, mask, connected, ud, rc);
	case IBV_QPS_RTS:
		return rts_attr(cid, a, mask, connected, ud, rc);
	default:
		return -EINVAL;
	}
}

CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct cm_id *cid;
	int rc;

	if (!id || !qp_attr || !qp_attr_mask)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	rc = cm_qp_init_attr(cid, qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}

static int modify(struct cm_id *cid, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };
	int mask, rc;

	rc = cm_qp_init_attr(cid, &a, &mask);
	if (rc)
		return cm_err(-rc);
	rc = ibv_modify_qp(cid->id.qp, &a, mask);
	return rc ? cm_err(rc) : 0;
}

/* INIT again with the connection's access, then RTR (lock held). */
int cm_qp_to_rtr(struct cm_id *cid)
{
	if (!cid->id.qp || cid->id.qp_type == IBV_QPT_UD)
		return 0;
	if (modify(cid, IBV_QPS_INIT))
		return -1;
	return modify(cid, IBV_QPS_RTR);
}

int cm_qp_to_rts(struct cm_id *cid)
{
	if (!cid->id.qp || cid->id.qp_type == IBV_QPT_UD)
		return 0;
	return modify(cid, IBV_QPS_RTS);
}

int cm_qp_to_err(struct cm_id *cid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (!cid->id.qp)
		return 0;
	return ibv_modify_qp(cid->id.qp, &a, IBV_QP_STATE) ? -1 : 0;
}

/* A fresh QP's first states (lock held). */
static int qp_start(struct cm_id *cid)
{
	if (modify(cid, IBV_QPS_INIT))
		return -1;
	if (cid->id.qp_type != IBV_QPT_UD)
		return 0;
	if (modify(cid, IBV_QPS_RTR))
		return -1;
	return modify(cid, IBV_QPS_RTS);
}

/* Completion queues (with channels) the user did not give; NULL: none. */
static int make_cqs(struct cm_id *cid, struct ibv_cq **send_cq,
		    struct ibv_cq **recv_cq, uint32_t send_wr, uint32_t recv_wr)
{
	struct rdma_cm_id *id = &cid->id;

	if (send_cq && !*send_cq) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			return -1;
		id->send_cq = ibv_create_cq(id->verbs, send_wr ? (int)send_wr : 1,
					    id, id->send_cq_channel, 0);
		if (!id->send_cq)
			return -1;
		cid->own_send_cq = true;
		*send_cq = id->send_cq;
	}
	if (recv_cq && !*recv_cq) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			return -1;
		id->recv_cq = ibv_create_cq(id->verbs, recv_wr ? (int)recv_wr : 1,
					    id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			return -1;
		cid->own_recv_cq = true;
		*recv_cq = id->recv_cq;
	}
	return 0;
}

/* One CQ (and its channel) the id made, if it did. */
static void free_cq(struct ibv_cq **cq, struct ibv_comp_channel **ch,
		    bool *own)
{
	if (!*own)
		return;
	if (*cq)
		ibv_destroy_cq(*cq);
	if (*ch)
		ibv_destroy_comp_channel(*ch);
	*cq = NULL;
	*ch = NULL;
	*own = false;
}

static void free_cqs(struct cm_id *cid)
{
	struct rdma_cm_id *id = &cid->id;

	free_cq(&id->send_cq, &id->send_cq_channel, &cid->own_send_cq);
	/* The XRC SRQ's CQ stays until rdma_destroy_srq(). */
	if (cid->srq_cq && id->srq)
		return;
	cid->srq_cq = false;
	free_cq(&id->recv_cq, &id->recv_cq_channel, &cid->own_recv_cq);
}

CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *cid;
	struct ibv_qp *qp;
	int e;

	if (!id || !attr)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (!id->verbs || (attr->pd && attr->pd->context != id->verbs))
		return cm_err(EINVAL);
	if (id->qp)
		return cm_err(EINVAL);
	if (!attr->pd || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	/* An XRC target needs a domain, no CQs: its receives go to SRQs. */
	if (attr->qp_type == IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		pthread_mutex_lock(&cm.lock);
		attr->xrcd = cid->dev ? cm_dev_xrcd(cid->dev) : NULL;
		pthread_mutex_unlock(&cm.lock);
		if (!attr->xrcd)
			return cm_err(errno ? errno : ENODEV);
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	if (attr->qp_type != IBV_QPT_XRC_RECV &&
	    make_cqs(cid, &attr->send_cq, &attr->recv_cq, attr->cap.max_send_wr,
		     attr->cap.max_recv_wr))
		goto err;
	if (!attr->srq && id->srq && attr->qp_type != IBV_QPT_XRC_RECV &&
	    attr->qp_type != IBV_QPT_XRC_SEND)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto err;
	id->qp = qp;
	id->qp_type = attr->qp_type;
	pthread_mutex_lock(&cm.lock);
	cid->qpn = qp->qp_num;
	if (qp_start(cid)) {
		e = errno;
		pthread_mutex_unlock(&cm.lock);
		ibv_destroy_qp(qp);
		id->qp = NULL;
		errno = e;
		goto err;
	}
	pthread_mutex_unlock(&cm.lock);
	return 0;
err:
	e = errno;
	free_cqs(cid);
	return cm_err(e ? e : ENOMEM);
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int rc;

	if (!id || !qp_init_attr)
		return cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	rc = rdma_create_qp_ex(id, &ex);
	if (rc)
		return rc;
	qp_init_attr->send_cq = ex.send_cq;
	qp_init_attr->recv_cq = ex.recv_cq;
	qp_init_attr->srq = ex.srq;
	qp_init_attr->cap = ex.cap;
	return 0;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cm_id *cid;

	if (!id)
		return;
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	cm_mc_qp_gone(cid);
	pthread_mutex_unlock(&cm.lock);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	free_cqs(cid);
}

CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct cm_id *cid;
	struct ibv_srq *srq;
	int e;

	if (!id || !attr || !id->verbs)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_XRC) {
		/* A domain and a CQ of the id's own where none is given. */
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
			pthread_mutex_lock(&cm.lock);
			attr->xrcd = cid->dev ? cm_dev_xrcd(cid->dev) : NULL;
			pthread_mutex_unlock(&cm.lock);
			if (!attr->xrcd)
				return cm_err(errno ? errno : ENODEV);
			attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
		}
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
			if (!id->recv_cq) {
				if (make_cqs(cid, NULL, &attr->cq, 0,
					     attr->attr.max_wr)) {
					e = errno;
					free_cqs(cid);
					return cm_err(e ? e : ENOMEM);
				}
				cid->srq_cq = true;
			}
			attr->cq = id->recv_cq;
			attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
		}
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq) {
		e = errno;
		if (cid->srq_cq) {
			cid->srq_cq = false;
			free_cqs(cid);
		}
		return cm_err(e ? e : ENOMEM);
	}
	id->srq = srq;
	return 0;
}

CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int rc;

	if (!id || !attr)
		return cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC :
						       IBV_SRQT_BASIC;
	ex.pd = pd ? pd : id->pd;
	rc = rdma_create_srq_ex(id, &ex);
	if (!rc)
		attr->attr = ex.attr;
	return rc;
}

CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	struct cm_id *cid;

	if (!id || !id->srq)
		return;
	cid = to_cid(id);
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	if (cid->srq_cq && !id->qp)
		free_cqs(cid);
}

/* ---- endpoints: synchronous ids with their QP ---- */

CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cmid;
	struct cm_id *cid;
	int rc;

	if (!id || !res)
		return cm_err(EINVAL);
	if (rdma_create_id(NULL, &cmid, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	cid = to_cid(cmid);
	cmid->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cmid, res->ai_src_addr))
			goto err;
		if (qp_init_attr) {
			cid->ep_attr = malloc(sizeof(*cid->ep_attr));
			if (!cid->ep_attr) {
				errno = ENOMEM;
				goto err;
			}
			*cid->ep_attr = *qp_init_attr;
			/* The QP type is the address's, as the man page says. */
			cid->ep_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
			cid->ep_pd = pd;
		}
		*id = cmid;
		return 0;
	}
	if (rdma_resolve_addr(cmid, res->ai_src_len ? res->ai_src_addr : NULL,
			      res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cmid, 2000))
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cmid, pd, qp_init_attr))
			goto err;
	}
	*id = cmid;
	return 0;
err:
	rc = errno;
	rdma_destroy_id(cmid);
	return cm_err(rc);
}

CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *lid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;
	int rc;

	if (!listen || !id)
		return cm_err(EINVAL);
	lid = to_cid(listen);
	if (!lid->sync)
		return cm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status) {
		rc = ev->status < 0 ? -ev->status : ev->status;
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rc = EINVAL;
		goto err;
	}
	if (lid->ep_attr) {
		attr = *lid->ep_attr;
		if (rdma_create_qp(ev->id, lid->ep_pd, &attr)) {
			rc = errno;
			rdma_reject(ev->id, NULL, 0);
			rdma_destroy_id(ev->id);
			goto err;
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
err:
	rdma_ack_cm_event(ev);
	return cm_err(rc);
}
