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
	unsigned int i, n = dev->nudp_fds;

	for (i = 0; i < n; i++) {
		pfd[i].fd = dev->udp_fds[i];
		pfd[i].events = POLLOUT;
	}
	poll(pfd, n, 1);
}

static int dev_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	struct urxe_dev *dev = priv;
	struct urxe_udp_out out[32];
	unsigned int i, tries = 0;
	int rc;

	if (!dev->udp)
		return -ENOTCONN;
	if (n > 32)
		n = 32;
	for (i = 0; i < n; i++) {
		out[i].dst = pkts[i].dgid.raw;
		out[i].src = pkts[i].sgid.raw;
		out[i].sport = pkts[i].sport;
		out[i].tos = pkts[i].tclass;
		out[i].ttl = pkts[i].hop_limit;
		out[i].iov = pkts[i].iov;
		out[i].niov = pkts[i].niov;
	}
	for (;;) {
		rc = urxe_udp_send(dev->udp, out, n, NULL);
		if (rc != -EAGAIN || ++tries > 3)
			break;
		wait_writable(dev);
	}
	if (rc < 0 && rc != -EAGAIN) {
		/* This datagram cannot go (no route, too big): drop it alone. */
		urxe_dbg("%s: send: %s", dev->desc.name, strerror(-rc));
		return 1;
	}
	return rc;
}

static int dev_rx_poll(void *priv, struct urxe_engine *eng, int budget)
{
	struct urxe_dev *dev = priv;
	struct urxe_dev_rx *rx = dev->rx;
	int total = 0, n, i;

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
	}
	free(dev->rx);
	pthread_mutex_destroy(&dev->bind_lock);
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
	/* Bind the whole source-port pool now: the descriptor set is fixed. */
	for (unsigned int k = 0; k < URXE_UDP_TX_POOL; k++)
		urxe_udp_sport(dev->udp, (uint16_t)(URXE_UDP_SPORT_BASE + k));
	dev->nudp_fds = urxe_udp_fds(dev->udp, dev->udp_fds);
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
