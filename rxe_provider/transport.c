// SPDX-License-Identifier: BSD-2-Clause
/*
 * The instance's transport: the engine, created with the instance, and
 * the data path beneath it (datapath/) over the backend the device's
 * configuration names, bound at the first QP or AH (lazy binding).  Here
 * the engine's injected operations are wired: xmit, rx_poll and sport
 * are the data path's own (the engine's io_priv is dev->dp), which hands
 * received packets to the engine's own urxe_engine_input (its sink);
 * now is CLOCK_MONOTONIC.  The backends differ above the data path only
 * in what the engine may ask: the packet backend's filter brings XRC
 * requests straight to their SRQ's owner, and it reaches no other
 * address of this host (flow.c).
 */
#include <errno.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"
#include "xrc_shared.h"

#define URXE_WINDOW_READ_REAL 32

uint64_t urxe_dev_now(void *priv)
{
	(void)priv;
	return urxe_dp_now();
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

/* The frames' way goes down to the data path (io_priv: dev->dp). */
static const struct urxe_engine_ops udp_ops = {
	.xmit = urxe_dp_xmit,
	.now = urxe_dev_now,
	.sport = urxe_dp_sport,
	.rx_poll = urxe_dp_rx_poll,
	.xrc_route = urxe_xrc_op_route,
	.xrc_foreign = urxe_xrc_op_foreign,
	.xrc_watch = urxe_xrc_op_watch,
	.tx_wait = urxe_dev_tx_wait,
	.peer_unread = urxe_dev_peer_unread,
	.peer_absent = urxe_dev_peer_absent,
};

static const struct urxe_engine_ops packet_ops = {
	.xmit = urxe_dp_xmit,
	.now = urxe_dev_now,
	.sport = urxe_dp_sport,
	.rx_poll = urxe_dp_rx_poll,
	.tx_wait = pkt_tx_wait,
	/* XRC requests come straight to their SRQ's owner (the filter). */
	.xrc_foreign = urxe_xrc_op_foreign,
	.xrc_watch = urxe_xrc_op_watch,
};

/* A transmit batch went: flow control's packets are no longer unsent. */
static void sink_sent(void *owner)
{
	urxe_dev_flow_sent(owner);
}

/*
 * The data path exists from open, bound at the first QP or AH; the
 * engine's frames go through it (its io_priv), and it hands received
 * ones to the engine that polls it.
 */
int urxe_dev_transport_init(struct urxe_dev *dev)
{
	struct urxe_dp_conf dconf = {
		.name = dev->desc.name,
		.rundir = dev->desc.rundir,
		.backend = dev->desc.backend == URXE_BACKEND_PACKET ?
			   &urxe_packet_backend : &urxe_udp_backend,
		.ifc = &dev->iface,
		.slot = dev->slot.index,
		.addr_index = dev->slot.addr_index,
		.faults = dev->faults_set ? &dev->faults_conf : NULL,
		.stats = dev->stats,
		/* Received packets go straight to the engine that polls. */
		.sink = {
			.input = urxe_engine_input,
			.mcast_group = urxe_engine_mcast_group,
			.clock = urxe_engine_clock,
			.sent = sink_sent, .owner = dev,
		},
	};
	struct urxe_engine_conf conf = {
		.slot = dev->slot.index,
		.name = dev->desc.name,
		.gid0 = dev->gids[0],
		.ops = dev->desc.backend == URXE_BACKEND_PACKET ?
		       &packet_ops : &udp_ops,
		.priv = dev,
		.stats = dev->stats,
	};
	int rc;

	rc = urxe_dp_create(&dconf, &dev->dp);
	if (rc)
		return rc;
	conf.io_priv = dev->dp;
	pthread_mutex_init(&dev->bind_lock, NULL);
	rc = urxe_engine_create(&conf, &dev->eng);
	if (rc) {
		pthread_mutex_destroy(&dev->bind_lock);
		urxe_dp_close(dev->dp);
		dev->dp = NULL;
		return rc;
	}
	return 0;
}

void urxe_dev_transport_fini(struct urxe_dev *dev)
{
	/* Inherited across fork(): the thread and sockets are the parent's. */
	if (dev->dead)
		urxe_engine_thread_forget(dev->eng);
	urxe_engine_destroy(dev->eng);
	if (!dev->dead)
		urxe_dev_flow_free(dev);
	urxe_dp_close(dev->dp);
	dev->dp = NULL;
	pthread_mutex_destroy(&dev->bind_lock);
}

int urxe_dev_faults_read(struct urxe_dev *dev)
{
	return urxe_dp_faults_read(dev->desc.name, &dev->faults_conf,
				   &dev->faults_set);
}

static int bind_locked(struct urxe_dev *dev)
{
	int fds[URXE_BACKEND_MAX_FDS];
	unsigned int nfds;
	int rc;

	rc = urxe_dp_bind(dev->dp);
	if (rc)
		return rc;
	urxe_engine_set_budget(dev->eng, urxe_dp_budget(dev->dp));
	/*
	 * On a real interface READ answers come from any peer (kernel rxe in
	 * a VM: its tap holds far less than our socket) in bursts of what we
	 * ask: ask for at most 32 packets at a time, as before the windows
	 * grew.  Bigger bursts were seen to stall there for good.
	 */
	if (!dev->iface.loopback)
		urxe_engine_set_read_window(dev->eng, URXE_WINDOW_READ_REAL);
	nfds = urxe_dp_rx_fds(dev->dp, fds);
	rc = urxe_engine_thread_start(dev->eng, fds, nfds);
	if (rc)
		urxe_dp_unbind(dev->dp);
	return rc;
}

void urxe_dev_want_ip_meta(struct urxe_dev *dev)
{
	urxe_dp_want_ip_meta(dev->dp);
}

int urxe_dev_bind(struct urxe_dev *dev)
{
	int rc = 0;

	if (dev->dead)
		return -EIO;
	pthread_mutex_lock(&dev->bind_lock);
	if (!urxe_dp_bound(dev->dp))
		rc = bind_locked(dev);
	pthread_mutex_unlock(&dev->bind_lock);
	if (rc)
		urxe_err("%s: cannot open the sockets on %s: %s", dev->desc.name,
			 dev->desc.netdev, strerror(-rc));
	return rc;
}

static uint64_t wait_deadline(void *ctx)
{
	return urxe_engine_next_deadline(((struct urxe_dev *)ctx)->eng);
}

static void wait_progress(void *ctx)
{
	urxe_engine_progress(((struct urxe_dev *)ctx)->eng);
}

static void wait_link(void *ctx)
{
	urxe_dev_link_check(ctx);
}

int urxe_dev_wait_fd(struct urxe_dev *dev, int fd, int timeout_ms)
{
	struct urxe_dp_wait w = { .fd = fd, .watch_fd = -1, .ctx = dev };

	/* Inherited across fork(): nothing of the instance to watch. */
	if (!dev->dead && dev->eng) {
		w.dp = dev->dp;
		w.deadline = wait_deadline;
		w.progress = wait_progress;
	}
	if (!dev->dead && dev->link) {
		w.watch_fd = urxe_iface_watch_fd(dev->link);
		w.on_watch = wait_link;
	}
	return urxe_dp_wait(&w, timeout_ms);
}
