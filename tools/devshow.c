// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe dev show [NAME]: the configured devices, their interfaces and GID
 * tables as this network namespace sees them, then the device instances
 * open on this host — so that a peer's GID can be found (on loopback each
 * process has a GID of its own, ::ffff:127.117.h.l, and `ibv_devinfo`
 * shows only its own).
 *
 * The user's own instances come from the user's runtime directory (slot
 * locks and statistics records: pid, device, slot), with the program's
 * name from /proc/PID/comm.  Other users' state is out of reach by design
 * (docs/design.md, "Many users on one host"), so their instances are shown
 * only as `ss` shows them to anyone: UDP sockets on port 4791 in
 * /proc/net/udp and udp6 — address, uid, inode; no pid, no program.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/provider.h>

#include "cli.h"
#include "core.h"

#define ROCE_PORT 4791
#define MAX_SOCKS 2048

static void show_gids(const struct urxe_iface *ifc)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	char s[INET6_ADDRSTRLEN];
	unsigned int i, n;

	if (ifc->loopback) {
		printf("\tGID[0]: ::ffff:127.117.H.L, one address per process (slot): see the instances below\n");
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

/* "a.b.c.d:" in /proc/net/udp: 8 or 32 hex digits, host-order words. */
static bool parse_addr(const char *hex, bool v6, uint8_t out[16])
{
	unsigned int w, i, nw = v6 ? 4 : 1;
	char word[9];

	memset(out, 0, 16);
	for (i = 0; i < nw; i++) {
		memcpy(word, hex + 8 * i, 8);
		word[8] = '\0';
		if (sscanf(word, "%8x", &w) != 1)
			return false;
		/* The kernel prints each 32-bit word of the address as a number. */
		memcpy(out + (v6 ? 4 * i : 12), &w, 4);
	}
	if (!v6)
		out[10] = out[11] = 0xff;
	return true;
}

static int read_table(const char *path, bool v6, struct urxe_cli_sock *out,
		      int n, int max)
{
	char line[512], addr[40];
	unsigned int port, uid;
	unsigned long inode;
	FILE *f = fopen(path, "re");

	if (!f)
		return errno == ENOENT ? n : -errno;
	if (!fgets(line, sizeof(line), f))	/* the header */
		goto out;
	while (n < max && fgets(line, sizeof(line), f)) {
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %39[0-9A-Fa-f]:%x %*s %*s %*s %*s %*s %u %*s %lu",
			   addr, &port, &uid, &inode) != 4 || port != ROCE_PORT ||
		    strlen(addr) != (v6 ? 32u : 8u))
			continue;
		if (!parse_addr(addr, v6, out[n].addr))
			continue;
		out[n].v6 = v6;
		out[n].uid = uid;
		out[n].inode = inode;
		n++;
	}
out:
	fclose(f);
	return n;
}

int urxe_cli_udp4791(struct urxe_cli_sock *out, int max)
{
	int n = read_table("/proc/net/udp", false, out, 0, max);

	return n < 0 ? n : read_table("/proc/net/udp6", true, out, n, max);
}

void urxe_cli_sock_addr(const struct urxe_cli_sock *s, char *buf, size_t len)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(s->addr, mapped, 12))
		inet_ntop(AF_INET, s->addr + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, s->addr, buf, (socklen_t)len);
}

void urxe_cli_sock_gid(const struct urxe_cli_sock *s, char *buf, size_t len)
{
	inet_ntop(AF_INET6, s->addr, buf, (socklen_t)len);
}

/* /proc/PID/comm, or "?" when the process is gone or not visible. */
static void comm_of(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The GID peers reach instance @s at, as text. */
static void instance_gid(const char *rundir, const struct urxe_stats_snap *s,
			 char *buf, size_t len)
{
	struct urxe_iface ifc;
	struct in_addr a;
	char ip[INET_ADDRSTRLEN];

	if (urxe_iface_query(s->netdev, &ifc)) {
		snprintf(buf, len, "? (%s is not in this network namespace)",
			 s->netdev);
		return;
	}
	if (!ifc.loopback) {
		snprintf(buf, len, "the GIDs of %s (see dev show)", s->netdev);
		return;
	}
	a = urxe_slot_loopback_addr(urxe_slot_addr_index(rundir, s->slot));
	snprintf(buf, len, "::ffff:%s",
		 inet_ntop(AF_INET, &a, ip, sizeof(ip)));
}

/* The user's open instances (of @name, or all); returns how many. */
static int own_instances(const char *rundir, const char *name, int *norec)
{
	struct urxe_stats_snap *s = malloc(sizeof(*s));
	char comm[64], gid[96];
	unsigned int k;
	int sfd, fd, n = 0;

	*norec = 0;
	sfd = urxe_rundir_open_ro(rundir, "slots");
	if (sfd < 0 || !s) {
		free(s);
		if (sfd >= 0)
			close(sfd);
		return sfd == -ENOENT ? 0 : -ENOMEM;
	}
	fd = urxe_stats_open(rundir);
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		if (urxe_slot_busy_fd(sfd, k) != 1)
			continue;
		if (fd < 0 || urxe_stats_read(fd, k, s)) {
			(*norec)++;
			continue;
		}
		if (name && strcmp(name, s->dev))
			continue;
		comm_of(s->pid, comm, sizeof(comm));
		instance_gid(rundir, s, gid, sizeof(gid));
		printf("instance %s pid %d (%s) slot %u netdev %s GID %s\n",
		       s->dev, s->pid, comm, s->slot, s->netdev, gid);
		n++;
	}
	if (fd >= 0)
		close(fd);
	close(sfd);
	free(s);
	return n;
}

/*
 * Slots of base @rundir bound in this network namespace, from the abstract
 * names in /proc/net/unix (what `ss -xa` shows anyone): bit k of @bound.
 */
static void bound_slots(const char *rundir, uint8_t *bound)
{
	char line[512], path[256];
	FILE *f = fopen("/proc/net/unix", "re");
	int k;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s @%255s", path) == 1 &&
		    (k = urxe_slot_from_name(rundir, path)) > 0)
			bound[k / 8] |= (uint8_t)(1u << (k % 8));
	fclose(f);
}

/* The UDP socket of @v[0..n) bound to @a:4791, if any. */
static const struct urxe_cli_sock *sock_at(const struct urxe_cli_sock *v,
					   int n, struct in_addr a)
{
	int i;

	for (i = 0; i < n; i++)
		if (!memcmp(v[i].addr + 12, &a, 4) && v[i].addr[10] == 0xff &&
		    v[i].addr[11] == 0xff && !v[i].addr[0])
			return &v[i];
	return NULL;
}

/* Other users' loopback instances: slots bound here that are not ours. */
static int other_slots(const char *rundir, const struct urxe_cli_sock *v,
		       int n)
{
	uint8_t bound[(URXE_SLOT_LAST + 8) / 8] = { 0 };
	char ip[INET_ADDRSTRLEN];
	const struct urxe_cli_sock *s;
	struct in_addr a;
	int k, sfd, shown = 0;

	bound_slots(rundir, bound);
	sfd = urxe_rundir_open_ro(rundir, "slots");
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		if (!(bound[k / 8] & (1u << (k % 8))) ||
		    (sfd >= 0 && urxe_slot_busy_fd(sfd, (unsigned int)k) == 1))
			continue;
		a = urxe_slot_loopback_addr(urxe_slot_addr_index(rundir, (unsigned int)k));
		inet_ntop(AF_INET, &a, ip, sizeof(ip));
		s = sock_at(v, n, a);
		if (s)
			printf("other slot %d GID ::ffff:%s UDP %s:%d uid %u inode %lu\n",
			       k, ip, ip, ROCE_PORT, s->uid, s->inode);
		else
			printf("other slot %d GID ::ffff:%s (no UDP socket yet: bound at its first QP)\n",
			       k, ip);
		shown++;
	}
	if (sfd >= 0)
		close(sfd);
	return shown;
}

/* Other users' instances here, as any user may see them (`ss -xa -ulne`). */
static void others(const char *rundir)
{
	struct urxe_cli_sock *v = calloc(MAX_SOCKS, sizeof(*v));
	char addr[INET6_ADDRSTRLEN];
	uid_t me = geteuid();
	int n, i, shown;

	n = v ? urxe_cli_udp4791(v, MAX_SOCKS) : -ENOMEM;
	if (n < 0) {
		printf("# cannot read /proc/net/udp: %s\n", strerror(-n));
		n = 0;
	}
	printf("# other users' instances in this network namespace, as `ss -xa` and `ss -ulne` show them:\n");
	shown = other_slots(rundir, v, n);
	for (i = 0; i < n; i++) {
		/* Loopback ones are above, by slot. */
		if (v[i].uid == me || (v[i].addr[12] == 127 && !v[i].v6))
			continue;
		urxe_cli_sock_addr(&v[i], addr, sizeof(addr));
		printf("other UDP %s%s%s:%d uid %u inode %lu\n", v[i].v6 ? "[" : "",
		       addr, v[i].v6 ? "]" : "", ROCE_PORT, v[i].uid, v[i].inode);
		shown++;
	}
	if (!shown)
		printf("# none\n");
	free(v);
}

int urxe_cli_dev_show(int argc, char **argv)
{
	struct urxe_config cfg;
	const char *name = NULL;
	unsigned int i;
	int shown = 0, n, norec;

	if (argc > 1 || (argc == 1 && argv[0][0] == '-'))
		return urxe_cli_usage_error("dev show takes at most one device name");
	if (argc == 1)
		name = argv[0];
	urxe_config_load(&cfg);
	printf("# devices from %s\n", cfg.source);
	for (i = 0; i < cfg.ndevs; i++) {
		if (name && strcmp(name, cfg.devs[i].name))
			continue;
		show_dev(&cfg.devs[i]);
		shown++;
	}
	if (name && !shown) {
		fprintf(stderr, "urxe: no device %s (see `urxe dev show`)\n", name);
		return 1;
	}
	if (!cfg.ndevs)
		printf("# no devices: %s lists none that is valid\n", cfg.source);
	n = own_instances(cfg.rundir, name, &norec);
	if (n >= 0)
		printf("# %d device instance(s) open on this host by you (%s)%s\n",
		       n + (name ? 0 : norec), cfg.rundir,
		       norec && !name ? ", some without shared counters" : "");
	if (!name)
		others(cfg.rundir);
	return 0;
}
