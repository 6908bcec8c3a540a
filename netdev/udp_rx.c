// SPDX-License-Identifier: BSD-2-Clause
/*
 * The udp backend's receiving (udp.c has the sockets): recvmmsg over the
 * receive sockets, families taken in turns, each datagram's addresses,
 * class, TTL, GRO segment size, checksum and kernel receive time from
 * its control messages.
 */
#include "udp_int.h"

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
	udp_gid_from_sa(in->src, a);
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

