// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe run --trace: the program runs as a child (not exec'd: the trace is
 * drawn after it exits) with URXE_PCAP=DIR/trace-%p.pcapng, DIR a private
 * temporary directory (0700), so that each process it starts writes a
 * capture of its own; they are merged, drawn on stderr (stdout stays the
 * program's) and removed.  While the program runs, urxe ignores SIGINT
 * and SIGQUIT as system() does: ^C stops the program, and the trace of
 * what it did is still drawn.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static void remove_dir(const char *dir)
{
	char path[4352];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(dir);
}

static int wait_child(pid_t pid)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	int st = 0;

	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

int urxe_cli_trace_run(char **argv, bool dev_node, unsigned int ndev)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], spec[4200];
	pid_t pid;
	int rc;

	snprintf(dir, sizeof(dir), "%s/urxe-trace.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "urxe: --trace: cannot make a directory in %s: %s\n",
			tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return 1;
	}
	snprintf(spec, sizeof(spec), "%s/trace-%%p.pcapng", dir);
	setenv("URXE_PCAP", spec, 1);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "urxe: cannot fork: %s\n", strerror(errno));
		remove_dir(dir);
		return 1;
	}
	if (!pid) {
		if (dev_node && urxe_cli_devnode_enter(ndev))
			_exit(1);
		execvp(argv[0], argv);
		fprintf(stderr, "urxe: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	rc = wait_child(pid);
	urxe_cli_trace_dir(dir, argv[0]);
	remove_dir(dir);
	return rc;
}
