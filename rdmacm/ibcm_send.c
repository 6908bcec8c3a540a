// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB CM's messages this side starts (ibcm.c has the overview): each
 * REQ, REP, RTU, REJ, DREQ, DREP and SIDR_REQ/SIDR_REP built from its
 * id's connection and sent on QP1, the state it enters, the timer it
 * arms (a REQ, REP or DREQ is kept and resent until answered), and what
 * an id that goes asks of its peer.  Lock held throughout.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "ibcm_int.h"

/* A starting PSN: 24 bits of xorshift32, seeded from the random TID. */
uint32_t cm_psn(void)
{
	static uint32_t x;

	if (!x)
		x = cm.tid_hi ^ cm.next_local_id ? cm.tid_hi ^ cm.next_local_id : 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x & 0xffffff;
}

uint32_t cm_new_local_id(void)
{
	struct cm_id *c;
	uint32_t id;

again:
	id = cm.next_local_id++;
	if (!id)
		goto again;
	for (c = cm.ids; c; c = c->next)
		if (c->local_id == id)
			goto again;
	return id;
}

int cm_send_raw(struct cm_dev *d, uint8_t sgid_index,
		    const union ibv_gid *dgid, uint8_t tclass,
		    const uint8_t *mad)
{
	int rc;

	rc = cm_dev_gsi(d);
	if (rc)
		return rc;
	return cm.gsi->send(d->gsi, &d->gid[sgid_index], dgid, tclass, mad);
}

/* Encodes @m and sends it on @cid's path; @keep: kept for resending. */
int cm_send(struct cm_id *cid, const struct urxe_cm_msg *m, bool keep)
{
	uint8_t buf[URXE_MAD_LEN], *mad = keep ? cid->mad : buf;
	int rc;

	rc = urxe_cm_encode(m, mad);
	if (rc)
		return rc;
	urxe_dbg("RDMA CM: send %s local %#x remote %#x",
		 urxe_cm_attr_name(m->attr), m->local_id, m->remote_id);
	return cm_send_raw(cid->dev, cid->sgid_index,
			&cid->id.route.addr.addr.ibaddr.dgid, cid->tos, mad);
}

void cm_resend(struct cm_id *cid)
{
	if (cm_send_raw(cid->dev, cid->sgid_index,
		     &cid->id.route.addr.addr.ibaddr.dgid, cid->tos, cid->mad))
		urxe_dbg("RDMA CM: cm_resend failed");
}

static bool our_srq(struct cm_id *cid)
{
	return cid->id.srq || (cid->id.qp && cid->id.qp->srq);
}

static uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t plt)
{
	unsigned int t = plt + 1u;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= (unsigned int)ca_ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

static void set_priv(struct urxe_cm_msg *m, const void *p, size_t len,
		     size_t off)
{
	if (p && len)
		memcpy(m->priv + off, p, len);
	m->priv_len = (uint16_t)(off + len);
}

static uint64_t service_id(struct cm_id *cid)
{
	return (uint64_t)cid->id.ps << 16 |
	       cm_port_of(&cid->id.route.addr.dst_addr);
}

/* The service ID a SIDR_REP answers for: the listener's port. */
static uint64_t local_service_id(struct cm_id *cid)
{
	return (uint64_t)cid->id.ps << 16 |
	       cm_port_of(&cid->id.route.addr.src_addr);
}

/* A message of @attr for @cid's connection: its transaction and IDs. */
static void msg_init(struct urxe_cm_msg *m, const struct cm_id *cid,
		     uint16_t attr)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	m->tid = cid->tid;
	m->local_id = cid->local_id;
	m->remote_id = cid->remote_id;
}

static void path_to_msg(struct cm_id *cid, struct urxe_cm_msg *m)
{
	const struct ibv_sa_path_rec *p = &cid->path;

	m->local_lid = m->remote_lid = 0xffff;
	memcpy(m->local_gid, cid->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(m->remote_gid, cid->id.route.addr.addr.ibaddr.dgid.raw, 16);
	m->flow_label = ntohl(p->flow_label);
	m->packet_rate = p->rate;
	m->traffic_class = cid->tos;
	m->hop_limit = p->hop_limit;
	m->sl = p->sl;
	m->subnet_local = p->hop_limit <= 1;
	m->local_ack_timeout = cm_ack_timeout(cid->dev->attr.local_ca_ack_delay,
					      p->packet_life_time);
}

/*
 * Loopback, and nobody listened on the port when the address was
 * resolved: asked again, for up to CM_LISTEN_GRACE_MS (a REQ to a host
 * spends about that on the wire and in its CM, time in which a server
 * that was told "connect now" gets to rdma_listen(): perftest's -R and
 * others count on it, and their retry paths are broken).  Still nobody:
 * answered as a kernel host answers a REQ for a service nobody offers,
 * without a MAD: REJECTED with reason 8 (SIDR: UNREACHABLE, status 1).
 * Lock held; let go while waiting.
 */
static bool no_listener(struct cm_id *cid)
{
	static const uint8_t zero[URXE_CM_REJ_PRIV];
	int waited;

	if (!cm_needs_steer(cid) || cid->steered)
		return false;
	for (waited = 0;; waited += CM_LISTEN_POLL_MS) {
		if (!cm_steer(cid))
			return false;
		if (waited >= CM_LISTEN_GRACE_MS)
			break;
		pthread_mutex_unlock(&cm.lock);
		usleep(CM_LISTEN_POLL_MS * 1000);
		pthread_mutex_lock(&cm.lock);
	}
	urxe_dbg("RDMA CM: nobody listens on port %u: REJECTED (reason 8)",
		 cm_port_of(&cid->id.route.addr.dst_addr));
	cid->cm = CM_IDLE;
	if (cid->id.qp_type == IBV_QPT_UD) {
		cm_post(cid, RDMA_CM_EVENT_UNREACHABLE, CM_SIDR_UNSUPPORTED, NULL, 0);
	} else {
		cm_qp_to_err(cid);
		cm_post(cid, RDMA_CM_EVENT_REJECTED, CM_REJ_INVALID_SERVICE_ID,
		     zero, URXE_CM_REJ_PRIV);
	}
	return true;
}

/* A SIDR_REQ's fields (UD): the service and private data only. */
static void sidr_req_fill(struct cm_id *cid, const struct rdma_conn_param *p,
			  struct urxe_cm_msg *m)
{
	m->attr = URXE_CM_SIDR_REQ;
	m->pkey = 0xffff;
	set_priv(m, p ? p->private_data : NULL,
		 p ? p->private_data_len : 0, URXE_CMA_HDR_LEN);
	cid->cm = CM_SIDR_REQ_SENT;
}

/* A REQ's Transport Service Type: RC 0, UC 1, XRC 3 (extended). */
static void req_transport(enum ibv_qp_type qpt, struct urxe_cm_msg *m)
{
	switch (qpt) {
	case IBV_QPT_UC:
		m->transport = 1;
		break;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		m->transport = 3;
		m->ext_transport = 1;
		break;
	default:
		m->transport = 0;
	}
}

/* A REQ's fields: the QP, its limits, the path. */
static void req_fill(struct cm_id *cid, const struct rdma_conn_param *p,
		     struct urxe_cm_msg *m)
{
	m->attr = URXE_CM_REQ;
	m->local_ca_guid = be64toh(cid->dev->info.node_guid);
	m->local_qpn = cm_our_qpn(cid);
	m->resp_resources = cid->resp_res;
	m->init_depth = cid->init_depth;
	m->remote_cm_timeout = CM_RESPONSE_TIMEOUT;
	m->local_cm_timeout = CM_RESPONSE_TIMEOUT;
	req_transport(cid->id.qp_type, m);
	m->e2e_flow = p ? p->flow_control != 0 : true;
	/*
	 * As Linux: a REQ's Starting PSN is where the requester's
	 * receive queue starts (the passive side sends from it), a
	 * REP's where the passive side's does.  Measured against
	 * kernel rxe: its requester sends from the REP's PSN.
	 */
	cid->rq_psn = cm_psn();
	m->start_psn = cid->rq_psn;
	cid->retry_count = p ? (p->retry_count > 7 ? 7 : p->retry_count) : 7;
	cid->rnr_retry = p ? (p->rnr_retry_count > 7 ? 7 :
			      p->rnr_retry_count) : 7;
	m->retry_count = cid->retry_count;
	m->rnr_retry = cid->rnr_retry;
	m->pkey = 0xffff;
	m->path_mtu = cid->path_mtu;
	m->max_cm_retries = CM_MAX_RETRIES;
	m->srq = our_srq(cid);
	path_to_msg(cid, m);
	set_priv(m, p ? p->private_data : NULL,
		 p ? p->private_data_len : 0, URXE_CMA_HDR_LEN);
	cid->cm = CM_REQ_SENT;
}

int cm_send_req(struct cm_id *cid, const struct rdma_conn_param *p)
{
	struct urxe_cm_msg m;
	uint64_t period;
	int rc;

	memset(&m, 0, sizeof(m));
	rc = cm_dev_gsi(cid->dev);
	if (rc)
		return rc;
	if (no_listener(cid))
		return 0;
	rc = urxe_cma_hdr_put(m.priv, &cid->id.route.addr.src_addr,
			      &cid->id.route.addr.dst_addr);
	if (rc)
		return rc;
	cid->local_id = cm_new_local_id();
	cid->tid = (uint64_t)cm.tid_hi << 32 | cid->local_id;
	cid->remote_id = 0;
	m.tid = cid->tid;
	m.local_id = cid->local_id;
	m.service_id = service_id(cid);
	if (!cid->id.qp && p)
		cid->qpn = p->qp_num;
	period = 2 * cm_ms_ns(cid->path.packet_life_time) +
		 cm_ms_ns(CM_RESPONSE_TIMEOUT);
	if (cid->id.qp_type == IBV_QPT_UD)
		sidr_req_fill(cid, p, &m);
	else
		req_fill(cid, p, &m);
	rc = cm_send(cid, &m, true);
	if (rc) {
		cid->cm = CM_IDLE;
		return rc;
	}
	cm_timer_arm(cid, period, CM_MAX_RETRIES);
	return 0;
}

int cm_send_rep(struct cm_id *cid, const struct rdma_conn_param *p)
{
	struct urxe_cm_msg m;
	int rc;

	msg_init(&m, cid, URXE_CM_REP);
	if (!cid->id.qp && p)
		cid->qpn = p->qp_num;
	if (cid->id.qp_type == IBV_QPT_UD) {
		m.attr = URXE_CM_SIDR_REP;
		m.local_id = cid->remote_id;	/* the request ID */
		m.remote_id = 0;
		m.sidr_status = CM_SIDR_SUCCESS;
		m.local_qpn = cm_our_qpn(cid);
		m.local_qkey = CM_QKEY_UDP;
		m.service_id = local_service_id(cid);
		set_priv(&m, p ? p->private_data : NULL,
			 p ? p->private_data_len : 0, 0);
		rc = cm_send(cid, &m, false);
		if (!rc)
			cid->cm = CM_IDLE;
		return rc;
	}
	m.local_qpn = cm_our_qpn(cid);
	if (cid->id.qp_type == IBV_QPT_XRC_RECV && cid->id.srq)
		ibv_get_srq_num(cid->id.srq, &m.local_eecn);
	m.start_psn = cid->rq_psn;
	m.resp_resources = cid->resp_res;
	m.init_depth = cid->init_depth;
	m.target_ack_delay = cid->dev->attr.local_ca_ack_delay;
	m.e2e_flow = p ? p->flow_control != 0 : true;
	if (p)
		cid->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	m.rnr_retry = cid->rnr_retry;
	m.srq = our_srq(cid);
	m.local_ca_guid = be64toh(cid->dev->info.node_guid);
	set_priv(&m, p ? p->private_data : NULL, p ? p->private_data_len : 0,
		 0);
	rc = cm_send(cid, &m, true);
	if (rc)
		return rc;
	cid->cm = CM_REP_SENT;
	cm_timer_arm(cid, cm_ms_ns(cid->peer_cm_timeout), CM_MAX_RETRIES);
	return 0;
}

int cm_send_rtu(struct cm_id *cid)
{
	struct urxe_cm_msg m;
	int rc;

	msg_init(&m, cid, URXE_CM_RTU);
	rc = cm_send(cid, &m, false);
	cid->cm = CM_ESTABLISHED;
	cid->established = true;
	return rc;
}

int cm_send_rej(struct cm_id *cid, uint16_t reason, const void *priv,
		uint8_t len)
{
	struct urxe_cm_msg m;
	int rc;

	if (cid->cm == CM_SIDR_REQ_RCVD) {
		msg_init(&m, cid, URXE_CM_SIDR_REP);
		m.local_id = cid->remote_id;	/* the request ID */
		m.remote_id = 0;
		m.sidr_status = CM_SIDR_REJECT;
		m.service_id = local_service_id(cid);
		set_priv(&m, priv, len > URXE_CM_SIDR_REP_PRIV ?
				   URXE_CM_SIDR_REP_PRIV : len, 0);
		rc = cm_send(cid, &m, false);
		cid->cm = CM_IDLE;
		return rc;
	}
	msg_init(&m, cid, URXE_CM_REJ);
	switch (cid->cm) {
	case CM_REQ_RCVD:
		m.msg_rejected = 0;	/* the REQ */
		break;
	case CM_REP_RCVD:
		m.msg_rejected = 1;	/* the REP */
		break;
	default:
		m.msg_rejected = 2;
	}
	m.reason = reason;
	if (reason == CM_REJ_TIMEOUT) {
		/* The ARI: our CA GUID, as Linux sends it. */
		uint64_t g = cid->dev->info.node_guid;

		memcpy(m.ari, &g, sizeof(g));
		m.reject_info_len = sizeof(g);
	}
	set_priv(&m, priv, len, 0);
	rc = cm_send(cid, &m, false);
	cm_timer_stop(cid);
	cid->cm = CM_IDLE;
	return rc;
}

int cm_send_dreq(struct cm_id *cid)
{
	struct urxe_cm_msg m;
	int rc;

	cid->tid = (uint64_t)cm.tid_hi << 32 | cm_new_local_id();
	msg_init(&m, cid, URXE_CM_DREQ);
	m.local_qpn = cid->remote_qpn;
	rc = cm_send(cid, &m, true);
	if (rc)
		return rc;
	cid->cm = CM_DREQ_SENT;
	cm_timer_arm(cid, 2 * cm_ms_ns(cid->path.packet_life_time) +
			  cm_ms_ns(CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
	return 0;
}

void cm_enter_timewait(struct cm_id *cid)
{
	cid->cm = CM_TIMEWAIT;
	cm_timer_arm(cid, cm_ms_ns(cm_ack_timeout(cid->dev->attr.local_ca_ack_delay,
					       cid->path.packet_life_time)),
		     0);
}

int cm_send_drep(struct cm_id *cid)
{
	struct urxe_cm_msg m;
	int rc;

	msg_init(&m, cid, URXE_CM_DREP);
	rc = cm_send(cid, &m, false);
	cm_enter_timewait(cid);
	return rc;
}

/* @cid goes (lock held): what its connection's state asks of the peer. */
void cm_conn_drop(struct cm_id *cid)
{
	switch (cid->cm) {
	case CM_REQ_SENT:
		cm_send_rej(cid, CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CM_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REP_RCVD:
	case CM_SIDR_REQ_RCVD:
		cm_send_rej(cid, CM_REJ_CONSUMER, NULL, 0);
		break;
	case CM_ESTABLISHED:
		cm_send_dreq(cid);
		break;
	case CM_DREQ_RCVD:
		cm_send_drep(cid);
		break;
	default:
		break;
	}
	cid->cm = CM_IDLE;
	cm_timer_stop(cid);
}
