// SPDX-License-Identifier: BSD-2-Clause
/*
 * Interface discovery over rtnetlink (libmnl): index, MTU, MAC, flags and
 * the addresses of one interface, read in the caller's network namespace.
 * One request per query; nothing is cached here (callers cache).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if_arp.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urxe/netdev.h>

struct nl_query {
	struct mnl_socket *nl;
	unsigned int portid;
	unsigned int seq;
	char buf[32768];	/* a dump message is at most this */
};

static int nl_open(struct nl_query *q)
{
	q->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!q->nl)
		return -errno;
	if (mnl_socket_bind(q->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(q->nl);
		return err;
	}
	q->portid = mnl_socket_get_portid(q->nl);
	q->seq = (unsigned int)time(NULL);
	return 0;
}

/* Sends the request in q->buf and feeds every reply to @cb. */
static int nl_run(struct nl_query *q, struct nlmsghdr *nlh, mnl_cb_t cb,
		  void *data)
{
	ssize_t n;
	int rc;

	nlh->nlmsg_seq = ++q->seq;
	if (mnl_socket_sendto(q->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		n = mnl_socket_recvfrom(q->nl, q->buf, sizeof(q->buf));
		if (n < 0)
			return -errno;
		rc = mnl_cb_run(q->buf, (size_t)n, q->seq, q->portid, cb, data);
		if (rc < 0)
			return -errno;
		if (rc == MNL_CB_STOP)
			return 0;
	}
}

static int link_attr(const struct nlattr *attr, void *data)
{
	struct urxe_iface *ifc = data;

	switch (mnl_attr_get_type(attr)) {
	case IFLA_MTU:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) >= 0)
			ifc->mtu = mnl_attr_get_u32(attr);
		break;
	case IFLA_ADDRESS:
		if (mnl_attr_get_payload_len(attr) == 6)
			memcpy(ifc->mac, mnl_attr_get_payload(attr), 6);
		break;
	case IFLA_IFNAME:
		if (mnl_attr_validate(attr, MNL_TYPE_STRING) >= 0)
			snprintf(ifc->name, sizeof(ifc->name), "%s",
				 mnl_attr_get_str(attr));
		break;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	struct urxe_iface *ifc = data;

	ifc->ifindex = ifm->ifi_index;
	ifc->up = !!(ifm->ifi_flags & IFF_UP);
	ifc->running = !!(ifm->ifi_flags & IFF_RUNNING);
	ifc->loopback = !!(ifm->ifi_flags & IFF_LOOPBACK) ||
			ifm->ifi_type == ARPHRD_LOOPBACK;
	mnl_attr_parse(nlh, sizeof(*ifm), link_attr, ifc);
	return MNL_CB_OK;
}

struct addr_walk {
	struct urxe_iface *ifc;
	struct urxe_ifaddr cur;
	bool have;
};

static int addr_attr(const struct nlattr *attr, void *data)
{
	struct addr_walk *w = data;
	size_t len = mnl_attr_get_payload_len(attr);
	int type = mnl_attr_get_type(attr);

	/* IFA_LOCAL is the address of this host on point-to-point links. */
	if (type != IFA_ADDRESS && type != IFA_LOCAL)
		return MNL_CB_OK;
	if (w->have && type == IFA_ADDRESS)
		return MNL_CB_OK;
	if (w->cur.family == AF_INET && len == 4)
		memcpy(&w->cur.v4, mnl_attr_get_payload(attr), 4);
	else if (w->cur.family == AF_INET6 && len == 16)
		memcpy(&w->cur.v6, mnl_attr_get_payload(attr), 16);
	else
		return MNL_CB_OK;
	w->have = true;
	return MNL_CB_OK;
}

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_walk *w = data;
	struct urxe_iface *ifc = w->ifc;

	if ((int)ifa->ifa_index != ifc->ifindex)
		return MNL_CB_OK;
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return MNL_CB_OK;
	if (ifc->naddrs == URXE_IFACE_MAX_ADDRS)
		return MNL_CB_OK;
	memset(&w->cur, 0, sizeof(w->cur));
	w->cur.family = ifa->ifa_family;
	w->cur.prefixlen = ifa->ifa_prefixlen;
	w->cur.scope = ifa->ifa_scope;
	w->have = false;
	mnl_attr_parse(nlh, sizeof(*ifa), addr_attr, w);
	if (!w->have)
		return MNL_CB_OK;
	/* IPv6 is on where the kernel gave the link an IPv6 address. */
	if (w->cur.family == AF_INET6)
		ifc->has_ipv6 = true;
	ifc->addrs[ifc->naddrs++] = w->cur;
	return MNL_CB_OK;
}

static int query_link(struct nl_query *q, const char *name,
		      struct urxe_iface *out)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(q->buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return nl_run(q, nlh, link_cb, out);
}

static int query_addrs(struct nl_query *q, int family, struct urxe_iface *out)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(q->buf);
	struct addr_walk w = { .ifc = out };
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)family;
	return nl_run(q, nlh, addr_cb, &w);
}

int urxe_iface_query(const char *name, struct urxe_iface *out)
{
	struct nl_query q;
	int rc;

	if (!name || !*name || strlen(name) >= IF_NAMESIZE)
		return -ENODEV;
	memset(out, 0, sizeof(*out));
	rc = nl_open(&q);
	if (rc)
		return rc;
	rc = query_link(&q, name, out);
	if (rc == -ENODEV || rc == -EINVAL)
		rc = -ENODEV;	/* the kernel answers either for no such link */
	/* IPv4 first, then IPv6: the order kernel rxe's GID table has. */
	if (!rc)
		rc = query_addrs(&q, AF_INET, out);
	if (!rc)
		rc = query_addrs(&q, AF_INET6, out);
	mnl_socket_close(q.nl);
	return rc;
}

/* ---- link changes (port events) ---- */

struct urxe_iface_watch {
	struct mnl_socket *nl;
	char buf[32768];		/* as nl_query: a message fits */
};

int urxe_iface_watch_open(struct urxe_iface_watch **out)
{
	struct urxe_iface_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!w->nl) {
		rc = -errno;
		free(w);
		return rc;
	}
	if (mnl_socket_bind(w->nl, RTMGRP_LINK, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		mnl_socket_close(w->nl);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int urxe_iface_watch_fd(const struct urxe_iface_watch *w)
{
	return mnl_socket_get_fd(w->nl);
}

bool urxe_iface_watch_drain(struct urxe_iface_watch *w)
{
	bool any = false;

	/* What changed is read back with urxe_iface_query(): only count. */
	while (mnl_socket_recvfrom(w->nl, w->buf, sizeof(w->buf)) > 0)
		any = true;
	return any;
}

void urxe_iface_watch_close(struct urxe_iface_watch *w)
{
	if (!w)
		return;
	mnl_socket_close(w->nl);
	free(w);
}
