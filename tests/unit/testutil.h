/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the unit suites: private temporary directories, the
 * environment variables urxe reads (saved and restored around each test),
 * and children that cannot outlive their test.  Header-only: every suite
 * is its own executable.
 *
 * Everything here works the same under CK_FORK=no, where all tests of a
 * suite share one process: tests must leave no environment, file or
 * process behind.
 *
 * tests/unit/urxe is a symlink to include/urxe: suites that link only the
 * shared library (test_xrcd, test_verbs) still need the contracts'
 * layouts (to_uxrcd, to_upd), and urxe_unit() gives them no include/.
 */
#ifndef URXE_TESTUTIL_H
#define URXE_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tools/fork_quiet.h"

/* The variables urxe reads; each test starts with none of them set. */
static const char *const tu_env_names[] = {
	"URXE_DEVICES", "URXE_CONFIG", "URXE_RUNDIR", "XDG_CONFIG_HOME", "HOME",
	"URXE_FAULTS",
};
#define TU_NENV (sizeof(tu_env_names) / sizeof(tu_env_names[0]))

static char *tu_env_saved[TU_NENV];

static inline void tu_env_save_clear(void)
{
	size_t i;

	for (i = 0; i < TU_NENV; i++) {
		const char *v = getenv(tu_env_names[i]);

		free(tu_env_saved[i]);
		tu_env_saved[i] = v ? strdup(v) : NULL;
		unsetenv(tu_env_names[i]);
	}
}

static inline void tu_env_restore(void)
{
	size_t i;

	for (i = 0; i < TU_NENV; i++) {
		if (tu_env_saved[i])
			setenv(tu_env_names[i], tu_env_saved[i], 1);
		else
			unsetenv(tu_env_names[i]);
		free(tu_env_saved[i]);
		tu_env_saved[i] = NULL;
	}
}

/*
 * Every directory a suite makes lives below one root, made by tu_run() and
 * removed when the suite ends: in fork mode Check skips the teardown of a
 * failed test, and nothing may be left behind even then.
 */
static char *tu_root;

/* A fresh private directory; the caller frees the path (tu_rmtree first). */
static inline char *tu_mkdtemp(void)
{
	char tmpl[4096];

	snprintf(tmpl, sizeof(tmpl), "%s/t-XXXXXX", tu_root ? tu_root : "/tmp");
	if (!mkdtemp(tmpl))
		return NULL;
	return strdup(tmpl);
}

static inline int tu_rm_one(const char *path, const struct stat *st,
			    int type, struct FTW *ftw)
{
	(void)st; (void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes @path and everything below it (never following symlinks). */
static inline int tu_rmtree(const char *path)
{
	if (!path)
		return 0;
	return nftw(path, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Joins @dir and @name into a malloc'd path. */
static inline char *tu_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* Creates the directories leading to file @path, like mkdir -p. */
static inline int tu_mkdir_parents(const char *path)
{
	char buf[4096], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Writes @text to @path (created mode 0644, parents must exist). */
static inline int tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	int rc = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

/*
 * Reads exactly @len bytes from @fd, waiting at most @ms in all.  Returns 0,
 * -ETIMEDOUT, or -EPIPE when the writer went away first.
 */
static inline int tu_read_full(int fd, void *buf, size_t len, int ms)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&p, 1, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

/* Children of the running test; teardown kills any still listed. */
#define TU_MAX_CHILDREN 8
static pid_t tu_children[TU_MAX_CHILDREN];

/*
 * fork() for a test.  The child gets an alarm so that it cannot outlive a
 * stuck test, and must leave with _exit() (never return into Check).
 */
static inline pid_t tu_fork(unsigned int child_seconds)
{
	pid_t parent = getpid(), pid;
	int i;

	fflush(NULL);
	fork_quiet();
	pid = fork();
	if (pid == 0) {
		/* Dies with the test process, even one killed by a failure. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		alarm(child_seconds);
		return 0;
	}
	if (pid > 0)
		for (i = 0; i < TU_MAX_CHILDREN; i++)
			if (!tu_children[i]) {
				tu_children[i] = pid;
				break;
			}
	return pid;
}

static inline void tu_forget_child(pid_t pid)
{
	int i;

	for (i = 0; i < TU_MAX_CHILDREN; i++)
		if (tu_children[i] == pid)
			tu_children[i] = 0;
}

/*
 * Waits up to @ms for child @pid; kills it (by pid) if it is still there.
 * Returns its wait status, or -1 when it had to be killed.
 */
static inline int tu_wait_child(pid_t pid, int ms)
{
	struct timespec tick = { 0, 5 * 1000 * 1000 };
	int status, waited = 0;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			tu_forget_child(pid);
			return status;
		}
		if (r < 0 && errno != EINTR) {
			tu_forget_child(pid);
			return -1;
		}
		if (waited >= ms)
			break;
		nanosleep(&tick, NULL);
		waited += 5;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	tu_forget_child(pid);
	return -1;
}

/* SIGKILLs child @pid and reaps it. */
static inline void tu_kill_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	tu_forget_child(pid);
}

/* For teardown: no child of a failed test survives it. */
static inline void tu_kill_children(void)
{
	int i;

	for (i = 0; i < TU_MAX_CHILDREN; i++)
		if (tu_children[i])
			tu_kill_child(tu_children[i]);
}

/* Exit status of a child that exited normally, else -1. */
static inline int tu_exit_code(int status)
{
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The common fixture of suites that open devices: a clean environment, a
 * private runtime directory, HOME and XDG_CONFIG_HOME pointing at an empty
 * directory (no user configuration is ever read).
 */
struct tu_sandbox {
	char *dir;		/* the temp dir; everything below is removed */
	char *rundir;		/* URXE_RUNDIR */
	char *userdir;		/* the user's directory in it (urxe-v2-<euid>) */
	char *home;		/* HOME and XDG_CONFIG_HOME */
};

static inline int tu_sandbox_init(struct tu_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	tu_env_save_clear();
	sb->dir = tu_mkdtemp();
	if (!sb->dir)
		return -errno;
	sb->rundir = tu_path(sb->dir, "run");
	{
		char name[32];

		snprintf(name, sizeof(name), "urxe-v2-%u",
			 (unsigned int)geteuid());
		sb->userdir = sb->rundir ? tu_path(sb->rundir, name) : NULL;
	}
	sb->home = tu_path(sb->dir, "home");
	if (!sb->rundir || !sb->userdir || !sb->home ||
	    mkdir(sb->home, 0700))
		return -ENOMEM;
	setenv("URXE_RUNDIR", sb->rundir, 1);
	setenv("HOME", sb->home, 1);
	setenv("XDG_CONFIG_HOME", sb->home, 1);
	return 0;
}

static inline void tu_sandbox_fini(struct tu_sandbox *sb)
{
	tu_kill_children();
	tu_rmtree(sb->dir);
	free(sb->dir);
	free(sb->rundir);
	free(sb->userdir);
	free(sb->home);
	memset(sb, 0, sizeof(*sb));
	tu_env_restore();
}

/*
 * A test case of @s with a checked fixture (either may be NULL); the
 * suites' registration functions are lists of these and their tests.
 */
static inline TCase *tu_tcase(Suite *s, const char *name,
			      void (*setup)(void), void (*teardown)(void))
{
	TCase *tc = tcase_create(name);

	if (setup || teardown)
		tcase_add_checked_fixture(tc, setup, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

/*
 * Runs @s with every temporary directory below one root that is removed
 * at the end; the exit status for main().
 */
static inline int tu_run(Suite *s)
{
	char root[] = "/tmp/urxe-unit-XXXXXX";
	SRunner *sr;
	int failed;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	tu_root = root;
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rmtree(root);
	tu_root = NULL;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
