// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC domains through the public inline verbs ibv_open_xrcd(3) and
 * ibv_close_xrcd(3) on rxe0: private domains (fd -1), the comp_mask and fd
 * rules and the kernel's errnos (EINVAL, EOPNOTSUPP, EBADF, EAGAIN,
 * O_CREAT|O_EXCL), one domain per (inode, device) shared by every opener —
 * other descriptors, hard links, other processes — that lives while any
 * handle does and dies with the last one, also when its holder is killed;
 * EBUSY while a handle has users.  Identity is compared through
 * to_uxrcd()->domain_id (include/urxe/provider.h).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <urxe/provider.h>

#include "testutil.h"
#include "verbs_util.h"

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_context *ctx1;	/* rxe1, for the tests that need it */
static char *fa, *fb;		/* two files, each an XRC domain's name */

/* Handles a test has open: a failed test's are closed by teardown. */
static struct ibv_xrcd *handles[16];

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo; rxe1 netdev lo", 1);
	ctx = vu_open_rxe0();
	fa = tu_path(sb.dir, "domain-a");
	fb = tu_path(sb.dir, "domain-b");
	ck_assert_int_eq(tu_write_file(fa, ""), 0);
	ck_assert_int_eq(tu_write_file(fb, ""), 0);
}

static void teardown(void)
{
	size_t i;

	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
		if (!handles[i])
			continue;
		atomic_store(&to_uxrcd(handles[i])->users, 0);
		ibv_close_xrcd(handles[i]);
		handles[i] = NULL;
	}
	if (ctx1)
		ibv_close_device(ctx1);
	if (ctx)
		ibv_close_device(ctx);
	ctx = ctx1 = NULL;
	free(fa);
	free(fb);
	fa = fb = NULL;
	tu_sandbox_fini(&sb);
}

static struct ibv_xrcd *xopen_mask(struct ibv_context *c, int fd, int oflags,
				   uint32_t mask)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = mask,
		.fd = fd,
		.oflags = oflags,
	};

	struct ibv_xrcd *x;
	size_t i;

	errno = 0;
	x = ibv_open_xrcd(c, &a);
	for (i = 0; x && i < sizeof(handles) / sizeof(handles[0]); i++)
		if (!handles[i]) {
			handles[i] = x;
			break;
		}
	return x;
}

/* ibv_close_xrcd, forgetting the handle when it is gone. */
static int xclose(struct ibv_xrcd *x)
{
	int rc = ibv_close_xrcd(x);
	size_t i;

	for (i = 0; !rc && i < sizeof(handles) / sizeof(handles[0]); i++)
		if (handles[i] == x)
			handles[i] = NULL;
	return rc;
}

static struct ibv_xrcd *xopen(struct ibv_context *c, int fd, int oflags)
{
	return xopen_mask(c, fd, oflags,
			  IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS);
}

static uint64_t domain(struct ibv_xrcd *x)
{
	return to_uxrcd(x)->domain_id;
}

/* Expects ibv_open_xrcd to fail with @err. */
static void assert_open_fails(int fd, int oflags, int err)
{
	struct ibv_xrcd *x = xopen(ctx, fd, oflags);

	ck_assert_msg(x == NULL, "ibv_open_xrcd(fd %d, oflags %#x) succeeded", fd,
		      oflags);
	ck_assert_msg(errno == err, "ibv_open_xrcd(fd %d, oflags %#x): %s, expected %s",
		      fd, oflags, strerror(errno), strerror(err));
}

static int open_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

START_TEST(private_domains)
{
	struct ibv_xrcd *x1, *x2;

	x1 = xopen(ctx, -1, 0);
	ck_assert_ptr_nonnull(x1);
	x2 = xopen(ctx, -1, O_CREAT);
	ck_assert_ptr_nonnull(x2);
	ck_assert_ptr_eq(x1->context, ctx);
	ck_assert_uint_ne(domain(x1), domain(x2));
	ck_assert_int_eq(to_uxrcd(x1)->entry, -1);
	ck_assert_int_eq(xclose(x1), 0);
	ck_assert_int_eq(xclose(x2), 0);
}
END_TEST

struct mask_case {
	uint32_t mask;
	int err;
};

static const struct mask_case mask_cases[] = {
	{ 0, EINVAL },
	{ IBV_XRCD_INIT_ATTR_FD, EINVAL },
	{ IBV_XRCD_INIT_ATTR_OFLAGS, EINVAL },
	{ IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS |
	  IBV_XRCD_INIT_ATTR_RESERVED, EOPNOTSUPP },
	{ IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS | 1u << 7, EOPNOTSUPP },
	{ IBV_XRCD_INIT_ATTR_RESERVED, EOPNOTSUPP },
};

START_TEST(comp_mask_rules)
{
	const struct mask_case *c = &mask_cases[_i];
	int fd = open_file(fa);

	/* Checked before the fd: nothing is created on the way. */
	ck_assert_ptr_null(xopen_mask(ctx, fd, O_CREAT, c->mask));
	ck_assert_msg(errno == c->err, "comp_mask %#x: %s, expected %s", c->mask,
		      strerror(errno), strerror(c->err));
	assert_open_fails(fd, 0, EAGAIN);
	close(fd);
}
END_TEST

START_TEST(null_attr)
{
	errno = 0;
	ck_assert_ptr_null(ibv_open_xrcd(ctx, NULL));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(bad_fd)
{
	int closed = open_file(fa);

	close(closed);	/* a descriptor number known not to be open */
	assert_open_fails(closed, O_CREAT, EBADF);
	if (fcntl(1000, F_GETFD) == -1)	/* unless the environment uses it */
		assert_open_fails(1000, O_CREAT, EBADF);
	assert_open_fails(-2, O_CREAT, EBADF);
	assert_open_fails(-2, 0, EBADF);
}
END_TEST

START_TEST(create_join_and_end)
{
	int fd1 = open_file(fa), fd2 = open_file(fa), fd3;
	struct ibv_xrcd *x1, *x2, *x3;
	uint64_t id;

	assert_open_fails(fd1, 0, EAGAIN);
	x1 = xopen(ctx, fd1, O_CREAT);
	ck_assert_ptr_nonnull(x1);
	id = domain(x1);
	ck_assert_int_ge(to_uxrcd(x1)->entry, 0);

	/* Another descriptor of the same file: the same domain. */
	x2 = xopen(ctx, fd2, 0);
	ck_assert_ptr_nonnull(x2);
	ck_assert_uint_eq(domain(x2), id);
	assert_open_fails(fd2, O_CREAT | O_EXCL, EINVAL);

	/* The caller may close its descriptor: the domain keeps the file. */
	close(fd1);
	close(fd2);
	fd3 = open_file(fa);
	x3 = xopen(ctx, fd3, O_CREAT);
	ck_assert_ptr_nonnull(x3);
	ck_assert_uint_eq(domain(x3), id);

	/* Alive while any handle is. */
	ck_assert_int_eq(xclose(x1), 0);
	ck_assert_int_eq(xclose(x3), 0);
	x3 = xopen(ctx, fd3, 0);
	ck_assert_ptr_nonnull(x3);
	ck_assert_uint_eq(domain(x3), id);
	ck_assert_int_eq(xclose(x3), 0);
	ck_assert_int_eq(xclose(x2), 0);

	/* Gone with the last handle; a new one is a new domain. */
	assert_open_fails(fd3, 0, EAGAIN);
	x1 = xopen(ctx, fd3, O_CREAT | O_EXCL);
	ck_assert_ptr_nonnull(x1);
	ck_assert_uint_ne(domain(x1), id);
	ck_assert_int_eq(xclose(x1), 0);
	assert_open_fails(fd3, 0, EAGAIN);
	close(fd3);
}
END_TEST

START_TEST(no_descriptor_leak)
{
	int fd = open_file(fa), before = count_fds();
	struct ibv_xrcd *x1, *x2;

	x1 = xopen(ctx, fd, O_CREAT);
	ck_assert_ptr_nonnull(x1);
	x2 = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(x2);
	ck_assert_int_eq(xclose(x2), 0);
	ck_assert_int_eq(xclose(x1), 0);
	assert_open_fails(fd, 0, EAGAIN);
	ck_assert_int_eq(count_fds(), before);
	close(fd);
}
END_TEST

START_TEST(hard_link_and_other_file)
{
	char *link_path = tu_path(sb.dir, "link-to-a");
	int fda = open_file(fa), fdb = open_file(fb), fdl;
	struct ibv_xrcd *xa, *xb, *xl;

	ck_assert_int_eq(link(fa, link_path), 0);
	fdl = open_file(link_path);
	xa = xopen(ctx, fda, O_CREAT);
	ck_assert_ptr_nonnull(xa);
	xl = xopen(ctx, fdl, 0);
	ck_assert_ptr_nonnull(xl);
	ck_assert_uint_eq(domain(xl), domain(xa));

	assert_open_fails(fdb, 0, EAGAIN);
	xb = xopen(ctx, fdb, O_CREAT | O_EXCL);
	ck_assert_ptr_nonnull(xb);
	ck_assert_uint_ne(domain(xb), domain(xa));

	ck_assert_int_eq(xclose(xa), 0);
	ck_assert_int_eq(xclose(xl), 0);
	ck_assert_int_eq(xclose(xb), 0);
	close(fda);
	close(fdb);
	close(fdl);
	free(link_path);
}
END_TEST

/* The domain is the file's on one device: rxe1 does not see rxe0's. */
START_TEST(per_device)
{
	int fd = open_file(fa);
	struct ibv_xrcd *x0, *x1;

	ctx1 = open_dev("rxe1");
	ck_assert_ptr_nonnull(ctx1);
	x0 = xopen(ctx, fd, O_CREAT);
	ck_assert_ptr_nonnull(x0);
	x1 = xopen(ctx1, fd, 0);
	ck_assert_ptr_null(x1);
	ck_assert_int_eq(errno, EAGAIN);
	x1 = xopen(ctx1, fd, O_CREAT | O_EXCL);
	ck_assert_ptr_nonnull(x1);
	ck_assert_uint_ne(domain(x1), domain(x0));
	ck_assert_int_eq(xclose(x1), 0);
	ck_assert_int_eq(xclose(x0), 0);
	ck_assert_int_eq(ibv_close_device(ctx1), 0);
	ctx1 = NULL;
	close(fd);
}
END_TEST

/*
 * EBUSY is per handle, for the resources made through it.  XRC SRQs and
 * TGT QPs do not exist yet, so the test raises the handle's count itself.
 */
START_TEST(busy_handle)
{
	int fd = open_file(fa);
	struct ibv_xrcd *x, *y;

	x = xopen(ctx, fd, O_CREAT);
	ck_assert_ptr_nonnull(x);
	y = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(y);
	atomic_store(&to_uxrcd(x)->users, 1);
	ck_assert_int_eq(xclose(x), EBUSY);
	/* Another handle of the same domain is not affected. */
	ck_assert_int_eq(xclose(y), 0);
	/* The refused close left the domain alive. */
	y = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(domain(y), domain(x));
	ck_assert_int_eq(xclose(y), 0);

	atomic_store(&to_uxrcd(x)->users, 0);
	ck_assert_int_eq(xclose(x), 0);
	assert_open_fails(fd, 0, EAGAIN);
	close(fd);
}
END_TEST

/* --- two processes --- */

enum child_fail {
	CHILD_OK,
	CHILD_INHERITED_ALIVE = 10,	/* the inherited context still worked */
	CHILD_NO_DEVICE,
	CHILD_NO_FILE,
	CHILD_NO_XRCD,
	CHILD_PIPE,
	CHILD_CLOSE,
};

/*
 * The child side: open a context of its own (the inherited one is dead
 * after fork), open @path's domain with O_CREAT, report its id on @out,
 * then close everything when told to on @in (or linger until killed when
 * @in is -1).  Returns an exit code.
 */
static int child_holder(const char *path, int out, int in)
{
	struct ibv_context *c;
	struct ibv_xrcd *x;
	uint64_t id;
	char cmd;
	int fd;

	x = xopen(ctx, -1, 0);
	if (x || errno != EIO)
		return CHILD_INHERITED_ALIVE;
	c = open_dev("rxe0");
	if (!c)
		return CHILD_NO_DEVICE;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return CHILD_NO_FILE;
	x = xopen(c, fd, O_CREAT);
	if (!x)
		return CHILD_NO_XRCD;
	close(fd);
	id = domain(x);
	if (write(out, &id, sizeof(id)) != sizeof(id))
		return CHILD_PIPE;
	if (in < 0)
		for (;;)
			pause();
	if (tu_read_full(in, &cmd, 1, 20000))
		return CHILD_PIPE;
	if (xclose(x) || ibv_close_device(c))
		return CHILD_CLOSE;
	return CHILD_OK;
}

START_TEST(two_processes)
{
	int up[2], down[2], fd, status;
	struct ibv_xrcd *x, *y;
	uint64_t id = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(child_holder(fa, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	ck_assert_int_eq(tu_read_full(up[0], &id, sizeof(id), 10000), 0);

	/* The child created it; the parent joins without O_CREAT. */
	fd = open_file(fa);
	x = xopen(ctx, fd, 0);
	ck_assert_msg(x != NULL, "joining the child's domain: %s", strerror(errno));
	ck_assert_uint_eq(domain(x), id);
	assert_open_fails(fd, O_CREAT | O_EXCL, EINVAL);

	/* The child closes and exits; the parent's handle keeps the domain. */
	ck_assert_int_eq(write(down[1], "c", 1), 1);
	status = tu_wait_child(pid, 10000);
	ck_assert_int_eq(tu_exit_code(status), CHILD_OK);
	y = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(domain(y), id);
	ck_assert_int_eq(xclose(y), 0);

	ck_assert_int_eq(xclose(x), 0);
	assert_open_fails(fd, 0, EAGAIN);
	close(fd);
	close(up[0]);
	close(down[1]);
}
END_TEST

/* A holder killed with SIGKILL cleans nothing up; its claim goes anyway. */
START_TEST(killed_holder)
{
	int up[2], fd;
	struct ibv_xrcd *x;
	uint64_t id = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(up[0]);
		_exit(child_holder(fa, up[1], -1));
	}
	close(up[1]);
	ck_assert_int_eq(tu_read_full(up[0], &id, sizeof(id), 10000), 0);
	close(up[0]);

	/* Proof that the child holds it: the parent can join, then leaves. */
	fd = open_file(fa);
	x = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(domain(x), id);
	ck_assert_int_eq(xclose(x), 0);

	tu_kill_child(pid);
	assert_open_fails(fd, 0, EAGAIN);
	x = xopen(ctx, fd, O_CREAT | O_EXCL);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_ne(domain(x), id);
	ck_assert_int_eq(xclose(x), 0);
	close(fd);
}
END_TEST

/*
 * What another process sees when it opens @path's domain without O_CREAT:
 * 0 and the id, or the errno.  Runs in a child so that a registry left
 * locked shows as a hang the parent can bound, not as a hung test.
 */
struct probe {
	int err;
	uint64_t id;
};

static int child_probe(const char *path, int out)
{
	struct probe p = { 0, 0 };
	struct ibv_context *c = open_dev("rxe0");
	struct ibv_xrcd *x;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (!c || fd < 0)
		return 1;
	x = xopen(c, fd, 0);
	if (x)
		p.id = domain(x);
	else
		p.err = errno;
	if (write(out, &p, sizeof(p)) != sizeof(p))
		return 2;
	return 0;
}

/*
 * A child closing a handle it inherited: the instance behind it is dead
 * (core/fork.c: nothing in the child acts on the parent's behalf), so the
 * parent's domain must live on and the registry must stay usable.  The
 * handle's lock descriptor is an open file description shared with the
 * parent, so whatever the child locks or unlocks through it, it does for
 * the parent.
 */
START_TEST(inherited_handle_closed_in_child)
{
	struct probe p = { -1, 0 };
	int fd = open_file(fa), up[2], status;
	struct ibv_xrcd *x, *y;
	uint64_t id;
	pid_t pid;

	x = xopen(ctx, fd, O_CREAT);
	ck_assert_ptr_nonnull(x);
	id = domain(x);

	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		ibv_close_xrcd(x);	/* its result is not the point */
		_exit(0);
	}
	ck_assert_int_eq(tu_exit_code(tu_wait_child(pid, 10000)), 0);

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(up[0]);
		_exit(child_probe(fa, up[1]));
	}
	close(up[1]);
	status = tu_wait_child(pid, 5000);
	ck_assert_msg(status != -1, "ibv_open_xrcd blocked in another process after "
		      "a child closed its inherited handle (registry left locked)");
	ck_assert_int_eq(tu_exit_code(status), 0);
	ck_assert_int_eq(tu_read_full(up[0], &p, sizeof(p), 1000), 0);
	close(up[0]);
	ck_assert_msg(p.err == 0, "the parent's domain is gone for others: %s",
		      strerror(p.err));
	ck_assert_uint_eq(p.id, id);

	/* And for the parent itself. */
	y = xopen(ctx, fd, 0);
	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(domain(y), id);
	ck_assert_int_eq(xclose(y), 0);
	ck_assert_int_eq(xclose(x), 0);
	assert_open_fails(fd, 0, EAGAIN);
	close(fd);
}
END_TEST

static Suite *xrcd_suite(void)
{
	Suite *s = suite_create("xrcd");
	TCase *tc;

	tc = tu_tcase(s, "rules", setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, private_domains);
	tcase_add_loop_test(tc, comp_mask_rules, 0,
			    (int)(sizeof(mask_cases) / sizeof(mask_cases[0])));
	tcase_add_test(tc, null_attr);
	tcase_add_test(tc, bad_fd);
	tcase_add_test(tc, create_join_and_end);
	tcase_add_test(tc, no_descriptor_leak);
	tcase_add_test(tc, hard_link_and_other_file);
	tcase_add_test(tc, per_device);
	tcase_add_test(tc, busy_handle);

	tc = tu_tcase(s, "processes", setup, teardown);
	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, two_processes);
	tcase_add_test(tc, killed_holder);
	tcase_add_test(tc, inherited_handle_closed_in_child);
	return s;
}

int main(void)
{
	return tu_run(xrcd_suite());
}
