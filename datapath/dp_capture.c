// SPDX-License-Identifier: BSD-2-Clause
/*
 * URXE_PCAP in the data path: each packet as it left (after fault
 * injection, with the IPv4 ID its ICRC assumed; a GSO frame's packets
 * one by one) and as it came in (a GRO datagram's packets one by one).
 * A loopback multicast send is recorded as a wire would show it: one
 * frame to the group, with a comment on the copies that stood in for it.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include <urxe/util.h>

#include "dp_int.h"

void dp_capture_sent(struct urxe_dp *dp, struct urxe_capture_pkt *c,
		     const struct iovec *iov, unsigned int n)
{
	static __thread uint8_t flat[DP_PKT_BUF];

	if (n == 1) {
		c->roce = iov->iov_base;
		c->len = (uint32_t)iov->iov_len;
	} else {
		c->roce = flat;
		c->len = (uint32_t)urxe_iov_gather(iov, n, flat, sizeof(flat));
	}
	urxe_capture_write(dp->cap, c);
}

void dp_capture_pkt(struct urxe_dp *dp, const struct urxe_frame_desc *o,
		    const struct iovec *iov, unsigned int n, uint16_t ip_id,
		    const char *note, uint64_t when_us)
{
	struct urxe_capture_pkt c = {
		.tx = true, .src = o->src, .dst = o->dst,
		.sport = dp->ops->sport(dp->b, o->sport),
		.dport = URXE_UDP_PORT, .tos = o->tos, .ttl = 64,
		.ip_id = ip_id, .comment = note, .when_us = when_us,
	};

	dp_capture_sent(dp, &c, iov, n);
}

void dp_capture_out(struct urxe_dp *dp, const struct urxe_frame_desc *o,
		    const struct dp_seg *segs, const char *note,
		    uint64_t when_us)
{
	unsigned int i, n = 0;

	if (!o->gso_size) {
		dp_capture_pkt(dp, o, o->iov, o->niov, o->ip_id, note, when_us);
		return;
	}
	for (i = 0; n < o->niov; i++) {
		dp_capture_pkt(dp, o, o->iov + segs[i].iov0, segs[i].niov,
			       (uint16_t)i, NULL, when_us);
		n = segs[i].iov0 + segs[i].niov;
	}
}

/*
 * A loopback multicast send, as a capture on a wire would show it: one
 * frame to the group (whose address its ICRC covers), not the unicast
 * copies to the @k members that stand in for IP multicast on loopback;
 * a comment says how it went.
 */
void dp_capture_mcast(struct urxe_dp *dp, const struct urxe_pkt *p,
		      unsigned int k, uint64_t when_us)
{
	struct urxe_frame_desc grp;
	char note[112];

	dp_frame_from_pkt(&grp, p);
	if (k)
		snprintf(note, sizeof(note),
			 "urxe mcast: sent on loopback as a unicast copy to each of the group's %u member%s",
			 k, k == 1 ? "" : "s");
	else
		snprintf(note, sizeof(note),
			 "urxe mcast: on loopback the group has no member: no copy sent");
	dp_capture_pkt(dp, &grp, p->iov, p->niov, 0, note, when_us);
}

/*
 * A received frame.  A loopback multicast copy (sent to this slot's
 * address) is recorded as the sender records it: to its group, with a
 * comment on how it came (dp_capture_mcast()).
 */
void dp_capture_rx(struct urxe_dp *dp, struct urxe_engine *eng,
		   const struct urxe_frame_desc *in,
		   const struct urxe_rx_meta *meta)
{
	struct urxe_capture_pkt c = {
		.tx = false, .src = in->src, .dst = in->dst, .sport = in->sport,
		.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
		.ip_id = in->ip_id, .roce = in->buf, .len = in->len,
	};
	struct urxe_rx_meta m = *meta;
	char note[128], a[INET6_ADDRSTRLEN];

	if (dp->lo_copies && dp->sink.mcast_group &&
	    dp->sink.mcast_group(eng, in->buf, in->len, meta, &m.dgid)) {
		if (urxe_gid_is_v4(in->dst))
			inet_ntop(AF_INET, in->dst + 12, a, sizeof(a));
		else
			inet_ntop(AF_INET6, in->dst, a, sizeof(a));
		snprintf(note, sizeof(note),
			 "urxe mcast: received on loopback as a unicast copy to %s", a);
		c.dst = m.dgid.raw;
		c.comment = note;
	}
	/* The ID the sender used, so that the captured ICRC checks. */
	if (!in->ip && in->len >= 16)
		urxe_icrc_rx_ipv4_id(in->buf, in->len, &m, &c.ip_id);
	urxe_capture_write(dp->cap, &c);
}
