// SPDX-License-Identifier: BSD-2-Clause
/*
 * Room in a receive socket of this host, asked of the kernel.
 *
 * UC and UD have no acknowledgements: a sender faster than its receiver
 * loses what overflows the receive socket.  Between two instances on one
 * host the sender can know better: the kernel tells any user how much a
 * UDP socket holds and may hold (NETLINK_SOCK_DIAG, INET_DIAG_SKMEMINFO:
 * what `ss -um` shows), and whether an address is this host's own
 * (RTM_GETROUTE answers RTN_LOCAL).  Both come from the kernel, so no
 * other local user can forge them, and they reveal nothing `ss` does not.
 * A query is one netlink round trip (a few microseconds): the caller
 * keeps an estimate and asks when it runs out (rxe_provider/flow.c).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <urxe/netdev.h>
#include <urxe/util.h>

#include "nl.h"

struct urxe_sockroom {
	struct mnl_socket *diag;	/* NETLINK_SOCK_DIAG */
	struct mnl_socket *route;	/* NETLINK_ROUTE */
	unsigned int seq;
};

int urxe_sockroom_open(struct urxe_sockroom **out)
{
	struct urxe_sockroom *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->diag = urxe_nl_open(NETLINK_SOCK_DIAG);
	r->route = r->diag ? urxe_nl_open(NETLINK_ROUTE) : NULL;
	if (!r->route) {
		rc = -errno;
		if (r->diag)
			mnl_socket_close(r->diag);
		free(r);
		return rc ? rc : -EIO;
	}
	*out = r;
	return 0;
}

void urxe_sockroom_close(struct urxe_sockroom *r)
{
	if (!r)
		return;
	mnl_socket_close(r->diag);
	mnl_socket_close(r->route);
	free(r);
}

struct meminfo {
	bool have;
	uint32_t rmem_alloc, rcvbuf;
	uint32_t inode;
};

static int diag_attr(const struct nlattr *a, void *data)
{
	struct meminfo *m = data;
	const uint32_t *v;

	if (mnl_attr_get_type(a) != INET_DIAG_SKMEMINFO ||
	    mnl_attr_get_payload_len(a) <
	    (SK_MEMINFO_RCVBUF + 1) * sizeof(uint32_t))
		return MNL_CB_OK;
	v = mnl_attr_get_payload(a);
	m->rmem_alloc = v[SK_MEMINFO_RMEM_ALLOC];
	m->rcvbuf = v[SK_MEMINFO_RCVBUF];
	m->have = true;
	return MNL_CB_OK;
}

static int diag_cb(const struct nlmsghdr *nlh, void *data)
{
	struct meminfo *m = data;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return MNL_CB_OK;
	m->inode = ((const struct inet_diag_msg *)mnl_nlmsg_get_payload(nlh))
			   ->idiag_inode;
	return mnl_attr_parse(nlh, sizeof(struct inet_diag_msg), diag_attr,
			      data);
}

/* A sock_diag request for UDP sockets of @v4's family, in @nlh. */
static struct inet_diag_req_v2 *udp_diag_req(struct nlmsghdr *nlh, bool v4)
{
	struct inet_diag_req_v2 *q;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	q = mnl_nlmsg_put_extra_header(nlh, sizeof(*q));
	q->sdiag_family = (uint8_t)(v4 ? AF_INET : AF_INET6);
	q->sdiag_protocol = IPPROTO_UDP;
	return q;
}

/* One exact lookup of the socket a datagram from source port @sport reaches. */
static int query_one(struct urxe_sockroom *r, const uint8_t *gid,
		     uint16_t port, uint16_t sport, struct meminfo *m)
{
	char req[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct inet_diag_req_v2 *q;
	bool v4 = urxe_gid_is_v4(gid);
	int rc;

	*m = (struct meminfo){ 0 };
	q = udp_diag_req(nlh, v4);
	q->idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1);
	q->idiag_states = ~0u;
	/*
	 * The socket a datagram to @gid:@port from anywhere would reach: the
	 * lookup's destination is the socket's own address, and a zero source
	 * address matches no connected socket (transmit sockets connect).
	 */
	q->id.idiag_dport = htons(port);
	q->id.idiag_sport = htons(sport);
	memcpy(q->id.idiag_dst, v4 ? gid + 12 : gid, v4 ? 4 : 16);
	q->id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	q->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	rc = urxe_nl_ask(r->diag, &r->seq, nlh, diag_cb, m);
	if (rc)
		return rc;
	return m->have ? 0 : -ENOENT;
}

/*
 * An IPv4 receiver is a SO_REUSEPORT pair (netdev/udp.c: datagrams with a
 * UDP checksum to one, without to the other), and a lookup without a
 * packet picks one of a group by a hash of the source: so the room is
 * asked for from a few source ports until both sockets have answered, and
 * the smaller counts (a sender need not know which one its datagrams
 * reach).
 */
#define ROOM_PROBES 8

int urxe_sockroom_query(struct urxe_sockroom *r, const uint8_t *gid,
			uint16_t port, int64_t *room, int64_t *size)
{
	struct meminfo m;
	uint32_t first = 0;
	int64_t best = INT64_MAX, cap = INT64_MAX;
	int k, rc, probes = urxe_gid_is_v4(gid) ? ROOM_PROBES : 1;

	for (k = 0; k < probes; k++) {
		rc = query_one(r, gid, port, (uint16_t)(k ? 49152 + k : 0), &m);
		if (rc)
			return rc;
		if ((int64_t)m.rcvbuf - (int64_t)m.rmem_alloc < best)
			best = (int64_t)m.rcvbuf - (int64_t)m.rmem_alloc;
		if ((int64_t)m.rcvbuf < cap)
			cap = (int64_t)m.rcvbuf;
		if (k && m.inode != first)
			break;			/* both of the pair seen */
		first = m.inode;
	}
	*room = best;
	if (size)
		*size = cap;
	return 0;
}

/*
 * Who sends to a socket: the connected UDP sockets (state ESTABLISHED)
 * whose peer is @gid:@port, told apart by their own address.  An instance
 * has one address (its loopback slot's, or its interface's: the udp
 * backend binds port 4791 on it), and connects its transmit sockets to
 * the peers it sends to, so distinct sources are distinct instances.
 */
struct senders {
	const uint8_t *dst;		/* the peer's address, 4 or 16 bytes */
	size_t dst_len;
	uint16_t port;			/* network order */
	uint8_t (*src)[16];
	unsigned int n, max;
};

static int senders_cb(const struct nlmsghdr *nlh, void *data)
{
	struct senders *s = data;
	const struct inet_diag_msg *m;
	uint8_t src[16];
	unsigned int i;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return MNL_CB_OK;
	m = mnl_nlmsg_get_payload(nlh);
	if (m->id.idiag_dport != s->port ||
	    memcmp(m->id.idiag_dst, s->dst, s->dst_len))
		return MNL_CB_OK;
	if (s->dst_len == 4)
		urxe_gid_from_v4(src, m->id.idiag_src);
	else
		memcpy(src, m->id.idiag_src, 16);
	for (i = 0; i < s->n && i < s->max; i++)
		if (urxe_gid_eq(s->src[i], src))
			return MNL_CB_OK;
	if (s->n < s->max)
		memcpy(s->src[s->n], src, 16);
	s->n++;
	return MNL_CB_OK;
}

int urxe_sockroom_senders(struct urxe_sockroom *r, const uint8_t *gid,
			  uint16_t port, uint8_t (*src)[16], unsigned int max)
{
	char req[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct inet_diag_req_v2 *q;
	bool v4 = urxe_gid_is_v4(gid);
	struct senders s = {
		.dst = v4 ? gid + 12 : gid,
		.dst_len = v4 ? 4 : 16,
		.port = htons(port),
		.src = src,
		.max = max,
	};
	int rc;

	q = udp_diag_req(nlh, v4);
	q->idiag_states = 1u << 1;	/* TCP_ESTABLISHED: connected */
	rc = urxe_nl_dump(r->diag, &r->seq, nlh, senders_cb, &s);
	return rc ? rc : (int)s.n;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rt = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type == RTM_NEWROUTE)
		*(int *)data = rt->rtm_type;
	return MNL_CB_OK;
}

int urxe_sockroom_is_local(struct urxe_sockroom *r, const uint8_t *gid)
{
	char req[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct rtmsg *rt;
	bool v4 = urxe_gid_is_v4(gid);
	int type = -1, rc;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
	rt->rtm_family = (uint8_t)(v4 ? AF_INET : AF_INET6);
	rt->rtm_dst_len = v4 ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, v4 ? 4 : 16, v4 ? gid + 12 : gid);
	rc = urxe_nl_ask(r->route, &r->seq, nlh, route_cb, &type);
	if (rc == -ENETUNREACH || rc == -EHOSTUNREACH)
		return 0;
	if (rc)
		return rc;
	return type == RTN_LOCAL;
}
