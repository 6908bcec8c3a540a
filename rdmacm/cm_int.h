/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * urxe's librdmacm: what its files share.  docs/design.md, "RDMA CM".
 *
 * One process-wide lock (cm.lock) guards every id, channel, device and
 * connection; the CM thread (ibcm.c) takes it for each MAD and timer,
 * application threads for each call.  Nothing blocks while holding it
 * but the short sends of MADs.
 */
#ifndef URXE_RDMACM_CM_INT_H
#define URXE_RDMACM_CM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <urxe/gsi.h>

#include <urxe/log.h>
#include "mad.h"

#define CM_EXPORT __attribute__((visibility("default")))

#define CM_MAX_DEVS 16
#define CM_GIDS 16
#define CM_QKEY_UDP 0x01234567u		/* RDMA_UDP_QKEY */
#define CM_BACKLOG_MAX 1024		/* net.rdma_ucm.max_backlog */
/*
 * What urxe advertises, as a Linux 6.x active side does: CM response
 * timeouts 20 (4.096 us * 2^20 = 4.3 s), 15 retries, packet lifetime 16.
 */
#define CM_RESPONSE_TIMEOUT 20
#define CM_MAX_RETRIES 15
#define CM_PACKET_LIFETIME 16

/* REJ reasons (IBA table 112) this library sends or reports. */
/* Loopback: how long a REQ waits for its port's listener (ms). */
#define CM_LISTEN_GRACE_MS 200
#define CM_LISTEN_POLL_MS 5
/* Requests waiting for a listener, at most (ibcm_listen.c, park()). */
#define CM_PARKED_MAX 256
/* A destroyed channel's memory and fd stay this long (cm_chan.c). */
#define CM_CHAN_GRACE_MS 1000

#define CM_REJ_TIMEOUT 4
#define CM_REJ_INVALID_SERVICE_ID 8
#define CM_REJ_STALE_CONN 10
#define CM_REJ_CONSUMER 28
#define CM_REJ_VENDOR_OPTION 35

/* A device: the context every id on it shares, and its QP1. */
struct cm_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;			/* the ids' default, lazily */
	struct ibv_xrcd *xrcd;			/* XRC ids' default, lazily */
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	struct urxe_gsi_info info;
	struct urxe_gsi_port *gsi;		/* NULL until needed */
	int gsi_fd;
	union ibv_gid gid[CM_GIDS];
	int ngid;
};

/* The IB CM's state of an id's connection (IBA 12.9, condensed). */
enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,
	CM_REQ_RCVD,
	CM_REP_SENT,
	CM_REP_RCVD,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DREQ_RCVD,
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
};

/* The RDMA CM's state of an id. */
enum id_state {
	ID_IDLE,
	ID_ADDR_BOUND,
	ID_ADDR_RESOLVED,
	ID_ROUTE_RESOLVED,
	ID_LISTEN,
	ID_CONNECT,
	ID_DISCONNECT,
};

struct cm_channel;
struct cm_mc;

struct cm_id {
	struct rdma_cm_id id;			/* what the user sees */
	struct cm_channel *chan;
	bool sync;				/* a private channel, waited on */
	struct cm_dev *dev;			/* NULL until bound to one */
	enum id_state state;
	bool destroying;
	struct cm_id *next;			/* all ids */

	/* addressing */
	int port_fd;				/* the port's reservation, or -1 */
	bool reuseaddr;
	int afonly;				/* -1: not set */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	uint8_t sgid_index;
	bool steered;				/* loopback: dgid from a listener */

	/* listening */
	int backlog;
	int pending;				/* CONNECT_REQUESTs not yet fetched */
	int listen_fd;				/* loopback listener's socket, or -1 */
	struct cm_id *listener;			/* a request's: its listener */

	/* the connection (IB CM) */
	enum cm_state cm;
	uint32_t local_id, remote_id;		/* comm IDs */
	uint64_t tid;
	uint32_t qpn;				/* ours (id->qp's, or the user's) */
	uint32_t remote_qpn;
	uint32_t rq_psn;			/* our RQ starts there: random, sent */
	uint32_t sq_psn;			/* our SQ starts there: received */
	uint8_t resp_res, init_depth;		/* ours, as negotiated */
	uint8_t retry_count, rnr_retry;
	uint8_t peer_ack_timeout;		/* the REQ's local ACK timeout */
	uint8_t peer_cm_timeout;		/* the REQ's local CM timeout */
	uint8_t path_mtu;			/* enum ibv_mtu */
	bool srq;
	uint32_t remote_qkey;			/* UD */
	uint8_t mad[URXE_MAD_LEN];		/* the last sent, to resend */
	uint64_t due_ns;			/* resend or time out then (0: no) */
	unsigned int tries, max_tries;
	uint64_t period_ns;
	bool disc_reported;
	bool established;
	uint8_t resp_priv[URXE_CM_REP_PRIV];	/* a REP's, for CONNECT_RESPONSE */
	struct ibv_sa_path_rec path;

	/* events reported on a channel and not acknowledged */
	unsigned int events_out;
	pthread_cond_t acked;

	/* QPs made here */
	bool own_send_cq, own_recv_cq;
	bool srq_cq;				/* own_recv_cq made for the XRC SRQ */
	struct ibv_qp_init_attr *ep_attr;	/* rdma_create_ep's, for requests */
	struct ibv_pd *ep_pd;

	/* multicast groups joined (mcast.c) */
	struct cm_mc *mcs;
};

struct cm_event {
	struct rdma_cm_event ev;		/* first: the user's pointer */
	struct cm_id *owner;			/* whose acknowledgements */
	bool dead;				/* its id went: skipped */
	bool qp_err;				/* fetched: the id's QP to ERR */
	struct cm_event *next;
	uint8_t priv[URXE_CM_RTU_PRIV];
};

struct cm_channel {
	struct rdma_event_channel ch;		/* {fd}: an EFD_SEMAPHORE eventfd */
	struct cm_event *head, *tail;
	unsigned int ids;			/* ids on it */
	unsigned int readers;			/* in rdma_get_cm_event() */
	bool closing;				/* destroyed, in the graveyard */
	uint64_t gone_ns;			/* freed after, if nobody reads */
	struct cm_channel *next_gone;
};

struct cm_global {
	pthread_mutex_t lock;
	bool init;
	int init_err;
	struct cm_dev dev[CM_MAX_DEVS];
	int ndev;
	struct ibv_context **ctx_list;		/* rdma_get_devices' */
	const struct urxe_gsi_ops *gsi;
	struct cm_id *ids;
	uint32_t next_local_id;
	uint32_t tid_hi;
	/* the CM thread (ibcm.c) */
	pthread_t thread;
	bool thread_on;
	int epfd;
	int wake_fd;
	int timer_fd;
	uint64_t timer_due;
};

extern struct cm_global cm;

static inline struct cm_id *to_cid(struct rdma_cm_id *id)
{
	return (struct cm_id *)(void *)((char *)id - offsetof(struct cm_id, id));
}

static inline struct cm_channel *to_chan(struct rdma_event_channel *c)
{
	return (struct cm_channel *)(void *)((char *)c -
					     offsetof(struct cm_channel, ch));
}

/* cm.c */
int cm_init(void);			/* lock held */
int cm_init_locked(void);		/* lock not held */
uint64_t cm_now_ns(void);
struct cm_id *cm_id_new(struct cm_channel *chan, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qp_type);
void cm_id_free(struct cm_id *cid);
void cm_mc_leave_all(struct cm_id *cid);
void cm_mc_qp_gone(struct cm_id *cid);
struct ibv_pd *cm_dev_pd(struct cm_dev *d);
struct ibv_xrcd *cm_dev_xrcd(struct cm_dev *d);
int cm_err(int e);			/* errno = e, -1 */

/* cm_chan.c */
struct cm_channel *cm_chan_new(void);
void cm_chan_free(struct cm_channel *c);
struct cm_event *cm_event_new(struct cm_id *id, enum rdma_cm_event_type type,
			      int status);
void cm_event_post(struct cm_id *id, struct cm_event *e);
void cm_wait_acks(struct cm_id *cid);	/* lock held */
int cm_wait(struct cm_id *cid);		/* sync ids: the call's event */
void cm_channels_release(void);

/* addr.c */
int cm_bind(struct cm_id *cid, const struct sockaddr *addr);
int cm_port_reserve(struct cm_id *cid);
void cm_port_release(struct cm_id *cid);
int cm_listen_open(struct cm_id *cid);
void cm_listen_accept(struct cm_id *listener);
int cm_steer(struct cm_id *cid);
bool cm_needs_steer(const struct cm_id *cid);
struct cm_dev *cm_dev_by_gid(const union ibv_gid *gid, uint8_t *index);
void cm_gid_of(const struct sockaddr *sa, union ibv_gid *gid);
void cm_sockaddr_of(const union ibv_gid *gid, uint16_t port,
		    struct sockaddr_storage *ss);
uint16_t cm_port_of(const struct sockaddr *sa);
bool cm_addr_any(const struct sockaddr *sa);
bool cm_addr_loopback(const struct sockaddr *sa);
socklen_t cm_addr_len(const struct sockaddr *sa);
bool cm_addr_multicast(const struct sockaddr *sa);

/* qp.c */
int cm_qp_init_attr(struct cm_id *cid, struct ibv_qp_attr *a, int *mask);
void cm_ah_attr(const struct cm_id *cid, struct ibv_ah_attr *ah);
int cm_qp_to_rts(struct cm_id *cid);
int cm_qp_to_rtr(struct cm_id *cid);
int cm_qp_to_err(struct cm_id *cid);

/* ibcm.c, ibcm_send.c (the IB CM; ibcm_int.h has its own shares) */
int cm_thread_start(void);
int cm_dev_gsi(struct cm_dev *d);
void cm_timer_arm(struct cm_id *cid, uint64_t period_ns, unsigned int tries);
void cm_timer_kick(void);
int cm_send(struct cm_id *cid, const struct urxe_cm_msg *m, bool keep);
int cm_send_req(struct cm_id *cid, const struct rdma_conn_param *p);
int cm_send_rep(struct cm_id *cid, const struct rdma_conn_param *p);
int cm_send_rtu(struct cm_id *cid);
int cm_send_rej(struct cm_id *cid, uint16_t reason, const void *priv,
		uint8_t len);
int cm_send_dreq(struct cm_id *cid);
int cm_send_drep(struct cm_id *cid);
void cm_conn_drop(struct cm_id *cid);
void cm_parked_retry(void);		/* ibcm_listen.c */

#endif
