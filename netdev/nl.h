/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netdev's small netlink requests (libmnl): a route, a neighbour, a
 * socket's memory, one answer each; and the dump of a protocol's sockets.
 * Dumps of interfaces and addresses stay with iface.c.
 */
#ifndef URXE_NETDEV_NL_H
#define URXE_NETDEV_NL_H

#include <libmnl/libmnl.h>

/* A netlink socket on @bus, bound with an automatic port id; NULL, errno. */
struct mnl_socket *urxe_nl_open(int bus);

/*
 * Sends @nlh (numbered from *@seq) and feeds its one answer to @cb:
 * 0 or -errno (-ENOENT: no such object).  The kernel answers inside the
 * send, so the receive does not wait.
 */
int urxe_nl_ask(struct mnl_socket *nl, unsigned int *seq,
		struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

/*
 * Sends dump request @nlh and feeds every answer to @cb until the dump's
 * end (or @cb stops it): 0 or -errno.
 */
int urxe_nl_dump(struct mnl_socket *nl, unsigned int *seq,
		 struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

#endif
