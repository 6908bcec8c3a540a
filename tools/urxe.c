// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe: the command-line tool.
 *   urxe dev show [NAME]
 *   urxe dev add NAME netdev IF [backend udp|packet]
 *   urxe dev del NAME
 *   urxe stats [--qp] [--all] [--json] [NAME]
 *   urxe doctor
 *   urxe run [--dev-node] [--trace] [--] PROGRAM [ARGS...]
 *   urxe trace [OPTIONS] FILE...   (tools/trace.c)
 *   urxe --version
 * Devices are configured like `rdma link add`; interfaces resolve in the
 * network namespace of the program that opens the device.  Exit status:
 * 0 done, 1 failed, 2 usage error (the usage then goes to stderr).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/engine.h>

#include "cli.h"
#include "core.h"
#include "urxe_version.h"

static const char usage[] =
	"usage: urxe dev show [NAME]\n"
	"       urxe dev add NAME netdev IF [backend udp|packet]\n"
	"       urxe dev del NAME\n"
	"       urxe stats [--qp] [--all] [--json] [NAME]\n"
	"       urxe doctor\n"
	"       urxe run [--dev-node] [--trace] [--] PROGRAM [ARGS...]\n"
	"       urxe trace [--svg|--html] [--qp QPN] [--from T] [--to T] [-n N] FILE...\n"
	"       urxe trace --check [-v] [-l] [-o] FILE...\n"
	"       urxe --version\n"
	"       urxe --help\n"
	"\n"
	"Devices come from URXE_DEVICES, else the file URXE_CONFIG names, else\n"
	"$XDG_CONFIG_HOME/urxe/devices.conf (~/.config/urxe/devices.conf), else\n"
	"/etc/urxe/devices.conf; with none, rxe0 on lo.  `dev add`/`dev del` edit\n"
	"URXE_CONFIG or the user's file.  `dev show` also lists the device\n"
	"instances open on this host (yours with pid, program and GID).  `stats`\n"
	"sums the counters of your device instances per device (--qp: per\n"
	"instance and QP too; --all: exited instances as well; --json: as JSON).\n"
	"`doctor` checks what urxe depends on.  `run` starts PROGRAM with this\n"
	"build's libibverbs.so.1 first on LD_LIBRARY_PATH (--dev-node: and with\n"
	"/dev/infiniband/uverbsN nodes, which UCX looks for, in a user and mount\n"
	"namespace of its own; --trace: and draws its packets when it exits).\n"
	"`trace` draws a capture (URXE_PCAP, tcpdump, tshark) as a ladder diagram;\n"
	"--check validates every RoCEv2 frame in it.\n";

int urxe_cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("urxe: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

static int fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "urxe: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 1;
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
	unsigned int had;
	int i, rc;

	for (i = 0; i < argc; i++) {
		strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
		strcat(line, " ");
	}
	rc = urxe_config_parse_line(line, &d, err, sizeof(err));
	if (rc)
		return urxe_cli_usage_error("dev add: %s",
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
	rc = urxe_config_file_add(path, &d, &had);
	if (rc) {
		fprintf(stderr, "urxe: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	printf("added %s (netdev %s, backend %s) to %s\n", d.name, d.netdev,
	       urxe_backend_names[d.backend], path);
	/* The built-in rxe0 exists only while no file lists devices. */
	if (!had && strcmp(d.name, "rxe0") && !getenv("URXE_DEVICES"))
		fprintf(stderr, "urxe: warning: %s lists devices now, so the built-in rxe0 (on lo) no longer exists; to keep it: urxe dev add rxe0 netdev lo\n",
			path);
	return 0;
}

static int cmd_dev_del(int argc, char **argv)
{
	char path[PATH_MAX];
	unsigned int left;
	int rc;

	if (argc != 1)
		return urxe_cli_usage_error("dev del takes one device name");
	if (urxe_config_edit_path(path, sizeof(path)))
		return fail("%s", "no configuration file: set URXE_CONFIG or HOME");
	if (getenv("URXE_DEVICES"))
		fprintf(stderr, "urxe: warning: URXE_DEVICES is set and overrides %s\n",
			path);
	rc = urxe_config_file_del(path, argv[0], &left);
	if (rc == -ENOENT)
		return fail("no device %s in the configuration file (see `urxe dev show`)",
			    argv[0]);
	if (rc) {
		fprintf(stderr, "urxe: cannot edit %s: %s\n", path, strerror(-rc));
		return 1;
	}
	printf("removed %s from %s\n", argv[0], path);
	if (!left && !getenv("URXE_DEVICES"))
		printf("%s lists no device now: the built-in rxe0 on lo is back\n",
		       path);
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
int urxe_cli_lib_dir(char *buf, size_t len)
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
	if (argc < 1)
		return urxe_cli_usage_error("run needs a program to run");
	rc = urxe_cli_lib_dir(dir, sizeof(dir));
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

static int cmd_version(int argc, char **argv)
{
	(void)argv;
	if (argc)
		return urxe_cli_usage_error("--version takes no arguments");
	printf("urxe %s (%s)\n", URXE_VERSION, URXE_COMMIT);
	return 0;
}

/* `urxe CMD ... --help` (before any "--"): the usage, a success. */
static bool wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

static int cmd_dev(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "show"))
		return urxe_cli_dev_show(argc > 1 ? argc - 1 : 0, argv + 1);
	if (!strcmp(argv[0], "add"))
		return cmd_dev_add(argc - 1, argv + 1);
	if (!strcmp(argv[0], "del"))
		return cmd_dev_del(argc - 1, argv + 1);
	return urxe_cli_usage_error("unknown dev command '%s'", argv[0]);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "dev", cmd_dev }, { "stats", urxe_cli_stats },
		{ "doctor", urxe_cli_doctor }, { "run", cmd_run },
		{ "trace", urxe_cli_trace },
		{ "--version", cmd_version }, { "-V", cmd_version },
		{ "version", cmd_version },
	};
	unsigned int i;

	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help") ||
	    (strcmp(argv[1], "run") && wants_help(argc - 2, argv + 2)) ||
	    (!strcmp(argv[1], "run") && argc > 2 &&
	     (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))) {
		fputs(usage, stdout);
		return 0;
	}
	for (i = 0; i < URXE_ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 2, argv + 2);
	return urxe_cli_usage_error("unknown command '%s'", argv[1]);
}
