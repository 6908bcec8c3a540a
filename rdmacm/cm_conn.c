// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe's librdmacm: the calls that drive a connection (rdma_connect(3),
 * rdma_accept(3), rdma_reject(3), rdma_disconnect(3), ...): each checks
 * its id's state and arguments, then has the IB CM (ibcm_send.c) send
 * the message; a synchronous id waits there for the call's event.
 */
#include <errno.h>
#include <string.h>

#include "cm_int.h"


/* Checks and defaults a connection's responder resources / depth. */
static int conn_limits(struct cm_id *cid, const struct rdma_conn_param *p,
		       bool accept)
{
	const struct ibv_device_attr *a = &cid->dev->attr;
	uint8_t rr = p ? p->responder_resources : RDMA_MAX_RESP_RES;
	uint8_t id = p ? p->initiator_depth : RDMA_MAX_INIT_DEPTH;

	if (rr == RDMA_MAX_RESP_RES)
		rr = (uint8_t)a->max_qp_rd_atom;
	else if (rr > a->max_qp_rd_atom)
		return EINVAL;
	if (id == RDMA_MAX_INIT_DEPTH)
		id = (uint8_t)a->max_qp_init_rd_atom;
	else if (id > a->max_qp_init_rd_atom)
		return EINVAL;
	if (accept) {
		/* No more than the peer asked for. */
		if (rr > cid->resp_res)
			rr = cid->resp_res;
		if (id > cid->init_depth)
			id = cid->init_depth;
	}
	cid->resp_res = rr;
	cid->init_depth = id;
	return 0;
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *conn_param)
{
	struct cm_id *cid;
	size_t max;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	max = id->qp_type == IBV_QPT_UD ? URXE_CM_SIDR_REQ_PRIV : URXE_CM_REQ_PRIV;
	max -= URXE_CMA_HDR_LEN;
	if (conn_param && conn_param->private_data_len > max) {
		urxe_dbg("rdma_connect: %u bytes of private data, at most %zu",
			 conn_param->private_data_len, max);
		return cm_err(EINVAL);
	}
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&cm.lock);
		urxe_dbg("rdma_connect: the id's route is not resolved (state %d)",
			 cid->state);
		return cm_err(EINVAL);
	}
	if (id->qp_type != IBV_QPT_UD) {
		rc = conn_limits(cid, conn_param, false);
		if (rc) {
			pthread_mutex_unlock(&cm.lock);
			urxe_dbg("rdma_connect: responder resources %u or initiator depth %u above the device's %d, %d",
				 conn_param->responder_resources,
				 conn_param->initiator_depth,
				 cid->dev->attr.max_qp_rd_atom,
				 cid->dev->attr.max_qp_init_rd_atom);
			return cm_err(rc);
		}
	}
	rc = cm_send_req(cid, conn_param);
	if (!rc)
		cid->state = ID_CONNECT;
	pthread_mutex_unlock(&cm.lock);
	if (rc) {
		urxe_dbg("rdma_connect: cannot send the request: %s (source family %d, destination %d)",
			 strerror(-rc), id->route.addr.src_addr.sa_family,
			 id->route.addr.dst_addr.sa_family);
		return cm_err(-rc);
	}
	return cm_wait(cid);
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id,
			  struct rdma_conn_param *conn_param)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (conn_param && conn_param->private_data_len >
			  (id->qp_type == IBV_QPT_UD ? URXE_CM_SIDR_REP_PRIV :
						       URXE_CM_REP_PRIV))
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_CONNECT ||
	    (cid->cm != CM_REQ_RCVD && cid->cm != CM_SIDR_REQ_RCVD)) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EINVAL);
	}
	if (id->qp_type != IBV_QPT_UD) {
		rc = conn_limits(cid, conn_param, true);
		if (rc) {
			pthread_mutex_unlock(&cm.lock);
			return cm_err(rc);
		}
		if (id->qp && (cm_qp_to_rtr(cid) || cm_qp_to_rts(cid))) {
			rc = errno;
			cm_send_rej(cid, CM_REJ_CONSUMER, NULL, 0);
			pthread_mutex_unlock(&cm.lock);
			return cm_err(rc);
		}
	}
	rc = cm_send_rep(cid, conn_param);
	pthread_mutex_unlock(&cm.lock);
	if (rc)
		return cm_err(-rc);
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	return cm_wait(cid);
}

CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (id->qp)
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	rc = cid->cm == CM_REP_RCVD ? cm_send_rtu(cid) : -EINVAL;
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}

/* A request refused with @reason; SIDR ones only where @sidr. */
static int reject(struct rdma_cm_id *id, const void *private_data,
		  uint8_t private_data_len, uint16_t reason, bool sidr)
{
	struct cm_id *cid;
	int rc;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (private_data_len > URXE_CM_REJ_PRIV)
		return cm_err(EINVAL);
	pthread_mutex_lock(&cm.lock);
	if (cid->cm != CM_REQ_RCVD && !(sidr && cid->cm == CM_SIDR_REQ_RCVD))
		rc = -EINVAL;
	else
		rc = cm_send_rej(cid, reason, private_data, private_data_len);
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, CM_REJ_CONSUMER,
		      true);
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len,
		      CM_REJ_VENDOR_OPTION, false);
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *cid;
	struct cm_event *e;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	pthread_mutex_lock(&cm.lock);
	/* Data came before the RTU: the connection is up. */
	if (cid->cm == CM_REP_SENT) {
		cid->cm = CM_ESTABLISHED;
		cid->due_ns = 0;
		cid->established = true;
		e = cm_event_new(cid, RDMA_CM_EVENT_ESTABLISHED, 0);
		cm_event_post(cid, e);
	}
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *cid;
	int rc = 0;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if (id->qp)
		cm_qp_to_err(cid);
	switch (cid->cm) {
	case CM_ESTABLISHED:
	case CM_REP_RCVD:
		rc = cm_send_dreq(cid);
		break;
	case CM_DREQ_RCVD:
		rc = cm_send_drep(cid);
		break;
	case CM_REP_SENT:
		rc = cm_send_dreq(cid);
		break;
	default:
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc)
		return cm_err(-rc);
	return cm_wait(cid);
}

/* ---- ECE: none on a software device ---- */

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return cm_err(EINVAL);
	return 0;
}

CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return cm_err(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}
