// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_fanin: several UD senders at once to one receiver, for the test of
 * flow control between instances on one host (t_uc_ud drives it).
 *
 *   urxe_fanin recv [-d dev] [-g gid_index] [-n total] [-s size] [-t s]
 *   urxe_fanin send [-d dev] [-g gid_index] -q qpn -G gid -i id
 *                   [-n count] [-s size] [-t s] [-r rounds]
 *
 * recv: one UD QP with @total receives of @size bytes (plus the GRH)
 * posted before anything is sent; prints "qpn 0x... gid ADDR" and waits
 * until @total messages have arrived.  Each message carries its sender's
 * id and its index: every one must arrive once, whole, with no error.
 * send: @count messages of @size bytes to QPN @qpn at @gid, as fast as the
 * send queue takes them (up to 128 outstanding, none paced), each
 * completed successfully.  With -r, in @rounds device instances one after
 * another: each opens the device, sends its share at once, and closes it,
 * so the next takes over the slot (address and source ports) the last one
 * sent from an instant before.
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout
 * (recv: messages lost).  Prints PASS or FAIL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QKEY 0x46414e49u		/* "FANI" */
#define GRH_LEN 40
#define MAX_SENDERS 64
#define MAX_TOTAL 16000
#define SQ_DEPTH 128

enum { EXIT_CHECK = 1, EXIT_SETUP = 2, EXIT_TIME = 3 };

struct opts {
	const char *dev;
	int gid_index;
	unsigned int qpn, id, n, size, secs, rounds;
	union ibv_gid dgid;
	bool have_qpn, have_gid;
};

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: urxe_fanin recv [-d dev] [-g idx] [-n total] [-s size] [-t s]\n"
		"       urxe_fanin send [-d dev] [-g idx] -q qpn -G gid -i id [-n count] [-s size] [-t s] [-r rounds]\n");
	return EXIT_SETUP;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		return NULL;
	for (i = 0; list[i]; i++) {
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	return ctx;
}

/* A UD QP in RTS, queues of @sq / @rq WRs, one CQ, @buf_len registered. */
static int ud_open(struct ud *u, const struct opts *o, unsigned int sq,
		   unsigned int rq, size_t buf_len)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };

	u->ctx = open_dev(o->dev);
	if (!u->ctx) {
		fprintf(stderr, "no device %s\n", o->dev ? o->dev : "");
		return -1;
	}
	u->pd = ibv_alloc_pd(u->ctx);
	u->cq = u->pd ? ibv_create_cq(u->ctx, (int)(sq + rq), NULL, NULL, 0)
		      : NULL;
	u->buf_len = buf_len;
	u->buf = calloc(1, buf_len);
	u->mr = u->cq && u->buf ? ibv_reg_mr(u->pd, u->buf, buf_len,
					     IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!u->mr) {
		perror("pd/cq/mr");
		return -1;
	}
	ia.send_cq = ia.recv_cq = u->cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	u->qp = ibv_create_qp(u->pd, &ia);
	if (!u->qp) {
		perror("ibv_create_qp");
		return -1;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		goto bad;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE))
		goto bad;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto bad;
	return 0;
bad:
	perror("ibv_modify_qp");
	return -1;
}

static void ud_close(struct ud *u)
{
	if (u->qp)
		ibv_destroy_qp(u->qp);
	if (u->mr)
		ibv_dereg_mr(u->mr);
	if (u->cq)
		ibv_destroy_cq(u->cq);
	if (u->pd)
		ibv_dealloc_pd(u->pd);
	if (u->ctx)
		ibv_close_device(u->ctx);
	free(u->buf);
}

static int do_recv(const struct opts *o)
{
	size_t slot = GRH_LEN + o->size;
	struct ud u = { 0 };
	union ibv_gid gid;
	char text[INET6_ADDRSTRLEN];
	uint8_t *seen = NULL;
	unsigned int got = 0, i, bad = 0;
	double end;
	int rc = EXIT_SETUP;

	if (ud_open(&u, o, 1, o->n, slot * o->n) ||
	    ibv_query_gid(u.ctx, 1, o->gid_index, &gid))
		goto out;
	seen = calloc(MAX_SENDERS, o->n);
	if (!seen)
		goto out;
	for (i = 0; i < o->n; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(u.buf + i * slot),
			.length = (uint32_t)slot,
			.lkey = u.mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *badwr;

		if (ibv_post_recv(u.qp, &wr, &badwr)) {
			perror("ibv_post_recv");
			goto out;
		}
	}
	inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
	printf("qpn 0x%06x gid %s\n", u.qp->qp_num, text);
	fflush(stdout);
	end = now_s() + o->secs;
	rc = EXIT_TIME;
	while (got < o->n && now_s() < end) {
		struct ibv_wc wc[32];
		int k, n = ibv_poll_cq(u.cq, 32, wc);

		if (n < 0) {
			rc = EXIT_CHECK;
			goto out;
		}
		for (k = 0; k < n; k++) {
			const uint8_t *m = u.buf + wc[k].wr_id * slot + GRH_LEN;
			uint32_t id, seq;

			got++;
			memcpy(&id, m, 4);
			memcpy(&seq, m + 4, 4);
			if (wc[k].status != IBV_WC_SUCCESS ||
			    wc[k].byte_len != GRH_LEN + o->size ||
			    id >= MAX_SENDERS || seq >= o->n ||
			    seen[(size_t)id * o->n + seq]++) {
				if (bad++ < 5)
					fprintf(stderr, "bad message: status %d len %u id %u seq %u\n",
						wc[k].status, wc[k].byte_len,
						id, seq);
			}
		}
	}
	printf("received %u of %u, %u bad\n", got, o->n, bad);
	if (got == o->n)
		rc = bad ? EXIT_CHECK : 0;
out:
	free(seen);
	ud_close(&u);
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc;
}

/* Messages @first .. @last - 1 from one device instance; *@done counts. */
static int send_round(const struct opts *o, unsigned int first,
		      unsigned int last, double end, unsigned int *done_all)
{
	struct ud u = { 0 };
	struct ibv_ah *ah = NULL;
	struct ibv_ah_attr aa = { 0 };
	unsigned int posted = first, done = first, out = 0;
	int rc = EXIT_SETUP;

	if (ud_open(&u, o, SQ_DEPTH, 1, (size_t)o->size * SQ_DEPTH))
		goto out;
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = o->dgid;
	aa.grh.sgid_index = (uint8_t)o->gid_index;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(u.pd, &aa);
	if (!ah) {
		perror("ibv_create_ah");
		goto out;
	}
	rc = EXIT_TIME;
	while (done < last && now_s() < end) {
		struct ibv_wc wc[32];
		int k, n;

		while (posted < last && out < SQ_DEPTH) {
			uint8_t *m = u.buf + (size_t)(posted % SQ_DEPTH) * o->size;
			struct ibv_sge sge = { .addr = (uintptr_t)m,
					       .length = o->size,
					       .lkey = u.mr->lkey };
			struct ibv_send_wr wr = { 0 }, *badwr;

			memcpy(m, &o->id, 4);
			memcpy(m + 4, &posted, 4);
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = o->qpn;
			wr.wr.ud.remote_qkey = QKEY;
			if (ibv_post_send(u.qp, &wr, &badwr)) {
				perror("ibv_post_send");
				rc = EXIT_CHECK;
				goto out;
			}
			posted++;
			out++;
		}
		n = ibv_poll_cq(u.cq, 32, wc);
		for (k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "send %llu: status %s\n",
					(unsigned long long)wc[k].wr_id,
					ibv_wc_status_str(wc[k].status));
				rc = EXIT_CHECK;
				goto out;
			}
			done++;
			out--;
		}
	}
	if (done == last)
		rc = 0;
out:
	if (ah)
		ibv_destroy_ah(ah);
	ud_close(&u);
	*done_all += done - first;
	return rc;
}

static int do_send(const struct opts *o)
{
	double end = now_s() + o->secs;
	unsigned int r, done = 0;
	int rc = 0;

	for (r = 0; r < o->rounds && !rc; r++)
		rc = send_round(o, (unsigned int)((uint64_t)o->n * r / o->rounds),
				(unsigned int)((uint64_t)o->n * (r + 1) / o->rounds),
				end, &done);
	printf("sent %u of %u in %u rounds\n%s\n", done, o->n, r,
	       rc ? "FAIL" : "PASS");
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { .n = 1000, .size = 4096, .secs = 30, .rounds = 1 };
	bool recv;
	int c;

	if (argc < 2)
		return usage();
	recv = !strcmp(argv[1], "recv");
	if (!recv && strcmp(argv[1], "send"))
		return usage();
	optind = 2;
	while ((c = getopt(argc, argv, "d:g:n:s:t:q:G:i:r:")) != -1) {
		switch (c) {
		case 'd':
			o.dev = optarg;
			break;
		case 'g':
			o.gid_index = atoi(optarg);
			break;
		case 'n':
			o.n = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.size = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.secs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o.qpn = (unsigned int)strtoul(optarg, NULL, 0);
			o.have_qpn = true;
			break;
		case 'G':
			o.have_gid = inet_pton(AF_INET6, optarg, o.dgid.raw) == 1;
			if (!o.have_gid)
				return usage();
			break;
		case 'i':
			o.id = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o.rounds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			return usage();
		}
	}
	if (o.size < 8 || o.size > 4096 || !o.n || o.n > MAX_TOTAL ||
	    o.id >= MAX_SENDERS || !o.rounds || o.rounds > o.n ||
	    (!recv && (!o.have_qpn || !o.have_gid)))
		return usage();
	return recv ? do_recv(&o) : do_send(&o);
}
