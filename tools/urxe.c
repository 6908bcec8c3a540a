// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe: the command-line tool.
 *   urxe dev show [NAME]
 *   urxe dev add NAME netdev IF [backend udp|packet]
 *   urxe dev del NAME
 *   urxe stats [--qp] [--all] [NAME]
 *   urxe run [--dev-node] [--trace] [--] PROGRAM [ARGS...]
 *   urxe trace [OPTIONS] FILE...   (tools/trace.c)
 * Devices are configured like `rdma link add`; interfaces resolve in the
 * network namespace of the program that opens the device.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/engine.h>

#include "cli.h"
#include "core.h"

static const char usage[] =
	"usage: urxe dev show [NAME]\n"
	"       urxe dev add NAME netdev IF [backend udp|packet]\n"
	"       urxe dev del NAME\n"
	"       urxe stats [--qp] [--all] [NAME]\n"
	"       urxe run [--dev-node] [--trace] [--] PROGRAM [ARGS...]\n"
	"       urxe trace [--svg|--html] [--qp QPN] [--from T] [--to T] [-n N] FILE...\n"
	"       urxe trace --check [-v] [-l] [-o] FILE...\n"
	"       urxe --help\n"
	"\n"
	"Devices come from URXE_DEVICES, else the file URXE_CONFIG names, else\n"
	"$XDG_CONFIG_HOME/urxe/devices.conf (~/.config/urxe/devices.conf), else\n"
	"/etc/urxe/devices.conf; with none, rxe0 on lo.  `dev add`/`dev del` edit\n"
	"URXE_CONFIG or the user's file.  `stats` sums the counters of the device\n"
	"instances open on this host per device (--qp: per instance and QP too;\n"
	"--all: exited instances as well).  `run` starts PROGRAM with this build's\n"
	"libibverbs.so.1 first on LD_LIBRARY_PATH (--dev-node: and with\n"
	"/dev/infiniband/uverbsN nodes, which UCX looks for, in a user and mount\n"
	"namespace of its own; --trace: and draws its packets when it exits).\n"
	"`trace` draws a capture (URXE_PCAP, tcpdump, tshark) as a ladder diagram;\n"
	"--check validates every RoCEv2 frame in it.\n";

static int fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "urxe: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 1;
}

static void show_gids(const struct urxe_iface *ifc)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	char s[INET6_ADDRSTRLEN];
	unsigned int i, n;

	if (ifc->loopback) {
		printf("\tGID[0]: ::ffff:127.117.H.L, one address per process (slot)\n");
		return;
	}
	n = urxe_gid_table_build(ifc, 0, tbl, URXE_GID_TBL_LEN);
	for (i = 0; i < n; i++)
		printf("\tGID[%u]: %s (RoCE v2)\n", i,
		       inet_ntop(AF_INET6, tbl[i].raw, s, sizeof(s)));
}

static void show_dev(const struct urxe_dev_desc *d)
{
	struct urxe_iface ifc;
	unsigned int mtu;
	int rc;

	printf("%s: netdev %s backend %s\n", d->name, d->netdev,
	       urxe_backend_names[d->backend]);
	rc = urxe_iface_query(d->netdev, &ifc);
	if (rc) {
		printf("\tinterface %s: %s in this network namespace: not listed\n",
		       d->netdev, rc == -ENODEV ? "absent" : strerror(-rc));
		return;
	}
	mtu = urxe_mtu_for_link(ifc.mtu);
	printf("\tport: %s, link MTU %u, active MTU %u\n",
	       ifc.up && ifc.running ? "ACTIVE" : "DOWN", ifc.mtu, mtu ? mtu : 256);
	show_gids(&ifc);
}

static int slots_in_use(const char *rundir)
{
	unsigned int k;
	int fd, n = 0, rc;

	fd = urxe_rundir_open(rundir, "slots");
	if (fd < 0)
		return fd;
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		rc = urxe_slot_busy_fd(fd, k);
		if (rc < 0) {
			n = rc;
			break;
		}
		n += rc;
	}
	close(fd);
	return n;
}

static int cmd_dev_show(int argc, char **argv)
{
	struct urxe_config cfg;
	unsigned int i;
	int shown = 0, n;

	urxe_config_load(&cfg);
	printf("# devices from %s\n", cfg.source);
	for (i = 0; i < cfg.ndevs; i++) {
		if (argc > 0 && strcmp(argv[0], cfg.devs[i].name))
			continue;
		show_dev(&cfg.devs[i]);
		shown++;
	}
	if (argc > 0 && !shown)
		return fail("no device %s (see `urxe dev show`)", argv[0]);
	n = slots_in_use(cfg.rundir);
	if (n >= 0)
		printf("# %d device instance(s) open on this host by you (%s)\n",
		       n, cfg.rundir);
	return 0;
}

static int load_edit(char *path, size_t len, struct urxe_config *cfg)
{
	int rc;

	if (urxe_config_edit_path(path, len))
		return fail("%s", "no configuration file: set URXE_CONFIG or HOME");
	if (getenv("URXE_DEVICES"))
		fprintf(stderr, "urxe: warning: URXE_DEVICES is set and overrides %s\n",
			path);
	rc = urxe_config_load_file(path, cfg);
	if (rc && rc != -ENOENT && rc != -EINVAL)
		return fail("cannot read %s", path);
	return 0;
}

static int cmd_dev_add(int argc, char **argv)
{
	char path[PATH_MAX], line[512] = "", err[160];
	struct urxe_config cfg;
	struct urxe_dev_desc d;
	struct urxe_iface ifc;
	int i, rc;

	for (i = 0; i < argc; i++) {
		strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
		strcat(line, " ");
	}
	rc = urxe_config_parse_line(line, &d, err, sizeof(err));
	if (rc)
		return fail("dev add: %s\n(usage: urxe dev add NAME netdev IF [backend udp|packet])",
			    rc == 1 ? "a device name is needed" : err);
	if (load_edit(path, sizeof(path), &cfg))
		return 1;
	if (urxe_config_find(&cfg, d.name) >= 0)
		return fail("device %s exists; remove it first with `urxe dev del`",
			    d.name);
	if (cfg.ndevs == URXE_CONFIG_MAX_DEVS)
		return fail("%s", "too many devices configured");
	rc = urxe_iface_query(d.netdev, &ifc);
	if (rc)
		fprintf(stderr, "urxe: warning: interface %s is not in this network namespace; the device appears where it is\n",
			d.netdev);
	cfg.devs[cfg.ndevs++] = d;
	rc = urxe_config_write(path, &cfg);
	if (rc) {
		fprintf(stderr, "urxe: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	printf("added %s (netdev %s, backend %s) to %s\n", d.name, d.netdev,
	       urxe_backend_names[d.backend], path);
	return 0;
}

static int cmd_dev_del(int argc, char **argv)
{
	char path[PATH_MAX];
	struct urxe_config cfg;
	int i, rc;

	if (argc != 1)
		return fail("%s", "usage: urxe dev del NAME");
	if (load_edit(path, sizeof(path), &cfg))
		return 1;
	i = urxe_config_find(&cfg, argv[0]);
	if (i < 0)
		return fail("no device %s in the configuration file (see `urxe dev show`)",
			    argv[0]);
	memmove(&cfg.devs[i], &cfg.devs[i + 1],
		(cfg.ndevs - (unsigned int)i - 1) * sizeof(cfg.devs[0]));
	cfg.ndevs--;
	rc = urxe_config_write(path, &cfg);
	if (rc) {
		fprintf(stderr, "urxe: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	printf("removed %s from %s\n", argv[0], path);
	return 0;
}

/* How many devices the program will find: one uverbsN node each. */
static unsigned int configured_devs(void)
{
	struct urxe_config cfg;

	urxe_config_load(&cfg);
	return cfg.ndevs;
}

#ifndef URXE_LIBDIR_FROM_BIN
#define URXE_LIBDIR_FROM_BIN "../lib/urxe"
#endif

/*
 * @dir/@rel with the leading "../" of @rel taken off @dir: @dir is the
 * kernel's name of the executable's directory (no symlinks, no dots), so
 * this is the directory's real name, the one a message should show.
 */
static int join_up(char *buf, size_t len, const char *dir, const char *rel)
{
	char d[PATH_MAX];
	char *slash;

	snprintf(d, sizeof(d), "%s", dir);
	while (!strncmp(rel, "../", 3) && (slash = strrchr(d, '/'))) {
		*(slash == d ? slash + 1 : slash) = '\0';
		rel += 3;
	}
	if ((size_t)snprintf(buf, len, "%s%s%s", d,
			     d[strlen(d) - 1] == '/' ? "" : "/", rel) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The directory holding the libibverbs.so.1 `urxe run` puts first: the
 * installed private one (bin/URXE_LIBDIR_FROM_BIN, e.g. lib/urxe), else
 * the build tree's (build/bin/urxe -> build/lib).  The private one is
 * tried first: an installed bin/../lib may hold a system library of the
 * same name, while a build tree never has lib/urxe.  Returns 0, or
 * -ENOENT with @buf listing the directories looked in, or another
 * negative errno (-EACCES: not readable by this user) with @buf naming
 * the last library that could not be read (behind an unsearchable
 * directory both candidates fail so: the build tree's is then named).
 */
static int lib_dir(char *buf, size_t len)
{
	static const char *const rel[] = { URXE_LIBDIR_FROM_BIN, "../lib" };
	char exe[PATH_MAX], cand[2][PATH_MAX], lib[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *bin;
	unsigned int i;
	int rc = 0;

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	bin = dirname(exe);
	for (i = 0; i < 2; i++) {
		if (join_up(cand[i], sizeof(cand[i]), bin, rel[i]) ||
		    (size_t)snprintf(lib, sizeof(lib), "%s/libibverbs.so.1",
				     cand[i]) >= sizeof(lib))
			return -ENAMETOOLONG;
		if (!access(lib, R_OK))
			return snprintf(buf, len, "%s", cand[i]) >= (int)len ?
				-ENAMETOOLONG : 0;
		if (errno != ENOENT && errno != ENOTDIR) {
			rc = -errno;	/* another candidate may still do */
			snprintf(buf, len, "%s", lib);
		}
	}
	if (!rc)
		snprintf(buf, len, "%s and %s", cand[0], cand[1]);
	return rc ? rc : -ENOENT;
}

static int cmd_run(int argc, char **argv)
{
	char dir[2 * PATH_MAX + 8], *old, *val;
	bool dev_node = false, trace = false;
	size_t n;
	int rc;

	for (; argc > 0; argc--, argv++) {
		if (!strcmp(argv[0], "--dev-node"))
			dev_node = true;
		else if (!strcmp(argv[0], "--trace"))
			trace = true;
		else
			break;
	}
	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc < 1) {
		fputs("usage: urxe run [--dev-node] [--trace] [--] PROGRAM [ARGS...]\n", stderr);
		return 2;
	}
	rc = lib_dir(dir, sizeof(dir));
	if (rc == -ENOENT)
		return fail("no libibverbs.so.1 beside this urxe: looked in %s; reinstall urxe, or build it (a copied urxe binary needs the libraries too)",
			    dir);
	if (rc == -EACCES)
		return fail("%s is not readable by this user; the program would load the system libibverbs instead (make the build or install directory readable)",
			    dir);
	if (rc)
		return fail("cannot locate urxe's libibverbs.so.1: %s", strerror(-rc));
	old = getenv("LD_LIBRARY_PATH");
	n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	val = malloc(n);
	if (!val)
		return fail("%s", "out of memory");
	snprintf(val, n, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
	setenv("LD_LIBRARY_PATH", val, 1);
	free(val);
	if (trace)
		return urxe_cli_trace_run(argv, dev_node,
					  dev_node ? configured_devs() : 0);
	if (dev_node && urxe_cli_devnode_enter(configured_devs()))
		return 1;
	execvp(argv[0], argv);
	fprintf(stderr, "urxe: cannot run %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(argv[1], "trace"))
		return urxe_cli_trace(argc - 2, argv + 2);
	if (!strcmp(argv[1], "stats"))
		return urxe_cli_stats(argc - 2, argv + 2);
	if (!strcmp(argv[1], "dev")) {
		if (argc < 3 || !strcmp(argv[2], "show"))
			return cmd_dev_show(argc > 3 ? argc - 3 : 0, argv + 3);
		if (!strcmp(argv[2], "add"))
			return cmd_dev_add(argc - 3, argv + 3);
		if (!strcmp(argv[2], "del"))
			return cmd_dev_del(argc - 3, argv + 3);
		fprintf(stderr, "urxe: unknown dev command '%s'\n%s", argv[2], usage);
		return 2;
	}
	fprintf(stderr, "urxe: unknown command '%s'\n%s", argv[1], usage);
	return 2;
}
