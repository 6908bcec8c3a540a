// SPDX-License-Identifier: BSD-2-Clause
/*
 * The project's strict RoCEv2 frame validator (urxe-validate, and
 * urxe trace --check).  Every capture the test suite takes goes through
 * it (tshark 4.0 checks no ICRC and calls XRC opcodes unknown: a second
 * opinion, not the judge).
 *
 * For each UDP/4791 frame it checks: the IP and UDP headers (IPv4 without
 * options, lengths consistent, UDP checksum 0 or correct on IPv4 and
 * correct on IPv6), the BTH (a defined opcode, TVer 0, reserved bits
 * zero), the headers the opcode needs and nothing more (lengths from the
 * opcode table; XRC requests carry XRCETH, its reserved byte zero), the pad (payload + pad a multiple of 4, no pad without
 * payload), payload at most 4096 bytes and first/middle packets of an IB
 * MTU size, the ICRC against the real IP header, and PSN continuity of
 * every request stream: a PSN either follows the previous one (READ
 * requests advance by their response count) or goes back (a
 * retransmission); it never jumps ahead.
 *
 * A retransmission (going back) leaves the stream's front where it was;
 * with -l (a capture of a lossy run, where frames were dropped before the
 * capture saw them) a jump ahead is counted as a gap instead of an error.
 * With -o (a capture taken on the sending host, where the device computes
 * UDP checksums: tcpdump sees them before it does) a checksum field that
 * holds exactly the pseudo-header sum, as Linux leaves it for the device,
 * is accepted too.
 *
 * A packet to QP1 (the GSI: RDMA CM's MADs) must be a UD SEND_ONLY with
 * P_Key 0xFFFF, the GSI's Q_Key 0x80010000 and one 256-byte MAD of
 * base version 1; a CM MAD (class 0x07) must be of class version 2, a
 * Send with status 0, and decode as a CM message urxe knows (REQ ...
 * SIDR_REP, LAP, APR: rdmacm/mad.c).
 *
 * usage: urxe-validate [-v] [-l] [-o] FILE...   exit 0 when every frame is valid
 * (and the same as urxe trace --check [-v] [-l] [-o] FILE...).
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>
#include <urxe/wire.h>

#include "../rdmacm/mad.h"
#include "cli.h"
#include "frame.h"

#define MAX_FLOWS 4096

struct flow {
	uint8_t src[16], dst[16];
	uint32_t dqpn;
	uint32_t next_lo, next_hi;	/* the next new PSN lies in [lo, hi] */
	bool started;
	bool used;
};

struct stats {
	unsigned long frames, roce, bad, retrans, gaps;
	unsigned long per_opcode[256];
};

static struct flow flows[MAX_FLOWS];
static int verbose;
static int lossy;	/* -l: the capture saw losses; gaps are not errors */
static int offload;	/* -o: partial (offloaded) UDP checksums are fine */

static struct flow *flow_of(const uint8_t *src, const uint8_t *dst,
			    uint32_t dqpn)
{
	unsigned int h = dqpn * 2654435761u, i;

	for (i = 0; i < 16; i++)
		h = h * 31 + src[i] + dst[i] * 7u;
	for (i = 0; i < MAX_FLOWS; i++) {
		struct flow *f = &flows[(h + i) % MAX_FLOWS];

		if (!f->used) {
			f->used = true;
			memcpy(f->src, src, 16);
			memcpy(f->dst, dst, 16);
			f->dqpn = dqpn;
			return f;
		}
		if (f->dqpn == dqpn && !memcmp(f->src, src, 16) &&
		    !memcmp(f->dst, dst, 16))
			return f;
	}
	return NULL;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += urxe_get16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

/* What Linux leaves in the field for a device that offloads the sum. */
static uint16_t udp_csum_partial(bool v6, const uint8_t *ip, uint32_t udp_len)
{
	uint32_t sum = csum_add(0, v6 ? ip + 8 : ip + 12, v6 ? 32 : 8);

	return (uint16_t)csum_fold(sum + 17 + udp_len);
}

/* The UDP checksum over the pseudo header; 0 when correct. */
static uint16_t udp_csum(bool v6, const uint8_t *ip, const uint8_t *udp,
			 uint32_t udp_len)
{
	uint32_t sum = 0;

	if (v6) {
		sum = csum_add(sum, ip + 8, 32);
	} else {
		sum = csum_add(sum, ip + 12, 8);
	}
	sum += 17 + udp_len;
	sum = csum_add(sum, udp, udp_len);
	return (uint16_t)~csum_fold(sum);
}

static int fail(struct stats *st, unsigned long n, const char *what)
{
	/* The first errors tell the story; the count says the rest. */
	if (st->bad++ < 20)
		fprintf(stderr, "frame %lu: %s\n", n, what);
	return -1;
}

static bool is_ib_mtu(uint32_t n)
{
	return n == 256 || n == 512 || n == 1024 || n == 2048 || n == 4096;
}

/*
 * Requests of one stream (source, destination, QP) advance by one PSN, a
 * READ request by its number of response packets: with the path MTU
 * unknown here, anything from len/4096 to len/256 packets.  Going back is
 * a retransmission; jumping ahead is an error.
 */
static int check_psn(struct stats *st, unsigned long n, const uint8_t *src,
		     const uint8_t *dst, const struct urxe_bth *bth,
		     const struct urxe_opinfo *oi, const uint8_t *roce)
{
	uint32_t lo = 1, hi = 1;
	struct flow *f;

	if (!(oi->flags & URXE_F_REQ) ||
	    urxe_opcode_transport(bth->opcode) == URXE_TR_UD)
		return 0;
	f = flow_of(src, dst, bth->dqpn);
	if (!f)
		return 0;
	if (oi->flags & URXE_F_READ) {
		struct urxe_reth r;

		urxe_reth_get(roce + oi->off[URXE_HDR_RETH], &r);
		lo = r.len ? (r.len + 4095) / 4096 : 1;
		hi = r.len ? (r.len + 255) / 256 : 1;
	}
	if (f->started) {
		int32_t from_lo = urxe_psn_diff(bth->psn, f->next_lo);
		int32_t span = urxe_psn_diff(f->next_hi, f->next_lo);

		if (from_lo < 0) {
			/* A retransmission: the stream's front stays put. */
			st->retrans++;
			return 0;
		}
		if (from_lo > span) {
			if (!lossy)
				return fail(st, n, "PSN jumps ahead in a request stream");
			st->gaps++;
		}
	}
	f->started = true;
	f->next_lo = urxe_psn_add(bth->psn, lo);
	f->next_hi = urxe_psn_add(bth->psn, hi);
	return 0;
}

#define GSI_QKEY 0x80010000u

/* A packet to QP1: one MAD, and a CM MAD that urxe's RDMA CM can read. */
static int check_gsi(struct stats *st, unsigned long n,
		     const struct urxe_bth *bth, const struct urxe_opinfo *oi,
		     const uint8_t *roce, uint32_t paylen)
{
	const uint8_t *mad = roce + oi->hdr_len;
	struct urxe_cm_msg m;

	if (bth->opcode != 0x64)	/* UD SEND_ONLY */
		return fail(st, n, "QP1 packet not a UD SEND_ONLY");
	if (bth->pkey != 0xffff)
		return fail(st, n, "QP1 packet's P_Key is not 0xFFFF");
	if (urxe_get32(roce + oi->off[URXE_HDR_DETH]) != GSI_QKEY)
		return fail(st, n, "QP1 packet's Q_Key is not 0x80010000");
	if (paylen != URXE_MAD_LEN)
		return fail(st, n, "QP1 payload is not one 256-byte MAD");
	if (mad[0] != 1)
		return fail(st, n, "MAD base version is not 1");
	if (mad[1] != URXE_CM_MGMT_CLASS)
		return 0;		/* another class: not ours to judge */
	if (mad[2] != URXE_CM_CLASS_VERSION)
		return fail(st, n, "CM MAD class version is not 2");
	if (mad[3] != 0x03)
		return fail(st, n, "CM MAD method is not Send");
	if (mad[4] || mad[5])
		return fail(st, n, "CM MAD status is not 0");
	if (urxe_cm_decode(mad, paylen, &m))
		return fail(st, n, "CM MAD of an unknown attribute");
	if (verbose)
		printf("%lu: CM %s\n", n, urxe_cm_attr_name(m.attr));
	return 0;
}

/* Checks one RoCE packet (BTH .. ICRC) inside its IP/UDP frame. */
static int check_roce(struct stats *st, unsigned long n,
		      const struct urxe_frame *f)
{
	const uint8_t *roce = f->roce;
	uint32_t len = f->roce_len, paylen;
	const struct urxe_opinfo *oi;
	struct urxe_bth bth;

	if (len < URXE_BTH_LEN + URXE_ICRC_LEN)
		return fail(st, n, "shorter than BTH + ICRC");
	urxe_bth_get(roce, &bth);
	oi = urxe_opinfo(bth.opcode);
	st->per_opcode[bth.opcode]++;
	if (!(oi->flags & URXE_F_VALID))
		return fail(st, n, "undefined opcode");
	if (bth.tver)
		return fail(st, n, "BTH TVer is not 0");
	if ((roce[4] & 0x3f) || (roce[8] & 0x7f))
		return fail(st, n, "BTH reserved bits set");
	if (len < (uint32_t)oi->hdr_len + bth.pad + URXE_ICRC_LEN)
		return fail(st, n, "shorter than the opcode's headers");
	if ((oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH)) &&
	    roce[oi->off[URXE_HDR_XRCETH]])
		return fail(st, n, "XRCETH reserved byte set");
	paylen = len - oi->hdr_len - URXE_ICRC_LEN;
	if ((paylen & 3))
		return fail(st, n, "payload + pad is not a multiple of 4");
	paylen -= bth.pad;
	if (!(oi->flags & URXE_F_PAYLOAD) && (paylen || bth.pad))
		return fail(st, n, "payload or pad on an opcode without payload");
	if (paylen > 4096)
		return fail(st, n, "payload larger than 4096 bytes");
	if ((oi->flags & URXE_F_PAYLOAD) && !(oi->flags & URXE_F_LAST) &&
	    !is_ib_mtu(paylen))
		return fail(st, n, "first/middle packet not of an IB MTU size");
	if (bth.pad && memcmp(roce + oi->hdr_len + paylen, "\0\0\0", bth.pad))
		return fail(st, n, "pad bytes not zero");
	if (!urxe_frame_icrc_ok(f))
		return fail(st, n, "bad ICRC");
	if (verbose)
		printf("%lu: %s qpn 0x%06x psn %u len %u\n", n, oi->name, bth.dqpn,
		       bth.psn, paylen);
	if (bth.dqpn == 1 && check_gsi(st, n, &bth, oi, roce, paylen))
		return -1;
	return check_psn(st, n, f->src, f->dst, &bth, oi, roce);
}

static int check_frame(struct stats *st, unsigned long n, int dlt,
		       const uint8_t *p, uint32_t caplen, uint32_t wirelen)
{
	struct urxe_frame f;
	const uint8_t *ip, *udp;
	uint32_t rest, ip_len, udp_len;
	bool v6;

	if (caplen != wirelen)
		return 0;		/* truncated capture: nothing to judge */
	if (!urxe_frame_locate(dlt, p, caplen, &f))
		return 0;
	ip = f.ip;
	udp = f.udp;
	rest = f.rest;
	ip_len = f.ip_len;
	v6 = f.v6;
	st->roce++;
	if (!v6 && ip_len != 20)
		return fail(st, n, "IPv4 header with options");
	if (!v6 && urxe_get16(ip + 2) != rest)
		return fail(st, n, "IPv4 total length disagrees with the frame");
	udp_len = urxe_get16(udp + 4);
	if (!urxe_frame_whole(&f))
		return fail(st, n, "UDP length disagrees with the IP length");
	if ((v6 || urxe_get16(udp + 6)) && udp_csum(v6, ip, udp, udp_len) &&
	    !(v6 && !urxe_get16(udp + 6)) &&
	    !(offload && urxe_get16(udp + 6) == udp_csum_partial(v6, ip, udp_len)))
		return fail(st, n, "bad UDP checksum");
	if (v6 && !urxe_get16(udp + 6))
		fprintf(stderr, "frame %lu: note: IPv6 UDP checksum 0 (kernel rxe does this)\n", n);
	return check_roce(st, n, &f);
}

static int validate(const char *file, struct stats *st)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	pcap_t *p;
	int dlt, rc;

	p = pcap_open_offline(file, err);
	if (!p) {
		fprintf(stderr, "%s: %s\n", file, err);
		return -1;
	}
	dlt = pcap_datalink(p);
	while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
		st->frames++;
		check_frame(st, st->frames, dlt, data, h->caplen, h->len);
	}
	pcap_close(p);
	return rc == -2 ? 0 : -1;
}

static void report(const struct stats *st)
{
	int op;

	printf("%lu frames, %lu RoCEv2, %lu invalid, %lu retransmitted, %lu gaps\n",
	       st->frames, st->roce, st->bad, st->retrans, st->gaps);
	for (op = 0; op < 256; op++)
		if (st->per_opcode[op])
			printf("  0x%02x %-32s %lu\n", op,
			       urxe_opinfo((uint8_t)op)->name ?
			       urxe_opinfo((uint8_t)op)->name : "?",
			       st->per_opcode[op]);
}

int urxe_cli_check(const char *prog, int argc, char **argv)
{
	static struct stats st;
	int i, files = 0;

	memset(&st, 0, sizeof(st));
	memset(flows, 0, sizeof(flows));
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		if (!strcmp(argv[i], "-l")) {
			lossy = 1;
			continue;
		}
		if (!strcmp(argv[i], "-o")) {
			offload = 1;
			continue;
		}
		if (validate(argv[i], &st))
			return 2;
		files++;
	}
	if (!files) {
		fprintf(stderr, "usage: %s [-v] [-l] [-o] FILE...\n", prog);
		return 2;
	}
	report(&st);
	if (!st.roce) {
		fprintf(stderr, "no RoCEv2 frame found\n");
		return 1;
	}
	return st.bad ? 1 : 0;
}
