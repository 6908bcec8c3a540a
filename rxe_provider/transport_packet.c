// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine's operations over the packet backend (netdev/packet.c):
 * packets go into the TX ring, one send() per batch; received frames are
 * fed to the engine where they lie in the RX ring, with their real IP
 * header (the ICRC is checked in full), and handed back afterwards.
 * URXE_PCAP records both directions; URXE_FAULTS acts on what is sent,
 * as on the udp backend (transport.c's code).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/icrc.h>
#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "transport_packet.h"
#include "xrc_shared.h"

#define TX_BATCH 64
#define RX_BATCH 32
#define TX_TRIES 3
#define WINDOW_READ_REAL 32
/* Packets in flight toward one receiver, at most (its ring holds more). */
#define BUDGET_MAX 256
/*
 * Receive moderation, as a NIC's interrupt coalescing.  A receiver that
 * got at least MOD_STREAM frames since it last sent anything but ACKs is
 * taking a stream: after a burst (MOD_BURST frames in one poll) it waits
 * in the ring — memory reads, no system call — for more, until
 * MOD_TARGET frames came since its last send or none for MOD_GAP_NS.  It
 * then wakes and ACKs once per MOD_TARGET packets rather than per few.
 * A ping-pong's messages (an answer between any two) never wait.  Its
 * own ACKs do not end a stream: counting them as answers, a receiver
 * that once ACKed every few packets would go on doing so.
 */
#define MOD_STREAM 16
#define MOD_BURST 4
#define MOD_TARGET 32
#define MOD_GAP_NS 200000

/* Frames are built here: the port asked for is the port sent. */
static uint16_t pkt_sport(void *priv, uint16_t sport)
{
	(void)priv;
	return sport;
}

static void capture_tx(struct urxe_dev *dev, const struct urxe_packet_out *o,
		       uint16_t ip_id, const char *note)
{
	struct urxe_capture_pkt c = {
		.tx = true, .src = o->src, .dst = o->dst, .sport = o->sport,
		.dport = URXE_UDP_PORT, .tos = o->tos, .ttl = 64, .ip_id = ip_id,
		.comment = note,
	};

	urxe_dev_capture_sent(dev, &c, o->iov, o->niov);
}

static void count_lost(struct urxe_dev *dev, unsigned int lost)
{
	if (dev->stats && lost)
		atomic_fetch_add_explicit(&dev->stats->counters[URXE_CNT_SEND_ERR],
					  lost, memory_order_relaxed);
}

URXE_DEV_GROUP_FLOWS(group_flows, struct urxe_packet_out)

static int pkt_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	static __thread struct urxe_pkt faulted[2 * URXE_DEV_FAULTS_BATCH];
	struct urxe_dev *dev = priv;
	struct urxe_packet_out out[TX_BATCH];
	uint16_t ip_id[TX_BATCH];
	unsigned int i, k, sent = 0, tries = 0;
	int rc = 0;

	_Static_assert(TX_BATCH >= 2 * URXE_DEV_FAULTS_BATCH,
		       "room for a faulted batch");
	if (!dev->pkt)
		return -ENOTCONN;
	if (n > TX_BATCH)
		n = TX_BATCH;
	k = n;
	if (dev->faults) {
		/* What the wire does to them (n: what the engine handed over). */
		if (n > URXE_DEV_FAULTS_BATCH)
			n = URXE_DEV_FAULTS_BATCH;
		k = urxe_dev_faults_apply(dev, pkts, n, faulted);
		pkts = faulted;
	}
	for (i = 0; i < k; i++) {
		const uint8_t *bth = pkts[i].iov[0].iov_base;

		out[i].dst = pkts[i].dgid.raw;
		out[i].src = pkts[i].sgid.raw;
		out[i].sport = pkts[i].sport;
		out[i].tos = pkts[i].tclass;
		/* ACKNOWLEDGE, RC (0x11) or XRC (0xb1): no answer. */
		out[i].ack = bth[0] == 0x11 || bth[0] == 0xb1;
		out[i].iov = pkts[i].iov;
		out[i].niov = pkts[i].niov;
	}
	if (k > 1 && urxe_packet_gso(dev->pkt))
		group_flows(out, k);
	while (sent < k) {
		rc = urxe_packet_send(dev->pkt, out + sent, k - sent,
				      ip_id + sent);
		if (rc == -EAGAIN && ++tries <= TX_TRIES) {
			/* The TX ring is full of frames still leaving. */
			struct pollfd pfd = {
				.fd = urxe_packet_fd(dev->pkt), .events = POLLOUT,
			};

			poll(&pfd, 1, 1);
			continue;
		}
		if (rc == -EAGAIN)
			break;
		if (rc < 0) {
			/* This one cannot go (too big, no neighbour): dropped. */
			urxe_dbg("%s: send: %s", dev->desc.name, strerror(-rc));
			count_lost(dev, 1);
			sent++;
			continue;
		}
		if (dev->cap)
			for (i = sent; i < sent + (unsigned int)rc; i++)
				/* (no GSO grouping with faults: i is
				 * the injector's index) */
				capture_tx(dev, &out[i], ip_id[i],
					   dev->faults ?
					   urxe_dev_fault_note(dev, i) : NULL);
		sent += (unsigned int)rc;
	}
	if (sent < k && sent)
		count_lost(dev, k - sent);	/* as on a congested wire */
	if (sent)
		urxe_dev_flow_sent(dev);
	/* The engine's packets are all accounted for, whatever the wire did. */
	return sent || rc != -EAGAIN ? (int)n : -EAGAIN;
}

static void capture_rx(struct urxe_dev *dev, const struct urxe_packet_in *in)
{
	struct urxe_capture_pkt c = {
		.tx = false, .src = in->src, .dst = in->dst, .sport = in->sport,
		.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
		.ip_id = in->ip_id, .roce = in->roce, .len = in->len,
	};

	urxe_capture_write(dev->cap, &c);
}

/* Waits up to MOD_GAP_NS for a frame; false if none came (or work). */
static bool wait_frame(struct urxe_dev *dev)
{
	uint64_t end = urxe_dev_now(dev) + MOD_GAP_NS;
	unsigned int i;

	for (;;) {
		for (i = 0; i < 64; i++) {
			if (urxe_packet_rx_pending(dev->pkt))
				return true;
			urxe_cpu_relax();
		}
		if (urxe_dev_now(dev) >= end)
			return false;
	}
}

static bool streaming(const struct urxe_packet *p)
{
	unsigned int run, now = urxe_packet_rx_since_tx(p, &run);

	return run >= MOD_STREAM && now < MOD_TARGET;
}

static int pkt_rx_poll(void *priv, struct urxe_engine *eng, int budget)
{
	struct urxe_dev *dev = priv;
	struct urxe_packet_in in[RX_BATCH];
	struct urxe_rx_meta meta;
	uint64_t now = urxe_engine_clock(eng);
	int total = 0, n, i;

	if (!dev->pkt)
		return 0;
	while (total < budget) {
		n = urxe_packet_recv(dev->pkt, in, budget - total < RX_BATCH ?
					 (unsigned int)(budget - total) : RX_BATCH);
		if (n <= 0) {
			if (total < MOD_BURST || !streaming(dev->pkt) ||
			    !wait_frame(dev))
				break;
			continue;
		}
		for (i = 0; i < n; i++) {
			memset(&meta, 0, sizeof(meta));
			memcpy(meta.sgid.raw, in[i].src, 16);
			memcpy(meta.dgid.raw, in[i].dst, 16);
			meta.sport = in[i].sport;
			meta.dport = in[i].dport;
			meta.tos = in[i].tos;
			meta.ttl = in[i].ttl;
			meta.now_ns = now;
			/* The real header: the ICRC check is exact. */
			meta.ip_hdr_known = true;
			meta.ip = in[i].ip;
			meta.ip_len = in[i].ip_len;
			meta.ip_id_hint = in[i].ip_id;
			if (dev->cap)
				capture_rx(dev, &in[i]);
			urxe_engine_input(eng, in[i].roce, in[i].len, &meta);
		}
		urxe_packet_release(dev->pkt);
		total += n;
	}
	return total;
}

/*
 * UC and UD toward another instance on lo wait for room at its receive
 * socket, or its sink (flow.c; netdev/packet.c, open_sink): the packet
 * backend reaches no other address of this host.
 */
static uint64_t pkt_tx_wait(void *priv, const union ibv_gid *dgid,
			    uint32_t len)
{
	struct urxe_dev *dev = priv;

	return dev->iface.loopback ? urxe_dev_tx_wait(priv, dgid, len) : 0;
}

const struct urxe_engine_ops urxe_packet_dev_ops = {
	.xmit = pkt_xmit,
	.now = urxe_dev_now,
	.sport = pkt_sport,
	.rx_poll = pkt_rx_poll,
	.tx_wait = pkt_tx_wait,
	/* XRC requests come straight to their SRQ's owner (the filter). */
	.xrc_foreign = urxe_xrc_op_foreign,
	.xrc_watch = urxe_xrc_op_watch,
};

int urxe_dev_packet_bind(struct urxe_dev *dev)
{
	struct urxe_packet_conf conf = {
		.ifc = &dev->iface,
		.slot = dev->slot.index,
		.lo_addr = urxe_slot_loopback_addr(dev->slot.addr_index),
	};
	const char *gso = getenv("URXE_GSO");
	unsigned int budget;
	int fd, rc;

	urxe_dev_debug_knobs(dev);
	/*
	 * URXE_GSO=0: one frame per packet both ways (small RX frames, no
	 * virtio_net_hdr), as on the udp backend; fault injection decides
	 * per packet: no GSO with it either.
	 */
	conf.gso = !(gso && !strcmp(gso, "0")) && !dev->faults;
	rc = urxe_packet_open(&conf, &dev->pkt);
	if (rc)
		goto err_cap;
	fd = urxe_packet_fd(dev->pkt);
	dev->udp_fds[0] = fd;
	dev->nudp_fds = 1;
	/*
	 * Peers are assumed to hold what we do, within reason.  With GSO the
	 * ring's frames are fewer but hold a super-frame each (up to ~60
	 * packets): the packets in flight are counted as without it.
	 */
	budget = urxe_packet_rx_frames(dev->pkt) / 4;
	if (urxe_packet_gso(dev->pkt))
		budget = BUDGET_MAX;
	urxe_engine_set_budget(dev->eng, budget < BUDGET_MAX ? budget : BUDGET_MAX);
	if (!dev->iface.loopback)
		urxe_engine_set_read_window(dev->eng, WINDOW_READ_REAL);
	rc = urxe_engine_thread_start(dev->eng, dev->udp_fds, dev->nudp_fds);
	if (rc)
		goto err_pkt;
	return 0;

err_pkt:
	urxe_packet_close(dev->pkt);
	dev->pkt = NULL;
	dev->nudp_fds = 0;
err_cap:
	urxe_dev_debug_knobs_undo(dev);
	return rc;
}

void urxe_dev_packet_unbind(struct urxe_dev *dev)
{
	urxe_packet_close(dev->pkt);
	dev->pkt = NULL;
	dev->nudp_fds = 0;
}
