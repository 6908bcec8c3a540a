/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The opcode table.  An opcode is transport base | operation (IBA 9.2.1:
 * RC 0x00, UC 0x20, RD 0x40, UD 0x60, CNP 0x80, XRC 0xA0).  The table
 * states for each operation which headers and semantics it has; the
 * offsets and lengths of every header are computed from that, once
 * (wire/opcode.c).
 */
#ifndef URXE_OPCODE_H
#define URXE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

enum urxe_transport {
	URXE_TR_RC = 0x00,
	URXE_TR_UC = 0x20,
	URXE_TR_RD = 0x40,
	URXE_TR_UD = 0x60,
	URXE_TR_CNP = 0x80,
	URXE_TR_XRC = 0xa0,
};

/* Operations (the low 5 bits), IBA table 35. */
enum urxe_op {
	URXE_OP_SEND_FIRST = 0x00,
	URXE_OP_SEND_MIDDLE = 0x01,
	URXE_OP_SEND_LAST = 0x02,
	URXE_OP_SEND_LAST_IMM = 0x03,
	URXE_OP_SEND_ONLY = 0x04,
	URXE_OP_SEND_ONLY_IMM = 0x05,
	URXE_OP_WRITE_FIRST = 0x06,
	URXE_OP_WRITE_MIDDLE = 0x07,
	URXE_OP_WRITE_LAST = 0x08,
	URXE_OP_WRITE_LAST_IMM = 0x09,
	URXE_OP_WRITE_ONLY = 0x0a,
	URXE_OP_WRITE_ONLY_IMM = 0x0b,
	URXE_OP_READ_REQ = 0x0c,
	URXE_OP_READ_RESP_FIRST = 0x0d,
	URXE_OP_READ_RESP_MIDDLE = 0x0e,
	URXE_OP_READ_RESP_LAST = 0x0f,
	URXE_OP_READ_RESP_ONLY = 0x10,
	URXE_OP_ACK = 0x11,
	URXE_OP_ATOMIC_ACK = 0x12,
	URXE_OP_CMP_SWAP = 0x13,
	URXE_OP_FETCH_ADD = 0x14,
	URXE_OP_SEND_LAST_INV = 0x16,
	URXE_OP_SEND_ONLY_INV = 0x17,
	URXE_OP__COUNT = 0x20,
};

/* Headers after the BTH, in wire order. */
enum urxe_hdr {
	URXE_HDR_XRCETH,
	URXE_HDR_DETH,
	URXE_HDR_RETH,
	URXE_HDR_ATMETH,
	URXE_HDR_AETH,
	URXE_HDR_ATMACK,
	URXE_HDR_IMMDT,
	URXE_HDR_IETH,
	URXE_HDR__COUNT,
};

#define URXE_HDR_BIT(h) (1u << (h))

enum urxe_opflag {
	URXE_F_VALID = 1u << 0,
	URXE_F_REQ = 1u << 1,		/* requester to responder */
	URXE_F_RESP = 1u << 2,		/* responder to requester */
	URXE_F_PAYLOAD = 1u << 3,	/* carries data (may be zero-length) */
	URXE_F_FIRST = 1u << 4,
	URXE_F_MIDDLE = 1u << 5,
	URXE_F_LAST = 1u << 6,		/* ONLY = FIRST | LAST */
	URXE_F_SEND = 1u << 7,
	URXE_F_WRITE = 1u << 8,
	URXE_F_READ = 1u << 9,
	URXE_F_ATOMIC = 1u << 10,
	URXE_F_ACK = 1u << 11,
	URXE_F_IMM = 1u << 12,
	URXE_F_INV = 1u << 13,
};

struct urxe_opinfo {
	const char *name;
	uint32_t hdrs;			/* URXE_HDR_BIT() set */
	uint32_t flags;
	uint8_t off[URXE_HDR__COUNT];	/* from the start of the BTH */
	uint8_t hdr_len;		/* BTH + all headers = payload offset */
};

/* The entry for @opcode; flags is 0 (no URXE_F_VALID) if undefined. */
const struct urxe_opinfo *urxe_opinfo(uint8_t opcode);

static inline enum urxe_transport urxe_opcode_transport(uint8_t opcode)
{
	return (enum urxe_transport)(opcode & 0xe0);
}

static inline enum urxe_op urxe_opcode_op(uint8_t opcode)
{
	return (enum urxe_op)(opcode & 0x1f);
}

static inline uint8_t urxe_opcode(enum urxe_transport t, enum urxe_op op)
{
	return (uint8_t)(t | op);
}

/* Header lengths by enum urxe_hdr. */
extern const uint8_t urxe_hdr_len[URXE_HDR__COUNT];

#endif
