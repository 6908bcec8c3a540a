// SPDX-License-Identifier: BSD-2-Clause
/*
 * GSO on the packet backend: super-frames through PACKET_VNET_HDR.
 *
 * Sending, a run of equal-sized RoCE packets of one flow becomes one
 * frame in the TX ring behind a struct virtio_net_hdr asking for UDP GSO
 * (VIRTIO_NET_HDR_GSO_UDP_L4, the segment size, a partial UDP checksum
 * from csum_start/csum_offset): one Ethernet, IP and UDP header, then the
 * packets back to back.  The kernel (or the device) cuts it into one
 * datagram a packet, each with a real UDP checksum (RoCEv2 allows it; the
 * ICRC masks it) and, over IPv4, the super-frame's ID plus the segment's
 * index: ID 0 + i, for which segment i's ICRC is corrected here, in the
 * ring's copy.
 *
 * Receiving, the ring's frames come behind such a header too: a frame
 * that crossed a veth (or lo) whole — a GSO send of a udp or packet end
 * — says so, and is split into its packets by the segment size, each
 * given IP and UDP headers of its own (lengths, ID base + i) so that the
 * ICRC check sees what a segmented packet would carry.
 *
 * The kernel takes UDP GSO in a virtio_net_hdr from 6.2 on; before, the
 * option and the rings work but such a frame is refused: asked once a
 * process, by sending one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <urxe/icrc.h>
#include <urxe/ipudp.h>
#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5	/* Linux 6.2's uapi */
#endif
#define GSO_MAX_SEGS 64			/* the kernel takes up to 128 */
#define DISCARD_PORT 9

_Static_assert(sizeof(struct virtio_net_hdr) == URXE_PACKET_VNET_LEN,
	       "the header the rings carry");

static uint32_t iov_bytes(const struct urxe_frame_desc *o)
{
	return (uint32_t)urxe_iov_len(o->iov, o->niov);
}

/* ---- the probe ---- */

static bool version_at_least(unsigned int maj, unsigned int min)
{
	struct utsname u;
	unsigned int a = 0, b = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u", &a, &b) != 2)
		return false;
	return a > maj || (a == maj && b >= min);
}

/*
 * Two 8-byte segments to 127.0.0.1's discard port, sent on lo: accepted
 * (or refused with EINVAL, as before 6.2) by the same code that reads
 * the TX ring's headers.  When lo cannot carry it (down in a fresh
 * namespace), the kernel's version answers.
 */
static bool probe(void)
{
	uint8_t f[URXE_PACKET_VNET_LEN + 14 + 20 + 8 + 16] = { 0 };
	static const uint8_t lo[16] = {		/* 127.0.0.1 */
		[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1,
	};
	struct urxe_ipudp h = {
		.src = lo, .dst = lo, .ttl = 64,
		.sport = DISCARD_PORT, .dport = DISCARD_PORT,
	};
	struct virtio_net_hdr v = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4,
		.hdr_len = 14 + 20 + 8,
		.gso_size = 8,
		.csum_start = 14 + 20,
		.csum_offset = 6,
	};
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_IP),
		.sll_ifindex = (int)if_nametoindex("lo"),
		.sll_halen = 6,
	};
	uint8_t *e = f + URXE_PACKET_VNET_LEN, *ip = e + 14, *udp = ip + 20;
	int fd, one = 1, err = 0;
	uint32_t s;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one))) {
		close(fd);
		return false;
	}
	memcpy(f, &v, sizeof(v));
	urxe_put16(e + 12, ETH_P_IP);
	urxe_ipudp_build(ip, &h, udp + 8, 16);
	/* A partial checksum: the pseudo-header's sum. */
	s = urxe_csum_pseudo(ip, true, 8 + 16);
	urxe_put16(udp + 6, urxe_csum_fold(s));
	if (sendto(fd, f, sizeof(f), MSG_DONTWAIT, (struct sockaddr *)&ll,
		   sizeof(ll)) < 0)
		err = errno;
	close(fd);
	if (!err)
		return true;
	if (err == EINVAL)
		return false;
	return version_at_least(6, 2);
}

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_result;

static void probe_run(void)
{
	probe_result = probe();
	urxe_dbg("packet backend: the kernel %s UDP GSO through PACKET_VNET_HDR",
		 probe_result ? "takes" : "does not take");
}

bool urxe_packet_gso_probe(void)
{
	pthread_once(&probe_once, probe_run);
	return probe_result;
}

/* ---- sending ---- */

/* The destination QPN (XRC requests: the SRQ number), or ~0 if unknown. */
static uint32_t dest_of(const struct urxe_frame_desc *o)
{
	const uint8_t *b = o->iov[0].iov_base;
	size_t n = o->iov[0].iov_len;
	unsigned int at = 5;

	if (n < 12)
		return ~0u;
	if ((b[0] & 0xe0) == 0xa0 && ((b[0] & 0x1f) < 0x0d ||
				      (b[0] & 0x1f) > 0x12)) {
		if (n < 16)
			return ~0u;
		at = 13;
	}
	return (uint32_t)(b[0] & 0xe0) << 24 | (uint32_t)b[at] << 16 |
	       (uint32_t)b[at + 1] << 8 | b[at + 2];
}

unsigned int urxe_packet_gso_run(const struct urxe_frame_desc *o,
				 unsigned int n, size_t room)
{
	uint32_t seg = iov_bytes(&o[0]), total = seg, len, d0;
	size_t max = room < 65000 ? room : 65000;
	unsigned int m;

	if (n < 2 || !o[0].niov || (d0 = dest_of(&o[0])) == ~0u)
		return 1;
	for (m = 1; m < n && m < GSO_MAX_SEGS; m++) {
		const struct urxe_frame_desc *x = &o[m];

		len = iov_bytes(x);
		if (len > seg || !len || total + len > max ||
		    x->sport != o[0].sport || x->tos != o[0].tos ||
		    memcmp(x->dst, o[0].dst, 16) ||
		    memcmp(x->src, o[0].src, 16) || dest_of(x) != d0)
			break;
		total += len;
		if (len < seg)
			return m + 1;		/* a shorter one ends the run */
	}
	return m;
}

int urxe_packet_build_gso(const uint8_t dmac[6], const uint8_t smac[6],
			  const struct urxe_frame_desc *o, unsigned int m,
			  uint8_t *f, size_t cap, unsigned int mtu)
{
	struct virtio_net_hdr v = { 0 };
	uint8_t *e = f + URXE_PACKET_VNET_LEN, *ip = e + 14, *udp, *at;
	bool v4 = urxe_gid_is_v4(o->dst) && urxe_gid_is_v4(o->src);
	size_t ip_len = v4 ? 20 : 40, hl = 14 + ip_len + 8, end;
	uint32_t seg, len, total, s;
	unsigned int i;
	int rc;

	if (cap < URXE_PACKET_VNET_LEN)
		return -EMSGSIZE;
	rc = urxe_packet_build(dmac, smac, o, e, cap - URXE_PACKET_VNET_LEN,
			       mtu);
	if (rc < 0 || m < 2) {
		memcpy(f, &v, sizeof(v));
		return rc < 0 ? rc : rc + URXE_PACKET_VNET_LEN;
	}
	udp = ip + ip_len;
	seg = iov_bytes(o);
	end = (size_t)rc;
	total = seg;
	for (i = 1; i < m; i++) {
		len = iov_bytes(&o[i]);
		if (len > seg || URXE_PACKET_VNET_LEN + end + len > cap ||
		    ip_len + 8 + total + len > 0xffff)
			return -EMSGSIZE;
		at = e + end;
		at += urxe_iov_gather(o[i].iov, o[i].niov, at, len);
		/* Segment i leaves with IPv4 ID i: its ICRC must say so. */
		if (v4 && len >= 4)
			urxe_xor_le32(at - 4, urxe_icrc_ipv4_id_delta(len,
							(uint16_t)i));
		end += len;
		total += len;
	}
	/* The super-frame's lengths; the kernel sets each segment's. */
	urxe_put16(udp + 4, (uint16_t)(8 + total));
	if (v4) {
		urxe_put16(ip + 2, (uint16_t)(20 + 8 + total));
		urxe_csum_ip4(ip, 20);
	} else {
		urxe_put16(ip + 4, (uint16_t)(8 + total));
	}
	/* A partial checksum: the pseudo-header's sum, finished per segment. */
	s = urxe_csum_pseudo(ip, v4, 8 + total);
	urxe_put16(udp + 6, urxe_csum_fold(s));
	v.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	v.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
	v.hdr_len = (uint16_t)hl;
	v.gso_size = (uint16_t)seg;
	v.csum_start = (uint16_t)(14 + ip_len);
	v.csum_offset = 6;
	memcpy(f, &v, sizeof(v));
	return (int)(URXE_PACKET_VNET_LEN + end);
}

/* ---- receiving ---- */

int urxe_packet_split(const uint8_t *vnet, const uint8_t *f, uint32_t len,
		      unsigned int first, struct urxe_packet_in *in,
		      unsigned int n)
{
	struct virtio_net_hdr v;
	struct urxe_packet_in whole;
	uint32_t seg, nseg, i, off, slen;
	uint8_t *ip, *udp;
	bool v4;

	memcpy(&v, vnet, sizeof(v));
	if (urxe_packet_parse(f, len, &whole))
		return -EINVAL;
	if ((v.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_UDP_L4 ||
	    !v.gso_size || v.gso_size >= whole.len) {
		if (first == 0 && n)
			in[0] = whole;
		return 1;
	}
	seg = v.gso_size;
	nseg = (whole.len + seg - 1) / seg;
	if (whole.ip_len + 8 > sizeof(in->hdr))
		return -EINVAL;
	v4 = urxe_get16(f + 12) == ETH_P_IP;
	for (i = first; i < nseg && i - first < n; i++) {
		struct urxe_packet_in *x = &in[i - first];

		*x = whole;
		off = i * seg;
		slen = whole.len - off < seg ? whole.len - off : seg;
		memcpy(x->hdr, whole.ip, whole.ip_len + 8);
		ip = x->hdr;
		udp = ip + whole.ip_len;
		if (v4) {
			/* As the kernel would have cut it: ID base + i. */
			x->ip_id = (uint16_t)(whole.ip_id + i);
			urxe_put16(ip + 2, (uint16_t)(whole.ip_len + 8 + slen));
			urxe_put16(ip + 4, x->ip_id);
			urxe_csum_ip4(ip, whole.ip_len);
		} else {
			urxe_put16(ip + 4, (uint16_t)(8 + slen));
		}
		urxe_put16(udp + 4, (uint16_t)(8 + slen));
		x->ip = ip;
		x->roce = whole.roce + off;
		x->len = slen;
	}
	return (int)nseg;
}
