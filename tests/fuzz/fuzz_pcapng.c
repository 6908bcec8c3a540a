// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_pcapng: arbitrary bytes as a capture given to `urxe trace`, which
 * people run on files from anywhere (a colleague's tcpdump, a bug
 * report).  The input is written to a memfd and read by path, as the
 * tool reads a file: libpcap reads the frames (pcap or pcapng),
 * trace_pcapng.c walks the pcapng blocks again for each packet's
 * direction and comment, trace_read.c decodes the RoCE headers (and CM
 * MADs), trace_model.c orders, folds copies, marks, finds endpoints, and
 * every packet is labelled and the whole drawn as text, SVG and HTML
 * (to /dev/null).  Whatever the input, nothing may crash or overrun, and:
 * - the walker yields one note per packet block, each a direction 0-3
 *   and only the fault marks; with libpcap's reading of a pcapng file
 *   whole, as many notes as libpcap returned packets (the notes are
 *   matched to packets by their order);
 * - after the model, every packet drawn has endpoints inside the table,
 *   a folded one was received (and is counted), and labels, marks and
 *   endpoint texts end inside their buffers.
 * The ctest fuzz.pcapng (a URXE_FUZZ build, clang) fuzzes it from the
 * seeds in pcapng_corpus/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) do { if (!(c)) { \
	fprintf(real_stderr, "fuzz_pcapng: %s:%d: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

static int mfd = -1;
static char path[64];
static FILE *devnull;
static FILE *real_stderr;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mfd = memfd_create("fuzz_pcapng", MFD_CLOEXEC);
	devnull = fopen("/dev/null", "w");
	if (mfd < 0 || !devnull)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	/*
	 * The reader says what is wrong with each bad file on stderr: quiet
	 * it (the FILE, not fd 2, where the sanitizers and libFuzzer write).
	 */
	real_stderr = stderr;
	stderr = devnull;
	return 0;
}

/* A string that ends inside its @len-byte buffer. */
static void check_str(const char *s, size_t len)
{
	FUZZ_ASSERT(memchr(s, '\0', len) != NULL);
}

static void check_notes(const struct trace *tr, bool read_ok)
{
	struct trace_note *nt;
	unsigned int n, i;
	int rc = trace_pcapng_notes(path, &nt, &n);

	FUZZ_ASSERT(rc == 0 || rc == -ENOMEM);
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(nt[i].dir <= 3);
		FUZZ_ASSERT(!(nt[i].marks & ~(uint32_t)(TM_DROP | TM_DUP |
							  TM_REORDER | TM_CORRUPT)));
	}
	/* libpcap read it all: a note for each of its packets, or none */
	if (read_ok && n)
		FUZZ_ASSERT(n == tr->frames);
	free(nt);
}

static void check_model(const struct trace *tr)
{
	unsigned int i, hidden = 0;
	char buf[256];

	for (i = 0; i < tr->npkts; i++) {
		const struct trace_pkt *p = &tr->pkts[i];

		trace_label(p, buf, sizeof(buf));
		check_str(buf, sizeof(buf));
		trace_marks(p->marks, buf, sizeof(buf));
		check_str(buf, sizeof(buf));
		if (p->hidden) {
			FUZZ_ASSERT(p->dir == 1);
			hidden++;
			continue;
		}
		FUZZ_ASSERT(p->from >= 0 && (unsigned int)p->from < tr->neps);
		FUZZ_ASSERT(p->to >= 0 && (unsigned int)p->to < tr->neps);
	}
	FUZZ_ASSERT(hidden == tr->merged);
	for (i = 0; i < tr->neps; i++) {
		trace_ep_text(&tr->eps[i], buf, sizeof(buf));
		check_str(buf, sizeof(buf));
		trace_col_name(i, buf, 8);
		check_str(buf, 8);
	}
}

/* Draws @tr as the options of the input's last byte ask. */
static void draw(const struct trace *tr, uint8_t knobs)
{
	struct trace_opts o = {
		.to_ns = UINT64_MAX, .width = 40 + knobs % 64,
		.color = knobs >> 7, .count = knobs & 0x40 ? 3 : 0,
		.have_qpn = knobs & 0x20, .qpn = 1,
	};
	struct trace_view v;

	if (trace_view_make(tr, &o, &v))
		return;
	trace_draw_text(&v, &o, devnull);
	trace_draw_svg(&v, devnull, knobs & 1);
	trace_draw_html(&v, devnull);
	trace_view_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace tr = { .title = "fuzz", .nfiles = 1 };
	bool ok;

	if (ftruncate(mfd, 0) ||
	    (size && pwrite(mfd, data, size, 0) != (ssize_t)size))
		abort();
	ok = trace_read_file(&tr, path, 0) == 0;
	check_notes(&tr, ok);
	if (ok && !trace_model(&tr)) {
		check_model(&tr);
		draw(&tr, size ? data[size - 1] : 0);
	}
	trace_free(&tr);
	return 0;
}
