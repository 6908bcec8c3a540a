// SPDX-License-Identifier: BSD-2-Clause
/*
 * The next hop on the packet backend: the destination MAC of a frame.
 *
 * Link-layer addresses: the next hop from RTM_GETROUTE, its MAC from
 * RTM_GETNEIGH; when the kernel does not know it yet, an ordinary UDP
 * datagram (to the discard port) makes it ask, and the table is polled
 * (at most NEIGH_WAIT_MS).  Results are cached for NEIGH_TTL_NS.  A
 * multicast GID maps to its group's MAC; on loopback every MAC is 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#include "nl.h"
#include "packet_int.h"

#define NEIGH_TTL_NS 1000000000ull	/* re-read the kernel's table */
#define NEIGH_WAIT_MS 1000		/* resolution, at most */
#define DISCARD_PORT 9

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- neighbours ---- */

struct nl_reply {
	int family;
	bool have_gw, have_oif, have_mac;
	uint8_t gw[16];
	int oif;
	uint8_t type;
	uint16_t state;
	uint8_t mac[6];
};

static int route_attr(const struct nlattr *a, void *data)
{
	struct nl_reply *r = data;
	size_t alen = r->family == AF_INET ? 4 : 16;

	switch (mnl_attr_get_type(a)) {
	case RTA_GATEWAY:
		if (mnl_attr_get_payload_len(a) == alen) {
			memcpy(r->gw, mnl_attr_get_payload(a), alen);
			r->have_gw = true;
		}
		break;
	case RTA_OIF:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0) {
			r->oif = (int)mnl_attr_get_u32(a);
			r->have_oif = true;
		}
		break;
	}
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rt = mnl_nlmsg_get_payload(nlh);
	struct nl_reply *r = data;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	r->type = rt->rtm_type;
	return mnl_attr_parse(nlh, sizeof(*rt), route_attr, r);
}

static int neigh_attr(const struct nlattr *a, void *data)
{
	struct nl_reply *r = data;

	if (mnl_attr_get_type(a) == NDA_LLADDR &&
	    mnl_attr_get_payload_len(a) == 6) {
		memcpy(r->mac, mnl_attr_get_payload(a), 6);
		r->have_mac = true;
	}
	return MNL_CB_OK;
}

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
	struct nl_reply *r = data;

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_OK;
	r->state = nd->ndm_state;
	return mnl_attr_parse(nlh, sizeof(*nd), neigh_attr, r);
}

/* The next hop toward @gid: @hop (a GID) on our interface, or -errno. */
static int route_get(struct urxe_packet *p, const uint8_t *gid, uint8_t *hop)
{
	char req[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct rtmsg *rt;
	struct nl_reply r = { 0 };
	bool v4 = urxe_gid_is_v4(gid);
	int rc;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
	rt->rtm_family = (uint8_t)(v4 ? AF_INET : AF_INET6);
	rt->rtm_dst_len = v4 ? 32 : 128;
	r.family = rt->rtm_family;
	mnl_attr_put(nlh, RTA_DST, v4 ? 4 : 16, v4 ? gid + 12 : gid);
	if (!v4 && gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80)
		mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)p->ifindex);
	rc = urxe_nl_ask(p->nl, &p->nl_seq, nlh, route_cb, &r);
	if (rc)
		return rc;
	if (r.type == RTN_LOCAL)
		return -EADDRNOTAVAIL;		/* this host's own address */
	if (r.type != RTN_UNICAST || !r.have_oif)
		return -ENETUNREACH;
	if (r.oif != p->ifindex)
		return -EXDEV;
	if (!r.have_gw) {
		memcpy(hop, gid, 16);
	} else if (v4) {
		urxe_gid_from_v4(hop, r.gw);
	} else {
		memcpy(hop, r.gw, 16);
	}
	return 0;
}

/* The kernel's entry for @hop: 0 and @mac when usable, else -errno. */
static int neigh_get(struct urxe_packet *p, const uint8_t *hop, uint8_t *mac)
{
	char req[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct ndmsg *nd;
	struct nl_reply r = { 0 };
	bool v4 = urxe_gid_is_v4(hop);
	int rc;

	nlh->nlmsg_type = RTM_GETNEIGH;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));
	nd->ndm_family = (uint8_t)(v4 ? AF_INET : AF_INET6);
	nd->ndm_ifindex = p->ifindex;
	mnl_attr_put(nlh, NDA_DST, v4 ? 4 : 16, v4 ? hop + 12 : hop);
	rc = urxe_nl_ask(p->nl, &p->nl_seq, nlh, neigh_cb, &r);
	if (rc)
		return rc;
	if (!r.have_mac || !(r.state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY |
					 NUD_PROBE | NUD_PERMANENT | NUD_NOARP)))
		return -EHOSTUNREACH;
	memcpy(mac, r.mac, 6);
	return 0;
}

/* An ordinary datagram toward @hop makes the kernel resolve it. */
static void neigh_trigger(struct urxe_packet *p, const uint8_t *hop)
{
	bool v4 = urxe_gid_is_v4(hop);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, p->ifname,
		   (socklen_t)strlen(p->ifname));
	if (v4) {
		a4.sin_port = htons(DISCARD_PORT);
		memcpy(&a4.sin_addr, hop + 12, 4);
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&a4, sizeof(a4));
	} else {
		a6.sin6_port = htons(DISCARD_PORT);
		memcpy(&a6.sin6_addr, hop, 16);
		a6.sin6_scope_id = (uint32_t)p->ifindex;
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&a6, sizeof(a6));
	}
	close(fd);
}

static void mcast_mac(const uint8_t *gid, uint8_t *mac)
{
	if (urxe_gid_is_v4(gid)) {
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f;
		mac[4] = gid[14];
		mac[5] = gid[15];
	} else {
		mac[0] = mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
	}
}

static int resolve(struct urxe_packet *p, const uint8_t *gid, uint8_t *mac)
{
	char name[INET6_ADDRSTRLEN];
	uint8_t hop[16];
	unsigned int i;
	int rc, waited;

	rc = route_get(p, gid, hop);
	if (rc)
		goto err;
	rc = neigh_get(p, hop, mac);
	if (!rc)
		return 0;
	neigh_trigger(p, hop);
	for (waited = 0; waited < NEIGH_WAIT_MS; waited++) {
		poll(NULL, 0, 1);
		rc = neigh_get(p, hop, mac);
		if (!rc)
			return 0;
		if (waited == NEIGH_WAIT_MS / 2)
			neigh_trigger(p, hop);
	}
err:
	if (urxe_gid_is_v4(gid))
		inet_ntop(AF_INET, gid + 12, name, sizeof(name));
	else
		inet_ntop(AF_INET6, gid, name, sizeof(name));
	for (i = 0; i < NEIGH_SLOTS; i++)
		if (p->neigh[i].used && !memcmp(p->neigh[i].gid, gid, 16) &&
		    p->neigh[i].err == rc)
			return rc;		/* said so already */
	if (rc == -EADDRNOTAVAIL)
		urxe_err("packet backend: %s is this host's own address: the packet backend cannot reach a process on its own host through %s (use the udp backend or another namespace)",
			 name, p->ifname);
	else if (rc == -EXDEV || rc == -ENETUNREACH)
		urxe_err("packet backend: no route to %s through %s", name,
			 p->ifname);
	else
		urxe_err("packet backend: cannot resolve the link-layer address of %s on %s (no ARP/neighbour reply within %d ms): %s",
			 name, p->ifname, NEIGH_WAIT_MS, strerror(-rc));
	return rc;
}

/* The destination MAC of a frame to @gid: 0, or -errno (cached too). */
int urxe_nexthop_dest_mac(struct urxe_packet *p, const uint8_t *gid,
			  uint8_t *mac)
{
	struct neigh *n = &p->neigh[p->neigh_last];
	uint64_t now;
	unsigned int i;

	if (p->loopback) {
		memset(mac, 0, 6);
		return 0;
	}
	if (urxe_gid_is_mcast(gid)) {
		mcast_mac(gid, mac);
		return 0;
	}
	now = now_ns();
	if (!(n->used && !memcmp(n->gid, gid, 16))) {
		n = NULL;
		for (i = 0; i < NEIGH_SLOTS; i++) {
			if (p->neigh[i].used &&
			    !memcmp(p->neigh[i].gid, gid, 16)) {
				n = &p->neigh[i];
				p->neigh_last = i;
				break;
			}
		}
	}
	if (!n || now >= n->until_ns) {
		uint8_t m[6];
		int rc = resolve(p, gid, m);

		if (!n) {
			p->neigh_last = p->neigh_next++ % NEIGH_SLOTS;
			n = &p->neigh[p->neigh_last];
			memcpy(n->gid, gid, 16);
			n->used = true;
		}
		/* A failure that was good before keeps the old MAC a while. */
		if (!rc || n->err)
			n->err = rc;
		if (!rc)
			memcpy(n->mac, m, 6);
		n->until_ns = now_ns() + NEIGH_TTL_NS;
	}
	if (n->err)
		return n->err;
	memcpy(mac, n->mac, 6);
	return 0;
}
