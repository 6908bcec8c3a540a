// SPDX-License-Identifier: BSD-2-Clause
/*
 * common.h: the few helpers every example shares, so that each lesson
 * shows only what is new in it.
 *
 *   die(), check()     report which call failed, with errno, and exit 1
 *   parse_options()    -d DEV, -g GIDX, -p PORT, -G GROUP and one
 *                      positional argument (the server's address)
 *   open_device()      the device named by -d, or the first one
 *   wait_completion()  polls a completion queue, at most 10 seconds
 *   wc_status_name()   "IBV_WC_SUCCESS" for IBV_WC_SUCCESS
 *   rc_connect()       takes an RC QP through INIT, RTR and RTS
 *
 * Everything is `static inline`: a header and one .c file per example is
 * all a student compiles (`cc -std=c11 02_first_write.c -libverbs`).
 * Only the public libibverbs API is used, so the examples run the same on
 * urxe, on the kernel's rxe (Soft-RoCE) and on RDMA hardware.
 */
#ifndef URXE_EXAMPLES_COMMON_H
#define URXE_EXAMPLES_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* program_invocation_short_name */
#endif
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every rxe device, and most RoCE NICs, has a single port: number 1. */
#define PORT_NUM 1
/* How long wait_completion() waits before giving up. */
#define WAIT_SECONDS 10

/* "02_first_write: ibv_reg_mr failed: Cannot allocate memory", exit 1. */
static inline _Noreturn void die(const char *what)
{
	fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name,
		what, strerror(errno));
	exit(1);
}

/*
 * Calls that return an int (ibv_modify_qp, ibv_post_send...) return 0 or
 * an errno value; a few providers return -1 and set errno instead.
 */
static inline void check(int rc, const char *what)
{
	if (rc > 0)
		errno = rc;
	if (rc)
		die(what);
}

struct options {
	const char *dev;	/* -d: device name; NULL: the first device */
	int gidx;		/* -g: GID table index (default 0) */
	int port;		/* -p: TCP or RDMA CM port (default 18515) */
	const char *group;	/* -G: a multicast group (06 only) */
	const char *server;	/* positional: connect to it (client) */
};

/* "usage: 03_send_recv [-d DEV] [-g GIDX] [-p PORT] [SERVER]", exit 2. */
static inline _Noreturn void usage(const char *accepted)
{
	fprintf(stderr, "usage: %s", program_invocation_short_name);
	for (const char *c = accepted; *c; c++) {
		const char *arg = *c == 'd' ? "DEV" : *c == 'g' ? "GIDX" :
				  *c == 'p' ? "PORT" : "GROUP";

		if (*c != ':')
			fprintf(stderr, " [-%c %s]", *c, arg);
	}
	/* The programs with a port are client/server ones. */
	fprintf(stderr, "%s\n", strchr(accepted, 'p') ? " [SERVER]" : "");
	exit(2);
}

/* Parses the options @accepted ("d:g:p:") lists; exits 2 on misuse. */
static inline struct options parse_options(int argc, char **argv,
					   const char *accepted)
{
	struct options o = { .port = 18515, .group = "239.255.0.1" };
	int c;

	while ((c = getopt(argc, argv, accepted)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'g': o.gidx = atoi(optarg); break;
		case 'p': o.port = atoi(optarg); break;
		case 'G': o.group = optarg; break;
		default:
			usage(accepted);
		}
	}
	if (optind < argc)
		o.server = argv[optind];
	return o;
}

/*
 * ibv_get_device_list() returns every RDMA device the library finds; the
 * list only names them.  ibv_open_device() gives a context: the handle
 * through which every other object (PD, CQ, QP...) is made.  The list can
 * be freed once the device is open.
 */
static inline struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i]) {
		ibv_free_device_list(list);
		fprintf(stderr, "%s: no RDMA device %s\n",
			program_invocation_short_name, name ? name : "at all");
		exit(1);
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	return ctx;
}

/*
 * Takes one work completion from @cq.  ibv_poll_cq() never blocks: it
 * returns how many completions it copied (0 while none is ready).  A
 * real program would sleep on a completion channel when idle; polling
 * keeps the examples short.  Exits after WAIT_SECONDS without one.
 */
static inline void wait_completion(struct ibv_cq *cq, struct ibv_wc *wc)
{
	time_t deadline = time(NULL) + WAIT_SECONDS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (time(NULL) > deadline) {
			fprintf(stderr, "%s: no completion within %d s\n",
				program_invocation_short_name, WAIT_SECONDS);
			exit(1);
		}
	}
	if (n < 0) {
		errno = EIO;
		die("ibv_poll_cq");
	}
}

/*
 * The name of a completion status as the header spells it
 * ("IBV_WC_SUCCESS"); ibv_wc_status_str() gives prose ("success").
 */
static inline const char *wc_status_name(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
	case IBV_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
	case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
	case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
	case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
	case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
	case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
	default: return ibv_wc_status_str(s);
	}
}

/* What one side tells the other so that the two QPs can be connected. */
struct endpoint {
	uint32_t qpn;		/* queue pair number */
	uint32_t psn;		/* the first packet sequence number it sends */
	union ibv_gid gid;	/* its address: on RoCE v2 an IP address */
};

/*
 * Takes RC QP @qp from RESET to RTS, connected to @peer; @my_psn is the
 * PSN its first request will carry (and @peer->psn the one it expects
 * first).  02_first_write.c does the same steps one by one, explained.
 * @rnr_retry is how often to resend after an RNR NAK (7: forever).
 */
static inline void rc_connect(struct ibv_qp *qp, int gidx, uint32_t my_psn,
			      const struct endpoint *peer, int rnr_retry)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = PORT_NUM, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	check(ibv_query_port(qp->context, PORT_NUM, &pa), "ibv_query_port");
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "ibv_modify_qp(INIT)");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;		/* 0.64 ms: see 05_rnr.c */
	a.ah_attr.is_global = 1;	/* RoCE: every packet has a GRH */
	a.ah_attr.port_num = PORT_NUM;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER), "ibv_modify_qp(RTR)");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;			/* 4.096 us * 2^14 = 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = (uint8_t)rnr_retry;
	a.max_rd_atomic = 1;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
	      "ibv_modify_qp(RTS)");
}

/* This side's endpoint: @qp's number, @psn and the GID at @gidx. */
static inline struct endpoint local_endpoint(struct ibv_qp *qp, int gidx,
					     uint32_t psn)
{
	struct endpoint e = { .qpn = qp->qp_num, .psn = psn };

	check(ibv_query_gid(qp->context, PORT_NUM, gidx, &e.gid),
	      "ibv_query_gid");
	return e;
}

#endif
