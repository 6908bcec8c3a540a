// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC domains across processes: what the processes of one domain share.
 *
 * A file-backed domain (ibv_open_xrcd with a file) has one more file,
 * <userdir>/xrcd.<entry>.<gen>, named by its registry entry and generation
 * (xrcd.c) and mapped shared by every process of the user that uses the
 * domain (its layout and readers: xrcd_file.c):
 *
 *   a header, then
 *   URXE_XS_TGTS TGT QP entries: the host's slot and the QP's responder state
 *           (struct urxe_tgt_shared), published by the process that
 *           created the QP — its host, whose address the QP answers on;
 *   URXE_XS_SRQS XRC SRQ entries: number, owner slot and the owner's GID, so
 *           that a host can relay a request to the process whose SRQ it
 *           names.
 *
 * Liveness is carried by OFD locks on the same file, as elsewhere:
 *   byte 0               the table mutex (write lock, blocking);
 *   byte URXE_XS_LIVE + slot  a read lock held by the process of that slot
 *                        while it uses the domain.
 * An entry whose owner's byte nobody holds belongs to a process that died
 * (or left): a host's TGT QP is then gone, an owner's SRQ unknown.  A
 * process that starts using a domain first drops the entries left under
 * its slot by an earlier holder of the slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "xrc_shared.h"
#include "xrcd_file.h"

struct urxe_xrc_dom {
	struct urxe_dev *dev;
	uint64_t domain_id;
	int fd;
	struct urxe_xs_file *f;
	unsigned int slot;
	int refs;
	pthread_mutex_t lock;		/* the OFD mutex is per description */
	struct urxe_xrc_dom *next;
};

static pthread_mutex_t doms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urxe_xrc_dom *doms;

static void file_name(char *buf, size_t len, uint64_t domain_id)
{
	snprintf(buf, len, "xrcd.%u.%u", (uint32_t)domain_id,
		 (uint32_t)(domain_id >> 32));
}

static void table_lock(struct urxe_xrc_dom *d)
{
	pthread_mutex_lock(&d->lock);
	urxe_regfile_lock(d->fd);
}

static void table_unlock(struct urxe_xrc_dom *d)
{
	urxe_regfile_unlock(d->fd);
	pthread_mutex_unlock(&d->lock);
}

bool urxe_xrc_slot_live(struct urxe_xrc_dom *d, unsigned int slot)
{
	return urxe_xs_slot_live(d->fd, d->slot, slot);
}

static int dom_map(struct urxe_xrc_dom *d)
{
	char name[64];
	int rc;

	file_name(name, sizeof(name), d->domain_id);
	d->fd = urxe_rundir_open(d->dev->desc.rundir, name);
	if (d->fd < 0)
		return d->fd;
	rc = urxe_xs_map(d->fd, d->slot, &d->f);
	if (rc)
		close(d->fd);	/* drops the locks too */
	return rc;
}

int urxe_xrc_dom_get(struct urxe_dev *dev, uint64_t domain_id,
		     struct urxe_xrc_dom **out)
{
	struct urxe_xrc_dom *d;
	int rc;

	pthread_mutex_lock(&doms_lock);
	for (d = doms; d; d = d->next) {
		if (d->dev == dev && d->domain_id == domain_id) {
			d->refs++;
			goto found;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto err;
	}
	d->dev = dev;
	d->domain_id = domain_id;
	d->slot = dev->slot.index;
	d->refs = 1;
	pthread_mutex_init(&d->lock, NULL);
	rc = dom_map(d);
	if (rc) {
		urxe_err("XRC domain: cannot map its shared file in %s: %s",
			 dev->desc.rundir, strerror(-rc));
		pthread_mutex_destroy(&d->lock);
		free(d);
		goto err;
	}
	d->next = doms;
	doms = d;
found:
	pthread_mutex_unlock(&doms_lock);
	*out = d;
	return 0;
err:
	pthread_mutex_unlock(&doms_lock);
	return rc;
}

static void hidden_views_drop(struct urxe_xrc_dom *d);

void urxe_xrc_dom_put(struct urxe_xrc_dom *d)
{
	struct urxe_xrc_dom **pp;

	pthread_mutex_lock(&doms_lock);
	if (--d->refs > 0) {
		pthread_mutex_unlock(&doms_lock);
		return;
	}
	for (pp = &doms; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	pthread_mutex_unlock(&doms_lock);
	hidden_views_drop(d);
	urxe_xs_unmap(d->f);
	close(d->fd);		/* our liveness byte goes with it */
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void urxe_xrc_dom_unlink(const char *rundir, uint64_t domain_id)
{
	char name[64];
	int rc;

	file_name(name, sizeof(name), domain_id);
	rc = urxe_rundir_unlink(rundir, name);
	if (rc)
		urxe_dbg("XRC domain: cannot remove %s in %s: %s", name, rundir,
			 strerror(-rc));
}

/* ---- TGT QPs ---- */

static void tgt_lock_init(struct urxe_tgt_shared *st)
{
	pthread_mutexattr_t ma;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&st->lock, &ma);
	pthread_mutexattr_destroy(&ma);
}

int urxe_xrc_tgt_publish(struct urxe_xrc_dom *d, uint32_t qpn,
			 struct urxe_tgt_shared **out)
{
	struct urxe_xs_tgt *t = NULL;
	int i;

	table_lock(d);
	for (i = 0; i < URXE_XS_TGTS; i++) {
		struct urxe_xs_tgt *c = &d->f->tgt[i];

		if (!c->in_use || !urxe_xrc_slot_live(d, c->host_slot)) {
			t = c;
			break;
		}
	}
	if (!t) {
		table_unlock(d);
		urxe_err("XRC domain: all %d shared TGT QPs are in use; destroy some",
			 URXE_XS_TGTS);
		return -ENOMEM;
	}
	memset(&t->st, 0, sizeof(t->st));
	tgt_lock_init(&t->st);
	t->st.qpn = qpn;
	t->st.attr.state = IBV_QPS_RESET;
	t->host_slot = d->slot;
	t->in_use = 1;
	table_unlock(d);
	*out = &t->st;
	return 0;
}

static struct urxe_xs_tgt *tgt_of(struct urxe_tgt_shared *st)
{
	return (struct urxe_xs_tgt *)((char *)st -
				      offsetof(struct urxe_xs_tgt, st));
}

void urxe_xrc_tgt_unpublish(struct urxe_xrc_dom *d, struct urxe_tgt_shared *st)
{
	table_lock(d);
	tgt_of(st)->in_use = 0;
	table_unlock(d);
}

struct urxe_tgt_shared *urxe_xrc_tgt_find(struct urxe_xrc_dom *d, uint32_t qpn)
{
	struct urxe_xs_tgt *t;

	table_lock(d);
	t = urxe_xs_tgt_find(d->f, d->fd, d->slot, qpn);
	table_unlock(d);
	return t ? &t->st : NULL;
}

bool urxe_xrc_tgt_alive(struct urxe_xrc_dom *d, struct urxe_tgt_shared *st,
			uint32_t qpn)
{
	struct urxe_xs_tgt *t = tgt_of(st);

	return __atomic_load_n(&t->in_use, __ATOMIC_ACQUIRE) &&
	       st->qpn == qpn && urxe_xrc_slot_live(d, t->host_slot);
}

/* ---- XRC SRQs ---- */

int urxe_xrc_srq_publish(struct urxe_xrc_dom *d, uint32_t srqn,
			 const union ibv_gid *gid)
{
	int i, rc = -ENOMEM;

	table_lock(d);
	for (i = 0; i < URXE_XS_SRQS; i++) {
		struct urxe_xs_srq *s = &d->f->srq[i];

		if (s->in_use && urxe_xrc_slot_live(d, s->owner_slot))
			continue;
		s->srqn = srqn;
		s->owner_slot = d->slot;
		s->gid = *gid;
		__atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);
		rc = 0;
		break;
	}
	table_unlock(d);
	if (rc)
		urxe_err("XRC domain: all %d shared SRQ entries are in use",
			 URXE_XS_SRQS);
	return rc;
}

void urxe_xrc_srq_unpublish(struct urxe_xrc_dom *d, uint32_t srqn)
{
	int i;

	table_lock(d);
	for (i = 0; i < URXE_XS_SRQS; i++) {
		struct urxe_xs_srq *s = &d->f->srq[i];

		if (s->in_use && s->srqn == srqn && s->owner_slot == d->slot)
			s->in_use = 0;
	}
	table_unlock(d);
}

/*
 * Read without the table mutex (the engine asks while it holds its
 * progress lock): an entry is written whole before in_use is set.
 */
bool urxe_xrc_srq_route(struct urxe_xrc_dom *d, uint32_t srqn,
			union ibv_gid *gid)
{
	return urxe_xs_srq_route(d->f, d->fd, d->slot, srqn, gid);
}

/* ---- this process's views of TGT QPs hosted by others ---- */

/*
 * A view is an opened handle's (ibv_open_qp), or hidden: made when a
 * request relayed here names a TGT QP of one of our domains that nobody
 * here opened (an SRQ may take requests from any TGT QP of its domain);
 * hidden views live as long as this process maps the domain.
 */
struct xs_view {
	struct urxe_dev *dev;
	struct urxe_xrc_dom *dom;
	struct urxe_eqp *qp;
	bool failed;
	bool hidden;
};

static pthread_mutex_t views_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xs_view *views;
static unsigned int nviews, views_cap;

/*
 * Unloading: every domain's file goes, whatever still refers to it (the
 * engine threads have stopped; the QPs and SRQs stay as memory).
 */
void urxe_xrc_unload(void)
{
	struct urxe_xrc_dom *d;

	while ((d = doms)) {
		doms = d->next;
		urxe_xs_unmap(d->f);
		close(d->fd);
		pthread_mutex_destroy(&d->lock);
		free(d);
	}
	free(views);
	views = NULL;
	nviews = views_cap = 0;
}

void urxe_xrc_after_fork_child(void)
{
	struct urxe_xrc_dom *d;

	/*
	 * The parent's engine thread takes these (routing requests, the
	 * host watch) and did not come along: re-initialise, never take.
	 * The inherited domains are the dead instances'; a new instance
	 * maps its own.
	 */
	pthread_mutex_init(&doms_lock, NULL);
	pthread_mutex_init(&views_lock, NULL);
	for (d = doms; d; d = d->next)
		pthread_mutex_init(&d->lock, NULL);
}

int urxe_xrc_view_add(struct urxe_dev *dev, struct urxe_xrc_dom *d,
		      struct urxe_eqp *qp)
{
	int rc = 0;

	pthread_mutex_lock(&views_lock);
	if (nviews == views_cap) {
		unsigned int cap = views_cap ? 2 * views_cap : 8;
		struct xs_view *v = realloc(views, cap * sizeof(*v));

		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		views = v;
		views_cap = cap;
	}
	views[nviews++] = (struct xs_view){ .dev = dev, .dom = d, .qp = qp };
out:
	pthread_mutex_unlock(&views_lock);
	return rc;
}

bool urxe_xrc_view_del(struct urxe_dev *dev, struct urxe_eqp *qp)
{
	unsigned int i, left = 0;
	bool found = false;

	pthread_mutex_lock(&views_lock);
	for (i = 0; i < nviews; i++) {
		if (views[i].qp == qp) {
			views[i] = views[--nviews];
			found = true;
			i--;
			continue;
		}
		if (views[i].dev == dev)
			left++;
	}
	pthread_mutex_unlock(&views_lock);
	if (found && !left)
		urxe_engine_xrc_watch(dev->eng, false);
	return found;
}

/* A hidden view of TGT QP @qpn, if a domain of ours has it; views_lock held. */
static struct urxe_eqp *hidden_view_new(struct urxe_dev *dev, uint32_t qpn)
{
	struct urxe_tgt_shared *st = NULL;
	struct urxe_xrc_dom *d;
	struct urxe_eqp *eqp;
	struct urxe_eqp_pub *qp;

	pthread_mutex_lock(&doms_lock);
	for (d = doms; d; d = d->next)
		if (d->dev == dev && (st = urxe_xrc_tgt_find(d, qpn)))
			break;
	pthread_mutex_unlock(&doms_lock);
	if (!st)
		return NULL;
	if (nviews == views_cap) {
		unsigned int cap = views_cap ? 2 * views_cap : 8;
		struct xs_view *v = realloc(views, cap * sizeof(*v));

		if (!v)
			return NULL;
		views = v;
		views_cap = cap;
	}
	if (urxe_engine_qp_new(NULL, &eqp))
		return NULL;
	qp = urxe_eqp_pub(eqp);
	qp->eng = dev->eng;
	qp->qpn = qpn;
	qp->type = IBV_QPT_XRC_RECV;
	qp->xrcd = d->domain_id;
	qp->shared = st;
	qp->sport = (uint16_t)(0xc000 | ((qpn * 2654435761u) >> 18));
	qp->attr.sgid = dev->gids[0];
	views[nviews++] = (struct xs_view){
		.dev = dev, .dom = d, .qp = eqp, .hidden = true,
	};
	urxe_dbg("%s: XRC: requests of TGT QP %u (another process's) arrive here",
		 dev->desc.name, qpn);
	return eqp;
}

struct urxe_eqp *urxe_xrc_view_find(struct urxe_dev *dev, uint32_t qpn)
{
	struct urxe_eqp *qp = NULL;
	unsigned int i;

	pthread_mutex_lock(&views_lock);
	for (i = 0; i < nviews; i++) {
		if (views[i].dev == dev && !views[i].failed &&
		    urxe_eqp_pub(views[i].qp)->qpn == qpn) {
			qp = views[i].qp;
			break;
		}
	}
	if (!qp)
		qp = hidden_view_new(dev, qpn);
	pthread_mutex_unlock(&views_lock);
	return qp;
}

static void hidden_views_drop(struct urxe_xrc_dom *d)
{
	struct urxe_eqp *gone[64];
	struct urxe_dev *dev = d->dev;
	unsigned int i, n;

	do {
		n = 0;
		pthread_mutex_lock(&views_lock);
		for (i = 0; i < nviews && n < 64; i++) {
			if (views[i].dom != d || !views[i].hidden)
				continue;
			gone[n++] = views[i].qp;
			views[i--] = views[--nviews];
		}
		pthread_mutex_unlock(&views_lock);
		/* Unfindable now; the engine lets go of them here. */
		for (i = 0; i < n; i++) {
			urxe_engine_qp_remove(dev->eng, gone[i]);
			urxe_engine_qp_free(gone[i]);
		}
	} while (n == 64);
}

void urxe_xrc_views_watch(struct urxe_dev *dev)
{
	unsigned int i;

	pthread_mutex_lock(&views_lock);
	for (i = 0; i < nviews; i++) {
		struct xs_view *v = &views[i];
		struct urxe_eqp_pub *qp = urxe_eqp_pub(v->qp);

		if (v->dev != dev || v->failed || !v->dom ||
		    urxe_xrc_tgt_alive(v->dom, qp->shared, qp->qpn))
			continue;
		/* The host is gone (or destroyed the QP): nobody answers. */
		v->failed = true;
		urxe_info("XRC: TGT QP %u: its host process is gone; the QP is in error",
			  qp->qpn);
		urxe_engine_qp_fail(v->qp, IBV_EVENT_QP_FATAL);
	}
	pthread_mutex_unlock(&views_lock);
}

bool urxe_xrc_route(struct urxe_dev *dev, const struct urxe_eqp *qp,
		    uint32_t srqn, union ibv_gid *gid)
{
	const struct urxe_eqp_pub *q = urxe_eqp_cpub(qp);
	struct urxe_xrc_dom *d;
	bool found = false;

	if (!q->shared)
		return false;	/* a private domain: this process only */
	pthread_mutex_lock(&doms_lock);
	for (d = doms; d; d = d->next) {
		if (d->dev == dev && d->domain_id == q->xrcd) {
			found = urxe_xrc_srq_route(d, srqn, gid);
			break;
		}
	}
	pthread_mutex_unlock(&doms_lock);
	return found;
}

/* ---- the engine's operations (priv: the device instance) ---- */

bool urxe_xrc_op_route(void *priv, const struct urxe_eqp *qp, uint32_t srqn,
		       union ibv_gid *gid)
{
	return urxe_xrc_route(priv, qp, srqn, gid);
}

struct urxe_eqp *urxe_xrc_op_foreign(void *priv, uint32_t qpn)
{
	return urxe_xrc_view_find(priv, qpn);
}

void urxe_xrc_op_watch(void *priv)
{
	urxe_xrc_views_watch(priv);
}
