// SPDX-License-Identifier: BSD-2-Clause
/*
 * Multicast in the data path.  On loopback the udp backend has no IP
 * multicast between slots: an instance joins a group in the host-wide
 * registry (host/mcast.c), and a sender sends a unicast copy of each
 * group packet to every member slot.  On a real interface (or with a
 * backend whose frames reach every instance) the backend joins itself
 * (the provider decides which: rxe_provider/mcast.c).
 */
#include <errno.h>

#include <urxe/util.h>

#include "dp_int.h"

int urxe_dp_mcast(struct urxe_dp *dp, const uint8_t gid[16], bool join)
{
	if (!dp || !dp->b)
		return -ENOTCONN;
	return dp->ops->mcast(dp->b, gid, join);
}

bool dp_mcast_pkt(const struct urxe_dp *dp, const struct urxe_pkt *p)
{
	return dp->lo_copies && urxe_gid_is_mcast(p->dgid.raw);
}

/*
 * The copies keep the packet as the engine built it, ICRC included: it
 * was computed for the group address, which tells the receiver the group
 * (qp_engine/mcast.c).  Their addresses in @dst (at most @max, 64);
 * returns how many.
 */
unsigned int dp_mcast_copies(struct urxe_dp *dp, const struct urxe_pkt *p,
			     union ibv_gid *dst, unsigned int max)
{
	unsigned int idx[64], i;
	struct in_addr a;
	int n;

	if (max > 64)
		max = 64;
	n = urxe_mcast_members(dp->rundir, p->dgid.raw, idx, max);
	for (i = 0; n > 0 && i < (unsigned int)n; i++) {
		a = urxe_slot_loopback_addr(idx[i]);
		urxe_gid_from_v4(dst[i].raw, &a);
	}
	return n > 0 ? (unsigned int)n : 0;
}
