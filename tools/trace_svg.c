// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ladder diagram as SVG (for slides) and as an HTML page (the SVG
 * inline and a table of the packets): self-contained, no script, no
 * external style or font, so any browser or SVG viewer shows it as it
 * is.  Columns are vertical lines under a box naming the endpoint; each
 * packet is a group (class "pkt", a <title> for the tooltip) holding its
 * arrow and label, rows evenly spaced down the time axis with the time on
 * the left, a pause of a millisecond or more marked between rows.
 */
#include <string.h>

#include <urxe/wire.h>

#include "trace.h"

#define X0 150		/* the first column */
#define CW 250		/* between columns */
#define TOP 90		/* the first row */
#define ROW 30
#define PAUSE_H 18
#define LABEL_ROOM 380	/* right of the last column */
#define PAUSE_NS 1000000u

static void esc(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
	}
}

static const char *color_of(const struct trace_pkt *p)
{
	uint32_t f = urxe_opinfo(p->bth.opcode)->flags;

	if (p->marks & (TM_DROP | TM_CORRUPT | TM_MALFORMED))
		return "#c0392b";
	if (p->marks & (TM_NAK | TM_RNR))
		return "#b7791f";
	if (p->bth.dqpn == 1)
		return "#00838f";
	return f & URXE_F_RESP ? "#2e7d32" : "#1f4e9c";
}

static unsigned int pauses(const struct trace_view *v)
{
	unsigned int i, n = 0;

	for (i = 1; i < v->n; i++)
		n += v->tr->pkts[v->idx[i]].t_ns -
		     v->tr->pkts[v->idx[i - 1]].t_ns >= PAUSE_NS;
	return n;
}

static void head(const struct trace_view *v, FILE *out, unsigned int h)
{
	char name[8], ep[96];
	unsigned int i, x;

	for (i = 0; i < v->ncols; i++) {
		x = X0 + i * CW;
		trace_col_name(i, name, sizeof(name));
		trace_ep_text(&v->tr->eps[v->ep_of_col[i]], ep, sizeof(ep));
		fprintf(out, "<g class=\"ep\"><rect x=\"%u\" y=\"14\" width=\"%u\" height=\"46\" rx=\"6\" fill=\"#eef2f7\" stroke=\"#556\"/>"
			"<text x=\"%u\" y=\"32\" text-anchor=\"middle\" font-weight=\"bold\" font-size=\"14\">%s</text>"
			"<text x=\"%u\" y=\"50\" text-anchor=\"middle\" font-size=\"10\">",
			x - (CW - 20) / 2, CW - 20, x, name, x);
		esc(out, ep);
		fprintf(out, "</text></g>\n<line x1=\"%u\" y1=\"60\" x2=\"%u\" y2=\"%u\" stroke=\"#99a\" stroke-width=\"1.5\"/>\n",
			x, x, h - 10);
	}
	fprintf(out, "<text x=\"%u\" y=\"72\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">time</text>\n",
		X0 - 70);
}

static void arrowhead(FILE *out, int x, int y, int dir, const char *c)
{
	fprintf(out, "<polygon points=\"%d,%d %d,%d %d,%d\" fill=\"%s\"/>", x, y,
		x - dir * 9, y - 4, x - dir * 9, y + 4, c);
}

static void arrow(const struct trace_view *v, const struct trace_pkt *p,
		  unsigned int y, FILE *out)
{
	int x1 = X0 + v->col[p->from] * CW, x2 = X0 + v->col[p->to] * CW;
	int dir = x2 >= x1 ? 1 : -1, end = x2;
	const char *c = color_of(p);

	if (x1 == x2) {		/* to itself: a small loop */
		fprintf(out, "<path d=\"M%d %u h24 v8 h-22\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"/>",
			x1, y - 4, c);
		arrowhead(out, x1 + 2, y + 4, -1, c);
		return;
	}
	if (p->marks & TM_DROP)
		end = (x1 + x2) / 2;
	fprintf(out, "<line x1=\"%d\" y1=\"%u\" x2=\"%d\" y2=\"%u\" stroke=\"%s\" stroke-width=\"1.6\"%s/>",
		x1, y, end, y, c, p->marks & TM_DROP ? " stroke-dasharray=\"4 3\"" : "");
	if (p->marks & TM_DROP)
		fprintf(out, "<path d=\"M%d %u l10 10 M%d %u l-10 10\" stroke=\"%s\" stroke-width=\"2\"/>",
			end - 5, y - 5, end + 5, y - 5, c);
	else
		arrowhead(out, x2, (int)y, dir, c);
}

static void row(const struct trace_view *v, const struct trace_pkt *p,
		unsigned int n, unsigned int y, uint64_t span, FILE *out)
{
	char t[32], lab[256], mk[128];
	int x1 = X0 + v->col[p->from] * CW, x2 = X0 + v->col[p->to] * CW;
	int lx = (x1 < x2 ? x1 : x2) + 8;

	trace_time(p->t_ns - v->t0, span, t, sizeof(t));
	trace_label(p, lab, sizeof(lab));
	trace_marks(p->marks, mk, sizeof(mk));
	fprintf(out, "<g class=\"pkt\" id=\"p%u\"><title>", n);
	esc(out, lab);
	esc(out, mk);
	fprintf(out, "</title><text x=\"%d\" y=\"%u\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">%s</text>",
		X0 - 70, y + 4, t);
	arrow(v, p, y, out);
	fprintf(out, "<text class=\"label\" x=\"%d\" y=\"%u\" font-size=\"11\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">",
		lx, y - 5, color_of(p));
	esc(out, lab);
	if (*mk) {
		fputs("<tspan font-weight=\"bold\" fill=\"#c0392b\">", out);
		esc(out, mk);
		fputs("</tspan>", out);
	}
	fputs("</text></g>\n", out);
}

void trace_draw_svg(const struct trace_view *v, FILE *out, bool standalone)
{
	unsigned int w = X0 + (v->ncols ? v->ncols - 1 : 0) * CW + LABEL_ROOM;
	unsigned int h = TOP + v->n * ROW + pauses(v) * PAUSE_H + 20, i, y = TOP;
	uint64_t span = v->span;

	if (standalone)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\">\n",
		w, h, w, h);
	fprintf(out, "<title>urxe trace: ");
	esc(out, v->tr->title);
	fprintf(out, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
	head(v, out, h);
	for (i = 0; i < v->n; i++) {
		const struct trace_pkt *p = &v->tr->pkts[v->idx[i]];

		if (i && p->t_ns - v->tr->pkts[v->idx[i - 1]].t_ns >= PAUSE_NS) {
			char t[32];
			uint64_t d = p->t_ns - v->tr->pkts[v->idx[i - 1]].t_ns;

			trace_time(d, d, t, sizeof(t));
			fprintf(out, "<text class=\"pause\" x=\"%d\" y=\"%u\" text-anchor=\"end\" font-size=\"10\" font-style=\"italic\" fill=\"#888\">(%s later)</text>\n",
				X0 - 8, y - 4, t);
			y += PAUSE_H;
		}
		row(v, p, i + 1, y, span, out);
		y += ROW;
	}
	fputs("</svg>\n", out);
}

static void table(const struct trace_view *v, FILE *out)
{
	uint64_t span = v->span;
	char t[32], lab[256], mk[128], a[8], b[8];
	unsigned int i;

	fputs("<table class=\"pkts\">\n<tr><th>#</th><th>time</th><th>from</th><th>to</th><th>packet</th><th>marks</th></tr>\n",
	      out);
	for (i = 0; i < v->n; i++) {
		const struct trace_pkt *p = &v->tr->pkts[v->idx[i]];

		trace_time(p->t_ns - v->t0, span, t, sizeof(t));
		trace_label(p, lab, sizeof(lab));
		trace_marks(p->marks, mk, sizeof(mk));
		trace_col_name((unsigned int)v->col[p->from], a, sizeof(a));
		trace_col_name((unsigned int)v->col[p->to], b, sizeof(b));
		fprintf(out, "<tr><td>%u</td><td>%s</td><td>%s</td><td>%s</td><td>",
			i + 1, t, a, b);
		esc(out, lab);
		fputs("</td><td class=\"mk\">", out);
		esc(out, mk);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
}

void trace_draw_html(const struct trace_view *v, FILE *out)
{
	char name[8], ep[96];
	unsigned int i;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>urxe trace: ", out);
	esc(out, v->tr->title);
	fputs("</title>\n<style>\nbody { font-family: sans-serif; margin: 1.5em; }\n"
	      "table { border-collapse: collapse; font-family: monospace; font-size: 13px; }\n"
	      "td, th { border: 1px solid #ccd; padding: 2px 8px; text-align: left; }\n"
	      "td.mk { color: #c0392b; font-weight: bold; }\n"
	      ".diagram { overflow-x: auto; margin: 1em 0; }\n</style>\n</head>\n<body>\n<h1>urxe trace: ",
	      out);
	esc(out, v->tr->title);
	fprintf(out, "</h1>\n<p>%u packets; time since the first packet.</p>\n<table class=\"eps\">\n",
		v->n);
	for (i = 0; i < v->ncols; i++) {
		trace_col_name(i, name, sizeof(name));
		trace_ep_text(&v->tr->eps[v->ep_of_col[i]], ep, sizeof(ep));
		fprintf(out, "<tr><th>%s</th><td>", name);
		esc(out, ep);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n<div class=\"diagram\">\n", out);
	trace_draw_svg(v, out, false);
	fputs("</div>\n", out);
	table(v, out);
	fputs("</body>\n</html>\n", out);
}
