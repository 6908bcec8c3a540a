// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_stress: several threads posting and polling on several RC QPs of
 * one device instance at once, half of the receivers waiting for
 * completions with req_notify_cq/ibv_get_cq_event, while the engine
 * thread runs too.  Every message carries its sequence number and a
 * pattern, and is checked.  Run under ThreadSanitizer (URXE_TSAN build) or
 * helgrind, it must be clean; run anywhere, it must finish on time.
 *
 * usage: urxe_stress [-p pairs] [-n messages] [-s size] [-t seconds]
 *                    [-T local ACK timeout exponent, default 14]
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 8
#define DEPTH 32

struct side {
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct pair {
	int id;
	struct side s;		/* sender */
	struct side r;		/* receiver */
	bool events;		/* the receiver sleeps in ibv_get_cq_event */
	pthread_t tx, rx;
	int ok;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int nmsg = 2000, size = 3000;
static int ack_timeout = 14;	/* -T: slow (sanitized) builds want more */
static atomic_int failed;

static void die(const char *what)
{
	fprintf(stderr, "urxe_stress: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void side_init(struct side *sd, bool channel)
{
	sd->buf = calloc(DEPTH, (size_t)size);
	if (!sd->buf)
		die("calloc");
	sd->mr = ibv_reg_mr(pd, sd->buf, (size_t)DEPTH * size,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!sd->mr)
		die("ibv_reg_mr");
	if (channel) {
		sd->ch = ibv_create_comp_channel(ctx);
		if (!sd->ch)
			die("ibv_create_comp_channel");
	}
	sd->cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, sd->ch, 0);
	if (!sd->cq)
		die("ibv_create_cq");
	struct ibv_qp_init_attr ia = {
		.send_cq = sd->cq, .recv_cq = sd->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	sd->qp = ibv_create_qp(pd, &ia);
	if (!sd->qp)
		die("ibv_create_qp");
}

static void connect_qp(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1000;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1000;
	a.timeout = (uint8_t)ack_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

static void post_recv(struct side *sd, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(sd->buf + (size_t)slot * size),
		.length = (uint32_t)size, .lkey = sd->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(sd->qp, &wr, &bad))
		die("ibv_post_recv");
}

static uint8_t pattern(int pair, int seq, int i)
{
	return (uint8_t)(pair * 31 + seq * 7 + i);
}

/* Waits for completions: busy polling, or through the channel. */
static int get_wc(struct side *sd, bool events, struct ibv_wc *wc, int n)
{
	int got;

	for (;;) {
		got = ibv_poll_cq(sd->cq, n, wc);
		if (got)
			return got;
		if (!events)
			continue;
		if (ibv_req_notify_cq(sd->cq, 0))
			die("ibv_req_notify_cq");
		/* A completion may have come before arming: look once more. */
		got = ibv_poll_cq(sd->cq, n, wc);
		if (got)
			return got;
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_get_cq_event(sd->ch, &ev_cq, &ev_ctx))
			die("ibv_get_cq_event");
		if (ev_cq != sd->cq) {
			fprintf(stderr, "event for the wrong CQ\n");
			atomic_fetch_add(&failed, 1);
		}
		ibv_ack_cq_events(ev_cq, 1);
	}
}

static void *rx_main(void *arg)
{
	struct pair *p = arg;
	struct ibv_wc wc[8];
	int seq = 0, i, k;

	while (seq < nmsg) {
		int n = get_wc(&p->r, p->events, wc, 8);

		for (k = 0; k < n; k++) {
			uint8_t *m = p->r.buf + wc[k].wr_id * (uint64_t)size;
			uint32_t got_seq;

			if (wc[k].status != IBV_WC_SUCCESS ||
			    wc[k].opcode != IBV_WC_RECV ||
			    wc[k].byte_len != (uint32_t)size) {
				fprintf(stderr, "pair %d: receive status %s\n",
					p->id, ibv_wc_status_str(wc[k].status));
				atomic_fetch_add(&failed, 1);
				return NULL;
			}
			memcpy(&got_seq, m, 4);
			for (i = 4; i < size; i++)
				if (m[i] != pattern(p->id, seq, i))
					break;
			if (got_seq != (uint32_t)seq || i != size) {
				fprintf(stderr, "pair %d: message %d bad (seq %u, byte %d)\n",
					p->id, seq, got_seq, i);
				atomic_fetch_add(&failed, 1);
				return NULL;
			}
			post_recv(&p->r, (int)wc[k].wr_id);
			seq++;
		}
	}
	p->ok = 1;
	return NULL;
}

static void *tx_main(void *arg)
{
	struct pair *p = arg;
	int seq = 0, inflight = 0, i, k;
	struct ibv_wc wc[8];

	while (seq < nmsg || inflight) {
		while (seq < nmsg && inflight < DEPTH) {
			int slot = seq % DEPTH;
			uint8_t *m = p->s.buf + (size_t)slot * size;
			uint32_t s32 = (uint32_t)seq;
			struct ibv_sge sge = { .addr = (uintptr_t)m,
					       .length = (uint32_t)size,
					       .lkey = p->s.mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = (uint64_t)seq, .sg_list = &sge,
				.num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			}, *bad;

			memcpy(m, &s32, 4);
			for (i = 4; i < size; i++)
				m[i] = pattern(p->id, seq, i);
			if (ibv_post_send(p->s.qp, &wr, &bad))
				die("ibv_post_send");
			seq++;
			inflight++;
		}
		int n = get_wc(&p->s, false, wc, 8);

		for (k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "pair %d: send status %s\n", p->id,
					ibv_wc_status_str(wc[k].status));
				atomic_fetch_add(&failed, 1);
				return NULL;
			}
			inflight--;
		}
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	int secs = *(int *)arg;

	sleep((unsigned int)secs);
	fprintf(stderr, "urxe_stress: not done after %d s\n", secs);
	_exit(2);
	return NULL;
}

int main(int argc, char **argv)
{
	struct pair pairs[MAX_PAIRS];
	struct ibv_device **list;
	int npairs = 4, limit = 120, i, c, j;
	pthread_t wd;

	while ((c = getopt(argc, argv, "p:n:s:t:T:")) != -1) {
		switch (c) {
		case 'p': npairs = atoi(optarg); break;
		case 'n': nmsg = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 't': limit = atoi(optarg); break;
		case 'T': ack_timeout = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: urxe_stress [-p pairs] [-n messages] [-s size] [-t seconds] [-T timeout]\n");
			return 2;
		}
	}
	if (npairs < 1 || npairs > MAX_PAIRS || size < 8 || nmsg < 1)
		return 2;
	pthread_create(&wd, NULL, watchdog, &limit);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_gid(ctx, 1, 0, &gid))
		die("pd/gid");
	for (i = 0; i < npairs; i++) {
		struct pair *p = &pairs[i];

		memset(p, 0, sizeof(*p));
		p->id = i;
		p->events = i % 2;
		side_init(&p->s, false);
		side_init(&p->r, p->events);
		connect_qp(p->s.qp, p->r.qp->qp_num);
		connect_qp(p->r.qp, p->s.qp->qp_num);
		for (j = 0; j < DEPTH; j++)
			post_recv(&p->r, j);
	}
	for (i = 0; i < npairs; i++) {
		pthread_create(&pairs[i].rx, NULL, rx_main, &pairs[i]);
		pthread_create(&pairs[i].tx, NULL, tx_main, &pairs[i]);
	}
	for (i = 0; i < npairs; i++) {
		pthread_join(pairs[i].tx, NULL);
		pthread_join(pairs[i].rx, NULL);
	}
	for (i = 0; i < npairs; i++) {
		struct side *sides[2] = { &pairs[i].s, &pairs[i].r };

		for (j = 0; j < 2; j++) {
			ibv_destroy_qp(sides[j]->qp);
			ibv_destroy_cq(sides[j]->cq);
			if (sides[j]->ch)
				ibv_destroy_comp_channel(sides[j]->ch);
			ibv_dereg_mr(sides[j]->mr);
			free(sides[j]->buf);
		}
		if (!pairs[i].ok)
			atomic_fetch_add(&failed, 1);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("urxe_stress: %d pairs x %d messages of %d bytes: %s\n", npairs,
	       nmsg, size, atomic_load(&failed) ? "FAILED" : "ok");
	return atomic_load(&failed) ? 1 : 0;
}
