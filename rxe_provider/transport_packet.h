/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet backend beneath an instance (transport_packet.c): what
 * transport.c calls for a device configured with `backend packet`.
 */
#ifndef URXE_TRANSPORT_PACKET_H
#define URXE_TRANSPORT_PACKET_H

#include <sys/uio.h>

#include <urxe/engine.h>
#include <urxe/netdev.h>

struct urxe_dev;

/* The engine's operations over the ring socket. */
extern const struct urxe_engine_ops urxe_packet_dev_ops;

/*
 * Opens the ring socket (dev->pkt) and starts the engine thread on it;
 * bind lock held.  -EPERM without CAP_NET_RAW (logged, saying what to
 * grant).
 */
int urxe_dev_packet_bind(struct urxe_dev *dev);
/* Closes it (the engine thread is gone). */
void urxe_dev_packet_unbind(struct urxe_dev *dev);

/*
 * transport.c's, for both backends.  URXE_FAULTS and URXE_PCAP, read as
 * the sockets open (dev->faults, dev->tx, dev->cap).
 */
void urxe_dev_debug_knobs(struct urxe_dev *dev);
/* Closes and frees what it opened (a bind that failed). */
void urxe_dev_debug_knobs_undo(struct urxe_dev *dev);
/*
 * Records a packet as it left (URXE_PCAP): @c gives its addresses, ports
 * and IP ID; its bytes lie in @iov (@n pieces, copied whole if several).
 */
void urxe_dev_capture_sent(struct urxe_dev *dev, struct urxe_capture_pkt *c,
			   const struct iovec *iov, unsigned int n);
/* The engine's clock (now): CLOCK_MONOTONIC, in ns; @priv unused. */
uint64_t urxe_dev_now(void *priv);
/*
 * Defines static void @name(@type *out, unsigned int k) for either
 * backend's transmit batch (struct urxe_udp_out, urxe_packet_out): groups
 * it by destination and source port, keeping the order within each group.
 * A flow's (a QP's) packets stay in order; packets of many QPs sharing a
 * pool port come together, and runs of one flow can leave as one (GSO).
 */
#define URXE_DEV_GROUP_FLOWS(name, type)				\
static int name##_cmp(const type *a, const type *b)			\
{									\
	int c = urxe_gid_cmp(a->dst, b->dst);				\
									\
	return c ? c : (int)a->sport - (int)b->sport;			\
}									\
									\
static void name(type *out, unsigned int k)				\
{									\
	unsigned int i, j;						\
									\
	for (i = 1; i < k; i++) {					\
		type t = out[i];					\
									\
		for (j = i; j > 0 && name##_cmp(&out[j - 1], &t) > 0;	\
		     j--)						\
			out[j] = out[j - 1];				\
		out[j] = t;						\
	}								\
}
/* Packets urxe_dev_faults_apply() takes at most (it makes up to twice as many). */
#define URXE_DEV_FAULTS_BATCH 32
/* One packet's bytes, jumbo frames included. */
#define URXE_DEV_PKT_BUF 9216
/*
 * transport_faults.c.  Sets up the injector of URXE_FAULTS (as read by
 * urxe_dev_faults_read) when the sockets open: dev->faults and its
 * scratch dev->tx, or neither (0, or -ENOMEM: then no injection, which
 * the bind reports); urxe_dev_faults_stop() undoes it.
 */
int urxe_dev_faults_start(struct urxe_dev *dev);
void urxe_dev_faults_stop(struct urxe_dev *dev);
/* Room for the batch urxe_dev_faults_apply() makes (2 x the batch). */
struct urxe_pkt *urxe_dev_faulted(struct urxe_dev *dev);
/*
 * URXE_FAULTS: what the wire does to the packets of a transmit batch —
 * dropped ones vanish, duplicated ones go twice, corrupted ones go with a
 * flipped bit (the receiver's ICRC check drops them), a reordered one
 * waits for the next packet.  The first @n (at most
 * URXE_DEV_FAULTS_BATCH) of @pkts become the batch in @out (room for
 * twice as many), each packet in one piece (a packet in pieces is first
 * copied whole, into dev->tx); returns its length.
 */
unsigned int urxe_dev_faults_apply(struct urxe_dev *dev,
				   const struct urxe_pkt *pkts, unsigned int n,
				   struct urxe_pkt *out);
/*
 * It counts each fault (URXE_CNT_FAULT_*) and, for URXE_PCAP, captures a
 * dropped packet with a comment saying so; the comment on packet @i of
 * the batch it made (duplicate, reordered, corrupted), or NULL.
 */
const char *urxe_dev_fault_note(struct urxe_dev *dev, unsigned int i);

#endif
