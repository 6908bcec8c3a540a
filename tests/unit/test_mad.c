// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CM MAD codec (rdmacm/mad.c) against the spec's layouts, restated
 * here independently of the codec's own tables: every field of every
 * message alone at its maximum lands on exactly its wire bits and comes
 * back; random messages (every member of the structure set, the ones a
 * message does not carry included) round-trip; hand-built MADs for REQ,
 * MRA, REJ, REP, DREQ, SIDR_REQ and SIDR_REP decode to, and are encoded
 * from, known values; bad MADs are refused without side effects; the
 * RDMA IP CM header's exact bytes for IPv4 and IPv6.
 *
 * And the kernel's own: tests/vectors/kernel-rxe-cm.pcap holds one MAD of
 * each kind Linux's CM sent urxe from ../shared/vm (REQ, REJ, REP, RTU,
 * DREQ, DREP, SIDR_REQ, SIDR_REP): each decodes, names the addresses and
 * values of that run, and encodes back to the kernel's bytes but for the
 * bits urxe does not keep (the REQ's alternate path, which the kernel
 * sends as zeros anyway, and reserved bits).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "mad.h"
#include "testutil.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CM(off) (24 + (off))	/* MAD offset of a CM message offset */

#define MEM(x) offsetof(struct urxe_cm_msg, x), \
	sizeof(((struct urxe_cm_msg *)0)->x)

/*
 * A field as IBA 12.6 places it: @bits bits from bit @bit (0 = MSB) of
 * CM message byte @off, holding the member's bits @shift and up.  Byte
 * strings are their whole member (@bits = 8 * size).
 */
struct spec_field {
	uint16_t attr;
	const char *name;
	uint16_t off;
	uint8_t bit;
	uint16_t bits;
	size_t member, size;
	uint8_t shift;
};

#define F(a, o, b, n, x) { URXE_CM_##a, #a "." #x, o, b, n, MEM(x), 0 }
#define P(a, o, n, x, s) { URXE_CM_##a, #a "." #x, o, 0, n, MEM(x), s }
#define S(a, o, x) { URXE_CM_##a, #a "." #x, o, 0, \
	8 * sizeof(((struct urxe_cm_msg *)0)->x), MEM(x), 0 }

static const struct spec_field spec[] = {
	/* Table 106 (+ ECE vendor ID) */
	F(REQ, 0, 0, 32, local_id), F(REQ, 5, 0, 24, vendor_id),
	F(REQ, 8, 0, 64, service_id), F(REQ, 16, 0, 64, local_ca_guid),
	F(REQ, 28, 0, 32, local_qkey), F(REQ, 32, 0, 24, local_qpn),
	F(REQ, 35, 0, 8, resp_resources), F(REQ, 36, 0, 24, local_eecn),
	F(REQ, 39, 0, 8, init_depth), F(REQ, 40, 0, 24, remote_eecn),
	F(REQ, 43, 0, 5, remote_cm_timeout), F(REQ, 43, 5, 2, transport),
	F(REQ, 43, 7, 1, e2e_flow), F(REQ, 44, 0, 24, start_psn),
	F(REQ, 47, 0, 5, local_cm_timeout), F(REQ, 47, 5, 3, retry_count),
	F(REQ, 48, 0, 16, pkey), F(REQ, 50, 0, 4, path_mtu),
	F(REQ, 50, 4, 1, rdc_exists), F(REQ, 50, 5, 3, rnr_retry),
	F(REQ, 51, 0, 4, max_cm_retries), F(REQ, 51, 4, 1, srq),
	F(REQ, 51, 5, 3, ext_transport), F(REQ, 52, 0, 16, local_lid),
	F(REQ, 54, 0, 16, remote_lid), S(REQ, 56, local_gid),
	S(REQ, 72, remote_gid), F(REQ, 88, 0, 20, flow_label),
	F(REQ, 91, 2, 6, packet_rate), F(REQ, 92, 0, 8, traffic_class),
	F(REQ, 93, 0, 8, hop_limit), F(REQ, 94, 0, 4, sl),
	F(REQ, 94, 4, 1, subnet_local), F(REQ, 95, 0, 5, local_ack_timeout),
	/* Table 107 */
	F(MRA, 0, 0, 32, local_id), F(MRA, 4, 0, 32, remote_id),
	F(MRA, 8, 0, 2, msg_rejected), F(MRA, 9, 0, 5, service_timeout),
	/* Table 108 */
	F(REJ, 0, 0, 32, local_id), F(REJ, 4, 0, 32, remote_id),
	F(REJ, 8, 0, 2, msg_rejected), F(REJ, 9, 0, 7, reject_info_len),
	F(REJ, 10, 0, 16, reason), S(REJ, 12, ari),
	/* Table 110 (+ ECE vendor ID in three bytes) */
	F(REP, 0, 0, 32, local_id), F(REP, 4, 0, 32, remote_id),
	F(REP, 8, 0, 32, local_qkey), F(REP, 12, 0, 24, local_qpn),
	P(REP, 15, 8, vendor_id, 16), F(REP, 16, 0, 24, local_eecn),
	P(REP, 19, 8, vendor_id, 8), F(REP, 20, 0, 24, start_psn),
	P(REP, 23, 8, vendor_id, 0), F(REP, 24, 0, 8, resp_resources),
	F(REP, 25, 0, 8, init_depth), F(REP, 26, 0, 5, target_ack_delay),
	F(REP, 26, 5, 2, failover), F(REP, 26, 7, 1, e2e_flow),
	F(REP, 27, 0, 3, rnr_retry), F(REP, 27, 3, 1, srq),
	F(REP, 28, 0, 64, local_ca_guid),
	/* Tables 111, 112, 113 */
	F(RTU, 0, 0, 32, local_id), F(RTU, 4, 0, 32, remote_id),
	F(DREQ, 0, 0, 32, local_id), F(DREQ, 4, 0, 32, remote_id),
	F(DREQ, 8, 0, 24, local_qpn),
	F(DREP, 0, 0, 32, local_id), F(DREP, 4, 0, 32, remote_id),
	/* Tables 119, 120 (+ ECE vendor ID) */
	F(SIDR_REQ, 0, 0, 32, local_id), F(SIDR_REQ, 4, 0, 16, pkey),
	F(SIDR_REQ, 8, 0, 64, service_id),
	F(SIDR_REP, 0, 0, 32, local_id), F(SIDR_REP, 4, 0, 8, sidr_status),
	F(SIDR_REP, 5, 0, 8, add_info_len), P(SIDR_REP, 6, 16, vendor_id, 8),
	F(SIDR_REP, 8, 0, 24, local_qpn), P(SIDR_REP, 11, 8, vendor_id, 0),
	F(SIDR_REP, 12, 0, 64, service_id), F(SIDR_REP, 20, 0, 32, local_qkey),
	S(SIDR_REP, 24, ari),
};

/* The messages urxe_cm_encode() takes, with their private data's place. */
static const struct {
	uint16_t attr;
	uint16_t priv_off, priv_len;
} msgs[] = {
	{ URXE_CM_REQ, 140, URXE_CM_REQ_PRIV },
	{ URXE_CM_MRA, 10, URXE_CM_MRA_PRIV },
	{ URXE_CM_REJ, 84, URXE_CM_REJ_PRIV },
	{ URXE_CM_REP, 36, URXE_CM_REP_PRIV },
	{ URXE_CM_RTU, 8, URXE_CM_RTU_PRIV },
	{ URXE_CM_DREQ, 12, URXE_CM_DREQ_PRIV },
	{ URXE_CM_DREP, 8, URXE_CM_DREP_PRIV },
	{ URXE_CM_SIDR_REQ, 16, URXE_CM_SIDR_REQ_PRIV },
	{ URXE_CM_SIDR_REP, 96, URXE_CM_SIDR_REP_PRIV },
};

/* Every member but priv and priv_len, for comparisons. */
static const struct {
	const char *name;
	size_t off, size;
	bool is_bool;
} members[] = {
#define M(x) { #x, MEM(x), false }
#define B(x) { #x, MEM(x), true }
	M(attr), M(tid), M(attr_mod), M(local_id), M(remote_id),
	M(service_id), M(local_ca_guid), M(local_qkey), M(local_qpn),
	M(local_eecn), M(remote_eecn), M(resp_resources), M(init_depth),
	M(remote_cm_timeout), M(local_cm_timeout), M(transport), B(e2e_flow),
	M(start_psn), M(retry_count), M(pkey), M(path_mtu), B(rdc_exists),
	M(rnr_retry), M(max_cm_retries), B(srq), M(ext_transport),
	M(local_lid), M(remote_lid), M(local_gid), M(remote_gid),
	M(flow_label), M(packet_rate), M(traffic_class), M(hop_limit), M(sl),
	B(subnet_local), M(local_ack_timeout), M(target_ack_delay),
	M(failover), M(msg_rejected), M(reject_info_len), M(reason), M(ari),
	M(service_timeout), M(sidr_status), M(add_info_len), M(vendor_id),
#undef M
#undef B
};

static uint64_t ones(unsigned int bits)
{
	return bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
}

static uint64_t get_int(const struct urxe_cm_msg *m, size_t off, size_t size)
{
	const uint8_t *p = (const uint8_t *)m + off;
	uint64_t v = 0;

	/* Little- or big-endian host alike: read the member as its type. */
	switch (size) {
	case 1: { uint8_t x; memcpy(&x, p, 1); v = x; break; }
	case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
	case 8: memcpy(&v, p, 8); break;
	default: ck_abort_msg("member of size %zu", size);
	}
	return v;
}

static void set_int(struct urxe_cm_msg *m, size_t off, size_t size,
		    uint64_t v)
{
	uint8_t *p = (uint8_t *)m + off;

	switch (size) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	case 8: memcpy(p, &v, 8); break;
	default: ck_abort_msg("member of size %zu", size);
	}
}

static bool is_string(size_t size)
{
	return size > 8;
}

static int msg_index(uint16_t attr)
{
	for (size_t i = 0; i < NELEM(msgs); i++)
		if (msgs[i].attr == attr)
			return (int)i;
	ck_abort_msg("no message 0x%x", attr);
	return -1;
}

/* Sets bits [@first, @first + @n) of @buf, numbered from byte 0's MSB. */
static void set_bits(uint8_t *buf, unsigned int first, unsigned int n)
{
	for (unsigned int b = first; b < first + n; b++)
		buf[b / 8] |= (uint8_t)(0x80 >> (b % 8));
}

/* The common header urxe_cm_encode() must write. */
static void expect_hdr(uint8_t *mad, uint16_t attr, uint64_t tid,
		       uint32_t attr_mod)
{
	memset(mad, 0, URXE_MAD_LEN);
	mad[0] = 1;
	mad[1] = 0x07;
	mad[2] = 2;
	mad[3] = 0x03;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	for (int i = 0; i < 4; i++)
		mad[20 + i] = (uint8_t)(attr_mod >> (24 - 8 * i));
}

static void hexdiff(const uint8_t *got, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			fprintf(stderr, "  byte %zu: got %02x want %02x\n", i,
				got[i], want[i]);
}

static void assert_mad(const uint8_t *got, const uint8_t *want,
		       const char *what)
{
	if (memcmp(got, want, URXE_MAD_LEN)) {
		hexdiff(got, want, URXE_MAD_LEN);
		ck_abort_msg("%s: MAD bytes differ", what);
	}
}

/* @got equals @want member by member (priv: its first priv_len bytes). */
static void assert_msg(const struct urxe_cm_msg *got,
		       const struct urxe_cm_msg *want, const char *what)
{
	for (size_t i = 0; i < NELEM(members); i++) {
		const uint8_t *g = (const uint8_t *)got + members[i].off;
		const uint8_t *w = (const uint8_t *)want + members[i].off;

		ck_assert_msg(!memcmp(g, w, members[i].size),
			      "%s: member %s differs", what, members[i].name);
	}
	ck_assert_msg(got->priv_len == want->priv_len, "%s: priv_len %u != %u",
		      what, got->priv_len, want->priv_len);
	ck_assert_msg(!memcmp(got->priv, want->priv, sizeof(got->priv)),
		      "%s: private data differs", what);
}

/*
 * Each field alone at its maximum: the MAD has exactly its bits set (a
 * wrong offset, width or shift sets others), and decodes to that member
 * alone at that value.
 */
START_TEST(field_alone)
{
	const struct spec_field *f = &spec[_i];
	struct urxe_cm_msg m, want, got;
	uint8_t mad[URXE_MAD_LEN], exp[URXE_MAD_LEN];

	memset(&m, 0, sizeof(m));
	m.attr = f->attr;
	m.tid = 0x0102030405060708ull;
	if (is_string(f->size))
		memset((uint8_t *)&m + f->member, 0xff, f->size);
	else
		set_int(&m, f->member, f->size, ones(f->bits) << f->shift);
	ck_assert_int_eq(urxe_cm_encode(&m, mad), 0);

	expect_hdr(exp, f->attr, m.tid, 0);
	set_bits(exp, CM(f->off) * 8u + f->bit, f->bits);
	assert_mad(mad, exp, f->name);

	want = m;
	want.priv_len = msgs[msg_index(f->attr)].priv_len;
	ck_assert_int_eq(urxe_cm_decode(mad, sizeof(mad), &got), 0);
	assert_msg(&got, &want, f->name);
}
END_TEST

/* A deterministic xorshift stream. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Every member set (@seed 0: all ones, the maximum of every field), the
 * ones the message does not carry included; decoding gives back what the
 * message carries, truncated to its fields, and zeros elsewhere.
 */
static void roundtrip(uint16_t attr, uint64_t seed)
{
	const int k = msg_index(attr);
	struct urxe_cm_msg m, want, got;
	uint8_t mad[URXE_MAD_LEN], again[URXE_MAD_LEN];
	uint64_t s = seed;
	char what[64];

	snprintf(what, sizeof(what), "%s seed %llu", urxe_cm_attr_name(attr),
		 (unsigned long long)seed);
	for (size_t i = 0; i < sizeof(m); i++)
		((uint8_t *)&m)[i] = seed ? (uint8_t)rnd(&s) : 0xff;
	for (size_t i = 0; i < NELEM(members); i++)
		if (members[i].is_bool)
			set_int(&m, members[i].off, 1, 1);
	m.attr = attr;
	m.priv_len = (uint16_t)(msgs[k].priv_len - (seed ? seed % 7 : 0));

	memset(&want, 0, sizeof(want));
	want.attr = attr;
	want.tid = m.tid;
	want.attr_mod = m.attr_mod;
	for (size_t i = 0; i < NELEM(spec); i++) {
		const struct spec_field *f = &spec[i];
		uint64_t mask = ones(f->bits) << f->shift, v;

		if (f->attr != attr)
			continue;
		if (is_string(f->size)) {
			memcpy((uint8_t *)&want + f->member,
			       (uint8_t *)&m + f->member, f->size);
			continue;
		}
		v = get_int(&want, f->member, f->size) |
		    (get_int(&m, f->member, f->size) & mask);
		set_int(&want, f->member, f->size, v);
	}
	memcpy(want.priv, m.priv, m.priv_len);
	want.priv_len = msgs[k].priv_len;

	ck_assert_int_eq(urxe_cm_encode(&m, mad), 0);
	/* Private data in its place, zeros after priv_len. */
	ck_assert_mem_eq(mad + CM(msgs[k].priv_off), m.priv, m.priv_len);
	for (unsigned int i = m.priv_len; i < msgs[k].priv_len; i++)
		ck_assert_uint_eq(mad[CM(msgs[k].priv_off) + i], 0);
	ck_assert_int_eq(urxe_cm_decode(mad, sizeof(mad), &got), 0);
	assert_msg(&got, &want, what);

	/* What was decoded encodes to the same bytes. */
	ck_assert_int_eq(urxe_cm_encode(&got, again), 0);
	assert_mad(again, mad, what);
}

START_TEST(roundtrip_max)
{
	roundtrip(msgs[_i].attr, 0);
}
END_TEST

START_TEST(roundtrip_random)
{
	for (uint64_t seed = 1; seed <= 50; seed++)
		roundtrip(msgs[_i].attr, seed * 0x9e3779b97f4a7c15ull);
}
END_TEST

/* A message, the MAD it must be, and both directions between them. */
static void both_ways(const struct urxe_cm_msg *m, const uint8_t *mad)
{
	struct urxe_cm_msg got;
	uint8_t enc[URXE_MAD_LEN];

	ck_assert_int_eq(urxe_cm_encode(m, enc), 0);
	assert_mad(enc, mad, urxe_cm_attr_name(m->attr));
	ck_assert_int_eq(urxe_cm_decode(mad, URXE_MAD_LEN, &got), 0);
	assert_msg(&got, m, urxe_cm_attr_name(m->attr));
}

static void fill(uint8_t *p, size_t n, uint8_t first)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(first + i);
}

/* Values a kernel REQ could carry, with asymmetric bit patterns. */
START_TEST(vector_req)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_REQ, .tid = 0x1122334455667788ull,
		.attr_mod = 0xa1b2c3d4, .local_id = 0xdeadbeef,
		.vendor_id = 0x02c9aa, .service_id = 0x0000000001064e20ull,
		.local_ca_guid = 0x0002c90300a1b2c3ull, .local_qkey = 0x80010000,
		.local_qpn = 0x123456, .resp_resources = 7,
		.local_eecn = 0xabcdef, .init_depth = 3, .remote_eecn = 0x654321,
		.remote_cm_timeout = 0x15, .transport = 1, .e2e_flow = true,
		.start_psn = 0xc0ffee, .local_cm_timeout = 0x14,
		.retry_count = 5, .pkey = 0xffff, .path_mtu = 3,
		.rdc_exists = true, .rnr_retry = 6, .max_cm_retries = 15,
		.srq = false, .ext_transport = 1, .local_lid = 0xffff,
		.remote_lid = 0xfffe, .flow_label = 0xabcde,
		.packet_rate = 0x2a, .traffic_class = 0x68, .hop_limit = 64,
		.sl = 0xb, .subnet_local = true, .local_ack_timeout = 0x13,
		.priv_len = URXE_CM_REQ_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03,
		[8] = 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		[16] = 0x00, 0x10, [20] = 0xa1, 0xb2, 0xc3, 0xd4,
		[CM(0)] = 0xde, 0xad, 0xbe, 0xef,
		[CM(5)] = 0x02, 0xc9, 0xaa,
		[CM(8)] = 0, 0, 0, 0, 0x01, 0x06, 0x4e, 0x20,
		[CM(16)] = 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3,
		[CM(28)] = 0x80, 0x01, 0x00, 0x00,
		[CM(32)] = 0x12, 0x34, 0x56, 0x07,	/* QPN, resp. res. */
		[CM(36)] = 0xab, 0xcd, 0xef, 0x03,
		[CM(40)] = 0x65, 0x43, 0x21,
		[CM(43)] = 0xab,	/* 10101 01 1: timeout, UC, e2e */
		[CM(44)] = 0xc0, 0xff, 0xee,	/* starting PSN */
		[CM(47)] = 0xa5,	/* 10100 101: timeout, retry count */
		[CM(48)] = 0xff, 0xff,
		[CM(50)] = 0x3e,	/* 0011 1 110: MTU, RDC, RNR retry */
		[CM(51)] = 0xf1,	/* 1111 0 001: CM retries, SRQ, XRC */
		[CM(52)] = 0xff, 0xff, 0xff, 0xfe,
		[CM(88)] = 0xab, 0xcd, 0xe0, 0x2a,	/* flow label, rate */
		[CM(92)] = 0x68, 64,
		[CM(94)] = 0xb8,	/* 1011 1 000: SL, subnet local */
		[CM(95)] = 0x98,	/* 10011 000: local ACK timeout */
	};

	fill(m.local_gid, 16, 0x20);
	fill(m.remote_gid, 16, 0x40);
	fill(m.priv, URXE_CM_REQ_PRIV, 0x80);
	fill(mad + CM(56), 16, 0x20);
	fill(mad + CM(72), 16, 0x40);
	fill(mad + CM(140), URXE_CM_REQ_PRIV, 0x80);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_rep)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_REP, .tid = 0x1122334455667788ull,
		.local_id = 0x01020304, .remote_id = 0xdeadbeef,
		.local_qkey = 0x0badcafe, .local_qpn = 0x000111,
		.vendor_id = 0xa1b2c3, .local_eecn = 0x222333,
		.start_psn = 0x7abcde, .resp_resources = 4, .init_depth = 5,
		.target_ack_delay = 0x11, .failover = 2, .e2e_flow = true,
		.rnr_retry = 7, .srq = true, .local_ca_guid = 0x0102030405060708ull,
		.priv_len = URXE_CM_REP_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03,
		[8] = 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		[16] = 0x00, 0x13,
		[CM(0)] = 0x01, 0x02, 0x03, 0x04, 0xde, 0xad, 0xbe, 0xef,
		[CM(8)] = 0x0b, 0xad, 0xca, 0xfe,
		[CM(12)] = 0x00, 0x01, 0x11, 0xa1,	/* QPN, vendor 23:16 */
		[CM(16)] = 0x22, 0x23, 0x33, 0xb2,	/* EECN, vendor 15:8 */
		[CM(20)] = 0x7a, 0xbc, 0xde, 0xc3,	/* PSN, vendor 7:0 */
		[CM(24)] = 4, 5,
		[CM(26)] = 0x8d,	/* 10001 10 1: ACK delay, failover, e2e */
		[CM(27)] = 0xf0,	/* 111 1 0000: RNR retry, SRQ */
		[CM(28)] = 1, 2, 3, 4, 5, 6, 7, 8,
	};

	fill(m.priv, URXE_CM_REP_PRIV, 0x10);
	fill(mad + CM(36), URXE_CM_REP_PRIV, 0x10);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_rej)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_REJ, .tid = 0x8000000100000002ull,
		.local_id = 0, .remote_id = 0x11223344, .msg_rejected = 1,
		.reject_info_len = 0x55, .reason = 28,
		.priv_len = URXE_CM_REJ_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03,
		[8] = 0x80, 0, 0, 0x01, 0, 0, 0, 0x02,
		[16] = 0x00, 0x12,
		[CM(4)] = 0x11, 0x22, 0x33, 0x44,
		[CM(8)] = 0x40,		/* 01 000000: REP rejected */
		[CM(9)] = 0xaa,		/* 1010101 0: info length */
		[CM(10)] = 0x00, 0x1c,	/* consumer defined */
	};

	fill(m.ari, URXE_CM_ARI_LEN, 0x30);
	fill(m.priv, URXE_CM_REJ_PRIV, 0x60);
	fill(mad + CM(12), URXE_CM_ARI_LEN, 0x30);
	fill(mad + CM(84), URXE_CM_REJ_PRIV, 0x60);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_mra)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_MRA, .tid = 7, .local_id = 0x0a0b0c0d,
		.remote_id = 0x01020304, .msg_rejected = 2,
		.service_timeout = 0x19, .priv_len = URXE_CM_MRA_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03, [15] = 7, [16] = 0x00, 0x11,
		[CM(0)] = 0x0a, 0x0b, 0x0c, 0x0d, 0x01, 0x02, 0x03, 0x04,
		[CM(8)] = 0x80,		/* 10 000000: other message */
		[CM(9)] = 0xc8,		/* 11001 000: service timeout */
	};

	fill(m.priv, URXE_CM_MRA_PRIV, 0x01);
	fill(mad + CM(10), URXE_CM_MRA_PRIV, 0x01);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_dreq)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_DREQ, .tid = 0xfedcba9876543210ull,
		.local_id = 0x01020304, .remote_id = 0x05060708,
		.local_qpn = 0x0194df, .priv_len = URXE_CM_DREQ_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03,
		[8] = 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
		[16] = 0x00, 0x15,
		[CM(0)] = 1, 2, 3, 4, 5, 6, 7, 8,
		[CM(8)] = 0x01, 0x94, 0xdf,	/* the peer's QPN */
	};

	fill(m.priv, URXE_CM_DREQ_PRIV, 0x21);
	fill(mad + CM(12), URXE_CM_DREQ_PRIV, 0x21);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_sidr_req)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_SIDR_REQ, .tid = 0x42, .local_id = 0xcafef00d,
		.pkey = 0x8001, .service_id = 0x0000000001110000ull | 4791,
		.priv_len = URXE_CM_SIDR_REQ_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03, [15] = 0x42, [16] = 0x00, 0x17,
		[CM(0)] = 0xca, 0xfe, 0xf0, 0x0d, 0x80, 0x01,
		[CM(8)] = 0, 0, 0, 0, 0x01, 0x11, 0x12, 0xb7,
	};

	fill(m.priv, URXE_CM_SIDR_REQ_PRIV, 0x33);
	fill(mad + CM(16), URXE_CM_SIDR_REQ_PRIV, 0x33);
	both_ways(&m, mad);
}
END_TEST

START_TEST(vector_sidr_rep)
{
	struct urxe_cm_msg m = {
		.attr = URXE_CM_SIDR_REP, .tid = 0x42, .local_id = 0xcafef00d,
		.sidr_status = 4, .add_info_len = 72, .vendor_id = 0x123456,
		.local_qpn = 0xabcdef, .service_id = 0x0000000001110000ull | 4791,
		.local_qkey = 0x11111111, .priv_len = URXE_CM_SIDR_REP_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03, [15] = 0x42, [16] = 0x00, 0x18,
		[CM(0)] = 0xca, 0xfe, 0xf0, 0x0d,
		[CM(4)] = 4, 72, 0x12, 0x34,	/* status, length, vendor 23:8 */
		[CM(8)] = 0xab, 0xcd, 0xef, 0x56,	/* QPN, vendor 7:0 */
		[CM(12)] = 0, 0, 0, 0, 0x01, 0x11, 0x12, 0xb7,
		[CM(20)] = 0x11, 0x11, 0x11, 0x11,
	};

	fill(m.ari, URXE_CM_ARI_LEN, 0x70);
	fill(m.priv, URXE_CM_SIDR_REP_PRIV, 0x99);
	fill(mad + CM(24), URXE_CM_ARI_LEN, 0x70);
	fill(mad + CM(96), URXE_CM_SIDR_REP_PRIV, 0x99);
	both_ways(&m, mad);
}
END_TEST

/* RTU, DREP: the two comm IDs and private data from byte 8. */
START_TEST(vector_rtu_drep)
{
	const uint16_t attr = _i ? URXE_CM_DREP : URXE_CM_RTU;
	struct urxe_cm_msg m = {
		.attr = attr, .tid = 1, .local_id = 0x10203040,
		.remote_id = 0x50607080, .priv_len = URXE_CM_RTU_PRIV,
	};
	uint8_t mad[URXE_MAD_LEN] = {
		[0] = 0x01, 0x07, 0x02, 0x03, [15] = 1, [17] = (uint8_t)attr,
		[CM(0)] = 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80,
	};

	fill(m.priv, URXE_CM_RTU_PRIV, 0xa0);
	fill(mad + CM(8), URXE_CM_RTU_PRIV, 0xa0);
	both_ways(&m, mad);
}
END_TEST

/* A valid REQ, then one header byte (or the length) spoiled at a time. */
START_TEST(decode_refuses)
{
	static const struct { int off; uint8_t val; } bad[] = {
		{ 0, 2 }, { 0, 0 },			/* base version */
		{ 1, 0x81 }, { 1, 0x03 },		/* class: DR SMP, SA */
		{ 2, 1 }, { 2, 3 },			/* class version */
		{ 3, 0x83 }, { 3, 0x01 }, { 3, 0x02 },	/* method */
		{ 17, 0x0f }, { 17, 0x1b }, { 17, 0x00 },	/* attribute */
		{ 16, 0x01 },				/* attribute 0x0110 */
	};
	struct urxe_cm_msg m, before;
	uint8_t mad[URXE_MAD_LEN + 1];

	memset(&m, 0, sizeof(m));
	m.attr = URXE_CM_REQ;
	ck_assert_int_eq(urxe_cm_encode(&m, mad), 0);
	mad[URXE_MAD_LEN] = 0;
	memset(&before, 0x5a, sizeof(before));

	/* Long enough is fine; a byte short is not. */
	memcpy(&m, &before, sizeof(m));
	ck_assert_int_eq(urxe_cm_decode(mad, sizeof(mad), &m), 0);
	memcpy(&m, &before, sizeof(m));
	ck_assert_int_eq(urxe_cm_decode(mad, URXE_MAD_LEN - 1, &m), -EINVAL);
	ck_assert_mem_eq(&m, &before, sizeof(m));
	ck_assert_int_eq(urxe_cm_decode(mad, 0, &m), -EINVAL);

	for (size_t i = 0; i < NELEM(bad); i++) {
		uint8_t save = mad[bad[i].off];

		mad[bad[i].off] = bad[i].val;
		memcpy(&m, &before, sizeof(m));
		ck_assert_msg(urxe_cm_decode(mad, URXE_MAD_LEN, &m) == -EINVAL,
			      "byte %d = 0x%02x accepted", bad[i].off,
			      bad[i].val);
		ck_assert_mem_eq(&m, &before, sizeof(m));
		mad[bad[i].off] = save;
	}
	ck_assert_int_eq(urxe_cm_decode(mad, URXE_MAD_LEN, &m), 0);
}
END_TEST

/* LAP and APR decode as their header alone; they are never encoded. */
START_TEST(lap_apr_header_only)
{
	const uint16_t attr = _i ? URXE_CM_APR : URXE_CM_LAP;
	struct urxe_cm_msg m, want;
	uint8_t mad[URXE_MAD_LEN];

	memset(mad, 0xee, sizeof(mad));
	expect_hdr(mad, attr, 0x0a0b0c0d0e0f1011ull, 0x12345678);
	memset(mad + 24, 0xee, URXE_MAD_LEN - 24);
	ck_assert_int_eq(urxe_cm_decode(mad, sizeof(mad), &m), 0);
	memset(&want, 0, sizeof(want));
	want.attr = attr;
	want.tid = 0x0a0b0c0d0e0f1011ull;
	want.attr_mod = 0x12345678;
	assert_msg(&m, &want, urxe_cm_attr_name(attr));

	memset(mad, 0x77, sizeof(mad));
	ck_assert_int_eq(urxe_cm_encode(&m, mad), -EINVAL);
	for (size_t i = 0; i < sizeof(mad); i++)
		ck_assert_uint_eq(mad[i], 0x77);
}
END_TEST

START_TEST(encode_refuses)
{
	static const uint16_t attrs[] = { 0, 0x0f, 0x1b, 0x110, 0xffff };
	struct urxe_cm_msg m;
	uint8_t mad[URXE_MAD_LEN];

	memset(&m, 0, sizeof(m));
	memset(mad, 0x77, sizeof(mad));
	for (size_t i = 0; i < NELEM(attrs); i++) {
		m.attr = attrs[i];
		ck_assert_int_eq(urxe_cm_encode(&m, mad), -EINVAL);
	}
	/* Private data longer than the message's. */
	for (size_t i = 0; i < NELEM(msgs); i++) {
		m.attr = msgs[i].attr;
		m.priv_len = (uint16_t)(msgs[i].priv_len + 1);
		ck_assert_int_eq(urxe_cm_encode(&m, mad), -EINVAL);
	}
	for (size_t i = 0; i < sizeof(mad); i++)
		ck_assert_uint_eq(mad[i], 0x77);
	m.attr = URXE_CM_REQ;
	m.priv_len = URXE_CM_REQ_PRIV;
	ck_assert_int_eq(urxe_cm_encode(&m, mad), 0);
}
END_TEST

START_TEST(attr_names)
{
	static const struct { uint16_t attr; const char *name; } t[] = {
		{ URXE_CM_REQ, "REQ" }, { URXE_CM_MRA, "MRA" },
		{ URXE_CM_REJ, "REJ" }, { URXE_CM_REP, "REP" },
		{ URXE_CM_RTU, "RTU" }, { URXE_CM_DREQ, "DREQ" },
		{ URXE_CM_DREP, "DREP" }, { URXE_CM_SIDR_REQ, "SIDR_REQ" },
		{ URXE_CM_SIDR_REP, "SIDR_REP" }, { URXE_CM_LAP, "LAP" },
		{ URXE_CM_APR, "APR" }, { 0, "?" }, { 0x0f, "?" },
		{ 0x1b, "?" }, { 0x110, "?" }, { 0xffff, "?" },
	};

	for (size_t i = 0; i < NELEM(t); i++)
		ck_assert_str_eq(urxe_cm_attr_name(t[i].attr), t[i].name);
}
END_TEST

START_TEST(cma_hdr_v4)
{
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_port = htons(0xc1d2) };
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(7471) };
	static const uint8_t want[URXE_CMA_HDR_LEN] = {
		0x00, 0x40, 0xc1, 0xd2,
		[16] = 198, 18, 1, 2,		/* source, last 4 bytes */
		[32] = 198, 18, 1, 1,		/* destination */
	};
	uint8_t priv[URXE_CMA_HDR_LEN + 4];
	struct urxe_cma_hdr h;
	const struct sockaddr_in *s4, *d4;

	inet_pton(AF_INET, "198.18.1.2", &src.sin_addr);
	inet_pton(AF_INET, "198.18.1.1", &dst.sin_addr);
	memset(priv, 0xee, sizeof(priv));
	ck_assert_int_eq(urxe_cma_hdr_put(priv, (struct sockaddr *)&src,
					  (struct sockaddr *)&dst), 0);
	ck_assert_mem_eq(priv, want, URXE_CMA_HDR_LEN);
	ck_assert_uint_eq(priv[URXE_CMA_HDR_LEN], 0xee);	/* stops at 36 */

	memset(&h, 0x5a, sizeof(h));
	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), 0);
	ck_assert_uint_eq(h.ip_version, 4);
	ck_assert_uint_eq(h.src_port, 0xc1d2);
	s4 = (const struct sockaddr_in *)&h.src;
	d4 = (const struct sockaddr_in *)&h.dst;
	ck_assert_int_eq(s4->sin_family, AF_INET);
	ck_assert_uint_eq(ntohs(s4->sin_port), 0xc1d2);
	ck_assert_mem_eq(&s4->sin_addr, &src.sin_addr, 4);
	ck_assert_int_eq(d4->sin_family, AF_INET);
	ck_assert_uint_eq(d4->sin_port, 0);
	ck_assert_mem_eq(&d4->sin_addr, &dst.sin_addr, 4);

	/* The low nibble of byte 1 is reserved; the 12 bytes are ignored. */
	priv[1] = 0x4f;
	priv[4] = 0xff;
	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), 0);
	ck_assert_mem_eq(&s4->sin_addr, &src.sin_addr, 4);
}
END_TEST

START_TEST(cma_hdr_v6)
{
	struct sockaddr_in6 src = { .sin6_family = AF_INET6,
				    .sin6_port = htons(40000),
				    .sin6_scope_id = 3 };
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6,
				    .sin6_port = htons(18515) };
	uint8_t want[URXE_CMA_HDR_LEN] = { 0x00, 0x60, 0x9c, 0x40 };
	uint8_t priv[URXE_CMA_HDR_LEN];
	struct urxe_cma_hdr h;
	const struct sockaddr_in6 *s6, *d6;

	inet_pton(AF_INET6, "fd00:1:2:3::a", &src.sin6_addr);
	inet_pton(AF_INET6, "fe80::1234:5678:9abc:def0", &dst.sin6_addr);
	memcpy(want + 4, &src.sin6_addr, 16);
	memcpy(want + 20, &dst.sin6_addr, 16);
	ck_assert_uint_eq(want[4], 0xfd);
	ck_assert_uint_eq(want[35], 0xf0);
	ck_assert_int_eq(urxe_cma_hdr_put(priv, (struct sockaddr *)&src,
					  (struct sockaddr *)&dst), 0);
	ck_assert_mem_eq(priv, want, URXE_CMA_HDR_LEN);

	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), 0);
	ck_assert_uint_eq(h.ip_version, 6);
	ck_assert_uint_eq(h.src_port, 40000);
	s6 = (const struct sockaddr_in6 *)&h.src;
	d6 = (const struct sockaddr_in6 *)&h.dst;
	ck_assert_int_eq(s6->sin6_family, AF_INET6);
	ck_assert_uint_eq(ntohs(s6->sin6_port), 40000);
	ck_assert_mem_eq(&s6->sin6_addr, &src.sin6_addr, 16);
	ck_assert_int_eq(d6->sin6_family, AF_INET6);
	ck_assert_uint_eq(d6->sin6_port, 0);
	ck_assert_mem_eq(&d6->sin6_addr, &dst.sin6_addr, 16);
}
END_TEST

START_TEST(cma_hdr_refuses)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6 };
	struct sockaddr unix_sa = { .sa_family = AF_UNIX };
	uint8_t priv[URXE_CMA_HDR_LEN], save[URXE_CMA_HDR_LEN];
	struct urxe_cma_hdr h, before;

	memset(priv, 0x77, sizeof(priv));
	ck_assert_int_eq(urxe_cma_hdr_put(priv, &unix_sa,
					  (struct sockaddr *)&v4),
			 -EAFNOSUPPORT);
	ck_assert_int_eq(urxe_cma_hdr_put(priv, (struct sockaddr *)&v6,
					  &unix_sa), -EAFNOSUPPORT);
	ck_assert_int_eq(urxe_cma_hdr_put(priv, (struct sockaddr *)&v4,
					  (struct sockaddr *)&v6), -EINVAL);
	for (size_t i = 0; i < sizeof(priv); i++)
		ck_assert_uint_eq(priv[i], 0x77);

	ck_assert_int_eq(urxe_cma_hdr_put(priv, (struct sockaddr *)&v4,
					  (struct sockaddr *)&v4), 0);
	memcpy(save, priv, sizeof(save));
	memset(&before, 0x5a, sizeof(before));
	memcpy(&h, &before, sizeof(h));
	priv[0] = 1;				/* version */
	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), -EINVAL);
	memcpy(priv, save, sizeof(save));
	priv[1] = 0x50;				/* IP version 5 */
	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), -EINVAL);
	priv[1] = 0x00;
	ck_assert_int_eq(urxe_cma_hdr_get(priv, &h), -EINVAL);
	ck_assert_mem_eq(&h, &before, sizeof(h));
}
END_TEST

/*
 * Linux's MADs, in the order of the capture: each decodes to what that run
 * had, and encodes to the same 256 bytes.
 */
START_TEST(kernel_mads)
{
	static const uint16_t order[] = {
		URXE_CM_REQ, URXE_CM_REJ, URXE_CM_REP, URXE_CM_RTU,
		URXE_CM_DREQ, URXE_CM_DREP, URXE_CM_SIDR_REQ, URXE_CM_SIDR_REP,
	};
	/* ::ffff:198.18.1.2, the VM, and ::ffff:198.18.1.1, urxe */
	static const uint8_t vm[16] = { [10] = 0xff, 0xff, 198, 18, 1, 2 };
	static const uint8_t host[16] = { [10] = 0xff, 0xff, 198, 18, 1, 1 };
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const uint8_t *p, *mad;
	uint8_t again[URXE_MAD_LEN];
	struct urxe_cm_msg m;
	unsigned int n = 0, i;
	pcap_t *pc;

	pc = pcap_open_offline(URXE_VECTORS "/kernel-rxe-cm.pcap", errbuf);
	ck_assert_msg(pc != NULL, "%s", errbuf);
	while (pcap_next_ex(pc, &h, &p) == 1) {
		/* Ethernet 14, IPv4 20, UDP 8, BTH 12, DETH 8 */
		ck_assert_uint_eq(h->caplen, 14 + 20 + 8 + 12 + 8 +
					     URXE_MAD_LEN + 4);
		ck_assert_uint_lt(n, NELEM(order));
		mad = p + 14 + 20 + 8 + 12 + 8;
		ck_assert_int_eq(urxe_cm_decode(mad, URXE_MAD_LEN, &m), 0);
		ck_assert_uint_eq(m.attr, order[n]);
		switch (m.attr) {
		case URXE_CM_REQ:
			ck_assert_uint_eq(m.transport, 0);	/* RC */
			ck_assert_uint_eq(m.pkey, 0xffff);
			ck_assert_uint_eq(m.path_mtu, 3);	/* 1024 */
			ck_assert_mem_eq(m.local_gid, vm, 16);
			ck_assert_mem_eq(m.remote_gid, host, 16);
			ck_assert_uint_eq(m.service_id >> 16, 0x0106);	/* TCP */
			break;
		case URXE_CM_REJ:
			ck_assert_uint_eq(m.reason, 8);	/* invalid service ID */
			ck_assert_uint_eq(m.local_id, 0);
			break;
		case URXE_CM_SIDR_REQ:
			ck_assert_uint_eq(m.service_id >> 16, 0x0111);	/* UDP */
			break;
		case URXE_CM_SIDR_REP:	/* before udaddy listened */
			ck_assert_uint_eq(m.sidr_status, 1);	/* no service */
			break;
		default:
			ck_assert_uint_ne(m.local_id, 0);
			break;
		}
		ck_assert_int_eq(urxe_cm_encode(&m, again), 0);
		for (i = 0; i < URXE_MAD_LEN; i++)
			ck_assert_msg(again[i] == mad[i],
				      "%s byte %u: kernel 0x%02x, urxe 0x%02x",
				      urxe_cm_attr_name(m.attr), i, mad[i],
				      again[i]);
		n++;
	}
	pcap_close(pc);
	ck_assert_uint_eq(n, NELEM(order));
}
END_TEST

static Suite *mad_suite(void)
{
	Suite *s = suite_create("mad");
	TCase *tc = tu_tcase(s, "layout", NULL, NULL);
	TCase *tv = tu_tcase(s, "vectors", NULL, NULL);
	TCase *tr = tu_tcase(s, "refusals", NULL, NULL);
	TCase *th = tu_tcase(s, "cma_hdr", NULL, NULL);

	tcase_add_loop_test(tc, field_alone, 0, NELEM(spec));
	tcase_add_loop_test(tc, roundtrip_max, 0, NELEM(msgs));
	tcase_add_loop_test(tc, roundtrip_random, 0, NELEM(msgs));

	tcase_add_test(tv, vector_req);
	tcase_add_test(tv, vector_rep);
	tcase_add_test(tv, vector_rej);
	tcase_add_test(tv, vector_mra);
	tcase_add_test(tv, vector_dreq);
	tcase_add_test(tv, vector_sidr_req);
	tcase_add_test(tv, vector_sidr_rep);
	tcase_add_loop_test(tv, vector_rtu_drep, 0, 2);
	tcase_add_test(tv, kernel_mads);

	tcase_add_test(tr, decode_refuses);
	tcase_add_test(tr, encode_refuses);
	tcase_add_loop_test(tr, lap_apr_header_only, 0, 2);
	tcase_add_test(tr, attr_names);

	tcase_add_test(th, cma_hdr_v4);
	tcase_add_test(th, cma_hdr_v6);
	tcase_add_test(th, cma_hdr_refuses);
	return s;
}

int main(void)
{
	return tu_run(mad_suite());
}
