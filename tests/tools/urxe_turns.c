// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_turns: one end of RC connections made one after another, for
 * tests where one side lives long and the other is restarted between
 * connections (a new process on the same address and ports).
 *
 *   listener:  urxe_turns [-d dev] [-g gid] [-p port] [-n rounds] [-m msgs] [-P]
 *   connector: urxe_turns [same options] HOST
 *
 * Each round: a TCP connection (the connector retries until the listener
 * answers), an exchange of QPN, PSN and GID, a new RC QP on each side,
 * then -m SENDs each way at once; every message must arrive, in order,
 * with its index, and every send must complete successfully.  The device,
 * PD, CQ and buffers live as long as the process: only the QP is new.
 * With -P the listener serves Debian's ibv_rc_pingpong instead (its TCP
 * exchange; -m exchanges of up to 64 bytes, its -n and -s), so that
 * another implementation's client, restarted, can connect in turn.
 * Uses the public verbs API only and bounds its own time (-t seconds).
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout.
 * Prints "round N ok" per round and PASS or FAIL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSGS 256
#define MSG_BYTES 64
#define MAGIC 0x7475726eu		/* "turn" */

enum { EXIT_CHECK = 1, EXIT_SETUP = 2, EXIT_TIME = 3 };

struct wire {				/* what the TCP exchange carries */
	uint32_t magic, qpn, psn;
	uint8_t gid[16];
};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;			/* receive slots, then send slots */
	int gidx, msgs;
	uint64_t deadline_ns;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int fail(int code, const char *what)
{
	fprintf(stderr, "urxe_turns: %s\n", what);
	return code;
}

static int tcp_listen(const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	int fd, one = 1;

	if (getaddrinfo(NULL, port, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
			bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 4))) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* Connects to HOST:port, retrying while nobody listens, until the deadline. */
static int tcp_connect(const char *host, const char *port, uint64_t deadline)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	while (now_ns() < deadline) {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd < 0 || !connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
		usleep(20000);
	}
	freeaddrinfo(ai);
	return fd;
}

static bool xfer_all(int fd, void *p, size_t n, bool out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = out ? write(fd, b, n) : read(fd, b, n);

		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* Both ends have reached the same point (one byte each way). */
static bool barrier(int fd)
{
	uint8_t x = 1;

	return xfer_all(fd, &x, 1, true) && xfer_all(fd, &x, 1, false);
}

static struct ibv_qp *qp_new(struct end *e)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = MAX_MSGS, .max_recv_wr = MAX_MSGS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	int i;

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		goto err;
	for (i = 0; i < e->msgs; i++) {
		struct ibv_sge sg = { (uintptr_t)(e->buf + i * MSG_BYTES),
				      MSG_BYTES, e->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			goto err;
	}
	return qp;
err:
	ibv_destroy_qp(qp);
	return NULL;
}

static int qp_connect(struct end *e, struct ibv_qp *qp, const struct wire *me,
		      const struct wire *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn, .rq_psn = peer->psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 64,
				      .sgid_index = (uint8_t)e->gidx } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Sends -m messages and takes -m; every one must arrive, in order. */
static int traffic(struct end *e, struct ibv_qp *qp)
{
	int sent = 0, got = 0, done = 0, i, n;
	struct ibv_wc wc[16];

	for (i = 0; i < e->msgs; i++) {
		uint8_t *p = e->buf + (size_t)(MAX_MSGS + i) * MSG_BYTES;
		struct ibv_sge sg = { (uintptr_t)p, MSG_BYTES, e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sg,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		uint32_t v[2] = { MAGIC, (uint32_t)i };

		memcpy(p, v, sizeof(v));
		if (ibv_post_send(qp, &wr, &bad))
			return fail(EXIT_SETUP, "ibv_post_send failed");
		sent++;
	}
	while (done < sent || got < e->msgs) {
		if (now_ns() > e->deadline_ns) {
			fprintf(stderr, "urxe_turns: timeout: %d of %d sends completed, %d of %d received\n",
				done, sent, got, e->msgs);
			return EXIT_TIME;
		}
		n = ibv_poll_cq(e->cq, 16, wc);
		for (i = 0; i < n; i++) {
			uint32_t v[2];

			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "urxe_turns: completion %s (%s)\n",
					ibv_wc_status_str(wc[i].status),
					wc[i].opcode & IBV_WC_RECV ? "recv" : "send");
				return EXIT_CHECK;
			}
			if (!(wc[i].opcode & IBV_WC_RECV)) {
				done++;
				continue;
			}
			memcpy(v, e->buf + wc[i].wr_id * MSG_BYTES, sizeof(v));
			if (wc[i].wr_id != (uint64_t)got || v[0] != MAGIC ||
			    v[1] != (uint32_t)got || wc[i].byte_len != MSG_BYTES) {
				fprintf(stderr, "urxe_turns: message %d: wrong (slot %llu, index %u)\n",
					got, (unsigned long long)wc[i].wr_id, v[1]);
				return EXIT_CHECK;
			}
			got++;
		}
	}
	return 0;
}

/* Waits for one completion; 0, or an exit code. */
static int wait_one(struct end *e, struct ibv_wc *wc)
{
	int n;

	while (!(n = ibv_poll_cq(e->cq, 1, wc)))
		if (now_ns() > e->deadline_ns)
			return fail(EXIT_TIME, "timeout in a ping-pong");
	if (n < 0 || wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "urxe_turns: completion %s\n",
			n < 0 ? "poll failed" : ibv_wc_status_str(wc->status));
		return EXIT_CHECK;
	}
	return 0;
}

/*
 * -m times: a message in, then one of its size out; the next goes once
 * that one completed (its client sends the next after ours arrives, and
 * its ACK of ours may come after that).
 */
static int pp_traffic(struct end *e, struct ibv_qp *qp)
{
	int recvd = 0, sent = 0, done = 0, rc;
	uint32_t len = 0;
	struct ibv_wc wc;

	while (done < e->msgs) {
		rc = wait_one(e, &wc);
		if (rc)
			return rc;
		if (wc.opcode & IBV_WC_RECV) {
			recvd++;
			len = wc.byte_len;
		} else {
			done++;
		}
		if (sent == done && sent < recvd && sent < e->msgs) {
			struct ibv_sge sg = {
				(uintptr_t)(e->buf + MAX_MSGS * MSG_BYTES), len,
				e->mr->lkey };
			struct ibv_send_wr wr = {
				.sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED }, *bad;

			if (ibv_post_send(qp, &wr, &bad))
				return fail(EXIT_SETUP, "ibv_post_send failed");
			sent++;
		}
	}
	return 0;
}

/* The 16 bytes of a GID as ibv_rc_pingpong writes them: hex, in order. */
static bool pp_gid(const char *hex, uint8_t *gid)
{
	unsigned int k, v;

	for (k = 0; k < 16; k++) {
		if (sscanf(hex + 2 * k, "%2x", &v) != 1)
			return false;
		gid[k] = (uint8_t)v;
	}
	return true;
}

/*
 * ibv_rc_pingpong's server side of one round: its client's address, ours
 * back once the QP is ready, then -m times: a message in, the same size
 * out (its client sends first).
 */
static int pp_round(struct end *e, int fd)
{
	char msg[sizeof("0000:000000:000000:") + 32], hex[33];
	struct wire me = { .magic = MAGIC }, peer = { .magic = MAGIC };
	struct ibv_qp *qp = qp_new(e);
	unsigned int lid, qpn, psn;
	union ibv_gid gid;
	int rc = EXIT_SETUP, i, k;

	if (!qp || ibv_query_gid(e->ctx, 1, e->gidx, &gid) ||
	    !xfer_all(fd, msg, sizeof(msg), false))
		goto out;
	msg[sizeof(msg) - 1] = 0;
	if (sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, hex) != 4 ||
	    !pp_gid(hex, peer.gid))
		goto out;
	peer.qpn = qpn;
	peer.psn = psn;
	me.qpn = qp->qp_num;
	me.psn = (uint32_t)(now_ns() / 1000) & 0xffffff;
	if (qp_connect(e, qp, &me, &peer))
		goto out;
	k = snprintf(msg, sizeof(msg), "0000:%06x:%06x:", me.qpn, me.psn);
	for (i = 0; i < 16; i++)
		k += snprintf(msg + k, sizeof(msg) - (size_t)k, "%02x", gid.raw[i]);
	if (!xfer_all(fd, msg, sizeof(msg), true) || read(fd, msg, sizeof(msg)) <= 0)
		goto out;
	rc = pp_traffic(e, qp);
out:
	if (qp)
		ibv_destroy_qp(qp);
	return rc;
}

static int round_one(struct end *e, int fd)
{
	struct wire me = { .magic = MAGIC }, peer;
	union ibv_gid gid;
	struct ibv_qp *qp = qp_new(e);
	int rc = EXIT_SETUP;

	if (!qp || ibv_query_gid(e->ctx, 1, e->gidx, &gid))
		goto out;
	me.qpn = qp->qp_num;
	me.psn = (uint32_t)(now_ns() / 1000) & 0xffffff;
	memcpy(me.gid, gid.raw, 16);
	if (!xfer_all(fd, &me, sizeof(me), true) ||
	    !xfer_all(fd, &peer, sizeof(peer), false) || peer.magic != MAGIC)
		goto out;
	if (qp_connect(e, qp, &me, &peer) || !barrier(fd))
		goto out;
	rc = traffic(e, qp);
	if (!rc && !barrier(fd))
		rc = EXIT_SETUP;
out:
	if (qp)
		ibv_destroy_qp(qp);
	return rc;
}

/* Everything open_end made, in reverse (leak-checked under ASan). */
static void close_end(struct end *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
}

static int open_end(struct end *e, const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	size_t len = (size_t)MAX_MSGS * 2 * MSG_BYTES;
	int i;

	for (i = 0; l && l[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(l[i]), name))
			break;
	if (!l || !l[i])
		return fail(EXIT_SETUP, "no such device");
	e->ctx = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!e->ctx)
		return fail(EXIT_SETUP, "ibv_open_device failed");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 2 * MAX_MSGS, NULL, NULL, 0);
	e->buf = calloc(1, len);
	if (!e->pd || !e->cq || !e->buf)
		return fail(EXIT_SETUP, "PD, CQ or memory");
	e->mr = ibv_reg_mr(e->pd, e->buf, len, IBV_ACCESS_LOCAL_WRITE);
	return e->mr ? 0 : fail(EXIT_SETUP, "ibv_reg_mr failed");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *port = "18517", *host;
	struct end e = { .gidx = 0, .msgs = 20 };
	int rounds = 1, secs = 60, lfd = -1, fd, r, c, rc;
	bool pp = false;

	while ((c = getopt(argc, argv, "d:g:p:n:m:t:P")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': e.gidx = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'n': rounds = atoi(optarg); break;
		case 'm': e.msgs = atoi(optarg); break;
		case 't': secs = atoi(optarg); break;
		case 'P': pp = true; break;
		default: return EXIT_SETUP;
		}
	}
	host = optind < argc ? argv[optind] : NULL;
	if (rounds < 1 || e.msgs < 1 || e.msgs > MAX_MSGS || secs < 1)
		return fail(EXIT_SETUP, "bad -n, -m or -t");
	e.deadline_ns = now_ns() + (uint64_t)secs * 1000000000ull;
	rc = open_end(&e, dev);
	if (rc)
		return rc;
	if (!host && (lfd = tcp_listen(port)) < 0)
		return fail(EXIT_SETUP, "cannot listen");
	for (r = 0; r < rounds; r++) {
		fd = host ? tcp_connect(host, port, e.deadline_ns) : accept(lfd, NULL, NULL);
		if (fd < 0)
			return fail(host ? EXIT_TIME : EXIT_SETUP, "no TCP connection");
		/*
		 * No more connections: a connector's next one must wait for
		 * the next listener, not complete against this one's backlog.
		 */
		if (!host && r == rounds - 1)
			close(lfd);
		rc = pp && !host ? pp_round(&e, fd) : round_one(&e, fd);
		close(fd);
		if (rc) {
			printf("round %d FAIL (%d)\nFAIL\n", r, rc);
			close_end(&e);
			return rc;
		}
		printf("round %d ok\n", r);
		fflush(stdout);
	}
	close_end(&e);
	printf("PASS\n");
	return 0;
}
