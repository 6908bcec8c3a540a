// SPDX-License-Identifier: BSD-2-Clause
/*
 * What libpcap does not hand out of a pcapng file: each packet's direction
 * (the epb_flags option) and comments.  URXE_PCAP writes both
 * (netdev/capture.c): the direction tells the sender's copy of a packet
 * from the receiver's, and the fault injector comments on every frame it
 * touched ("urxe fault: dropped ...").  A second, small pass over the
 * file's blocks (pcapng spec, sections 3-4) collects them, one note per
 * packet block in file order: the order in which libpcap returns the
 * packets.  Every length is checked; a file that is not pcapng yields no
 * notes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define BT_SHB 0x0A0D0D0Au
#define BT_PB 0x00000002u	/* obsolete Packet Block */
#define BT_SPB 0x00000003u
#define BT_EPB 0x00000006u
#define MAGIC 0x1A2B3C4Du
#define MAGIC_SWAPPED 0x4D3C2B1Au
#define OPT_COMMENT 1
#define OPT_FLAGS 2

struct reader {
	const uint8_t *b;
	size_t len;
	bool swap;		/* the section's byte order is not ours */
};

static uint32_t rd32(const struct reader *r, size_t off)
{
	uint32_t v;

	memcpy(&v, r->b + off, 4);
	return r->swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const struct reader *r, size_t off)
{
	uint16_t v;

	memcpy(&v, r->b + off, 2);
	return r->swap ? __builtin_bswap16(v) : v;
}

/* The marks a comment of the fault injector stands for. */
static uint32_t comment_marks(const uint8_t *s, size_t n)
{
	static const struct { const char *word; uint32_t mark; } kinds[] = {
		{ "dropped", TM_DROP }, { "duplicate", TM_DUP },
		{ "reordered", TM_REORDER }, { "corrupted", TM_CORRUPT },
	};
	static const char pfx[] = "urxe fault: ";
	size_t i, k = sizeof(pfx) - 1;

	if (n < k || memcmp(s, pfx, k))
		return 0;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t w = strlen(kinds[i].word);

		if (n >= k + w && !memcmp(s + k, kinds[i].word, w))
			return kinds[i].mark;
	}
	return 0;
}

/* Reads the options in [off, end) into @nt. */
static void read_opts(const struct reader *r, size_t off, size_t end,
		      struct trace_note *nt)
{
	while (off + 4 <= end) {
		uint16_t code = rd16(r, off), olen = rd16(r, off + 2);

		if (!code || off + 4 + olen > end)
			return;
		if (code == OPT_FLAGS && olen == 4)
			nt->dir = (uint8_t)(rd32(r, off + 4) & 3);
		else if (code == OPT_COMMENT)
			nt->marks |= comment_marks(r->b + off + 4, olen);
		off += 4 + ((olen + 3u) & ~3u);
	}
}

/* A packet block at @off of @blen bytes: its note. */
static void packet_note(const struct reader *r, uint32_t type, size_t off,
			size_t blen, struct trace_note *nt)
{
	size_t caplen, start;

	memset(nt, 0, sizeof(*nt));
	if (type == BT_SPB || blen < 32)
		return;			/* a Simple Packet Block has no options */
	caplen = rd32(r, off + 20);
	start = off + 28 + ((caplen + 3) & ~(size_t)3);
	if (caplen < blen && start <= off + blen - 4)
		read_opts(r, start, off + blen - 4, nt);
}

static int grow(struct trace_note **v, unsigned int *cap, unsigned int n)
{
	struct trace_note *p;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 256;
	p = realloc(*v, *cap * sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

static int walk(struct reader *r, struct trace_note **out, unsigned int *n)
{
	unsigned int cap = 0;
	size_t off = 0;

	while (off + 12 <= r->len) {
		uint32_t type, blen;

		if (rd32(r, off) == BT_SHB) {
			uint32_t m;

			memcpy(&m, r->b + off + 8, 4);
			if (m != MAGIC && m != MAGIC_SWAPPED)
				return 0;
			r->swap = m == MAGIC_SWAPPED;
		}
		type = rd32(r, off);
		blen = rd32(r, off + 4);
		if (blen < 12 || blen % 4 || blen > r->len - off)
			return 0;	/* damaged: keep what was read */
		if (type == BT_EPB || type == BT_SPB || type == BT_PB) {
			if (grow(out, &cap, *n))
				return -ENOMEM;
			packet_note(r, type, off, blen, &(*out)[(*n)++]);
		}
		off += blen;
	}
	return 0;
}

int trace_pcapng_notes(const char *file, struct trace_note **out,
		       unsigned int *n)
{
	struct reader r = { 0 };
	uint8_t *buf = NULL;
	size_t cap = 0, got;
	FILE *f = fopen(file, "rb");
	int rc;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	do {
		uint8_t *nb = cap - r.len < 65536 ? realloc(buf, cap = cap * 2 + 65536) : buf;

		if (!nb) {
			free(buf);
			fclose(f);
			return -ENOMEM;
		}
		buf = nb;
		got = fread(buf + r.len, 1, cap - r.len, f);
		r.len += got;
	} while (got);
	fclose(f);
	r.b = buf;
	rc = r.len >= 12 && rd32(&r, 0) == BT_SHB ? walk(&r, out, n) : 0;
	free(buf);
	return rc;
}
