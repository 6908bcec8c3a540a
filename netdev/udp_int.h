/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the udp backend, shared by its files: udp.c (the sockets:
 * opening, options, the source-port pool, multicast), udp_tx.c (sending,
 * connected sockets and their IPv4 IDs) and udp_rx.c (receiving).
 */
#ifndef URXE_UDP_INT_H
#define URXE_UDP_INT_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <urxe/icrc.h>
#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#define BATCH 32			/* datagrams per sendmmsg/recvmmsg */
#define SOCK_BUF URXE_UDP_SOCK_BUF	/* wished-for SO_RCVBUF/SO_SNDBUF */
#define CTL_BYTES 192			/* in6_pktinfo, 3 ints, a timespec */
#define CONN_HOLD 4096			/* datagrams before connecting again */
/*
 * A socket connects (its IPv4 IDs jump to a random counter) only after
 * this long without a connected datagram from its port: a receiver takes
 * such a jump after 1 ms of silence from the flow (wire/ipid.c).
 */
#define CONN_QUIET_NS 2000000ull
#define ID_RECHECK 65536		/* datagrams between two ID probes */

enum { V4, V6, NFAM };

union sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

union ctl {
	char buf[CTL_BYTES];
	struct cmsghdr align;
};

struct usock {
	int fd;
	uint8_t fam;			/* V4 or V6 */
	bool wildcard;			/* source address chosen per datagram */
	bool busy;			/* the last receive found datagrams */
	bool conn;			/* transmit socket connected to peer */
	bool id_known;			/* next_id is what the kernel writes */
	bool csum;			/* receive: datagrams had a UDP checksum */
	uint16_t port;
	uint16_t next_id;		/* IPv4 ID of its next datagram */
	uint32_t hold;			/* datagrams to go before connecting */
	uint64_t quiet_ns;		/* no counted ID from its port since */
	uint32_t since_probe;		/* datagrams sent since an ID probe */
	uint8_t peer[16];		/* connected: destination GID */
	uint8_t src[16];		/* connected: source GID */
};

struct urxe_udp {
	bool loopback;
	bool gso;				/* GSO sends: real IPv4 checksums */
	struct in_addr lo_addr;
	int ifindex;
	int8_t rx[NFAM];			/* socks index; -1: none */
	int8_t rx0;				/* IPv4, checksum 0; -1: none */
	int8_t tx[NFAM][URXE_UDP_TX_POOL];	/* socks index; -1: none */
	int8_t pool[URXE_UDP_TX_POOL];		/* 0 untried, 1 bound, -1 failed */
	unsigned int nsocks;
	unsigned int rr;			/* recv: family drained first */
	bool connect;
	int sink;				/* ID probes go there; -1: none */
	uint16_t sink_port;
	uint64_t probes;
	struct usock socks[URXE_UDP_MAX_FDS];
	/* Datagrams from connected IPv4 sockets, with their ICRCs rewritten */
	struct urxe_ipid_fix fix;
};

/*
 * The data path's socket calls go to the kernel directly.  glibc's
 * wrappers are cancellation points: in a process with more than one
 * thread (there is always the engine's) each call pays two atomic
 * operations for that, and a thread cancelled inside one would leave the
 * progress lock held.
 */
static inline ssize_t sys_sendmsg(int fd, const struct msghdr *h)
{
	return syscall(SYS_sendmsg, fd, h, 0);
}

static inline int sys_sendmmsg(int fd, struct mmsghdr *m, unsigned int n)
{
	return (int)syscall(SYS_sendmmsg, fd, m, n, 0);
}

static inline ssize_t sys_recvmsg(int fd, struct msghdr *h, int flags)
{
	return syscall(SYS_recvmsg, fd, h, flags);
}

static inline int sys_recvmmsg(int fd, struct mmsghdr *m, unsigned int n)
{
	return (int)syscall(SYS_recvmmsg, fd, m, n, MSG_DONTWAIT, NULL);
}


/* udp.c: the local address a socket of family @fam binds for @port. */
socklen_t udp_local_addr(const struct urxe_udp *u, int fam, uint16_t port,
			 union sa *a);
/* udp.c: CLOCK_MONOTONIC in ns. */
uint64_t udp_mono_ns(void);
/* udp.c: a transmit socket takes no input (a drop-all filter). */
void udp_deaf(int fd);
/* udp_tx.c: the address of @a as a GID. */
void udp_gid_from_sa(uint8_t *gid, const union sa *a);

#endif
