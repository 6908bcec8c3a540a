// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rsocket calls of the built librdmacm.so.1, not implemented yet
 * (docs/limitations.md): each of the 27 returns -1 (riomap (off_t)-1,
 * riowrite (size_t)-1) with errno ENOSYS, and a process logs the refusal
 * once, naming the first call.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "testutil.h"

static struct sockaddr_in sa = { .sin_family = AF_INET };
static socklen_t salen = sizeof(sa);
static char buf[16];
static struct iovec iov = { buf, sizeof(buf) };
static struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
static struct pollfd pfd = { .fd = 0, .events = POLLIN };
static int optval;
static socklen_t optlen = sizeof(optval);

#define SA ((struct sockaddr *)&sa)
/* call_NAME(): NAME with plausible arguments, its result as a long. */
#define CALL(name, ...) \
	static long call_##name(void) { return (long)name(__VA_ARGS__); }

CALL(rsocket, AF_INET, SOCK_STREAM, 0)
CALL(rbind, 3, SA, salen)
CALL(rlisten, 3, 1)
CALL(raccept, 3, SA, &salen)
CALL(rconnect, 3, SA, salen)
CALL(rshutdown, 3, SHUT_RDWR)
CALL(rclose, 3)
CALL(rrecv, 3, buf, sizeof(buf), 0)
CALL(rrecvfrom, 3, buf, sizeof(buf), 0, SA, &salen)
CALL(rrecvmsg, 3, &msg, 0)
CALL(rsend, 3, buf, sizeof(buf), 0)
CALL(rsendto, 3, buf, sizeof(buf), 0, SA, salen)
CALL(rsendmsg, 3, &msg, 0)
CALL(rread, 3, buf, sizeof(buf))
CALL(rreadv, 3, &iov, 1)
CALL(rwrite, 3, buf, sizeof(buf))
CALL(rwritev, 3, &iov, 1)
CALL(rpoll, &pfd, 1, 0)
CALL(rselect, 0, NULL, NULL, NULL, NULL)
CALL(rgetpeername, 3, SA, &salen)
CALL(rgetsockname, 3, SA, &salen)
CALL(rsetsockopt, 3, SOL_RDMA, RDMA_SQSIZE, &optval, optlen)
CALL(rgetsockopt, 3, SOL_RDMA, RDMA_SQSIZE, &optval, &optlen)
CALL(rfcntl, 3, F_GETFL)
CALL(riomap, 3, buf, sizeof(buf), PROT_WRITE, 0, -1)
CALL(riounmap, 3, buf, sizeof(buf))
CALL(riowrite, 3, buf, sizeof(buf), 0, 0)

static const struct {
	const char *name;
	long (*call)(void);
} calls[] = {
#define C(name) { #name, call_##name }
	C(rsocket), C(rbind), C(rlisten), C(raccept), C(rconnect),
	C(rshutdown), C(rclose), C(rrecv), C(rrecvfrom), C(rrecvmsg),
	C(rsend), C(rsendto), C(rsendmsg), C(rread), C(rreadv), C(rwrite),
	C(rwritev), C(rpoll), C(rselect), C(rgetpeername), C(rgetsockname),
	C(rsetsockopt), C(rgetsockopt), C(rfcntl), C(riomap), C(riounmap),
	C(riowrite),
#undef C
};
_Static_assert(sizeof(calls) / sizeof(calls[0]) == 27, "27 rsocket calls");

/*
 * The process's first calls: one line, naming the first.  (First in the
 * suite: under CK_FORK=no every test shares the process and its flag.)
 */
START_TEST(logged_once)
{
	char path[] = "/tmp/urxe-rsocket-log-XXXXXX", text[4096];
	int fd, saved, lines = 0;
	ssize_t n;
	char *p;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	setenv("URXE_LOG", "warn", 1);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	ck_assert_int_eq(rlisten(3, 1), -1);
	ck_assert_int_eq(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(rpoll(&pfd, 1, 0), -1);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	unsetenv("URXE_LOG");

	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	for (p = text; (p = strstr(p, "rsockets are not implemented yet")); p++)
		lines++;
	ck_assert_msg(lines == 1, "%d refusals logged: %s", lines, text);
	ck_assert_ptr_nonnull(strstr(text, "urxe: "));
	ck_assert_ptr_nonnull(strstr(text, "(rlisten)"));
	ck_assert_ptr_nonnull(strstr(text, "docs/limitations.md"));
}
END_TEST

START_TEST(enosys)
{
	errno = 0;
	ck_assert_msg(calls[_i].call() == -1, "%s did not return -1",
		      calls[_i].name);
	ck_assert_msg(errno == ENOSYS, "%s: errno %d, want ENOSYS",
		      calls[_i].name, errno);
}
END_TEST

/* Forked, every call is a process's first: keep the refusals quiet. */
static void quiet(void)
{
	setenv("URXE_LOG", "error", 1);
}

static void unquiet(void)
{
	unsetenv("URXE_LOG");
}

static Suite *rsocket_suite(void)
{
	Suite *s = suite_create("rsocket");
	TCase *tc = tu_tcase(s, "log", NULL, NULL);

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, logged_once);

	tc = tu_tcase(s, "stubs", quiet, unquiet);
	tcase_set_timeout(tc, 20);
	tcase_add_loop_test(tc, enosys, 0,
			    (int)(sizeof(calls) / sizeof(calls[0])));
	return s;
}

int main(void)
{
	return tu_run(rsocket_suite());
}
