/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The urxe CLI's commands that live in files of their own.  Each takes the
 * arguments after its name and returns the exit status (0, 1 failure,
 * 2 usage).
 */
#ifndef URXE_TOOLS_CLI_H
#define URXE_TOOLS_CLI_H

/* stats.c: urxe stats [--qp] [--all] [NAME] */
int urxe_cli_stats(int argc, char **argv);

/*
 * devnode.c: gives the process /dev/infiniband/uverbs0 .. uverbs<ndev - 1>
 * (in a user and mount namespace of its own, unless they exist) before
 * urxe run execs the program; 0, or a negative errno once explained.
 */
int urxe_cli_devnode_enter(unsigned int ndev);

#endif
