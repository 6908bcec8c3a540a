// SPDX-License-Identifier: BSD-2-Clause
/*
 * Captured frame -> RoCEv2 packet: the link layers tcpdump, tshark and
 * URXE_PCAP write (Ethernet with or without a VLAN tag, Linux cooked v1
 * and v2, raw IP, BSD loopback), IPv4 without fragments, IPv6 without
 * extension headers, UDP to port 4791 (IBA Annex A17.2.1).
 */
#include <pcap/pcap.h>
#include <string.h>

#include <urxe/icrc.h>
#include <urxe/util.h>
#include <urxe/wire.h>

#include "frame.h"

/* The offset of the IP header in a frame of link type @dlt; -1 if unknown. */
static int l3_offset(int dlt, const uint8_t *p, uint32_t caplen)
{
	switch (dlt) {
	case DLT_EN10MB:
		if (caplen >= 18 && urxe_get16(p + 12) == 0x8100)
			return 18;
		return 14;
	case DLT_LINUX_SLL:
		return 16;
	case DLT_LINUX_SLL2:
		return 20;
	case DLT_RAW:
		return 0;
	case DLT_NULL:
		return 4;
	default:
		return -1;
	}
}

static void set_gids(struct urxe_frame *f)
{
	if (f->v6) {
		memcpy(f->src, f->ip + 8, 16);
		memcpy(f->dst, f->ip + 24, 16);
		return;
	}
	urxe_gid_from_v4(f->src, f->ip + 12);
	urxe_gid_from_v4(f->dst, f->ip + 16);
}

int urxe_frame_locate(int dlt, const uint8_t *p, uint32_t caplen,
		      struct urxe_frame *f)
{
	int off = l3_offset(dlt, p, caplen);
	const uint8_t *ip;

	if (off < 0 || caplen < (uint32_t)off + 20)
		return 0;
	ip = p + off;
	f->rest = caplen - (uint32_t)off;
	f->ip = ip;
	f->v6 = (ip[0] >> 4) == 6;
	if (f->v6) {
		if (f->rest < 48 || ip[6] != 17 ||
		    urxe_get16(ip + 4) != f->rest - 40)
			return 0;
		f->ip_len = 40;
	} else {
		if ((ip[0] >> 4) != 4 || ip[9] != 17)
			return 0;
		f->ip_len = (ip[0] & 0xf) * 4u;
		if (f->rest < f->ip_len + 8 || urxe_get16(ip + 6) & 0x3fff)
			return 0;	/* fragments are not RoCE */
	}
	f->udp = ip + f->ip_len;
	if (urxe_get16(f->udp + 2) != URXE_ROCE_UDP_PORT)
		return 0;
	f->roce = f->udp + 8;
	f->roce_len = f->rest - f->ip_len - 8;
	if (urxe_get16(f->udp + 4) >= 8 &&
	    urxe_get16(f->udp + 4) - 8u < f->roce_len)
		f->roce_len = urxe_get16(f->udp + 4) - 8u;
	set_gids(f);
	return 1;
}

bool urxe_frame_whole(const struct urxe_frame *f)
{
	return urxe_get16(f->udp + 4) == f->rest - f->ip_len;
}

bool urxe_frame_icrc_ok(const struct urxe_frame *f)
{
	struct urxe_icrc c;

	if (f->roce_len < URXE_BTH_LEN + URXE_ICRC_LEN)
		return false;
	urxe_icrc_begin(&c, f->ip, f->ip_len, f->udp, f->roce);
	urxe_icrc_update(&c, f->roce + URXE_BTH_LEN,
			 f->roce_len - URXE_BTH_LEN - URXE_ICRC_LEN);
	return urxe_icrc_end(&c) == urxe_icrc_load(f->roce + f->roce_len -
						   URXE_ICRC_LEN);
}
