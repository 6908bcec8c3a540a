// SPDX-License-Identifier: BSD-2-Clause
/*
 * The udp backend (udp.c) behind the common face of include/urxe/backend.h:
 * frames become datagrams and back, and the receive buffers live here
 * (a GRO datagram takes up to 64 KiB).  The pool of transmit ports is
 * bound whole at open, so that the descriptor set is fixed from then on.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/backend.h>
#include <urxe/netdev.h>

#define RX_BATCH 16
#define RX_BUF 65536			/* a GRO datagram: up to 64 KiB */
#define BUDGET_PKT_BYTES 4096

struct udp_be {
	struct urxe_udp *u;
	bool gso;
	struct urxe_udp_in in[RX_BATCH];
	uint8_t buf[RX_BATCH][RX_BUF];
};

_Static_assert(URXE_BACKEND_MAX_FDS >= URXE_UDP_MAX_FDS, "room for the fds");

static int be_open(const struct urxe_backend_conf *c, void **out)
{
	struct urxe_udp_conf conf = {
		.ifc = c->ifc, .loopback = c->ifc->loopback,
		.lo_addr = c->lo_addr, .gso = c->gso, .connect = c->connect,
	};
	struct udp_be *be = malloc(sizeof(*be));
	int rc;

	if (!be)
		return -ENOMEM;
	/* The buffers need no zeroes. */
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		be->in[i].buf = be->buf[i];
		be->in[i].cap = RX_BUF;
	}
	be->gso = c->gso;
	rc = urxe_udp_open(&conf, &be->u);
	if (rc) {
		free(be);
		return rc;
	}
	/* Bind the whole source-port pool now: the descriptor set is fixed. */
	for (unsigned int k = 0; k < URXE_UDP_TX_POOL; k++)
		urxe_udp_sport(be->u, (uint16_t)(URXE_UDP_SPORT_BASE + k));
	*out = be;
	return 0;
}

static void be_close(void *b)
{
	struct udp_be *be = b;

	urxe_udp_close(be->u);
	free(be);
}

static int be_send(void *b, struct urxe_frame_desc *f, unsigned int n)
{
	struct udp_be *be = b;
	unsigned int i;
	int rc;

	rc = urxe_udp_send(be->u, f, n, NULL);
	/* Unconnected (a capture wants the IDs): ID 0, i on GSO segment i. */
	for (i = 0; rc > 0 && i < (unsigned int)rc; i++)
		f[i].ip_id = 0;
	return rc;
}

static int be_recv(void *b, struct urxe_frame_desc *f, unsigned int n)
{
	struct udp_be *be = b;
	int i, rc;

	rc = urxe_udp_recv(be->u, be->in, n < RX_BATCH ? n : RX_BATCH);
	for (i = 0; i < rc; i++) {
		const struct urxe_udp_in *in = &be->in[i];

		f[i] = (struct urxe_frame_desc){
			.dst = in->dst, .src = in->src, .sport = in->sport,
			.dport = in->dport, .tos = in->tos, .ttl = in->ttl,
			.gso_size = in->gso_size, .truncated = in->truncated,
			.csum = in->csum, .buf = in->buf, .len = in->len,
			.rx_ns = in->rx_ns,
		};
	}
	return rc;
}

static unsigned int be_rx_fds(void *b, int *fds)
{
	return urxe_udp_rx_fds(((struct udp_be *)b)->u, fds);
}

static unsigned int be_tx_fds(void *b, int *fds)
{
	return urxe_udp_fds(((struct udp_be *)b)->u, fds);
}

static uint16_t be_sport(void *b, uint16_t sport)
{
	return urxe_udp_sport(((struct udp_be *)b)->u, sport);
}

static int be_mcast(void *b, const uint8_t *gid, bool join)
{
	return urxe_udp_mcast(((struct udp_be *)b)->u, gid, join);
}

static int be_ip_meta(void *b, bool on)
{
	return urxe_udp_ip_meta(((struct udp_be *)b)->u, on);
}

/*
 * What the receive socket holds bounds what may be in flight toward it;
 * a peer's is assumed alike.  The kernel charges a packet's whole
 * buffer: count two MTU-sized pages a packet.
 */
static unsigned int be_budget(void *b)
{
	return urxe_udp_rcvbuf(((struct udp_be *)b)->u) /
	       (2 * BUDGET_PKT_BYTES);
}

static bool be_gso(void *b)
{
	return ((struct udp_be *)b)->gso;
}

const struct urxe_backend_ops urxe_udp_backend = {
	.name = "udp",
	.tx_batch = 32,
	.rx_batch = RX_BATCH,
	.tx_merge = true,
	.lo_mcast_copies = true,
	.rx_stamps = true,
	.open = be_open,
	.close = be_close,
	.send = be_send,
	.recv = be_recv,
	.rx_fds = be_rx_fds,
	.tx_fds = be_tx_fds,
	.sport = be_sport,
	.mcast = be_mcast,
	.ip_meta = be_ip_meta,
	.budget = be_budget,
	.gso = be_gso,
};
