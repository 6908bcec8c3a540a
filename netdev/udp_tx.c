// SPDX-License-Identifier: BSD-2-Clause
/*
 * The udp backend's sending (udp.c has the sockets): the socket a
 * datagram leaves from, connected transmit sockets and the IPv4 IDs they
 * write (learnt with a probe, then followed, each ICRC rewritten for its
 * ID as it leaves), and the batched sendmmsg.
 */
#include "udp_int.h"

/*
 * The socket datagram @o leaves from, or a negative errno: its pool
 * socket; the receive socket when that could not be bound, or when @o
 * must keep the ICRCs it has and the pool socket is connected.
 */
static int pick_sock(struct urxe_udp *u, const struct urxe_frame_desc *o)
{
	int fam = urxe_gid_is_v4(o->dst) ? V4 : V6;
	unsigned int k = o->sport % URXE_UDP_TX_POOL;
	int si;

	if (u->rx[fam] < 0)
		return -EAFNOSUPPORT;
	urxe_udp_sport(u, o->sport);
	si = u->tx[fam][k];
	if (si < 0 || (o->fixed_ids && u->socks[si].conn))
		return u->rx[fam];
	return si;
}

static socklen_t peer_addr(const struct urxe_udp *u, const uint8_t *gid,
			   union sa *a)
{
	memset(a, 0, sizeof(*a));
	if (urxe_gid_is_v4(gid)) {
		a->in.sin_family = AF_INET;
		a->in.sin_port = htons(URXE_UDP_PORT);
		memcpy(&a->in.sin_addr, gid + 12, 4);
		return sizeof(a->in);
	}
	a->in6.sin6_family = AF_INET6;
	a->in6.sin6_port = htons(URXE_UDP_PORT);
	memcpy(&a->in6.sin6_addr, gid, 16);
	if (IN6_IS_ADDR_LINKLOCAL(&a->in6.sin6_addr))
		a->in6.sin6_scope_id = (uint32_t)u->ifindex;
	return sizeof(a->in6);
}

static void cmsg_put(struct msghdr *h, int level, int type, const void *data,
		     size_t len)
{
	struct cmsghdr *c = (struct cmsghdr *)((char *)h->msg_control +
					       h->msg_controllen);

	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	h->msg_controllen += CMSG_SPACE(len);
}

/* Neither multicast nor IPv4 broadcast (255.x): a peer to connect to. */
static bool gid_unicast(const uint8_t *gid)
{
	return !urxe_gid_is_mcast(gid) &&
	       !(urxe_gid_is_v4(gid) && gid[12] == 0xff);
}

void udp_gid_from_sa(uint8_t *gid, const union sa *a)
{
	if (a->sa.sa_family == AF_INET)
		urxe_gid_from_v4(gid, &a->in.sin_addr);
	else
		memcpy(gid, &a->in6.sin6_addr, 16);
}

/* Where ID probes go: a socket of ours that drops what it gets. */
static int sink_open(struct urxe_udp *u)
{
	union sa a;
	socklen_t alen;
	int fd;

	if (u->sink >= 0)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	alen = udp_local_addr(u, V4, 0, &a);
	if (bind(fd, &a.sa, alen) || getsockname(fd, &a.sa, &alen)) {
		close(fd);
		return -errno;
	}
	udp_deaf(fd);
	u->sink = fd;
	u->sink_port = ntohs(a.in.sin_port);
	return 0;
}

/*
 * The IPv4 ID the kernel gives @s's next datagram, learnt by sending one
 * to the sink with a transmit timestamp asked for: the copy the error
 * queue returns holds the IP header as it left.  A connected socket
 * numbers everything it sends from its own counter, whatever the
 * destination.  Returns the ID of the probe, or a negative errno.
 */
static int probe_id(struct urxe_udp *u, struct usock *s)
{
	uint8_t buf[256], *ip;
	union ctl ctl;
	union sa to;
	socklen_t alen = sizeof(to);
	uint64_t cookie = ++u->probes;
	uint32_t ts = SOF_TIMESTAMPING_TX_SOFTWARE;
	struct iovec iov = { &cookie, sizeof(cookie) };
	struct msghdr h = {
		.msg_name = &to, .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf,
	};
	ssize_t n;
	int tries;

	if (getsockname(s->fd, &to.sa, &alen))
		return -errno;
	to.in.sin_port = htons(u->sink_port);
	h.msg_namelen = sizeof(to.in);
	cmsg_put(&h, SOL_SOCKET, SO_TIMESTAMPING, &ts, sizeof(ts));
	if (sys_sendmsg(s->fd, &h) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* Loopback delivery is synchronous: the copy is there already. */
	for (tries = 0; tries < 8; tries++) {
		struct iovec riov = { buf, sizeof(buf) };
		struct msghdr r = {
			.msg_iov = &riov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl),
		};

		n = sys_recvmsg(s->fd, &r, MSG_ERRQUEUE | MSG_DONTWAIT);
		if (n < 0)
			return -EIO;	/* no copy: this path gives none */
		/* link header, IPv4 (no options), UDP, the cookie */
		if (n < 36 || memcmp(buf + n - 8, &cookie, 8))
			continue;
		ip = buf + n - 36;
		if (ip[0] != 0x45 || ip[9] != IPPROTO_UDP)
			continue;
		return urxe_get16(ip + 4);
	}
	return -EIO;
}

/* A peer's ICMP error, which only a connected socket hears (@err > 0). */
static bool icmp_err(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH ||
	       err == ENETUNREACH || err == EHOSTDOWN;
}

/*
 * Disconnects @s after error @err: a peer's ICMP error (it may come back)
 * or a full buffer holds it unconnected for a while; any other failure to
 * learn its IDs, for good, and every socket of the instance with it.
 */
static void conn_close(struct urxe_udp *u, struct usock *s, int err)
{
	struct sockaddr un = { .sa_family = AF_UNSPEC };

	connect(s->fd, &un, sizeof(un));
	s->conn = false;
	s->id_known = false;
	s->hold = CONN_HOLD;
	s->quiet_ns = udp_mono_ns();
	if (icmp_err(-err) || err == -EAGAIN)
		return;
	if (u->connect)
		urxe_dbg("udp: transmit sockets stay unconnected: %s",
			 strerror(-err));
	u->connect = false;
}

/*
 * Learns @s's ID counter: two probes, one ID apart, or the kernel numbers
 * otherwise than this file expects, and connecting is off for good.
 */
static int learn_id(struct urxe_udp *u, struct usock *s)
{
	int a, b;

	a = probe_id(u, s);
	if (a < 0)
		return a;
	if (s->id_known && a != s->next_id) {
		urxe_warn("udp: IPv4 ID %d where %u was expected; transmit sockets stay unconnected from now on",
			  a, s->next_id);
		u->connect = false;
		return -EPROTO;
	}
	b = s->id_known ? (uint16_t)(a + 1) : probe_id(u, s);
	if (b < 0)
		return b;
	if (b != (uint16_t)(a + 1)) {
		urxe_warn("udp: IPv4 IDs %d then %d from one socket; transmit sockets stay unconnected",
			  a, b);
		u->connect = false;
		return -EPROTO;
	}
	s->next_id = (uint16_t)(b + (s->id_known ? 0 : 1));
	s->id_known = true;
	s->since_probe = 0;
	return 0;
}

/* Connects pool socket @s to @o's destination, if it may. */
static void conn_open(struct urxe_udp *u, struct usock *s,
		      const struct urxe_frame_desc *o)
{
	static const int sw = SOF_TIMESTAMPING_SOFTWARE;
	union sa a;
	socklen_t alen = peer_addr(u, o->dst, &a);
	int rc;

	if (s->fam == V4 &&
	    (sink_open(u) ||
	     setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPING, &sw, sizeof(sw)))) {
		u->connect = false;
		urxe_dbg("udp: no ID probes here (%s); transmit sockets stay unconnected",
			 strerror(errno));
		return;
	}
	if (connect(s->fd, &a.sa, alen)) {
		s->hold = CONN_HOLD;
		return;
	}
	alen = sizeof(a);
	if (getsockname(s->fd, &a.sa, &alen)) {
		conn_close(u, s, -errno);
		return;
	}
	udp_gid_from_sa(s->src, &a);
	memcpy(s->peer, o->dst, 16);
	s->conn = true;
	s->id_known = false;
	rc = s->fam == V4 ? learn_id(u, s) : 0;
	if (rc)
		conn_close(u, s, rc);
}

/*
 * Ready to send @o's run from socket @s: connects a pool socket on its
 * first unicast datagram, probes the ID counter when it is unknown or due
 * a check.  Returns 0, or -EAGAIN (no room to probe: try later).
 */
static int conn_prepare(struct urxe_udp *u, struct usock *s,
			const struct urxe_frame_desc *o)
{
	int rc;

	if (!s->conn) {
		if (u->connect && !s->hold && s->port != URXE_UDP_PORT &&
		    !o->fixed_ids && gid_unicast(o->dst) &&
		    udp_mono_ns() - s->quiet_ns >= CONN_QUIET_NS)
			conn_open(u, s, o);
		return 0;
	}
	if (s->fam != V4 || (s->id_known && s->since_probe < ID_RECHECK))
		return 0;
	rc = learn_id(u, s);
	if (rc == -EAGAIN)
		return rc;
	if (rc)
		conn_close(u, s, rc);
	return 0;
}

/* Source address (wildcard sockets only), TOS/class and TTL/hop limit. */
static void tx_cmsgs(const struct urxe_udp *u, const struct usock *s,
		     const struct urxe_frame_desc *o, struct msghdr *h)
{
	int tos = o->tos, ttl = o->ttl;
	bool src = s->wildcard && o->src && urxe_gid_is_v4(o->src) == (s->fam == V4) &&
		   !(s->conn && urxe_gid_eq(o->src, s->src));

	if (s->fam == V4) {
		struct in_pktinfo pi = { 0 };

		if (src) {
			memcpy(&pi.ipi_spec_dst, o->src + 12, 4);
			cmsg_put(h, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
		/* 0 is the socket's own: no ancillary data to parse. */
		if (tos)
			cmsg_put(h, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
		if (ttl)
			cmsg_put(h, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
		return;
	}
	if (src) {
		struct in6_pktinfo pi = { 0 };

		memcpy(&pi.ipi6_addr, o->src, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&pi.ipi6_addr))
			pi.ipi6_ifindex = (unsigned int)u->ifindex;
		cmsg_put(h, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
	}
	if (tos)
		cmsg_put(h, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
	if (ttl)
		cmsg_put(h, IPPROTO_IPV6, IPV6_HOPLIMIT, &ttl, sizeof(ttl));
}

static void tx_prepare(const struct urxe_udp *u, const struct usock *s,
		       const struct urxe_frame_desc *o, struct mmsghdr *m,
		       union sa *name, union ctl *ctl)
{
	struct msghdr *h = &m->msg_hdr;

	memset(m, 0, sizeof(*m));
	/* To its peer, a connected socket skips a route lookup per send. */
	if (!s->conn || !urxe_gid_eq(o->dst, s->peer)) {
		h->msg_name = name;
		h->msg_namelen = peer_addr(u, o->dst, name);
	}
	/* sendmsg() only reads the iovec; msghdr just lacks the const. */
	h->msg_iov = (struct iovec *)(uintptr_t)o->iov;
	h->msg_iovlen = o->niov;
	h->msg_control = ctl->buf;
	tx_cmsgs(u, s, o, h);
	if (o->gso_size) {
		uint16_t seg = o->gso_size;

		cmsg_put(h, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	}
	if (!h->msg_controllen)
		h->msg_control = NULL;
}

/*
 * Datagram @o leaves a connected IPv4 socket with ID @base (segment i:
 * base + i) while its ICRCs were computed for ID i: they are rewritten
 * where they lie, or in a copy that @h then sends (wire/ipid.c).  false:
 * the datagram waits for the next sendmmsg.
 */
static bool fix_ids(struct urxe_udp *u, const struct urxe_frame_desc *o,
		    uint16_t base, struct msghdr *h)
{
	int r = urxe_ipid_fix_in_place(&u->fix, o->iov, o->niov, o->gso_size,
				       base);

	return r > 0 || (!r && urxe_ipid_fix_copy(&u->fix, o->iov, o->niov,
						  o->gso_size, base, &h->msg_iov,
						  &h->msg_iovlen));
}

int urxe_udp_send(struct urxe_udp *u, const struct urxe_frame_desc *out,
		  unsigned int n, uint16_t *sport_used)
{
	struct mmsghdr msg[BATCH];
	union sa names[BATCH];
	union ctl ctl[BATCH];
	unsigned int done = 0, cnt;
	bool retried = false, ids;
	struct usock *s;
	int si, rc, err;

	while (done < n && done < INT32_MAX) {
		si = pick_sock(u, &out[done]);
		if (si < 0)
			return done ? (int)done : si;
		s = &u->socks[si];
		rc = conn_prepare(u, s, &out[done]);
		if (rc)
			return done ? (int)done : rc;
		ids = s->conn && s->fam == V4;
		/* One sendmmsg per run of datagrams leaving one socket. */
		for (cnt = 0; cnt < BATCH && done + cnt < n; cnt++) {
			if (cnt && pick_sock(u, &out[done + cnt]) != si)
				break;
			tx_prepare(u, s, &out[done + cnt], &msg[cnt],
				   &names[cnt], &ctl[cnt]);
			if (ids && !fix_ids(u, &out[done + cnt],
					    (uint16_t)(s->next_id + cnt),
					    &msg[cnt].msg_hdr))
				break;
			if (sport_used)
				sport_used[done + cnt] = s->port;
		}
		if (!cnt) {
			/* One datagram of more pieces than the copy takes. */
			conn_close(u, s, -E2BIG);
			continue;
		}
		/* One datagram: sendmsg() spares sendmmsg()'s loop. */
		if (cnt == 1) {
			ssize_t r = sys_sendmsg(s->fd, &msg[0].msg_hdr);

			rc = r >= 0 ? 1 : -1;
		} else {
			rc = sys_sendmmsg(s->fd, msg, cnt);
		}
		err = rc < 0 ? errno : 0;
		urxe_ipid_fix_undo(&u->fix);
		if (ids) {
			s->next_id = (uint16_t)(s->next_id + (rc > 0 ? rc : 0));
			s->since_probe += rc > 0 ? (uint32_t)rc : 0;
			/* Whether the datagram that failed took an ID: unknown. */
			if (rc < (int)cnt)
				s->id_known = false;
		}
		if (!s->conn && s->hold && rc > 0)
			s->hold = s->hold > (uint32_t)rc ? s->hold - (uint32_t)rc : 0;
		if (rc < 0 && s->conn && !retried && icmp_err(err)) {
			/*
			 * A connected socket reports the peer's ICMP errors
			 * (ECONNREFUSED) on a later send, which an unconnected
			 * one never sees: send again, unconnected.
			 */
			conn_close(u, s, -err);
			retried = true;
			continue;
		}
		if (rc < 0) {
			rc = err == EWOULDBLOCK ? -EAGAIN : -err;
			return done ? (int)done : rc;
		}
		done += (unsigned int)rc;
		if ((unsigned int)rc < cnt)
			break;
	}
	return (int)done;
}
