// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IPv4 ID and the ICRC, in one place.
 *
 * The ICRC (IBA Annex A17.3.3, icrc.c) covers the IPv4 header with its
 * variant fields as ones, but not the ID or the flags: the ID and DF bit
 * a datagram leaves with are in its ICRC.  A UDP socket lets the sender
 * choose neither and the receiver see neither.  The CRC is affine in
 * them: with m0 the packet as if ID = 0 and DF = 0, crc(m0 ^ d) =
 * crc(m0) ^ L(d), L linear in the 17 bits (16 of the ID, then DF) and
 * fixed by the packet's length.  So an ICRC computed for one ID is made
 * right for another by XORing L of their difference: urxe_ipid_delta(),
 * from two 256-entry tables per length (the ID's low byte's share and its
 * high byte's), kept for the last few lengths.
 *
 * Sending.  The engine computes every ICRC for ID 0 and DF set, what
 * Linux writes from an unconnected socket with IP_PMTUDISC_DO (tx.c).
 * Three things send other IDs, and each rewrites the ICRCs it changes:
 *  - A GSO send (the data path's flow merge, datapath/dp_tx.c):
 *    the kernel gives segment i ID i.  urxe_ipid_gso() XORs each
 *    segment's ICRC from ID 0 to ID i, and a second call back (a send the
 *    kernel refused goes packet by packet).  The packet backend's GSO
 *    frames number their segments the same way (netdev/packet_gso.c).
 *  - A connected transmit socket (netdev/udp_tx.c, which spares a route
 *    lookup per send) numbers its datagrams from a counter of its own:
 *    datagram j leaves with base + j, segment i of it with base + j + i.
 *    netdev learns the counter with a probe and rewrites the ICRCs for
 *    those IDs as the datagram leaves: urxe_ipid_fix_in_place() where each
 *    packet's last four bytes lie in one piece, else urxe_ipid_fix_copy()
 *    (the trailers copied, the packets untouched); urxe_ipid_fix_undo()
 *    puts the packets back once sent.
 *  - The packet backend writes its own IP headers: ID 0, or i for GSO
 *    segment i, as above.
 *
 * Receiving from a socket, the ID is unknown: solve L(d) = icrc ^ crc(m0)
 * over GF(2).  The 17 columns of L are independent (a CRC-32 tells apart
 * any change within 32 consecutive bits), so the solution, if any, is
 * unique.  It is then accepted only if plausible: DF set, and the ID 0
 * (urxe peers; Linux sends ID 0 with IP_PMTUDISC_DO), a GSO segment's
 * small index, or one that follows what the flow or its source sent last.
 * That keeps the check close to a full 32-bit one while accepting what
 * kernel rxe sends.  What follows:
 *
 * Linux draws IPv4 IDs from per-destination counters that also jump by a
 * random amount up to the jiffies elapsed since their last use: the
 * window grows by one per millisecond of silence from that source.  A
 * urxe peer's GSO send from an unconnected socket numbers its segments 0,
 * 1, 2, ... (ID_GSO_SEGS at most); split anywhere before us (software
 * segmentation on a device without checksum offload, a receiver without
 * GRO), they come one by one with those small IDs.  A connected socket
 * numbers from its own counter, one per datagram and segment i of one at
 * its number + i: per source port, IDs then step back by up to
 * ID_GSO_SEGS.  Its counter starts at random whenever a socket connects:
 * a restarted peer, or a new one on the same address and port, jumps
 * anywhere.  Only datagrams with a UDP checksum (verified by the kernel)
 * come from such sockets; a jump there is taken after ID_RESTART_NS of
 * silence from the flow, which any restart takes (netdev/udp.c connects a
 * socket only after CONN_QUIET_NS without a counted ID from its port).
 * Without a checksum, IDs step back too: a kernel peer's tasks for one QP
 * (requester, responder) run on different CPUs and take IDs from one
 * counter, so two datagrams of a flow can leave in the other order (seen
 * from kernel rxe in a 2-CPU VM: one in about 10^4 was one ID behind the
 * one before it); a duplicated datagram repeats its ID.  Both kinds of
 * flow therefore take an ID up to ID_BACK behind the last one.  Otherwise
 * an ID that fits nothing is refused and noted as the flow's candidate: a
 * next one that follows it is taken (and the flow follows it from then
 * on), so no sender stays shut out.  A connected sender's next ID is
 * known (its last datagram's + 1): tried first, it makes the check exact
 * again.
 */
#include <isa-l/crc.h>
#include <string.h>

#include <urxe/icrc.h>
#include <urxe/util.h>
#include <urxe/wire.h>

#include "icrc_int.h"

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
uint32_t urxe_ipid_delta(struct urxe_ipid_deltas *t, uint32_t len, uint16_t id)
{
	uint32_t stream_len = len + 8 + IPV4_MIN_HDR_LEN + UDP_HDR_LEN -
			      URXE_ICRC_LEN;
	struct urxe_icrc_id_cols *c;
	unsigned int k;

	if (!id)
		return 0;
	if (!t)
		t = &thread_ids.d;
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
	return urxe_ipid_delta(NULL, len, id);
}

/*
 * Where each segment's ICRC lies: the datagram at @iov cut every @seg
 * bytes (the last segment may be shorter).  seg_next() steps to the next
 * segment; w->at is its last four bytes when they lie in one piece of
 * at least that, else NULL.
 */
struct seg_walk {
	const struct iovec *iov;
	unsigned int niov, k, i;	/* pieces; the trailer's; segment */
	size_t total, seg, pos, end;	/* pos: where piece k starts */
	size_t len;			/* the segment's */
	uint8_t *at;
};

static inline void seg_walk_init(struct seg_walk *w,
				 const struct iovec *iov, unsigned int niov,
				 uint16_t gso_size)
{
	memset(w, 0, sizeof(*w));
	w->iov = iov;
	w->niov = niov;
	w->total = urxe_iov_len(iov, niov);
	w->seg = gso_size ? gso_size : w->total;
	w->i = (unsigned int)-1;
}

static inline bool seg_next(struct seg_walk *w)
{
	if (w->end >= w->total)
		return false;
	w->i++;
	w->len = w->total - w->end < w->seg ? w->total - w->end : w->seg;
	w->end += w->len;
	while (w->k < w->niov && w->pos + w->iov[w->k].iov_len < w->end)
		w->pos += w->iov[w->k++].iov_len;
	w->at = NULL;
	if (w->len >= 4 && w->k < w->niov && w->end - 4 >= w->pos)
		w->at = (uint8_t *)w->iov[w->k].iov_base +
			(w->end - 4 - w->pos);
	return true;
}

void urxe_ipid_gso(struct urxe_ipid_deltas *d, const uint8_t *dst,
		   const struct iovec *iov, unsigned int niov,
		   uint16_t gso_size)
{
	struct seg_walk w;

	if (!urxe_gid_is_v4(dst))
		return;				/* IPv6: no ID */
	seg_walk_init(&w, iov, niov, gso_size);
	/* The engine's packets end in a piece of their own: w.at is set. */
	while (seg_next(&w))
		if (w.i && w.at)
			urxe_xor_le32(w.at, urxe_ipid_delta(d, (uint32_t)w.len,
							    (uint16_t)w.i));
}

/*
 * What turns the ICRC of segment @i (@len bytes), computed for ID @i, into
 * the one for ID @base + @i: the XOR of the two IDs' shares.
 */
static uint32_t seg_delta(struct urxe_ipid_fix *f, size_t len, uint16_t base,
			  unsigned int i)
{
	return urxe_ipid_delta(&f->d, (uint32_t)len,
			       (uint16_t)((uint16_t)(base + i) ^ i));
}

/* Puts back what urxe_ipid_fix_in_place() rewrote, down to patch[@keep]. */
static void fix_undo(struct urxe_ipid_fix *f, unsigned int keep)
{
	while (f->npatch > keep) {
		f->npatch--;
		urxe_xor_le32(f->patch[f->npatch].at, f->patch[f->npatch].d);
	}
}

void urxe_ipid_fix_undo(struct urxe_ipid_fix *f)
{
	fix_undo(f, 0);
	f->niov = f->ntrail = 0;
}

int urxe_ipid_fix_in_place(struct urxe_ipid_fix *f, const struct iovec *iov,
			   unsigned int niov, uint16_t gso_size, uint16_t base)
{
	unsigned int j, first = f->npatch;
	struct seg_walk w;
	int ret = 0;

	seg_walk_init(&w, iov, niov, gso_size);
	while (seg_next(&w)) {
		if (!w.at || f->npatch == URXE_IPID_FIX_TRAIL)
			goto undo;
		for (j = 0; j < first; j++)
			if (f->patch[j].at == w.at)
				ret = -1;
		if (ret)
			goto undo;
		f->patch[f->npatch].at = w.at;
		f->patch[f->npatch].d = seg_delta(f, w.len, base, w.i);
		urxe_xor_le32(w.at, f->patch[f->npatch++].d);
	}
	return 1;

undo:
	fix_undo(f, first);
	return ret;
}

/*
 * Appends to f->iov the pieces of @iov from byte *@at of piece *@ii on,
 * @body bytes; false if they do not fit.
 */
static bool copy_body(struct urxe_ipid_fix *f, const struct iovec *iov,
		      unsigned int niov, unsigned int *ii, size_t *at,
		      size_t body, unsigned int *k)
{
	size_t take;

	while (body) {
		if (*ii >= niov || *k >= URXE_IPID_FIX_IOV)
			return false;
		take = iov[*ii].iov_len - *at;
		if (take > body)
			take = body;
		if (take) {
			f->iov[*k].iov_base = (uint8_t *)iov[*ii].iov_base + *at;
			f->iov[(*k)++].iov_len = take;
		}
		*at += take;
		body -= take;
		if (*at == iov[*ii].iov_len) {
			(*ii)++;
			*at = 0;
		}
	}
	return true;
}

bool urxe_ipid_fix_copy(struct urxe_ipid_fix *f, const struct iovec *iov,
			unsigned int niov, uint16_t gso_size, uint16_t base,
			struct iovec **out, size_t *nout)
{
	size_t total = urxe_iov_len(iov, niov), off = 0, at = 0;
	size_t seg = gso_size ? gso_size : total;
	unsigned int k = f->niov, t = f->ntrail, ii = 0, i, b;

	for (i = 0; off < total; i++) {
		size_t len = total - off < seg ? total - off : seg;

		if (!copy_body(f, iov, niov, &ii, &at, len < 4 ? 0 : len - 4,
			       &k) ||
		    t >= URXE_IPID_FIX_TRAIL || k >= URXE_IPID_FIX_IOV)
			return false;
		for (b = 0; b < 4 && b < len; b++) {
			while (ii < niov && at == iov[ii].iov_len) {
				ii++;
				at = 0;
			}
			if (ii >= niov)
				return false;
			f->trail[t][b] = ((uint8_t *)iov[ii].iov_base)[at++];
		}
		if (len >= 4)
			urxe_xor_le32(f->trail[t], seg_delta(f, len, base, i));
		f->iov[k].iov_base = f->trail[t++];
		f->iov[k++].iov_len = b;
		off += len;
	}
	*out = &f->iov[f->niov];
	*nout = k - f->niov;
	f->niov = k;
	f->ntrail = t;
	return true;
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
		got = urxe_icrc_hdrs_crc(meta->ip, meta->ip_len,
					 meta->ip + meta->ip_len, roce, covered);
	} else if (urxe_icrc_pfx_ok(t, meta->sgid.raw, meta->dgid.raw)) {
		ip_len = IPV4_MIN_HDR_LEN;
		got = urxe_icrc_roce_crc(urxe_icrc_pfx_crc(t, meta->sgid.raw,
							   meta->dgid.raw,
							   meta->sport,
							   meta->dport, len),
					 roce, covered) ^
		      urxe_ipid_delta(t ? &t->d : NULL, len, first);
	} else {
		ip_len = urxe_icrc_pseudo_hdr(ph, meta->sgid.raw, meta->dgid.raw,
					      meta->sport, meta->dport, len,
					      first, true);
		got = urxe_icrc_hdrs_crc(ph, ip_len, ph + ip_len, roce, covered);
	}
	if (got == want) {
		/* exact, or IPv4 with the ID tried first and DF: urxe peers */
		*id = ip_len == IPV4_MIN_HDR_LEN ? first : 0;
		return 1;
	}
	if (meta->ip_hdr_known || ip_len != IPV4_MIN_HDR_LEN)
		return 0;
	if (pred && (got ^ urxe_ipid_delta(t ? &t->d : NULL, len,
					   (uint16_t)(first ^
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
