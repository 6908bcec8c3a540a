// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet backend (packet.c) behind the common face of
 * include/urxe/backend.h: frames go into the TX ring as they are (the
 * ring makes its own GSO super-frames of consecutive packets of one
 * flow), received frames are read where they lie in the RX ring, with
 * their real IP header, until recv_done() hands them back.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/backend.h>
#include <urxe/netdev.h>

#define RX_BATCH 32
/* Packets in flight toward one receiver, at most (its ring holds more). */
#define BUDGET_MAX 256

struct pkt_be {
	struct urxe_packet *p;
	uint16_t ip_id[URXE_BACKEND_SEND_MAX];
	struct urxe_packet_in in[RX_BATCH];
};

static int be_open(const struct urxe_backend_conf *c, void **out)
{
	struct urxe_packet_conf conf = {
		.ifc = c->ifc, .slot = c->slot, .lo_addr = c->lo_addr,
		.gso = c->gso,
	};
	struct pkt_be *be = malloc(sizeof(*be));
	int rc;

	if (!be)
		return -ENOMEM;
	rc = urxe_packet_open(&conf, &be->p);
	if (rc) {
		free(be);
		return rc;
	}
	*out = be;
	return 0;
}

static void be_close(void *b)
{
	struct pkt_be *be = b;

	urxe_packet_close(be->p);
	free(be);
}

static int be_send(void *b, struct urxe_frame_desc *f, unsigned int n)
{
	struct pkt_be *be = b;
	unsigned int i;
	int rc;

	rc = urxe_packet_send(be->p, f, n, be->ip_id);
	for (i = 0; rc > 0 && i < (unsigned int)rc; i++)
		f[i].ip_id = be->ip_id[i];
	return rc;
}

static int be_recv(void *b, struct urxe_frame_desc *f, unsigned int n)
{
	struct pkt_be *be = b;
	int i, rc;

	rc = urxe_packet_recv(be->p, be->in, n < RX_BATCH ? n : RX_BATCH);
	for (i = 0; i < rc; i++) {
		const struct urxe_packet_in *in = &be->in[i];

		f[i] = (struct urxe_frame_desc){
			.dst = in->dst, .src = in->src, .sport = in->sport,
			.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
			.ip_id = in->ip_id, .buf = in->roce, .len = in->len,
			.ip = in->ip, .ip_len = in->ip_len,
		};
	}
	return rc;
}

static void be_recv_done(void *b)
{
	urxe_packet_release(((struct pkt_be *)b)->p);
}

static unsigned int be_fds(void *b, int *fds)
{
	fds[0] = urxe_packet_fd(((struct pkt_be *)b)->p);
	return 1;
}

/* Frames are built here: the port asked for is the port sent. */
static uint16_t be_sport(void *b, uint16_t sport)
{
	(void)b;
	return sport;
}

static int be_mcast(void *b, const uint8_t *gid, bool join)
{
	return urxe_packet_mcast(((struct pkt_be *)b)->p, gid, join);
}

/*
 * Peers are assumed to hold what we do, within reason.  With GSO the
 * ring's frames are fewer but hold a super-frame each (up to ~60
 * packets): the packets in flight are counted as without it.
 */
static unsigned int be_budget(void *b)
{
	struct urxe_packet *p = ((struct pkt_be *)b)->p;
	unsigned int budget = urxe_packet_rx_frames(p) / 4;

	if (urxe_packet_gso(p))
		budget = BUDGET_MAX;
	return budget < BUDGET_MAX ? budget : BUDGET_MAX;
}

static bool be_gso(void *b)
{
	return urxe_packet_gso(((struct pkt_be *)b)->p);
}

static bool be_rx_pending(void *b)
{
	return urxe_packet_rx_pending(((struct pkt_be *)b)->p);
}

static unsigned int be_rx_since_tx(void *b, unsigned int *run)
{
	return urxe_packet_rx_since_tx(((struct pkt_be *)b)->p, run);
}

const struct urxe_backend_ops urxe_packet_backend = {
	.name = "packet",
	.tx_batch = 64,
	.rx_batch = RX_BATCH,
	.rx_cheap = true,
	.open = be_open,
	.close = be_close,
	.send = be_send,
	.recv = be_recv,
	.recv_done = be_recv_done,
	.rx_fds = be_fds,
	.tx_fds = be_fds,
	.sport = be_sport,
	.mcast = be_mcast,
	.budget = be_budget,
	.gso = be_gso,
	.rx_pending = be_rx_pending,
	.rx_since_tx = be_rx_since_tx,
};
