// SPDX-License-Identifier: BSD-2-Clause
/*
 * The passive side of the IB CM (ibcm.c has the overview): a REQ or
 * SIDR_REQ finds its listener by service ID and destination address and
 * becomes a new id (CONNECT_REQUEST on the listener's channel); one for
 * a port nobody listens on yet is parked for a while, then refused; a
 * duplicate REQ is answered with an MRA or the REP again.  Lock held.
 */
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "ibcm_int.h"

#define CM_MRA_SERVICE_TIMEOUT 24	/* what Linux's RDMA CM asks for */

static bool addr_match(const struct sockaddr *bound, const struct sockaddr *to,
		       int afonly)
{
	if (cm_addr_any(bound)) {
		if (bound->sa_family == to->sa_family)
			return true;
		return bound->sa_family == AF_INET6 && afonly != 1;
	}
	if (bound->sa_family != to->sa_family)
		return false;
	if (bound->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)bound)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)to)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)(const void *)bound)->sin6_addr,
		       &((const struct sockaddr_in6 *)(const void *)to)->sin6_addr, 16);
}

static struct cm_id *find_listener(struct cm_dev *d, uint64_t sid,
				   const struct sockaddr *to)
{
	struct cm_id *c;

	if (sid >> 32)
		return NULL;
	for (c = cm.ids; c; c = c->next) {
		if (c->state != ID_LISTEN || c->destroying ||
		    (uint32_t)c->id.ps != (uint32_t)(sid >> 16) ||
		    cm_port_of(&c->id.route.addr.src_addr) != (uint16_t)sid)
			continue;
		if (c->dev && c->dev != d)
			continue;
		/* On lo a client was steered here by the port alone. */
		if (d->info.loopback && cm_addr_loopback(to) &&
		    cm_addr_any(&c->id.route.addr.src_addr))
			return c;
		if (addr_match(&c->id.route.addr.src_addr, to, c->afonly))
			return c;
	}
	return NULL;
}

static enum ibv_qp_type req_qp_type(const struct urxe_cm_msg *m)
{
	switch (m->transport) {
	case 1:
		return IBV_QPT_UC;
	case 3:
		return IBV_QPT_XRC_RECV;
	default:
		return IBV_QPT_RC;
	}
}

/* A request's id, from its listener (lock held). */
static struct cm_id *child_new(struct cm_id *l, struct cm_dev *d,
			       const struct urxe_gsi_mad *g,
			       const struct urxe_cma_hdr *h,
			       enum ibv_qp_type qpt)
{
	struct rdma_addr *ra;
	struct sockaddr_storage ss;
	struct cm_id *c;
	int i;

	c = cm_id_new(l->sync ? NULL : l->chan, l->id.context, l->id.ps, qpt);
	if (!c)
		return NULL;
	c->listener = l;
	c->dev = d;
	c->id.verbs = d->ctx;
	c->id.pd = cm_dev_pd(d);
	c->id.port_num = 1;
	c->state = ID_CONNECT;
	c->afonly = l->afonly;
	for (i = 0; i < d->ngid; i++)
		if (!memcmp(d->gid[i].raw, g->dgid.raw, 16)) {
			c->sgid_index = (uint8_t)i;
			break;
		}
	ra = &c->id.route.addr;
	ss = h->dst;
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port =
			htons(cm_port_of(&l->id.route.addr.src_addr));
	else
		((struct sockaddr_in6 *)&ss)->sin6_port =
			htons(cm_port_of(&l->id.route.addr.src_addr));
	memcpy(&ra->src_storage, &ss, sizeof(ss));
	memcpy(&ra->dst_storage, &h->src, sizeof(h->src));
	ra->addr.ibaddr.sgid = g->dgid;
	ra->addr.ibaddr.dgid = g->sgid;
	ra->addr.ibaddr.pkey = 0xffff;
	c->tos = g->tos;
	c->path.sgid = g->dgid;
	c->path.dgid = g->sgid;
	c->path.dlid = c->path.slid = htons(0xffff);
	c->path.pkey = htons(0xffff);
	c->path.hop_limit = 64;
	c->path.traffic_class = g->tos;
	c->path.mtu_selector = 2;
	c->path.mtu = d->port.active_mtu ? d->port.active_mtu : IBV_MTU_1024;
	c->path.packet_life_time_selector = 2;
	c->path.packet_life_time = CM_PACKET_LIFETIME;
	c->path.reversible = htonl(1u << 31);
	c->path.numb_path = 1;
	c->id.route.path_rec = &c->path;
	c->id.route.num_paths = 1;
	return c;
}

/* A request for a service nobody offers: REJ reason 8, or SIDR_REP 1. */
static void refuse(struct cm_dev *d, const struct urxe_gsi_mad *g,
		   const struct urxe_cm_msg *m)
{
	struct urxe_cm_msg r;

	memset(&r, 0, sizeof(r));
	r.tid = m->tid;
	if (m->attr == URXE_CM_SIDR_REQ) {
		r.attr = URXE_CM_SIDR_REP;
		r.local_id = m->local_id;
		r.sidr_status = CM_SIDR_UNSUPPORTED;
		r.service_id = m->service_id;
	} else {
		r.attr = URXE_CM_REJ;
		r.remote_id = m->local_id;
		r.msg_rejected = 0;
		r.reason = CM_REJ_INVALID_SERVICE_ID;
	}
	cm_reply_raw(d, g, &r);
}

/*
 * Requests for a port nobody listens on yet wait CM_LISTEN_GRACE_MS for
 * this process to listen there before they are refused (the passive side
 * of the loopback grace, ibcm_send.c's no_listener()): a server told to
 * expect a connection may get to rdma_listen() after its client's REQ
 * arrived (perftest -R's server listens again right after the handshake
 * that starts its client).  Duplicates of a waiting request are dropped.
 */
struct parked_req {
	struct cm_dev *d;
	struct urxe_gsi_mad g;
	uint64_t until_ns;
	struct parked_req *next;
};

static struct parked_req *parked;
static unsigned int nparked;

static bool park(struct cm_dev *d, const struct urxe_gsi_mad *g)
{
	struct parked_req *p;

	for (p = parked; p; p = p->next)
		if (!memcmp(p->g.sgid.raw, g->sgid.raw, 16) &&
		    !memcmp(p->g.mad, g->mad, URXE_MAD_LEN))
			return true;
	if (nparked >= CM_PARKED_MAX)
		return false;
	p = malloc(sizeof(*p));
	if (!p)
		return false;
	p->d = d;
	p->g = *g;
	p->until_ns = cm_now_ns() + CM_LISTEN_GRACE_MS * 1000000ull;
	p->next = parked;
	parked = p;
	nparked++;
	cm_timer_kick();
	return true;
}

/*
 * Lock held.  @listening: someone just listened, the requests for its
 * port go on now; else those whose time is up are refused.
 */
void cm_parked_run(bool listening)
{
	struct parked_req **pp = &parked, *p;
	struct urxe_cma_hdr h;
	struct urxe_cm_msg m;
	uint64_t now = cm_now_ns();

	while ((p = *pp)) {
		bool go = false, drop = false;

		if (urxe_cm_decode(p->g.mad, sizeof(p->g.mad), &m) ||
		    urxe_cma_hdr_get(m.priv, &h))
			drop = true;
		else if (listening)
			go = find_listener(p->d, m.service_id,
					   (struct sockaddr *)&h.dst) != NULL;
		else
			drop = p->until_ns <= now;
		if (!go && !drop) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		nparked--;
		if (go)
			cm_handle_mad(p->d, &p->g);
		else if (!urxe_cm_decode(p->g.mad, sizeof(p->g.mad), &m))
			refuse(p->d, &p->g, &m);
		free(p);
	}
}

void cm_parked_retry(void)
{
	cm_parked_run(true);
}

void cm_parked_free(void)
{
	struct parked_req *p;

	while ((p = parked)) {
		parked = p->next;
		free(p);
	}
	nparked = 0;
}

/* The earliest parked deadline, or 0. */
uint64_t cm_parked_due(void)
{
	struct parked_req *p;
	uint64_t due = 0;

	for (p = parked; p; p = p->next)
		if (!due || p->until_ns < due)
			due = p->until_ns;
	return due;
}

/*
 * The listener a REQ or SIDR_REQ is for, its CMA header in @h; none: the
 * request is parked for one to come, or refused.
 */
static struct cm_id *request_listener(struct cm_dev *d,
				      const struct urxe_gsi_mad *g,
				      const struct urxe_cm_msg *m,
				      struct urxe_cma_hdr *h)
{
	struct cm_id *l;

	if (urxe_cma_hdr_get(m->priv, h)) {
		refuse(d, g, m);
		return NULL;
	}
	l = find_listener(d, m->service_id, (struct sockaddr *)&h->dst);
	if (!l && !park(d, g))
		refuse(d, g, m);
	return l;
}

/*
 * The CONNECT_REQUEST of @c, a request's new id, for its listener @l to
 * fetch and acknowledge: the request's @len bytes of private data (what
 * follows the CMA header) in it.
 */
static struct cm_event *request_event(struct cm_id *l, struct cm_id *c,
				      const struct urxe_cm_msg *m, size_t len)
{
	struct cm_event *e = cm_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);

	if (!e)
		return NULL;
	e->owner = l;
	e->ev.listen_id = &l->id;	/* UCX finds its listener there */
	memcpy(e->priv, m->priv + URXE_CMA_HDR_LEN, len);
	return e;
}

void cm_on_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
		   const struct urxe_cm_msg *m)
{
	struct urxe_cma_hdr h;
	struct urxe_cm_msg r;
	struct cm_id *l, *c;
	struct cm_event *e;

	c = cm_by_remote(m->local_id, &g->sgid);
	if (c) {
		/* A duplicate: the peer did not hear us yet. */
		if (c->cm == CM_REQ_RCVD) {
			memset(&r, 0, sizeof(r));
			r.attr = URXE_CM_MRA;
			r.tid = c->tid;
			r.local_id = c->local_id;
			r.remote_id = c->remote_id;
			r.msg_rejected = 0;
			r.service_timeout = CM_MRA_SERVICE_TIMEOUT;
			cm_send(c, &r, false);
		} else if (c->cm == CM_REP_SENT) {
			cm_resend(c);
		}
		return;
	}
	l = request_listener(d, g, m, &h);
	if (!l)
		return;
	if (l->pending >= l->backlog) {
		urxe_dbg("RDMA CM: listener's backlog (%d) full: REQ dropped",
			 l->backlog);
		return;		/* the peer sends it again */
	}
	c = child_new(l, d, g, &h, req_qp_type(m));
	if (!c)
		return;
	c->cm = CM_REQ_RCVD;
	c->local_id = cm_new_local_id();
	c->remote_id = m->local_id;
	c->tid = m->tid;
	c->remote_qpn = m->local_qpn;
	c->sq_psn = m->start_psn;	/* we send from the REQ's PSN */
	c->rq_psn = cm_psn();		/* the REP's: the peer sends from it */
	c->resp_res = m->init_depth;
	c->init_depth = m->resp_resources;
	c->retry_count = m->retry_count;
	c->rnr_retry = m->rnr_retry;
	c->peer_ack_timeout = m->local_ack_timeout;
	c->peer_cm_timeout = m->local_cm_timeout;
	c->path_mtu = m->path_mtu;
	c->srq = m->srq;
	c->path.flow_label = htonl(m->flow_label);
	c->path.mtu = m->path_mtu;
	e = request_event(l, c, m, URXE_CM_REQ_PRIV - URXE_CMA_HDR_LEN);
	if (!e) {
		cm_send_rej(c, CM_REJ_CONSUMER, NULL, 0);
		cm_id_free(c);
		return;
	}
	e->ev.param.conn.private_data = e->priv;
	e->ev.param.conn.private_data_len = URXE_CM_REQ_PRIV - URXE_CMA_HDR_LEN;
	e->ev.param.conn.responder_resources = m->init_depth;
	e->ev.param.conn.initiator_depth = m->resp_resources;
	e->ev.param.conn.flow_control = m->e2e_flow;
	e->ev.param.conn.retry_count = m->retry_count;
	e->ev.param.conn.rnr_retry_count = m->rnr_retry;
	e->ev.param.conn.srq = m->srq;
	e->ev.param.conn.qp_num = m->local_qpn;
	l->pending++;
	cm_event_post(l, e);
}

void cm_on_sidr_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
			const struct urxe_cm_msg *m)
{
	struct urxe_cma_hdr h;
	struct cm_id *l, *c;
	struct cm_event *e;

	c = cm_by_remote(m->local_id, &g->sgid);
	if (c)
		return;		/* still waiting for the user */
	l = request_listener(d, g, m, &h);
	if (!l)
		return;
	if (l->pending >= l->backlog)
		return;
	c = child_new(l, d, g, &h, IBV_QPT_UD);
	if (!c)
		return;
	c->cm = CM_SIDR_REQ_RCVD;
	c->remote_id = m->local_id;	/* the request ID */
	c->tid = m->tid;
	e = request_event(l, c, m, URXE_CM_SIDR_REQ_PRIV - URXE_CMA_HDR_LEN);
	if (!e) {
		cm_id_free(c);
		return;
	}
	e->ev.param.ud.private_data = e->priv;
	e->ev.param.ud.private_data_len =
		URXE_CM_SIDR_REQ_PRIV - URXE_CMA_HDR_LEN;
	/*
	 * The way back to the requester (its QPN comes with data: qperf's
	 * UD tests make their AH from this before any arrives).
	 */
	cm_ah_attr(c, &e->ev.param.ud.ah_attr);
	l->pending++;
	cm_event_post(l, e);
}
