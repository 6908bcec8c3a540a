// SPDX-License-Identifier: BSD-2-Clause
/*
 * Address handles and the RoCE path checks they share with a QP's primary
 * AV.  On RoCE every path carries a GRH (the port says
 * IBV_QPF_GRH_REQUIRED): the GIDs are the IP addresses, so an AV without
 * one names no destination at all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

static atomic_uint next_handle = 1;

static struct urxe_ratelimit no_grh_rl, bad_sgid_rl;

/*
 * An address without a GRH.  Programs such as ibv_rc_pingpong set
 * is_global only when the peer's GID is not zero, and an empty GID entry
 * reads as zero: so `-g 3` on both sides ends here, not at the index.
 */
static void no_grh(struct urxe_dev *dev)
{
	unsigned int empty = atomic_load(&dev->gid_empty_read);
	char hint[256];

	if (!urxe_log_ratelimit(&no_grh_rl, URXE_LOG_WARN))
		return;
	urxe_dev_gid_hint(dev, hint, sizeof(hint));
	if (empty)
		urxe_warn("%s: GID index %u does not exist %s (it reads as GID ::, so the address got no GRH: is_global 0)",
			  dev->desc.name, empty - 1, hint);
	else
		urxe_warn("%s: an address without a GRH (is_global 0), which RoCE needs: pass a GID index %s",
			  dev->desc.name, hint);
}

int urxe_av_resolve(struct urxe_dev *dev, const struct ibv_ah_attr *av,
		    struct urxe_path *out)
{
	const struct ibv_global_route *grh = &av->grh;
	union ibv_gid sgid;
	char hint[256];
	int rc;

	if (av->port_num != 1) {
		urxe_dbg("%s: AV port %u: the device has one port, 1",
			 dev->desc.name, av->port_num);
		return -EINVAL;
	}
	if (!av->is_global) {
		no_grh(dev);
		return -EINVAL;
	}
	rc = urxe_dev_query_gid(dev, 1, grh->sgid_index, &sgid);
	if (rc) {
		if (urxe_log_ratelimit(&bad_sgid_rl, URXE_LOG_WARN)) {
			urxe_dev_gid_hint(dev, hint, sizeof(hint));
			urxe_warn("%s: source GID index %u does not exist %s",
				  dev->desc.name, grh->sgid_index, hint);
		}
		return -EINVAL;
	}
	/* One IP family per packet: an IPv4 source cannot reach an IPv6 GID. */
	if (urxe_gid_is_v4(sgid.raw) != urxe_gid_is_v4(grh->dgid.raw)) {
		bool v4 = urxe_gid_is_v4(sgid.raw);

		urxe_warn("%s: source GID index %u is %s, the destination GID is %s: pick a source GID of the destination's family (on lo every GID is IPv4)",
			  dev->desc.name, grh->sgid_index, v4 ? "IPv4" : "IPv6",
			  v4 ? "IPv6" : "IPv4");
		return -EINVAL;
	}
	out->dgid = grh->dgid;
	out->sgid = sgid;
	out->tclass = grh->traffic_class;
	out->hop_limit = grh->hop_limit;
	out->flow_label = grh->flow_label & 0xfffff;
	return 0;
}

int urxe_ah_create(struct urxe_dev *dev, struct ibv_pd *pd,
		   const struct ibv_ah_attr *attr, struct ibv_ah **out)
{
	struct urxe_path path;
	struct urxe_ah *ah;
	int rc;

	if (!pd || !attr)
		return -EINVAL;
	if (dev->dead)
		return -EIO;
	rc = urxe_av_resolve(dev, attr, &path);
	if (rc)
		return rc;
	/* An AH is made to send: the sockets must exist from now on. */
	rc = urxe_dev_bind(dev);
	if (rc)
		return rc;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->ibv.handle = atomic_fetch_add(&next_handle, 1);
	ah->dgid = path.dgid;
	ah->sgid = path.sgid;
	ah->tclass = path.tclass;
	ah->hop_limit = path.hop_limit;
	ah->flow_label = path.flow_label;
	atomic_fetch_add(&to_upd(pd)->users, 1);
	*out = &ah->ibv;
	return 0;
}

int urxe_ah_destroy(struct ibv_ah *ibah)
{
	struct urxe_ah *ah;

	if (!ibah)
		return -EINVAL;
	ah = to_uah(ibah);
	atomic_fetch_sub(&to_upd(ibah->pd)->users, 1);
	free(ah);
	return 0;
}
