// SPDX-License-Identifier: BSD-2-Clause
/*
 * Addresses, ports and routes of RDMA CM ids (rdma_bind_addr(3),
 * rdma_resolve_addr(3), rdma_resolve_route(3), rdma_listen(3)).
 *
 * Ports.  The kernel keeps RDMA CM ports per network namespace and port
 * space, first come first served among all users.  urxe asks the kernel
 * for the same: a port is reserved by binding an abstract unix socket
 * named "urxe-v2/cm/<ps>/<port>" (abstract names are per network
 * namespace, and a bound name is nobody else's until its process closes
 * it or dies), so EADDRINUSE comes from the kernel and a dead process's
 * ports are free at once.  Deviation: one bind per (port space, port),
 * whatever the address (the kernel lets two specific addresses share a
 * port); REUSEADDR ids reserve nothing until they listen.
 *
 * Loopback.  Each process's device on lo has an address of its own
 * (127.117.x.y), so "127.0.0.1" names no process.  A listener on lo
 * listens on its reservation socket; a client whose destination is a
 * loopback or wildcard address connects to it and reads the listener's
 * GID, to which its REQ then goes (cm_steer).  Only the port's owner can
 * answer there: another user cannot redirect a client, and sees no more
 * than `ss -xl` shows.  No listener: the REQ goes to the address given,
 * and connecting ends in REJECTED, reason 8, as a kernel host answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cm_int.h"

#define STEER_WAIT_MS 1000

socklen_t cm_addr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

uint16_t cm_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}

static void set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)(void *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons(port);
}

bool cm_addr_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

bool cm_addr_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >>
			24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

/* An address as a RoCEv2 GID (IPv4: ::ffff:a.b.c.d). */
void cm_gid_of(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12,
		       &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw,
		       &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

static bool gid_v4(const union ibv_gid *gid)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, pfx, sizeof(pfx));
}

void cm_sockaddr_of(const union ibv_gid *gid, uint16_t port,
		    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (gid_v4(gid)) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, gid->raw + 12, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, gid->raw, 16);
	}
}

/* The device holding @gid in its table, and where. */
struct cm_dev *cm_dev_by_gid(const union ibv_gid *gid, uint8_t *index)
{
	int i, k;

	for (i = 0; i < cm.ndev; i++)
		for (k = 0; k < cm.dev[i].ngid; k++)
			if (!memcmp(cm.dev[i].gid[k].raw, gid->raw, 16)) {
				if (index)
					*index = (uint8_t)k;
				return &cm.dev[i];
			}
	return NULL;
}

static struct cm_dev *lo_dev(void)
{
	int i;

	for (i = 0; i < cm.ndev; i++)
		if (cm.dev[i].info.loopback)
			return &cm.dev[i];
	return NULL;
}

/* ---- ports ---- */

static int port_name(const struct cm_id *cid, uint16_t port,
		     struct sockaddr_un *un, socklen_t *len)
{
	int n;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
		     "urxe-v2/cm/%x/%u", (unsigned int)cid->id.ps, port);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
	return 0;
}

static int port_try(struct cm_id *cid, uint16_t port)
{
	struct sockaddr_un un;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	port_name(cid, port, &un, &len);
	if (bind(fd, (struct sockaddr *)&un, len)) {
		int e = errno;

		close(fd);
		return e == EADDRINUSE ? -EADDRINUSE : -e;
	}
	cid->port_fd = fd;
	return 0;
}

static bool may_bind_low(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ull << 10);	/* CAP_NET_BIND_SERVICE */
}

static void port_range(unsigned int *lo, unsigned int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	*lo = 32768;
	*hi = 60999;
	if (f) {
		if (fscanf(f, "%u %u", lo, hi) != 2 || *lo > *hi || !*lo ||
		    *hi > 65535) {
			*lo = 32768;
			*hi = 60999;
		}
		fclose(f);
	}
}

/*
 * Reserves the port of the id's source address; port 0 takes an
 * ephemeral one (written back into the address).
 */
int cm_port_reserve(struct cm_id *cid)
{
	struct sockaddr *sa = &cid->id.route.addr.src_addr;
	uint16_t port = cm_port_of(sa);
	unsigned int lo, hi, span, start, i;
	int rc;

	if (cid->port_fd >= 0)
		return 0;
	if (port) {
		if (port < 1024 && !may_bind_low())
			return -EACCES;
		return port_try(cid, port);
	}
	port_range(&lo, &hi);
	span = hi - lo + 1;
	start = (unsigned int)(cm_now_ns() ^ (uint64_t)getpid() * 2654435761u) %
		span;
	for (i = 0; i < span; i++) {
		port = (uint16_t)(lo + (start + i) % span);
		rc = port_try(cid, port);
		if (!rc) {
			set_port(sa, port);
			return 0;
		}
		if (rc != -EADDRINUSE)
			return rc;
	}
	return -EADDRINUSE;
}

void cm_port_release(struct cm_id *cid)
{
	if (cid->listen_fd >= 0) {
		epoll_ctl(cm.epfd, EPOLL_CTL_DEL, cid->listen_fd, NULL);
		cid->listen_fd = -1;
	}
	if (cid->port_fd >= 0)
		close(cid->port_fd);
	cid->port_fd = -1;
}

/* ---- binding ---- */

/* The device an address belongs to: NULL for a wildcard; -ENODEV. */
static int dev_for_addr(const struct sockaddr *sa, struct cm_dev **out,
			uint8_t *index)
{
	union ibv_gid gid;

	*out = NULL;
	*index = 0;
	if (cm_addr_any(sa))
		return 0;
	cm_gid_of(sa, &gid);
	*out = cm_dev_by_gid(&gid, index);
	if (*out)
		return 0;
	if (cm_addr_loopback(sa)) {
		/*
		 * A loopback address binds the device on lo.  Without one it
		 * binds no device, as Linux does (no RDMA device has a
		 * loopback GID there): libfabric's verbs provider binds
		 * "localhost" and, finding no device on the id, takes the
		 * devices' own addresses instead.  Bound to the first device,
		 * its passive endpoint was named 127.0.0.1 to remote peers.
		 */
		*out = lo_dev();
		return 0;
	}
	return -ENODEV;
}

int cm_bind(struct cm_id *cid, const struct sockaddr *addr)
{
	socklen_t len = cm_addr_len(addr);
	struct cm_dev *d;
	uint8_t index;
	int rc;

	if (!len)
		return -EAFNOSUPPORT;
	if (cid->state != ID_IDLE)
		return -EINVAL;
	rc = dev_for_addr(addr, &d, &index);
	if (rc)
		return rc;
	memset(&cid->id.route.addr.src_storage, 0,
	       sizeof(cid->id.route.addr.src_storage));
	memcpy(&cid->id.route.addr.src_addr, addr, len);
	if (!cid->reuseaddr || !cm_port_of(addr)) {
		rc = cm_port_reserve(cid);
		if (rc)
			return rc;
	}
	if (d) {
		cid->dev = d;
		cid->sgid_index = index;
		cid->id.verbs = d->ctx;
		cid->id.pd = cm_dev_pd(d);
		cid->id.port_num = 1;
		cid->id.route.addr.addr.ibaddr.sgid = d->gid[index];
		cid->id.route.addr.addr.ibaddr.pkey = 0xffff;
	}
	cid->state = ID_ADDR_BOUND;
	return 0;
}

/* @sa's IP address as text ("?" for another family). */
static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = NULL;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (!a || !inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *cid;
	int rc;

	if (!id || !addr)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	rc = cm_bind(cid, addr);
	pthread_mutex_unlock(&cm.lock);
	if (rc == -ENODEV) {
		char ip[INET6_ADDRSTRLEN];

		addr_str(addr, ip, sizeof(ip));
		urxe_dbg("rdma_bind_addr: %s: no urxe device has this address",
			 ip);
	}
	return rc ? cm_err(-rc) : 0;
}

/* ---- resolving ---- */

/* The source address the kernel would use toward @dst. */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage d;
	socklen_t len = cm_addr_len(dst);
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memcpy(&d, dst, len);
	set_port((struct sockaddr *)&d, 4791);
	if (connect(fd, (struct sockaddr *)&d, len)) {
		int e = errno;

		close(fd);
		return e == ENETUNREACH || e == EHOSTUNREACH ? -e : -ENODEV;
	}
	len = sizeof(*src);
	if (getsockname(fd, (struct sockaddr *)src, &len)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * Loopback: the GID of the process listening on the destination's port,
 * asked of its reservation socket (lock not held: the listener may be
 * this process).  -ENOENT when nobody listens.
 */
static int steer_lookup(enum rdma_port_space ps, uint16_t port,
			union ibv_gid *gid)
{
	struct cm_id probe = { .id = { .ps = ps } };
	struct sockaddr_un un;
	struct pollfd pfd;
	socklen_t len;
	size_t got = 0;
	ssize_t r;
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	port_name(&probe, port, &un, &len);
	if (connect(fd, (struct sockaddr *)&un, len)) {
		close(fd);
		return -ENOENT;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (got < sizeof(gid->raw)) {
		if (poll(&pfd, 1, STEER_WAIT_MS) <= 0)
			break;
		r = read(fd, gid->raw + got, sizeof(gid->raw) - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return got == sizeof(gid->raw) ? 0 : -ENOENT;
}

/* A listener on lo answers a steering client with its GID (CM thread). */
void cm_listen_accept(struct cm_id *listener)
{
	struct cm_dev *d = listener->dev ? listener->dev : lo_dev();
	int fd;

	while ((fd = accept4(listener->listen_fd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		if (d && write(fd, d->gid[0].raw, 16) != 16)
			urxe_dbg("listener: a steering client left early");
		close(fd);
	}
}

/*
 * Loopback destination: steers @cid's dgid to the listener's GID, or
 * leaves it (nobody listens: the REQ is refused later).  Lock held; it
 * is let go for the lookup.
 */
int cm_steer(struct cm_id *cid)
{
	union ibv_gid gid;
	uint16_t port = cm_port_of(&cid->id.route.addr.dst_addr);
	int rc;

	pthread_mutex_unlock(&cm.lock);
	rc = steer_lookup(cid->id.ps, port, &gid);
	pthread_mutex_lock(&cm.lock);
	if (rc)
		return rc;
	cid->id.route.addr.addr.ibaddr.dgid = gid;
	cid->steered = true;
	return 0;
}

bool cm_addr_multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)
					   (const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)
					       (const void *)sa)->sin6_addr);
	return false;
}

static bool slot_addr(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET &&
	       (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >>
		16) == (127u << 8 | 117u);
}

/*
 * The device @cid reaches @dst on, and its source GID's index (lock
 * held): an address of a device here (a loopback one, or the device
 * itself), else the one the kernel routes through.
 */
static int resolve_dev(struct cm_id *cid, const struct sockaddr *dst,
		       struct cm_dev **dp, uint8_t *ip)
{
	struct rdma_addr *ra = &cid->id.route.addr;
	struct cm_dev *d = cid->dev;
	struct sockaddr_storage s;
	union ibv_gid gid;
	uint8_t index = 0;
	int rc;

	cm_gid_of(dst, &gid);
	if (cm_addr_any(dst) || cm_addr_loopback(dst) ||
	    cm_dev_by_gid(&gid, NULL)) {
		if (!d)
			d = lo_dev();
		/* No lo device: the first, as Linux resolves loopback. */
		if (!d && (cm_addr_any(dst) || cm_addr_loopback(dst)) &&
		    cm.ndev)
			d = &cm.dev[0];
		if (!d)
			return -ENODEV;
		index = cid->dev ? cid->sgid_index : 0;
		/* ... and the destination is that device itself. */
		if (!d->info.loopback && (cm_addr_any(dst) ||
					  cm_addr_loopback(dst)))
			ra->addr.ibaddr.dgid = d->gid[index];
	} else if (!d) {
		rc = route_source(dst, &s);
		if (rc && !cm_addr_multicast(dst))
			return rc;
		if (rc) {
			d = NULL;
		} else if (cm_addr_loopback((struct sockaddr *)&s)) {
			d = lo_dev();	/* an address of this host */
		} else {
			cm_gid_of((struct sockaddr *)&s, &gid);
			d = cm_dev_by_gid(&gid, &index);
		}
		/* A group no device routes to: loopback's, if there is one. */
		if (!d && cm_addr_multicast(dst))
			d = lo_dev();
		if (!d)
			return -ENODEV;
	} else {
		index = cid->sgid_index;
	}
	*dp = d;
	*ip = index;
	return 0;
}

static int resolve(struct cm_id *cid, const struct sockaddr *src,
		   const struct sockaddr *dst)
{
	struct rdma_addr *ra = &cid->id.route.addr;
	struct sockaddr_storage s;
	struct cm_dev *d;
	uint8_t index = 0;
	int rc;

	/* As Linux: source and destination of one family. */
	if (src && src->sa_family && src->sa_family != dst->sa_family)
		return -EINVAL;
	if (cid->state == ID_ADDR_BOUND &&
	    ra->src_addr.sa_family != dst->sa_family)
		return -EINVAL;
	if (cid->state == ID_IDLE) {
		if (src && src->sa_family) {
			rc = cm_bind(cid, src);
		} else {
			memset(&s, 0, sizeof(s));
			s.ss_family = dst->sa_family;
			rc = cm_bind(cid, (struct sockaddr *)&s);
		}
		if (rc)
			return rc;
	} else if (cid->state != ID_ADDR_BOUND) {
		return -EINVAL;
	}
	memset(&ra->dst_storage, 0, sizeof(ra->dst_storage));
	memcpy(&ra->dst_addr, dst, cm_addr_len(dst));
	cm_gid_of(dst, &ra->addr.ibaddr.dgid);
	rc = resolve_dev(cid, dst, &d, &index);
	if (rc)
		return rc;
	if (!cid->dev) {
		uint16_t port = cm_port_of(&ra->src_addr);

		cid->dev = d;
		cid->sgid_index = index;
		cid->id.verbs = d->ctx;
		cid->id.pd = cm_dev_pd(d);
		cid->id.port_num = 1;
		/* The source is the device's address now. */
		cm_sockaddr_of(&d->gid[index], port, &s);
		memcpy(&ra->src_storage, &s, sizeof(s));
	}
	ra->addr.ibaddr.sgid = d->gid[index];
	ra->addr.ibaddr.pkey = 0xffff;
	if (cm_needs_steer(cid))
		cm_steer(cid);
	return 0;
}

/*
 * Whether @cid's destination is a loopback address other than an
 * instance's own (127.117/16 names one: no steering).
 */
bool cm_needs_steer(const struct cm_id *cid)
{
	const struct sockaddr *dst = &cid->id.route.addr.dst_addr;

	return cid->dev && cid->dev->info.loopback &&
	       (cm_addr_any(dst) || (cm_addr_loopback(dst) && !slot_addr(dst)));
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id *cid;
	struct cm_event *e;
	int rc;

	(void)timeout_ms;
	if (!id || !dst_addr || !cm_addr_len(dst_addr))
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_IDLE && cid->state != ID_ADDR_BOUND) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EINVAL);
	}
	rc = resolve(cid, src_addr, dst_addr);
	if (rc == -EINVAL || rc == -EADDRINUSE || rc == -EACCES ||
	    rc == -EAFNOSUPPORT) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(-rc);
	}
	if (rc) {
		/* As the kernel: the call succeeds, the event says why not. */
		e = cm_event_new(cid, RDMA_CM_EVENT_ADDR_ERROR, rc);
		if (rc == -ENODEV) {
			char to[INET6_ADDRSTRLEN], from[INET6_ADDRSTRLEN];

			addr_str(dst_addr, to, sizeof(to));
			if (src_addr)
				addr_str(src_addr, from, sizeof(from));
			urxe_warn("rdma_resolve_addr: no urxe device reaches %s%s%s (ADDR_ERROR %d): configure one on its interface (urxe dev add NAME netdev IF)",
				  to, src_addr ? " from " : "",
				  src_addr ? from : "", rc);
		}
	} else {
		cid->state = ID_ADDR_RESOLVED;
		e = cm_event_new(cid, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	}
	cm_event_post(cid, e);
	pthread_mutex_unlock(&cm.lock);
	return cm_wait(cid);
}

/* IB MTU of the largest payload a link of @mtu bytes carries. */
static enum ibv_mtu ib_mtu(enum ibv_mtu active)
{
	return active ? active : IBV_MTU_1024;
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *cid;
	struct ibv_sa_path_rec *p;
	struct cm_event *e;
	uint16_t sport, dport;

	(void)timeout_ms;
	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if (cid->state != ID_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cm.lock);
		return cm_err(EINVAL);
	}
	p = &cid->path;
	memset(p, 0, sizeof(*p));
	p->dgid = id->route.addr.addr.ibaddr.dgid;
	p->sgid = id->route.addr.addr.ibaddr.sgid;
	p->dlid = p->slid = htons(0xffff);
	p->pkey = htons(0xffff);
	p->hop_limit = 64;
	p->traffic_class = cid->tos;
	sport = cm_port_of(&id->route.addr.src_addr);
	dport = cm_port_of(&id->route.addr.dst_addr);
	p->flow_label = htonl(((uint32_t)sport * 31u + dport) & 0xfffff);
	p->sl = 0;
	p->mtu_selector = 2;
	p->mtu = ib_mtu(cid->dev->port.active_mtu);
	p->rate_selector = 2;
	p->rate = 0;
	p->packet_life_time_selector = 2;
	p->packet_life_time = cid->ack_timeout_set && cid->ack_timeout ?
			      (uint8_t)(cid->ack_timeout - 1) : CM_PACKET_LIFETIME;
	p->reversible = htonl(1u << 31);
	p->numb_path = 1;
	id->route.path_rec = p;
	id->route.num_paths = 1;
	cid->path_mtu = (uint8_t)p->mtu;
	cid->state = ID_ROUTE_RESOLVED;
	e = cm_event_new(cid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	cm_event_post(cid, e);
	pthread_mutex_unlock(&cm.lock);
	return cm_wait(cid);
}

/* ---- listening ---- */

int cm_listen_open(struct cm_id *cid)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int rc, i;

	rc = cm_port_reserve(cid);
	if (rc)
		return rc;
	if (listen(cid->port_fd, 64))
		return -errno;
	rc = cm_thread_start();
	if (rc)
		return rc;
	cid->listen_fd = cid->port_fd;
	ev.data.ptr = cid;
	if (epoll_ctl(cm.epfd, EPOLL_CTL_ADD, cid->listen_fd, &ev))
		return -errno;
	if (cid->dev)
		return cm_dev_gsi(cid->dev);
	/* A wildcard listens on every device it can. */
	for (i = 0; i < cm.ndev; i++)
		if (cm_dev_gsi(&cm.dev[i]))
			urxe_dbg("listen: %s: no QP1 (%s)",
			       ibv_get_device_name(cm.dev[i].ctx->device),
			       strerror(errno));
	return 0;
}

CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *cid;
	struct sockaddr_in any = { .sin_family = AF_INET };
	int rc = 0;

	if (!id)
		return cm_err(EINVAL);
	cid = to_cid(id);
	pthread_mutex_lock(&cm.lock);
	if (cid->state == ID_IDLE)
		rc = cm_bind(cid, (struct sockaddr *)&any);
	if (!rc && cid->state != ID_ADDR_BOUND)
		rc = -EINVAL;
	if (!rc) {
		cid->reuseaddr = false;
		rc = cm_listen_open(cid);
	}
	if (!rc) {
		cid->backlog = backlog <= 0 || backlog > CM_BACKLOG_MAX ?
			       CM_BACKLOG_MAX : backlog;
		cid->state = ID_LISTEN;
		cm_parked_retry();	/* requests that came first */
	}
	pthread_mutex_unlock(&cm.lock);
	return rc ? cm_err(-rc) : 0;
}
