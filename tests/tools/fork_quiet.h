// SPDX-License-Identifier: BSD-2-Clause
/*
 * fork_quiet(): call before fork() in a test whose process runs other
 * threads (an engine).  A no-op but under ASan.
 */
#ifndef URXE_TESTS_FORK_QUIET_H
#define URXE_TESTS_FORK_QUIET_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
/*
 * GCC 12's ASan allocator takes no lock around fork(): a child forked
 * while another thread is inside malloc() waits for ever on that lock at
 * its first malloc() (glibc's own malloc is fork-safe; the library's
 * locks are reset in the child, core/fork.c).  So under ASan, fork only
 * once every other thread sleeps in a system call that waits for events:
 * the engine, idle after traffic, does.  Gives up after 2 s.
 */
static inline void fork_quiet(void)
{
	static const long waits[] = { 7, 23, 35, 202, 230, 232, 270, 271,
				      281, 441 };	/* x86-64 numbers */
	char path[300], buf[64];
	int tries, busy;

	for (tries = 0; tries < 2000; tries++) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;

		if (!d)
			return;
		busy = 0;
		while ((e = readdir(d))) {
			long nr = -1;
			size_t k;
			FILE *f;

			if (e->d_name[0] == '.' || atol(e->d_name) == gettid())
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/syscall",
				 e->d_name);
			f = fopen(path, "r");
			if (f && fgets(buf, sizeof(buf), f))
				nr = atol(buf);
			if (f)
				fclose(f);
			for (k = 0; k < sizeof(waits) / sizeof(waits[0]) &&
				    waits[k] != nr; k++)
				;
			busy += k == sizeof(waits) / sizeof(waits[0]);
		}
		closedir(d);
		if (!busy)
			return;
		usleep(1000);
	}
}
#else
static inline void fork_quiet(void)
{
}
#endif

#endif
