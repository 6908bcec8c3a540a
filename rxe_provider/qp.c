// SPDX-License-Identifier: BSD-2-Clause
/*
 * Queue pairs: ibv_create_qp(3), ibv_modify_qp(3), ibv_query_qp(3),
 * ibv_destroy_qp(3).  The provider checks everything the application
 * asks for — the transition table (qp_state.c), then every value — before
 * anything changes, keeps the attributes as set for ibv_query_qp, and
 * hands the transport its view (struct urxe_qp_attr) through
 * urxe_engine_qp_modify().  Posting work lives in qp_post.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

#define PSN_MASK 0xffffffu
#define QPN_MASK 0xffffffu
#define DEFAULT_HOP_LIMIT 64

/* Access flags a QP accepts, as kernel rxe (RXE_ACCESS_SUPPORTED_QP). */
#define QP_ACCESS_OK (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
		      IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND | \
		      IBV_ACCESS_OPTIONAL_RANGE)

/*
 * Masks above IBV_QP_DEST_QPN only exist in the extended modify command;
 * rdma-core's ibv_cmd_modify_qp refuses them with EOPNOTSUPP.
 */
#define QP_MASK_LEGACY ((IBV_QP_DEST_QPN << 1) - 1)

/* ---- creation ---- */

static int check_caps(const struct ibv_qp_cap *cap)
{
	if (cap->max_send_wr > URXE_MAX_QP_WR ||
	    cap->max_recv_wr > URXE_MAX_QP_WR)
		return -EINVAL;
	if (cap->max_send_sge > URXE_MAX_SGE ||
	    cap->max_recv_sge > URXE_MAX_SGE)
		return -EINVAL;
	if (cap->max_inline_data > URXE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

/* Whether @cq may complete work of a QP made in @ctx. */
static bool cq_ok(const struct ibv_cq *cq, const struct ibv_context *ctx)
{
	return cq && cq->context == ctx;
}

/* The caps that apply to a QP of @a's type (the others are ignored). */
static struct ibv_qp_cap caps_used(const struct ibv_qp_init_attr *a)
{
	struct ibv_qp_cap cap = a->cap;

	/* ibv_create_qp(3): an SRQ QP's receive caps are ignored. */
	if (a->srq || a->qp_type == IBV_QPT_XRC_SEND)
		cap.max_recv_wr = cap.max_recv_sge = 0;
	/* An XRC TGT QP has no queues at all (IBA A14.2.2). */
	if (a->qp_type == IBV_QPT_XRC_RECV)
		memset(&cap, 0, sizeof(cap));
	return cap;
}

static int check_srq(const struct ibv_srq *srq, const struct ibv_context *ctx)
{
	if (srq->context != ctx)
		return -EINVAL;
	/* As the kernel's create_qp: only a basic SRQ attaches to a QP. */
	if (to_usrq((struct ibv_srq *)srq)->xrcd) {
		urxe_dbg("ibv_create_qp: SRQ 0x%06x is an XRC SRQ: only the TGT QPs of its XRC domain deliver into it; give the QP a basic SRQ",
			 srq->handle);
		return -EINVAL;
	}
	return 0;
}

/*
 * What each type needs: RC, UC and UD a PD and two CQs (and a basic SRQ,
 * if any); XRC INI a PD and a send CQ, the rest being ignored as the
 * kernel ignores it; XRC TGT only an XRCD, which @xrcd is when the
 * application asked through ibv_create_qp_ex(3).
 */
static int check_init(struct ibv_context *ctx, struct ibv_pd *pd,
		      struct ibv_xrcd *xrcd, const struct ibv_qp_init_attr *a)
{
	struct ibv_qp_cap cap;

	switch (a->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		if (!pd || !cq_ok(a->send_cq, ctx) || !cq_ok(a->recv_cq, ctx))
			return -EINVAL;
		if (a->srq && check_srq(a->srq, ctx))
			return -EINVAL;
		break;
	case IBV_QPT_XRC_SEND:
		if (!pd || !cq_ok(a->send_cq, ctx)) {
			urxe_dbg("ibv_create_qp: an XRC_SEND QP needs a PD and a send CQ of its context");
			return -EINVAL;
		}
		break;
	case IBV_QPT_XRC_RECV:
		if (!xrcd) {
			urxe_dbg("ibv_create_qp: an XRC_RECV QP belongs to an XRC domain: use ibv_create_qp_ex with comp_mask IBV_QP_INIT_ATTR_XRCD");
			return -EINVAL;
		}
		break;
	case IBV_QPT_RAW_PACKET:
		urxe_dbg("ibv_create_qp: QP type %d is not supported",
			 a->qp_type);
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	cap = caps_used(a);
	return check_caps(&cap);
}

/*
 * The caps granted, never less than asked (ibv_create_qp(3)): a send slot
 * holds max(SGEs, inline bytes), so each gets what the other's room
 * allows, as kernel rxe reports them.
 */
static void grant_caps(struct ibv_qp_cap *cap)
{
	uint32_t room = cap->max_send_sge * sizeof(struct urxe_sge);

	if (room < cap->max_inline_data)
		room = cap->max_inline_data;
	cap->max_inline_data = room < URXE_MAX_INLINE ? room : URXE_MAX_INLINE;
	room /= sizeof(struct urxe_sge);
	if (cap->max_send_sge < room)
		cap->max_send_sge = room < URXE_MAX_SGE ? room : URXE_MAX_SGE;
}

void urxe_qp_post_event(struct urxe_qp *h, enum ibv_event_type type)
{
	struct ibv_async_event ev = {
		.element.qp = &h->vqp.qp_base,
		.event_type = type,
	};

	if (h->async && !urxe_evpipe_post(h->async, &ev))
		atomic_fetch_add(&h->events_reported, 1);
}

/* Engine context, progress lock held: report the event, never block. */
static void qp_fatal(struct urxe_eqp *e, enum ibv_event_type type)
{
	struct urxe_qp *qp = urxe_eqp_pub(e)->owner;

	/* The engine says it at every flush in ERR: once per visit is news. */
	if (type == IBV_EVENT_QP_LAST_WQE_REACHED &&
	    atomic_exchange(&qp->last_wqe_reported, true))
		return;
	urxe_dbg("QP 0x%06x: async event %d", qp->e->qpn, type);
	/* A TGT QP's events go to each of its handles. */
	if (qp->e->type == IBV_QPT_XRC_RECV)
		urxe_qp_tgt_event(qp, type);
	else
		urxe_qp_post_event(qp, type);
}

/* The path MTU of a UD QP is the port's (IBA 9.6.1: one packet each). */
static unsigned int port_mtu(struct urxe_dev *dev)
{
	unsigned int mtu;

	pthread_mutex_lock(&dev->lock);
	mtu = urxe_mtu_for_link(dev->iface.mtu);
	pthread_mutex_unlock(&dev->lock);
	return mtu ? mtu : 256;
}

/*
 * The application's view: what it gave, less what the type ignores
 * (an INI QP receives nothing, a TGT QP has no PD, CQs or SRQ).
 */
static void used_attr(const struct ibv_qp_init_attr *a, struct ibv_pd **pd,
		      struct ibv_qp_init_attr *u)
{
	*u = *a;
	u->cap = caps_used(a);
	if (a->qp_type == IBV_QPT_XRC_SEND || a->qp_type == IBV_QPT_XRC_RECV) {
		u->recv_cq = NULL;
		u->srq = NULL;
	}
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		u->send_cq = NULL;
		*pd = NULL;
	}
}

static void init_ibv_qp(struct urxe_qp *qp, struct ibv_context *ctx,
			struct ibv_pd *pd, const struct ibv_qp_init_attr *a)
{
	struct ibv_qp *q = &qp->vqp.qp_base;

	q->context = ctx;
	q->qp_context = a->qp_context;
	q->pd = pd;
	q->send_cq = a->send_cq;
	q->recv_cq = a->recv_cq;
	q->srq = a->srq;
	q->state = IBV_QPS_RESET;
	q->qp_type = a->qp_type;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
}

static void init_eqp(struct urxe_qp *qp, struct ibv_pd *pd,
		     struct ibv_xrcd *xrcd, const struct ibv_qp_init_attr *a)
{
	struct urxe_eqp_pub *e = qp->e;

	e->owner = qp;
	e->type = a->qp_type;
	/* A TGT QP checks keys against the PD of the SRQ each request names. */
	e->pd = pd ? pd->handle : 0;
	e->xrcd = xrcd ? to_uxrcd(xrcd)->domain_id : 0;
	e->sq_sig_all = a->sq_sig_all != 0;
	e->scq = a->send_cq ? &to_ucq(a->send_cq)->ring : NULL;
	e->rcq = a->recv_cq ? &to_ucq(a->recv_cq)->ring : NULL;
	e->fatal = qp_fatal;
	e->attr.state = IBV_QPS_RESET;
	e->attr.pkey = URXE_DEFAULT_PKEY;
	e->attr.hop_limit = DEFAULT_HOP_LIMIT;
	e->attr.path_mtu = a->qp_type == IBV_QPT_UD ? port_mtu(qp->dev) : 256;
}

static const char *type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_XRC_SEND:
		return "XRC INI";
	case IBV_QPT_XRC_RECV:
		return "XRC TGT";
	default:
		return "?";
	}
}

/* The objects a new QP uses count it; urxe_qp_release() uncounts. */
static void hold_refs(const struct ibv_qp *q)
{
	if (q->pd)
		atomic_fetch_add(&to_upd(q->pd)->users, 1);
	if (q->send_cq)
		atomic_fetch_add(&to_ucq(q->send_cq)->users, 1);
	if (q->recv_cq)
		atomic_fetch_add(&to_ucq(q->recv_cq)->users, 1);
	if (q->srq)
		atomic_fetch_add(&to_usrq(q->srq)->users, 1);
}

static void drop_refs(const struct ibv_qp *q)
{
	if (q->pd)
		atomic_fetch_sub(&to_upd(q->pd)->users, 1);
	if (q->send_cq)
		atomic_fetch_sub(&to_ucq(q->send_cq)->users, 1);
	if (q->recv_cq)
		atomic_fetch_sub(&to_ucq(q->recv_cq)->users, 1);
	if (q->srq)
		atomic_fetch_sub(&to_usrq(q->srq)->users, 1);
}

/*
 * Before a QP is made: its attributes checked, the device alive and its
 * sockets bound (a UD QP wants the IP header's fields with each packet).
 */
static int create_ready(struct urxe_dev *dev, struct ibv_context *ctx,
			struct ibv_pd *pd, struct ibv_xrcd *xrcd,
			const struct ibv_qp_init_attr *attr)
{
	int rc;

	if (!attr || !ctx)
		return -EINVAL;
	rc = check_init(ctx, pd, xrcd, attr);
	if (rc)
		return rc;
	if (xrcd && to_uxrcd(xrcd)->dev != dev) {
		urxe_dbg("ibv_create_qp_ex: the XRCD is another device's: open the XRC domain on %s",
			 dev->desc.name);
		return -EINVAL;
	}
	if (dev->dead)
		return -EIO;
	rc = urxe_dev_bind(dev);
	if (rc)
		return rc;
	if (attr->qp_type == IBV_QPT_UD)
		urxe_dev_want_ip_meta(dev);
	return 0;
}

int urxe_qp_create_in(struct urxe_dev *dev, struct ibv_context *ctx,
		      struct ibv_pd *pd, struct ibv_xrcd *xrcd,
		      struct ibv_qp_init_attr *attr, struct urxe_evpipe *async,
		      struct ibv_qp **out)
{
	struct ibv_qp_init_attr u;
	struct urxe_qp *qp;
	int rc;

	rc = create_ready(dev, ctx, pd, xrcd, attr);
	if (rc)
		return rc;
	used_attr(attr, &pd, &u);
	grant_caps(&u.cap);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->dev = dev;
	qp->async = async;
	atomic_init(&qp->events_reported, 0);
	atomic_init(&qp->last_wqe_reported, false);
	rc = urxe_engine_qp_new(&u.cap, &qp->eobj);
	if (rc)
		goto err_free;
	qp->e = urxe_eqp_pub(qp->eobj);
	init_eqp(qp, pd, xrcd, &u);
	if (u.srq) {
		rc = urxe_engine_srq_attach(qp->eobj, to_usrq(u.srq)->eobj);
		if (rc)
			goto err_eqp;
	}
	init_ibv_qp(qp, ctx, pd, &u);
	pthread_mutex_init(&qp->lock, NULL);
	qp->init = u;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = urxe_mtu_to_enum(qp->e->attr.path_mtu);
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->attr.cap = u.cap;
	/* Publishes the QP: everything the engine may touch is set by now. */
	rc = urxe_engine_qp_add(dev->eng, qp->eobj);
	if (rc)
		goto err_locks;
	qp->vqp.qp_base.qp_num = qp->e->qpn;
	qp->vqp.qp_base.handle = qp->e->qpn;
	hold_refs(&qp->vqp.qp_base);
	/* ibv_open_qp(3) finds it from now on. */
	if (u.qp_type == IBV_QPT_XRC_RECV)
		urxe_qp_tgt_publish(qp, to_uxrcd(xrcd));
	attr->cap = u.cap;
	urxe_dbg("%s: QP 0x%06x (%s) created", dev->desc.name, qp->e->qpn,
		 type_name(u.qp_type));
	*out = &qp->vqp.qp_base;
	return 0;

err_locks:
	pthread_mutex_destroy(&qp->lock);
	pthread_mutex_destroy(&qp->vqp.qp_base.mutex);
	pthread_cond_destroy(&qp->vqp.qp_base.cond);
	urxe_engine_srq_detach(qp->eobj);
err_eqp:
	urxe_engine_qp_free(qp->eobj);
err_free:
	free(qp);
	return rc;
}

int urxe_qp_create(struct urxe_dev *dev, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *attr, struct urxe_evpipe *async,
		   struct ibv_qp **out)
{
	if (!pd || !attr)
		return -EINVAL;
	return urxe_qp_create_in(dev, pd->context, pd, NULL, attr, async, out);
}

/* ---- destruction ---- */

static bool event_of_qp(const void *rec, const void *arg)
{
	const struct ibv_async_event *ev = rec;

	return urxe_event_is_qp(ev->event_type) && ev->element.qp == arg;
}

void urxe_qp_drain_events(struct urxe_qp *h)
{
	struct ibv_qp *ibqp = &h->vqp.qp_base;
	unsigned int reported = atomic_load(&h->events_reported), n;

	/* Nothing posts to @h any more; what went stays uncounted. */
	if (h->async && reported) {
		n = urxe_evpipe_purge(h->async, event_of_qp, ibqp);
		reported = atomic_fetch_sub(&h->events_reported, n) - n;
	}
	/* ibv_get_async_event(3): wait for the events handed out. */
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
}

void urxe_qp_release(struct urxe_qp *qp)
{
	struct ibv_qp *ibqp = &qp->vqp.qp_base;

	/* After this the engine neither touches the QP nor reports on it. */
	urxe_engine_qp_remove(qp->e->eng, qp->eobj);
	urxe_qp_mcast_detach_all(qp);
	urxe_qp_drain_events(qp);
	drop_refs(ibqp);
	if (ibqp->srq)
		urxe_engine_srq_detach(qp->eobj);
	urxe_engine_qp_free(qp->eobj);
	urxe_qpx_fini(qp);
	pthread_mutex_destroy(&qp->lock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(qp);
}

int urxe_qp_destroy(struct ibv_qp *ibqp)
{
	if (!ibqp)
		return -EINVAL;
	/* A TGT QP's handle: the QP goes with its last one. */
	if (ibqp->qp_type == IBV_QPT_XRC_RECV) {
		urxe_qp_tgt_close(to_uqp(ibqp));
		return 0;
	}
	urxe_qp_release(to_uqp(ibqp));
	return 0;
}

void urxe_qp_ack_async(struct ibv_qp *ibqp)
{
	pthread_mutex_lock(&ibqp->mutex);
	ibqp->events_completed++;
	pthread_cond_signal(&ibqp->cond);
	pthread_mutex_unlock(&ibqp->mutex);
}

/* ---- modify ---- */

/* The engine may move a QP to ERR (or SQE) on its own. */
static enum ibv_qp_state cur_state(struct urxe_qp *qp)
{
	return __atomic_load_n(&qp->e->attr.state, __ATOMIC_ACQUIRE);
}

/* The attribute of @mask whose value is out of range, or 0. */
static int bad_path_attr(const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return IBV_QP_PORT;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= URXE_PKEY_TBL_LEN)
		return IBV_QP_PKEY_INDEX;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned int)QP_ACCESS_OK))
		return IBV_QP_ACCESS_FLAGS;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return IBV_QP_PATH_MTU;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > QPN_MASK)
		return IBV_QP_DEST_QPN;
	/* No automatic path migration: an alternate path is kept, unused. */
	if ((mask & IBV_QP_ALT_PATH) &&
	    (a->alt_port_num != 1 || a->alt_ah_attr.port_num != 1 ||
	     a->alt_timeout > 31 || a->alt_pkey_index >= URXE_PKEY_TBL_LEN))
		return IBV_QP_ALT_PATH;
	if ((mask & IBV_QP_PATH_MIG_STATE) &&
	    (unsigned int)a->path_mig_state > IBV_MIG_ARMED)
		return IBV_QP_PATH_MIG_STATE;
	return 0;
}

/* IBA 9.7.5.2.8 and 9.7.6: the timer and retry fields' widths. */
static int bad_transport_attr(const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return IBV_QP_TIMEOUT;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return IBV_QP_RETRY_CNT;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return IBV_QP_RNR_RETRY;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return IBV_QP_MIN_RNR_TIMER;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > URXE_MAX_RD_ATOM)
		return IBV_QP_MAX_QP_RD_ATOMIC;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > URXE_MAX_RD_ATOM)
		return IBV_QP_MAX_DEST_RD_ATOMIC;
	return 0;
}

/*
 * Every refused modify says why at the default log level, naming the
 * attributes: a mask in hex is a number nobody reads.  Rate-limited: a
 * program may retry in a loop.
 */
static struct urxe_ratelimit modify_rl;

#define modify_refused(qp, cur, next, fmt, ...)                            \
	do {                                                               \
		if (urxe_log_ratelimit(&modify_rl, URXE_LOG_WARN))         \
			urxe_warn("%s: modify_qp QP 0x%06x %s->%s: " fmt,   \
				  (qp)->dev->desc.name, (qp)->e->qpn,       \
				  urxe_qp_state_names[cur],                \
				  urxe_qp_state_names[next], __VA_ARGS__); \
	} while (0)

static void mask_refused(const struct urxe_qp *qp, int mask,
			 enum ibv_qp_state cur, enum ibv_qp_state next)
{
	char why[512];

	if (!urxe_log_ratelimit(&modify_rl, URXE_LOG_WARN))
		return;
	urxe_qp_mask_explain(cur, next, qp->vqp.qp_base.qp_type, mask, why,
			     sizeof(why));
	urxe_warn("%s: modify_qp QP 0x%06x %s->%s: %s", qp->dev->desc.name,
		  qp->e->qpn, urxe_qp_state_names[cur],
		  urxe_qp_state_names[next], why);
}

static int check_transition(const struct urxe_qp *qp,
			    const struct ibv_qp_attr *a, int mask,
			    enum ibv_qp_state cur, enum ibv_qp_state *next)
{
	enum ibv_qp_type type = qp->vqp.qp_base.qp_type;
	char names[128];

	*next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	if (mask & ~QP_MASK_LEGACY) {
		urxe_qp_mask_names(mask & ~QP_MASK_LEGACY, names, sizeof(names));
		modify_refused(qp, cur, cur, "not supported: %s (for a rate: ibv_modify_qp_rate_limit)",
			       names);
		return -EOPNOTSUPP;
	}
	if ((unsigned int)*next > IBV_QPS_ERR) {
		modify_refused(qp, cur, cur, "qp_state %u is no state (RESET..ERR)",
			       (unsigned int)*next);
		return -EINVAL;
	}
	/* IBA 11.2.5.2: a wrong "current state" fails the modify. */
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur) {
		modify_refused(qp, cur, *next, "IBV_QP_CUR_STATE says %s, the QP is %s",
			       (unsigned int)a->cur_qp_state <= IBV_QPS_ERR ?
			       urxe_qp_state_names[a->cur_qp_state] : "no state",
			       urxe_qp_state_names[cur]);
		return -EINVAL;
	}
	if (!urxe_qp_mask_ok(cur, *next, type, mask)) {
		mask_refused(qp, mask, cur, *next);
		return -EINVAL;
	}
	return 0;
}

/* The transport's view of the attributes in @mask. */
static void to_engine_attr(const struct ibv_qp_attr *a, int mask,
			   const struct urxe_path *path, enum ibv_qp_state next,
			   struct urxe_qp_attr *ea)
{
	memset(ea, 0, sizeof(*ea));
	ea->state = next;
	ea->dest_qpn = a->dest_qp_num;
	ea->sq_psn = a->sq_psn & PSN_MASK;
	ea->rq_psn = a->rq_psn & PSN_MASK;
	ea->qkey = a->qkey;
	ea->access = a->qp_access_flags;
	if (mask & IBV_QP_PATH_MTU)
		ea->path_mtu = urxe_mtu_from_enum(a->path_mtu);
	ea->timeout = a->timeout;
	ea->retry_cnt = a->retry_cnt;
	ea->rnr_retry = a->rnr_retry;
	ea->min_rnr_timer = a->min_rnr_timer;
	ea->max_rd_atomic = a->max_rd_atomic;
	ea->max_dest_rd_atomic = a->max_dest_rd_atomic;
	ea->pkey = URXE_DEFAULT_PKEY;	/* the only entry of the table */
	if (mask & IBV_QP_AV) {
		ea->dgid = path->dgid;
		ea->sgid = path->sgid;
		ea->tclass = path->tclass;
		ea->hop_limit = path->hop_limit ? path->hop_limit
						: DEFAULT_HOP_LIMIT;
		ea->flow_label = path->flow_label;
	}
}

/* Keeps what was set, for ibv_query_qp; qp->lock held. */
static void remember(struct ibv_qp_attr *k, const struct ibv_qp_attr *a,
		     int mask)
{
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		k->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		k->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		k->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		k->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		k->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		k->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		k->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		k->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		k->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		k->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		k->rq_psn = a->rq_psn & PSN_MASK;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		k->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		k->alt_ah_attr = a->alt_ah_attr;
		k->alt_pkey_index = a->alt_pkey_index;
		k->alt_port_num = a->alt_port_num;
		k->alt_timeout = a->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		k->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		k->sq_psn = a->sq_psn & PSN_MASK;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		k->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		k->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		k->dest_qp_num = a->dest_qp_num;
}

/*
 * Into RESET: the QP's waiting completions leave with it (provider_int.h).
 * A TGT QP has no CQ of its own: its completions are the SRQs'.
 */
static void clean_cqs(struct urxe_qp *qp)
{
	struct ibv_qp *ibqp = &qp->vqp.qp_base;
	unsigned int n = 0;

	if (ibqp->recv_cq)
		n += urxe_cq_clean(ibqp->recv_cq, qp->e->qpn);
	if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
		n += urxe_cq_clean(ibqp->send_cq, qp->e->qpn);
	if (n)
		urxe_dbg("QP 0x%06x: %u completions dropped with the reset",
			 qp->e->qpn, n);
}

static int check_modify(struct urxe_qp *qp, const struct ibv_qp_attr *a,
			int mask, enum ibv_qp_state cur,
			enum ibv_qp_state *next, struct urxe_path *path)
{
	char name[40];
	int rc, bad;

	rc = check_transition(qp, a, mask, cur, next);
	if (rc)
		return rc;
	bad = bad_path_attr(a, mask);
	if (!bad)
		bad = bad_transport_attr(a, mask);
	if (bad) {
		urxe_qp_mask_names(bad, name, sizeof(name));
		modify_refused(qp, cur, *next, "%s out of range (%s)", name,
			       urxe_qp_attr_range(bad));
		return -EINVAL;
	}
	if (mask & IBV_QP_AV)
		return urxe_av_resolve(qp->dev, &a->ah_attr, path);
	return 0;
}

int urxe_qp_modify(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct urxe_qp *qp;
	struct urxe_qp_attr ea;
	struct urxe_path path;
	enum ibv_qp_state cur, next;
	int rc, emask;

	if (!ibqp || !attr)
		return -EINVAL;
	/* Through an opened handle too: the TGT QP is one. */
	qp = urxe_qp_real(to_uqp(ibqp));
	/* The kernel drops what an XRC QP's side has no use for. */
	mask &= ~urxe_qp_mask_ignored(ibqp->qp_type);
	emask = mask & ~IBV_QP_CUR_STATE;
	pthread_mutex_lock(&qp->lock);
	cur = cur_state(qp);
	rc = check_modify(qp, attr, mask, cur, &next, &path);
	if (rc)
		goto out;
	/*
	 * Staying in a state is no state change for the transport: an
	 * RTS -> RTS modify must not undo an error the engine raised since.
	 */
	if (next == cur)
		emask &= ~IBV_QP_STATE;
	else
		emask |= IBV_QP_STATE;
	to_engine_attr(attr, mask, &path, next, &ea);
	rc = urxe_engine_qp_modify(qp->eobj, &ea, emask);
	if (rc)
		goto out;
	/*
	 * The engine queues nothing for a QP in RESET any more: its
	 * completions still waiting (flush errors, mostly) go with it.
	 */
	if (next == IBV_QPS_RESET && next != cur) {
		clean_cqs(qp);
		/* A next visit to ERR reports LAST_WQE_REACHED again. */
		atomic_store(&qp->last_wqe_reported, false);
	}
	remember(&qp->attr, attr, mask);
	qp->attr.qp_state = next;
	ibqp->state = next;
	if (next != cur)
		urxe_dbg("QP 0x%06x: %s -> %s", qp->e->qpn,
			 urxe_qp_state_names[cur], urxe_qp_state_names[next]);
out:
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

/* ---- query ---- */

int urxe_qp_query(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	struct urxe_qp *qp;
	enum ibv_qp_state state;

	if (!ibqp || !attr || !init)
		return -EINVAL;
	/* As rdma-core's ibv_cmd_query_qp: newer attributes need _ex. */
	if (mask & ~(IBV_QP_RATE_LIMIT - 1))
		return -EOPNOTSUPP;
	qp = urxe_qp_real(to_uqp(ibqp));
	pthread_mutex_lock(&qp->lock);
	state = cur_state(qp);
	/* Like the kernel: every attribute, whatever @mask selects. */
	*attr = qp->attr;
	attr->qp_state = state;
	attr->cur_qp_state = state;
	attr->cap = qp->init.cap;
	attr->sq_draining = 0;
	*init = qp->init;
	pthread_mutex_unlock(&qp->lock);
	/* As rdma-core's: the handle's own pointers. */
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	if (mask & IBV_QP_STATE)
		ibqp->state = state;
	return 0;
}
