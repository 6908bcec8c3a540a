/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The frame backends' common face: what the data path (datapath/) drives,
 * whichever backend a device uses.  netdev's `udp` (udp.c, through
 * udp_backend.c) and `packet` (packet.c, through packet_backend.c) each
 * fill one struct urxe_backend_ops; the data path's pipeline (faults,
 * capture, flow grouping, GSO, retries, receive batching) is written once
 * above it.  One frame descriptor serves both directions.
 */
#ifndef URXE_BACKEND_H
#define URXE_BACKEND_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct urxe_iface;

/*
 * One RoCE frame, going out or coming in.  Addresses are 16-byte GIDs
 * (IPv4-mapped or IPv6); the RoCE bytes run from the BTH through the ICRC.
 */
struct urxe_frame_desc {
	const uint8_t *dst;
	const uint8_t *src;
	uint16_t sport;
	uint16_t dport;			/* receive */
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;			/* send: 0, the kernel's default */
	/*
	 * Send: nonzero, @iov holds several packets of this size (the last
	 * may be shorter), split by the kernel (UDP GSO), segment i with
	 * IPv4 ID i.  Receive: a GRO datagram, packets of this size.
	 */
	uint16_t gso_size;
	/*
	 * Send: the IPv4 ID the frame left with, as far as the backend
	 * knows (set by send).  Receive, with @ip: the ID it carried.
	 */
	uint16_t ip_id;
	/* Send: the ICRC must stay as built (IDs 0, 1, ...): unconnected. */
	bool fixed_ids;
	/* Send: an acknowledgement, not an answer (receive moderation). */
	bool ack;
	/* Receive: cut short by the buffer (dropped). */
	bool truncated;
	/* Receive: it carried a UDP checksum, which the kernel verified. */
	bool csum;
	/* Send: the RoCE bytes. */
	const struct iovec *iov;
	unsigned int niov;
	/* Receive: the RoCE bytes, and the real IP header when known. */
	const uint8_t *buf;
	uint32_t len;
	const uint8_t *ip;
	uint32_t ip_len;
	/* Receive: when the kernel took it, CLOCK_REALTIME ns (0: unknown). */
	uint64_t rx_ns;
};

/* Where and how a backend opens. */
struct urxe_backend_conf {
	const struct urxe_iface *ifc;
	unsigned int slot;		/* the instance's slot (packet: filter) */
	struct in_addr lo_addr;		/* loopback: the slot's address */
	bool gso;			/* GSO sends, GRO receives */
	bool connect;			/* udp: connected transmit sockets */
};

#define URXE_BACKEND_MAX_FDS 11		/* URXE_UDP_MAX_FDS */
/* Frames one send() gets at most (a batch with faults: twice the engine's). */
#define URXE_BACKEND_SEND_MAX 64

/*
 * A backend.  All functions take the state open() made; nothing locks
 * inside (the data path's caller serializes, under the progress lock).
 * Negative errnos as the backend's own calls return them.
 */
struct urxe_backend_ops {
	const char *name;
	/*
	 * Packets one transmit takes from the engine (send() may get up to
	 * URXE_BACKEND_SEND_MAX frames); frames one recv() asks for.
	 */
	unsigned int tx_batch;
	unsigned int rx_batch;
	/*
	 * The data path folds runs of one flow into one frame with
	 * gso_size (udp); else the backend makes its own super-frames of
	 * consecutive packets of one flow (packet), and the data path only
	 * groups them.
	 */
	bool tx_merge;
	/*
	 * Multicast on loopback reaches no other instance (udp): the data
	 * path sends a unicast copy to each member slot instead.
	 */
	bool lo_mcast_copies;
	/*
	 * Received frames carry the kernel's receive time (udp): arrival is
	 * measured from it; else from the engine's clock.
	 */
	bool rx_stamps;
	/*
	 * Asking again costs no system call (packet: ring memory): receive
	 * goes on until nothing is left, else it stops after a short batch.
	 */
	bool rx_cheap;
	int (*open)(const struct urxe_backend_conf *conf, void **out);
	void (*close)(void *b);
	/*
	 * Sends up to @n frames (at most URXE_BACKEND_SEND_MAX): how many
	 * were taken, or -EAGAIN (no room: retry later), or another
	 * negative errno that concerns f[0] alone.  Sets each taken frame's
	 * ip_id.
	 */
	int (*send)(void *b, struct urxe_frame_desc *f, unsigned int n);
	/*
	 * Receives up to @n frames (at most rx_batch) without blocking: how
	 * many, 0 when none waits, or a negative errno.  They stay valid
	 * until recv_done() (may be NULL) or the next recv().
	 */
	int (*recv)(void *b, struct urxe_frame_desc *f, unsigned int n);
	void (*recv_done)(void *b);
	/* Descriptors that become readable with input; writable with room. */
	unsigned int (*rx_fds)(void *b, int *fds);
	unsigned int (*tx_fds)(void *b, int *fds);
	/* The UDP source port a frame asking for @sport leaves with. */
	uint16_t (*sport)(void *b, uint16_t sport);
	/* A real interface: join or leave IP multicast group @gid. */
	int (*mcast)(void *b, const uint8_t *gid, bool join);
	/* Report TOS and TTL on receive (NULL: always reported). */
	int (*ip_meta)(void *b, bool on);
	/* Packets a peer may have in flight toward us (the engine's budget). */
	unsigned int (*budget)(void *b);
	/* Whether GSO is on (the kernel may refuse it). */
	bool (*gso)(void *b);
	/*
	 * Receive moderation (NULL: none): a frame waits now (no system
	 * call); frames received since the last send, and (@run) since the
	 * last one that sent more than ACKs.
	 */
	bool (*rx_pending)(void *b);
	unsigned int (*rx_since_tx)(void *b, unsigned int *run);
};

/* netdev's two backends. */
extern const struct urxe_backend_ops urxe_udp_backend;
extern const struct urxe_backend_ops urxe_packet_backend;

#endif
