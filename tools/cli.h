/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The urxe CLI's commands that live in files of their own, and what they
 * share.  Each command takes the arguments after its name and returns the
 * exit status: 0, 1 failure, 2 usage error.
 */
#ifndef URXE_TOOLS_CLI_H
#define URXE_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/host.h>
#include <urxe/netdev.h>

/* stats.c: urxe stats [--qp] [--all] [--json] [NAME] */
int urxe_cli_stats(int argc, char **argv);
/* devshow.c: urxe dev show [NAME] */
int urxe_cli_dev_show(int argc, char **argv);
/* doctor.c: urxe doctor */
int urxe_cli_doctor(int argc, char **argv);

/* urxe.c: "urxe: MESSAGE" and the usage on stderr; returns 2. */
int urxe_cli_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/*
 * urxe.c: the directory of the libibverbs.so.1 `urxe run` puts first (the
 * installed private one, else a build tree's lib/): 0; -ENOENT with @buf
 * naming the directories looked in; -EACCES with @buf naming the library
 * this user cannot read; another negative errno.
 */
int urxe_cli_lib_dir(char *buf, size_t len);

/*
 * devshow.c: the UDP sockets bound to port 4791 in this network namespace,
 * as /proc/net/udp and udp6 show them to anyone (and `ss -ulne`): address,
 * owner's uid and socket inode, never a process.  IPv4 addresses are
 * stored IPv4-mapped.  Returns how many (up to @max), or a negative errno.
 */
struct urxe_cli_sock {
	uint8_t addr[16];
	bool v6;		/* from udp6 (an IPv6 or dual-stack socket) */
	unsigned int uid;
	unsigned long inode;
};
int urxe_cli_udp4791(struct urxe_cli_sock *out, int max);
/* "a.b.c.d" or an IPv6 text form; the GID text ("::ffff:a.b.c.d"). */
void urxe_cli_sock_addr(const struct urxe_cli_sock *s, char *buf, size_t len);
void urxe_cli_sock_gid(const struct urxe_cli_sock *s, char *buf, size_t len);

/* stats.c, stats_json.c: one instance's record, read for `urxe stats`. */
struct urxe_cli_inst {
	struct urxe_stats_snap s;
	bool open;		/* the slot is held now */
};
const char *urxe_cli_qp_type(unsigned int type);
const char *urxe_cli_qp_state(unsigned int state);
/* Prints @v[0..n) (sorted by device, then slot) as JSON: docs/urxe.md. */
void urxe_cli_stats_json(const struct urxe_cli_inst *v, int n, bool qp,
			 bool all, const char *rundir, int nocnt);

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
