// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe: the command-line tool.
 *   urxe dev show [NAME]
 *   urxe dev add NAME netdev IF [backend udp|packet]
 *   urxe dev del NAME
 *   urxe stats [--qp] [--all] [NAME]
 *   urxe run [--] PROGRAM [ARGS...]
 * Devices are configured like `rdma link add`; interfaces resolve in the
 * network namespace of the program that opens the device.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
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
	"       urxe run [--] PROGRAM [ARGS...]\n"
	"       urxe --help\n"
	"\n"
	"Devices come from URXE_DEVICES, else the file URXE_CONFIG names, else\n"
	"$XDG_CONFIG_HOME/urxe/devices.conf (~/.config/urxe/devices.conf), else\n"
	"/etc/urxe/devices.conf; with none, rxe0 on lo.  `dev add`/`dev del` edit\n"
	"URXE_CONFIG or the user's file.  `stats` sums the counters of the device\n"
	"instances open on this host per device (--qp: per instance and QP too;\n"
	"--all: exited instances as well).  `run` starts PROGRAM with this build's\n"
	"libibverbs.so.1 first on LD_LIBRARY_PATH.\n";

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
		printf("\tGID[1]: the same address again (RoCE v2; -g 1 works too)\n");
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

/* build/bin/urxe -> build/lib */
static int lib_dir(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	if ((size_t)snprintf(buf, len, "%s/../lib", dirname(exe)) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32], *old, *val;
	size_t n;

	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc < 1)
		return fail("%s", "usage: urxe run [--] PROGRAM [ARGS...]");
	if (lib_dir(dir, sizeof(dir)))
		return fail("%s", "cannot locate this build's lib directory");
	snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", dir);
	if (access(lib, R_OK))
		return fail("%s is not readable by this user; the program would load the system libibverbs instead (make the build directory readable)",
			    lib);
	old = getenv("LD_LIBRARY_PATH");
	n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	val = malloc(n);
	if (!val)
		return fail("%s", "out of memory");
	snprintf(val, n, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
	setenv("LD_LIBRARY_PATH", val, 1);
	free(val);
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
