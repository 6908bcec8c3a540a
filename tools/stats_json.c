// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe stats --json: what the text form shows, as one JSON object for
 * programs.  The schema is documented in docs/urxe.md ("JSON OUTPUT") and
 * versioned by its "schema" key: a key is only ever added under the same
 * number; a change of meaning or a removal takes a new one.  Numbers are
 * unsigned 64-bit counters printed in full (a consumer that reads them as
 * doubles loses precision above 2^53: that is its choice).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>

#include "cli.h"

#define JSON_SCHEMA 1

/* @s as a JSON string: quotes, backslashes and control bytes escaped. */
static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);	/* UTF-8 passes as is */
	}
	putchar('"');
}

/* {"sent_pkts": N, ...}: the first @n counters of @cnt by name. */
static void json_counters(const uint64_t *cnt, unsigned int n)
{
	unsigned int c;

	putchar('{');
	for (c = 0; c < n && c < URXE_CNT__COUNT; c++) {
		printf("%s", c ? ", " : "");
		json_str(urxe_counter_names[c]);
		printf(": %llu", (unsigned long long)cnt[c]);
	}
	putchar('}');
}

static void json_qp(const struct urxe_stats_snap *s,
		    const struct urxe_stats_qp *q, bool destroyed, bool first)
{
	unsigned int n = s->nqp_counters < URXE_CNT__QP ? s->nqp_counters :
							  URXE_CNT__QP;

	printf("%s\n\t\t\t\t{\"qpn\": %u, \"type\": ", first ? "" : ",", q->qpn);
	json_str(urxe_cli_qp_type(q->type));
	fputs(", \"state\": ", stdout);
	json_str(urxe_cli_qp_state(q->state));
	printf(", \"destroyed\": %s, \"counters\": ", destroyed ? "true" : "false");
	json_counters(q->cnt, n);
	putchar('}');
}

static void json_instance(const struct urxe_cli_inst *in, bool first)
{
	const struct urxe_stats_snap *s = &in->s;
	unsigned int i;

	printf("%s\n\t\t\t{\"pid\": %d, \"slot\": %u, \"netdev\": ",
	       first ? "" : ",", s->pid, s->slot);
	json_str(s->netdev);
	printf(", \"open\": %s, \"claimed\": %llu, \"qps_total\": %u, "
	       "\"qps_unlisted\": %u, \"qps_destroyed\": %u, "
	       "\"qps_destroyed_unlisted\": %u, \"counters\": ",
	       in->open ? "true" : "false", (unsigned long long)s->claimed_s,
	       s->qps_total, s->qps_total > s->nqps ? s->qps_total - s->nqps : 0,
	       s->retired_total, s->retired_total - s->nretired);
	json_counters(s->counters, s->ncounters);
	fputs(", \"qps\": [", stdout);
	for (i = 0; i < s->nqps; i++)
		json_qp(s, &s->qps[i], false, i == 0);
	for (i = 0; i < s->nretired; i++)
		json_qp(s, &s->retired[i], true, i == 0 && !s->nqps);
	fputs(s->nqps || s->nretired ? "\n\t\t\t]}" : "]}", stdout);
}

/* One device: v[0..n), all of one name. */
static void json_dev(const struct urxe_cli_inst *v, int n, bool qp,
		     bool first)
{
	uint64_t sum[URXE_CNT__COUNT] = { 0 };
	unsigned int c;
	int i, open = 0;

	for (i = 0; i < n; i++) {
		open += v[i].open;
		for (c = 0; c < v[i].s.ncounters && c < URXE_CNT__COUNT; c++)
			sum[c] += v[i].s.counters[c];
	}
	printf("%s\n\t\t{\"name\": ", first ? "" : ",");
	json_str(v[0].s.dev);
	printf(", \"open\": %d, \"exited\": %d, \"counters\": ", open, n - open);
	json_counters(sum, URXE_CNT__COUNT);
	if (qp) {
		fputs(", \"instances\": [", stdout);
		for (i = 0; i < n; i++)
			json_instance(&v[i], i == 0);
		fputs(n ? "\n\t\t]" : "]", stdout);
	}
	putchar('}');
}

void urxe_cli_stats_json(const struct urxe_cli_inst *v, int n, bool qp,
			 bool all, const char *rundir, int nocnt)
{
	int i, j;

	printf("{\n\t\"schema\": %d,\n\t\"rundir\": ", JSON_SCHEMA);
	json_str(rundir);
	printf(",\n\t\"exited_included\": %s,\n\t\"instances_without_counters\": %d,\n\t\"devices\": [",
	       all ? "true" : "false", nocnt);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(v[i].s.dev, v[j].s.dev); j++)
			;
		json_dev(&v[i], j - i, qp, i == 0);
	}
	fputs(n ? "\n\t]\n}\n" : "]\n}\n", stdout);
}
