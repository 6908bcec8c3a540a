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

int urxe_av_resolve(struct urxe_dev *dev, const struct ibv_ah_attr *av,
		    struct urxe_path *out)
{
	const struct ibv_global_route *grh = &av->grh;
	union ibv_gid sgid;
	int rc;

	if (av->port_num != 1) {
		urxe_dbg("%s: AV port %u: the device has one port, 1",
			 dev->desc.name, av->port_num);
		return -EINVAL;
	}
	if (!av->is_global) {
		urxe_warn("%s: RoCE needs a GRH in every address (is_global=1): pass a GID index (-g/-x, --gid)",
			  dev->desc.name);
		return -EINVAL;
	}
	rc = urxe_dev_query_gid(dev, 1, grh->sgid_index, &sgid);
	if (rc) {
		urxe_warn("%s: source GID index %u is %s", dev->desc.name,
			  grh->sgid_index, rc == -ENODATA ? "empty" : "out of range");
		return -EINVAL;
	}
	/* One IP family per packet: an IPv4 source cannot reach an IPv6 GID. */
	if (urxe_gid_is_v4(sgid.raw) != urxe_gid_is_v4(grh->dgid.raw)) {
		urxe_warn("%s: GID index %u is %s, the destination GID is not",
			  dev->desc.name, grh->sgid_index,
			  urxe_gid_is_v4(sgid.raw) ? "IPv4" : "IPv6");
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
