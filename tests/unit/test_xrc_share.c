// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC domains across processes, through the public verbs: a TGT QP made
 * in one process of a file-backed domain can be opened (ibv_open_qp) in
 * another (a child, fork and exec, with an instance of its own), while a
 * number the domain does not have cannot (EINVAL), nor can a QP of
 * another domain; when its host destroys it, the other process's handle
 * gets IBV_EVENT_QP_FATAL within a second and can still be destroyed, and
 * the domain then closes.  (t_xrc runs the whole traffic across three
 * processes and a host that is killed.)  And a fork()ed child can make an
 * XRC domain of its own while, in the parent, another thread was inside
 * the module's lock at the fork.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "testutil.h"
#include "verbs_util.h"

static struct tu_sandbox sb;
static char *fa, *fb;

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	fa = tu_path(sb.dir, "domain-a");
	fb = tu_path(sb.dir, "domain-b");
	ck_assert_int_eq(tu_write_file(fa, ""), 0);
	ck_assert_int_eq(tu_write_file(fb, ""), 0);
}

static void teardown(void)
{
	free(fa);
	free(fb);
	tu_sandbox_fini(&sb);
}

static struct ibv_xrcd *open_domain(struct ibv_context *c, const char *file,
				    int *fd)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};

	*fd = open(file, O_RDONLY);
	if (*fd < 0)
		return NULL;
	a.fd = *fd;
	return ibv_open_xrcd(c, &a);
}

static struct ibv_qp *open_tgt(struct ibv_context *c, struct ibv_xrcd *x,
			       uint32_t qpn)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.xrcd = x,
		.qp_type = IBV_QPT_XRC_RECV,
	};

	return ibv_open_qp(c, &oa);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The child: opens the parent's TGT QP @qpn through domain file @fa, says
 * so on @wr, and waits for IBV_EVENT_QP_FATAL on it.  Exit codes: 0 the
 * event came within 1 s of the parent's "gone" byte; 10 + step otherwise.
 */
static int child(uint32_t qpn, int rd, int wr)
{
	struct ibv_async_event ev;
	struct ibv_context *c;
	struct ibv_xrcd *x, *y;
	struct ibv_qp *qp;
	uint64_t gone;
	char b = 0;
	int fd, fdb;

	c = open_dev("rxe0");
	if (!c)
		return 10;
	x = open_domain(c, fa, &fd);
	y = open_domain(c, fb, &fdb);
	if (!x || !y)
		return 11;
	/* A number the domain does not have; the QP through another domain. */
	errno = 0;
	if (open_tgt(c, x, qpn ^ 0x3fff) || errno != EINVAL)
		return 12;
	errno = 0;
	if (open_tgt(c, y, qpn) || errno != EINVAL)
		return 13;
	qp = open_tgt(c, x, qpn);
	if (!qp || qp->qp_num != qpn || qp->qp_type != IBV_QPT_XRC_RECV)
		return 14;
	/* Its handle holds the domain handle. */
	if (ibv_close_xrcd(x) != EBUSY)
		return 15;
	if (write(wr, "o", 1) != 1 || read(rd, &b, 1) != 1 || b != 'g')
		return 16;
	gone = now_ms();
	for (;;) {
		/* (Blocking: alarm() above bounds it.) */
		if (ibv_get_async_event(c, &ev))
			return 18;
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp)
			break;
	}
	if (now_ms() - gone > 1000)
		return 19;
	if (ibv_destroy_qp(qp) || ibv_close_xrcd(x) || ibv_close_xrcd(y))
		return 20;
	close(fd);
	close(fdb);
	return ibv_close_device(c) ? 21 : 0;
}

START_TEST(tgt_opened_in_another_process)
{
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_attr a;
	struct ibv_context *c;
	struct ibv_xrcd *x;
	struct ibv_qp *qp;
	int up[2], down[2], fd, st = -1;
	uint64_t end;
	pid_t pid;
	char b;

	c = open_dev("rxe0");
	ck_assert_ptr_nonnull(c);
	x = open_domain(c, fa, &fd);
	ck_assert_ptr_nonnull(x);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = x;
	qp = ibv_create_qp_ex(c, &qa);
	ck_assert_ptr_nonnull(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/*
		 * A process of its own, not a copy of this one (whose engine
		 * thread fork() leaves behind, with whatever it held).
		 */
		char q[16], r[16], w[16];

		snprintf(q, sizeof(q), "%u", qp->qp_num);
		snprintf(r, sizeof(r), "%d", down[0]);
		snprintf(w, sizeof(w), "%d", up[1]);
		execl("/proc/self/exe", "test_xrc_share", "child", fa, fb, q, r,
		      w, (char *)NULL);
		_exit(127);
	}
	/* The child opened it: now the host destroys it. */
	ck_assert_int_eq(read(up[0], &b, 1), 1);
	ck_assert_int_eq(b, 'o');
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(write(down[1], "g", 1), 1);
	end = now_ms() + 15000;
	while (waitpid(pid, &st, WNOHANG) == 0 && now_ms() < end)
		usleep(10000);
	if (now_ms() >= end) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child: status 0x%x (exit %d)", st,
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ck_assert_int_eq(ibv_close_xrcd(x), 0);
	close(fd);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	ck_assert_int_eq(ibv_close_device(c), 0);
}
END_TEST

static struct ibv_srq *xrc_srq(struct ibv_context *c, struct ibv_xrcd *x,
			       struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.xrcd = x,
		.cq = cq,
		.pd = pd,
	};

	return ibv_create_srq_ex(c, &a);
}

struct blocked {
	struct ibv_context *c;
	struct ibv_xrcd *x;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint64_t done_ms;
};

static void *make_srq(void *arg)
{
	struct blocked *b = arg;

	b->srq = xrc_srq(b->c, b->x, b->pd, b->cq);
	b->done_ms = now_ms();
	return NULL;
}

/* The child: a domain and an XRC SRQ of its own, on a fresh context. */
static int fork_child_domain(void)
{
	struct ibv_context *c = open_dev("rxe0");
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int fd;

	if (!c)
		return 10;
	x = open_domain(c, fb, &fd);
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 4, NULL, NULL, 0);
	if (!x || !pd || !cq)
		return 11;
	srq = xrc_srq(c, x, pd, cq);
	if (!srq)
		return 12;
	if (ibv_destroy_srq(srq) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_xrcd(x))
		return 13;
	close(fd);
	return ibv_close_device(c) ? 14 : 0;
}

/*
 * Another thread is inside the XRC module's domain lock when the process
 * forks: it maps a domain's shared file and waits for the file's lock,
 * which this thread holds through a description of its own.  The child
 * must not inherit the lock held (its owner did not come along).
 */
START_TEST(fork_while_domain_lock_held)
{
	struct blocked b = { 0 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_len = 1 };
	char *path = NULL;
	struct dirent *de;
	uint64_t unlocked;
	struct ibv_srq *first;
	pthread_t th;
	int fd, lfd, st;
	pid_t pid;
	DIR *d;

	b.c = open_dev("rxe0");
	ck_assert_ptr_nonnull(b.c);
	b.x = open_domain(b.c, fa, &fd);
	b.pd = ibv_alloc_pd(b.c);
	b.cq = ibv_create_cq(b.c, 8, NULL, NULL, 0);
	ck_assert(b.x && b.pd && b.cq);
	/* A first SRQ makes the domain's shared file; then it goes again. */
	first = xrc_srq(b.c, b.x, b.pd, b.cq);
	ck_assert_ptr_nonnull(first);
	d = opendir(sb.userdir);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "xrcd.", 5))
			path = tu_path(sb.userdir, de->d_name);
	closedir(d);
	ck_assert_ptr_nonnull(path);
	ck_assert_int_eq(ibv_destroy_srq(first), 0);

	lfd = open(path, O_RDWR);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(fcntl(lfd, F_OFD_SETLK, &fl), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, make_srq, &b), 0);
	usleep(300000);		/* it is waiting for the file lock now */
	pid = tu_fork(15);
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fork_child_domain());
	st = tu_wait_child(pid, 10000);
	unlocked = now_ms();
	fl.l_type = F_UNLCK;
	ck_assert_int_eq(fcntl(lfd, F_OFD_SETLK, &fl), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	/* The thread was inside the lock at the fork: it ended after this. */
	ck_assert_uint_ge(b.done_ms, unlocked);
	ck_assert_msg(st != -1 && tu_exit_code(st) == 0,
		      "child: %s (status 0x%x)",
		      st == -1 ? "hung, killed" : "failed", st);
	ck_assert_ptr_nonnull(b.srq);
	ck_assert_int_eq(ibv_destroy_srq(b.srq), 0);
	ck_assert_int_eq(ibv_destroy_cq(b.cq), 0);
	ck_assert_int_eq(ibv_dealloc_pd(b.pd), 0);
	ck_assert_int_eq(ibv_close_xrcd(b.x), 0);
	close(lfd);
	close(fd);
	free(path);
	ck_assert_int_eq(ibv_close_device(b.c), 0);
}
END_TEST

static Suite *xrc_share_suite(void)
{
	Suite *s = suite_create("xrc_share");
	TCase *tc = tu_tcase(s, "processes", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, tgt_opened_in_another_process);
	tcase_add_test(tc, fork_while_domain_lock_held);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "child")) {
		fa = argv[2];
		fb = argv[3];
		alarm(20);
		return child((uint32_t)strtoul(argv[4], NULL, 0), atoi(argv[5]),
			     atoi(argv[6]));
	}
	return tu_run(xrc_share_suite());
}
