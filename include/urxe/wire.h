/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire format (wire/, above base/ only): InfiniBand transport headers
 * as RoCEv2 carries them (IBA vol. 1 ch. 9, Annex A17), 24-bit PSN
 * arithmetic, path MTU facts, and what a received frame's IP and UDP
 * headers said; with the opcode table (<urxe/opcode.h>, included).  The
 * ICRC and the IPv4 ID it covers are in <urxe/icrc.h>, the IP and UDP
 * headers urxe writes in <urxe/ipudp.h>.
 * Every layer above links it; it depends on none of ours.
 *
 * Every field is big-endian on the wire and read with shifts and masks;
 * no structure is overlaid on a packet.
 */
#ifndef URXE_WIRE_H
#define URXE_WIRE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <urxe/opcode.h>
#include <urxe/util.h>

/* Header lengths, IBA 9.2 - 9.3. */
#define URXE_BTH_LEN 12
#define URXE_RDETH_LEN 4
#define URXE_DETH_LEN 8
#define URXE_XRCETH_LEN 4
#define URXE_RETH_LEN 16
#define URXE_ATMETH_LEN 28
#define URXE_AETH_LEN 4
#define URXE_ATMACK_LEN 8
#define URXE_IMMDT_LEN 4
#define URXE_IETH_LEN 4
#define URXE_ICRC_LEN 4

#define URXE_ROCE_UDP_PORT 4791
#define URXE_PSN_MASK 0xffffffu
#define URXE_QPN_MASK 0xffffffu
#define URXE_MCAST_QPN 0xffffffu

/*
 * BTH, IBA 9.2: opcode | SE M Pad(2) TVer(4) | P_Key(16) |
 * FECN BECN Resv6 | DestQP(24) | A Resv7 | PSN(24).
 */
struct urxe_bth {
	uint8_t opcode;
	uint8_t se;
	uint8_t mig;
	uint8_t pad;		/* 0..3 bytes after the payload */
	uint8_t tver;
	uint16_t pkey;
	uint8_t fecn;
	uint8_t becn;
	uint32_t dqpn;
	uint8_t ackreq;
	uint32_t psn;
};

static inline void urxe_bth_get(const uint8_t *p, struct urxe_bth *b)
{
	b->opcode = p[0];
	b->se = p[1] >> 7;
	b->mig = (p[1] >> 6) & 1;
	b->pad = (p[1] >> 4) & 3;
	b->tver = p[1] & 0xf;
	b->pkey = urxe_get16(p + 2);
	b->fecn = p[4] >> 7;
	b->becn = (p[4] >> 6) & 1;
	b->dqpn = urxe_get24(p + 5);
	b->ackreq = p[8] >> 7;
	b->psn = urxe_get24(p + 9);
}

static inline void urxe_bth_put(uint8_t *p, const struct urxe_bth *b)
{
	p[0] = b->opcode;
	p[1] = (uint8_t)((b->se & 1) << 7 | (b->mig & 1) << 6 |
			 (b->pad & 3) << 4 | (b->tver & 0xf));
	urxe_put16(p + 2, b->pkey);
	p[4] = (uint8_t)((b->fecn & 1) << 7 | (b->becn & 1) << 6);
	urxe_put24(p + 5, b->dqpn & URXE_QPN_MASK);
	p[8] = (uint8_t)((b->ackreq & 1) << 7);
	urxe_put24(p + 9, b->psn & URXE_PSN_MASK);
}

/* RETH, IBA 9.3.3: VA(64) R_Key(32) DMA length(32). */
struct urxe_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

static inline void urxe_reth_get(const uint8_t *p, struct urxe_reth *r)
{
	r->va = urxe_get64(p);
	r->rkey = urxe_get32(p + 8);
	r->len = urxe_get32(p + 12);
}

static inline void urxe_reth_put(uint8_t *p, const struct urxe_reth *r)
{
	urxe_put64(p, r->va);
	urxe_put32(p + 8, r->rkey);
	urxe_put32(p + 12, r->len);
}

/* AtomicETH, IBA 9.3.5: VA(64) R_Key(32) SwapData(64) CmpData(64). */
struct urxe_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t cmp;
};

static inline void urxe_atmeth_get(const uint8_t *p, struct urxe_atmeth *a)
{
	a->va = urxe_get64(p);
	a->rkey = urxe_get32(p + 8);
	a->swap_add = urxe_get64(p + 12);
	a->cmp = urxe_get64(p + 20);
}

static inline void urxe_atmeth_put(uint8_t *p, const struct urxe_atmeth *a)
{
	urxe_put64(p, a->va);
	urxe_put32(p + 8, a->rkey);
	urxe_put64(p + 12, a->swap_add);
	urxe_put64(p + 20, a->cmp);
}

/* AETH, IBA 9.3.4: Syndrome(8) MSN(24). */
#define URXE_AETH_ACK 0x00		/* 0b000xxxxx: ACK, credit count */
#define URXE_AETH_RNR_NAK 0x20		/* 0b001xxxxx: RNR NAK, timer */
#define URXE_AETH_NAK 0x60		/* 0b011xxxxx: NAK, code */
#define URXE_AETH_TYPE_MASK 0xe0
#define URXE_AETH_CREDIT_INVALID 0x1f	/* "no credit information" */
#define URXE_NAK_PSN_SEQ 0x00		/* IBA 9.7.5.2.4 NAK codes */
#define URXE_NAK_INVALID_REQ 0x01
#define URXE_NAK_REM_ACCESS 0x02
#define URXE_NAK_REM_OP 0x03
#define URXE_NAK_INVALID_RD_REQ 0x04

/* An RNR NAK's timer (the syndrome's low 5 bits), in microseconds. */
uint32_t urxe_rnr_timer_us(unsigned int code);

static inline void urxe_aeth_put(uint8_t *p, uint8_t syndrome, uint32_t msn)
{
	p[0] = syndrome;
	urxe_put24(p + 1, msn);
}

/* DETH, IBA 9.3.2: Q_Key(32) Resv8 SrcQP(24). */
static inline void urxe_deth_put(uint8_t *p, uint32_t qkey, uint32_t sqpn)
{
	urxe_put32(p, qkey);
	p[4] = 0;
	urxe_put24(p + 5, sqpn);
}

/* XRCETH, IBA 9.3.6 (XRC annex): Resv8 XRCSRQ(24). */
static inline void urxe_xrceth_put(uint8_t *p, uint32_t srqn)
{
	p[0] = 0;
	urxe_put24(p + 1, srqn);
}

static inline uint32_t urxe_xrceth_get(const uint8_t *p)
{
	return urxe_get24(p + 1);
}

/* ---- PSNs ---- */

/*
 * 24-bit PSN arithmetic (IBA 9.7.1): PSNs wrap; a PSN is "before" another
 * when it lies in the half of the space behind it.
 */

static inline uint32_t urxe_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & URXE_PSN_MASK;
}

/* a - b as a signed distance in (-2^23, 2^23]. */
static inline int32_t urxe_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool urxe_psn_before(uint32_t a, uint32_t b)
{
	return urxe_psn_diff(a, b) < 0;
}

/* ---- path MTU (mtu.c) ---- */

/*
 * Bytes of every RoCEv2 packet that are not IB payload, at most: IPv6 (40)
 * + UDP (8) + BTH (12) + the largest extension headers a request carries
 * with payload (RETH 16) + ICRC (4).
 */
#define URXE_ROCE_OVERHEAD 80

/* Largest IB MTU (256..4096 bytes) whose packets fit a link MTU; 0 if none. */
unsigned int urxe_mtu_for_link(unsigned int link_mtu);

/* 256 -> 1, 512 -> 2, ... 4096 -> 5 (IBA enum values); 0 for others. */
int urxe_mtu_to_enum(unsigned int bytes);
unsigned int urxe_mtu_from_enum(int mtu_enum);

/* ---- receiving ---- */

/* Where an incoming frame came from, as the netdev saw it. */
struct urxe_rx_meta {
	union ibv_gid sgid;		/* source IP as a GID */
	union ibv_gid dgid;		/* destination IP as a GID */
	uint16_t sport;
	uint16_t dport;
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;
	uint64_t now_ns;		/* when it arrived (ops->now scale) */
	bool ip_hdr_known;		/* @ip points at the real IP header */
	const uint8_t *ip;
	uint32_t ip_len;
	/*
	 * IPv4 from a socket: the ID the packet most likely carried (segment
	 * i of a GRO datagram: i, as a GSO sender's kernel numbers them);
	 * tried first, before the ID is solved for.
	 */
	uint16_t ip_id_hint;
	/*
	 * IPv4 from a socket: the datagram carried a UDP checksum, which the
	 * kernel verified (false: checksum 0, or not known).
	 */
	bool udp_csum;
};

#endif
