// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_attach_mcast(3) and ibv_detach_mcast(3) for UD QPs.  The engine
 * keeps the (group, QP) pairs and delivers; here the checks the kernel's
 * ib_attach_mcast() and rxe make, and, on loopback, the host-wide
 * registry (host/mcast.c) that tells senders which slots to copy a
 * group's packets to, on a real interface the receive socket's IP
 * membership (the packet backend: a socket of its own joins, and the
 * ring takes the frames): an instance joins a group with its first QP
 * attached to it and leaves with its last.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

static bool gid_is_mcast(const union ibv_gid *g)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(g->raw, v4, 12))
		return (g->raw[12] & 0xf0) == 0xe0;	/* 224.0.0.0/4 */
	return g->raw[0] == 0xff;			/* ff00::/8 */
}

static bool dev_loopback(struct urxe_dev *dev)
{
	bool lo;

	pthread_mutex_lock(&dev->lock);
	lo = dev->iface.loopback;
	pthread_mutex_unlock(&dev->lock);
	return lo;
}

/*
 * Serialises attach and detach in the process, so that an instance's
 * join of a group (its first QP) and leave (its last) happen in the order
 * of the engine's list changes.
 */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

/* In a fork()ed child: whoever held it did not come along. */
void urxe_mcast_after_fork_child(void)
{
	pthread_mutex_init(&attach_lock, NULL);
}

/*
 * The instance joins or leaves @gid: on loopback in the registry, on a
 * real interface on its receive socket (IP multicast through the kernel).
 */
static int instance_group(struct urxe_dev *dev, const union ibv_gid *gid,
			  bool join)
{
	/* Inherited across fork(): the parent's memberships stay its own. */
	if (dev->dead)
		return join ? -EIO : 0;
	if (!dev_loopback(dev))
		return urxe_dp_mcast(dev->dp, gid->raw, join);
	if (join)
		return urxe_mcast_join(dev->desc.rundir, &dev->slot, gid->raw);
	return urxe_mcast_leave(dev->desc.rundir, &dev->slot, gid->raw);
}

/*
 * What attach and detach both check first: ib_attach_mcast() and
 * ib_detach_mcast() take UD QPs and multicast GIDs only, and a dead
 * instance answers EIO as every verb of it.  Sets *@out.
 */
static int mcast_verb_check(struct ibv_qp *ibqp, const union ibv_gid *gid,
			    struct urxe_qp **out)
{
	if (!ibqp || !gid)
		return -EINVAL;
	if (ibqp->qp_type != IBV_QPT_UD || !gid_is_mcast(gid))
		return -EINVAL;
	*out = to_uqp(ibqp);
	return (*out)->dev->dead ? -EIO : 0;
}

int urxe_qp_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid)
{
	struct urxe_qp *qp;
	int rc = mcast_verb_check(ibqp, gid, &qp);

	if (rc)
		return rc;
	/* A QP binds the sockets: they are there. */
	if (!urxe_dp_bound(qp->dev->dp))
		return -ENOTCONN;
	pthread_mutex_lock(&attach_lock);
	rc = urxe_engine_mcast_attach(qp->eobj, gid, URXE_MAX_MCAST_GRP,
				      URXE_MAX_MCAST_QP_ATTACH);
	if (rc == 1) {
		/* The group is new here: the instance joins it. */
		rc = instance_group(qp->dev, gid, true);
		if (rc)
			urxe_engine_mcast_detach(qp->eobj, gid);
	}
	pthread_mutex_unlock(&attach_lock);
	return rc == -ENOSPC || rc == -ENOBUFS ? -ENOMEM : rc;
}

int urxe_qp_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid)
{
	struct urxe_qp *qp;
	int rc = mcast_verb_check(ibqp, gid, &qp);

	if (rc)
		return rc;
	pthread_mutex_lock(&attach_lock);
	rc = urxe_engine_mcast_detach(qp->eobj, gid);
	/* The group's last QP here left: so does the instance. */
	if (rc == 1)
		instance_group(qp->dev, gid, false);
	pthread_mutex_unlock(&attach_lock);
	return rc < 0 ? rc : 0;
}

void urxe_qp_mcast_detach_all(struct urxe_qp *qp)
{
	union ibv_gid gid;

	pthread_mutex_lock(&attach_lock);
	while (!urxe_engine_mcast_first(qp->eobj, &gid)) {
		if (urxe_engine_mcast_detach(qp->eobj, &gid) == 1)
			instance_group(qp->dev, &gid, false);
	}
	pthread_mutex_unlock(&attach_lock);
}
