// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe-qp-mem: host memory per idle RC QP.
 *
 * For each queue depth asked for (-w 1,64: max_send_wr = max_recv_wr =
 * depth), a fresh child process opens the device, creates a PD, one CQ and
 * a first connected pair of RC QPs (so that what a device instance sets up
 * once -- sockets, engine thread, runtime files -- is already there), then
 * measures, creates N more pairs, connects QP i to QP i+N (INIT, RTR, RTS,
 * over GID index -x), lets them sit idle and measures again.  Memory is
 * the resident set (/proc/self/statm: every page touched, heap, mappings
 * and shared memory alike) and, for the record, the heap in use
 * (mallinfo2) and the address space (VmSize).
 *
 * Queue buffers grow with the depth and the rest does not, so with two or
 * more depths the figures are fitted to fixed + per_wr * depth (least
 * squares): "fixed" is the memory per idle QP with queue buffers excluded.
 * Output: one "qpmem ..." line per depth and a "qpmem_fit ..." line; the
 * path of the libibverbs.so.1 actually loaded is printed as lib=PATH.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MAX_DEPTHS 8

struct mem {
	long long rss, heap, vsz;	/* bytes */
};

struct rig {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	enum ibv_mtu mtu;
};

static const char *dev_name = "rxe0";
static int gid_index;
static int pairs = 500;
static int settle_ms = 200;

static void mem_now(struct mem *m)
{
	long long size = 0, res = 0;
	long page = sysconf(_SC_PAGESIZE);
	struct mallinfo2 mi = mallinfo2();
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lld %lld", &size, &res) != 2)
			size = res = 0;
		fclose(f);
	}
	m->rss = res * page;
	m->vsz = size * page;
	m->heap = (long long)mi.uordblks + (long long)mi.hblkhd;
}

/* The libibverbs.so.1 this process runs with, from its own mappings. */
static void loaded_lib(char *out, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libibverbs.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(out, len, "%s", p);
			break;
		}
	}
	fclose(f);
}

static int rig_open(struct rig *r)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int i;

	if (!list) {
		perror("ibv_get_device_list");
		return -1;
	}
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	r->ctx = list[i] ? ibv_open_device(list[i]) : NULL;
	ibv_free_device_list(list);
	if (!r->ctx) {
		fprintf(stderr, "urxe-qp-mem: cannot open device %s\n", dev_name);
		return -1;
	}
	if (ibv_query_port(r->ctx, 1, &pa) || ibv_query_gid(r->ctx, 1, gid_index, &r->gid)) {
		fprintf(stderr, "urxe-qp-mem: cannot query port 1 / GID %d\n", gid_index);
		return -1;
	}
	r->mtu = pa.active_mtu;
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = r->pd ? ibv_create_cq(r->ctx, 64, NULL, NULL, 0) : NULL;
	if (!r->cq) {
		perror("urxe-qp-mem: PD/CQ");
		return -1;
	}
	return 0;
}

static struct ibv_qp *qp_new(struct rig *r, int depth)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = depth, .max_recv_wr = depth,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp *qp = ibv_create_qp(r->pd, &ia);

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* INIT -> RTR -> RTS, talking to the QP numbered dqpn on our own GID. */
static int qp_connect(struct rig *r, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = r->mtu, .dest_qp_num = dqpn,
		.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = r->gid, .sgid_index = gid_index,
				 .hop_limit = 64 },
		},
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* n connected pairs: qps[i] <-> qps[i + n]. */
static int make_pairs(struct rig *r, struct ibv_qp **qps, int n, int depth)
{
	int i;

	for (i = 0; i < 2 * n; i++) {
		qps[i] = qp_new(r, depth);
		if (!qps[i]) {
			fprintf(stderr, "urxe-qp-mem: QP %d of %d: %s\n", i + 1,
				2 * n, strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < 2 * n; i++) {
		if (qp_connect(r, qps[i], qps[(i + n) % (2 * n)]->qp_num)) {
			fprintf(stderr, "urxe-qp-mem: connecting QP %d: %s\n", i + 1,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* One depth, in this (fresh) process; prints the "qpmem" line. */
static int measure(int depth)
{
	struct ibv_qp *warm[2], **qps = calloc(2 * pairs, sizeof(*qps));
	struct mem m0, m1;
	struct rig r = { 0 };
	char lib[1024];
	int n = 2 * pairs;

	if (!qps || rig_open(&r) || make_pairs(&r, warm, 1, depth))
		return 1;
	usleep(settle_ms * 1000);
	mem_now(&m0);
	if (make_pairs(&r, qps, pairs, depth))
		return 1;
	usleep(settle_ms * 1000);
	mem_now(&m1);
	loaded_lib(lib, sizeof(lib));
	printf("qpmem depth=%d qps=%d rss_per_qp=%lld heap_per_qp=%lld "
	       "vsz_per_qp=%lld lib=%s\n", depth, n, (m1.rss - m0.rss) / n,
	       (m1.heap - m0.heap) / n, (m1.vsz - m0.vsz) / n, lib);
	fflush(stdout);
	/* Left for exit to reclaim: teardown time is not measured here. */
	return 0;
}

/* Runs measure() in a child; reads back its figures from a pipe. */
static int measure_child(int depth, double *rss, double *heap)
{
	char line[2048];
	int fds[2], status;
	FILE *f;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		_exit(measure(depth));
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	*rss = *heap = -1;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "rss_per_qp="), *q = strstr(line, "heap_per_qp=");

		fputs(line, stdout);
		if (p && q) {
			*rss = atof(p + 11);
			*heap = atof(q + 12);
		}
	}
	if (f)
		fclose(f);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || *rss < 0)
		return -1;
	return 0;
}

/* Least-squares line through (x, y): y = a + b x. */
static void fit(const double *x, const double *y, int n, double *a, double *b)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, d;
	int i;

	for (i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
	}
	d = n * sxx - sx * sx;
	*b = d != 0 ? (n * sxy - sx * sy) / d : 0;
	*a = (sy - *b * sx) / n;
}

static int parse_depths(char *s, double *depth)
{
	int n = 0;
	char *tok;

	for (tok = strtok(s, ","); tok && n < MAX_DEPTHS; tok = strtok(NULL, ","))
		if ((depth[n] = atoi(tok)) >= 1)
			n++;
	return n;
}

int main(int argc, char **argv)
{
	double depth[MAX_DEPTHS], rss[MAX_DEPTHS], heap[MAX_DEPTHS], a, b, ha, hb;
	char def[] = "1,64";
	char *depths = def;
	int c, n, i;

	while ((c = getopt(argc, argv, "d:x:n:w:s:h")) != -1) {
		switch (c) {
		case 'd': dev_name = optarg; break;
		case 'x': gid_index = atoi(optarg); break;
		case 'n': pairs = atoi(optarg); break;
		case 'w': depths = optarg; break;
		case 's': settle_ms = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: urxe-qp-mem [-d DEV] [-x GID_INDEX] "
				"[-n PAIRS] [-w DEPTH,...] [-s SETTLE_MS]\n"
				"  defaults: -d rxe0 -x 0 -n 500 -w 1,64 -s 200\n");
			return c == 'h' ? 0 : 2;
		}
	}
	n = parse_depths(depths, depth);
	if (pairs < 1 || n < 1)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < n; i++) {
		if (measure_child((int)depth[i], &rss[i], &heap[i])) {
			printf("qpmem depth=%d error=failed\n", (int)depth[i]);
			return 1;
		}
	}
	if (n < 2)
		return 0;
	fit(depth, rss, n, &a, &b);
	fit(depth, heap, n, &ha, &hb);
	printf("qpmem_fit fixed_rss_per_qp=%.0f rss_per_wr=%.1f "
	       "fixed_heap_per_qp=%.0f heap_per_wr=%.1f\n", a, b, ha, hb);
	return 0;
}
