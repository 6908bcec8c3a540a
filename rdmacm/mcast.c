// SPDX-License-Identifier: BSD-2-Clause
/*
 * Multicast joins (rdma_join_multicast(3), rdma_leave_multicast(3)).
 *
 * On RoCEv2 a group is an IP multicast group: its MGID is the address
 * itself (an IPv4 group as ::ffff:a.b.c.d), there is no SA to ask, and
 * membership is the interface's IP membership.  A join therefore answers
 * at once: the id's UD QP (if it has one, and unless the join is
 * send-only) is attached to the MGID, which makes the device take the IP
 * group (docs/design.md, "Multicast"), and MULTICAST_JOIN reports the
 * group's address handle, QPN 0xffffff and the RDMA CM's Q_Key, with the
 * caller's context in param.ud.private_data, as Linux does.  Linux's
 * RoCEv2 joins only IPv4 groups; IPv6 groups work here as well.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_int.h"

struct cm_mc {
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	void *context;
	bool attached;				/* to id->qp */
	struct cm_mc *next;
};

static bool same_group(const struct sockaddr *a, const struct sockaddr *b)
{
	union ibv_gid ga, gb;

	if (a->sa_family != b->sa_family)
		return false;
	cm_gid_of(a, &ga);
	cm_gid_of(b, &gb);
	return !memcmp(ga.raw, gb.raw, sizeof(ga.raw));
}

CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	const uint32_t need = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			      RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	struct cm_id *cid;
	struct cm_event *e;
	struct cm_mc *mc;
	struct ibv_ah_attr *ah;
	int rc = 0;

	if (!id || !attr || (attr->comp_mask & need) != need ||
	    (attr->comp_mask & ~need) || !attr->addr ||
	    !cm_addr_len(attr->addr) || !cm_addr_multicast(attr->addr))
		return cm_err(EINVAL);
	if (attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if ((cid->state != ID_ADDR_BOUND && cid->state != ID_ADDR_RESOLVED) ||
	    !cid->dev) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EINVAL);
	}
	mc = calloc(1, sizeof(*mc));
	if (!mc) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(ENOMEM);
	}
	memcpy(&mc->addr, attr->addr, cm_addr_len(attr->addr));
	cm_gid_of(attr->addr, &mc->mgid);
	mc->context = context;
	if (id->qp && attr->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER) {
		rc = ibv_attach_mcast(id->qp, &mc->mgid, 0);
		mc->attached = !rc;
	}
	e = cm_event_new(cid, rc ? RDMA_CM_EVENT_MULTICAST_ERROR :
				   RDMA_CM_EVENT_MULTICAST_JOIN,
			 rc ? -rc : 0);
	if (!e) {
		if (mc->attached)
			ibv_detach_mcast(id->qp, &mc->mgid, 0);
		free(mc);
		pthread_mutex_unlock(&cm.lock);
		return cm_err(ENOMEM);
	}
	if (rc) {
		free(mc);
	} else {
		mc->next = cid->mcs;
		cid->mcs = mc;
		ah = &e->ev.param.ud.ah_attr;
		ah->is_global = 1;
		ah->port_num = 1;
		ah->grh.dgid = mc->mgid;
		ah->grh.sgid_index = cid->sgid_index;
		ah->grh.hop_limit = 64;		/* Linux: IPV6_DEFAULT_HOPLIMIT */
		ah->grh.traffic_class = cid->tos;
		e->ev.param.ud.qp_num = 0xffffff;
		e->ev.param.ud.qkey = CM_QKEY_UDP;
	}
	e->ev.param.ud.private_data = context;
	cm_event_post(cid, e);
	pthread_mutex_unlock(&cm.lock);
	return cm_wait(cid);
}

CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			     RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(id, &attr, context);
}

CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *cid;
	struct cm_mc **pp, *mc;

	if (!id || !addr || !cm_addr_len(addr))
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	for (pp = &cid->mcs; (mc = *pp); pp = &mc->next)
		if (same_group((struct sockaddr *)&mc->addr, addr))
			break;
	if (!mc) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EADDRNOTAVAIL);
	}
	*pp = mc->next;
	pthread_mutex_unlock(&cm.lock);
	if (mc->attached && id->qp)
		ibv_detach_mcast(id->qp, &mc->mgid, 0);
	free(mc);
	return 0;
}

/* The id goes: its groups with it (lock held). */
void cm_mc_leave_all(struct cm_id *cid)
{
	struct cm_mc *mc;

	while ((mc = cid->mcs)) {
		cid->mcs = mc->next;
		if (mc->attached && cid->id.qp)
			ibv_detach_mcast(cid->id.qp, &mc->mgid, 0);
		free(mc);
	}
}

/* The id's QP goes first: it leaves its groups, which stay joined. */
void cm_mc_qp_gone(struct cm_id *cid)
{
	struct cm_mc *mc;

	for (mc = cid->mcs; mc; mc = mc->next)
		if (mc->attached && cid->id.qp) {
			ibv_detach_mcast(cid->id.qp, &mc->mgid, 0);
			mc->attached = false;
		}
}
