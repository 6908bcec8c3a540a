// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdma_getaddrinfo(3) and rdma_freeaddrinfo: libc's getaddrinfo seen
 * through RDMA hints.  The QP type picks the socket type (RC, UC and XRC
 * are streams, UD datagrams), the port space the protocol (TCP, or UDP for
 * RDMA_PS_UDP and RDMA_PS_IPOIB), and the first answer becomes one
 * rdma_addrinfo: its address is the source on the passive side
 * (RAI_PASSIVE; the wildcard when no node is given) and the destination
 * otherwise.  No route or connection data is resolved (there is no IB SA
 * or ACM on RoCE), so RAI_NOROUTE has nothing to suppress.
 *
 * Return convention, the API's own and mixed (RDMACM-NOTES 2.4): 0; an
 * EAI_* code from getaddrinfo, passed through so that callers can
 * gai_strerror() it; or -1 with errno (EINVAL, ENOMEM, and ENODEV when
 * no RDMA device exists, checked first as the stock library does).  The
 * static helpers here return the same way.  AF_IB addressing is not
 * supported: EAI_FAMILY.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <urxe/util.h>

#ifndef AF_IB
#define AF_IB 27
#endif

static int fail(int err)
{
	errno = err;
	return -1;
}

/* Is @addr an address this library can carry (not AF_IB)? */
static bool family_ok(const struct sockaddr *addr, socklen_t len)
{
	return !len || addr->sa_family != AF_IB;
}

/* Hints a caller passed: invalid shapes before any work is done. */
static int check_hints(const struct rdma_addrinfo *h)
{
	if ((h->ai_src_len && !h->ai_src_addr) ||
	    (h->ai_dst_len && !h->ai_dst_addr))
		return fail(EINVAL);
	if (h->ai_family == AF_IB || !family_ok(h->ai_src_addr, h->ai_src_len) ||
	    !family_ok(h->ai_dst_addr, h->ai_dst_len))
		return EAI_FAMILY;
	return 0;
}

/* Does this process see at least one RDMA device (urxe's configuration)? */
static bool have_device(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return false;
	ibv_free_device_list(list);
	return n > 0;
}

/*
 * The port space and QP type to use, each from the hints or else implied
 * by the other: UD goes with RDMA_PS_UDP, the rest with RDMA_PS_TCP.
 */
static void pick_space_and_type(const struct rdma_addrinfo *h, int *ps,
				int *qpt)
{
	*ps = h->ai_port_space;
	*qpt = h->ai_qp_type;
	if (!*qpt)
		*qpt = *ps == RDMA_PS_UDP || *ps == RDMA_PS_IPOIB ?
			IBV_QPT_UD : IBV_QPT_RC;
	if (!*ps)
		*ps = *qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
}

static void to_libc_hints(const struct rdma_addrinfo *h, int ps, int qpt,
			  struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	/*
	 * As in the stock library the family always narrows the lookup;
	 * RAI_FAMILY only mattered there for AF_IB, refused above.
	 */
	ai->ai_family = h->ai_family;
	switch (qpt) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	}
	switch (ps) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype)
			ai->ai_protocol = ai->ai_socktype == SOCK_STREAM ?
				IPPROTO_TCP : IPPROTO_UDP;
		break;
	}
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len,
		     const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return fail(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* The wildcard address of @family (port 0): a passive side with nothing. */
static int wildcard(struct rdma_addrinfo *rai, int family)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_ANY) };

	if (family == AF_INET6) {
		in6.sin6_addr = in6addr_any;
		return copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				 (struct sockaddr *)&in6, sizeof(in6));
	}
	return copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
			 (struct sockaddr *)&in, sizeof(in));
}

/* Node and/or service through getaddrinfo; the first answer is kept. */
static int resolve(struct rdma_addrinfo *rai, const char *node,
		   const char *service, const struct rdma_addrinfo *h)
{
	struct addrinfo hints, *ai;
	int ret;

	to_libc_hints(h, rai->ai_port_space, rai->ai_qp_type, &hints);
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret)
		return ret;
	rai->ai_family = ai->ai_family;
	if (h->ai_flags & RAI_PASSIVE)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				ai->ai_addr, ai->ai_addrlen);
	else
		ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
				ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return ret;
}

/* No node, no service: the answer is made of the hints' own addresses. */
static int from_hints(struct rdma_addrinfo *rai, const struct rdma_addrinfo *h)
{
	rai->ai_family = h->ai_family;
	if (!rai->ai_family && h->ai_dst_len)
		rai->ai_family = h->ai_dst_addr->sa_family;
	if (!rai->ai_family && h->ai_src_len)
		rai->ai_family = h->ai_src_addr->sa_family;
	if (!h->ai_dst_len)
		return 0;
	return copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, h->ai_dst_addr,
			 h->ai_dst_len);
}

URXE_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				 const struct rdma_addrinfo *hints,
				 struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo no_hints;
	struct rdma_addrinfo *rai;
	int ret;

	if (!res || (!node && !service && !hints))
		return fail(EINVAL);
	if (!hints)
		hints = &no_hints;
	ret = check_hints(hints);
	if (ret)
		return ret;
	if (!have_device())
		return fail(ENODEV);

	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return fail(ENOMEM);
	rai->ai_flags = hints->ai_flags;
	pick_space_and_type(hints, &rai->ai_port_space, &rai->ai_qp_type);
	if (node || service)
		ret = resolve(rai, node, service, hints);
	else
		ret = from_hints(rai, hints);
	if (ret)
		goto err_free;

	/* The caller's source, unless resolving gave one (passive side). */
	if (!rai->ai_src_len && hints->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				hints->ai_src_addr, hints->ai_src_len);
	else if (!rai->ai_src_len && (rai->ai_flags & RAI_PASSIVE))
		ret = wildcard(rai, rai->ai_family);
	if (ret)
		goto err_free;
	*res = rai;
	return 0;

err_free:
	rdma_freeaddrinfo(rai);
	return ret;
}

URXE_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}
