/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet the engine hands the data path to send (its xmit), on its
 * own so that the engine's contract needs no more of the data path's.
 */
#ifndef URXE_PKT_H
#define URXE_PKT_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/uio.h>

/* An outgoing packet: RoCE bytes from the BTH through the ICRC. */
struct urxe_pkt {
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint16_t sport;
	uint8_t tclass;
	uint8_t hop_limit;
	struct iovec iov[4];
	unsigned int niov;
	uint32_t len;
};

#endif
