// SPDX-License-Identifier: BSD-2-Clause
/*
 * netdev/capture.c: URXE_PCAP's pcapng file.  Block by block: a section
 * header (byte-order magic, version 1.0), one Ethernet interface, then an
 * enhanced packet block per frame, whose lengths agree at both ends, with
 * the direction in epb_flags and the comment given, if any, in
 * opt_comment.  libpcap reads the same file back frame for frame: the
 * rebuilt Ethernet/IPv4/UDP headers and the RoCE bytes as given.  %p in
 * the name becomes the pid; a file that cannot be made is an error.
 */
#include <check.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/netdev.h>

#include "testutil.h"

#define NFRAMES 3

static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
static const char *const comments[NFRAMES] = {
	NULL, "urxe fault: dropped (URXE_FAULTS): never sent", "",
};
static uint8_t roce[NFRAMES][64 + 3];

/* IPv4-mapped GIDs of 198.18.0.1 and 198.18.0.2. */
static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 };
static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };

static char *write_capture(void)
{
	char *dir = tu_mkdtemp(), *spec = tu_path(dir, "c-%p.pcapng"), *path;
	struct urxe_capture *c;
	unsigned int i;

	ck_assert_int_eq(urxe_capture_open(spec, mac, &c), 0);
	for (i = 0; i < NFRAMES; i++) {
		struct urxe_capture_pkt p = {
			.tx = i != 1, .src = i != 1 ? gid_a : gid_b,
			.dst = i != 1 ? gid_b : gid_a, .sport = 49152,
			.dport = 4791, .ttl = 64, .roce = roce[i],
			.len = (uint32_t)(sizeof(roce[i]) - i),	/* odd lengths pad */
			.comment = comments[i],
		};

		memset(roce[i], 0x40 + i, sizeof(roce[i]));
		urxe_capture_write(c, &p);
	}
	urxe_capture_close(c);
	urxe_capture_write(NULL, NULL);		/* no capture: nothing */
	path = malloc(strlen(dir) + 64);
	sprintf(path, "%s/c-%d.pcapng", dir, (int)getpid());
	free(spec);
	free(dir);
	return path;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* The options of an EPB at @b (@len bytes): its flags and comment. */
static void epb_options(const uint8_t *b, uint32_t len, uint32_t *flags,
			char *comment, size_t clen)
{
	uint32_t off = 28 + ((get32(b + 20) + 3) & ~3u);

	*flags = 0;
	comment[0] = '\0';
	while (off + 4 <= len - 4) {
		uint16_t code = get16(b + off), olen = get16(b + off + 2);

		if (code == 0)
			break;
		ck_assert_uint_le(off + 4 + olen, len - 4);
		if (code == 2 && olen == 4)
			*flags = get32(b + off + 4);
		if (code == 1) {
			ck_assert_uint_lt(olen, clen);
			memcpy(comment, b + off + 4, olen);
			comment[olen] = '\0';
		}
		off += 4 + ((olen + 3u) & ~3u);
	}
}

/* The blocks, one by one, as the pcapng spec lays them out. */
START_TEST(pcapng_blocks)
{
	char *path = write_capture(), comment[300];
	FILE *f = fopen(path, "rb");
	uint8_t b[4096];
	unsigned int nblk = 0, nepb = 0;
	uint32_t type, len, flags;

	ck_assert_msg(f != NULL, "no %s", path);
	while (fread(b, 1, 8, f) == 8) {
		type = get32(b);
		len = get32(b + 4);
		ck_assert_uint_eq(len % 4, 0);
		ck_assert_uint_le(len, sizeof(b));
		ck_assert_uint_eq(fread(b + 8, 1, len - 8, f), len - 8);
		ck_assert_uint_eq(get32(b + len - 4), len);	/* trailer */
		if (nblk == 0) {
			ck_assert_uint_eq(type, 0x0A0D0D0Au);
			ck_assert_uint_eq(get32(b + 8), 0x1A2B3C4Du);
			ck_assert_uint_eq(get16(b + 12), 1);
			ck_assert_uint_eq(get16(b + 14), 0);
		} else if (nblk == 1) {
			ck_assert_uint_eq(type, 1);		/* interface */
			ck_assert_uint_eq(get16(b + 8), 1);	/* Ethernet */
		} else {
			ck_assert_uint_eq(type, 6);		/* enhanced packet */
			ck_assert_uint_eq(get32(b + 8), 0);	/* interface 0 */
			ck_assert_uint_eq(get32(b + 20), get32(b + 24));
			ck_assert_uint_eq(get32(b + 20),
					  14 + 20 + 8 + sizeof(roce[0]) - nepb);
			epb_options(b, len, &flags, comment, sizeof(comment));
			ck_assert_uint_eq(flags & 3, nepb != 1 ? 2 : 1);
			ck_assert_str_eq(comment, comments[nepb] ? comments[nepb] : "");
			nepb++;
		}
		nblk++;
	}
	fclose(f);
	ck_assert_uint_eq(nepb, NFRAMES);
	unlink(path);
	free(path);
}
END_TEST

/* libpcap reads it: the frames, headers rebuilt, RoCE bytes as given. */
START_TEST(libpcap_reads_it)
{
	char *path = write_capture(), err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	unsigned int n = 0;
	pcap_t *p = pcap_open_offline(path, err);

	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_int_eq(pcap_datalink(p), DLT_EN10MB);
	while (pcap_next_ex(p, &h, &d) == 1) {
		ck_assert_uint_lt(n, NFRAMES);
		ck_assert_uint_eq(h->caplen, 14 + 20 + 8 + sizeof(roce[n]) - n);
		ck_assert_uint_eq(d[12], 0x08);			/* IPv4 */
		ck_assert_uint_eq(d[13], 0x00);
		/* Our MAC on our side: source when sent, else destination. */
		ck_assert(!memcmp(d + (n != 1 ? 6 : 0), mac, 6));
		ck_assert(!memcmp(d + 14 + 12, n != 1 ? gid_a + 12 : gid_b + 12, 4));
		ck_assert_uint_eq(d[14 + 20 + 2] << 8 | d[14 + 20 + 3], 4791);
		ck_assert(!memcmp(d + 14 + 20 + 8, roce[n], sizeof(roce[n]) - n));
		n++;
	}
	pcap_close(p);
	ck_assert_uint_eq(n, NFRAMES);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(open_fails)
{
	struct urxe_capture *c = NULL;

	ck_assert_int_eq(urxe_capture_open("/nonexistent-dir/x.pcapng", mac, &c),
			 -ENOENT);
	ck_assert_ptr_null(c);
}
END_TEST

/* Captures are the user's alone: 0600, never through a link or into a
 * file someone else made. */
START_TEST(private_file)
{
	char *dir = tu_mkdtemp(), *path, *link, *other;
	struct urxe_capture *c = NULL;
	struct stat st;
	mode_t old = umask(0);

	ck_assert_ptr_nonnull(dir);
	path = tu_path(dir, "cap.pcapng");
	link = tu_path(dir, "link.pcapng");
	other = tu_path(dir, "theirs.pcapng");
	ck_assert_int_eq(urxe_capture_open(path, mac, &c), 0);
	urxe_capture_close(c);
	umask(old);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(symlink(path, link), 0);
	c = NULL;
	ck_assert_int_lt(urxe_capture_open(link, mac, &c), 0);
	ck_assert_ptr_null(c);
	if (geteuid() == 0) {
		ck_assert_int_eq(tu_write_file(other, ""), 0);
		ck_assert_int_eq(chown(other, 65534, 65534), 0);
		ck_assert_int_eq(urxe_capture_open(other, mac, &c), -EACCES);
		ck_assert_ptr_null(c);
	}
	tu_rmtree(dir);
	free(dir);
	free(path);
	free(link);
	free(other);
}
END_TEST

static Suite *capture_suite(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tu_tcase(s, "capture", NULL, NULL);

	tcase_add_test(tc, pcapng_blocks);
	tcase_add_test(tc, libpcap_reads_it);
	tcase_add_test(tc, open_fails);
	tcase_add_test(tc, private_file);
	return s;
}

int main(void)
{
	return tu_run(capture_suite());
}
