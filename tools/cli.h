/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The urxe CLI's commands that live in files of their own.  Each takes the
 * arguments after its name and returns the exit status (0, 1 failure,
 * 2 usage).
 */
#ifndef URXE_TOOLS_CLI_H
#define URXE_TOOLS_CLI_H

#include <stdbool.h>

/* stats.c: urxe stats [--qp] [--all] [NAME] */
int urxe_cli_stats(int argc, char **argv);

/*
 * devnode.c: gives the process /dev/infiniband/uverbs0 .. uverbs<ndev - 1>
 * (in a user and mount namespace of its own, unless they exist) before
 * urxe run execs the program; 0, or a negative errno once explained.
 */
int urxe_cli_devnode_enter(unsigned int ndev);

/*
 * check.c: the frame validator, urxe-validate's and `urxe trace --check`'s
 * [-v] [-l] [-o] FILE... (@prog names the command in its usage line).
 */
int urxe_cli_check(const char *prog, int argc, char **argv);

/* trace.c: urxe trace [OPTIONS] FILE... */
int urxe_cli_trace(int argc, char **argv);

/*
 * trace.c: draws the captures URXE_PCAP left in directory @dir (those
 * named trace-*.pcapng) as text on stderr under @title, for
 * `urxe run --trace`; 0, or
 * 1 when nothing could be read (said on stderr).
 */
int urxe_cli_trace_dir(const char *dir, const char *title);

/*
 * trace_run.c: urxe run --trace: runs @argv (in its device-node namespace
 * with @dev_node, @ndev nodes) with URXE_PCAP set to files of a private
 * temporary directory, waits for it, draws what it captured on stderr
 * and removes the files; the program's exit status (128 + signal).
 */
int urxe_cli_trace_run(char **argv, bool dev_node, unsigned int ndev);

#endif
