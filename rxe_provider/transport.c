// SPDX-License-Identifier: BSD-2-Clause
/*
 * The instance's transport: the engine, created with the instance, and
 * the udp backend beneath it, opened at the first QP or AH (lazy
 * binding).  Here the engine's injected operations are made real: xmit
 * and rx_poll go to the sockets, now is CLOCK_MONOTONIC.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urxe/icrc.h>
#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "transport_packet.h"
#include "xrc_shared.h"

#define RX_BATCH 16
#define RX_BUF 65536			/* a GRO datagram: up to 64 KiB */

#define URXE_DEV_TX_BATCH 32
#define URXE_BUDGET_PKT_BYTES 4096
#define URXE_WINDOW_READ_REAL 32
/*
 * One GSO send: at most this many bytes (an IPv4 datagram's payload is
 * at most 65507) and segments; 15 packets of a 4096-byte MTU fit.
 */
#define GSO_MAX_BYTES 65000
#define GSO_MAX_SEGS 64

_Static_assert(URXE_DEV_FAULTS_BATCH == URXE_DEV_TX_BATCH,
	       "the fault scratch holds two transmit batches");

/* Where one packet's bytes lie in a datagram's iovec. */
struct seg {
	unsigned int iov0, niov;
	uint32_t len;
};

/* One transmit batch's datagrams: GSO runs, and where their packets lie. */
struct gso_batch {
	struct urxe_udp_out g[2 * URXE_DEV_TX_BATCH];
	struct iovec iov[2 * URXE_DEV_TX_BATCH * 4];
	struct seg segs[2 * URXE_DEV_TX_BATCH];
	unsigned int seg0[2 * URXE_DEV_TX_BATCH];	/* g[i]'s first seg */
	unsigned int nseg[2 * URXE_DEV_TX_BATCH];
	struct urxe_ipid_deltas ids;	/* for the GSO segments' ICRCs */
};

/* The udp backend's buffers (the progress lock's, like the engine's). */
struct urxe_dev_rx {
	struct urxe_udp_in in[RX_BATCH];
	uint8_t buf[RX_BATCH][RX_BUF];
	struct gso_batch gb;		/* dev_xmit's */
};

uint64_t urxe_dev_now(void *priv)
{
	struct timespec ts;

	(void)priv;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint16_t dev_sport(void *priv, uint16_t sport)
{
	struct urxe_dev *dev = priv;

	return dev->udp ? urxe_udp_sport(dev->udp, sport) : sport;
}

/* Waits (briefly) for room in the socket buffers. */
static void wait_writable(struct urxe_dev *dev)
{
	struct pollfd pfd[URXE_UDP_MAX_FDS];
	int fds[URXE_UDP_MAX_FDS];
	unsigned int i, n = urxe_udp_fds(dev->udp, fds);

	for (i = 0; i < n; i++) {
		pfd[i].fd = fds[i];
		pfd[i].events = POLLOUT;
	}
	poll(pfd, n, 1);
}

static void out_from_pkt(struct urxe_udp_out *o, const struct urxe_pkt *p,
			 const struct iovec *iov, unsigned int niov)
{
	o->dst = p->dgid.raw;
	o->src = p->sgid.raw;
	o->sport = p->sport;
	o->tos = p->tclass;
	/*
	 * RoCEv2 packets are routed IP: the TTL is the route's (the kernel's
	 * default, 64), not the GRH hop limit — ibv_rc_pingpong asks for 1,
	 * which would die at the first router.  Kernel rxe does the same.
	 */
	o->ttl = 0;
	o->gso_size = 0;
	o->fixed_ids = false;
	o->iov = iov;
	o->niov = niov;
}

void urxe_dev_capture_sent(struct urxe_dev *dev, struct urxe_capture_pkt *c,
			   const struct iovec *iov, unsigned int n)
{
	static __thread uint8_t flat[URXE_DEV_PKT_BUF];

	if (n == 1) {
		c->roce = iov->iov_base;
		c->len = (uint32_t)iov->iov_len;
	} else {
		c->roce = flat;
		c->len = (uint32_t)urxe_iov_gather(iov, n, flat, sizeof(flat));
	}
	urxe_capture_write(dev->cap, c);
}

/* Records a packet as it left (after fault injection), with its IP ID. */
static void capture_pkt(struct urxe_dev *dev, const struct urxe_udp_out *o,
			const struct iovec *iov, unsigned int n, uint16_t ip_id,
			const char *note, uint64_t when_us)
{
	struct urxe_capture_pkt c = {
		.tx = true, .src = o->src, .dst = o->dst,
		.sport = urxe_udp_sport(dev->udp, o->sport),
		.dport = URXE_UDP_PORT, .tos = o->tos, .ttl = 64,
		.ip_id = ip_id, .comment = note, .when_us = when_us,
	};

	urxe_dev_capture_sent(dev, &c, iov, n);
}

/* @note: the fault injector's comment on it, or NULL; @when_us: sent. */
static void capture_out(struct urxe_dev *dev, const struct urxe_udp_out *o,
			const struct seg *segs, const char *note,
			uint64_t when_us)
{
	unsigned int i, n = 0;

	if (!o->gso_size) {
		capture_pkt(dev, o, o->iov, o->niov, 0, note, when_us);
		return;
	}
	for (i = 0; n < o->niov; i++) {
		capture_pkt(dev, o, o->iov + segs[i].iov0, segs[i].niov,
			    (uint16_t)i, NULL, when_us);
		n = segs[i].iov0 + segs[i].niov;
	}
}

static bool same_flow(const struct urxe_udp_out *a,
		      const struct urxe_udp_out *b)
{
	return a->sport == b->sport && a->tos == b->tos && a->ttl == b->ttl &&
	       urxe_gid_eq(a->dst, b->dst) && urxe_gid_eq(a->src, b->src);
}

URXE_DEV_GROUP_FLOWS(group_flows, struct urxe_udp_out)

/*
 * Folds runs of packets of one flow and one size (the last may be
 * shorter) — the middle packets of messages — into GSO sends.  @out
 * (k packets) becomes b->g; returns its length.
 */
static unsigned int gso_merge(struct urxe_udp_out *out, unsigned int k,
			      struct gso_batch *b)
{
	unsigned int j = 0, ng = 0, m, i, nio = 0, ns = 0;

	group_flows(out, k);
	while (j < k) {
		uint32_t seg = (uint32_t)urxe_iov_len(out[j].iov, out[j].niov);
		uint32_t total = seg;

		for (m = 1; j + m < k && m < GSO_MAX_SEGS; m++) {
			const struct urxe_udp_out *o = &out[j + m];
			uint32_t len = (uint32_t)urxe_iov_len(o->iov, o->niov);

			if (len > seg || !same_flow(o, &out[j]) ||
			    total + len > GSO_MAX_BYTES)
				break;
			total += len;
			if (len < seg) {
				m++;		/* a shorter one ends the run */
				break;
			}
		}
		b->g[ng] = out[j];
		b->seg0[ng] = ns;
		b->nseg[ng] = m;
		if (m > 1) {
			unsigned int start = nio;

			for (i = 0; i < m; i++) {
				const struct urxe_udp_out *o = &out[j + i];

				memcpy(&b->iov[nio], o->iov,
				       o->niov * sizeof(*o->iov));
				b->segs[ns + i].iov0 = nio - start;
				b->segs[ns + i].niov = o->niov;
				b->segs[ns + i].len =
					(uint32_t)urxe_iov_len(o->iov, o->niov);
				nio += o->niov;
			}
			b->g[ng].iov = &b->iov[start];
			b->g[ng].niov = nio - start;
			b->g[ng].gso_size = (uint16_t)seg;
			/* Segment i leaves with IPv4 ID i: its ICRC too. */
			urxe_ipid_gso(&b->ids, b->g[ng].dst, b->g[ng].iov,
				      b->g[ng].niov, b->g[ng].gso_size);
		} else {
			b->segs[ns].iov0 = 0;
			b->segs[ns].niov = out[j].niov;
			b->segs[ns].len = seg;
		}
		ns += m;
		j += m;
		ng++;
	}
	return ng;
}

/*
 * A GSO send the kernel refused (no UDP_SEGMENT, a segment over the path
 * MTU, ...): its packets go one by one, with the ICRCs for ID 0 again.
 */
static void gso_unfold(struct urxe_dev *dev, struct urxe_udp_out *o,
		       const struct seg *segs, unsigned int nseg)
{
	struct urxe_udp_out one = *o;
	unsigned int i;

	/* XOR again: back to ID 0 */
	urxe_ipid_gso(&dev->rx->gb.ids, o->dst, o->iov, o->niov, o->gso_size);
	if (++dev->gso_failures >= 3 && dev->gso) {
		dev->gso = false;
		urxe_dbg("%s: the kernel refuses UDP GSO here; sending packet by packet",
			 dev->desc.name);
	}
	one.gso_size = 0;
	for (i = 0; i < nseg; i++) {
		one.iov = o->iov + segs[i].iov0;
		one.niov = segs[i].niov;
		if (urxe_udp_send(dev->udp, &one, 1, NULL) == 1 && dev->cap)
			capture_pkt(dev, &one, one.iov, one.niov, 0, NULL, 0);
	}
}

/*
 * A loopback multicast send, as a capture on a wire would show it: one
 * frame to the group (whose address its ICRC covers), not the unicast
 * copies to the @k members that stand in for IP multicast on loopback;
 * a comment says how it went.
 */
static void capture_mcast(struct urxe_dev *dev, const struct urxe_pkt *p,
			  unsigned int k, uint64_t when_us)
{
	struct urxe_udp_out grp;
	char note[112];

	out_from_pkt(&grp, p, p->iov, p->niov);
	if (k)
		snprintf(note, sizeof(note),
			 "urxe mcast: sent on loopback as a unicast copy to each of the group's %u member%s",
			 k, k == 1 ? "" : "s");
	else
		snprintf(note, sizeof(note),
			 "urxe mcast: on loopback the group has no member: no copy sent");
	capture_pkt(dev, &grp, p->iov, p->niov, 0, note, when_us);
}

static int dev_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	struct urxe_dev *dev = priv;
	struct urxe_udp_out out[2 * URXE_DEV_TX_BATCH];
	union ibv_gid mdst[2 * URXE_DEV_TX_BATCH];
	struct gso_batch *gb = &dev->rx->gb;
	struct urxe_udp_out *send = out;
	const struct seg *segs;
	unsigned int i, k, tries = 0, sent = 0;
	bool merged = false, mcast = false;
	uint64_t t_us = 0;
	int rc = 0;

	if (!dev->udp)
		return -ENOTCONN;
	if (n > URXE_DEV_TX_BATCH)
		n = URXE_DEV_TX_BATCH;
	/* Loopback multicast goes alone, as a copy per member (mcast.c). */
	for (i = 1; i < n; i++)
		if (urxe_dev_mcast_pkt(dev, &pkts[i]))
			n = i;
	if (urxe_dev_mcast_pkt(dev, &pkts[0])) {
		n = 1;
		mcast = true;
		k = urxe_dev_mcast_copies(dev, &pkts[0], mdst,
					  2 * URXE_DEV_TX_BATCH);
		for (i = 0; i < k; i++)
			out_from_pkt(&out[i], &pkts[0], pkts[0].iov,
				     pkts[0].niov);
		for (i = 0; i < k; i++) {
			out[i].dst = mdst[i].raw;
			out[i].fixed_ids = true;
		}
	} else if (dev->faults) {
		struct urxe_pkt *faulted = urxe_dev_faulted(dev);

		k = urxe_dev_faults_apply(dev, pkts, n, faulted);
		for (i = 0; i < k; i++)
			out_from_pkt(&out[i], &faulted[i], faulted[i].iov, 1);
	} else {
		for (i = 0; i < n; i++)
			out_from_pkt(&out[i], &pkts[i], pkts[i].iov, pkts[i].niov);
		k = n;
		if (dev->gso && k > 1) {
			k = gso_merge(out, k, gb);
			send = gb->g;
			merged = true;
		}
	}
	while (sent < k) {
		if (dev->cap)
			t_us = urxe_capture_now_us();
		rc = urxe_udp_send(dev->udp, send + sent, k - sent, NULL);
		if (rc == -EAGAIN && ++tries <= 3) {
			wait_writable(dev);
			continue;
		}
		if (rc == -EAGAIN)
			break;
		if (rc < 0 && send[sent].gso_size) {
			gso_unfold(dev, &send[sent], &gb->segs[gb->seg0[sent]],
				   gb->nseg[sent]);
			sent++;
			continue;
		}
		if (rc < 0) {
			/* This one cannot go (no route, too big): drop it alone. */
			urxe_dbg("%s: send: %s", dev->desc.name, strerror(-rc));
			rc = 1;
		} else if (send[sent].gso_size) {
			dev->gso_failures = 0;
		}
		if (dev->cap && !mcast) {
			for (i = sent; i < sent + (unsigned int)rc; i++) {
				segs = merged ? &gb->segs[gb->seg0[i]] : NULL;
				capture_out(dev, &send[i], segs, dev->faults ?
					    urxe_dev_fault_note(dev, i) : NULL,
					    t_us);
			}
		}
		sent += (unsigned int)rc;
	}
	if (mcast && dev->cap && (sent || !k))
		capture_mcast(dev, &pkts[0], k, t_us);
	if (sent < k && sent) {
		/*
		 * The socket buffer stayed full: the rest is lost as on a
		 * congested wire (retransmission recovers it), and counted.
		 */
		unsigned int lost = 0;

		for (i = sent; i < k; i++)
			lost += merged ? gb->nseg[i] : 1;
		if (dev->stats)
			atomic_fetch_add_explicit(
				&dev->stats->counters[URXE_CNT_SEND_ERR], lost,
				memory_order_relaxed);
	}
	/* The engine's packets are all accounted for, whatever the wire did. */
	if (!sent && rc == -EAGAIN)
		return -EAGAIN;
	urxe_dev_flow_sent(dev);
	return (int)n;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * When a datagram arrived, on the clock of @now (CLOCK_MONOTONIC), from
 * the kernel's receive time @rx_ns (CLOCK_REALTIME, read as @real): the
 * IPv4 ID check measures a flow's silence between arrivals, which a
 * receiver that reads late would shrink (a restarted sender's first
 * datagram, read in one batch with its predecessor's last).
 */
static uint64_t arrival(uint64_t now, uint64_t real, uint64_t rx_ns)
{
	uint64_t age;

	if (!rx_ns || rx_ns > real)
		return now;
	age = real - rx_ns;
	return age < now ? now - age : 0;
}

/*
 * A received frame.  A loopback multicast copy (sent to this slot's
 * address) is recorded as the sender records it: to its group, with a
 * comment on how it came (capture_mcast()).
 */
static void capture_rx(struct urxe_dev *dev, struct urxe_engine *eng,
		       const struct urxe_udp_in *in,
		       const struct urxe_rx_meta *meta)
{
	struct urxe_capture_pkt c = {
		.tx = false, .src = in->src, .dst = in->dst, .sport = in->sport,
		.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
		.roce = in->buf, .len = in->len,
	};
	struct urxe_rx_meta m = *meta;
	char note[128], a[INET6_ADDRSTRLEN];

	if (dev->iface.loopback &&
	    urxe_engine_mcast_group(eng, in->buf, in->len, meta, &m.dgid)) {
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
	if (in->len >= 16)
		urxe_icrc_rx_ipv4_id(in->buf, in->len, &m, &c.ip_id);
	urxe_capture_write(dev->cap, &c);
}

static int dev_rx_poll(void *priv, struct urxe_engine *eng, int budget)
{
	struct urxe_dev *dev = priv;
	struct urxe_dev_rx *rx = dev->rx;
	uint64_t now, real;
	int total = 0, n, i;

	if (!dev->udp)
		return 0;
	while (total < budget) {
		n = urxe_udp_recv(dev->udp, rx->in, RX_BATCH);
		if (n <= 0)
			break;
		now = urxe_dev_now(dev);
		real = real_ns();
		for (i = 0; i < n; i++) {
			struct urxe_udp_in *in = &rx->in[i];
			struct urxe_rx_meta meta;
			uint32_t off, seg;

			if (in->truncated)
				continue;
			memset(&meta, 0, sizeof(meta));
			memcpy(meta.sgid.raw, in->src, 16);
			memcpy(meta.dgid.raw, in->dst, 16);
			meta.sport = in->sport;
			meta.dport = in->dport;
			meta.tos = in->tos;
			meta.ttl = in->ttl;
			meta.now_ns = arrival(now, real, in->rx_ns);
			meta.udp_csum = in->csum;
			/* A GRO datagram: packets of gso_size, the last shorter. */
			seg = in->gso_size ? in->gso_size : in->len;
			for (off = 0; off < in->len; off += seg) {
				struct urxe_udp_in one = *in;

				one.buf = in->buf + off;
				one.len = in->len - off < seg ? in->len - off : seg;
				if (dev->cap)
					capture_rx(dev, eng, &one, &meta);
				urxe_engine_input(eng, one.buf, one.len, &meta);
				meta.ip_id_hint++;
			}
		}
		total += n;
		/*
		 * Fewer than asked for: the sockets were empty a moment ago.
		 * Asking again would mostly cost a system call that finds
		 * nothing, on the path of every message a poller waits for.
		 */
		if (n < RX_BATCH)
			break;
	}
	return total;
}

static const struct urxe_engine_ops dev_ops = {
	.xmit = dev_xmit,
	.now = urxe_dev_now,
	.sport = dev_sport,
	.rx_poll = dev_rx_poll,
	.xrc_route = urxe_xrc_op_route,
	.xrc_foreign = urxe_xrc_op_foreign,
	.xrc_watch = urxe_xrc_op_watch,
	.tx_wait = urxe_dev_tx_wait,
	.peer_unread = urxe_dev_peer_unread,
	.peer_absent = urxe_dev_peer_absent,
};

int urxe_dev_transport_init(struct urxe_dev *dev)
{
	struct urxe_engine_conf conf = {
		.slot = dev->slot.index,
		.name = dev->desc.name,
		.gid0 = dev->gids[0],
		.ops = dev->desc.backend == URXE_BACKEND_PACKET ?
		       &urxe_packet_dev_ops : &dev_ops,
		.priv = dev,
		.stats = dev->stats,
	};

	pthread_mutex_init(&dev->bind_lock, NULL);
	return urxe_engine_create(&conf, &dev->eng);
}

void urxe_dev_transport_fini(struct urxe_dev *dev)
{
	/* Inherited across fork(): the thread and sockets are the parent's. */
	if (dev->dead)
		urxe_engine_thread_forget(dev->eng);
	urxe_engine_destroy(dev->eng);
	if (!dev->dead) {
		if (dev->udp)
			urxe_udp_close(dev->udp);
		if (dev->pkt)
			urxe_dev_packet_unbind(dev);
		urxe_capture_close(dev->cap);
		urxe_dev_flow_free(dev);
	}
	urxe_dev_faults_stop(dev);
	free(dev->rx);
	pthread_mutex_destroy(&dev->bind_lock);
}

/*
 * URXE_FAULTS (checked when the device opened) and URXE_PCAP, set up when
 * the sockets open.  A capture that cannot be written is reported and
 * left out: the program runs as it would without it.
 */
void urxe_dev_debug_knobs(struct urxe_dev *dev)
{
	const char *pcap = getenv("URXE_PCAP");

	if (urxe_dev_faults_start(dev))
		urxe_err("%s: URXE_FAULTS: out of memory: injecting nothing",
			 dev->desc.name);
	if (pcap && *pcap)
		urxe_capture_open(pcap, dev->iface.mac, &dev->cap);
}

void urxe_dev_debug_knobs_undo(struct urxe_dev *dev)
{
	urxe_capture_close(dev->cap);
	dev->cap = NULL;
	urxe_dev_faults_stop(dev);
}

static int bind_locked(struct urxe_dev *dev)
{
	const char *gso = getenv("URXE_GSO");
	struct urxe_udp_conf conf = {
		.ifc = &dev->iface,
		.loopback = dev->iface.loopback,
		.lo_addr = urxe_slot_loopback_addr(dev->slot.addr_index),
	};
	int rc;

	dev->rx = malloc(sizeof(struct urxe_dev_rx));
	if (!dev->rx)
		return -ENOMEM;
	/* The buffers need no zeroes; the ID tables start empty. */
	memset(&dev->rx->gb.ids, 0, sizeof(dev->rx->gb.ids));
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		dev->rx->in[i].buf = dev->rx->buf[i];
		dev->rx->in[i].cap = RX_BUF;
	}
	urxe_dev_debug_knobs(dev);
	/*
	 * URXE_GSO=0: one datagram per packet both ways, as a packet
	 * capture on the interface wants.  Fault injection decides per
	 * packet, after any batching: no GSO with it either.
	 */
	dev->gso = !(gso && !strcmp(gso, "0")) && !dev->faults;
	conf.gso = dev->gso;
	/*
	 * Connected transmit sockets number their IPv4 IDs from a counter;
	 * a capture writes each packet's header with the ID the engine's
	 * ICRC assumed: with one, they stay unconnected.  So they do without
	 * GSO: a datagram with checksum 0 must carry an ID a receiver can
	 * predict (0), as it cannot tell a restart from a corruption there
	 * (docs/design.md, "Wire").
	 */
	conf.connect = !dev->cap && dev->gso;
	rc = urxe_udp_open(&conf, &dev->udp);
	if (rc)
		goto err_rx;
	/* Bind the whole source-port pool now: the descriptor set is fixed. */
	for (unsigned int k = 0; k < URXE_UDP_TX_POOL; k++)
		urxe_udp_sport(dev->udp, (uint16_t)(URXE_UDP_SPORT_BASE + k));
	dev->nudp_fds = urxe_udp_rx_fds(dev->udp, dev->udp_fds);
	/* A capture writes each packet's IP header: TOS and TTL included. */
	if (dev->cap)
		urxe_dev_want_ip_meta(dev);
	/*
	 * What the receive socket holds bounds what may be in flight toward
	 * it; a peer's is assumed alike.  The kernel charges a packet's whole
	 * buffer: count two MTU-sized pages a packet.
	 */
	urxe_engine_set_budget(dev->eng, urxe_udp_rcvbuf(dev->udp) /
					 (2 * URXE_BUDGET_PKT_BYTES));
	/*
	 * On a real interface READ answers come from any peer (kernel rxe in
	 * a VM: its tap holds far less than our socket) in bursts of what we
	 * ask: ask for at most 32 packets at a time, as before the windows
	 * grew.  Bigger bursts were seen to stall there for good.
	 */
	if (!dev->iface.loopback)
		urxe_engine_set_read_window(dev->eng, URXE_WINDOW_READ_REAL);
	rc = urxe_engine_thread_start(dev->eng, dev->udp_fds, dev->nudp_fds);
	if (rc)
		goto err_udp;
	return 0;

err_udp:
	urxe_udp_close(dev->udp);
	dev->udp = NULL;
err_rx:
	urxe_dev_debug_knobs_undo(dev);
	free(dev->rx);
	dev->rx = NULL;
	return rc;
}

void urxe_dev_want_ip_meta(struct urxe_dev *dev)
{
	int rc;

	if (!dev->udp || atomic_exchange(&dev->ip_meta, true))
		return;		/* the packet backend reads the IP header */
	rc = urxe_udp_ip_meta(dev->udp, true);
	if (rc)
		urxe_warn("%s: UD receives will show TOS and TTL 0: %s",
			  dev->desc.name, strerror(-rc));
}

int urxe_dev_bind(struct urxe_dev *dev)
{
	int rc = 0;

	if (dev->dead)
		return -EIO;
	pthread_mutex_lock(&dev->bind_lock);
	if (!dev->udp && !dev->pkt)
		rc = dev->desc.backend == URXE_BACKEND_PACKET ?
		     urxe_dev_packet_bind(dev) : bind_locked(dev);
	pthread_mutex_unlock(&dev->bind_lock);
	if (rc)
		urxe_err("%s: cannot open the sockets on %s: %s", dev->desc.name,
			 dev->desc.netdev, strerror(-rc));
	return rc;
}

int urxe_dev_wait_fd(struct urxe_dev *dev, int fd, int timeout_ms)
{
	struct pollfd pfd[2 + URXE_UDP_MAX_FDS];
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
		       urxe_dev_now(dev) + (uint64_t)timeout_ms * 1000000ull;
	unsigned int i, n;
	int rc;

	for (;;) {
		uint64_t now = urxe_dev_now(dev), until = end;
		int wait;

		if (!dev->dead && dev->eng) {
			uint64_t d = urxe_engine_next_deadline(dev->eng);

			if (d < until)
				until = d;
		}
		wait = until == UINT64_MAX ? -1 :
		       until <= now ? 0 : (int)((until - now + 999999) / 1000000);
		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		n = 1;
		if (!dev->dead && (dev->udp || dev->pkt)) {
			for (i = 0; i < dev->nudp_fds; i++, n++) {
				pfd[n].fd = dev->udp_fds[i];
				pfd[n].events = POLLIN;
			}
		}
		/* Link changes become port events while someone waits. */
		if (!dev->dead && dev->link) {
			pfd[n].fd = urxe_iface_watch_fd(dev->link);
			pfd[n].events = POLLIN;
			n++;
		}
		rc = poll(pfd, n, wait);
		if (rc < 0)
			return -errno;	/* EINTR: the caller decides */
		if (rc > 0 && !dev->dead && dev->link &&
		    (pfd[n - 1].revents & POLLIN))
			urxe_dev_link_check(dev);
		if (rc > 0 && (pfd[0].revents & (POLLIN | POLLERR | POLLHUP)))
			return 1;
		/* Sockets or timers: do the work ourselves, no wake-up needed. */
		if (!dev->dead && dev->eng)
			urxe_engine_progress(dev->eng);
		if (urxe_dev_now(dev) >= end)
			return 0;
	}
}
