// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe stats [--qp] [--all] [--json] [NAME]: the counters of the device instances
 * of this user on this host, read from the per-slot records in the user's
 * runtime directory (<rundir>/urxe-v2-<uid>/counters; nobody else's are
 * readable)
 * (host/stats.c), summed per device name with kernel rxe's counter names;
 * with --qp also each instance and its QPs.  By default only instances
 * open now (their slot is held); --all adds the last figures of instances
 * that have exited, for as long as their slot is not claimed again.  The
 * QPs an instance destroyed keep their last figures too (the last
 * URXE_STATS_RETIRED of them).  --json: the same as JSON (stats_json.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/host.h>

#include "cli.h"
#include "core.h"

struct stats_opts {
	bool qp;
	bool all;
	bool json;
	const char *name;
};

static const char *const state_names[IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD",
	[IBV_QPS_SQE] = "SQE", [IBV_QPS_ERR] = "ERR",
};
_Static_assert(sizeof(state_names) / sizeof(state_names[0]) ==
	       IBV_QPS_ERR + 1, "a name for every QP state");

const char *urxe_cli_qp_type(unsigned int t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW";
	case IBV_QPT_XRC_SEND: return "XRC_INI";
	case IBV_QPT_XRC_RECV: return "XRC_TGT";
	default: return "?";
	}
}

const char *urxe_cli_qp_state(unsigned int s)
{
	return s <= IBV_QPS_ERR ? state_names[s] : "?";
}

static int by_dev_slot(const void *a, const void *b)
{
	const struct urxe_cli_inst *x = a, *y = b;
	int c = strcmp(x->s.dev, y->s.dev);

	return c ? c : (x->s.slot > y->s.slot) - (x->s.slot < y->s.slot);
}

static int by_qpn(const void *a, const void *b)
{
	const struct urxe_stats_qp *x = a, *y = b;

	return (x->qpn > y->qpn) - (x->qpn < y->qpn);
}

/*
 * Reads the records to show into *out (sorted by device, then slot).
 * Returns how many, or a negative errno; *nocnt counts open instances
 * without a record (claiming right now, or no shared counters).
 */
static int collect(const char *rundir, const struct stats_opts *o,
		   struct urxe_cli_inst **out, int *nocnt)
{
	struct urxe_cli_inst *v = NULL, *t;
	unsigned int k;
	int fd, sfd, n = 0, busy, rc = 0;

	*nocnt = 0;
	sfd = urxe_rundir_open(rundir, "slots");
	if (sfd < 0)
		return sfd;
	fd = urxe_stats_open(rundir);
	if (fd < 0 && fd != -ENOENT) {
		close(sfd);
		return fd;
	}
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		busy = urxe_slot_busy_fd(sfd, k);
		if (busy < 0) {
			rc = busy;
			break;
		}
		if (!busy && !o->all)
			continue;
		t = realloc(v, (size_t)(n + 1) * sizeof(*v));
		if (!t) {
			rc = -ENOMEM;
			break;
		}
		v = t;
		rc = fd < 0 ? -ENOENT : urxe_stats_read(fd, k, &v[n].s);
		if (rc == -ENOENT) {
			*nocnt += busy;
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (o->name && strcmp(o->name, v[n].s.dev))
			continue;
		v[n++].open = busy;
	}
	if (fd >= 0)
		close(fd);
	close(sfd);
	if (rc) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, (size_t)n, sizeof(*v), by_dev_slot);
	*out = v;
	return n;
}

static void print_qp(const struct urxe_stats_snap *s,
		     const struct urxe_stats_qp *q, bool destroyed)
{
	unsigned int c;

	printf("\t\tqpn 0x%06x %s %s%s", q->qpn, urxe_cli_qp_type(q->type),
	       urxe_cli_qp_state(q->state), destroyed ? " (destroyed)" : "");
	/* Packets always; the rest (retransmissions, RNR...) if any. */
	for (c = 0; c < s->nqp_counters && c < URXE_CNT__QP; c++)
		if (c == URXE_CNT_SENT_PKTS || c == URXE_CNT_RCVD_PKTS ||
		    q->cnt[c])
			printf(" %s %llu", urxe_counter_names[c],
			       (unsigned long long)q->cnt[c]);
	putchar('\n');
}

static void print_qps(const struct urxe_stats_snap *s)
{
	struct urxe_stats_qp qps[URXE_STATS_QPS];
	unsigned int i;

	memcpy(qps, s->qps, s->nqps * sizeof(qps[0]));
	qsort(qps, s->nqps, sizeof(qps[0]), by_qpn);
	for (i = 0; i < s->nqps; i++)
		print_qp(s, &qps[i], false);
	if (s->qps_total > s->nqps)
		printf("\t\t(%u more QPs not listed)\n", s->qps_total - s->nqps);
	/* Destroyed ones in the order they went. */
	for (i = 0; i < s->nretired; i++)
		print_qp(s, &s->retired[i], true);
	if (s->retired_total > s->nretired)
		printf("\t\t(%u QPs destroyed earlier not kept)\n",
		       s->retired_total - s->nretired);
}

static void print_instance(const struct urxe_cli_inst *in)
{
	const struct urxe_stats_snap *s = &in->s;

	printf("\tinstance pid %d slot %u netdev %s%s: %u QP%s", s->pid,
	       s->slot, s->netdev, in->open ? "" : " (exited)", s->qps_total,
	       s->qps_total == 1 ? "" : "s");
	if (s->retired_total)
		printf(", %u destroyed", s->retired_total);
	putchar('\n');
	print_qps(s);
}

/* One device: instances v[0..n), all of one name. */
static void print_dev(const struct urxe_cli_inst *v, int n, bool qp)
{
	uint64_t sum[URXE_CNT__COUNT] = { 0 };
	int i, open = 0;
	unsigned int c;

	for (i = 0; i < n; i++) {
		open += v[i].open;
		for (c = 0; c < v[i].s.ncounters && c < URXE_CNT__COUNT; c++)
			sum[c] += v[i].s.counters[c];
	}
	printf("%s: %d instance%s", v[0].s.dev, n, n == 1 ? "" : "s");
	if (open != n)
		printf(" (%d open, %d exited)", open, n - open);
	putchar('\n');
	for (c = 0; c < URXE_CNT__COUNT; c++)
		printf("\t%-24s %llu\n", urxe_counter_names[c],
		       (unsigned long long)sum[c]);
	if (qp)
		for (i = 0; i < n; i++)
			print_instance(&v[i]);
}

static int parse(int argc, char **argv, struct stats_opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--qp") || !strcmp(argv[i], "-q"))
			o->qp = true;
		else if (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a"))
			o->all = true;
		else if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			o->json = true;
		else if (argv[i][0] == '-' || o->name)
			return -EINVAL;
		else
			o->name = argv[i];
	}
	return 0;
}

int urxe_cli_stats(int argc, char **argv)
{
	struct urxe_config cfg;
	struct stats_opts o;
	struct urxe_cli_inst *v = NULL;
	int n, i, j, nocnt;

	if (parse(argc, argv, &o))
		return urxe_cli_usage_error("stats: bad arguments");
	urxe_config_load(&cfg);
	n = collect(cfg.rundir, &o, &v, &nocnt);
	if (n < 0) {
		fprintf(stderr, "urxe: cannot read the counters in %s: %s\n",
			cfg.rundir, strerror(-n));
		return 1;
	}
	if (!n && o.name) {
		free(v);
		fprintf(stderr, "urxe: %s %s in %s%s\n",
			o.all ? "no counters of device" : "no open instance of",
			o.name, cfg.rundir,
			o.all ? "" : " (--all shows exited ones)");
		return 1;
	}
	if (o.json) {
		urxe_cli_stats_json(v, n, o.qp, o.all, cfg.rundir, nocnt);
		free(v);
		return 0;
	}
	printf("# %s in %s\n", o.all ? "your device instances, open and exited," :
				      "your device instances open", cfg.rundir);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(v[i].s.dev, v[j].s.dev); j++)
			;
		print_dev(&v[i], j - i, o.qp);
	}
	if (nocnt)
		printf("# %d open instance(s) without shared counters (starting, or an older urxe)\n",
		       nocnt);
	free(v);
	if (!n)
		printf("# none\n");
	return 0;
}
