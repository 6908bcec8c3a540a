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
 * learnt from a probe when it connects, see learn_id().  With GSO
 * (conf->gso) IPv4 UDP checksums are real — the kernel refuses GSO with
 * SO_NO_CHECK; on lo and veth they are offloaded, so
 * free — and receive sockets ask for GRO: a burst of equal-sized
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
static ssize_t sys_sendmsg(int fd, const struct msghdr *h)
{
	return syscall(SYS_sendmsg, fd, h, 0);
}

static int sys_sendmmsg(int fd, struct mmsghdr *m, unsigned int n)
{
	return (int)syscall(SYS_sendmmsg, fd, m, n, 0);
}

static ssize_t sys_recvmsg(int fd, struct msghdr *h, int flags)
{
	return syscall(SYS_recvmsg, fd, h, flags);
}

static int sys_recvmmsg(int fd, struct mmsghdr *m, unsigned int n)
{
	return (int)syscall(SYS_recvmmsg, fd, m, n, MSG_DONTWAIT, NULL);
}

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

static socklen_t local_addr(const struct urxe_udp *u, int fam, uint16_t port,
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
static uint64_t mono_ns(void)
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
	alen = local_addr(u, fam, port, &a);
	if (bind(fd, &a.sa, alen)) {
		rc = -errno;
		goto err_close;
	}
	s->fd = fd;
	s->fam = (uint8_t)fam;
	s->wildcard = !u->loopback;
	s->port = port;
	/* Whoever held the port before sent nothing from it since. */
	s->quiet_ns = mono_ns();
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
static void deaf(int fd)
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
		deaf(u->socks[rc].fd);
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

/*
 * The socket datagram @o leaves from, or a negative errno: its pool
 * socket; the receive socket when that could not be bound, or when @o
 * must keep the ICRCs it has and the pool socket is connected.
 */
static int pick_sock(struct urxe_udp *u, const struct urxe_udp_out *o)
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

static void gid_from_sa(uint8_t *gid, const union sa *a)
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
	alen = local_addr(u, V4, 0, &a);
	if (bind(fd, &a.sa, alen) || getsockname(fd, &a.sa, &alen)) {
		close(fd);
		return -errno;
	}
	deaf(fd);
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
	s->quiet_ns = mono_ns();
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
		      const struct urxe_udp_out *o)
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
	gid_from_sa(s->src, &a);
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
			const struct urxe_udp_out *o)
{
	int rc;

	if (!s->conn) {
		if (u->connect && !s->hold && s->port != URXE_UDP_PORT &&
		    !o->fixed_ids && gid_unicast(o->dst) &&
		    mono_ns() - s->quiet_ns >= CONN_QUIET_NS)
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
		     const struct urxe_udp_out *o, struct msghdr *h)
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
		       const struct urxe_udp_out *o, struct mmsghdr *m,
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
static bool fix_ids(struct urxe_udp *u, const struct urxe_udp_out *o,
		    uint16_t base, struct msghdr *h)
{
	int r = urxe_ipid_fix_in_place(&u->fix, o->iov, o->niov, o->gso_size,
				       base);

	return r > 0 || (!r && urxe_ipid_fix_copy(&u->fix, o->iov, o->niov,
						  o->gso_size, base, &h->msg_iov,
						  &h->msg_iovlen));
}

int urxe_udp_send(struct urxe_udp *u, const struct urxe_udp_out *out,
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

static void rx_prepare(struct mmsghdr *m, struct iovec *iov, union sa *name,
		       union ctl *ctl, struct urxe_udp_in *in)
{
	memset(m, 0, sizeof(*m));
	iov->iov_base = in->buf;
	iov->iov_len = in->cap;
	m->msg_hdr.msg_name = name;
	m->msg_hdr.msg_namelen = sizeof(*name);
	m->msg_hdr.msg_iov = iov;
	m->msg_hdr.msg_iovlen = 1;
	m->msg_hdr.msg_control = ctl->buf;
	m->msg_hdr.msg_controllen = sizeof(ctl->buf);
}

static int cmsg_int(const struct cmsghdr *c)
{
	int v = 0;

	if (c->cmsg_len == CMSG_LEN(sizeof(v)))
		memcpy(&v, CMSG_DATA(c), sizeof(v));
	else if (c->cmsg_len == CMSG_LEN(1))
		v = *CMSG_DATA(c);	/* IP_TOS comes as one byte */
	return v;
}

static void rx_cmsg(struct cmsghdr *c, struct urxe_udp_in *in)
{
	int key = c->cmsg_level << 16 | c->cmsg_type;

#define KEY(level, type) ((level) << 16 | (type))
	switch (key) {
	case KEY(IPPROTO_IP, IP_PKTINFO):	/* ipi_addr: the header's */
		urxe_gid_from_v4(in->dst, CMSG_DATA(c) +
			    offsetof(struct in_pktinfo, ipi_addr));
		break;
	case KEY(IPPROTO_IPV6, IPV6_PKTINFO):
		memcpy(in->dst, CMSG_DATA(c), 16);	/* ipi6_addr leads */
		break;
	case KEY(IPPROTO_IP, IP_TOS):
	case KEY(IPPROTO_IPV6, IPV6_TCLASS):
		in->tos = (uint8_t)cmsg_int(c);
		break;
	case KEY(IPPROTO_IP, IP_TTL):
	case KEY(IPPROTO_IPV6, IPV6_HOPLIMIT):
		in->ttl = (uint8_t)cmsg_int(c);
		break;
	case KEY(SOL_UDP, UDP_GRO):
		in->gso_size = (uint16_t)cmsg_int(c);
		break;
	case KEY(SOL_SOCKET, SCM_TIMESTAMPNS):
		if (c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			in->rx_ns = (uint64_t)ts.tv_sec * 1000000000ull +
				    (uint64_t)ts.tv_nsec;
		}
		break;
	}
#undef KEY
}

static void rx_finish(const struct urxe_udp *u, const struct usock *s,
		      struct mmsghdr *m, struct urxe_udp_in *in)
{
	const union sa *a = m->msg_hdr.msg_name;
	struct cmsghdr *c;

	memset(in->src, 0, sizeof(in->src));
	if (u->loopback)
		urxe_gid_from_v4(in->dst, &u->lo_addr);
	else
		memset(in->dst, 0, sizeof(in->dst));
	in->len = m->msg_len < in->cap ? m->msg_len : in->cap;
	in->truncated = !!(m->msg_hdr.msg_flags & MSG_TRUNC);
	in->dport = s->port;
	in->csum = s->csum;
	in->tos = 0;
	in->ttl = 0;
	in->gso_size = 0;
	in->rx_ns = 0;
	gid_from_sa(in->src, a);
	in->sport = ntohs(a->sa.sa_family == AF_INET ? a->in.sin_port
						     : a->in6.sin6_port);
	for (c = CMSG_FIRSTHDR(&m->msg_hdr); c; c = CMSG_NXTHDR(&m->msg_hdr, c))
		rx_cmsg(c, in);
}

/* Drains up to @n datagrams from one socket; returns how many or -errno. */
static int recv_sock(const struct urxe_udp *u, struct usock *s,
		     struct urxe_udp_in *in, unsigned int n)
{
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	union sa names[BATCH];
	union ctl ctl[BATCH];
	unsigned int got = 0, cnt, i;
	/*
	 * A socket that was empty last time: ask for one datagram and stop.
	 * recvmmsg() would go on to look for a second one, time on the
	 * critical path of a ping-pong's receiver.  A stream keeps the
	 * socket busy, and a busy one is asked for many.
	 */
	bool single = !s->busy;
	int rc;

	while (got < n) {
		cnt = single ? 1 : n - got < BATCH ? n - got : BATCH;
		for (i = 0; i < cnt; i++)
			rx_prepare(&msg[i], &iov[i], &names[i], &ctl[i],
				   &in[got + i]);
		/* One datagram: recvmsg() spares recvmmsg()'s batch set-up. */
		if (cnt == 1) {
			ssize_t r = sys_recvmsg(s->fd, &msg[0].msg_hdr,
						MSG_DONTWAIT);

			if (r >= 0)
				msg[0].msg_len = (unsigned int)r;
			rc = r >= 0 ? 1 : -1;
		} else {
			rc = sys_recvmmsg(s->fd, msg, cnt);
		}
		if (rc < 0) {
			s->busy = got > 0;
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				break;
			return got ? (int)got : -errno;
		}
		s->busy = true;
		for (i = 0; i < (unsigned int)rc; i++)
			rx_finish(u, s, &msg[i], &in[got + i]);
		got += (unsigned int)rc;
		if ((unsigned int)rc < cnt || single)
			break;
	}
	return (int)got;
}

int urxe_udp_recv(struct urxe_udp *u, struct urxe_udp_in *in, unsigned int n)
{
	unsigned int got = 0, i;
	int rc, err = 0, fam;

	if (n > INT32_MAX)
		n = INT32_MAX;
	/* Only the receive sockets take input; alternate the first family. */
	for (i = 0; i < NFAM && got < n; i++) {
		fam = (int)((u->rr + i) % NFAM);
		if (u->rx[fam] < 0)
			continue;
		rc = recv_sock(u, &u->socks[u->rx[fam]], in + got, n - got);
		if (rc < 0)
			err = rc;
		else
			got += (unsigned int)rc;
	}
	if (u->rx0 >= 0 && got < n) {
		rc = recv_sock(u, &u->socks[u->rx0], in + got, n - got);
		if (rc < 0)
			err = rc;
		else
			got += (unsigned int)rc;
	}
	u->rr ^= 1;
	return got ? (int)got : err;
}
