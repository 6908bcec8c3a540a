// SPDX-License-Identifier: BSD-2-Clause
/*
 * rsockets (rsocket(7)), not implemented yet: the 27 calls of
 * <rdma/rsocket.h> exist so that everything linked against librdmacm
 * loads.  Debian's clients are linked -z now, and most of them import
 * rpoll even though they never call it (the rdmacm-utils examples share
 * one helper file that references it), so a missing rsocket symbol would
 * stop rping as surely as a missing rdma_connect.
 *
 * Each call fails as a system without the feature would: -1 (riomap
 * (off_t)-1, riowrite (size_t)-1) with errno ENOSYS, and the first call
 * in a process says so on stderr, naming the call.  Under librspreload.so
 * that is harmless: its socket() falls back to the kernel's when rsocket
 * fails.  docs/limitations.md tells users.
 */
#include <errno.h>
#include <stdatomic.h>

#include <rdma/rsocket.h>

#include <urxe/log.h>
#include <urxe/util.h>

/* Every parameter below is deliberately unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static atomic_flag told = ATOMIC_FLAG_INIT;

/* -1 with errno ENOSYS; the process's first refusal is logged. */
static int unimplemented(const char *call)
{
	if (!atomic_flag_test_and_set(&told))
		urxe_warn("rsockets are not implemented yet (%s): use the verbs "
			  "or RDMA CM API; see docs/limitations.md", call);
	errno = ENOSYS;
	return -1;
}

/* Sockets: creation, addresses, connections. */

URXE_EXPORT int rsocket(int domain, int type, int protocol)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rbind(int socket, const struct sockaddr *addr,
		      socklen_t addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rlisten(int socket, int backlog)
{
	return unimplemented(__func__);
}

URXE_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rconnect(int socket, const struct sockaddr *addr,
			 socklen_t addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rshutdown(int socket, int how)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rclose(int socket)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			     socklen_t *addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			     socklen_t *addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rsetsockopt(int socket, int level, int optname,
			    const void *optval, socklen_t optlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			    socklen_t *optlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rfcntl(int socket, int cmd, ...)
{
	return unimplemented(__func__);
}

/* Data. */

URXE_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			      struct sockaddr *src_addr, socklen_t *addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			    const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return unimplemented(__func__);
}

URXE_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return unimplemented(__func__);
}

/* Readiness. */

URXE_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return unimplemented(__func__);
}

URXE_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
			fd_set *exceptfds, struct timeval *timeout)
{
	return unimplemented(__func__);
}

/* Direct placement (riomap(3)): offsets, so failure is (off_t)-1. */

URXE_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot,
			 int flags, off_t offset)
{
	return (off_t)unimplemented(__func__);
}

URXE_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	return unimplemented(__func__);
}

URXE_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			    off_t offset, int flags)
{
	return (size_t)unimplemented(__func__);
}
