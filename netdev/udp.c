// SPDX-License-Identifier: BSD-2-Clause
/*
 * The udp backend: RoCEv2 over ordinary UDP sockets, no privilege needed.
 *
 * One instance holds the receive sockets on port 4791 (loopback: the slot's
 * own 127.117.h.l; a real interface: 0.0.0.0 and, with IPv6, [::]) and a
 * pool of transmit sockets bound to 0xC000 + k, opened the first time pool
 * index k is asked for, so a QP's flow hash picks its UDP source port.
 * Every socket is IP_PMTUDISC_DO.  Unconnected, the kernel then writes IP
 * ID 0 (and DF), which the ICRC covers — and ID i on segment i of a GSO
 * send.  A connected transmit socket (conf->connect) writes the IDs of a
 * per-socket counter instead, one per datagram (segment i: that + i):
 * learnt from a probe when it connects, see learn_id() in udp_tx.c.  With
 * GSO (conf->gso) IPv4 UDP checksums are real — the kernel refuses GSO
 * with SO_NO_CHECK; on lo and veth they are offloaded, so free — and
 * receive sockets ask for GRO: a burst of equal-sized
 * datagrams arrives as one, with its segment size (urxe_udp_in.gso_size).
 * Without it IPv4 sends checksum 0 (SO_NO_CHECK) like kernel rxe.
 * Checksum 0 is always accepted (UDP_NO_CHECK6_RX on IPv6), and IPv4
 * receives tell it apart: two receive sockets, see open_rx_v4().
 *
 * Sockets live in one append-only array: urxe_udp_fds() reports them in that
 * order, and the pool only ever adds to the tail, so a caller watching the
 * descriptors sees new ones as a longer list.  Nothing here locks: the
 * caller serializes calls on one instance.
 */
#include "udp_int.h"

static int set_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* Unprivileged sizes are capped at rmem_max/wmem_max; that is fine. */
static void sock_bufs(int fd)
{
	if (set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, SOCK_BUF))
		set_int(fd, SOL_SOCKET, SO_RCVBUF, SOCK_BUF);
	if (set_int(fd, SOL_SOCKET, SO_SNDBUFFORCE, SOCK_BUF))
		set_int(fd, SOL_SOCKET, SO_SNDBUF, SOCK_BUF);
}

static int sock_options(int fd, int fam, bool no_check, bool pktinfo)
{
	static const struct opt { int level, name, val; } v4[] = {
		{ IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO },
	}, v6[] = {
		{ IPPROTO_IPV6, IPV6_V6ONLY, 1 },
		{ IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO },
		{ IPPROTO_UDP, UDP_NO_CHECK6_RX, 1 },
		{ IPPROTO_IPV6, IPV6_RECVPKTINFO, 1 },
	};
	const struct opt *o = fam == V4 ? v4 : v6;
	size_t i, n = fam == V4 ? sizeof(v4) / sizeof(*o) : sizeof(v6) / sizeof(*o);
	int rc;

	for (i = 0; i < n; i++) {
		rc = set_int(fd, o[i].level, o[i].name, o[i].val);
		if (rc)
			return rc;
	}
	/*
	 * The destination address of what arrives: a loopback socket is bound
	 * to the one address it can be; a wildcard one needs telling.
	 */
	if (fam == V4 && pktinfo) {
		rc = set_int(fd, IPPROTO_IP, IP_PKTINFO, 1);
		if (rc)
			return rc;
	}
	if (fam == V4 && no_check) {
		rc = set_int(fd, SOL_SOCKET, SO_NO_CHECK, 1);
		if (rc)
			return rc;
	}
	sock_bufs(fd);
	return 0;
}

socklen_t udp_local_addr(const struct urxe_udp *u, int fam, uint16_t port,
			    union sa *a)
{
	memset(a, 0, sizeof(*a));
	if (fam == V6) {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_addr = in6addr_any;
		a->in6.sin6_port = htons(port);
		return sizeof(a->in6);
	}
	a->in.sin_family = AF_INET;
	a->in.sin_addr.s_addr = u->loopback ? u->lo_addr.s_addr : INADDR_ANY;
	a->in.sin_port = htons(port);
	return sizeof(a->in);
}

/*
 * A group's packets leave through the device's interface, and come back
 * to the host's own members too (IP_MULTICAST_LOOP: QPs of this process
 * attached to the group).  Best effort: without, multicast just fails.
 */
static void mcast_options(const struct urxe_udp *u, int fd, int fam)
{
	struct ip_mreqn m = { .imr_ifindex = u->ifindex };

	if (fam == V4) {
		setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof(m));
		set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1);
	} else {
		set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, u->ifindex);
		set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1);
	}
}

/*
 * Opens, configures and binds one socket (@reuse: SO_REUSEPORT); returns
 * its socks index.
 */
uint64_t udp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_sock(struct urxe_udp *u, int fam, uint16_t port, bool reuse)
{
	struct usock *s;
	union sa a;
	socklen_t alen;
	int fd, rc;

	if (u->nsocks >= URXE_UDP_MAX_FDS)
		return -EMFILE;
	s = &u->socks[u->nsocks];
	fd = socket(fam == V4 ? AF_INET : AF_INET6,
		    SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	rc = sock_options(fd, fam, !u->gso, !u->loopback);
	if (rc)
		goto err_close;
	if (!u->loopback)
		mcast_options(u, fd, fam);
	if (reuse && (rc = set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1)))
		goto err_close;
	alen = udp_local_addr(u, fam, port, &a);
	if (bind(fd, &a.sa, alen)) {
		rc = -errno;
		goto err_close;
	}
	s->fd = fd;
	s->fam = (uint8_t)fam;
	s->wildcard = !u->loopback;
	s->port = port;
	/* Whoever held the port before sent nothing from it since. */
	s->quiet_ns = udp_mono_ns();
	return (int)u->nsocks++;

err_close:
	close(fd);
	return rc;
}

static void close_tail(struct urxe_udp *u, unsigned int keep)
{
	while (u->nsocks > keep)
		close(u->socks[--u->nsocks].fd);
}

/*
 * The IPv4 receive sockets: two in one SO_REUSEPORT group, a classic BPF
 * program steering datagrams with UDP checksum 0 to the second.  A socket
 * does not tell whether a datagram carried a checksum; the ICRC check
 * needs to know (see wire/ipid.c).  The filter runs with the data at
 * the UDP payload: it reads the headers through SKF_NET_OFF.  A plain
 * socket is bound first, for a moment: it fails where anyone holds the
 * port, and the group (without SO_REUSEPORT elsewhere) admits no one
 * else later.  Returns the first one's socks index; the second is u->rx0.
 * Where the pair cannot be had, one plain socket (every datagram then
 * counts as checksum 0: the strict rules).
 */
static int open_rx_v4(struct urxe_udp *u)
{
	static struct sock_filter by_csum[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)SKF_NET_OFF),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x0f),
		BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 2),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, (uint32_t)(SKF_NET_OFF + 6)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),	/* a checksum: the first */
		BPF_STMT(BPF_RET | BPF_K, 1),	/* none: the second */
	};
	struct sock_fprog prog = { .len = sizeof(by_csum) / sizeof(*by_csum),
				   .filter = by_csum };
	unsigned int keep = u->nsocks;
	int a, b;

	a = open_sock(u, V4, URXE_UDP_PORT, false);
	if (a < 0)
		return a;
	close_tail(u, keep);
	a = open_sock(u, V4, URXE_UDP_PORT, true);
	b = a < 0 ? a : open_sock(u, V4, URXE_UDP_PORT, true);
	if (b < 0 || setsockopt(u->socks[a].fd, SOL_SOCKET,
				SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog))) {
		urxe_dbg("udp: no checksum steering (%s); IPv4 checked strictly",
			 strerror(b < 0 ? -b : errno));
		close_tail(u, keep);
		return open_sock(u, V4, URXE_UDP_PORT, false);
	}
	/* Multicast comes to a socket that joined, not to this one. */
	set_int(u->socks[b].fd, IPPROTO_IP, IP_MULTICAST_ALL, 0);
	u->socks[a].csum = true;
	u->rx0 = (int8_t)b;
	return a;
}

static int open_rx(struct urxe_udp *u, int fam, const struct urxe_udp_conf *c)
{
	char where[INET_ADDRSTRLEN + IF_NAMESIZE + 8];
	int rc = fam == V4 ? open_rx_v4(u) : open_sock(u, fam, URXE_UDP_PORT, false);

	if (rc >= 0) {
		u->rx[fam] = (int8_t)rc;
		/* Without GRO (old kernels) datagrams simply come one by one. */
		if (fam == V6)
			u->socks[rc].csum = true;	/* exact anyway */
		if (c->gso)
			set_int(u->socks[rc].fd, IPPROTO_UDP, UDP_GRO, 1);
		if (c->gso && fam == V4 && u->rx0 >= 0)
			set_int(u->socks[u->rx0].fd, IPPROTO_UDP, UDP_GRO, 1);
		/*
		 * When each datagram arrived (urxe_udp_in.rx_ns): the IPv4
		 * ID check measures a flow's silence by it, not by when a
		 * busy or descheduled receiver got round to reading.
		 */
		set_int(u->socks[rc].fd, SOL_SOCKET, SO_TIMESTAMPNS, 1);
		if (fam == V4 && u->rx0 >= 0)
			set_int(u->socks[u->rx0].fd, SOL_SOCKET, SO_TIMESTAMPNS,
				1);
		return 0;
	}
	if (c->loopback)
		inet_ntop(AF_INET, &c->lo_addr, where, sizeof(where));
	else
		snprintf(where, sizeof(where), "%s (%s)", c->ifc->name,
			 fam == V4 ? "IPv4" : "IPv6");
	if (rc == -EADDRINUSE && !c->loopback)
		urxe_err("UDP port %d on %s is held by another process (`ss -ulpn 'sport = :%d'` shows which; a urxe loopback device holds 127.117.x.y:%d): the udp backend needs the port on its interface to itself; stop that process, or give this device the packet backend (`urxe dev add NAME netdev %s backend packet`, CAP_NET_RAW), which shares it",
			 URXE_UDP_PORT, where, URXE_UDP_PORT, URXE_UDP_PORT,
			 c->ifc->name);
	else if (rc == -EADDRINUSE)
		urxe_err("UDP port %d on %s is held by another process (`ss -ulpn 'sport = :%d'` shows which): close it; the next device instance takes another address",
			 URXE_UDP_PORT, where, URXE_UDP_PORT);
	else if (rc != -EAFNOSUPPORT || fam == V4)
		urxe_err("cannot bind UDP port %d on %s: %s", URXE_UDP_PORT,
			 where, strerror(-rc));
	return rc;
}

int urxe_udp_mcast(struct urxe_udp *u, const uint8_t *gid, bool join)
{
	int fam = urxe_gid_is_v4(gid) ? V4 : V6, fd;

	if (u->loopback)
		return -EOPNOTSUPP;
	if (u->rx[fam] < 0)
		return -EAFNOSUPPORT;
	fd = u->socks[u->rx[fam]].fd;
	if (fam == V4) {
		struct ip_mreqn m = { .imr_ifindex = u->ifindex };

		memcpy(&m.imr_multiaddr, gid + 12, 4);
		return setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP :
				  IP_DROP_MEMBERSHIP, &m, sizeof(m)) ? -errno : 0;
	} else {
		struct ipv6_mreq m = {
			.ipv6mr_interface = (unsigned int)u->ifindex,
		};

		memcpy(&m.ipv6mr_multiaddr, gid, 16);
		return setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP :
				  IPV6_LEAVE_GROUP, &m, sizeof(m)) ? -errno : 0;
	}
}

int urxe_udp_open(const struct urxe_udp_conf *conf, struct urxe_udp **out)
{
	struct urxe_udp *u;
	int rc;

	if (!conf || !out || (!conf->loopback && !conf->ifc))
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->loopback = conf->loopback;
	u->gso = conf->gso;
	u->connect = conf->connect;
	u->sink = -1;
	u->lo_addr = conf->lo_addr;
	u->ifindex = conf->ifc ? conf->ifc->ifindex : 0;
	memset(u->rx, -1, sizeof(u->rx));
	memset(u->tx, -1, sizeof(u->tx));
	u->rx0 = -1;
	rc = open_rx(u, V4, conf);
	if (rc)
		goto err_free;
	if (!conf->loopback && conf->ifc->has_ipv6) {
		/* IPv6 disabled at boot: carry on with IPv4 alone. */
		rc = open_rx(u, V6, conf);
		if (rc && rc != -EAFNOSUPPORT)
			goto err_close;
	}
	*out = u;
	return 0;

err_close:
	close_tail(u, 0);
err_free:
	free(u);
	return rc;
}

void urxe_udp_close(struct urxe_udp *u)
{
	if (!u)
		return;
	close_tail(u, 0);
	if (u->sink >= 0)
		close(u->sink);
	free(u);
}

unsigned int urxe_udp_fds(struct urxe_udp *u, int *fds)
{
	unsigned int i;

	for (i = 0; i < u->nsocks; i++)
		fds[i] = u->socks[i].fd;
	return u->nsocks;
}

unsigned int urxe_udp_rcvbuf(struct urxe_udp *u)
{
	unsigned int min = 0;
	socklen_t len;
	int fam, v;

	for (fam = 0; fam < NFAM; fam++) {
		if (u->rx[fam] < 0)
			continue;
		len = sizeof(v);
		if (getsockopt(u->socks[u->rx[fam]].fd, SOL_SOCKET, SO_RCVBUF,
			       &v, &len) || v <= 0)
			continue;
		if (!min || (unsigned int)v < min)
			min = (unsigned int)v;
	}
	return min;
}

int urxe_udp_ip_meta(struct urxe_udp *u, bool on)
{
	int fam, fd, rc, i;

	for (i = 0; i <= NFAM; i++) {
		fam = i == NFAM ? V4 : i;	/* then the checksum-0 one */
		if ((i == NFAM ? u->rx0 : u->rx[fam]) < 0)
			continue;
		fd = u->socks[i == NFAM ? u->rx0 : u->rx[fam]].fd;
		if (fam == V4) {
			rc = set_int(fd, IPPROTO_IP, IP_RECVTOS, on);
			if (!rc)
				rc = set_int(fd, IPPROTO_IP, IP_RECVTTL, on);
		} else {
			rc = set_int(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, on);
			if (!rc)
				rc = set_int(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, on);
		}
		if (rc)
			return rc;
	}
	return 0;
}

unsigned int urxe_udp_rx_fds(struct urxe_udp *u, int *fds)
{
	unsigned int n = 0;
	int fam;

	for (fam = 0; fam < NFAM; fam++)
		if (u->rx[fam] >= 0)
			fds[n++] = u->socks[u->rx[fam]].fd;
	if (u->rx0 >= 0)
		fds[n++] = u->socks[u->rx0].fd;
	return n;
}

/*
 * Transmit sockets never take input (RoCEv2 goes to port 4791): a filter
 * that accepts nothing keeps strays from queueing there, so the receive
 * path polls the receive sockets alone.
 */
void udp_deaf(int fd)
{
	static struct sock_filter none[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = none };

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
		urxe_dbg("udp: no drop-all filter on a transmit socket: %s",
			 strerror(errno));
}

/*
 * Binds pool index @k in every family the instance has, or in none: the
 * port a QP sends from must not depend on the destination's family.
 */
static void pool_open(struct urxe_udp *u, unsigned int k)
{
	unsigned int keep = u->nsocks;
	uint16_t port = (uint16_t)(URXE_UDP_SPORT_BASE + k);
	int fam, rc;

	for (fam = 0; fam < NFAM; fam++) {
		if (u->rx[fam] < 0)
			continue;
		rc = open_sock(u, fam, port, false);
		if (rc < 0)
			goto err;
		u->tx[fam][k] = (int8_t)rc;
		udp_deaf(u->socks[rc].fd);
	}
	u->pool[k] = 1;
	return;

err:
	/* Likely an ephemeral socket of someone else: fall back to 4791. */
	urxe_dbg("udp source port %u unavailable (%s); using %d", port,
		 strerror(-rc), URXE_UDP_PORT);
	close_tail(u, keep);
	for (fam = 0; fam < NFAM; fam++)
		u->tx[fam][k] = -1;
	u->pool[k] = -1;
}

uint16_t urxe_udp_sport(struct urxe_udp *u, uint16_t sport)
{
	unsigned int k = sport % URXE_UDP_TX_POOL;

	if (!u->pool[k])
		pool_open(u, k);
	return u->pool[k] > 0 ? (uint16_t)(URXE_UDP_SPORT_BASE + k)
			      : URXE_UDP_PORT;
}
