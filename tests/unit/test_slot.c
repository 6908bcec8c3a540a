// SPDX-License-Identifier: BSD-2-Clause
/*
 * netdev/slot.c: host-wide slots held as OFD write locks on byte k of
 * <rundir>/slots.  Two claims in one process exclude each other (two open
 * file descriptions), release frees, the kernel frees a dead holder's slot,
 * the runtime directory is 01777 and its files 0666 whatever the umask,
 * exhaustion is -EUSERS, and no slot's loopback address has a .0 or .255
 * octet.  Every test works in its own temporary runtime directory.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/netdev.h>

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

/* The directory and files are for every user, whatever the creator's umask. */
START_TEST(modes_under_umask)
{
	mode_t old = umask(077);
	struct urxe_slot s;
	struct stat st;
	char *slots = tu_path(sb.rundir, "slots");
	char *other = tu_path(sb.rundir, "xrcd");
	int fd;

	ck_assert_int_ne(access(sb.rundir, F_OK), 0);	/* created by the claim */
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &s), 0);
	ck_assert_int_eq(stat(sb.rundir, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 01777, "rundir mode %o",
		      st.st_mode & 07777);
	ck_assert_int_eq(stat(slots, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0666, "slots mode %o",
		      st.st_mode & 07777);
	urxe_slot_release(&s);

	/* Any file opened there, and one left narrowed by an earlier creator. */
	ck_assert_int_eq(chmod(slots, 0600), 0);
	fd = urxe_rundir_open(sb.rundir, "slots");
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = urxe_rundir_open(sb.rundir, "xrcd");
	ck_assert_int_ge(fd, 0);
	close(fd);
	umask(old);
	ck_assert_int_eq(stat(slots, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0666);
	ck_assert_int_eq(stat(other, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0666);
	free(slots);
	free(other);
}
END_TEST

START_TEST(rundir_errors)
{
	char *file = tu_path(sb.dir, "plain");
	char *below = tu_path(sb.dir, "no/such/parent");
	struct urxe_slot s = { .fd = -1 };

	ck_assert_int_eq(tu_write_file(file, "x"), 0);
	ck_assert_int_eq(urxe_rundir_prepare(file), -ENOTDIR);
	ck_assert_int_eq(urxe_slot_claim(file, &s), -ENOTDIR);
	ck_assert_int_eq(s.fd, -1);
	ck_assert_int_eq(urxe_slot_claim(below, &s), -ENOENT);
	ck_assert_int_lt(urxe_slot_busy(below, 1), 0);
	/* An existing directory is accepted as it is. */
	ck_assert_int_eq(urxe_rundir_prepare(sb.dir), 0);
	free(file);
	free(below);
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
	TCase *tc = tcase_create("slot");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, two_claims_distinct);
	tcase_add_test(tc, modes_under_umask);
	tcase_add_test(tc, rundir_errors);
	tcase_add_test(tc, crashed_holder);
	tcase_add_test(tc, exhaustion);
	tcase_add_test(tc, loopback_addrs_valid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(slot_suite());
}
