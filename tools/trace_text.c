// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ladder diagram in a terminal.  A legend names the columns (A, B,
 * ...: an address and a QP each), then one line per packet, in capture
 * order: the time since the first packet, an arrow from the sender's
 * column to the receiver's (cut short with an x for a frame the fault
 * injector dropped), and the label with its marks.  Labels longer than
 * the width left wrap onto lines of their own; a pause of a millisecond
 * or more gets a line saying how long.  ANSI colour (responses green,
 * NAKs yellow, CM cyan, faults red, marks bold) only when asked or when
 * the output is a terminal.
 */
#include <string.h>

#include <urxe/wire.h>

#include "trace.h"

#define LABEL_MIN 40
#define GAP_MIN 4
#define GAP_MAX 12
#define PAUSE_NS 1000000u	/* a pause worth a line of its own */
#define AREA_MAX 512

struct layout {
	unsigned int tw;	/* time column */
	unsigned int gap;	/* between two columns */
	unsigned int area;	/* the columns' width */
	unsigned int lw;	/* label width */
	uint64_t span;
	int color;
};

static const char *color_of(const struct trace_pkt *p)
{
	uint32_t f = urxe_opinfo(p->bth.opcode)->flags;

	if (p->marks & (TM_DROP | TM_CORRUPT | TM_MALFORMED))
		return "\033[31m";
	if (p->marks & (TM_NAK | TM_RNR))
		return "\033[33m";
	if (p->bth.dqpn == 1)
		return "\033[36m";
	return f & URXE_F_RESP ? "\033[32m" : "";
}

static void layout(const struct trace_view *v, const struct trace_opts *o,
		   struct layout *l)
{
	char t[32];
	unsigned int avail;

	l->span = v->span;
	trace_time(l->span, l->span, t, sizeof(t));
	l->tw = strlen(t) > 4 ? (unsigned int)strlen(t) : 4;
	avail = o->width > l->tw + 4 + LABEL_MIN ? o->width - l->tw - 4 - LABEL_MIN : 0;
	l->gap = v->ncols > 1 ? avail / (v->ncols - 1) : GAP_MAX;
	if (l->gap > GAP_MAX)
		l->gap = GAP_MAX;
	if (l->gap < GAP_MIN)
		l->gap = GAP_MIN;
	l->area = v->ncols ? (v->ncols - 1) * l->gap + 1 : 1;
	if (l->area > AREA_MAX)
		l->area = AREA_MAX;
	l->lw = o->width > l->tw + 4 + l->area + LABEL_MIN ?
		o->width - l->tw - 4 - l->area : LABEL_MIN;
	l->color = o->color;
}

/* The columns alone, drawn with @c. */
static void columns(const struct trace_view *v, const struct layout *l,
		    char *a, char c)
{
	unsigned int i;

	memset(a, ' ', l->area);
	a[l->area] = '\0';
	for (i = 0; i < v->ncols && i * l->gap < l->area; i++)
		a[i * l->gap] = c;
}

static void arrow(const struct trace_view *v, const struct layout *l,
		  const struct trace_pkt *p, char *a)
{
	unsigned int x = (unsigned int)v->col[p->from] * l->gap;
	unsigned int y = (unsigned int)v->col[p->to] * l->gap, lo, hi, k;

	columns(v, l, a, '|');
	if (x >= l->area || y >= l->area)
		return;
	if (x == y) {
		a[x + 1 < l->area ? x + 1 : x] = 'o';
		return;
	}
	lo = x < y ? x : y;
	hi = x < y ? y : x;
	for (k = lo + 1; k < hi; k++)
		a[k] = '-';
	if (p->marks & TM_DROP) {
		/* never sent: the arrow stops halfway */
		unsigned int mid = (lo + hi + 1) / 2;

		for (k = x < y ? mid + 1 : lo + 1; k < (x < y ? hi : mid); k++)
			a[k] = ' ';
		a[mid] = 'x';
		return;
	}
	a[x < y ? hi - 1 : lo + 1] = x < y ? '>' : '<';
}

/* One piece of a label: the label in @col, the marks (from @mk on) bold red. */
static void put_piece(const char *s, size_t n, const char *mk, const char *col,
		      bool color, FILE *out)
{
	size_t plain = s >= mk ? 0 : (size_t)(mk - s) < n ? (size_t)(mk - s) : n;

	fprintf(out, "%s%.*s", col, (int)plain, s);
	if (n > plain)
		fprintf(out, "%s%.*s", color ? "\033[1;31m" : "", (int)(n - plain),
			s + plain);
	fprintf(out, "%s\n", color && (*col || n > plain) ? "\033[0m" : "");
}

/*
 * Prints time @t, arrow @a and label @s (marks from @mk on), the label
 * wrapped to the width left: its first piece beside the arrow, the rest
 * on lines of their own beside the bare columns.
 */
static void put_label(const struct trace_view *v, const struct layout *l,
		      const char *t, const char *a, const char *s,
		      const char *mk, const char *col, FILE *out)
{
	char cont[AREA_MAX + 1];
	bool first = true;

	columns(v, l, cont, '|');
	while (first || *s) {
		size_t n = strlen(s), cut = n;

		if (n > l->lw) {
			for (cut = l->lw; cut > 0 && s[cut] != ' '; cut--)
				;
			if (!cut)
				cut = l->lw;
		}
		fprintf(out, "%*s  %s%s%s  ", (int)l->tw, first ? t : "",
			first ? col : "", first ? a : cont,
			first && *col ? "\033[0m" : "");
		put_piece(s, cut, mk, col, l->color, out);
		s += cut;
		while (*s == ' ')
			s++;
		first = false;
	}
}

static void packet_line(const struct trace_view *v, const struct layout *l,
			const struct trace_pkt *p, FILE *out)
{
	char t[32], lab[256], mk[128], all[400], a[AREA_MAX + 1];
	const char *col = l->color ? color_of(p) : "";

	trace_time(p->t_ns - v->t0, l->span, t, sizeof(t));
	trace_label(p, lab, sizeof(lab));
	trace_marks(p->marks, mk, sizeof(mk));
	arrow(v, l, p, a);
	snprintf(all, sizeof(all), "%s%s", lab, mk);
	put_label(v, l, t, a, all, all + strlen(lab), col, out);
}

static void header(const struct trace_view *v, const struct layout *l,
		   FILE *out)
{
	const struct trace *tr = v->tr;
	char name[8], ep[96], a[AREA_MAX + 1];
	unsigned int i;

	fprintf(out, "urxe trace: %s: %u of %u packets (%lu frames read",
		tr->title, v->n, tr->npkts - tr->merged, tr->frames);
	if (tr->nfiles > 1)
		fprintf(out, " from %u files", tr->nfiles);
	if (tr->merged)
		fprintf(out, "; %u received copies folded into their sends",
			tr->merged);
	fprintf(out, ")\n");
	for (i = 0; i < v->ncols; i++) {
		trace_col_name(i, name, sizeof(name));
		trace_ep_text(&tr->eps[v->ep_of_col[i]], ep, sizeof(ep));
		fprintf(out, "  %-3s %s\n", name, ep);
	}
	columns(v, l, a, ' ');
	for (i = 0; i < v->ncols && i * l->gap < l->area; i++) {
		trace_col_name(i, name, sizeof(name));
		a[i * l->gap] = name[0];
	}
	fprintf(out, "%*s  %s\n", (int)l->tw, "time", a);
}

void trace_draw_text(const struct trace_view *v, const struct trace_opts *o,
		     FILE *out)
{
	struct layout l;
	uint64_t prev = v->t0;
	unsigned int i;

	layout(v, o, &l);
	header(v, &l, out);
	for (i = 0; i < v->n; i++) {
		const struct trace_pkt *p = &v->tr->pkts[v->idx[i]];

		if (i && p->t_ns - prev >= PAUSE_NS) {
			char a[AREA_MAX + 1], t[32];

			columns(v, &l, a, ':');
			trace_time(p->t_ns - prev, p->t_ns - prev, t, sizeof(t));
			fprintf(out, "%*s  %s  (%s later)\n", (int)l.tw, "", a, t);
		}
		packet_line(v, &l, p, out);
		prev = p->t_ns;
	}
}
