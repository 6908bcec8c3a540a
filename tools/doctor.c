// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe doctor: checks what urxe depends on, one line each — "OK", "WARN"
 * or "FAIL", what was found and, when not OK, what to do.  Exit status 0
 * when nothing FAILs, 1 otherwise.  It only looks: it creates nothing
 * (the runtime directory included) and binds nothing.
 *
 *   the library   which libibverbs.so.1 a program started by `urxe run`
 *                 loads and which one a plain program loads (the dynamic
 *                 loader's order: LD_LIBRARY_PATH, ld.so.cache, /lib,
 *                 /usr/lib);
 *   the runtime directory, as host/rundir.c will judge it;
 *   the configuration, each bad line with its number;
 *   the interfaces of the configured devices (lo down is a FAIL), and who
 *                 holds UDP 4791 on them (uid and socket inode: what
 *                 /proc/net/udp shows anyone);
 *   socket buffer limits, and CAP_NET_RAW for packet-backend devices.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/log.h>

#include "cli.h"
#include "core.h"

#define MAX_SOCKS 2048
#define CAP_NET_RAW_BIT 13

static int nfail;

static void say(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const char *level, const char *fmt, ...)
{
	va_list ap;

	nfail += !strcmp(level, "FAIL");
	printf("%-4s  ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* --- the library ---------------------------------------------------------- */

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* @dir/libibverbs.so.1 into @out if this user can load it. */
static bool in_dir(const char *dir, char *out, size_t len)
{
	snprintf(out, len, "%s/libibverbs.so.1", *dir ? dir : ".");
	return !access(out, R_OK);
}

/* The ld.so.cache entry of @soname for this program's ABI (libc's tag). */
static bool from_cache(const char *soname, char *out, size_t len)
{
	static const char *const tools[] = { "/sbin/ldconfig",
					     "/usr/sbin/ldconfig" };
	char line[PATH_MAX + 128], tag[64] = "", cmd[64];
	bool found = false;
	unsigned int i;
	FILE *f = NULL;

	for (i = 0; i < URXE_ARRAY_SIZE(tools) && !f; i++)
		if (!access(tools[i], X_OK)) {
			snprintf(cmd, sizeof(cmd), "%s -p 2>/dev/null", tools[i]);
			f = popen(cmd, "re");
		}
	if (!f)
		return false;
	/* "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6" */
	while (fgets(line, sizeof(line), f)) {
		char name[128], t[64], path[PATH_MAX];

		if (sscanf(line, " %127s (%63[^)]) => %4095s", name, t, path) != 3)
			continue;
		if (!strcmp(name, "libc.so.6") && !tag[0])
			snprintf(tag, sizeof(tag), "%s", t);
		if (!strcmp(name, soname) && !found && (!tag[0] || !strcmp(t, tag))) {
			snprintf(out, len, "%s", path);
			found = true;
		}
	}
	pclose(f);
	return found;
}

/* Where a plain program (no RPATH, not setuid) finds libibverbs.so.1. */
static const char *plain_lookup(char *out, size_t len)
{
	static const char *const dirs[] = { "/lib", "/usr/lib" };
	const char *llp = getenv("LD_LIBRARY_PATH");
	char buf[PATH_MAX * 4], *save = NULL, *d;
	unsigned int i;

	if (llp) {
		snprintf(buf, sizeof(buf), "%s", llp);
		for (d = strtok_r(buf, ":;", &save); d;
		     d = strtok_r(NULL, ":;", &save))
			if (in_dir(d, out, len))
				return "LD_LIBRARY_PATH";
	}
	if (from_cache("libibverbs.so.1", out, len))
		return "ld.so.cache";
	for (i = 0; i < URXE_ARRAY_SIZE(dirs); i++)
		if (in_dir(dirs[i], out, len))
			return dirs[i];
	return NULL;
}

static void check_library(void)
{
	char dir[2 * PATH_MAX + 8], ours[2 * PATH_MAX + 40], real[2 * PATH_MAX + 40];
	char plain[PATH_MAX];
	const char *how;
	bool ok;

	int rc = urxe_cli_lib_dir(dir, sizeof(dir));

	if (rc == -ENOENT) {
		say("FAIL", "library: no libibverbs.so.1 beside this urxe (looked in %s): reinstall urxe, or build it",
		    dir);
		return;
	}
	if (rc == -EACCES) {
		say("FAIL", "library: %s is not readable by this user: `urxe run` refuses, and programs would load the system libibverbs; make the build or install directory readable (chmod -R a+rX)",
		    dir);
		return;
	}
	if (rc) {
		say("FAIL", "library: cannot locate urxe's libibverbs.so.1: %s",
		    strerror(-rc));
		return;
	}
	if (realpath(dir, real) && strlen(real) < sizeof(dir))
		memcpy(dir, real, strlen(real) + 1);
	snprintf(ours, sizeof(ours), "%s/libibverbs.so.1", dir);
	ok = !access(ours, R_OK);
	if (!realpath(ours, real))
		snprintf(real, sizeof(real), "%s", ours);
	if (ok)
		say("OK", "library: programs started by `urxe run` load %s", real);
	else
		say("FAIL", "library: %s is not readable by this user (%s): `urxe run` refuses, and programs would load the system libibverbs; make the build directory readable (chmod -R a+rX)",
		    ours, strerror(errno));
	how = plain_lookup(plain, sizeof(plain));
	if (!how)
		say("WARN", "library: a plain program finds no libibverbs.so.1; start verbs programs with `urxe run`");
	else if (ok && same_file(plain, ours))
		say("OK", "library: a plain program loads urxe's too (%s, via %s)",
		    plain, how);
	else
		say("WARN", "library: a plain program loads %s (via %s), not urxe's: start verbs programs with `urxe run` or set LD_LIBRARY_PATH=%s",
		    plain, how, dir);
}

/* --- the runtime directory ------------------------------------------------- */

static void check_rundir(const char *base)
{
	char name[32], path[PATH_MAX];
	uid_t me = geteuid();
	struct stat st;

	if (stat(base, &st)) {
		say(errno == ENOENT ? "OK" : "FAIL",
		    "runtime directory: base %s: %s%s", base, strerror(errno),
		    errno == ENOENT ? " (made, yours and 0700, at first use)" :
				      "; set URXE_RUNDIR to a directory you can use");
		return;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid && st.st_uid != me) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		say("FAIL", "runtime directory: base %s (owner uid %u, mode %04o) must be a directory of root's or yours, sticky if others may write it: chmod +t it or set URXE_RUNDIR",
		    base, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		return;
	}
	urxe_rundir_user_name(name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", base, name);
	if (lstat(path, &st)) {
		say("OK", "runtime directory: %s does not exist yet (made, 0700, at first use); base %s owner uid %u mode %04o",
		    path, base, (unsigned int)st.st_uid, 0);
		return;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != me)
		say("FAIL", "runtime directory: %s (owner uid %u, %s) is not a directory of yours: another user made it; ask root to remove it, or set URXE_RUNDIR",
		    path, (unsigned int)st.st_uid,
		    S_ISLNK(st.st_mode) ? "a symbolic link" :
		    S_ISDIR(st.st_mode) ? "a directory" : "not a directory");
	else
		say((st.st_mode & 077) ? "WARN" : "OK",
		    "runtime directory: %s, owner uid %u (you), mode %04o%s", path,
		    (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777),
		    (st.st_mode & 077) ? " (urxe makes it 0700 again at next use)" : "");
}

/* --- the configuration ----------------------------------------------------- */

/* Each entry the loader would leave out: a FAIL line naming its line. */
static void doctor_report(void *ctx, const char *origin, int line,
			  const char *what)
{
	int *bad = ctx;

	if (line)
		say("FAIL", "configuration: %s:%d: %s: fix or remove the line",
		    origin, line, what);
	else
		say("FAIL", "configuration: %s: %s", origin, what);
	(*bad)++;
}

/* @text checked as the loader reads it; returns the entries it leaves out. */
static int check_text(const char *text, const char *origin)
{
	struct urxe_config *seen = calloc(1, sizeof(*seen));
	int bad = 0;

	if (seen)
		urxe_config_parse_report(text, origin, seen, doctor_report, &bad);
	free(seen);
	return bad;
}

static void check_config(const struct urxe_config *cfg)
{
	const char *env = getenv("URXE_DEVICES");
	char *text = NULL;
	int bad = 0;

	if (env && *env)
		bad = check_text(env, "URXE_DEVICES");
	else if (strcmp(cfg->source, "built-in default") &&
		 (text = urxe_config_read_text(cfg->source)))
		bad = check_text(text, cfg->source);
	free(text);
	if (!cfg->ndevs)
		say("FAIL", "configuration: %s lists no valid device: no devices exist (add one: urxe dev add rxe0 netdev lo)",
		    cfg->source);
	else if (!bad)
		say("OK", "configuration: %u device%s from %s", cfg->ndevs,
		    cfg->ndevs == 1 ? "" : "s", cfg->source);
}

/* --- interfaces and UDP port 4791 ------------------------------------------ */

static void addr_list(const struct urxe_iface *ifc, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	size_t at = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < ifc->naddrs && at < len; i++) {
		const struct urxe_ifaddr *x = &ifc->addrs[i];

		inet_ntop(x->family, x->family == AF_INET ? (const void *)&x->v4 :
			  (const void *)&x->v6, a, sizeof(a));
		at += (size_t)snprintf(buf + at, len - at, "%s%s/%u",
				       i ? " " : "", a, x->prefixlen);
	}
	if (!ifc->naddrs)
		snprintf(buf, len, "no addresses");
}

/* Does socket @s (bound to an address, or to any) take 4791 on @ifc? */
static bool sock_on(const struct urxe_cli_sock *s, const struct urxe_iface *ifc)
{
	static const uint8_t any6[16], any4[16] = { [10] = 0xff, [11] = 0xff };
	uint8_t a[16];
	unsigned int i;

	if (!memcmp(s->addr, any6, 16) || !memcmp(s->addr, any4, 16))
		return true;
	for (i = 0; i < ifc->naddrs; i++) {
		const struct urxe_ifaddr *x = &ifc->addrs[i];

		memset(a, 0, sizeof(a));
		if (x->family == AF_INET) {
			a[10] = a[11] = 0xff;
			memcpy(a + 12, &x->v4, 4);
		} else {
			memcpy(a, &x->v6, 16);
		}
		if (!memcmp(a, s->addr, 16))
			return true;
	}
	return false;
}

/* On lo: each instance its own 127.117.h.l; count whose they are. */
static void port_lo(const struct urxe_cli_sock *v, int n)
{
	unsigned int mine = 0, others = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (v[i].v6 || v[i].addr[12] != 127 || v[i].addr[13] != 117)
			continue;
		if (v[i].uid == geteuid())
			mine++;
		else
			others++;
	}
	say("OK", "UDP 4791 on lo: %u loopback address%s 127.117.x.x held by your instances, %u by other users' (each instance has its own; `urxe dev show` lists them)",
	    mine, mine == 1 ? "" : "es", others);
}

static void port_real(const struct urxe_iface *ifc,
		      const struct urxe_cli_sock *v, int n)
{
	char a[INET6_ADDRSTRLEN];
	int i, held = 0;

	for (i = 0; i < n; i++) {
		if (!sock_on(&v[i], ifc))
			continue;
		held++;
		urxe_cli_sock_addr(&v[i], a, sizeof(a));
		say("WARN", "UDP 4791 on %s: %s:4791 is held by uid %u%s (socket inode %lu): a udp-backend device there opens in one process at a time; the packet backend shares the interface",
		    ifc->name, a, v[i].uid, v[i].uid == geteuid() ? " (you)" : "",
		    v[i].inode);
	}
	if (!held)
		say("OK", "UDP 4791 on %s: free", ifc->name);
}

static void check_iface(const struct urxe_dev_desc *d,
			const struct urxe_cli_sock *v, int n)
{
	struct urxe_iface ifc;
	char addrs[512];
	int rc = urxe_iface_query(d->netdev, &ifc);

	if (rc) {
		say(rc == -ENODEV ? "WARN" : "FAIL", "interface %s (device %s): %s in this network namespace; the device is listed only where it exists",
		    d->netdev, d->name, rc == -ENODEV ? "absent" : strerror(-rc));
		return;
	}
	addr_list(&ifc, addrs, sizeof(addrs));
	if (ifc.up && ifc.running)
		say("OK", "interface %s (device %s): up, MTU %u, %s", ifc.name,
		    d->name, ifc.mtu, addrs);
	else
		say(ifc.loopback ? "FAIL" : "WARN", "interface %s (device %s): %s, %s: the port is DOWN; bring it up (ip link set %s up%s)",
		    ifc.name, d->name, ifc.up ? "up without carrier" : "down",
		    addrs, ifc.name, ifc.loopback ?
		    "; in a new network namespace lo starts down" : "");
	if (n < 0)
		say("WARN", "UDP 4791 on %s: cannot read /proc/net/udp: %s",
		    ifc.name, strerror(-n));
	else if (d->backend == URXE_BACKEND_UDP && ifc.loopback)
		port_lo(v, n);
	else if (d->backend == URXE_BACKEND_UDP)
		port_real(&ifc, v, n);
}

/* Each interface once, in the order the devices name them. */
static void check_ifaces(const struct urxe_config *cfg)
{
	struct urxe_cli_sock *v = calloc(MAX_SOCKS, sizeof(*v));
	unsigned int i, j;
	int n = v ? urxe_cli_udp4791(v, MAX_SOCKS) : -ENOMEM;

	for (i = 0; i < cfg->ndevs; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(cfg->devs[i].netdev, cfg->devs[j].netdev) &&
			    cfg->devs[i].backend == cfg->devs[j].backend)
				break;
		if (j == i)
			check_iface(&cfg->devs[i], v, n);
	}
	free(v);
}

/* --- limits and capabilities ----------------------------------------------- */

static long sysctl_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void check_bufs(void)
{
	static const char *const names[] = { "rmem_max", "wmem_max" };
	char path[64];
	unsigned int i;
	long v;

	for (i = 0; i < URXE_ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "/proc/sys/net/core/%s", names[i]);
		v = sysctl_long(path);
		if (v < 0)
			say("WARN", "socket buffers: cannot read %s", path);
		else if (v < URXE_UDP_SOCK_BUF)
			say("WARN", "socket buffers: net.core.%s is %ld, below the %d bytes urxe asks for: ordinary users' sockets get %ld, and bursts may drop (root: sysctl -w net.core.%s=%d)",
			    names[i], v, URXE_UDP_SOCK_BUF, v, names[i],
			    URXE_UDP_SOCK_BUF);
		else
			say("OK", "socket buffers: net.core.%s is %ld (urxe asks for %d)",
			    names[i], v, URXE_UDP_SOCK_BUF);
	}
}

/* This process's effective capabilities, from /proc/self/status. */
static bool has_net_raw(void)
{
	unsigned long long caps = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps & (1ull << CAP_NET_RAW_BIT);
}

static void check_caps(const struct urxe_config *cfg)
{
	unsigned int i, npacket = 0;
	const char *first = NULL;

	for (i = 0; i < cfg->ndevs; i++)
		if (cfg->devs[i].backend == URXE_BACKEND_PACKET) {
			npacket++;
			first = first ? first : cfg->devs[i].name;
		}
	if (!npacket)
		return;
	if (has_net_raw())
		say("OK", "CAP_NET_RAW: held, as the packet backend (device %s) needs",
		    first);
	else
		say("FAIL", "CAP_NET_RAW: not held: QPs of packet-backend device %s fail; run as root, or grant it inherited and ambient (setpriv --inh-caps=+net_raw --ambient-caps=+net_raw ... urxe run PROGRAM); setcap on the program would make the loader ignore LD_LIBRARY_PATH",
		    first);
}

int urxe_cli_doctor(int argc, char **argv)
{
	struct urxe_config cfg;

	(void)argv;
	if (argc)
		return urxe_cli_usage_error("doctor takes no arguments");
	/* The loader's own warnings would repeat the configuration lines. */
	setenv("URXE_LOG", "error", 1);
	urxe_log_reset();
	urxe_config_load(&cfg);
	check_library();
	check_rundir(cfg.rundir);
	check_config(&cfg);
	check_ifaces(&cfg);
	check_bufs();
	check_caps(&cfg);
	printf("# %s\n", nfail ? "some checks FAILed: see above" : "no FAIL");
	return nfail ? 1 : 0;
}
