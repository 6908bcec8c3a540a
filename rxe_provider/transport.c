// SPDX-License-Identifier: BSD-2-Clause
/*
 * The instance's transport: the engine, created with the instance, and
 * the udp backend beneath it, opened at the first QP or AH (lazy
 * binding).  Here the engine's injected operations are made real: xmit
 * and rx_poll go to the sockets, now is CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"

#define RX_BATCH 32
#define RX_BUF 9216			/* a jumbo frame's datagram */

#define URXE_DEV_TX_BATCH 32

/* Fault injection's scratch: corrupted copies and the held packet. */
struct urxe_dev_tx {
	uint8_t corrupt[2 * URXE_DEV_TX_BATCH][RX_BUF];
	uint8_t held[RX_BUF];
	size_t held_len;
	struct urxe_pkt held_pkt;
};

struct urxe_dev_rx {
	struct urxe_udp_in in[RX_BATCH];
	uint8_t buf[RX_BATCH][RX_BUF];
};

static uint64_t dev_now(void *priv)
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
	o->iov = iov;
	o->niov = niov;
}

/* Records a datagram as it left (after fault injection). */
static void capture_tx(struct urxe_dev *dev, const struct urxe_udp_out *o)
{
	struct urxe_capture_pkt c = {
		.tx = true, .src = o->src, .dst = o->dst,
		.sport = urxe_udp_sport(dev->udp, o->sport),
		.dport = URXE_UDP_PORT, .tos = o->tos, .ttl = 64,
		.roce = o->iov->iov_base, .len = (uint32_t)o->iov->iov_len,
	};

	urxe_capture_write(dev->cap, &c);
}

/*
 * URXE_FAULTS: what the wire does to the packets of this batch.  Dropped
 * ones vanish, duplicated ones go twice, corrupted ones go with a flipped
 * bit (the receiver's ICRC check drops them), a reordered one waits for
 * the next packet.  Builds the batch in @out; returns its length.
 */
static unsigned int apply_faults(struct urxe_dev *dev, struct urxe_pkt *pkts,
				 unsigned int n, struct urxe_udp_out *out,
				 struct iovec *iov)
{
	struct urxe_dev_tx *t = dev->tx;
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		const uint8_t *b = pkts[i].iov[0].iov_base;
		enum urxe_fault f = urxe_faults_decide(dev->faults,
			(uint32_t)b[5] << 16 | b[6] << 8 | b[7],
			(uint32_t)b[9] << 16 | b[10] << 8 | b[11], b[0], false);

		iov[k] = pkts[i].iov[0];
		switch (f) {
		case URXE_FAULT_DROP:
			continue;
		case URXE_FAULT_CORRUPT:
			memcpy(t->corrupt[k], b, pkts[i].iov[0].iov_len);
			t->corrupt[k][pkts[i].iov[0].iov_len / 2] ^= 0x20;
			iov[k].iov_base = t->corrupt[k];
			break;
		case URXE_FAULT_REORDER:
			if (!t->held_len) {
				memcpy(t->held, b, pkts[i].iov[0].iov_len);
				t->held_len = pkts[i].iov[0].iov_len;
				t->held_pkt = pkts[i];
				continue;
			}
			break;
		default:
			break;
		}
		out_from_pkt(&out[k], &pkts[i], &iov[k], 1);
		k++;
		if (f == URXE_FAULT_DUP && k < 2 * URXE_DEV_TX_BATCH) {
			iov[k] = iov[k - 1];
			out[k] = out[k - 1];
			out[k].iov = &iov[k];
			k++;
		}
		if (t->held_len && f != URXE_FAULT_REORDER) {
			/*
			 * The held packet goes after this one, from a copy of
			 * its own: held may take another packet before this
			 * batch leaves.
			 */
			memcpy(t->corrupt[k], t->held, t->held_len);
			iov[k].iov_base = t->corrupt[k];
			iov[k].iov_len = t->held_len;
			out_from_pkt(&out[k], &t->held_pkt, &iov[k], 1);
			k++;
			t->held_len = 0;
		}
	}
	return k;
}

static int dev_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	struct urxe_dev *dev = priv;
	struct urxe_udp_out out[2 * URXE_DEV_TX_BATCH];
	struct iovec iov[2 * URXE_DEV_TX_BATCH];
	unsigned int i, k, tries = 0, sent = 0;
	int rc = 0;

	if (!dev->udp)
		return -ENOTCONN;
	if (n > URXE_DEV_TX_BATCH)
		n = URXE_DEV_TX_BATCH;
	if (dev->faults) {
		k = apply_faults(dev, pkts, n, out, iov);
	} else {
		for (i = 0; i < n; i++)
			out_from_pkt(&out[i], &pkts[i], pkts[i].iov, pkts[i].niov);
		k = n;
	}
	while (sent < k) {
		rc = urxe_udp_send(dev->udp, out + sent, k - sent, NULL);
		if (rc == -EAGAIN && ++tries <= 3) {
			wait_writable(dev);
			continue;
		}
		if (rc == -EAGAIN)
			break;
		if (rc < 0) {
			/* This one cannot go (no route, too big): drop it alone. */
			urxe_dbg("%s: send: %s", dev->desc.name, strerror(-rc));
			rc = 1;
		}
		if (dev->cap)
			for (i = sent; i < sent + (unsigned int)rc; i++)
				capture_tx(dev, &out[i]);
		sent += (unsigned int)rc;
	}
	/* The engine's packets are all accounted for, whatever the wire did. */
	return sent || rc != -EAGAIN ? (int)n : -EAGAIN;
}

static void capture_rx(struct urxe_dev *dev, const struct urxe_udp_in *in,
		       const struct urxe_rx_meta *meta)
{
	struct urxe_capture_pkt c = {
		.tx = false, .src = in->src, .dst = in->dst, .sport = in->sport,
		.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
		.roce = in->buf, .len = in->len,
	};

	/* The ID the sender used, so that the captured ICRC checks. */
	if (in->len >= 16)
		urxe_icrc_rx_ipv4_id(in->buf, in->len, meta, &c.ip_id);
	urxe_capture_write(dev->cap, &c);
}

static int dev_rx_poll(void *priv, struct urxe_engine *eng, int budget)
{
	struct urxe_dev *dev = priv;
	struct urxe_dev_rx *rx = dev->rx;
	int total = 0, n, i;

	uint64_t now = dev_now(dev);

	if (!dev->udp)
		return 0;
	while (total < budget) {
		n = urxe_udp_recv(dev->udp, rx->in, RX_BATCH);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			struct urxe_udp_in *in = &rx->in[i];
			struct urxe_rx_meta meta;

			if (in->truncated)
				continue;
			memset(&meta, 0, sizeof(meta));
			memcpy(meta.sgid.raw, in->src, 16);
			memcpy(meta.dgid.raw, in->dst, 16);
			meta.sport = in->sport;
			meta.dport = in->dport;
			meta.tos = in->tos;
			meta.ttl = in->ttl;
			meta.now_ns = now;
			if (dev->cap)
				capture_rx(dev, in, &meta);
			urxe_engine_input(eng, in->buf, in->len, &meta);
		}
		total += n;
	}
	return total;
}

static const struct urxe_engine_ops dev_ops = {
	.xmit = dev_xmit,
	.now = dev_now,
	.sport = dev_sport,
	.rx_poll = dev_rx_poll,
};

int urxe_dev_transport_init(struct urxe_dev *dev)
{
	struct urxe_engine_conf conf = {
		.slot = dev->slot.index,
		.gid0 = dev->gids[0],
		.ops = &dev_ops,
		.priv = dev,
		.stats = dev->stats,
	};

	pthread_mutex_init(&dev->bind_lock, NULL);
	return urxe_engine_create(&conf, &dev->eng);
}

void urxe_dev_transport_fini(struct urxe_dev *dev)
{
	if (!dev->dead) {
		urxe_engine_destroy(dev->eng);
		if (dev->udp)
			urxe_udp_close(dev->udp);
		urxe_capture_close(dev->cap);
	}
	urxe_faults_destroy(dev->faults);
	free(dev->tx);
	free(dev->rx);
	pthread_mutex_destroy(&dev->bind_lock);
}

/*
 * URXE_FAULTS and URXE_PCAP, read when the sockets open.  A bad value is
 * reported and ignored: the program runs as it would without it.
 */
static void debug_knobs(struct urxe_dev *dev)
{
	const char *faults = getenv("URXE_FAULTS"), *pcap = getenv("URXE_PCAP");
	struct urxe_faults_conf fc;

	if (faults && *faults) {
		if (urxe_faults_parse(faults, &fc))
			urxe_err("URXE_FAULTS=%s: expected drop=P,dup=P,reorder=P,corrupt=P,seed=N (P in [0,1], summing to at most 1); ignored",
				 faults);
		else if (!urxe_faults_create(&fc, &dev->faults))
			dev->tx = calloc(1, sizeof(*dev->tx));
		if (dev->faults && !dev->tx) {
			urxe_faults_destroy(dev->faults);
			dev->faults = NULL;
		}
	}
	if (pcap && *pcap)
		urxe_capture_open(pcap, dev->iface.mac, &dev->cap);
}

static int bind_locked(struct urxe_dev *dev)
{
	struct urxe_udp_conf conf = {
		.ifc = &dev->iface,
		.loopback = dev->iface.loopback,
		.lo_addr = urxe_slot_loopback_addr(dev->slot.addr_index),
	};
	int rc;

	dev->rx = malloc(sizeof(struct urxe_dev_rx));
	if (!dev->rx)
		return -ENOMEM;
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		dev->rx->in[i].buf = dev->rx->buf[i];
		dev->rx->in[i].cap = RX_BUF;
	}
	rc = urxe_udp_open(&conf, &dev->udp);
	if (rc)
		goto err_rx;
	debug_knobs(dev);
	/* Bind the whole source-port pool now: the descriptor set is fixed. */
	for (unsigned int k = 0; k < URXE_UDP_TX_POOL; k++)
		urxe_udp_sport(dev->udp, (uint16_t)(URXE_UDP_SPORT_BASE + k));
	dev->nudp_fds = urxe_udp_rx_fds(dev->udp, dev->udp_fds);
	rc = urxe_engine_thread_start(dev->eng, dev->udp_fds, dev->nudp_fds);
	if (rc)
		goto err_udp;
	return 0;

err_udp:
	urxe_udp_close(dev->udp);
	dev->udp = NULL;
err_rx:
	free(dev->rx);
	dev->rx = NULL;
	return rc;
}

int urxe_dev_bind(struct urxe_dev *dev)
{
	int rc = 0;

	if (dev->dead)
		return -EIO;
	pthread_mutex_lock(&dev->bind_lock);
	if (!dev->udp)
		rc = bind_locked(dev);
	pthread_mutex_unlock(&dev->bind_lock);
	if (rc)
		urxe_err("%s: cannot open the sockets on %s: %s", dev->desc.name,
			 dev->desc.netdev, strerror(-rc));
	return rc;
}

int urxe_dev_wait_fd(struct urxe_dev *dev, int fd, int timeout_ms)
{
	struct pollfd pfd[1 + URXE_UDP_MAX_FDS];
	uint64_t end = timeout_ms < 0 ? UINT64_MAX :
		       dev_now(dev) + (uint64_t)timeout_ms * 1000000ull;
	unsigned int i, n;
	int rc;

	for (;;) {
		uint64_t now = dev_now(dev), until = end;
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
		if (!dev->dead && dev->udp) {
			for (i = 0; i < dev->nudp_fds; i++, n++) {
				pfd[n].fd = dev->udp_fds[i];
				pfd[n].events = POLLIN;
			}
		}
		rc = poll(pfd, n, wait);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0 && (pfd[0].revents & (POLLIN | POLLERR | POLLHUP)))
			return 1;
		/* Sockets or timers: do the work ourselves, no wake-up needed. */
		if (!dev->dead && dev->eng)
			urxe_engine_progress(dev->eng);
		if (dev_now(dev) >= end)
			return 0;
	}
}
