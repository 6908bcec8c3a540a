// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo of the built librdmacm.so.1, held
 * to rdma_getaddrinfo(3) and to what the stock library does: the port
 * space and QP type implied by each other (RDMA_PS_UDP and UD, else TCP
 * and RC), the passive side's source address (the wildcard without a
 * node), the active side's destination, the hints' own addresses, EAI_*
 * codes passed through, -1 with EINVAL / ENODEV, AF_IB refused with
 * EAI_FAMILY, and a whole ai_next chain freed (ASan's leak check).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "testutil.h"

static struct tu_sandbox sb;

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
}

static void teardown(void)
{
	tu_sandbox_fini(&sb);
}

/* "a.b.c.d:port" or "[v6]:port" of @sa, for comparing. */
static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "family %d", sa->sa_family);
	}
	return buf;
}

/* One lookup and what it must answer; NULL addresses mean none. */
struct lookup_case {
	const char *node, *service;
	int flags, family, port_space, qp_type;
	int want_family, want_ps, want_qpt;
	const char *want_src, *want_dst;
};

static const struct lookup_case lookups[] = {
	/* Active: the destination, TCP and RC by default. */
	{ "127.0.0.1", "7471", 0, 0, 0, 0,
	  AF_INET, RDMA_PS_TCP, IBV_QPT_RC, NULL, "127.0.0.1:7471" },
	{ "::1", "7174", RAI_NUMERICHOST, 0, RDMA_PS_TCP, 0,
	  AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, NULL, "[::1]:7174" },
	/* Port space and QP type imply each other. */
	{ "127.0.0.1", "7174", 0, 0, RDMA_PS_UDP, 0,
	  AF_INET, RDMA_PS_UDP, IBV_QPT_UD, NULL, "127.0.0.1:7174" },
	{ "127.0.0.1", NULL, 0, 0, 0, IBV_QPT_UD,
	  AF_INET, RDMA_PS_UDP, IBV_QPT_UD, NULL, "127.0.0.1:0" },
	{ "127.0.0.1", "1", 0, 0, RDMA_PS_IPOIB, 0,
	  AF_INET, RDMA_PS_IPOIB, IBV_QPT_UD, NULL, "127.0.0.1:1" },
	{ "127.0.0.1", "2", 0, 0, 0, IBV_QPT_UC,
	  AF_INET, RDMA_PS_TCP, IBV_QPT_UC, NULL, "127.0.0.1:2" },
	/* Passive: the source, the wildcard without a node. */
	{ NULL, "7471", RAI_PASSIVE, AF_INET, 0, 0,
	  AF_INET, RDMA_PS_TCP, IBV_QPT_RC, "0.0.0.0:7471", NULL },
	{ NULL, "7471", RAI_PASSIVE, AF_INET6, RDMA_PS_TCP, 0,
	  AF_INET6, RDMA_PS_TCP, IBV_QPT_RC, "[::]:7471", NULL },
	{ "127.0.0.1", "7471", RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE,
	  AF_INET, 0, 0,
	  AF_INET, RDMA_PS_TCP, IBV_QPT_RC, "127.0.0.1:7471", NULL },
	/* The family narrows the lookup. */
	{ "localhost", "9", RAI_FAMILY, AF_INET, 0, 0,
	  AF_INET, RDMA_PS_TCP, IBV_QPT_RC, NULL, "127.0.0.1:9" },
};

START_TEST(lookup)
{
	const struct lookup_case *c = &lookups[_i];
	struct rdma_addrinfo hints = {
		.ai_flags = c->flags,
		.ai_family = c->family,
		.ai_port_space = c->port_space,
		.ai_qp_type = c->qp_type,
	};
	struct rdma_addrinfo *res = NULL;
	char buf[80];

	ck_assert_int_eq(rdma_getaddrinfo(c->node, c->service, &hints, &res), 0);
	ck_assert_ptr_nonnull(res);
	ck_assert_int_eq(res->ai_family, c->want_family);
	ck_assert_int_eq(res->ai_port_space, c->want_ps);
	ck_assert_int_eq(res->ai_qp_type, c->want_qpt);
	ck_assert_int_eq(!!(res->ai_flags & RAI_PASSIVE), !!(c->flags & RAI_PASSIVE));
	if (c->want_src) {
		ck_assert_ptr_nonnull(res->ai_src_addr);
		ck_assert_str_eq(addr_str(res->ai_src_addr, buf, sizeof(buf)),
				 c->want_src);
		ck_assert_uint_eq(res->ai_src_len, c->want_family == AF_INET ?
				  sizeof(struct sockaddr_in) :
				  sizeof(struct sockaddr_in6));
	} else {
		ck_assert_ptr_null(res->ai_src_addr);
		ck_assert_uint_eq(res->ai_src_len, 0);
	}
	if (c->want_dst) {
		ck_assert_ptr_nonnull(res->ai_dst_addr);
		ck_assert_str_eq(addr_str(res->ai_dst_addr, buf, sizeof(buf)),
				 c->want_dst);
		ck_assert_uint_eq(res->ai_dst_len, c->want_family == AF_INET ?
				  sizeof(struct sockaddr_in) :
				  sizeof(struct sockaddr_in6));
	} else {
		ck_assert_ptr_null(res->ai_dst_addr);
		ck_assert_uint_eq(res->ai_dst_len, 0);
	}
	ck_assert_ptr_null(res->ai_next);
	rdma_freeaddrinfo(res);
}
END_TEST

/* Without hints: TCP, RC, and the node as the destination. */
START_TEST(no_hints)
{
	struct rdma_addrinfo *res = NULL;
	char buf[80];

	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "7471", NULL, &res), 0);
	ck_assert_int_eq(res->ai_port_space, RDMA_PS_TCP);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_RC);
	ck_assert_str_eq(addr_str(res->ai_dst_addr, buf, sizeof(buf)),
			 "127.0.0.1:7471");
	rdma_freeaddrinfo(res);
}
END_TEST

/* Active side: the hints' source comes along; passive ignores it. */
START_TEST(hint_source)
{
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_port = htons(5000) };
	struct rdma_addrinfo hints = {
		.ai_src_addr = (struct sockaddr *)&src,
		.ai_src_len = sizeof(src),
	};
	struct rdma_addrinfo *res = NULL;
	char buf[80];

	inet_pton(AF_INET, "127.0.0.2", &src.sin_addr);
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	ck_assert_str_eq(addr_str(res->ai_src_addr, buf, sizeof(buf)),
			 "127.0.0.2:5000");
	ck_assert_ptr_ne(res->ai_src_addr, hints.ai_src_addr);
	rdma_freeaddrinfo(res);

	hints.ai_flags = RAI_PASSIVE;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	ck_assert_str_eq(addr_str(res->ai_src_addr, buf, sizeof(buf)),
			 "127.0.0.1:7471");
	rdma_freeaddrinfo(res);
}
END_TEST

/* Neither node nor service: the answer is built from the hints alone. */
START_TEST(hints_only)
{
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6,
				    .sin6_port = htons(7) };
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_UDP,
		.ai_dst_addr = (struct sockaddr *)&dst,
		.ai_dst_len = sizeof(dst),
	};
	struct rdma_addrinfo *res = NULL;
	char buf[80];

	dst.sin6_addr = in6addr_loopback;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	ck_assert_int_eq(res->ai_family, AF_INET6);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_UD);
	ck_assert_str_eq(addr_str(res->ai_dst_addr, buf, sizeof(buf)), "[::1]:7");
	ck_assert_ptr_null(res->ai_src_addr);
	rdma_freeaddrinfo(res);

	/* Passive with nothing at all: the wildcard, port 0. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	ck_assert_str_eq(addr_str(res->ai_src_addr, buf, sizeof(buf)),
			 "0.0.0.0:0");
	ck_assert_ptr_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
}
END_TEST

/* Failures: -1 with errno, or an EAI_* code as the return value. */
START_TEST(errors)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST };
	struct rdma_addrinfo *res = (void *)&hints;

	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "1", NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);

	/* Not a numeric address: getaddrinfo's own code comes through. */
	ck_assert_int_eq(rdma_getaddrinfo("localhost", "1", &hints, &res),
			 EAI_NONAME);
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "no-such-service-x",
					  &hints, &res), EAI_SERVICE);

	/* AF_IB, as a family or as an address. */
	hints.ai_family = AF_IB;
	ck_assert_int_eq(rdma_getaddrinfo("::1", "1", &hints, &res), EAI_FAMILY);
	hints.ai_flags |= RAI_FAMILY;
	ck_assert_int_eq(rdma_getaddrinfo("::1", "1", &hints, &res), EAI_FAMILY);
	{
		struct sockaddr sa = { .sa_family = AF_IB };
		struct rdma_addrinfo h = { .ai_dst_addr = &sa,
					   .ai_dst_len = sizeof(sa) };

		ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &h, &res),
				 EAI_FAMILY);
		/* A length without an address. */
		h.ai_dst_addr = NULL;
		errno = 0;
		ck_assert_int_eq(rdma_getaddrinfo(NULL, NULL, &h, &res), -1);
		ck_assert_int_eq(errno, EINVAL);
	}
	/* Nothing written on failure. */
	ck_assert_ptr_eq(res, (void *)&hints);
}
END_TEST

/* No RDMA device at all: -1 with ENODEV, before any lookup. */
START_TEST(no_device)
{
	struct rdma_addrinfo *res = NULL;

	setenv("URXE_DEVICES", "rxe0 netdev urxe-no-such-if", 1);
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "7471", NULL, &res), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_null(res);
}
END_TEST

/* rdma_freeaddrinfo frees the whole ai_next chain (ASan: no leak). */
START_TEST(free_chain)
{
	struct rdma_addrinfo *a = NULL, *b = NULL, *c = NULL;

	rdma_freeaddrinfo(NULL);
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "1", NULL, &a), 0);
	ck_assert_int_eq(rdma_getaddrinfo(NULL, "2",
		&(struct rdma_addrinfo){ .ai_flags = RAI_PASSIVE }, &b), 0);
	ck_assert_int_eq(rdma_getaddrinfo("::1", "3", NULL, &c), 0);
	a->ai_next = b;
	b->ai_next = c;
	/* Members the library would own if it filled them. */
	c->ai_dst_canonname = strdup("x");
	c->ai_route = malloc(8);
	c->ai_route_len = 8;
	c->ai_connect = malloc(8);
	c->ai_connect_len = 8;
	rdma_freeaddrinfo(a);
}
END_TEST

static Suite *addrinfo_suite(void)
{
	Suite *s = suite_create("addrinfo");
	TCase *tc = tu_tcase(s, "rules", setup, teardown);

	tcase_set_timeout(tc, 20);
	tcase_add_loop_test(tc, lookup, 0,
			    (int)(sizeof(lookups) / sizeof(lookups[0])));
	tcase_add_test(tc, no_hints);
	tcase_add_test(tc, hint_source);
	tcase_add_test(tc, hints_only);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, no_device);
	tcase_add_test(tc, free_chain);
	return s;
}

int main(void)
{
	return tu_run(addrinfo_suite());
}
