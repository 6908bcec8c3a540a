// SPDX-License-Identifier: BSD-2-Clause
/*
 * One netlink request, one answer: what the packet backend's next-hop
 * lookups and the UC/UD flow control's socket-room queries both ask; and
 * a dump (the flow control's count of a socket's senders).
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "nl.h"

struct mnl_socket *urxe_nl_open(int bus)
{
	struct mnl_socket *nl = mnl_socket_open2(bus, SOCK_CLOEXEC);
	int err;

	if (nl && mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = errno;
		mnl_socket_close(nl);
		errno = err;
		nl = NULL;
	}
	return nl;
}

/*
 * Sends @nlh and runs @cb over the answer: one read for a request, reads
 * until the kernel's NLMSG_DONE for a dump.
 */
static int exchange(struct mnl_socket *nl, unsigned int *seq,
		    struct nlmsghdr *nlh, mnl_cb_t cb, void *data, bool dump)
{
	char buf[16384];
	unsigned int portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int rc;

	if (dump)
		nlh->nlmsg_flags |= NLM_F_DUMP;
	nlh->nlmsg_seq = ++*seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		rc = mnl_cb_run(buf, (size_t)n, *seq, portid, cb, data);
	} while (dump && rc == MNL_CB_OK);
	return rc < 0 ? -errno : 0;
}

int urxe_nl_ask(struct mnl_socket *nl, unsigned int *seq,
		struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	return exchange(nl, seq, nlh, cb, data, false);
}

int urxe_nl_dump(struct mnl_socket *nl, unsigned int *seq,
		 struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	return exchange(nl, seq, nlh, cb, data, true);
}
