// SPDX-License-Identifier: BSD-2-Clause
/*
 * Address handles: ibv_create_ah(3), ibv_destroy_ah(3), and the reply
 * path of a UD receive, ibv_init_ah_from_wc(3) / ibv_create_ah_from_wc(3).
 *
 * On RoCEv2 the 40 bytes in front of a UD receive hold the packet's IP
 * header: an IPv6 header, or 20 unused bytes and then the IPv4 header.
 * Which one is told apart as libibverbs does: the IPv6 version nibble
 * first, and where it reads 6, an IPv4 header (IHL 5) with a valid
 * checksum at byte 20 still wins.  The reply goes back to the packet's
 * source address, from the local GID that holds its destination address.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include <urxe/log.h>

#include "core.h"

#define GRH_IP4_OFF 20		/* the IPv4 header inside the 40-byte GRH */
#define IB_NEXT_HDR 0x1b	/* RoCE v1: the GRH's next header is a BTH */

URXE_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = NULL;
	int rc;

	if (!pd)
		return urxe_ret_null(-EINVAL, NULL);
	/* Two statements: argument evaluation order is unspecified. */
	rc = urxe_ah_create(ctx_dev(pd->context), pd, attr, &ah);
	return urxe_ret_null(rc, ah);
}

URXE_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return urxe_ret_errno(urxe_ah_destroy(ah));
}

/* The one's complement sum over the 20-byte header is 0xffff when valid. */
static bool ip4_csum_ok(const uint8_t *ip)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* 4 or 6 for the header in @grh, or -EPROTONOSUPPORT. */
static int grh_ip_version(const uint8_t *grh)
{
	const uint8_t *ip = grh + GRH_IP4_OFF;

	if (grh[0] >> 4 != 6)
		return ip[0] >> 4 == 4 ? 4 : -EPROTONOSUPPORT;
	/* Both could be: a checksummed IPv4 header is believed. */
	if (ip[0] == 0x45 && ip4_csum_ok(ip))
		return 4;
	return 6;
}

/* The index of the RoCE v2 GID @gid in @dev's table, or -ENOENT. */
static int find_gid_index(struct urxe_dev *dev, const union ibv_gid *gid)
{
	union ibv_gid g;
	uint32_t i;

	for (i = 0; i < URXE_GID_TBL_LEN; i++)
		if (!urxe_dev_query_gid(dev, 1, i, &g) &&
		    !memcmp(g.raw, gid->raw, sizeof(g.raw)))
			return (int)i;
	urxe_dbg("%s: no local GID is the address a UD packet came to",
		 dev->desc.name);
	return -ENOENT;
}

static int ah_attr_by_ipv4(struct urxe_dev *dev, const uint8_t *ip,
			   struct ibv_ah_attr *attr)
{
	union ibv_gid sgid;
	int idx;

	/* A multicast destination is no local GID to answer from. */
	if ((ip[16] & 0xf0) == 0xe0)
		return -EINVAL;
	urxe_gid_from_v4(sgid.raw, ip + 16);
	idx = find_gid_index(dev, &sgid);
	if (idx < 0)
		return idx;
	urxe_gid_from_v4(attr->grh.dgid.raw, ip + 12);
	attr->grh.sgid_index = (uint8_t)idx;
	attr->grh.hop_limit = ip[8];
	attr->grh.traffic_class = ip[1];
	return 0;
}

static int ah_attr_by_ipv6(struct urxe_dev *dev, const struct ibv_grh *grh,
			   struct ibv_ah_attr *attr)
{
	uint32_t vtf = be32toh(grh->version_tclass_flow);
	int idx;

	if (grh->dgid.raw[0] == 0xff)
		return -EINVAL;
	/* Every GID urxe has is RoCE v2: a v1 packet matches none of them. */
	if (grh->next_hdr == IB_NEXT_HDR)
		return -ENOENT;
	if (grh->next_hdr != IPPROTO_UDP)
		return -EPROTONOSUPPORT;
	idx = find_gid_index(dev, &grh->dgid);
	if (idx < 0)
		return idx;
	attr->grh.dgid = grh->sgid;
	attr->grh.sgid_index = (uint8_t)idx;
	attr->grh.hop_limit = grh->hop_limit;
	attr->grh.traffic_class = (uint8_t)(vtf >> 20);
	return 0;
}

static int init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
			   const struct ibv_wc *wc, const struct ibv_grh *grh,
			   struct ibv_ah_attr *attr)
{
	struct urxe_dev *dev;
	int ver;

	if (!ctx || !wc || !grh || !attr)
		return -EINVAL;
	dev = ctx_dev(ctx);
	memset(attr, 0, sizeof(*attr));
	attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	attr->dlid = wc->slid;
	attr->sl = wc->sl;
	attr->src_path_bits = wc->dlid_path_bits;
	attr->port_num = port_num;
	if (port_num != 1)
		return -EINVAL;
	/*
	 * Every RoCE path needs a GRH.  libibverbs answers 0 with
	 * is_global 0 here and ibv_create_ah then fails with EINVAL; the
	 * kernel's ib_init_ah_attr_from_wc fails at once, as urxe does.
	 */
	if (!(wc->wc_flags & IBV_WC_GRH))
		return -EINVAL;
	attr->is_global = 1;
	ver = grh_ip_version((const uint8_t *)grh);
	if (ver == 4)
		return ah_attr_by_ipv4(dev, (const uint8_t *)grh + GRH_IP4_OFF,
				       attr);
	if (ver == 6)
		return ah_attr_by_ipv6(dev, grh, attr);
	return ver;
}

URXE_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				    uint8_t port_num, struct ibv_wc *wc,
				    struct ibv_grh *grh,
				    struct ibv_ah_attr *ah_attr)
{
	return urxe_ret_minus1(init_ah_from_wc(context, port_num, wc, grh,
					       ah_attr));
}

URXE_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						 struct ibv_wc *wc,
						 struct ibv_grh *grh,
						 uint8_t port_num)
{
	struct ibv_ah_attr attr;
	struct ibv_ah *ah = NULL;
	int rc;

	if (!pd)
		return urxe_ret_null(-EINVAL, NULL);
	rc = init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
	if (!rc)
		rc = urxe_ah_create(ctx_dev(pd->context), pd, &attr, &ah);
	return urxe_ret_null(rc, ah);
}
