// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_xrc_share: processes sharing one XRC domain through a file, for the
 * t_xrc integration test.  Public verbs only; each role bounds its time.
 * The roles meet through small files in a directory (written whole, by
 * rename), in this order:
 *
 *   host   DIR DOMAIN_FILE
 *          opens the domain, creates the TGT QP, writes DIR/host
 *          ("QPN GID"); reads DIR/sender, moves the TGT QP to RTR toward
 *          it, writes DIR/host.rtr; then sleeps until killed (its engine
 *          keeps serving the QP).
 *   opener DIR DOMAIN_FILE ID COUNT SIZE
 *          opens the domain and the host's TGT QP (ibv_open_qp), makes its
 *          own XRC SRQ, CQ, PD and buffer, posts COUNT receives, writes
 *          DIR/opener.ID ("SRQN"); checks that COUNT messages arrive on its
 *          CQ, each from the TGT QP, SIZE bytes, byte-exact (the sender's
 *          pattern for this opener), writes DIR/opener.ID.done; then waits
 *          up to 5 s for IBV_EVENT_QP_FATAL on the opened QP, prints
 *          "fatal: <CLOCK_REALTIME ns>", cleans up and exits 0.
 *   sender DIR N COUNT SIZE
 *          makes an INI QP, writes DIR/sender ("QPN GID"), waits for
 *          DIR/host.rtr and DIR/opener.0 .. N-1, connects, and sends
 *          N x COUNT messages of SIZE bytes, message i to opener i mod N's
 *          SRQ; every send completion must be a success.
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 30		/* any one wait, at most */
#define PSN 0x123456

static const char *role = "?";

static void die(int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(rc);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[4096], tmp[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		die(2, "cannot write %s: %s", path, strerror(errno));
}

/* Waits for DIR/NAME and returns its first line (static storage). */
static const char *get_file(const char *dir, const char *name)
{
	static char line[512];
	uint64_t end = now_ns(CLOCK_MONOTONIC) + WAIT_S * 1000000000ull;
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (!(f = fopen(path, "r"))) {
		if (now_ns(CLOCK_MONOTONIC) > end)
			die(3, "no %s after %d s", path, WAIT_S);
		usleep(10000);
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return line;
}

static void gid_str(const union ibv_gid *g, char *s)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(s + 2 * i, "%02x", g->raw[i]);
}

static void gid_parse(const char *s, union ibv_gid *g)
{
	unsigned int b;
	int i;

	for (i = 0; i < 16; i++) {
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			die(2, "bad GID '%s'", s);
		g->raw[i] = (uint8_t)b;
	}
}

static struct ibv_context *open_rxe0(union ibv_gid *gid)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		die(2, "cannot open rxe0");
	if (ibv_query_gid(ctx, 1, 0, gid))
		die(2, "ibv_query_gid: %s", strerror(errno));
	return ctx;
}

static struct ibv_xrcd *open_domain(struct ibv_context *ctx, const char *file,
				    int *fd)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x;

	*fd = open(file, O_RDONLY | O_CREAT, 0600);
	if (*fd < 0)
		die(2, "open %s: %s", file, strerror(errno));
	a.fd = *fd;
	x = ibv_open_xrcd(ctx, &a);
	if (!x)
		die(2, "ibv_open_xrcd: %s", strerror(errno));
	return x;
}

static void to_rtr(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
		   bool rts)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die(2, "to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = PSN;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die(2, "to RTR: %s", strerror(errno));
	if (!rts)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = PSN;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die(2, "to RTS: %s", strerror(errno));
}

/* Byte j of message i (to opener k): both ends compute it. */
static uint8_t pattern(unsigned int k, unsigned int i, unsigned int j)
{
	return (uint8_t)(k * 131 + i * 29 + j * 7 + (j >> 8));
}

static int run_host(const char *dir, const char *file)
{
	struct ibv_qp_init_attr_ex qa;
	union ibv_gid gid, sgid;
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	struct ibv_qp *qp;
	char buf[128], g[33];
	unsigned int sqpn;
	int fd;

	ctx = open_rxe0(&gid);
	xrcd = open_domain(ctx, file, &fd);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = xrcd;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (!qp)
		die(2, "ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
	gid_str(&gid, g);
	snprintf(buf, sizeof(buf), "%u %s\n", qp->qp_num, g);
	put_file(dir, "host", buf);
	if (sscanf(get_file(dir, "sender"), "%u %32s", &sqpn, g) != 2)
		die(2, "bad sender file");
	gid_parse(g, &sgid);
	to_rtr(qp, sqpn, &sgid, false);
	put_file(dir, "host.rtr", "1\n");
	printf("host: TGT QP %u ready\n", qp->qp_num);
	fflush(stdout);
	sleep(WAIT_S * 2);	/* the test kills us long before */
	return 0;
}

static int run_opener(const char *dir, const char *file, unsigned int id,
		      unsigned int count, unsigned int size)
{
	struct ibv_qp_open_attr oa;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_async_event ev;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem;
	unsigned int qpn, i, j, got = 0, bad = 0;
	uint32_t srqn;
	char buf[64], name[64];
	uint64_t end;
	int fd;

	ctx = open_rxe0(&gid);
	xrcd = open_domain(ctx, file, &fd);
	if (sscanf(get_file(dir, "host"), "%u", &qpn) != 1)
		die(2, "bad host file");
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = qpn;
	oa.xrcd = xrcd;
	oa.qp_type = IBV_QPT_XRC_RECV;
	qp = ibv_open_qp(ctx, &oa);
	if (!qp)
		die(2, "ibv_open_qp(%u): %s", qpn, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, (int)count + 1, NULL, NULL, 0);
	mem = calloc(count, size);
	if (!pd || !cq || !mem)
		die(2, "PD/CQ/memory: %s", strerror(errno));
	mr = ibv_reg_mr(pd, mem, (size_t)count * size, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die(2, "ibv_reg_mr: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = count;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = cq;
	sa.pd = pd;
	srq = ibv_create_srq_ex(ctx, &sa);
	if (!srq || ibv_get_srq_num(srq, &srqn))
		die(2, "XRC SRQ: %s", strerror(errno));
	for (i = 0; i < count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(mem + (size_t)i * size),
			.length = size, .lkey = mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *badwr;

		if (ibv_post_srq_recv(srq, &wr, &badwr))
			die(2, "ibv_post_srq_recv: %s", strerror(errno));
	}
	snprintf(buf, sizeof(buf), "%u\n", srqn);
	snprintf(name, sizeof(name), "opener.%u", id);
	put_file(dir, name, buf);

	end = now_ns(CLOCK_MONOTONIC) + WAIT_S * 1000000000ull;
	while (got < count) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die(1, "ibv_poll_cq: %d", n);
		if (!n) {
			if (now_ns(CLOCK_MONOTONIC) > end)
				die(3, "%u of %u messages after %d s", got,
				    count, WAIT_S);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.qp_num != qpn || wc.byte_len != size ||
		    wc.wr_id != got) {
			fprintf(stderr, "opener %u: completion %u: status %s opcode %d qp %u (TGT %u) len %u wr_id %llu\n",
				id, got, ibv_wc_status_str(wc.status),
				wc.opcode, wc.qp_num, qpn, wc.byte_len,
				(unsigned long long)wc.wr_id);
			bad++;
		}
		for (j = 0; j < size; j++)
			if (mem[(size_t)got * size + j] != pattern(id, got, j))
				break;
		if (j < size) {
			fprintf(stderr, "opener %u: message %u differs at byte %u\n",
				id, got, j);
			bad++;
		}
		got++;
	}
	printf("opener %u: %u messages of %u bytes from TGT QP %u into SRQ %u, %u bad\n",
	       id, got, size, qpn, srqn, bad);
	fflush(stdout);
	snprintf(name, sizeof(name), "opener.%u.done", id);
	put_file(dir, name, "1\n");

	/* The host dies next: the opened QP must report it. */
	alarm(WAIT_S);		/* the wait below blocks */
	for (;;) {
		if (ibv_get_async_event(ctx, &ev))
			die(1, "ibv_get_async_event: %s", strerror(errno));
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp) {
			ibv_ack_async_event(&ev);
			break;
		}
		fprintf(stderr, "opener %u: async event %s\n", id,
			ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	printf("fatal: %llu\n", (unsigned long long)now_ns(CLOCK_REALTIME));
	fflush(stdout);
	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) || ibv_dereg_mr(mr) ||
	    ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_xrcd(xrcd))
		die(1, "clean-up: %s", strerror(errno));
	ibv_close_device(ctx);
	close(fd);
	free(mem);
	return bad ? 1 : 0;
}

static int run_sender(const char *dir, unsigned int n, unsigned int count,
		      unsigned int size)
{
	struct ibv_qp_init_attr_ex qa;
	union ibv_gid gid, hgid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint32_t *srqn;
	uint8_t *mem;
	unsigned int hqpn, i, j, done = 0, bad = 0, total = n * count;
	char buf[128], g[33], name[64];
	uint64_t end;

	ctx = open_rxe0(&gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	mem = malloc((size_t)total * size);
	srqn = calloc(n, sizeof(*srqn));
	if (!pd || !cq || !mem || !srqn)
		die(2, "PD/CQ/memory: %s", strerror(errno));
	mr = ibv_reg_mr(pd, mem, (size_t)total * size, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die(2, "ibv_reg_mr: %s", strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = pd;
	qa.send_cq = cq;
	qa.cap.max_send_wr = 32;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (!qp)
		die(2, "ibv_create_qp_ex(XRC_SEND): %s", strerror(errno));
	gid_str(&gid, g);
	snprintf(buf, sizeof(buf), "%u %s\n", qp->qp_num, g);
	put_file(dir, "sender", buf);
	if (sscanf(get_file(dir, "host"), "%u %32s", &hqpn, g) != 2)
		die(2, "bad host file");
	gid_parse(g, &hgid);
	get_file(dir, "host.rtr");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "opener.%u", i);
		if (sscanf(get_file(dir, name), "%u", &srqn[i]) != 1)
			die(2, "bad %s file", name);
	}
	to_rtr(qp, hqpn, &hgid, true);

	/* Message i goes to opener i % n as that opener's message i / n. */
	for (i = 0; i < total; i++)
		for (j = 0; j < size; j++)
			mem[(size_t)i * size + j] = pattern(i % n, i / n, j);
	end = now_ns(CLOCK_MONOTONIC) + WAIT_S * 1000000000ull;
	for (i = 0; i < total || done < total;) {
		struct ibv_wc wc;
		int k;

		if (i < total && i - done < 16) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)(mem + (size_t)i * size),
				.length = size, .lkey = mr->lkey,
			};
			struct ibv_send_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			}, *badwr;

			wr.qp_type.xrc.remote_srqn = srqn[i % n];
			if (ibv_post_send(qp, &wr, &badwr))
				die(1, "ibv_post_send %u: %s", i, strerror(errno));
			i++;
			continue;
		}
		k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0)
			die(1, "ibv_poll_cq: %d", k);
		if (!k) {
			if (now_ns(CLOCK_MONOTONIC) > end)
				die(3, "%u of %u sends complete after %d s",
				    done, total, WAIT_S);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != done) {
			fprintf(stderr, "sender: send %u: %s (wr_id %llu)\n",
				done, ibv_wc_status_str(wc.status),
				(unsigned long long)wc.wr_id);
			bad++;
		}
		done++;
	}
	printf("sender: %u messages of %u bytes to %u SRQs through TGT QP %u, %u failed\n",
	       total, size, n, hqpn, bad);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(mem);
	free(srqn);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2)
		role = argv[1];
	if (argc == 4 && !strcmp(argv[1], "host"))
		return run_host(argv[2], argv[3]);
	if (argc == 7 && !strcmp(argv[1], "opener"))
		return run_opener(argv[2], argv[3], (unsigned int)atoi(argv[4]),
				  (unsigned int)atoi(argv[5]),
				  (unsigned int)atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "sender"))
		return run_sender(argv[2], (unsigned int)atoi(argv[3]),
				  (unsigned int)atoi(argv[4]),
				  (unsigned int)atoi(argv[5]));
	fprintf(stderr,
		"usage: urxe_xrc_share host DIR DOMAIN_FILE\n"
		"       urxe_xrc_share opener DIR DOMAIN_FILE ID COUNT SIZE\n"
		"       urxe_xrc_share sender DIR N COUNT SIZE\n");
	return 2;
}
