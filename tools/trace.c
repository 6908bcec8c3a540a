// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe trace: a RoCEv2 capture drawn as a ladder diagram.
 *   urxe trace [--svg|--html] [--color=auto|always|never] [--qp QPN]
 *              [--from T] [--to T] [-n COUNT] [--width N] [-o OUT] FILE...
 *   urxe trace --check [-v] [-l] [-o] FILE...   (the frame validator)
 * Several files (URXE_PCAP=...%p: one per process) are merged in time.
 * Times are relative to the first packet of the capture, whatever the
 * filters, so that the same capture always draws the same.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trace.h"

enum fmt { FMT_TEXT, FMT_SVG, FMT_HTML };

static const char usage[] =
	"usage: urxe trace [--svg|--html] [--color=auto|always|never] [--qp QPN]\n"
	"                  [--from T] [--to T] [-n COUNT] [--width N] [-o OUT] FILE...\n"
	"       urxe trace --check [-v] [-l] [-o] FILE...\n"
	"T is a time after the first packet: a number with s, ms, us or ns (ms if none).\n";

/* "1.5ms", "200us", "3s", "7" (ms) -> ns; -1 if malformed. */
static int parse_time(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "", 1e6 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
		{ "s", 1e9 },
	};
	char *end;
	double v = strtod(s, &end);
	unsigned int i;

	if (end == s || v < 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*ns = (uint64_t)(v * units[i].mult + 0.5);
			return 0;
		}
	return -1;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > max || *s == '-')
		return -1;
	*out = v;
	return 0;
}

static int draw(struct trace *tr, const struct trace_opts *o, enum fmt fmt,
		FILE *out)
{
	struct trace_view v;
	int rc = trace_model(tr);

	if (!rc)
		rc = trace_view_make(tr, o, &v);
	if (rc) {
		fprintf(stderr, "urxe trace: out of memory\n");
		return 1;
	}
	if (fmt == FMT_SVG)
		trace_draw_svg(&v, out, true);
	else if (fmt == FMT_HTML)
		trace_draw_html(&v, out);
	else
		trace_draw_text(&v, o, out);
	trace_view_free(&v);
	return ferror(out) ? 1 : 0;
}

static int color_of(const char *s, FILE *out)
{
	const char *term = getenv("TERM");

	if (!strcmp(s, "always"))
		return 1;
	if (!strcmp(s, "never"))
		return 0;
	if (strcmp(s, "auto"))
		return -1;
	return isatty(fileno(out)) && !getenv("NO_COLOR") && term &&
	       strcmp(term, "dumb");
}

struct args {
	struct trace_opts o;
	enum fmt fmt;
	const char *color, *out;
};

static int parse_opt(int c, struct args *a)
{
	unsigned long v;

	switch (c) {
	case 's': a->fmt = FMT_SVG; return 0;
	case 'h': a->fmt = FMT_HTML; return 0;
	case 'c': a->color = optarg; return 0;
	case 'o': a->out = optarg; return 0;
	case 'q':
		a->o.have_qpn = true;
		if (parse_ulong(optarg, 0xffffff, &v))
			return -1;
		a->o.qpn = (uint32_t)v;
		return 0;
	case 'f': return parse_time(optarg, &a->o.from_ns);
	case 't': return parse_time(optarg, &a->o.to_ns);
	case 'n': return parse_ulong(optarg, 1ul << 30, &a->o.count);
	case 'w':
		if (parse_ulong(optarg, 1000, &v) || v < 40)
			return -1;
		a->o.width = (unsigned int)v;
		return 0;
	default: return -1;
	}
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longs[] = {
		{ "svg", no_argument, NULL, 's' },
		{ "html", no_argument, NULL, 'h' },
		{ "color", required_argument, NULL, 'c' },
		{ "colour", required_argument, NULL, 'c' },
		{ "qp", required_argument, NULL, 'q' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "width", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->o.to_ns = UINT64_MAX;
	a->o.width = 80;
	a->color = "auto";
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "n:o:", longs, NULL)) != -1)
		if (parse_opt(c, a)) {
			if (c != '?')
				fprintf(stderr, "urxe trace: bad value '%s'\n",
					optarg);
			return -1;
		}
	return optind < argc ? 0 : -1;
}

static int read_all(struct trace *tr, int n, char **files)
{
	int i;

	memset(tr, 0, sizeof(*tr));
	tr->title = n ? files[0] : "";
	tr->nfiles = (unsigned int)n;
	for (i = 0; i < n; i++)
		if (trace_read_file(tr, files[i], (unsigned int)i))
			return -1;
	return 0;
}

int urxe_cli_trace(int argc, char **argv)
{
	struct trace tr = { 0 };
	struct args a;
	FILE *out = stdout;
	int rc;

	if (argc > 0 && !strcmp(argv[0], "--check"))
		return urxe_cli_check("urxe trace --check", argc - 1, argv + 1);
	/* getopt wants a program name first: "trace" is the one before */
	if (parse_args(argc + 1, argv - 1, &a)) {
		fputs(usage, stderr);
		return 2;
	}
	if (a.out && !(out = fopen(a.out, "w"))) {
		fprintf(stderr, "urxe trace: cannot write %s: %s\n", a.out,
			strerror(errno));
		return 1;
	}
	a.o.color = color_of(a.color, out);
	if (a.o.color < 0) {
		fputs(usage, stderr);
		rc = 2;
	} else if (read_all(&tr, argc - optind + 1, argv - 1 + optind)) {
		rc = 1;
	} else {
		rc = draw(&tr, &a.o, a.fmt, out);
	}
	trace_free(&tr);
	if (out != stdout && fclose(out))
		rc = 1;
	return rc;
}

int urxe_cli_trace_dir(const char *dir, const char *title)
{
	struct trace_opts o = { .to_ns = UINT64_MAX, .width = 80 };
	char pat[4200];
	struct trace tr;
	glob_t g;
	int rc;

	snprintf(pat, sizeof(pat), "%s/trace-*.pcapng", dir);
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc) {
		fprintf(stderr, "urxe: --trace: the program captured no packet (no RDMA device opened?)\n");
		return 1;
	}
	o.color = color_of("auto", stderr);
	rc = read_all(&tr, (int)g.gl_pathc, g.gl_pathv);
	tr.title = title;
	rc = rc ? 1 : draw(&tr, &o, FMT_TEXT, stderr);
	trace_free(&tr);
	globfree(&g);
	return rc;
}
