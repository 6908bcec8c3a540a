/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the netdev layer: what an interface looks like (index, MTU,
 * MAC, state, addresses, read over rtnetlink in the caller's network
 * namespace) and host-wide slots.  Nothing here knows about verbs.
 */
#ifndef URXE_NETDEV_H
#define URXE_NETDEV_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define URXE_IFACE_MAX_ADDRS 14

struct urxe_ifaddr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t prefixlen;
	uint8_t scope;		/* RT_SCOPE_* */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
};

struct urxe_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	unsigned int mtu;
	uint8_t mac[6];
	bool up;		/* IFF_UP */
	bool running;		/* IFF_RUNNING: carrier, operational */
	bool loopback;		/* IFF_LOOPBACK */
	bool has_ipv6;		/* the kernel has an inet6 device on it */
	unsigned int naddrs;
	struct urxe_ifaddr addrs[URXE_IFACE_MAX_ADDRS];
};

/*
 * Reads link and addresses of interface @name.  Returns 0, -ENODEV when the
 * interface does not exist in this namespace, or another negative errno.
 */
int urxe_iface_query(const char *name, struct urxe_iface *out);

/* Host-wide slots: byte k of one lock file, held with an OFD lock. */
#define URXE_SLOT_FIRST 1
#define URXE_SLOT_LAST 1022	/* QPN = slot << 14 | index stays < 0xFFFFFF */
#define URXE_RUNDIR_DEFAULT "/dev/shm/urxe-v1"

struct urxe_slot {
	int fd;			/* lock file, O_CLOEXEC, holds the OFD lock */
	unsigned int index;
};

/* Creates (mode 1777) or checks the runtime directory. */
int urxe_rundir_prepare(const char *rundir);
/*
 * Opens (creating mode 0666) @file inside @rundir.  Returns the fd or a
 * negative errno.
 */
int urxe_rundir_open(const char *rundir, const char *file);

/*
 * Claims the lowest free slot of @rundir.  The kernel drops the claim when
 * the process dies; urxe_slot_release() drops it earlier.
 */
int urxe_slot_claim(const char *rundir, struct urxe_slot *slot);
void urxe_slot_release(struct urxe_slot *slot);
/* Whether slot @index is held by anyone (other than @self_fd's holder). */
int urxe_slot_busy(const char *rundir, unsigned int index);

/* 127.117.h.l for a slot on loopback, in network byte order. */
struct in_addr urxe_slot_loopback_addr(unsigned int index);

#endif
