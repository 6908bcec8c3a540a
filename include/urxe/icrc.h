/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RoCEv2 invariant CRC (IBA Annex A17.3.3): CRC-32 (the Ethernet
 * polynomial, reflected) over 8 bytes of ones standing for the LRH, the IP
 * header with its variant fields set to ones (IPv4 TOS, TTL, checksum; IPv6
 * traffic class, flow label, hop limit), the UDP header with its checksum
 * set to ones, the BTH with byte 4 (FECN, BECN, reserved) set to ones, the
 * remaining headers, payload and pad.  Stored inverted, little-endian.
 * Streaming, so payload can come straight from registered memory.
 */
#ifndef URXE_ICRC_H
#define URXE_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <urxe/wire.h>

struct urxe_icrc {
	uint32_t crc;
};

/*
 * Starts over the IP header (@ip_len bytes: 20+ for IPv4, 40 for IPv6),
 * the 8-byte UDP header and the 12-byte BTH.
 */
void urxe_icrc_begin(struct urxe_icrc *c, const uint8_t *ip, size_t ip_len,
		     const uint8_t *udp, const uint8_t *bth);
/*
 * The same, going on over the RoCE bytes after the BTH up to @len in all
 * (BTH included), as far as a small packet goes: one CRC pass instead of
 * several.  Returns how many RoCE bytes it covered (at least the BTH).
 */
size_t urxe_icrc_begin_n(struct urxe_icrc *c, const uint8_t *ip,
			 size_t ip_len, const uint8_t *udp,
			 const uint8_t *roce, size_t len);
/* The CRC of the eight 0xFF bytes standing for the LRH (tests check it). */
#define URXE_ICRC_LRH_ONES 0x2144df1cu
void urxe_icrc_update(struct urxe_icrc *c, const void *p, size_t len);
/* The ICRC value; store it with urxe_icrc_store(). */
uint32_t urxe_icrc_end(const struct urxe_icrc *c);

static inline void urxe_icrc_store(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc;
	p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16);
	p[3] = (uint8_t)(icrc >> 24);
}

static inline uint32_t urxe_icrc_load(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * Whole-frame helper: @ip points at the IP header of a contiguous
 * IP/UDP/BTH/.../ICRC packet of @len bytes (from the IP header on).
 * Returns the ICRC it should carry, or 0 with *ok false if malformed.
 */
uint32_t urxe_icrc_frame(const uint8_t *ip, size_t len, bool *ok);

/*
 * The IP and UDP headers a RoCE packet of @roce_len bytes (BTH .. ICRC)
 * between @src and @dst (16-byte GIDs; IPv4 when both are IPv4-mapped)
 * travels in, as far as the ICRC sees them: IPv4 ID @ip_id, DF @df.
 * Writes IP + UDP into @buf (68 bytes room); returns the IP header length.
 */
size_t urxe_icrc_pseudo_hdr(uint8_t *buf, const uint8_t *src,
			    const uint8_t *dst, uint16_t sport, uint16_t dport,
			    uint32_t roce_len, uint16_t ip_id, bool df);

struct urxe_icrc_ids;
/*
 * ICRC of a packet to send from its pseudo headers and RoCE bytes; @ids
 * (the caller's, serialized by it; NULL: none) keeps the CRCs of the
 * IPv4 and UDP headers of recent flows.
 */
uint32_t urxe_icrc_tx(struct urxe_icrc_ids *ids, const uint8_t *src,
		      const uint8_t *dst, uint16_t sport, const uint8_t *roce,
		      uint32_t roce_len_without_icrc);

/* ---- the IPv4 ID the ICRC covers (ipid.c, whose comment explains) ---- */

/* How an IPv4 ID changes the ICRC of packets of one length, by ID byte. */
#define URXE_ICRC_COLS_CACHED 8
struct urxe_icrc_id_cols {
	uint32_t len;			/* CRC stream length; 0: free */
	uint32_t lo[256], hi[256];
};
/* The tables of the last few lengths (the caller's, serialized by it). */
struct urxe_ipid_deltas {
	struct urxe_icrc_id_cols cols[URXE_ICRC_COLS_CACHED];
	unsigned int cols_next, cols_last;
};
/*
 * What to XOR into the ICRC of an IPv4 RoCE packet of @len bytes (BTH ..
 * ICRC) computed for IP ID 0 to make it right for IP ID @id (and, the
 * same, from ID a to ID b with @id = a ^ b), from @d's tables (NULL: the
 * thread's).
 */
uint32_t urxe_ipid_delta(struct urxe_ipid_deltas *d, uint32_t len,
			 uint16_t id);
/* urxe_ipid_delta() from the thread's tables. */
uint32_t urxe_icrc_ipv4_id_delta(uint32_t len, uint16_t id);

/*
 * A GSO send's segment i leaves with IPv4 ID i: XORs into the ICRC of each
 * segment of the datagram at @iov (@niov pieces, cut every @gso_size
 * bytes) the change from ID 0 to ID i.  A second call puts them back.
 * Nothing for IPv6 (@dst, a GID, not IPv4-mapped): it has no ID.
 */
void urxe_ipid_gso(struct urxe_ipid_deltas *d, const uint8_t *dst,
		   const struct iovec *iov, unsigned int niov,
		   uint16_t gso_size);

/*
 * A connected socket's datagrams, their ICRCs rewritten for the IDs the
 * kernel gives them: in place (the changes noted, to undo after the
 * send), or in a copy of the iovec whose trailers are copied.
 */
#define URXE_IPID_FIX_IOV 1024		/* rewritten iovecs per send batch */
#define URXE_IPID_FIX_TRAIL 256		/* rewritten ICRCs per send batch */
struct urxe_ipid_fix {
	struct urxe_ipid_deltas d;
	struct iovec iov[URXE_IPID_FIX_IOV];
	uint8_t trail[URXE_IPID_FIX_TRAIL][4];
	struct { uint8_t *at; uint32_t d; } patch[URXE_IPID_FIX_TRAIL];
	unsigned int npatch;
	unsigned int niov, ntrail;	/* of iov and trail, used */
};
/*
 * The datagram at @iov (@niov pieces, segments of @gso_size bytes; 0: one)
 * leaves with ID @base, its segment i with @base + i, while its ICRCs were
 * computed for ID i: rewrites them where they lie and notes it for
 * urxe_ipid_fix_undo().  Returns 1; 0, changing nothing, when a packet's
 * last four bytes are split across pieces (use urxe_ipid_fix_copy()); -1
 * when one was already rewritten since the last undo (the same packet
 * twice in one batch): it must wait for the next.
 */
int urxe_ipid_fix_in_place(struct urxe_ipid_fix *f, const struct iovec *iov,
			   unsigned int niov, uint16_t gso_size, uint16_t base);
/*
 * The same into a copy: sets *@out and *@nout to an iovec in @f whose
 * pieces are those of @iov but for each packet's last four bytes, which
 * come from @f with the ICRC for the real ID.  The packets stay as they
 * were.  false, changing nothing, when the copy does not fit in what is
 * left of @f since the last undo.
 */
bool urxe_ipid_fix_copy(struct urxe_ipid_fix *f, const struct iovec *iov,
			unsigned int niov, uint16_t gso_size, uint16_t base,
			struct iovec **out, size_t *nout);
/* Once the batch has left: the packets as they were, @f empty again. */
void urxe_ipid_fix_undo(struct urxe_ipid_fix *f);

/* What a receiver remembers of the IPv4 IDs it solved, per source. */
#define URXE_ICRC_ID_SEEN_BITS 6

struct urxe_icrc_id_seen {
	uint32_t src;
	uint16_t sport;			/* flow entries only */
	uint16_t last_id;
	uint16_t base;			/* flow: its last datagram's ID */
	uint16_t cand;			/* flow: an ID refused, see ipid.c */
	bool used;
	bool has_base;
	bool has_cand;
	uint64_t last_ns;
	uint64_t cand_ns;
};

/*
 * The CRC of what comes before the BTH of an IPv4 packet (the LRH's ones,
 * the IP header with ID 0 and DF set, the UDP header), which every packet
 * of one flow and length repeats.
 */
#define URXE_ICRC_PFX_BITS 3
struct urxe_icrc_pfx {
	uint32_t src, dst;		/* IPv4 addresses as they lie */
	uint32_t ports;			/* source << 16 | destination */
	uint32_t len;			/* RoCE bytes, ICRC included; 0: free */
	uint32_t crc;
};
/* What an engine's ICRC code keeps: solved IDs, header CRCs, ID deltas. */
struct urxe_icrc_ids {
	struct urxe_icrc_id_seen src[1u << URXE_ICRC_ID_SEEN_BITS];
	struct urxe_icrc_id_seen flow[1u << URXE_ICRC_ID_SEEN_BITS];
	struct urxe_icrc_pfx pfx[1u << URXE_ICRC_PFX_BITS];
	struct urxe_ipid_deltas d;
};

/*
 * Checks the ICRC of a received packet (@roce = BTH .. ICRC).  With the IP
 * header at hand (packet backend) the check is exact; from a UDP socket the
 * IPv4 ID is unknown and is solved for, or predicted (see ipid.c), with
 * @ids (the caller's, serialized by it; NULL: the thread's own).
 */
bool urxe_icrc_check_rx(const uint8_t *roce, uint32_t len,
			const struct urxe_rx_meta *meta,
			struct urxe_icrc_ids *ids);
/*
 * The same without solving for an IPv4 ID: as sent by a urxe peer (ID 0
 * or the hint) or not at all.  For guessing which header a packet had,
 * where a solved ID would match one in 65536 wrong guesses.
 */
bool urxe_icrc_check_rx_exact(const uint8_t *roce, uint32_t len,
			      const struct urxe_rx_meta *meta);

/*
 * The IPv4 ID a received frame (BTH .. ICRC, header rebuilt from @meta)
 * was sent with, solved from its ICRC (0 if it matches as is); false if
 * no ID makes the ICRC match.  No state changes: for captures.
 */
bool urxe_icrc_rx_ipv4_id(const uint8_t *roce, uint32_t len,
			  const struct urxe_rx_meta *meta, uint16_t *ip_id);

#endif
