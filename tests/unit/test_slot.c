// SPDX-License-Identifier: BSD-2-Clause
/*
 * host/slot.c and rundir.c: slots held as OFD write locks on byte k of
 * the user's `slots` and as abstract socket names.  Two claims in one
 * process exclude each other (two open file descriptions), release frees,
 * the kernel frees a dead holder's slot, other users' names are skipped,
 * the user's directory is 0700 and its files 0600 whatever the umask,
 * links and foreign files are refused, the user's limit holds, exhaustion
 * is -EUSERS, and no slot's loopback address has a .0 or .255 octet.
 * Every test works in its own temporary runtime directory.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <urxe/host.h>

#include "testutil.h"

static struct tu_sandbox sb;
static mode_t saved_umask;

static void setup(void)
{
	saved_umask = umask(022);
	umask(saved_umask);
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
}

static void teardown(void)
{
	umask(saved_umask);	/* a failed test may have left its own */
	tu_sandbox_fini(&sb);
}

START_TEST(two_claims_distinct)
{
	struct urxe_slot a, b, c;

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	/* The lowest free slot first; slot 0 is never handed out. */
	ck_assert_uint_eq(a.index, URXE_SLOT_FIRST);
	ck_assert_uint_eq(b.index, URXE_SLOT_FIRST + 1);
	ck_assert_int_ne(a.fd, b.fd);
	/* The claim must not leak into programs the process execs. */
	ck_assert_int_ne(fcntl(a.fd, F_GETFD) & FD_CLOEXEC, 0);

	ck_assert_int_eq(urxe_slot_busy(sb.rundir, a.index), 1);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, b.index), 1);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, b.index + 1), 0);

	urxe_slot_release(&a);
	ck_assert_int_eq(a.fd, -1);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_FIRST), 0);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, b.index), 1);
	/* Released twice: harmless. */
	urxe_slot_release(&a);

	/* The freed slot is handed out again. */
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), 0);
	ck_assert_uint_eq(c.index, URXE_SLOT_FIRST);
	urxe_slot_release(&b);
	urxe_slot_release(&c);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_FIRST), 0);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_FIRST + 1), 0);
}
END_TEST

/* The user's directory is 0700 and its files 0600 whatever the umask. */
START_TEST(private_modes)
{
	mode_t old = umask(0);
	char name[32], *udir, *slots, *other;
	struct urxe_slot s;
	struct stat st;
	int fd;

	urxe_rundir_user_name(name, sizeof(name));
	ck_assert_int_eq(strncmp(name, "urxe-v2-", 8), 0);
	udir = tu_path(sb.rundir, name);
	slots = tu_path(udir, "slots");
	other = tu_path(udir, "xrcd");
	ck_assert_int_ne(access(sb.rundir, F_OK), 0);	/* created by the claim */
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &s), 0);
	ck_assert_int_eq(stat(sb.rundir, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0700, "base mode %o",
		      st.st_mode & 07777);
	ck_assert_int_eq(stat(udir, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0700, "user dir mode %o",
		      st.st_mode & 07777);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_int_eq(stat(slots, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0600, "slots mode %o",
		      st.st_mode & 07777);
	urxe_slot_release(&s);

	/* Opened up by hand: ours alone again at the next open. */
	ck_assert_int_eq(chmod(udir, 0777), 0);
	ck_assert_int_eq(chmod(slots, 0666), 0);
	fd = urxe_rundir_open(sb.rundir, "slots");
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = urxe_rundir_open(sb.rundir, "xrcd");
	ck_assert_int_ge(fd, 0);
	close(fd);
	umask(old);
	ck_assert_int_eq(stat(udir, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(stat(slots, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(stat(other, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	/* Read-only opens never create; unlink of what is gone is fine. */
	ck_assert_int_eq(urxe_rundir_open_ro(sb.rundir, "none"), -ENOENT);
	ck_assert_int_eq(urxe_rundir_unlink(sb.rundir, "xrcd"), 0);
	ck_assert_int_eq(urxe_rundir_unlink(sb.rundir, "xrcd"), 0);
	ck_assert_int_ne(access(other, F_OK), 0);
	free(udir);
	free(slots);
	free(other);
}
END_TEST

/*
 * What another user could leave in the way: links, a file for our
 * directory, an open base, a directory of theirs.  Each is refused, none
 * followed.
 */
START_TEST(rundir_refusals)
{
	char name[32], *udir, *target, *slots;
	struct stat st;
	int fd;

	urxe_rundir_user_name(name, sizeof(name));
	udir = tu_path(sb.rundir, name);
	target = tu_path(sb.dir, "elsewhere");
	slots = tu_path(udir, "slots");
	ck_assert_int_eq(mkdir(sb.rundir, 0755), 0);
	ck_assert_int_eq(mkdir(target, 0700), 0);

	/* Our directory is a link: not followed (ENOTDIR or ELOOP's EACCES). */
	ck_assert_int_eq(symlink(target, udir), 0);
	fd = urxe_rundir_open(sb.rundir, "slots");
	ck_assert_msg(fd == -ENOTDIR || fd == -EACCES, "link: %d", fd);
	{
		char *t = tu_path(target, "slots");

		ck_assert_int_ne(access(t, F_OK), 0);
		free(t);
	}
	ck_assert_int_eq(unlink(udir), 0);

	/* A file in its place. */
	ck_assert_int_eq(tu_write_file(udir, "x"), 0);
	ck_assert_int_eq(urxe_rundir_open(sb.rundir, "slots"), -ENOTDIR);
	ck_assert_int_eq(unlink(udir), 0);

	/* A file of ours that is a link, or not a regular file. */
	ck_assert_int_eq(mkdir(udir, 0700), 0);
	ck_assert_int_eq(symlink("/etc/passwd", slots), 0);
	ck_assert_int_eq(urxe_rundir_open(sb.rundir, "slots"), -EACCES);
	ck_assert_int_eq(unlink(slots), 0);
	ck_assert_int_eq(mkfifo(slots, 0600), 0);
	ck_assert_int_eq(urxe_rundir_open(sb.rundir, "slots"), -EACCES);
	ck_assert_int_eq(unlink(slots), 0);

	/* A base anyone may write to, not sticky: refused; sticky: fine. */
	ck_assert_int_eq(chmod(sb.rundir, 0777), 0);
	ck_assert_int_eq(urxe_rundir_open(sb.rundir, "slots"), -EACCES);
	ck_assert_int_eq(chmod(sb.rundir, 01777), 0);
	fd = urxe_rundir_open(sb.rundir, "slots");
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* Root can play the other user: directories and files of theirs. */
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(slots, 65534, 65534), 0);
		ck_assert_int_eq(urxe_rundir_open(sb.rundir, "slots"), -EACCES);
		ck_assert_int_eq(chown(udir, 65534, 65534), 0);
		ck_assert_int_eq(urxe_rundir_user(sb.rundir), -EACCES);
		ck_assert_int_eq(chown(udir, 0, 0), 0);
		ck_assert_int_eq(chown(slots, 0, 0), 0);
		ck_assert_int_eq(chown(sb.rundir, 65534, 65534), 0);
		ck_assert_int_eq(urxe_rundir_user(sb.rundir), -EACCES);
		ck_assert_int_eq(chown(sb.rundir, 0, 0), 0);
	}
	fd = urxe_rundir_user(sb.rundir);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_uid, geteuid());
	close(fd);
	free(udir);
	free(target);
	free(slots);
}
END_TEST

START_TEST(rundir_errors)
{
	char *file = tu_path(sb.dir, "plain");
	char *below = tu_path(sb.dir, "no/such/parent");
	struct urxe_slot s = { .fd = -1 };
	int fd;

	ck_assert_int_eq(tu_write_file(file, "x"), 0);
	ck_assert_int_eq(urxe_rundir_user(file), -ENOTDIR);
	ck_assert_int_eq(urxe_slot_claim(file, &s), -ENOTDIR);
	ck_assert_int_eq(s.fd, -1);
	ck_assert_int_eq(urxe_slot_claim(below, &s), -ENOENT);
	ck_assert_int_lt(urxe_slot_busy(below, 1), 0);
	/* An existing directory of ours is accepted as it is. */
	fd = urxe_rundir_user(sb.dir);
	ck_assert_int_ge(fd, 0);
	close(fd);
	free(file);
	free(below);
}
END_TEST

/*
 * Several processes of one user starting at once (mpirun's ranks) all get
 * the directory, whichever of them makes it: one's mkdir() loses the race
 * with EEXIST and must open what the other made.
 */
START_TEST(rundir_concurrent_create)
{
	enum { ROUNDS = 40, PROCS = 6 };

	for (int r = 0; r < ROUNDS; r++) {
		char sub[32];
		char *base;
		pid_t pid[PROCS];
		int gate[2];

		snprintf(sub, sizeof(sub), "race%d", r);
		base = tu_path(sb.dir, sub);
		ck_assert_int_eq(mkdir(base, 0700), 0);
		ck_assert_int_eq(pipe(gate), 0);
		for (int i = 0; i < PROCS; i++) {
			pid[i] = fork();
			ck_assert_int_ge(pid[i], 0);
			if (pid[i] == 0) {
				char c;
				int fd;

				close(gate[1]);
				/* All leave read() together when the gate closes. */
				(void)!read(gate[0], &c, 1);
				fd = urxe_rundir_user(base);
				_exit(fd >= 0 ? 0 : 1);
			}
		}
		close(gate[0]);
		close(gate[1]);
		for (int i = 0; i < PROCS; i++) {
			int status;

			ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
			ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				      "round %d: process %d did not get the directory",
				      r, i);
		}
		free(base);
	}
}
END_TEST

/* The abstract name of slot @k under @rundir, as slot.c binds it. */
static int bind_name(const char *rundir, unsigned int k)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint64_t h = 14695981039346656037ull;
	const char *p;
	int fd, n;

	for (p = rundir; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
		     "urxe-v2/%016llx/slot/%u", (unsigned long long)h, k);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Slots another user holds (names bound, no lock of ours): skipped, and
 * their names cannot be taken from them; ours cannot be bound by them.
 */
START_TEST(other_users_slots)
{
	struct urxe_slot a, b;
	int o1, o2;

	o1 = bind_name(sb.rundir, URXE_SLOT_FIRST);
	o2 = bind_name(sb.rundir, URXE_SLOT_FIRST + 1);
	ck_assert_int_ge(o1, 0);
	ck_assert_int_ge(o2, 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_uint_eq(a.index, URXE_SLOT_FIRST + 2);
	/* Theirs are not ours. */
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_FIRST), 0);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, a.index), 1);
	/* Ours cannot be bound by anybody else. */
	ck_assert_int_eq(bind_name(sb.rundir, a.index), -1);
	close(o1);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	ck_assert_uint_eq(b.index, URXE_SLOT_FIRST);
	urxe_slot_release(&a);
	urxe_slot_release(&b);
	close(o2);
}
END_TEST

/* A user's limit: URXE_INSTANCES_MAX lowers it; a bad value is ignored. */
START_TEST(user_limit)
{
	struct urxe_slot a, b, c = { .fd = -1 };

	ck_assert_uint_le(urxe_slot_user_limit(), URXE_INSTANCES_DEFAULT);
	setenv("URXE_INSTANCES_MAX", "2", 1);
	ck_assert_uint_eq(urxe_slot_user_limit(), 2);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), -EUSERS);
	ck_assert_int_eq(c.fd, -1);
	urxe_slot_release(&a);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), 0);
	ck_assert_uint_eq(c.index, URXE_SLOT_FIRST);
	/* Raising it is not the user's to do. */
	setenv("URXE_INSTANCES_MAX", "100000", 1);
	ck_assert_uint_le(urxe_slot_user_limit(), URXE_INSTANCES_DEFAULT);
	setenv("URXE_INSTANCES_MAX", "many", 1);
	ck_assert_uint_le(urxe_slot_user_limit(), URXE_INSTANCES_DEFAULT);
	ck_assert_uint_ge(urxe_slot_user_limit(), 1);
	unsetenv("URXE_INSTANCES_MAX");
	urxe_slot_release(&b);
	urxe_slot_release(&c);
}
END_TEST

/* A holder that dies without releasing: the kernel frees its slot. */
START_TEST(crashed_holder)
{
	unsigned int idx = 0;
	int pfd[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct urxe_slot s;

		close(pfd[0]);
		if (urxe_slot_claim(sb.rundir, &s))
			_exit(1);
		if (write(pfd[1], &s.index, sizeof(s.index)) != sizeof(s.index))
			_exit(2);
		for (;;)
			pause();	/* killed by the parent (or the alarm) */
	}
	close(pfd[1]);
	ck_assert_int_eq(tu_read_full(pfd[0], &idx, sizeof(idx), 10000), 0);
	close(pfd[0]);
	ck_assert_uint_eq(idx, URXE_SLOT_FIRST);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, idx), 1);

	tu_kill_child(pid);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, idx), 0);

	{
		struct urxe_slot s;

		ck_assert_int_eq(urxe_slot_claim(sb.rundir, &s), 0);
		ck_assert_uint_eq(s.index, idx);
		urxe_slot_release(&s);
	}
}
END_TEST

/*
 * Every slot taken: -EUSERS, and neither byte 0 nor the byte after the
 * last slot is ever claimed.  To stay fast (a claim scans from the first
 * slot, so 1022 real claims cost ~500k fcntl calls and 1022 descriptors),
 * one description of the test's own locks slots FIRST..LAST-2 in one call;
 * real claims take the last two.
 */
START_TEST(exhaustion)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = URXE_SLOT_FIRST,
		.l_len = URXE_SLOT_LAST - 1 - URXE_SLOT_FIRST,
	};
	struct urxe_slot a, b, c = { .fd = -1 };
	int hog;

	urxe_slot_test_limit(URXE_SLOT_LAST);	/* the hog is one of ours */
	hog = urxe_rundir_open(sb.rundir, "slots");
	ck_assert_int_ge(hog, 0);
	ck_assert_int_eq(fcntl(hog, F_OFD_SETLK, &fl), 0);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_LAST - 2), 1);

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_uint_eq(a.index, URXE_SLOT_LAST - 1);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	ck_assert_uint_eq(b.index, URXE_SLOT_LAST);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), -EUSERS);
	ck_assert_int_eq(c.fd, -1);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, 0), 0);
	ck_assert_int_eq(urxe_slot_busy(sb.rundir, URXE_SLOT_LAST + 1), 0);

	/* One slot freed: exactly that one comes back. */
	urxe_slot_release(&a);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), 0);
	ck_assert_uint_eq(c.index, URXE_SLOT_LAST - 1);
	urxe_slot_release(&c);

	/* The hog goes: the lowest slot is free again. */
	close(hog);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &c), 0);
	ck_assert_uint_eq(c.index, URXE_SLOT_FIRST);
	urxe_slot_release(&c);
	urxe_slot_release(&b);
	urxe_slot_test_limit(0);
}
END_TEST

/* 127.117.h.l: no octet is 0 or 255, and slots never share an address. */
START_TEST(loopback_addrs_valid)
{
	static uint8_t seen[256][256];
	unsigned int k;

	memset(seen, 0, sizeof(seen));
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		struct in_addr a = urxe_slot_loopback_addr(k);
		uint8_t o[4];

		memcpy(o, &a.s_addr, 4);
		ck_assert_msg(o[0] == 127 && o[1] == 117, "slot %u: %u.%u.x.x", k,
			      o[0], o[1]);
		ck_assert_msg(o[2] != 0 && o[2] != 255 && o[3] != 0 && o[3] != 255,
			      "slot %u: 127.117.%u.%u", k, o[2], o[3]);
		ck_assert_msg(!seen[o[2]][o[3]], "slot %u reuses 127.117.%u.%u", k,
			      o[2], o[3]);
		seen[o[2]][o[3]] = 1;
	}
}
END_TEST

static Suite *slot_suite(void)
{
	Suite *s = suite_create("slot");
	TCase *tc = tu_tcase(s, "slot", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, two_claims_distinct);
	tcase_add_test(tc, private_modes);
	tcase_add_test(tc, rundir_refusals);
	tcase_add_test(tc, rundir_errors);
	tcase_add_test(tc, rundir_concurrent_create);
	tcase_add_test(tc, other_users_slots);
	tcase_add_test(tc, user_limit);
	tcase_add_test(tc, crashed_holder);
	tcase_add_test(tc, exhaustion);
	tcase_add_test(tc, loopback_addrs_valid);
	return s;
}

int main(void)
{
	return tu_run(slot_suite());
}
