// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet backend: RoCEv2 through an AF_PACKET socket with mmapped
 * rings, so that many processes share one interface and IP (CAP_NET_RAW).
 *
 * One socket per instance, created with protocol 0 (it receives nothing),
 * given a classic BPF filter that libpcap compiles (dlopen()ed for that
 * moment only) accepting the RoCEv2 frames of this instance's slot, then
 * its rings, and only then bound to the interface: no frame of another
 * slot is ever queued.  Transmit frames are built in place in the TX ring
 * (Ethernet, IPv4 or IPv6, UDP, then the RoCE bytes gathered from the
 * engine's pieces) and one send() flushes a batch, past the qdisc
 * (PACKET_QDISC_BYPASS).  Received frames are read where the kernel
 * wrote them in the TPACKET_V2 RX ring (V3 retires blocks on a timeout of
 * 1 ms or more: a round trip would wait for it) and handed back after
 * the caller is done with them.
 *
 * The kernel's IP stack sees the received frames too: a "sink" UDP
 * socket on port 4791 that accepts nothing (SO_REUSEPORT among one user's
 * processes) keeps it from answering ICMP port unreachable.  On loopback
 * the sink (the slot's own address) also keeps one byte of each UC and
 * UD request (a udp backend's), or of a token a packet backend sends
 * beside each (its frames never reach the kernel's UDP on lo: martians),
 * until the ring's copy has been handed out: its queue is then what this
 * instance has yet to read, which the senders on this host ask the
 * kernel for (rxe_provider/flow.c) as they would a udp backend's socket.
 * A ring's fill is shown to nobody but its owner.
 *
 * Link-layer addresses (nexthop.c): the next hop from RTM_GETROUTE, its
 * MAC from RTM_GETNEIGH, cached.  The demux filter and one frame's
 * building and parsing: packet_frame.c.
 *
 * IPv4 goes out with DF, ID 0, TTL 64 and UDP checksum 0 (the ICRC the
 * engine computed assumes exactly that); IPv6 with hop limit 64 and a real
 * UDP checksum.  With GSO (packet_gso.c: PACKET_VNET_HDR, through the
 * qdisc) runs of one flow leave as super-frames, segment i with ID i and
 * a real checksum, and super-frames arriving whole are split.  Nothing
 * locks: the caller serializes calls on one instance.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <urxe/host.h>
#include <urxe/ipudp.h>
#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#include "nl.h"
#include "packet_int.h"

#define RX_RING_BYTES (8u << 20)
#define TX_FRAMES 256u
#define BLOCK_BYTES (1u << 16)
/*
 * GSO: RX frames hold a 64 KiB super-frame behind its headers, 31 to a
 * 2 MiB block; TX frames hold super-frames of up to 32 KiB.
 */
#define GSO_RX_FRAME (65536u + 256u)
#define GSO_RX_BLOCK (2u << 20)
#define GSO_RX_RING_BYTES (16u << 20)
#define GSO_TX_FRAME (32u << 10)
#define GSO_HDRS (URXE_PACKET_VNET_LEN + 14 + 40 + 8)
#define ROCE_FRAME_MAX 4300u		/* Ethernet .. ICRC of any RoCE frame */
#define TX_DATA_OFF TPACKET_ALIGN(sizeof(struct tpacket2_hdr))
/*
 * Loopback: the sink's buffer is half the ring's frames at this much
 * each; a datagram costs it more (832 bytes on Linux 6.18), so that
 * senders paced by its room never fill the ring.
 */
#define SINK_TRUESIZE_MIN 512u
#define SINK_DRAIN_BATCH 32u

/* ---- multicast ---- */

/*
 * An ordinary socket's membership makes the kernel take the group's
 * frames in (the interface's address filter; IGMP or MLD toward the
 * switches); the ring's filter accepts QPN 0xFFFFFF anyway.  On loopback
 * every frame reaches every ring: nothing to join.
 */
int urxe_packet_mcast(struct urxe_packet *p, const uint8_t *gid, bool join)
{
	bool v4 = urxe_gid_is_v4(gid);
	int *fd = &p->mc[v4 ? 0 : 1];

	if (!urxe_gid_is_mcast(gid))
		return -EINVAL;
	if (p->loopback)
		return 0;
	if (*fd < 0) {
		if (!join)
			return -ENOENT;
		*fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (*fd < 0)
			return -errno;
	}
	if (v4) {
		struct ip_mreqn m = { .imr_ifindex = p->ifindex };

		memcpy(&m.imr_multiaddr, gid + 12, 4);
		return setsockopt(*fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP :
				  IP_DROP_MEMBERSHIP, &m, sizeof(m)) ? -errno : 0;
	} else {
		struct ipv6_mreq m = {
			.ipv6mr_interface = (unsigned int)p->ifindex,
		};

		memcpy(&m.ipv6mr_multiaddr, gid, 16);
		return setsockopt(*fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP :
				  IPV6_LEAVE_GROUP, &m, sizeof(m)) ? -errno : 0;
	}
}

/* ---- rings ---- */

static struct tpacket2_hdr *frame_at(const struct ring *r, unsigned int i)
{
	return (struct tpacket2_hdr *)(void *)(r->base +
		(size_t)(i / r->per_block) * r->block_size +
		(size_t)(i % r->per_block) * r->frame_size);
}

static uint32_t status_acquire(const struct tpacket2_hdr *h)
{
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
}

/* Hands a frame to the kernel after everything in it is written. */
static void status_release(struct tpacket2_hdr *h, uint32_t st)
{
	__atomic_store_n(&h->tp_status, st, __ATOMIC_RELEASE);
}

static int flush(struct urxe_packet *p)
{
	if (send(p->fd, NULL, 0, MSG_DONTWAIT) >= 0)
		return 0;
	return errno == EAGAIN || errno == ENOBUFS ? -EAGAIN : -errno;
}

/* Builds out[0..] into ring frame @h: packets taken, or -errno. */
static int build_frame(struct urxe_packet *p, const struct urxe_frame_desc *out,
		       unsigned int n, struct tpacket2_hdr *h, const uint8_t *dmac)
{
	uint8_t *f = (uint8_t *)h + TX_DATA_OFF;
	size_t cap = p->tx.frame_size - TX_DATA_OFF;
	unsigned int m = 1;
	int rc;

	if (!p->gso) {
		rc = urxe_packet_build(dmac, p->mac, out, f, cap, p->mtu);
		if (rc >= 0)
			h->tp_len = (uint32_t)rc;
		return rc < 0 ? rc : 1;
	}
	m = urxe_packet_gso_run(out, n, cap - GSO_HDRS);
	rc = urxe_packet_build_gso(dmac, p->mac, out, m, f, cap, p->mtu);
	if (rc < 0 && m > 1) {
		m = 1;
		rc = urxe_packet_build_gso(dmac, p->mac, out, 1, f, cap,
					   p->mtu);
	}
	if (rc >= 0)
		h->tp_len = (uint32_t)rc;
	return rc < 0 ? rc : (int)m;
}

int urxe_packet_send(struct urxe_packet *p, const struct urxe_frame_desc *out,
		     unsigned int n, uint16_t *ip_id)
{
	unsigned int i = 0, j, m, queued = 0;
	struct tpacket2_hdr *h;
	bool answer = false;
	uint8_t dmac[6];
	uint32_t st;
	int rc = 0;

	while (i < n) {
		h = frame_at(&p->tx, p->tx.head);
		st = status_acquire(h);
		if (st != TP_STATUS_AVAILABLE && st != TP_STATUS_WRONG_FORMAT) {
			if (queued)
				flush(p);
			queued = 0;
			st = status_acquire(h);
			if (st != TP_STATUS_AVAILABLE &&
			    st != TP_STATUS_WRONG_FORMAT) {
				rc = -EAGAIN;	/* frames still on their way */
				break;
			}
		}
		rc = urxe_nexthop_dest_mac(p, out[i].dst, dmac);
		if (!rc)
			rc = build_frame(p, out + i, n - i, h, dmac);
		if (rc < 0)
			break;
		m = (unsigned int)rc;
		rc = 0;
		status_release(h, TP_STATUS_SEND_REQUEST);
		p->tx.head = (p->tx.head + 1) % p->tx.nframes;
		queued++;
		for (j = 0; j < m; j++) {
			answer |= !out[i + j].ack;
			if (ip_id)
				ip_id[i + j] = (uint16_t)j;
		}
		i += m;
	}
	if (queued) {
		int frc = flush(p);

		p->rx_since_tx = 0;
		if (answer)
			p->rx_run = 0;

		if (frc && frc != -EAGAIN)
			urxe_dbg("packet backend: send: %s", strerror(-frc));
	}
	return i ? (int)i : rc;
}

bool urxe_packet_gso(const struct urxe_packet *p)
{
	return p->gso;
}

/*
 * The next frame's packets into in[], from segment p->rx_part on: how
 * many; *done when the frame is all handed out.  0 and *done: not ours.
 */
static unsigned int take_frame(struct urxe_packet *p,
			       const struct tpacket2_hdr *h,
			       struct urxe_packet_in *in, unsigned int n,
			       bool *done)
{
	const uint8_t *f = (const uint8_t *)h + h->tp_mac;
	int k;

	*done = true;
	if (!p->gso)
		return urxe_packet_parse(f, h->tp_snaplen, in) ? 0 : 1;
	k = urxe_packet_split(f - URXE_PACKET_VNET_LEN, f, h->tp_snaplen,
			      p->rx_part, in, n);
	if (k <= 0)
		return 0;
	if ((unsigned int)k - p->rx_part > n) {
		p->rx_part += n;
		*done = false;
		return n;
	}
	n = (unsigned int)k - p->rx_part;
	p->rx_part = 0;
	return n;
}

/*
 * Loopback: takes up to @n datagrams (their first byte: open_sink) from
 * the sink, the copies of UC/UD requests the engine has had.
 */
static void sink_drain(struct urxe_packet *p, unsigned int n)
{
	struct mmsghdr m[SINK_DRAIN_BATCH];
	unsigned int k;
	int got;

	memset(m, 0, sizeof(m));
	while (n) {
		k = n < SINK_DRAIN_BATCH ? n : SINK_DRAIN_BATCH;
		got = recvmmsg(p->sink[0], m, k, MSG_DONTWAIT, NULL);
		if (got <= 0 || (unsigned int)got < k)
			break;
		n -= k;
	}
}

/* Of the @k packets handed out at @in, the UC/UD requests to this slot. */
static void sink_count(struct urxe_packet *p, const struct urxe_packet_in *in,
		       unsigned int k)
{
	unsigned int i, op;

	for (i = 0; i < k; i++) {
		op = in[i].roce[0] & 0xe0;
		if ((op == 0x20 || op == 0x60) && urxe_gid_is_v4(in[i].dst) &&
		    !memcmp(in[i].dst + 12, &p->lo_addr, 4)) {
			p->sink_owed++;
			p->sink_dirty = true;
		}
	}
}

int urxe_packet_recv(struct urxe_packet *p, struct urxe_packet_in *in,
		     unsigned int n)
{
	unsigned int got = 0, idx, k;
	struct tpacket2_hdr *h;
	const struct sockaddr_ll *sll;
	bool done;
	uint32_t st;

	urxe_packet_release(p);
	while (got < n && p->rx_held < p->rx.nframes) {
		idx = (p->rx.head + p->rx_held) % p->rx.nframes;
		h = frame_at(&p->rx, idx);
		st = status_acquire(h);
		if (!(st & TP_STATUS_USER)) {
			/*
			 * All read: what the sink holds beyond is a copy
			 * whose frame is lost or not ours, or in the ring
			 * the next instant; emptied, its count starts over
			 * (whatever fell out of step is put right).
			 */
			if (!got && !p->rx_held && p->sink_dirty) {
				sink_drain(p, UINT_MAX);
				p->sink_dirty = false;
			}
			break;
		}
		sll = (const struct sockaddr_ll *)(const void *)
		      ((const uint8_t *)h + TPACKET_ALIGN(sizeof(*h)));
		if (sll->sll_pkttype == PACKET_OUTGOING ||
		    sll->sll_pkttype == PACKET_OTHERHOST) {
			p->rx_held++;
			continue;
		}
		if (h->tp_snaplen < h->tp_len) {
			p->rx_held++;
			if (!p->warned_trunc)
				urxe_warn("packet backend: a %u-byte frame on %s is longer than the ring's frames (a GSO super-frame from a veth peer? without GSO here its sender must segment: URXE_GSO=0, or ethtool -K IF tx-udp-segmentation off); dropped",
					  h->tp_len, p->ifname);
			p->warned_trunc = true;
			continue;
		}
		k = take_frame(p, h, &in[got], n - got, &done);
		/*
		 * A frame in part handed out stays ours (not counted in
		 * rx_held: the next recv goes on with it).
		 */
		if (done)
			p->rx_held++;
		/*
		 * On loopback every instance's ring sees every frame: one to
		 * another slot's address (a udp sender's copy of a multicast
		 * packet, QPN 0xFFFFFF) is that slot's, not ours.
		 */
		if (k && p->loopback && urxe_gid_is_v4(in[got].dst) &&
		    !urxe_gid_is_mcast(in[got].dst) &&
		    memcmp(in[got].dst + 12, &p->lo_addr, 4))
			k = 0;		/* its segments: one destination */
		if (k && p->sink_paced)
			sink_count(p, &in[got], k);
		got += k;
		if (!done)
			break;
	}
	p->rx_since_tx += got;
	p->rx_run += got;
	return (int)got;
}

void urxe_packet_release(struct urxe_packet *p)
{
	while (p->rx_held) {
		status_release(frame_at(&p->rx, p->rx.head), TP_STATUS_KERNEL);
		p->rx.head = (p->rx.head + 1) % p->rx.nframes;
		p->rx_held--;
	}
	/* The engine is done with them: room for more at the sink. */
	if (p->sink_owed) {
		sink_drain(p, p->sink_owed);
		p->sink_owed = 0;
	}
}

/* ---- opening ---- */

static int set_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

static int setup_rings(struct urxe_packet *p)
{
	unsigned int wire = (p->mtu < ROCE_FRAME_MAX ? p->mtu : ROCE_FRAME_MAX) +
			    14 + 4;
	unsigned int fs = urxe_pow2_at_least(TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + wire);
	struct tpacket_req rx = { 0 }, tx = { 0 };
	unsigned int block = fs > BLOCK_BYTES ? fs : BLOCK_BYTES;
	unsigned int rx_block = block, rx_fs = fs, rx_bytes = RX_RING_BYTES;
	int rc;

	rc = set_int(p->fd, SOL_PACKET, PACKET_VERSION, TPACKET_V2);
	if (rc)
		return rc;
	/* Before the rings: each frame then carries a virtio_net_hdr. */
	if (p->gso && set_int(p->fd, SOL_PACKET, PACKET_VNET_HDR, 1))
		p->gso = false;
	if (p->gso) {
		rx_fs = GSO_RX_FRAME;
		rx_block = GSO_RX_BLOCK;
		rx_bytes = GSO_RX_RING_BYTES;
		if (fs < GSO_TX_FRAME)
			fs = GSO_TX_FRAME;
		block = fs > BLOCK_BYTES ? fs : BLOCK_BYTES;
	}
	rx.tp_block_size = rx_block;
	rx.tp_frame_size = rx_fs;
	rx.tp_block_nr = rx_bytes / rx_block ? rx_bytes / rx_block : 1;
	rx.tp_frame_nr = rx.tp_block_nr * (rx_block / rx_fs);
	tx.tp_block_size = block;
	tx.tp_frame_size = fs;
	tx.tp_block_nr = (TX_FRAMES * fs + block - 1) / block;
	tx.tp_frame_nr = tx.tp_block_nr * (block / fs);
	if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &rx, sizeof(rx)) ||
	    setsockopt(p->fd, SOL_PACKET, PACKET_TX_RING, &tx, sizeof(tx)))
		return -errno;
	p->map_len = (size_t)rx.tp_block_nr * rx_block +
		     (size_t)tx.tp_block_nr * block;
	p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, p->fd, 0);
	if (p->map == MAP_FAILED) {
		p->map = NULL;
		return -errno;
	}
	/* The RX ring comes first in the mapping, then the TX ring. */
	p->rx.base = p->map;
	p->rx.frame_size = rx_fs;
	p->rx.nframes = rx.tp_frame_nr;
	p->rx.per_block = rx_block / rx_fs;
	p->rx.block_size = rx_block;
	p->tx.base = p->map + (size_t)rx.tp_block_nr * rx_block;
	p->tx.frame_size = fs;
	p->tx.nframes = tx.tp_frame_nr;
	p->tx.per_block = block / fs;
	p->tx.block_size = block;
	return 0;
}

/* Protocol 0 until bound: nothing is queued before the filter is on. */
static int open_ring_socket(struct urxe_packet *p, unsigned int slot)
{
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = p->ifindex,
	};
	struct sock_fprog prog;
	int rc;

	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->fd < 0)
		return -errno;
	rc = urxe_packet_filter_compile(slot, &prog);
	if (rc)
		return rc;
	rc = setsockopt(p->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			sizeof(prog)) ? -errno : 0;
	free(prog.filter);
	if (rc)
		return rc;
	/* A malformed TX frame is skipped, not a stop of the ring. */
	set_int(p->fd, SOL_PACKET, PACKET_LOSS, 1);
	rc = setup_rings(p);
	if (rc)
		return rc;
	/*
	 * Sent frames skip the qdisc (and so local taps: capture remotely) —
	 * but for GSO: the direct path drops a super-frame the device cannot
	 * cut itself (the kernel's software GSO works through the qdisc).
	 */
	if (!p->gso)
		set_int(p->fd, SOL_PACKET, PACKET_QDISC_BYPASS, 1);
	/* Others' frames leaving this interface are not ours (4.20+). */
	set_int(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
	if (bind(p->fd, (struct sockaddr *)&ll, sizeof(ll)))
		return -errno;
	return 0;
}

/*
 * The kernel's stack sees our frames too; a bound UDP socket that takes
 * nothing stops it from answering ICMP port unreachable.  Best effort:
 * another owner of the port (a udp backend) does the same job.
 */
static int open_sink(int family, const struct urxe_packet_conf *c,
		     unsigned int rx_frames)
{
	static struct sock_filter none[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	/*
	 * Loopback: a UDP socket's filter starts at the UDP header.  It
	 * keeps 9 bytes (the header and one) of a sender's token (a 1-byte
	 * datagram, rxe_provider/flow.c: a packet backend's frames never
	 * reach the kernel's UDP on lo) and of each UC or UD request (the
	 * BTH opcode's top three bits 001 or 011) a udp backend sends;
	 * nothing else.  Written out: libpcap compiles for a link layer, and
	 * a UDP socket's filter sees no IP header.
	 */
	static struct sock_filter uc_ud[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 9, 4, 0),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 8),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xe0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x60, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 9),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = 1, .filter = none };
	struct sockaddr_in6 a6 = {
		.sin6_family = AF_INET6, .sin6_port = htons(URXE_UDP_PORT),
	};
	struct sockaddr_in a4 = {
		.sin_family = AF_INET, .sin_port = htons(URXE_UDP_PORT),
	};
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int size = 0;

	if (fd < 0)
		return -1;
	if (c->ifc->loopback) {
		a4.sin_addr = c->lo_addr;
		prog.len = sizeof(uc_ud) / sizeof(uc_ud[0]);
		prog.filter = uc_ud;
		/* (the kernel doubles it) */
		size = (int)(rx_frames / 2 * SINK_TRUESIZE_MIN / 2);
	}
	set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (family == AF_INET6)
		set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	set_int(fd, SOL_SOCKET, SO_RCVBUF, size);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    (family == AF_INET ? bind(fd, (struct sockaddr *)&a4, sizeof(a4)) :
				 bind(fd, (struct sockaddr *)&a6, sizeof(a6)))) {
		urxe_dbg("packet backend: no sink socket on UDP %d (%s): the kernel may answer ICMP port unreachable",
			 URXE_UDP_PORT, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int urxe_packet_open(const struct urxe_packet_conf *conf,
		     struct urxe_packet **out)
{
	struct urxe_packet *p;
	int rc;

	if (!conf || !conf->ifc || !out)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->sink[0] = p->sink[1] = -1;
	p->mc[0] = p->mc[1] = -1;
	p->lo_addr = conf->lo_addr;
	p->ifindex = conf->ifc->ifindex;
	p->mtu = conf->ifc->mtu;
	p->loopback = conf->ifc->loopback;
	p->gso = conf->gso && urxe_packet_gso_probe();
	memcpy(p->mac, conf->ifc->mac, 6);
	snprintf(p->ifname, sizeof(p->ifname), "%s", conf->ifc->name);
	rc = open_ring_socket(p, conf->slot);
	if (rc == -EPERM || rc == -EACCES) {
		urxe_err("the packet backend needs CAP_NET_RAW (raw sockets on %s): run the program with it, e.g. `setpriv --inh-caps=+net_raw --ambient-caps=+net_raw -- PROGRAM` as root for an ordinary user, or use backend udp, which needs no privilege",
			 p->ifname);
		goto err;
	}
	if (rc) {
		urxe_err("packet backend: cannot open the ring socket on %s: %s",
			 p->ifname, strerror(-rc));
		goto err;
	}
	p->nl = urxe_nl_open(NETLINK_ROUTE);
	if (!p->nl) {
		rc = -errno;
		goto err;
	}
	p->nl_seq = (unsigned int)time(NULL);
	p->sink[0] = open_sink(AF_INET, conf, p->rx.nframes);
	p->sink_paced = conf->ifc->loopback && p->sink[0] >= 0;
	if (!conf->ifc->loopback && conf->ifc->has_ipv6)
		p->sink[1] = open_sink(AF_INET6, conf, p->rx.nframes);
	*out = p;
	return 0;

err:
	urxe_packet_close(p);
	return rc;
}

void urxe_packet_close(struct urxe_packet *p)
{
	if (!p)
		return;
	if (p->map)
		munmap(p->map, p->map_len);
	if (p->fd >= 0)
		close(p->fd);
	if (p->sink[0] >= 0)
		close(p->sink[0]);
	if (p->sink[1] >= 0)
		close(p->sink[1]);
	if (p->mc[0] >= 0)
		close(p->mc[0]);
	if (p->mc[1] >= 0)
		close(p->mc[1]);
	if (p->nl)
		mnl_socket_close(p->nl);
	free(p);
}

int urxe_packet_fd(const struct urxe_packet *p)
{
	return p->fd;
}

unsigned int urxe_packet_rx_frames(const struct urxe_packet *p)
{
	return p->rx.nframes;
}

bool urxe_packet_rx_pending(const struct urxe_packet *p)
{
	unsigned int idx = (p->rx.head + p->rx_held) % p->rx.nframes;

	return status_acquire(frame_at(&p->rx, idx)) & TP_STATUS_USER;
}

unsigned int urxe_packet_rx_since_tx(const struct urxe_packet *p,
				     unsigned int *run)
{
	if (run)
		*run = p->rx_run;
	return p->rx_since_tx;
}
