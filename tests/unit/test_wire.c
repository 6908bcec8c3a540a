// SPDX-License-Identifier: BSD-2-Clause
/*
 * Wire codec: the derived opcode table (header offsets and lengths), BTH
 * and extension header round trips, 24-bit PSN arithmetic, and the ICRC
 * against frames captured from Linux's kernel Soft-RoCE (tests/vectors).
 */
#include <check.h>
#include <isa-l/crc.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>
#include <urxe/icrc.h>
#include <urxe/wire.h>

#include "testutil.h"

#ifndef URXE_VECTORS
#define URXE_VECTORS "tests/vectors"
#endif

static const struct {
	uint8_t opcode;
	const char *name;
	uint8_t hdr_len;
	int hdr;		/* one header to check the offset of, or -1 */
	uint8_t off;
} op_cases[] = {
	{ 0x04, "SEND_ONLY", 12, -1, 0 },
	{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", 16, URXE_HDR_IMMDT, 12 },
	{ 0x0a, "RDMA_WRITE_ONLY", 28, URXE_HDR_RETH, 12 },
	{ 0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, URXE_HDR_IMMDT, 28 },
	{ 0x0c, "RDMA_READ_REQUEST", 28, URXE_HDR_RETH, 12 },
	{ 0x0d, "RDMA_READ_RESPONSE_FIRST", 16, URXE_HDR_AETH, 12 },
	{ 0x0e, "RDMA_READ_RESPONSE_MIDDLE", 12, -1, 0 },
	{ 0x11, "ACKNOWLEDGE", 16, URXE_HDR_AETH, 12 },
	{ 0x12, "ATOMIC_ACKNOWLEDGE", 24, URXE_HDR_ATMACK, 16 },
	{ 0x13, "COMPARE_SWAP", 40, URXE_HDR_ATMETH, 12 },
	{ 0x14, "FETCH_ADD", 40, URXE_HDR_ATMETH, 12 },
	{ 0x17, "SEND_ONLY_WITH_INVALIDATE", 16, URXE_HDR_IETH, 12 },
	{ 0x24, "SEND_ONLY", 12, -1, 0 },			/* UC */
	{ 0x2b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, URXE_HDR_RETH, 12 },
	{ 0x64, "SEND_ONLY", 20, URXE_HDR_DETH, 12 },		/* UD */
	{ 0x65, "SEND_ONLY_WITH_IMMEDIATE", 24, URXE_HDR_IMMDT, 20 },
	{ 0xa4, "SEND_ONLY", 16, URXE_HDR_XRCETH, 12 },		/* XRC */
	{ 0xaa, "RDMA_WRITE_ONLY", 32, URXE_HDR_RETH, 16 },
	{ 0xab, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 36, URXE_HDR_IMMDT, 32 },
	{ 0xb3, "COMPARE_SWAP", 44, URXE_HDR_ATMETH, 16 },
	{ 0xb1, "ACKNOWLEDGE", 16, URXE_HDR_AETH, 12 },		/* no XRCETH */
	{ 0xad, "RDMA_READ_RESPONSE_FIRST", 16, URXE_HDR_AETH, 12 },
};

START_TEST(opcode_layout)
{
	const struct urxe_opinfo *e = urxe_opinfo(op_cases[_i].opcode);

	ck_assert_msg(e->flags & URXE_F_VALID, "opcode 0x%02x undefined",
		      op_cases[_i].opcode);
	ck_assert_str_eq(e->name, op_cases[_i].name);
	ck_assert_uint_eq(e->hdr_len, op_cases[_i].hdr_len);
	if (op_cases[_i].hdr >= 0) {
		ck_assert(e->hdrs & URXE_HDR_BIT(op_cases[_i].hdr));
		ck_assert_uint_eq(e->off[op_cases[_i].hdr], op_cases[_i].off);
	}
}
END_TEST

START_TEST(opcode_undefined)
{
	/* UC has no READ/atomics/ACKs, UD only SEND_ONLY(+IMM), RD none. */
	static const uint8_t undef[] = { 0x15, 0x2c, 0x31, 0x33, 0x60, 0x66,
					 0x6a, 0x44, 0xb5, 0xff, 0xe0 };
	unsigned int i;

	for (i = 0; i < sizeof(undef); i++)
		ck_assert_msg(!(urxe_opinfo(undef[i])->flags & URXE_F_VALID),
			      "opcode 0x%02x should be undefined", undef[i]);
}
END_TEST

START_TEST(opcode_xrceth_requests_only)
{
	unsigned int op;

	for (op = 0; op < 0x20; op++) {
		const struct urxe_opinfo *e = urxe_opinfo((uint8_t)(0xa0 | op));

		if (!(e->flags & URXE_F_VALID))
			continue;
		ck_assert_int_eq(!!(e->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH)),
				 !!(e->flags & URXE_F_REQ));
		ck_assert_uint_eq(e->hdr_len, urxe_opinfo((uint8_t)op)->hdr_len +
				  ((e->flags & URXE_F_REQ) ? URXE_XRCETH_LEN : 0));
	}
}
END_TEST

START_TEST(bth_roundtrip)
{
	struct urxe_bth in = {
		.opcode = 0x0a, .se = 1, .mig = 1, .pad = 3, .tver = 0,
		.pkey = 0xffff, .fecn = 0, .becn = 1, .dqpn = 0x12345,
		.ackreq = 1, .psn = 0xfedcba,
	}, out;
	uint8_t p[URXE_BTH_LEN];

	urxe_bth_put(p, &in);
	ck_assert_uint_eq(p[1], 0xf0);
	ck_assert_uint_eq(p[8], 0x80);
	urxe_bth_get(p, &out);
	ck_assert_uint_eq(out.opcode, in.opcode);
	ck_assert(out.se == 1 && out.mig == 1 && out.pad == 3 && out.tver == 0);
	ck_assert_uint_eq(out.pkey, in.pkey);
	ck_assert(out.fecn == 0 && out.becn == 1 && out.ackreq == 1);
	ck_assert_uint_eq(out.dqpn, in.dqpn);
	ck_assert_uint_eq(out.psn, in.psn);
}
END_TEST

START_TEST(reth_atmeth_roundtrip)
{
	struct urxe_reth r = { 0x0102030405060708ull, 0xa1b2c3d4, 65536 }, r2;
	struct urxe_atmeth a = { 0x1000, 0x77, 0xdeadbeefcafef00dull, 42 }, a2;
	uint8_t p[URXE_ATMETH_LEN];

	urxe_reth_put(p, &r);
	ck_assert_uint_eq(p[0], 0x01);
	urxe_reth_get(p, &r2);
	ck_assert(r.va == r2.va && r.rkey == r2.rkey && r.len == r2.len);
	urxe_atmeth_put(p, &a);
	urxe_atmeth_get(p, &a2);
	ck_assert(a.va == a2.va && a.rkey == a2.rkey &&
		  a.swap_add == a2.swap_add && a.cmp == a2.cmp);
}
END_TEST

START_TEST(psn_arith)
{
	ck_assert_uint_eq(urxe_psn_add(0xffffff, 1), 0);
	ck_assert_uint_eq(urxe_psn_add(0xfffffe, 5), 3);
	ck_assert_int_eq(urxe_psn_diff(3, 0xfffffe), 5);
	ck_assert_int_eq(urxe_psn_diff(0xfffffe, 3), -5);
	ck_assert(urxe_psn_before(0xffffff, 0));
	ck_assert(!urxe_psn_before(0, 0xffffff));
	ck_assert(!urxe_psn_before(7, 7));
	ck_assert_int_eq(urxe_psn_diff(0x800000, 0), -0x800000);
	ck_assert_int_eq(urxe_psn_diff(0x7fffff, 0), 0x7fffff);
}
END_TEST

/* Every frame kernel rxe sent carries the ICRC we compute for it. */
START_TEST(icrc_kernel_vectors)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned int n = 0, good = 0;
	pcap_t *p;

	p = pcap_open_offline(URXE_VECTORS "/kernel-rxe-rc-send.pcap", errbuf);
	ck_assert_msg(p, "%s", errbuf);
	while (pcap_next_ex(p, &h, &data) == 1) {
		bool ok;
		uint32_t icrc;

		ck_assert_uint_gt(h->caplen, 14 + 20 + 8 + 12 + 4);
		icrc = urxe_icrc_frame(data + 14, h->caplen - 14, &ok);
		ck_assert(ok);
		n++;
		good += icrc == urxe_icrc_load(data + h->caplen - 4);
	}
	pcap_close(p);
	ck_assert_uint_eq(n, 80);
	ck_assert_uint_eq(good, n);
}
END_TEST

/*
 * Through a UDP socket the IPv4 ID is unknown: kernel rxe increments it,
 * and the receive check solves for it.  Every vector passes; a corrupted
 * payload byte or a wrong address does not.
 */
START_TEST(icrc_rx_solves_ipv4_id)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned int n = 0;
	pcap_t *p;

	p = pcap_open_offline(URXE_VECTORS "/kernel-rxe-rc-send.pcap", errbuf);
	ck_assert_msg(p, "%s", errbuf);
	while (pcap_next_ex(p, &h, &data) == 1) {
		const uint8_t *ip = data + 14, *udp = ip + 20, *roce = udp + 8;
		uint32_t len = h->caplen - 14 - 20 - 8;
		struct urxe_rx_meta meta;
		uint8_t copy[4096];

		memset(&meta, 0, sizeof(meta));
		meta.sgid.raw[10] = meta.sgid.raw[11] = 0xff;
		meta.dgid.raw[10] = meta.dgid.raw[11] = 0xff;
		memcpy(meta.sgid.raw + 12, ip + 12, 4);
		memcpy(meta.dgid.raw + 12, ip + 16, 4);
		meta.sport = urxe_get16(udp);
		meta.dport = urxe_get16(udp + 2);
		ck_assert_uint_ne(urxe_get16(ip + 4), 0);	/* real IDs */
		ck_assert_msg(urxe_icrc_check_rx(roce, len, &meta, NULL),
			      "frame %u rejected", n);
		ck_assert_uint_le(len, sizeof(copy));
		memcpy(copy, roce, len);
		copy[len / 2] ^= 0x10;
		ck_assert(!urxe_icrc_check_rx(copy, len, &meta, NULL));
		meta.dgid.raw[15] ^= 1;
		ck_assert(!urxe_icrc_check_rx(roce, len, &meta, NULL));
		n++;
	}
	pcap_close(p);
	ck_assert_uint_eq(n, 80);
}
END_TEST

/*
 * Segment i of a GSO send carries IPv4 ID i: the delta turns an ICRC made
 * for ID 0 into the one for ID i (as computed from a real header), and a
 * receiver told to expect ID i (GRO, ip_id_hint) accepts it exactly.
 */
START_TEST(icrc_ipv4_id_delta)
{
	static const uint8_t src[16] = { [10] = 0xff, 0xff, 127, 117, 0, 3 };
	static const uint8_t dst[16] = { [10] = 0xff, 0xff, 127, 117, 0, 4 };
	uint8_t pkt[4112 + 4], ph[68];
	struct urxe_rx_meta meta;
	struct urxe_icrc c;
	uint32_t len = sizeof(pkt), i0, want;
	unsigned int k;
	size_t ip_len;
	uint16_t id, got;

	for (k = 0; k < sizeof(pkt); k++)
		pkt[k] = (uint8_t)(k * 7 + 3);
	i0 = urxe_icrc_tx(NULL, src, dst, 0xc001, pkt, len - 4);
	ck_assert_uint_eq(urxe_icrc_ipv4_id_delta(len, 0), 0);
	memset(&meta, 0, sizeof(meta));
	memcpy(meta.sgid.raw, src, 16);
	memcpy(meta.dgid.raw, dst, 16);
	meta.sport = 0xc001;
	meta.dport = 4791;
	for (id = 1; id < 64; id += 7) {
		ip_len = urxe_icrc_pseudo_hdr(ph, src, dst, 0xc001, 4791, len,
					      id, true);
		urxe_icrc_begin(&c, ph, ip_len, ph + ip_len, pkt);
		urxe_icrc_update(&c, pkt + 12, len - 12 - 4);
		want = urxe_icrc_end(&c);
		ck_assert_uint_eq(i0 ^ urxe_icrc_ipv4_id_delta(len, id), want);
		urxe_icrc_store(pkt + len - 4, want);
		meta.ip_id_hint = id;
		ck_assert(urxe_icrc_check_rx(pkt, len, &meta, NULL));
		ck_assert(urxe_icrc_rx_ipv4_id(pkt, len, &meta, &got));
		ck_assert_uint_eq(got, id);
		/* Solved without the hint, too: the same ID comes out. */
		meta.ip_id_hint = 0;
		ck_assert(urxe_icrc_rx_ipv4_id(pkt, len, &meta, &got));
		ck_assert_uint_eq(got, id);
		/* A wrong hint is not taken for the truth. */
		meta.ip_id_hint = (uint16_t)(id + 1);
		ck_assert(urxe_icrc_rx_ipv4_id(pkt, len, &meta, &got));
		ck_assert_uint_eq(got, id);
	}
}
END_TEST

/*
 * A connected urxe sender's IDs: a flow's counter, one per datagram,
 * segment i of a GRO datagram at its number + i.  The receiver with its
 * own tables accepts them all - two flows of one source with counters far
 * apart, interleaved - and predicts each but the first of a flow (a
 * corrupted copy fails either way); with no silence before it, an ID far
 * from where its flow was is refused, and so is a replay of an old one
 * (datagrams with a UDP checksum, as connected senders send); the delta for
 * ID x is the XOR of its bits' columns (byte tables agree with bit by bit).
 */
static void make_pkt(uint8_t *pkt, uint32_t len, uint16_t sport, uint16_t id,
		     uint32_t seed)
{
	static const uint8_t src[16] = { [10] = 0xff, 0xff, 198, 18, 0, 7 };
	static const uint8_t dst[16] = { [10] = 0xff, 0xff, 198, 18, 0, 8 };
	uint32_t k;

	for (k = 0; k < len - 4; k++)
		pkt[k] = (uint8_t)(k * 11 + seed);
	urxe_icrc_store(pkt + len - 4,
			urxe_icrc_tx(NULL, src, dst, sport, pkt, len - 4) ^
				urxe_icrc_ipv4_id_delta(len, id));
}

START_TEST(icrc_rx_connected_counters)
{
	static struct urxe_icrc_ids ids;
	struct urxe_rx_meta meta;
	uint8_t pkt[64], bad[64];
	uint16_t base[2] = { 40000, 9000 }, sport[2] = { 0xc001, 0xc002 };
	unsigned int r, f, i, bit;
	uint32_t d;

	memset(&meta, 0, sizeof(meta));
	meta.sgid.raw[10] = meta.sgid.raw[11] = 0xff;
	meta.sgid.raw[12] = 198, meta.sgid.raw[13] = 18, meta.sgid.raw[15] = 7;
	meta.dgid.raw[10] = meta.dgid.raw[11] = 0xff;
	meta.dgid.raw[12] = 198, meta.dgid.raw[13] = 18, meta.dgid.raw[15] = 8;
	meta.dport = 4791;
	meta.udp_csum = true;
	for (r = 0; r < 50; r++) {
		for (f = 0; f < 2; f++) {
			meta.sport = sport[f];
			/* datagram number base+r: segments 0 and 1 (GRO) */
			for (i = 0; i < 2; i++) {
				make_pkt(pkt, sizeof(pkt), sport[f],
					 (uint16_t)(base[f] + r + i), r * 2 + i);
				meta.ip_id_hint = (uint16_t)i;
				meta.now_ns = r * 1000;
				memcpy(bad, pkt, sizeof(pkt));
				bad[20] ^= 4;
				ck_assert(!urxe_icrc_check_rx(bad, sizeof(bad),
							      &meta, &ids));
				ck_assert_msg(urxe_icrc_check_rx(pkt, sizeof(pkt),
								 &meta, &ids),
					      "flow %u datagram %u segment %u",
					      f, r, i);
				if (r || i)
					ck_assert(urxe_icrc_check_rx_exact(pkt,
						sizeof(pkt), &(struct urxe_rx_meta){
						.sgid = meta.sgid, .dgid = meta.dgid,
						.sport = meta.sport, .dport = 4791,
						.ip_id_hint = (uint16_t)(base[f] + r + i) }));
			}
		}
	}
	/* Far ahead of the flow, with no silence before it. */
	meta.sport = sport[0];
	meta.ip_id_hint = 0;
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] + 20000), 1);
	ck_assert(!urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	/* Back where the flow was long ago: a replay. */
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] - 200), 2);
	ck_assert(!urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	/* Where it is: taken. */
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] + 50), 3);
	ck_assert(urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	/*
	 * A new instance on the port: unconnected at first (ID 0), taken, and
	 * the flow's record stays; its socket then connects, 2 ms after the
	 * flow's last counted ID (but not after the ID 0): a jump, taken.
	 */
	meta.now_ns += 1500000;
	make_pkt(pkt, sizeof(pkt), sport[0], 0, 4);
	ck_assert(urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	meta.now_ns += 600000;
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] + 30000), 5);
	ck_assert(urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	/* ... and followed from there; a jump with no silence is refused. */
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] + 30001), 6);
	ck_assert(urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));
	make_pkt(pkt, sizeof(pkt), sport[0], (uint16_t)(base[0] + 10), 7);
	ck_assert(!urxe_icrc_check_rx(pkt, sizeof(pkt), &meta, &ids));

	for (i = 1; i < 65536; i += 97) {
		d = 0;
		for (bit = 0; bit < 16; bit++)
			if (i & (1u << bit))
				d ^= urxe_icrc_ipv4_id_delta(64, (uint16_t)(1u << bit));
		ck_assert_uint_eq(urxe_icrc_ipv4_id_delta(64, (uint16_t)i), d);
	}
}
END_TEST

/*
 * The one-pass start over a small packet's bytes gives the CRC of the
 * header start followed by the same bytes, at every length around its
 * limit; and the LRH constant is the CRC of eight 0xFF bytes.
 */
/*
 * The engine keeps the CRC of the IPv4 and UDP headers per flow and
 * length: with the cache, a packet's ICRC is the one computed from its
 * whole pseudo header, whether the entry is new, hit, or taken over by
 * another flow (12 flows, some apart only in a port or the length, share 8
 * entries); IPv6 flows go without it.  A receiver with the cache accepts
 * each packet as sent with an ID, and refuses it with one bit changed.
 */
START_TEST(icrc_header_cache)
{
	static struct urxe_icrc_ids ids, rx_ids;
	static uint8_t pkt[4200];
	uint8_t src[16] = { [10] = 0xff, 0xff, 198, 18, 0, 1 };
	uint8_t dst[16] = { [10] = 0xff, 0xff, 198, 18, 0, 2 };
	uint8_t ph[68];
	struct urxe_rx_meta meta;
	struct urxe_icrc c;
	uint32_t seed = 12345, len, want, k;
	uint16_t sport, id;
	size_t ip_len;
	unsigned int i, f, v6;

	for (i = 0; i < 3000; i++) {
		seed = seed * 1103515245u + 12345u;
		f = (seed >> 8) % 12;
		v6 = f == 11;
		src[0] = v6 ? 0x20 : 0;
		src[1] = v6 ? 0x01 : 0;
		src[15] = (uint8_t)(1 + f % 3);
		dst[15] = (uint8_t)(10 + f / 3);
		sport = (uint16_t)(0xc000 + f % 2);
		len = f < 6 ? 20 + 4 * (f % 2) : 16 + 4 * ((seed >> 16) % 1046);
		for (k = 0; k < len - 4; k++)
			pkt[k] = (uint8_t)(k * 13 + seed);
		ip_len = urxe_icrc_pseudo_hdr(ph, src, dst, sport, 4791, len, 0,
					      true);
		urxe_icrc_begin(&c, ph, ip_len, ph + ip_len, pkt);
		urxe_icrc_update(&c, pkt + 12, len - 12 - 4);
		want = urxe_icrc_end(&c);
		ck_assert_uint_eq(urxe_icrc_tx(&ids, src, dst, sport, pkt,
					       len - 4), want);
		ck_assert_uint_eq(urxe_icrc_tx(NULL, src, dst, sport, pkt,
					       len - 4), want);
		if (v6)
			continue;
		id = (uint16_t)(seed >> 3);
		urxe_icrc_store(pkt + len - 4,
				want ^ urxe_icrc_ipv4_id_delta(len, id));
		memset(&meta, 0, sizeof(meta));
		memcpy(meta.sgid.raw, src, 16);
		memcpy(meta.dgid.raw, dst, 16);
		meta.sport = sport;
		meta.dport = 4791;
		meta.ip_id_hint = id;
		ck_assert(urxe_icrc_check_rx(pkt, len, &meta, &rx_ids));
		/* (byte 4 of the BTH is not covered) */
		pkt[5 + (seed >> 4) % (len - 9)] ^= 0x10;
		ck_assert(!urxe_icrc_check_rx(pkt, len, &meta, &rx_ids));
	}
}
END_TEST

START_TEST(icrc_begin_n_is_begin_then_update)
{
	static const uint8_t ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	static const uint8_t src[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 };
	static const uint8_t dst[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };
	struct urxe_icrc a, b;
	uint8_t ph[68], pkt[400];
	size_t ip_len, len, took;
	unsigned int k;

	ck_assert_uint_eq(crc32_gzip_refl(0, ones, sizeof(ones)),
			  URXE_ICRC_LRH_ONES);
	for (k = 0; k < sizeof(pkt); k++)
		pkt[k] = (uint8_t)(k * 13 + 5);
	for (len = 12; len <= sizeof(pkt); len++) {
		ip_len = urxe_icrc_pseudo_hdr(ph, src, dst, 0xc002, 4791,
					      (uint32_t)len + 4, 0, true);
		urxe_icrc_begin(&a, ph, ip_len, ph + ip_len, pkt);
		urxe_icrc_update(&a, pkt + 12, len - 12);
		took = urxe_icrc_begin_n(&b, ph, ip_len, ph + ip_len, pkt, len);
		ck_assert_uint_ge(took, 12);
		ck_assert_uint_le(took, len);
		urxe_icrc_update(&b, pkt + took, len - took);
		ck_assert_uint_eq(urxe_icrc_end(&a), urxe_icrc_end(&b));
	}
}
END_TEST

/* A flipped bit anywhere outside the masked fields changes the ICRC. */
START_TEST(icrc_covers_invariant_fields)
{
	uint8_t f[20 + 8 + 12 + 8 + 4] = { 0x45 };
	uint32_t base, c;
	unsigned int bit;
	bool ok;

	f[9] = 17;
	f[20 + 3] = 0xb7;	/* dport 4791 */
	f[20 + 2] = 0x12;
	base = urxe_icrc_frame(f, sizeof(f), &ok);
	ck_assert(ok);
	for (bit = 0; bit < (sizeof(f) - 4) * 8; bit++) {
		unsigned int byte = bit / 8;
		bool masked = byte == 1 || byte == 8 || byte == 10 || byte == 11 ||
			      byte == 26 || byte == 27 || byte == 32;

		f[byte] ^= (uint8_t)(1u << (bit % 8));
		c = urxe_icrc_frame(f, sizeof(f), &ok);
		f[byte] ^= (uint8_t)(1u << (bit % 8));
		if (byte == 0 && bit % 8 >= 4)
			continue;	/* version nibble: IPv6 path */
		if (masked)
			ck_assert_uint_eq(c, base);
		else
			ck_assert_msg(c != base, "bit %u not covered", bit);
	}
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tu_tcase(s, "core", NULL, NULL);

	tcase_add_loop_test(tc, opcode_layout, 0,
			    sizeof(op_cases) / sizeof(op_cases[0]));
	tcase_add_test(tc, opcode_undefined);
	tcase_add_test(tc, opcode_xrceth_requests_only);
	tcase_add_test(tc, bth_roundtrip);
	tcase_add_test(tc, reth_atmeth_roundtrip);
	tcase_add_test(tc, psn_arith);
	tcase_add_test(tc, icrc_kernel_vectors);
	tcase_add_test(tc, icrc_covers_invariant_fields);
	tcase_add_test(tc, icrc_begin_n_is_begin_then_update);
	tcase_add_test(tc, icrc_rx_solves_ipv4_id);
	tcase_add_test(tc, icrc_ipv4_id_delta);
	tcase_add_test(tc, icrc_rx_connected_counters);
	tcase_add_test(tc, icrc_header_cache);
	return s;
}

int main(void)
{
	return tu_run(wire_suite());
}
