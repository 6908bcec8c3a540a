// SPDX-License-Identifier: BSD-2-Clause
/*
 * ICRC computation with ISA-L's crc32_gzip_refl (the zlib CRC-32, folded
 * with carry-less multiplication: ~59 GB/s on 4 KiB here).
 */
#include <isa-l/crc.h>
#include <string.h>

#include <urxe/icrc.h>
#include <urxe/util.h>
#include <urxe/wire.h>

#define IPV6_HDR_LEN 40
#define IPV4_MIN_HDR_LEN 20
#define UDP_HDR_LEN 8

/* RoCE bytes after the BTH that urxe_icrc_begin_n() takes in its pass. */
#define BEGIN_MORE 128

void urxe_icrc_begin(struct urxe_icrc *c, const uint8_t *ip, size_t ip_len,
		     const uint8_t *udp, const uint8_t *bth)
{
	urxe_icrc_begin_n(c, ip, ip_len, udp, bth, URXE_BTH_LEN);
}

size_t urxe_icrc_begin_n(struct urxe_icrc *c, const uint8_t *ip,
			 size_t ip_len, const uint8_t *udp,
			 const uint8_t *roce, size_t len)
{
	uint8_t buf[60 + UDP_HDR_LEN + URXE_BTH_LEN + BEGIN_MORE];
	size_t more = len > URXE_BTH_LEN ? len - URXE_BTH_LEN : 0;
	uint8_t *u, *b;

	if (more > BEGIN_MORE)
		more = 0;		/* not small: the caller goes on */
	if (ip_len > 60)
		ip_len = 60;
	memcpy(buf, ip, ip_len);
	if ((ip[0] >> 4) == 6) {
		buf[0] |= 0x0f;			/* traffic class, high nibble */
		buf[1] = buf[2] = buf[3] = 0xff;	/* class low, flow label */
		buf[7] = 0xff;			/* hop limit */
	} else {
		buf[1] = 0xff;			/* TOS */
		buf[8] = 0xff;			/* TTL */
		buf[10] = buf[11] = 0xff;	/* header checksum */
	}
	u = buf + ip_len;
	memcpy(u, udp, UDP_HDR_LEN);
	u[6] = u[7] = 0xff;			/* UDP checksum */
	b = u + UDP_HDR_LEN;
	memcpy(b, roce, URXE_BTH_LEN + more);
	b[4] = 0xff;				/* FECN, BECN, reserved */
	/* The LRH's ones first: a constant. */
	c->crc = crc32_gzip_refl(URXE_ICRC_LRH_ONES, buf,
				 ip_len + UDP_HDR_LEN + URXE_BTH_LEN + more);
	return URXE_BTH_LEN + more;
}

void urxe_icrc_update(struct urxe_icrc *c, const void *p, size_t len)
{
	c->crc = crc32_gzip_refl(c->crc, p, len);
}

uint32_t urxe_icrc_end(const struct urxe_icrc *c)
{
	/* crc32_gzip_refl already returns the final (inverted) value. */
	return c->crc;
}

uint32_t urxe_icrc_frame(const uint8_t *ip, size_t len, bool *ok)
{
	size_t ip_len, hdrs;
	struct urxe_icrc c;

	*ok = false;
	if (len < 1)
		return 0;
	if ((ip[0] >> 4) == 6)
		ip_len = IPV6_HDR_LEN;
	else if ((ip[0] >> 4) == 4)
		ip_len = (size_t)(ip[0] & 0xf) * 4;
	else
		return 0;
	if (ip_len < IPV4_MIN_HDR_LEN || ip_len > 60)
		return 0;
	hdrs = ip_len + UDP_HDR_LEN + URXE_BTH_LEN;
	if (len < hdrs + URXE_ICRC_LEN)
		return 0;
	urxe_icrc_begin(&c, ip, ip_len, ip + ip_len, ip + ip_len + UDP_HDR_LEN);
	urxe_icrc_update(&c, ip + hdrs, len - hdrs - URXE_ICRC_LEN);
	*ok = true;
	return urxe_icrc_end(&c);
}

size_t urxe_icrc_pseudo_hdr(uint8_t *buf, const uint8_t *src,
			    const uint8_t *dst, uint16_t sport, uint16_t dport,
			    uint32_t roce_len, uint16_t ip_id, bool df)
{
	uint32_t udp_len = UDP_HDR_LEN + roce_len;
	size_t ip_len;

	if (urxe_gid_is_v4(src) && urxe_gid_is_v4(dst)) {
		ip_len = IPV4_MIN_HDR_LEN;
		memset(buf, 0, ip_len);
		buf[0] = 0x45;
		urxe_put16(buf + 2, (uint16_t)(ip_len + udp_len));
		urxe_put16(buf + 4, ip_id);
		buf[6] = df ? 0x40 : 0;
		buf[9] = 17;			/* UDP */
		memcpy(buf + 12, src + 12, 4);
		memcpy(buf + 16, dst + 12, 4);
	} else {
		ip_len = IPV6_HDR_LEN;
		memset(buf, 0, ip_len);
		buf[0] = 0x60;
		urxe_put16(buf + 4, (uint16_t)udp_len);
		buf[6] = 17;			/* next header: UDP */
		memcpy(buf + 8, src, 16);
		memcpy(buf + 24, dst, 16);
	}
	urxe_put16(buf + ip_len, sport);
	urxe_put16(buf + ip_len + 2, dport);
	urxe_put16(buf + ip_len + 4, (uint16_t)udp_len);
	urxe_put16(buf + ip_len + 6, 0);
	return ip_len;
}

/* The CRC of a packet from its IP and UDP headers and RoCE bytes. */
static uint32_t hdrs_crc(const uint8_t *ip, size_t ip_len, const uint8_t *udp,
			 const uint8_t *roce, size_t len)
{
	struct urxe_icrc c;
	size_t took;

	took = urxe_icrc_begin_n(&c, ip, ip_len, udp, roce, len);
	if (len > took)
		urxe_icrc_update(&c, roce + took, len - took);
	return urxe_icrc_end(&c);
}

/*
 * The CRC of an IPv4 packet's LRH ones, IP header (ID 0, DF set) and UDP
 * header, from @t's cache: one flow's packets of one length all have it.
 */
static uint32_t pfx_crc(struct urxe_icrc_ids *t, const uint8_t *src,
			const uint8_t *dst, uint16_t sport, uint16_t dport,
			uint32_t roce_len)
{
	uint8_t ph[IPV4_MIN_HDR_LEN + UDP_HDR_LEN];
	uint32_t s, d, ports = (uint32_t)sport << 16 | dport;
	struct urxe_icrc_pfx *e;

	memcpy(&s, src + 12, 4);
	memcpy(&d, dst + 12, 4);
	e = &t->pfx[((s ^ d * 0x9e3779b1u ^ ports ^ roce_len) * 2654435761u) >>
		    (32 - URXE_ICRC_PFX_BITS)];
	if (e->len == roce_len && e->src == s && e->dst == d &&
	    e->ports == ports)
		return e->crc;
	urxe_icrc_pseudo_hdr(ph, src, dst, sport, dport, roce_len, 0, true);
	ph[1] = 0xff;				/* TOS */
	ph[8] = 0xff;				/* TTL */
	ph[10] = ph[11] = 0xff;			/* header checksum */
	ph[IPV4_MIN_HDR_LEN + 6] = ph[IPV4_MIN_HDR_LEN + 7] = 0xff;
	e->crc = crc32_gzip_refl(URXE_ICRC_LRH_ONES, ph, sizeof(ph));
	e->src = s;
	e->dst = d;
	e->ports = ports;
	e->len = roce_len;
	return e->crc;
}

/* From @crc on over @len RoCE bytes (BTH first, its byte 4 as ones). */
static uint32_t roce_crc(uint32_t crc, const uint8_t *roce, size_t len)
{
	uint8_t buf[URXE_BTH_LEN + BEGIN_MORE];
	size_t n = len <= sizeof(buf) ? len : URXE_BTH_LEN;

	memcpy(buf, roce, n);
	buf[4] = 0xff;				/* FECN, BECN, reserved */
	crc = crc32_gzip_refl(crc, buf, n);
	if (len > n)
		crc = crc32_gzip_refl(crc, roce + n, len - n);
	return crc;
}

/* Whether the ICRC of a packet from @src to @dst can use pfx_crc(). */
static bool pfx_ok(const struct urxe_icrc_ids *t, const uint8_t *src,
		   const uint8_t *dst)
{
	return t && urxe_gid_is_v4(src) && urxe_gid_is_v4(dst);
}

uint32_t urxe_icrc_tx(struct urxe_icrc_ids *t, const uint8_t *src,
		      const uint8_t *dst, uint16_t sport, const uint8_t *roce,
		      uint32_t len)
{
	uint8_t ph[IPV6_HDR_LEN + UDP_HDR_LEN];
	size_t ip_len;

	if (pfx_ok(t, src, dst))
		return roce_crc(pfx_crc(t, src, dst, sport, URXE_ROCE_UDP_PORT,
					len + URXE_ICRC_LEN),
				roce, len);
	ip_len = urxe_icrc_pseudo_hdr(ph, src, dst, sport, URXE_ROCE_UDP_PORT,
				      len + URXE_ICRC_LEN, 0, true);
	return hdrs_crc(ph, ip_len, ph + ip_len, roce, len);
}

/*
 * IPv4 through a UDP socket: the ICRC covers the IP ID and the DF bit,
 * which the socket does not show.  The CRC is affine in them: with m0 the
 * packet as if ID = 0 and DF = 0, crc(m0 ^ d) = crc(m0) ^ L(d), L linear
 * in the 17 unknown bits.  So solve L(d) = icrc ^ crc(m0) over GF(2): the
 * 17 columns of L are independent (a CRC-32 tells apart any change within
 * 32 consecutive bits), so the solution, if any, is unique.  It is then
 * accepted only if plausible: DF set, and the ID 0 (urxe peers; Linux
 * sends ID 0 with IP_PMTUDISC_DO), a GSO segment's small index, or just
 * after the last ID seen from that source (kernel rxe increments it).
 * That keeps the check close to a full 32-bit one while accepting what
 * kernel rxe sends.
 */
#define ID_BITS 17			/* 16 ID bits, then DF */
#define ID_STREAM_OFF (8 + 4)		/* LRH ones, then IPv4 byte 4 */
#define ID_WINDOW 64		/* checksum 0: the window, at least */

struct id_basis {
	uint32_t len;			/* stream length it was built for */
	uint32_t vec[ID_BITS];		/* reduced basis vectors */
	uint32_t comb[ID_BITS];		/* which unknown bits make each */
	int nvec;
};

static __thread struct id_basis basis_cache[4];
static __thread unsigned int basis_next;
/* For callers without tables of their own (the packet backend, tests). */
static __thread struct urxe_icrc_ids thread_ids;

/* CRC of a zero stream of @stream_len bytes with unknown bit @bit set. */
static uint32_t crc_bit_stream(uint32_t stream_len, int bit)
{
	static const uint8_t zeros[4096];
	uint8_t head[16] = { 0 };
	uint32_t crc, left;

	if (bit >= 16)
		head[ID_STREAM_OFF + 2] = 0x40;			/* DF */
	else if (bit >= 0)	/* the ID is big-endian: bit j of byte 12 + !(j / 8) */
		head[ID_STREAM_OFF + (bit < 8)] = (uint8_t)(1u << (bit % 8));
	crc = crc32_gzip_refl(0, head, sizeof(head));
	for (left = stream_len - sizeof(head); left;) {
		uint32_t n = left < sizeof(zeros) ? left : (uint32_t)sizeof(zeros);

		crc = crc32_gzip_refl(crc, zeros, n);
		left -= n;
	}
	return crc;
}

static const struct id_basis *id_basis_for(uint32_t stream_len)
{
	struct id_basis *b;
	uint32_t zero;
	int j, k;

	for (k = 0; k < 4; k++)
		if (basis_cache[k].len == stream_len)
			return &basis_cache[k];
	b = &basis_cache[basis_next++ % 4];
	b->len = stream_len;
	b->nvec = 0;
	zero = crc_bit_stream(stream_len, -1);
	for (j = 0; j < ID_BITS; j++) {
		uint32_t v = crc_bit_stream(stream_len, j) ^ zero, c = 1u << j;

		for (k = 0; k < b->nvec; k++) {
			if ((v ^ b->vec[k]) < v) {
				v ^= b->vec[k];
				c ^= b->comb[k];
			}
		}
		if (!v)
			continue;
		/* Keep the basis sorted by leading bit, highest first. */
		for (k = b->nvec; k > 0 && b->vec[k - 1] < v; k--) {
			b->vec[k] = b->vec[k - 1];
			b->comb[k] = b->comb[k - 1];
		}
		b->vec[k] = v;
		b->comb[k] = c;
		b->nvec++;
	}
	return b;
}

/*
 * The ID part of L for one stream length as two tables: the ID's low
 * byte's share and its high byte's.
 */
static void cols_fill(struct urxe_icrc_id_cols *c, uint32_t stream_len)
{
	uint32_t col[16], zero = crc_bit_stream(stream_len, -1);
	unsigned int v;
	int j;

	for (j = 0; j < 16; j++)
		col[j] = crc_bit_stream(stream_len, j) ^ zero;
	c->lo[0] = c->hi[0] = 0;
	for (v = 1; v < 256; v++) {
		j = __builtin_ctz(v);
		c->lo[v] = c->lo[v & (v - 1)] ^ col[j];
		c->hi[v] = c->hi[v & (v - 1)] ^ col[8 + j];
	}
	c->len = stream_len;
}

/*
 * L(@id) for a packet of @len RoCE bytes, from @t's tables (NULL: the
 * thread's).  A connected transmit socket rewrites every ICRC it sends: a
 * bulk transfer's lengths (full, last, ACK, ...) stay in the cache.
 */
uint32_t urxe_icrc_id_delta(struct urxe_icrc_ids *t, uint32_t len, uint16_t id)
{
	uint32_t stream_len = len + 8 + IPV4_MIN_HDR_LEN + UDP_HDR_LEN -
			      URXE_ICRC_LEN;
	struct urxe_icrc_id_cols *c;
	unsigned int k;

	if (!id)
		return 0;
	if (!t)
		t = &thread_ids;
	c = &t->cols[t->cols_last % URXE_ICRC_COLS_CACHED];
	if (c->len != stream_len) {
		for (k = 0; k < URXE_ICRC_COLS_CACHED &&
			    t->cols[k].len != stream_len; k++)
			;
		if (k == URXE_ICRC_COLS_CACHED) {
			k = t->cols_next++ % URXE_ICRC_COLS_CACHED;
			cols_fill(&t->cols[k], stream_len);
		}
		t->cols_last = k;
		c = &t->cols[k];
	}
	return c->lo[id & 0xff] ^ c->hi[id >> 8];
}

uint32_t urxe_icrc_ipv4_id_delta(uint32_t len, uint16_t id)
{
	return urxe_icrc_id_delta(NULL, len, id);
}

static bool id_solve(uint32_t stream_len, uint32_t target, uint32_t *bits)
{
	const struct id_basis *b = id_basis_for(stream_len);
	uint32_t c = 0;
	int k;

	for (k = 0; k < b->nvec; k++) {
		if ((target ^ b->vec[k]) < target) {
			target ^= b->vec[k];
			c ^= b->comb[k];
		}
	}
	*bits = c;
	return target == 0;
}

/*
 * Linux draws IPv4 IDs from per-destination counters that also jump by a
 * random amount up to the jiffies elapsed since their last use: the
 * window grows by one per millisecond of silence from that source.  A
 * urxe peer's GSO send from an unconnected socket numbers its segments 0,
 * 1, 2, ... (ID_GSO_SEGS at most); split anywhere before us (software
 * segmentation on a device without checksum offload, a receiver without
 * GRO), they come one by one with those small IDs.  A connected socket
 * (a urxe peer's transmit socket, see netdev/udp.c) numbers from its own
 * counter, one per datagram and segment i of one at its number + i: per
 * source port, IDs then step back by up to ID_GSO_SEGS.  Its counter
 * starts at random whenever a socket connects: a restarted peer, or a new
 * one on the same address and port, jumps anywhere.  Only datagrams with
 * a UDP checksum (verified by the kernel) come from such sockets; a jump
 * there is taken after ID_RESTART_NS of silence from the flow, which any
 * restart takes.  Without a checksum, IDs step back too: a kernel peer's
 * tasks for one QP (requester, responder) run on different CPUs and take
 * IDs from one counter, so two datagrams of a flow can leave in the other
 * order (seen from kernel rxe in a 2-CPU VM: one in about 10^4 was one ID
 * behind the one before it); a duplicated datagram repeats its ID.  Both
 * kinds of flow therefore take an ID up to ID_BACK behind the last one.
 * Otherwise an ID that fits nothing is refused and noted
 * as the flow's candidate: a next one that follows it is taken (and the
 * flow follows it from then on), so no sender stays shut out.
 */
#define ID_GSO_SEGS 64
#define ID_BACK ID_GSO_SEGS	/* how far an ID may step back (both kinds) */
#define ID_CSUM_AHEAD 256		/* checksum on: the window, at least */
#define ID_CSUM_NS_PER_ID 250		/* ... one ID more per 250 ns */
#define ID_RESTART_NS 1000000ull

enum { ID_REFUSE, ID_TAKE, ID_RESYNC };

/*
 * Whether @id is at most ID_BACK before @last (seen at @last_ns), or within
 * the window ahead: checksum 0 (kernel counters), ID_WINDOW and one more
 * per millisecond; checksum on (a urxe sender's own), ID_CSUM_AHEAD and
 * one more per 250 ns (a socket sends no faster).
 */
static bool id_after(uint16_t last, uint64_t last_ns, uint16_t id,
		     uint64_t now_ns, bool csum)
{
	uint64_t el = now_ns > last_ns ? now_ns - last_ns : 0;
	uint64_t window = csum ? ID_CSUM_AHEAD + el / ID_CSUM_NS_PER_ID
			       : ID_WINDOW + el / 1000000;

	return (uint16_t)(id - last + ID_BACK) <= window + ID_BACK;
}

static bool id_follows(const struct urxe_icrc_id_seen *s, uint16_t id,
		       uint64_t now_ns, bool csum)
{
	return id_after(s->last_id, s->last_ns, id, now_ns, csum);
}

static void id_seen_update(struct urxe_icrc_id_seen *s, bool known,
			   uint32_t src, uint16_t sport, uint16_t id,
			   uint64_t now_ns)
{
	if (known && (uint16_t)(id - s->last_id - 1u) >= 0x8000)
		return;			/* not newer */
	s->used = true;
	s->src = src;
	s->sport = sport;
	s->last_id = id;
	s->last_ns = now_ns;
}

/* Whether @s is @src:@sport's entry (@sport 0: a source entry). */
static bool seen_is(const struct urxe_icrc_id_seen *s, uint32_t src,
		    uint16_t sport)
{
	return s->used && s->src == src && s->sport == sport;
}

static struct urxe_icrc_id_seen *flow_entry(struct urxe_icrc_ids *t,
					     uint32_t src, uint16_t sport)
{
	return &t->flow[((src ^ sport * 0x9e3779b1u) * 2654435761u) >>
			(32 - URXE_ICRC_ID_SEEN_BITS)];
}

/*
 * An ID that fits nothing: taken if it follows the flow's candidate (the
 * sender did move on), else it becomes the candidate.  Takes @f over for
 * @src:@sport if it held another flow (with no ID it would accept).
 */
static int id_candidate(struct urxe_icrc_id_seen *f, uint32_t src,
			uint16_t sport, uint16_t id, uint64_t now_ns, bool csum)
{
	if (seen_is(f, src, sport) && f->has_cand &&
	    id_after(f->cand, f->cand_ns, id, now_ns, csum)) {
		f->has_cand = false;
		return ID_RESYNC;
	}
	if (!seen_is(f, src, sport)) {
		memset(f, 0, sizeof(*f));
		f->used = true;
		f->src = src;
		f->sport = sport;
		f->last_id = (uint16_t)(id + 0x8000);
		f->last_ns = now_ns;
	}
	f->cand = id;
	f->cand_ns = now_ns;
	f->has_cand = true;
	return ID_REFUSE;
}

/*
 * Whether solved ID @id from @src:@sport (flow entry @f) is plausible:
 * ID_TAKE when it follows what the flow (checksum 0: or its source) sent
 * last, ID_RESYNC when it starts the flow over (the first of its flow, a
 * restart, a confirmed candidate), ID_REFUSE.  Notes it in the source's
 * entry; the caller, in @f.
 */
static int id_plausible(struct urxe_icrc_ids *t, struct urxe_icrc_id_seen *f,
			uint32_t src, uint16_t sport, uint16_t id,
			uint64_t now_ns, bool csum)
{
	struct urxe_icrc_id_seen *s =
		&t->src[(src * 2654435761u) >> (32 - URXE_ICRC_ID_SEEN_BITS)];
	bool s_known = seen_is(s, src, 0), f_known = seen_is(f, src, sport);
	int r;

	/* GSO segments: no GSO without a checksum, and ID 0 is tried exactly */
	if (csum && id < ID_GSO_SEGS)
		return ID_TAKE;
	if (f_known && id_follows(f, id, now_ns, csum))
		r = ID_TAKE;
	else if (csum)	/* a urxe sender: its flow alone says what follows */
		r = !f_known || now_ns >= f->last_ns + ID_RESTART_NS ?
		    ID_RESYNC : id_candidate(f, src, sport, id, now_ns, csum);
	else if (s_known && id_follows(s, id, now_ns, false))
		r = ID_TAKE;
	else if (!f_known)	/* a new flow's first: nothing predicts it */
		r = ID_RESYNC;
	else
		r = id_candidate(f, src, sport, id, now_ns, csum);
	if (r == ID_TAKE && f_known)
		f->has_cand = false;
	if (r != ID_REFUSE && !csum)
		id_seen_update(s, s_known && r == ID_TAKE, src, 0, id, now_ns);
	return r;
}

/*
 * Computes the ICRC with the header rebuilt from @meta; for IPv4 from a
 * socket, also solves for the ID and DF bit.  Returns 1 for an exact match
 * (*id 0), 2 for a match with a solved ID in *id (DF set), 0 otherwise.
 */
static int rx_match(struct urxe_icrc_ids *t, const uint8_t *roce,
		    uint32_t len, const struct urxe_rx_meta *meta, uint16_t pred,
		    uint16_t *id)
{
	uint16_t first = (uint16_t)(meta->ip_id_hint + pred);
	uint8_t ph[IPV6_HDR_LEN + UDP_HDR_LEN];
	uint32_t want = urxe_icrc_load(roce + len - URXE_ICRC_LEN), bits, got;
	size_t ip_len = 0, covered = len - URXE_ICRC_LEN;

	*id = 0;
	if (meta->ip_hdr_known) {
		got = hdrs_crc(meta->ip, meta->ip_len, meta->ip + meta->ip_len,
			       roce, covered);
	} else if (pfx_ok(t, meta->sgid.raw, meta->dgid.raw)) {
		ip_len = IPV4_MIN_HDR_LEN;
		got = roce_crc(pfx_crc(t, meta->sgid.raw, meta->dgid.raw,
				       meta->sport, meta->dport, len),
			       roce, covered) ^
		      urxe_icrc_id_delta(t, len, first);
	} else {
		ip_len = urxe_icrc_pseudo_hdr(ph, meta->sgid.raw, meta->dgid.raw,
					      meta->sport, meta->dport, len,
					      first, true);
		got = hdrs_crc(ph, ip_len, ph + ip_len, roce, covered);
	}
	if (got == want) {
		/* exact, or IPv4 with the ID tried first and DF: urxe peers */
		*id = ip_len == IPV4_MIN_HDR_LEN ? first : 0;
		return 1;
	}
	if (meta->ip_hdr_known || ip_len != IPV4_MIN_HDR_LEN)
		return 0;
	if (pred && (got ^ urxe_icrc_id_delta(t, len, (uint16_t)(first ^
			meta->ip_id_hint))) == want) {
		*id = meta->ip_id_hint;		/* an unconnected sender's */
		return 1;
	}
	/* got assumed DF set: the solution's DF bit must come out clear. */
	if (!id_solve(len + 8 + IPV4_MIN_HDR_LEN + UDP_HDR_LEN - URXE_ICRC_LEN,
		      got ^ want, &bits) || (bits & (1u << 16)))
		return 0;	/* no solution, or DF clear: not RoCE as sent */
	*id = (uint16_t)(bits ^ first);
	return 2;
}

/*
 * A connected urxe sender numbers its datagrams one by one (segment i of
 * one: its number + i), so the ID of the next from a flow is known: tried
 * first, it makes the check exact again.  @t's flow entry keeps the number
 * of the last datagram seen, segment 0's ID.
 */
bool urxe_icrc_check_rx(const uint8_t *roce, uint32_t len,
			const struct urxe_rx_meta *meta,
			struct urxe_icrc_ids *ids)
{
	struct urxe_icrc_ids *t = ids ? ids : &thread_ids;
	struct urxe_icrc_id_seen *f = NULL;
	uint32_t src = 0;
	uint16_t id, pred = 0;
	int m, p = ID_TAKE;

	if (!meta->ip_hdr_known && urxe_gid_is_v4(meta->sgid.raw)) {
		src = urxe_get32(meta->sgid.raw + 12);
		f = flow_entry(t, src, meta->sport);
		if (f->has_base && seen_is(f, src, meta->sport))
			pred = (uint16_t)(f->base + !meta->ip_id_hint);
	}
	m = rx_match(t, roce, len, meta, pred, &id);
	if (m == 2)
		p = id_plausible(t, f, src, meta->sport, id, meta->now_ns,
				 meta->udp_csum);
	if (!m || p == ID_REFUSE)
		return false;
	/*
	 * With a checksum, an ID below ID_GSO_SEGS is an unconnected
	 * socket's (0, or a GSO segment's index): it says nothing of the
	 * port's counter, so the flow's record stays as it was.  A new
	 * instance on a port sends such IDs until its socket connects
	 * (netdev/udp.c: CONN_QUIET_NS), and the silence before the jump is
	 * then measured from the last counted ID.
	 */
	if (meta->udp_csum && id < ID_GSO_SEGS)
		return true;
	if (f && (pred || m == 2)) {
		id_seen_update(f, seen_is(f, src, meta->sport) && p == ID_TAKE,
			       src, meta->sport, id, meta->now_ns);
		if (p == ID_RESYNC)
			f->has_cand = false;
		if (!meta->ip_id_hint) {
			f->base = id;
			f->has_base = id != 0;
		}
	}
	return true;
}

bool urxe_icrc_check_rx_exact(const uint8_t *roce, uint32_t len,
			      const struct urxe_rx_meta *meta)
{
	uint16_t id;

	return rx_match(NULL, roce, len, meta, 0, &id) == 1;
}

bool urxe_icrc_rx_ipv4_id(const uint8_t *roce, uint32_t len,
			  const struct urxe_rx_meta *meta, uint16_t *ip_id)
{
	return rx_match(NULL, roce, len, meta, 0, ip_id) != 0;
}
