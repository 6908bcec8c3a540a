// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 3: SEND and RECEIVE between two processes.
 *
 * Unlike a WRITE, a SEND is consumed by the receiver's program: it must
 * have posted a receive work request (a buffer) beforehand, and it gets a
 * completion when the message lands.  A SEND may carry 32 bits of
 * immediate data, delivered in the receiver's completion.
 *
 * Before two RC QPs can talk, each side must learn the other's QP number,
 * first PSN and GID.  The verbs have no way to do that: programs use an
 * out-of-band channel, here a TCP connection (lesson 9 uses the RDMA
 * connection manager instead).
 *
 *   03_send_recv [-d DEV] [-g GIDX] [-p PORT]            the server
 *   03_send_recv [-d DEV] [-g GIDX] [-p PORT] SERVER     the client
 *
 * The client sends "ping" (immediate data 0x1234), the server answers
 * "pong" (immediate data 0x5678).
 */
#include "common.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SIZE 64

/* ---- the out-of-band channel: plain TCP ---- */

static int tcp_server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;

	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		die("bind/listen");
	printf("server: waiting for a client on TCP port %d\n", port);
	fflush(stdout);
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(ls);
	return fd;
}

static int tcp_client(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char service[8];
	int fd;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai)) {
		errno = EHOSTUNREACH;
		die("getaddrinfo");
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	return fd;
}

static void full_io(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;

	while (len) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0) {
			if (n == 0)
				errno = ECONNRESET;
			die(writing ? "write" : "read");
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Sends ours, reads theirs; numbers travel in network byte order. */
static struct endpoint exchange(int fd, struct endpoint mine)
{
	struct endpoint theirs;

	mine.qpn = htonl(mine.qpn);
	mine.psn = htonl(mine.psn);
	full_io(fd, &mine, sizeof(mine), 1);
	full_io(fd, &theirs, sizeof(theirs), 0);
	theirs.qpn = ntohl(theirs.qpn);
	theirs.psn = ntohl(theirs.psn);
	return theirs;
}

/* ---- the verbs part ---- */

/* A receive work request: where the next incoming SEND goes. */
static void post_receive(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = BUF_SIZE, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	check(ibv_post_recv(qp, &wr, &bad), "ibv_post_recv");
}

static void send_text(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		      const char *who, const char *text, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr,
			       .length = (uint32_t)strlen(text) + 1,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),	/* big-endian on the wire */
	}, *bad;
	struct ibv_wc wc;

	strcpy(mr->addr, text);
	check(ibv_post_send(qp, &wr, &bad), "ibv_post_send");
	wait_completion(cq, &wc);
	printf("%s: sent \"%s\" with immediate data 0x%x: %s\n", who, text, imm,
	       wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

static void receive_text(struct ibv_cq *cq, struct ibv_mr *mr,
			 const char *who)
{
	struct ibv_wc wc;

	wait_completion(cq, &wc);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM)) {
		printf("%s: receive failed: %s\n", who, wc_status_name(wc.status));
		exit(1);
	}
	/* byte_len: how much of the buffer the SEND filled. */
	printf("%s: received %u bytes, immediate data 0x%x: \"%s\"\n", who,
	       wc.byte_len, ntohl(wc.imm_data), (char *)mr->addr);
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:p:");
	const char *who = o.server ? "client" : "server";
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	char *rbuf = calloc(1, BUF_SIZE), *sbuf = calloc(1, BUF_SIZE);
	char ready = 'r';

	if (!pd || !cq || !rbuf || !sbuf)
		die("ibv_alloc_pd/ibv_create_cq/calloc");
	/* One region to receive into (the device writes it), one to send
	 * from. */
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, BUF_SIZE,
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *smr = ibv_reg_mr(pd, sbuf, BUF_SIZE, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!rmr || !smr || !qp)
		die("ibv_reg_mr/ibv_create_qp");

	/* A fixed PSN keeps the example simple; real programs draw a
	 * random one, so that stray packets of an earlier connection that
	 * used the same QP number are not taken as this one's. */
	int fd = o.server ? tcp_client(o.server, o.port) : tcp_server(o.port);
	struct endpoint peer = exchange(fd, local_endpoint(qp, o.gidx, 0x42));

	rc_connect(qp, o.gidx, 0x42, &peer, 7);
	/* The receive must be posted before the peer's SEND arrives; the
	 * second exchange ("ready") makes sure it is, on both sides. */
	post_receive(qp, rmr);
	full_io(fd, &ready, 1, 1);
	full_io(fd, &ready, 1, 0);
	printf("%s: connected to the %s's QP\n", who,
	       o.server ? "server" : "client");

	if (o.server) {
		send_text(qp, cq, smr, who, "ping", 0x1234);
		receive_text(cq, rmr, who);
	} else {
		receive_text(cq, rmr, who);
		send_text(qp, cq, smr, who, "pong", 0x5678);
	}
	/* Wait until the peer is done too before destroying the QP. */
	full_io(fd, &ready, 1, 1);
	full_io(fd, &ready, 1, 0);
	close(fd);

	check(ibv_destroy_qp(qp), "ibv_destroy_qp");
	check(ibv_dereg_mr(rmr), "ibv_dereg_mr");
	check(ibv_dereg_mr(smr), "ibv_dereg_mr");
	check(ibv_destroy_cq(cq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(rbuf);
	free(sbuf);
	return 0;
}
