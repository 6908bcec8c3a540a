// SPDX-License-Identifier: BSD-2-Clause
/*
 * Multicast attachments and delivery (IBA 10.5.2.3, 9.8.3 for UD).  The
 * engine keeps one flat list of (group, QP) pairs, under the progress
 * lock; a SEND to QPN 0xFFFFFF goes to each QP attached to its group, as
 * kernel rxe's rxe_rcv_mcast_pkt does.  Where the group comes from: the
 * IP destination when that is a multicast address (a real interface);
 * else (the loopback registry sent a unicast copy to this slot's address)
 * the attached group whose address makes the ICRC check — the sender
 * computed it for the group, as for the wire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/icrc.h>

#include "engine_int.h"

static bool is_mcast_gid(const union ibv_gid *g)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(g->raw, v4, 12))
		return (g->raw[12] & 0xf0) == 0xe0;	/* 224.0.0.0/4 */
	return g->raw[0] == 0xff;			/* ff00::/8 */
}

static unsigned int count(struct urxe_engine *eng, const union ibv_gid *gid,
			  const struct urxe_eqp *qp, bool *found)
{
	unsigned int i, n = 0;

	*found = false;
	for (i = 0; i < eng->mcast.nmc; i++) {
		if (memcmp(eng->mcast.mc[i].gid.raw, gid->raw, 16))
			continue;
		n++;
		if (eng->mcast.mc[i].qp == qp)
			*found = true;
	}
	return n;
}

static unsigned int groups(struct urxe_engine *eng)
{
	unsigned int i, k, n = 0;

	for (i = 0; i < eng->mcast.nmc; i++) {
		for (k = 0; k < i; k++)
			if (!memcmp(eng->mcast.mc[k].gid.raw,
				    eng->mcast.mc[i].gid.raw, 16))
				break;
		n += k == i;
	}
	return n;
}

static int attach_locked(struct urxe_engine *eng, struct urxe_eqp *qp,
			 const union ibv_gid *gid, unsigned int max_grp,
			 unsigned int max_qp)
{
	struct urxe_mcast_att *mc;
	unsigned int n;
	bool found;

	n = count(eng, gid, qp, &found);
	if (found)
		return 0;
	if ((!n && groups(eng) >= max_grp) || n >= max_qp)
		return -ENOMEM;
	if (eng->mcast.nmc == eng->mcast.mc_cap) {
		mc = realloc(eng->mcast.mc,
			     (eng->mcast.mc_cap * 2 + 4) * sizeof(*mc));
		if (!mc)
			return -ENOMEM;
		eng->mcast.mc = mc;
		eng->mcast.mc_cap = eng->mcast.mc_cap * 2 + 4;
	}
	eng->mcast.mc[eng->mcast.nmc].gid = *gid;
	eng->mcast.mc[eng->mcast.nmc].qp = qp;
	eng->mcast.nmc++;
	return n == 0;
}

int urxe_engine_mcast_attach(struct urxe_eqp *qp, const union ibv_gid *gid,
			     unsigned int max_grp, unsigned int max_qp)
{
	struct urxe_engine *eng = qp->eng;
	int rc;

	pthread_mutex_lock(&eng->lock);
	rc = attach_locked(eng, qp, gid, max_grp, max_qp);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

static int detach_locked(struct urxe_engine *eng, struct urxe_eqp *qp,
			 const union ibv_gid *gid)
{
	unsigned int i;
	bool found;

	for (i = 0; i < eng->mcast.nmc; i++) {
		if (eng->mcast.mc[i].qp == qp &&
		    !memcmp(eng->mcast.mc[i].gid.raw, gid->raw, 16))
			break;
	}
	if (i == eng->mcast.nmc)
		return -EINVAL;
	eng->mcast.mc[i] = eng->mcast.mc[--eng->mcast.nmc];
	return count(eng, gid, NULL, &found) == 0;
}

int urxe_engine_mcast_detach(struct urxe_eqp *qp, const union ibv_gid *gid)
{
	struct urxe_engine *eng = qp->eng;
	int rc;

	pthread_mutex_lock(&eng->lock);
	rc = detach_locked(eng, qp, gid);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

int urxe_engine_mcast_first(struct urxe_eqp *qp, union ibv_gid *gid)
{
	struct urxe_engine *eng = qp->eng;
	int rc = -ENOENT;
	unsigned int i;

	pthread_mutex_lock(&eng->lock);
	for (i = 0; i < eng->mcast.nmc; i++) {
		if (eng->mcast.mc[i].qp == qp) {
			*gid = eng->mcast.mc[i].gid;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

void urxe_mcast_qp_gone(struct urxe_engine *eng, struct urxe_eqp *qp)
{
	unsigned int i = 0;

	while (i < eng->mcast.nmc) {
		if (eng->mcast.mc[i].qp == qp)
			eng->mcast.mc[i] = eng->mcast.mc[--eng->mcast.nmc];
		else
			i++;
	}
}

/* The group this packet went to, its ICRC checked; false: drop it. */
static bool find_group(struct urxe_engine *eng, const uint8_t *roce,
		       uint32_t len, struct urxe_rx_meta *m)
{
	unsigned int i;

	if (is_mcast_gid(&m->dgid))
		return urxe_icrc_check_rx(roce, len, m, &eng->icrc_ids);
	for (i = 0; i < eng->mcast.nmc; i++) {
		m->dgid = eng->mcast.mc[i].gid;
		if (urxe_icrc_check_rx_exact(roce, len, m))
			return true;
	}
	return false;
}

/*
 * For captures: a loopback copy is recorded as what it stands for, the
 * datagram to its group, found as delivery finds it (an exact ICRC).
 */
bool urxe_engine_mcast_group(struct urxe_engine *eng, const uint8_t *roce,
			     uint32_t len, const struct urxe_rx_meta *meta,
			     union ibv_gid *group)
{
	struct urxe_rx_meta m = *meta;

	if (len < URXE_BTH_LEN + URXE_ICRC_LEN || is_mcast_gid(&m.dgid) ||
	    urxe_get24(roce + 5) != URXE_MCAST_QPN ||
	    !find_group(eng, roce, len, &m))
		return false;
	*group = m.dgid;
	return true;
}

void urxe_mcast_input(struct urxe_engine *eng, const struct urxe_bth *bth,
		      const struct urxe_opinfo *oi, const uint8_t *roce,
		      uint32_t len, uint32_t paylen,
		      const struct urxe_rx_meta *meta)
{
	struct urxe_rx_meta m = *meta;
	unsigned int i;
	bool any = false;

	/* IBA 10.5.2.3: only UD SENDs are multicast. */
	if (urxe_opcode_transport(bth->opcode) != URXE_TR_UD ||
	    !eng->mcast.nmc) {
		urxe_count(eng, URXE_CNT_DROPPED_NO_QP, 1);
		return;
	}
	if (!find_group(eng, roce, len, &m)) {
		urxe_count(eng, URXE_CNT_DROPPED_ICRC, 1);
		return;
	}
	/* Delivery may not change the list: it only completes receives. */
	for (i = 0; i < eng->mcast.nmc; i++) {
		struct urxe_eqp *qp = eng->mcast.mc[i].qp;

		if (memcmp(eng->mcast.mc[i].gid.raw, m.dgid.raw, 16))
			continue;
		any = true;
		qp->cnt[URXE_CNT_RCVD_PKTS]++;
		eng->ctr.acct = qp;
		urxe_resp_input(qp, bth, oi, roce, paylen, &m);
		eng->ctr.acct = NULL;
	}
	if (!any)
		urxe_count(eng, URXE_CNT_DROPPED_NO_QP, 1);
}
