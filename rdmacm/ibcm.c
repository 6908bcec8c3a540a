// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB Communication Manager of urxe's librdmacm: CM MADs on QP1, the
 * connection state machines of IBA 12.9 as Linux runs them, their
 * retransmission timers and timewait, and the thread that drives them.
 *
 * One thread per process (started by the first listen or connect) waits
 * in epoll on each open QP1's eventfd, the loopback listeners' sockets,
 * a timerfd and a wake eventfd; it takes cm.lock for each MAD and each
 * expired timer.  An id's connection is its cm_id fields: the comm IDs,
 * the last MAD sent (resent on its timer), the state.  Ids are found by
 * our comm ID (the remote ID of what the peer sends), a REQ by its
 * sender's comm ID and GID (a duplicate), or by the listener its
 * service ID and destination address name.
 *
 * Timers, as Linux's ib_cm: a REQ waits 2 * ms(packet lifetime) +
 * ms(remote CM response timeout) = 4.6 s and is sent 1 + 15 times, then
 * UNREACHABLE (-ETIMEDOUT); a REP waits ms(the REQ's local CM response
 * timeout) as often; a DREQ as a REQ, then DISCONNECTED (-ETIMEDOUT);
 * timewait lasts ms(local ACK timeout), then TIMEWAIT_EXIT.  ms(t) is
 * 2^(t-8) ms, the kernel's approximation of 4.096 us * 2^t.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "cm_int.h"

#define CM_MRA_SERVICE_TIMEOUT 24	/* what Linux's RDMA CM asks for */
#define SIDR_SUCCESS 0
#define SIDR_UNSUPPORTED 1
#define SIDR_REJECT 2

static bool cm_stop;

static uint64_t ms_ns(unsigned int t)
{
	return (1ull << (t > 8 ? t - 8 : 0)) * 1000000ull;
}

/* ---- the thread ---- */

static bool is_dev(void *p)
{
	return p >= (void *)&cm.dev[0] && p < (void *)&cm.dev[CM_MAX_DEVS];
}

static bool id_alive(struct cm_id *cid)
{
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c == cid)
			return true;
	return false;
}

static void drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

static void handle_mad(struct cm_dev *d, const struct urxe_gsi_mad *g);
static void timers_run(void);
static uint64_t parked_due(void);
static void parked_free(void);
static void post(struct cm_id *cid, enum rdma_cm_event_type type, int status,
		 const uint8_t *priv, uint8_t len);

static void dev_input(struct cm_dev *d)
{
	struct urxe_gsi_mad g;

	drain(d->gsi_fd);
	while (d->gsi && cm.gsi->recv(d->gsi, &g) > 0)
		handle_mad(d, &g);
}

static void *cm_thread(void *arg)
{
	struct epoll_event ev[16];
	int n, i;

	(void)arg;
	for (;;) {
		n = epoll_wait(cm.epfd, ev, 16, -1);
		if (n < 0 && errno != EINTR) {
			urxe_err("RDMA CM thread: epoll_wait: %s", strerror(errno));
			break;
		}
		pthread_mutex_lock(&cm.lock);
		if (cm_stop) {
			pthread_mutex_unlock(&cm.lock);
			break;
		}
		for (i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &cm.wake_fd)
				drain(cm.wake_fd);
			else if (p == &cm.timer_fd)
				drain(cm.timer_fd);
			else if (is_dev(p))
				dev_input(p);
			else if (id_alive(p) &&
				 ((struct cm_id *)p)->listen_fd >= 0)
				cm_listen_accept(p);
		}
		timers_run();
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

static int ep_add(int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(cm.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Starts the CM thread once (lock held). */
int cm_thread_start(void)
{
	sigset_t all, old;
	int rc;

	if (cm.thread_on)
		return 0;
	cm.epfd = epoll_create1(EPOLL_CLOEXEC);
	cm.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cm.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (cm.epfd < 0 || cm.wake_fd < 0 || cm.timer_fd < 0) {
		rc = -errno;
		goto err;
	}
	rc = ep_add(cm.wake_fd, &cm.wake_fd);
	if (!rc)
		rc = ep_add(cm.timer_fd, &cm.timer_fd);
	if (rc)
		goto err;
	/* The application's signals are its own threads'. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&cm.thread, NULL, cm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto err;
	cm.thread_on = true;
	return 0;
err:
	urxe_err("RDMA CM: cannot start its thread: %s", strerror(-rc));
	if (cm.epfd >= 0)
		close(cm.epfd);
	if (cm.wake_fd >= 0)
		close(cm.wake_fd);
	if (cm.timer_fd >= 0)
		close(cm.timer_fd);
	cm.epfd = cm.wake_fd = cm.timer_fd = -1;
	return rc;
}

/* The library goes (dlclose, exit): its thread first. */
__attribute__((destructor)) static void cm_thread_stop(void)
{
	const uint64_t one = 1;
	struct cm_id *c;
	int i;

	pthread_mutex_lock(&cm.lock);
	cm_channels_release();
	if (!cm.thread_on) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	/*
	 * As the kernel when a process's ids go with it: connections still
	 * up are closed on the wire (DREQ, DREP, REJ), or their peers wait
	 * out every retry of theirs (qperf's server leaves its id: its
	 * client's DREQ got no DREP).
	 */
	for (c = cm.ids; c; c = c->next)
		cm_conn_drop(c);
	parked_free();
	cm_stop = true;
	if (write(cm.wake_fd, &one, sizeof(one)) != sizeof(one))
		urxe_dbg("RDMA CM: wake: %s", strerror(errno));
	pthread_mutex_unlock(&cm.lock);
	pthread_join(cm.thread, NULL);
	cm.thread_on = false;
	for (i = 0; i < cm.ndev; i++)
		if (cm.dev[i].gsi) {
			cm.gsi->close(cm.dev[i].gsi);
			cm.dev[i].gsi = NULL;
		}
	close(cm.epfd);
	close(cm.wake_fd);
	close(cm.timer_fd);
	cm.epfd = cm.wake_fd = cm.timer_fd = -1;
}

/* Opens @d's QP1 for this process once (lock held). */
int cm_dev_gsi(struct cm_dev *d)
{
	int rc = cm_thread_start();

	if (rc)
		return rc;
	if (d->gsi)
		return 0;
	d->gsi = cm.gsi->open(d->ctx, &d->gsi_fd);
	if (!d->gsi) {
		rc = -errno;
		urxe_err("RDMA CM: %s: cannot open QP1: %s",
			 ibv_get_device_name(d->ctx->device), strerror(-rc));
		return rc;
	}
	rc = ep_add(d->gsi_fd, d);
	if (rc) {
		cm.gsi->close(d->gsi);
		d->gsi = NULL;
	}
	return rc;
}

/* ---- timers ---- */

/* Arms the timerfd for the earliest due id (lock held). */
void cm_timer_kick(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t due = 0;
	struct cm_id *c;

	if (cm.timer_fd < 0)
		return;
	for (c = cm.ids; c; c = c->next)
		if (c->due_ns && (!due || c->due_ns < due))
			due = c->due_ns;
	if (parked_due() && (!due || parked_due() < due))
		due = parked_due();
	if (due == cm.timer_due)
		return;
	cm.timer_due = due;
	if (due) {
		its.it_value.tv_sec = (time_t)(due / 1000000000ull);
		its.it_value.tv_nsec = (long)(due % 1000000000ull);
	}
	timerfd_settime(cm.timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* @cid's last MAD is resent every @period_ns, @tries times (0: a single
 * deadline, as timewait). */
void cm_timer_arm(struct cm_id *cid, uint64_t period_ns, unsigned int tries)
{
	cid->period_ns = period_ns;
	cid->tries = 0;
	cid->max_tries = tries;
	cid->due_ns = cm_now_ns() + period_ns;
	cm_timer_kick();
}

static void timer_stop(struct cm_id *cid)
{
	cid->due_ns = 0;
}

/* ---- sending ---- */

/* A starting PSN: 24 bits of xorshift32, seeded from the random TID. */
static uint32_t cm_psn(void)
{
	static uint32_t x;

	if (!x)
		x = cm.tid_hi ^ cm.next_local_id ? cm.tid_hi ^ cm.next_local_id : 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x & 0xffffff;
}

static uint32_t new_local_id(void)
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

static int send_raw(struct cm_dev *d, uint8_t sgid_index,
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
	return send_raw(cid->dev, cid->sgid_index,
			&cid->id.route.addr.addr.ibaddr.dgid, cid->tos, mad);
}

static void resend(struct cm_id *cid)
{
	if (send_raw(cid->dev, cid->sgid_index,
		     &cid->id.route.addr.addr.ibaddr.dgid, cid->tos, cid->mad))
		urxe_dbg("RDMA CM: resend failed");
}

static uint32_t our_qpn(struct cm_id *cid)
{
	/*
	 * Recorded when the QP was made, never read through id->qp here: a
	 * program may destroy the QP with ibv_destroy_qp() before the id
	 * (perftest does), and a DREQ or REJ still has to name it.
	 */
	return cid->qpn;
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
		post(cid, RDMA_CM_EVENT_UNREACHABLE, SIDR_UNSUPPORTED, NULL, 0);
	} else {
		cm_qp_to_err(cid);
		post(cid, RDMA_CM_EVENT_REJECTED, CM_REJ_INVALID_SERVICE_ID,
		     zero, URXE_CM_REJ_PRIV);
	}
	return true;
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
	cid->local_id = new_local_id();
	cid->tid = (uint64_t)cm.tid_hi << 32 | cid->local_id;
	cid->remote_id = 0;
	m.tid = cid->tid;
	m.local_id = cid->local_id;
	m.service_id = service_id(cid);
	if (!cid->id.qp && p)
		cid->qpn = p->qp_num;
	period = 2 * ms_ns(cid->path.packet_life_time) +
		 ms_ns(CM_RESPONSE_TIMEOUT);
	if (cid->id.qp_type == IBV_QPT_UD) {
		m.attr = URXE_CM_SIDR_REQ;
		m.pkey = 0xffff;
		set_priv(&m, p ? p->private_data : NULL,
			 p ? p->private_data_len : 0, URXE_CMA_HDR_LEN);
		cid->cm = CM_SIDR_REQ_SENT;
	} else {
		m.attr = URXE_CM_REQ;
		m.local_ca_guid = be64toh(cid->dev->info.node_guid);
		m.local_qpn = our_qpn(cid);
		m.resp_resources = cid->resp_res;
		m.init_depth = cid->init_depth;
		m.remote_cm_timeout = CM_RESPONSE_TIMEOUT;
		m.local_cm_timeout = CM_RESPONSE_TIMEOUT;
		switch (cid->id.qp_type) {
		case IBV_QPT_UC:
			m.transport = 1;
			break;
		case IBV_QPT_XRC_SEND:
		case IBV_QPT_XRC_RECV:
			m.transport = 3;
			m.ext_transport = 1;
			break;
		default:
			m.transport = 0;
		}
		m.e2e_flow = p ? p->flow_control != 0 : true;
		/*
		 * As Linux: a REQ's Starting PSN is where the requester's
		 * receive queue starts (the passive side sends from it), a
		 * REP's where the passive side's does.  Measured against
		 * kernel rxe: its requester sends from the REP's PSN.
		 */
		cid->rq_psn = cm_psn();
		m.start_psn = cid->rq_psn;
		cid->retry_count = p ? (p->retry_count > 7 ? 7 : p->retry_count) : 7;
		cid->rnr_retry = p ? (p->rnr_retry_count > 7 ? 7 :
				      p->rnr_retry_count) : 7;
		m.retry_count = cid->retry_count;
		m.rnr_retry = cid->rnr_retry;
		m.pkey = 0xffff;
		m.path_mtu = cid->path_mtu;
		m.max_cm_retries = CM_MAX_RETRIES;
		m.srq = our_srq(cid);
		path_to_msg(cid, &m);
		set_priv(&m, p ? p->private_data : NULL,
			 p ? p->private_data_len : 0, URXE_CMA_HDR_LEN);
		cid->cm = CM_REQ_SENT;
	}
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
		m.sidr_status = SIDR_SUCCESS;
		m.local_qpn = our_qpn(cid);
		m.local_qkey = CM_QKEY_UDP;
		m.service_id = local_service_id(cid);
		set_priv(&m, p ? p->private_data : NULL,
			 p ? p->private_data_len : 0, 0);
		rc = cm_send(cid, &m, false);
		if (!rc)
			cid->cm = CM_IDLE;
		return rc;
	}
	m.local_qpn = our_qpn(cid);
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
	cm_timer_arm(cid, ms_ns(cid->peer_cm_timeout), CM_MAX_RETRIES);
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
		m.sidr_status = SIDR_REJECT;
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
	timer_stop(cid);
	cid->cm = CM_IDLE;
	return rc;
}

int cm_send_dreq(struct cm_id *cid)
{
	struct urxe_cm_msg m;
	int rc;

	cid->tid = (uint64_t)cm.tid_hi << 32 | new_local_id();
	msg_init(&m, cid, URXE_CM_DREQ);
	m.local_qpn = cid->remote_qpn;
	rc = cm_send(cid, &m, true);
	if (rc)
		return rc;
	cid->cm = CM_DREQ_SENT;
	cm_timer_arm(cid, 2 * ms_ns(cid->path.packet_life_time) +
			  ms_ns(CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
	return 0;
}

static void enter_timewait(struct cm_id *cid)
{
	cid->cm = CM_TIMEWAIT;
	cm_timer_arm(cid, ms_ns(cm_ack_timeout(cid->dev->attr.local_ca_ack_delay,
					       cid->path.packet_life_time)),
		     0);
}

int cm_send_drep(struct cm_id *cid)
{
	struct urxe_cm_msg m;
	int rc;

	msg_init(&m, cid, URXE_CM_DREP);
	rc = cm_send(cid, &m, false);
	enter_timewait(cid);
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
	timer_stop(cid);
}

/* ---- receiving ---- */

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

static void post(struct cm_id *cid, enum rdma_cm_event_type type, int status,
		 const uint8_t *priv, uint8_t len)
{
	post_ev(cid, type, status, priv, len, false);
}

static void post_qp_err(struct cm_id *cid, enum rdma_cm_event_type type,
			int status, const uint8_t *priv, uint8_t len)
{
	post_ev(cid, type, status, priv, len, true);
}

static struct cm_id *by_local_id(uint32_t id)
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
static struct cm_id *by_remote(uint32_t remote_id, const union ibv_gid *gid)
{
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c->remote_id == remote_id && c->cm != CM_IDLE &&
		    !memcmp(c->id.route.addr.addr.ibaddr.dgid.raw, gid->raw, 16))
			return c;
	return NULL;
}

/* Replies to a MAD nobody here owns (REJ, DREP, SIDR_REP). */
static void reply_raw(struct cm_dev *d, const struct urxe_gsi_mad *g,
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
	send_raw(d, index, &g->sgid, g->tos, mad);
}

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
		r.sidr_status = SIDR_UNSUPPORTED;
		r.service_id = m->service_id;
	} else {
		r.attr = URXE_CM_REJ;
		r.remote_id = m->local_id;
		r.msg_rejected = 0;
		r.reason = CM_REJ_INVALID_SERVICE_ID;
	}
	reply_raw(d, g, &r);
}

/*
 * Requests for a port nobody listens on yet wait CM_LISTEN_GRACE_MS for
 * this process to listen there before they are refused (the passive side
 * of the loopback grace, no_listener()): a server told to expect a
 * connection may get to rdma_listen() after its client's REQ arrived
 * (perftest -R's server listens again right after the handshake that
 * starts its client).  Duplicates of a waiting request are dropped.
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
static void parked_run(bool listening)
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
			handle_mad(p->d, &p->g);
		else if (!urxe_cm_decode(p->g.mad, sizeof(p->g.mad), &m))
			refuse(p->d, &p->g, &m);
		free(p);
	}
}

void cm_parked_retry(void)
{
	parked_run(true);
}

static void parked_free(void)
{
	struct parked_req *p;

	while ((p = parked)) {
		parked = p->next;
		free(p);
	}
	nparked = 0;
}

/* The earliest parked deadline, or 0. */
static uint64_t parked_due(void)
{
	struct parked_req *p;
	uint64_t due = 0;

	for (p = parked; p; p = p->next)
		if (!due || p->until_ns < due)
			due = p->until_ns;
	return due;
}

static void on_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
		   const struct urxe_cm_msg *m)
{
	struct urxe_cma_hdr h;
	struct urxe_cm_msg r;
	struct cm_id *l, *c;
	struct cm_event *e;

	c = by_remote(m->local_id, &g->sgid);
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
			resend(c);
		}
		return;
	}
	if (urxe_cma_hdr_get(m->priv, &h)) {
		refuse(d, g, m);
		return;
	}
	l = find_listener(d, m->service_id, (struct sockaddr *)&h.dst);
	if (!l) {
		if (!park(d, g))
			refuse(d, g, m);
		return;
	}
	if (l->pending >= l->backlog) {
		urxe_dbg("RDMA CM: listener's backlog (%d) full: REQ dropped",
			 l->backlog);
		return;		/* the peer sends it again */
	}
	c = child_new(l, d, g, &h, req_qp_type(m));
	if (!c)
		return;
	c->cm = CM_REQ_RCVD;
	c->local_id = new_local_id();
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
	e = cm_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		cm_send_rej(c, CM_REJ_CONSUMER, NULL, 0);
		cm_id_free(c);
		return;
	}
	e->owner = l;
	e->ev.listen_id = &l->id;	/* UCX finds its listener there */
	memcpy(e->priv, m->priv + URXE_CMA_HDR_LEN,
	       URXE_CM_REQ_PRIV - URXE_CMA_HDR_LEN);
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

/* An address handle's attributes for @c's peer. */
static void ud_ah(const struct cm_id *c, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = c->id.route.addr.addr.ibaddr.dgid;
	ah->grh.sgid_index = c->sgid_index;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = c->tos;
	ah->grh.flow_label = ntohl(c->path.flow_label);
}

static void on_sidr_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
			const struct urxe_cm_msg *m)
{
	struct urxe_cma_hdr h;
	struct cm_id *l, *c;
	struct cm_event *e;

	c = by_remote(m->local_id, &g->sgid);
	if (c)
		return;		/* still waiting for the user */
	if (urxe_cma_hdr_get(m->priv, &h)) {
		refuse(d, g, m);
		return;
	}
	l = find_listener(d, m->service_id, (struct sockaddr *)&h.dst);
	if (!l) {
		if (!park(d, g))
			refuse(d, g, m);
		return;
	}
	if (l->pending >= l->backlog)
		return;
	c = child_new(l, d, g, &h, IBV_QPT_UD);
	if (!c)
		return;
	c->cm = CM_SIDR_REQ_RCVD;
	c->remote_id = m->local_id;	/* the request ID */
	c->tid = m->tid;
	e = cm_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e) {
		cm_id_free(c);
		return;
	}
	e->owner = l;
	e->ev.listen_id = &l->id;	/* UCX finds its listener there */
	memcpy(e->priv, m->priv + URXE_CMA_HDR_LEN,
	       URXE_CM_SIDR_REQ_PRIV - URXE_CMA_HDR_LEN);
	e->ev.param.ud.private_data = e->priv;
	e->ev.param.ud.private_data_len =
		URXE_CM_SIDR_REQ_PRIV - URXE_CMA_HDR_LEN;
	/*
	 * The way back to the requester (its QPN comes with data: qperf's
	 * UD tests make their AH from this before any arrives).
	 */
	ud_ah(c, &e->ev.param.ud.ah_attr);
	l->pending++;
	cm_event_post(l, e);
}

static void on_sidr_rep(const struct urxe_gsi_mad *g,
			const struct urxe_cm_msg *m)
{
	struct cm_id *c = by_local_id(m->local_id);
	struct cm_event *e;

	(void)g;
	if (!c || c->cm != CM_SIDR_REQ_SENT)
		return;
	timer_stop(c);
	c->cm = CM_IDLE;
	if (m->sidr_status != SIDR_SUCCESS) {
		e = cm_event_new(c, RDMA_CM_EVENT_UNREACHABLE, m->sidr_status);
		if (!e)
			return;
	} else {
		e = cm_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return;
		e->ev.param.ud.qp_num = m->local_qpn;
		e->ev.param.ud.qkey = m->local_qkey;
		ud_ah(c, &e->ev.param.ud.ah_attr);
	}
	memcpy(e->priv, m->priv, URXE_CM_SIDR_REP_PRIV);
	e->ev.param.ud.private_data = e->priv;
	e->ev.param.ud.private_data_len = URXE_CM_SIDR_REP_PRIV;
	cm_event_post(c, e);
}

static void on_rep(const struct urxe_cm_msg *m)
{
	struct cm_id *c = by_local_id(m->remote_id);
	struct cm_event *e;

	if (!c)
		return;
	if (c->cm == CM_ESTABLISHED && c->remote_id == m->local_id) {
		cm_send_rtu(c);		/* our RTU was lost */
		return;
	}
	if (c->cm != CM_REQ_SENT)
		return;
	timer_stop(c);
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
	struct cm_id *c = by_local_id(m->remote_id);

	if (!c || c->cm != CM_REP_SENT || c->remote_id != m->local_id)
		return;
	timer_stop(c);
	c->cm = CM_ESTABLISHED;
	if (!c->established) {
		c->established = true;
		post(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
}

static void on_rej(const struct urxe_cm_msg *m)
{
	struct cm_id *c = by_local_id(m->remote_id);

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
	timer_stop(c);
	c->cm = CM_IDLE;
	post_qp_err(c, RDMA_CM_EVENT_REJECTED, m->reason, m->priv,
		    URXE_CM_REJ_PRIV);
}

static void on_mra(const struct urxe_cm_msg *m)
{
	struct cm_id *c = by_local_id(m->remote_id);

	if (!c)
		return;
	if ((c->cm == CM_REQ_SENT && m->msg_rejected == 0) ||
	    (c->cm == CM_REP_SENT && m->msg_rejected == 1)) {
		/* The peer is slow, not gone: wait as long as it says. */
		c->due_ns = cm_now_ns() + ms_ns(m->service_timeout) +
			    c->period_ns;
		cm_timer_kick();
	}
}

static void disconnected(struct cm_id *c, int status)
{
	if (c->disc_reported)
		return;
	c->disc_reported = true;
	post(c, RDMA_CM_EVENT_DISCONNECTED, status, NULL, 0);
}

static void on_dreq(struct cm_dev *d, const struct urxe_gsi_mad *g,
		    const struct urxe_cm_msg *m)
{
	struct cm_id *c = by_local_id(m->remote_id);
	struct urxe_cm_msg r;

	if (!c || c->remote_id != m->local_id || m->local_qpn != our_qpn(c)) {
		/* Not (or no longer) ours: the peer may finish. */
		memset(&r, 0, sizeof(r));
		r.attr = URXE_CM_DREP;
		r.tid = m->tid;
		r.local_id = m->remote_id;
		r.remote_id = m->local_id;
		reply_raw(d, g, &r);
		return;
	}
	switch (c->cm) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		timer_stop(c);
		c->cm = CM_DREQ_RCVD;
		c->tid = m->tid;
		c->established = true;
		disconnected(c, 0);
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
	struct cm_id *c = by_local_id(m->remote_id);

	if (!c || c->cm != CM_DREQ_SENT)
		return;
	enter_timewait(c);
	disconnected(c, 0);
}

static void handle_mad(struct cm_dev *d, const struct urxe_gsi_mad *g)
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
		on_req(d, g, &m);
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
		on_sidr_req(d, g, &m);
		break;
	case URXE_CM_SIDR_REP:
		on_sidr_rep(g, &m);
		break;
	default:
		break;		/* LAP, APR: no alternate paths here */
	}
}

/* ---- expiry ---- */

static void expire(struct cm_id *c)
{
	if (c->max_tries && c->tries < c->max_tries) {
		c->tries++;
		c->due_ns = cm_now_ns() + c->period_ns;
		/* The MAD header's AttributeID: bytes 16-17. */
		urxe_dbg("RDMA CM: no answer: %s again (%u of %u)",
			 urxe_cm_attr_name((uint16_t)(c->mad[16] << 8 |
						      c->mad[17])),
			 c->tries, c->max_tries);
		resend(c);
		return;
	}
	c->due_ns = 0;
	switch (c->cm) {
	case CM_REQ_SENT:
	case CM_SIDR_REQ_SENT:
		c->cm = CM_IDLE;
		post(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_REP_SENT:
		c->cm = CM_IDLE;
		post_qp_err(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_DREQ_SENT:
		enter_timewait(c);
		disconnected(c, -ETIMEDOUT);
		break;
	case CM_TIMEWAIT:
		c->cm = CM_IDLE;
		post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
		break;
	default:
		break;
	}
}

static void timers_run(void)
{
	uint64_t now = cm_now_ns();
	struct cm_id *c;

	for (c = cm.ids; c; c = c->next)
		if (c->due_ns && c->due_ns <= now && !c->destroying)
			expire(c);
	parked_run(false);
	cm.timer_due = 0;	/* re-armed below */
	cm_timer_kick();
}
