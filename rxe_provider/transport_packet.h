/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet backend beneath an instance (transport_packet.c): what
 * transport.c calls for a device configured with `backend packet`.
 */
#ifndef URXE_TRANSPORT_PACKET_H
#define URXE_TRANSPORT_PACKET_H

#include <urxe/engine.h>

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

#endif
