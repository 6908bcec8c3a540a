/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the packet backend shared by its files: the instance, its
 * rings and its cache of next hops (packet.c), the next hop (nexthop.c).
 * GSO's entry points (packet_gso.c), which the tests call, are in
 * <urxe/netdev.h>.  Nothing locks: the caller serializes calls on one
 * instance.
 */
#ifndef URXE_PACKET_INT_H
#define URXE_PACKET_INT_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/netdev.h>

#define NEIGH_SLOTS 32

struct mnl_socket;

struct ring {
	uint8_t *base;
	unsigned int frame_size;
	unsigned int nframes;
	unsigned int per_block;		/* frames in a block (none straddles) */
	size_t block_size;
	unsigned int head;
};

struct neigh {
	uint8_t gid[16];
	uint8_t mac[6];
	bool used;
	int err;			/* 0: mac valid; else why not */
	uint64_t until_ns;
};

struct urxe_packet {
	int fd;
	int sink[2];
	int mc[2];			/* IPv4, IPv6 group memberships (lazy) */
	struct in_addr lo_addr;		/* loopback: the slot's own address */
	uint8_t *map;
	size_t map_len;
	struct ring rx, tx;
	unsigned int rx_held;		/* handed out by recv, not released */
	unsigned int rx_part;		/* segments of the next one handed out */
	bool gso;			/* PACKET_VNET_HDR, super-frames */
	unsigned int rx_since_tx;	/* frames received since the last send */
	unsigned int rx_run;		/* ... since the last with an answer */
	int ifindex;
	unsigned int mtu;
	bool loopback;
	uint8_t mac[6];
	char ifname[IF_NAMESIZE];
	struct mnl_socket *nl;
	unsigned int nl_seq;
	struct neigh neigh[NEIGH_SLOTS];
	unsigned int neigh_next, neigh_last;
	bool warned_trunc;
	/*
	 * Loopback: the sink keeps a byte of each UC/UD request (open_sink);
	 * those handed out and not yet taken from it, and whether any came
	 * since it was last emptied.
	 */
	bool sink_paced;
	unsigned int sink_owed;
	bool sink_dirty;
};

/* ---- the next hop (nexthop.c) ---- */

/* The destination MAC of a frame to @gid: 0, or -errno (cached too). */
int urxe_nexthop_dest_mac(struct urxe_packet *p, const uint8_t *gid,
			  uint8_t *mac);

#endif
