// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_unload: dlopen() the library, make objects, leave them (and the
 * context) open, dlclose() — many times in a row, in several states.
 * librdmacm's rdma_get_devices() leaves contexts open by design, and Open
 * MPI unloads its components (and with them libfabric, librdmacm and
 * libibverbs) in MPI_Finalize: unloading must never crash, and must hand
 * back every thread and descriptor the library took.
 *
 *   urxe_unload [-n rounds] [-s state[,state...]] [-d device] LIB
 *
 * -d is the URXE_DEVICES line (default "rxe0 netdev lo backend udp"); the
 * packet backend needs CAP_NET_RAW: without root, exit 77 (skipped).
 *
 * The program does not link libibverbs: every verb comes from dlsym() on
 * LIB (the inline verbs of verbs.h go through the context's ops).  After
 * each dlclose() the library must be gone (dlopen RTLD_NOLOAD fails) and
 * the process must have exactly the threads and descriptors it had
 * before the first dlopen().  Exit 0 when every round of every state
 * passed, 1 on a failed check, 2 on a set-up error.  A crash (the engine
 * thread left running in unmapped code) kills the process: ctest sees
 * the signal.  Then two children check that exit() leaves the library
 * as it is, and dlclose() does not (state "exit").
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fork_quiet.h"

/* The exported verbs this program calls, resolved from each copy. */
struct lib {
	void *h;
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	struct ibv_context *(*open_device)(struct ibv_device *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *,
				    struct ibv_comp_channel *, int);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	struct ibv_srq *(*create_srq)(struct ibv_pd *,
				      struct ibv_srq_init_attr *);
};

static const char *lib_path;
static char rundir[] = "/tmp/urxe-unload.XXXXXX";
static char xrc_file[4096];

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	nftw(rundir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	exit(1);
}

static unsigned int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	unsigned int n = 0;

	if (!d)
		fail("opendir %s: %s", path, strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Descriptors other than the one counting them. */
static unsigned int fds(void)
{
	return count_dir("/proc/self/fd") - 1;
}

static unsigned int threads(void)
{
	return count_dir("/proc/self/task");
}

#define SYM(l, f, name)                                                   \
	do {                                                              \
		*(void **)&(l)->f = dlsym((l)->h, name);                  \
		if (!(l)->f)                                              \
			fail("dlsym %s: %s", name, dlerror());            \
	} while (0)

static void lib_open(struct lib *l)
{
	l->h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!l->h)
		fail("dlopen %s: %s", lib_path, dlerror());
	SYM(l, get_device_list, "ibv_get_device_list");
	SYM(l, free_device_list, "ibv_free_device_list");
	SYM(l, open_device, "ibv_open_device");
	SYM(l, alloc_pd, "ibv_alloc_pd");
	SYM(l, reg_mr, "ibv_reg_mr");
	SYM(l, create_comp_channel, "ibv_create_comp_channel");
	SYM(l, create_cq, "ibv_create_cq");
	SYM(l, create_qp, "ibv_create_qp");
	SYM(l, modify_qp, "ibv_modify_qp");
	SYM(l, query_gid, "ibv_query_gid");
	SYM(l, create_srq, "ibv_create_srq");
}

static struct ibv_context *ctx_open(struct lib *l)
{
	struct ibv_device **list = l->get_device_list(NULL);
	struct ibv_context *c;

	if (!list || !list[0])
		fail("no device");
	c = l->open_device(list[0]);
	if (!c)
		fail("ibv_open_device: %s", strerror(errno));
	l->free_device_list(list);
	return c;
}

static struct ibv_cq *cq_new(struct lib *l, struct ibv_context *c,
			     struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq = l->create_cq(c, 256, NULL, ch, 0);

	if (!cq)
		fail("ibv_create_cq: %s", strerror(errno));
	return cq;
}

static struct ibv_qp *qp_new(struct lib *l, struct ibv_pd *pd,
			     struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = srq ? 0 : 128,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = l->create_qp(pd, &a);

	if (!qp)
		fail("ibv_create_qp: %s", strerror(errno));
	return qp;
}

/* RESET -> INIT -> RTR -> RTS, aimed at @dqpn on this device's GID 0. */
static void qp_connect(struct lib *l, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	if (l->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		fail("INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	if (l->query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid))
		fail("ibv_query_gid: %s", strerror(errno));
	if (l->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				 IBV_QP_MAX_DEST_RD_ATOMIC |
				 IBV_QP_MIN_RNR_TIMER))
		fail("RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (l->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		fail("RTS: %s", strerror(errno));
}

/* Waits (bounded) for @n completions on @cq, all successful. */
static void poll_n(struct ibv_cq *cq, int n)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int got = 0, rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		rc = ibv_poll_cq(cq, 1, &wc);
		if (rc < 0)
			fail("ibv_poll_cq: %d", rc);
		if (rc && wc.status != IBV_WC_SUCCESS)
			fail("completion status %d", wc.status);
		got += rc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail("%d of %d completions in 10 s", got, n);
	}
}

static char buf[1 << 20];

/*
 * Two connected QPs on one context: a SEND and an RDMA WRITE done; with
 * @busy, @busy more WRITEs posted and not waited for (the engine is at
 * work when the library goes).
 */
static struct ibv_cq *traffic(struct lib *l, struct ibv_context *c,
			      struct ibv_comp_channel *ch, int busy)
{
	struct ibv_pd *pd = l->alloc_pd(c);
	struct ibv_mr *mr;
	struct ibv_cq *cq = cq_new(l, c, ch);
	struct ibv_qp *a, *b;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1 }, *bsw;
	int i;

	if (!pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	mr = l->reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	a = qp_new(l, pd, cq, NULL);
	b = qp_new(l, pd, cq, NULL);
	qp_connect(l, a, b->qp_num);
	qp_connect(l, b, a->qp_num);
	if (ch && ibv_req_notify_cq(cq, 0))
		fail("ibv_req_notify_cq");
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 4096,
				.lkey = mr->lkey };
	if (ibv_post_recv(b, &rwr, &brw))
		fail("ibv_post_recv");
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(a, &swr, &bsw))
		fail("ibv_post_send SEND");
	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.wr.rdma.remote_addr = (uintptr_t)buf + 8192;
	swr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(a, &swr, &bsw))
		fail("ibv_post_send WRITE");
	poll_n(cq, 3);
	sge.length = 64 * 1024;
	for (i = 0; i < busy; i++) {
		swr.wr.rdma.remote_addr = (uintptr_t)buf + 512 * 1024;
		if (ibv_post_send(a, &swr, &bsw))
			fail("ibv_post_send busy WRITE %d", i);
	}
	return cq;
}

/* The device objects stay in the library: its own to free. */
static void st_list(struct lib *l)
{
	struct ibv_device **list = l->get_device_list(NULL);

	if (!list)
		fail("ibv_get_device_list: %s", strerror(errno));
	l->free_device_list(list);
}

static void st_context(struct lib *l)
{
	ctx_open(l);
}

static void st_reset(struct lib *l)
{
	struct ibv_context *c = ctx_open(l);
	struct ibv_pd *pd = l->alloc_pd(c);

	if (!pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	qp_new(l, pd, cq_new(l, c, NULL), NULL);
}

static void st_rts(struct lib *l)
{
	traffic(l, ctx_open(l), NULL, 0);
}

static void st_busy(struct lib *l)
{
	traffic(l, ctx_open(l), NULL, 100);
}

static void st_channel(struct lib *l)
{
	struct ibv_context *c = ctx_open(l);
	struct ibv_comp_channel *ch = l->create_comp_channel(c);

	if (!ch)
		fail("ibv_create_comp_channel: %s", strerror(errno));
	/* The CQ's event sits unread in the channel. */
	traffic(l, c, ch, 0);
}

static void st_srq_xrcd(struct lib *l)
{
	struct ibv_context *c = ctx_open(l);
	struct ibv_pd *pd = l->alloc_pd(c);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq *srq;
	int fd;

	if (!pd)
		fail("ibv_alloc_pd: %s", strerror(errno));
	srq = l->create_srq(pd, &sa);
	if (!srq)
		fail("ibv_create_srq: %s", strerror(errno));
	qp_new(l, pd, cq_new(l, c, NULL), srq);
	if (!ibv_open_xrcd(c, &xa))
		fail("ibv_open_xrcd (private): %s", strerror(errno));
	/* A shared domain: its handle holds descriptors of its own. */
	fd = open(xrc_file, O_RDONLY | O_CREAT, 0600);
	if (fd < 0)
		fail("open %s: %s", xrc_file, strerror(errno));
	xa.fd = fd;
	if (!ibv_open_xrcd(c, &xa))
		fail("ibv_open_xrcd (file): %s", strerror(errno));
	close(fd);
}

static void *nothing(void *arg)
{
	return arg;
}

static atomic_bool poll_stop;

/* Polls until told to stop, or the process ends. */
static void *poller(void *arg)
{
	struct ibv_wc wc;

	while (!atomic_load(&poll_stop))
		ibv_poll_cq(arg, 1, &wc);
	return NULL;
}

/*
 * A child with the engine busy and a thread polling: with @unload it
 * dlclose()s and then exits, else it just exits.  Its log (stderr, at
 * debug level) says whether the library was taken down.
 */
static bool child_tears_down(bool unload)
{
	char log[4096 + 16], line[512];
	bool seen = false;
	int status, fd;
	FILE *f;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/exit.log", rundir);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct lib l = { 0 };
		pthread_t t;

		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(2);
		setenv("URXE_LOG", "debug", 1);
		lib_open(&l);
		if (pthread_create(&t, NULL, poller, traffic(&l, ctx_open(&l),
							    NULL, 20)))
			_exit(2);
		if (unload) {
			/* The poller would run into unmapped code: stop it. */
			atomic_store(&poll_stop, true);
			pthread_join(t, NULL);
			dlclose(l.h);
		}
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child %s ended with status %#x", unload ?
		     "that unloaded" : "that exited with objects open", status);
	f = fopen(log, "r");
	if (!f)
		fail("%s: %s", log, strerror(errno));
	while (fgets(line, sizeof(line), f))
		seen |= strstr(line, "unloading:") != NULL;
	fclose(f);
	unlink(log);
	return seen;
}

/*
 * At exit() the library stays as it is (other threads may still be in a
 * verb); dlclose() takes it down.
 */
static void check_exit(void)
{
	if (child_tears_down(false))
		fail("exit: the library was taken down at exit()");
	if (!child_tears_down(true))
		fail("exit: dlclose() did not take the library down");
	puts("ok: exit: not taken down at exit(), taken down by dlclose()");
}

static unsigned int fd0, th0;	/* before the first dlopen() */

/*
 * fork() with the engine running: the child, whose instances are dead
 * copies, unloads its copy and must be back at the baseline too (the
 * engine thread stayed in the parent); the parent's device still works,
 * then the parent unloads.
 */
static void st_fork(struct lib *l)
{
	struct ibv_context *c = ctx_open(l);
	int status;
	pid_t pid;

	traffic(l, c, NULL, 20);
	fork_quiet();
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Only this thread came along (TSan's own did not either). */
		unsigned int th = threads();

		if (dlclose(l->h))
			_exit(10);
		if (dlopen(lib_path, RTLD_NOW | RTLD_NOLOAD))
			_exit(11);
		_exit(threads() != th ? 12 : fds() != fd0 ? 13 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("fork: the child that unloaded ended with status %#x (10: dlclose failed, 11: still loaded, 12: threads, 13: descriptors)",
		     status);
	traffic(l, c, NULL, 0);
}

static const struct state {
	const char *name;
	void (*make)(struct lib *l);
} states[] = {
	{ "list", st_list },
	{ "context", st_context },
	{ "reset", st_reset },
	{ "rts", st_rts },
	{ "busy", st_busy },
	{ "channel", st_channel },
	{ "srq_xrcd", st_srq_xrcd },
	{ "fork", st_fork },
};

/* Is @name in the comma-separated list @only (NULL: everything)? */
static bool wanted(const char *only, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	if (!only)
		return true;
	for (p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static unsigned int count_char(const char *s, char c)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void run_state(const struct state *s, int rounds)
{
	struct lib l;
	int i;

	for (i = 0; i < rounds; i++) {
		memset(&l, 0, sizeof(l));
		lib_open(&l);
		s->make(&l);
		if (dlclose(l.h))
			fail("%s round %d: dlclose: %s", s->name, i, dlerror());
		if (dlopen(lib_path, RTLD_NOW | RTLD_NOLOAD))
			fail("%s round %d: the library is still loaded after dlclose",
			     s->name, i);
		if (threads() != th0)
			fail("%s round %d: %u threads after dlclose, %u before",
			     s->name, i, threads(), th0);
		if (fds() != fd0)
			fail("%s round %d: %u descriptors after dlclose, %u before",
			     s->name, i, fds(), fd0);
	}
	printf("ok: %s: %d rounds, %u threads, %u descriptors\n", s->name,
	       rounds, th0, fd0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *only = NULL, *device = "rxe0 netdev lo backend udp";
	unsigned int i;
	int rounds = 100, opt;
	unsigned int ran = 0;
	pthread_t t;

	while ((opt = getopt(argc, argv, "n:s:d:")) != -1) {
		if (opt == 'n')
			rounds = atoi(optarg);
		else if (opt == 's')
			only = optarg;
		else if (opt == 'd')
			device = optarg;
		else
			return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: urxe_unload [-n rounds] [-s state[,state...]] [-d device] LIB\n");
		return 2;
	}
	lib_path = argv[optind];
	if (strstr(device, "backend packet") && geteuid()) {
		puts("SKIP: the packet backend needs CAP_NET_RAW (root)");
		return 77;
	}
	/* A private runtime directory and device; removed at the end. */
	if (!mkdtemp(rundir)) {
		perror("mkdtemp");
		return 2;
	}
	setenv("URXE_RUNDIR", rundir, 1);
	setenv("URXE_DEVICES", device, 1);
	unsetenv("URXE_CONFIG");
	snprintf(xrc_file, sizeof(xrc_file), "%s/unload-xrcd", rundir);
	alarm(240);	/* bounded: a hang dies of SIGALRM */
	/*
	 * ThreadSanitizer starts a thread of its own with the first
	 * pthread_create: have it started before the baseline is taken.
	 */
	if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL))
		fail("pthread_create: %s", strerror(errno));
	fd0 = fds();
	th0 = threads();
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (!wanted(only, states[i].name))
			continue;
		run_state(&states[i], rounds);
		ran++;
	}
	if (wanted(only, "exit")) {
		check_exit();
		ran++;
	}
	if (only && ran != 1 + count_char(only, ',')) {
		fprintf(stderr, "urxe_unload: unknown state in %s\n", only);
		return 2;
	}
	nftw(rundir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	puts("PASS");
	return 0;
}
