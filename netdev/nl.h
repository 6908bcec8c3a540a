/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * netdev's netlink requests without NLM_F_DUMP (libmnl): a route, a
 * neighbour, a socket's memory; one answer each.  Dumps (interfaces,
 * addresses) stay with iface.c, which reads until NLMSG_DONE.
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

#endif
