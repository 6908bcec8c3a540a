// SPDX-License-Identifier: BSD-2-Clause
/*
 * The opcode table, IBA 9.2.1 / table 35 and the XRC annex.  What is
 * written by hand is per operation: its headers and meaning, and which
 * transports have it.  Per-opcode entries, header offsets and lengths are
 * derived once from that.
 */
#include <pthread.h>

#include <urxe/wire.h>

const uint8_t urxe_hdr_len[URXE_HDR__COUNT] = {
	[URXE_HDR_XRCETH] = URXE_XRCETH_LEN,
	[URXE_HDR_DETH] = URXE_DETH_LEN,
	[URXE_HDR_RETH] = URXE_RETH_LEN,
	[URXE_HDR_ATMETH] = URXE_ATMETH_LEN,
	[URXE_HDR_AETH] = URXE_AETH_LEN,
	[URXE_HDR_ATMACK] = URXE_ATMACK_LEN,
	[URXE_HDR_IMMDT] = URXE_IMMDT_LEN,
	[URXE_HDR_IETH] = URXE_IETH_LEN,
};

#define H(x) URXE_HDR_BIT(URXE_HDR_##x)
#define RC (1u << 0)
#define UC (1u << 1)
#define UD (1u << 2)
#define XRC (1u << 3)

struct op_desc {
	const char *name;
	uint32_t hdrs;
	uint32_t flags;
	uint32_t transports;
};

#define REQ_DATA (URXE_F_REQ | URXE_F_PAYLOAD)
#define ONLY (URXE_F_FIRST | URXE_F_LAST)

static const struct op_desc ops[URXE_OP__COUNT] = {
	[URXE_OP_SEND_FIRST] = { "SEND_FIRST", 0,
		REQ_DATA | URXE_F_SEND | URXE_F_FIRST, RC | UC | XRC },
	[URXE_OP_SEND_MIDDLE] = { "SEND_MIDDLE", 0,
		REQ_DATA | URXE_F_SEND | URXE_F_MIDDLE, RC | UC | XRC },
	[URXE_OP_SEND_LAST] = { "SEND_LAST", 0,
		REQ_DATA | URXE_F_SEND | URXE_F_LAST, RC | UC | XRC },
	[URXE_OP_SEND_LAST_IMM] = { "SEND_LAST_WITH_IMMEDIATE", H(IMMDT),
		REQ_DATA | URXE_F_SEND | URXE_F_LAST | URXE_F_IMM, RC | UC | XRC },
	[URXE_OP_SEND_ONLY] = { "SEND_ONLY", 0,
		REQ_DATA | URXE_F_SEND | ONLY, RC | UC | UD | XRC },
	[URXE_OP_SEND_ONLY_IMM] = { "SEND_ONLY_WITH_IMMEDIATE", H(IMMDT),
		REQ_DATA | URXE_F_SEND | ONLY | URXE_F_IMM, RC | UC | UD | XRC },
	[URXE_OP_WRITE_FIRST] = { "RDMA_WRITE_FIRST", H(RETH),
		REQ_DATA | URXE_F_WRITE | URXE_F_FIRST, RC | UC | XRC },
	[URXE_OP_WRITE_MIDDLE] = { "RDMA_WRITE_MIDDLE", 0,
		REQ_DATA | URXE_F_WRITE | URXE_F_MIDDLE, RC | UC | XRC },
	[URXE_OP_WRITE_LAST] = { "RDMA_WRITE_LAST", 0,
		REQ_DATA | URXE_F_WRITE | URXE_F_LAST, RC | UC | XRC },
	[URXE_OP_WRITE_LAST_IMM] = { "RDMA_WRITE_LAST_WITH_IMMEDIATE", H(IMMDT),
		REQ_DATA | URXE_F_WRITE | URXE_F_LAST | URXE_F_IMM, RC | UC | XRC },
	[URXE_OP_WRITE_ONLY] = { "RDMA_WRITE_ONLY", H(RETH),
		REQ_DATA | URXE_F_WRITE | ONLY, RC | UC | XRC },
	[URXE_OP_WRITE_ONLY_IMM] = { "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		H(RETH) | H(IMMDT),
		REQ_DATA | URXE_F_WRITE | ONLY | URXE_F_IMM, RC | UC | XRC },
	[URXE_OP_READ_REQ] = { "RDMA_READ_REQUEST", H(RETH),
		URXE_F_REQ | URXE_F_READ | ONLY, RC | XRC },
	[URXE_OP_READ_RESP_FIRST] = { "RDMA_READ_RESPONSE_FIRST", H(AETH),
		URXE_F_RESP | URXE_F_PAYLOAD | URXE_F_READ | URXE_F_FIRST,
		RC | XRC },
	[URXE_OP_READ_RESP_MIDDLE] = { "RDMA_READ_RESPONSE_MIDDLE", 0,
		URXE_F_RESP | URXE_F_PAYLOAD | URXE_F_READ | URXE_F_MIDDLE,
		RC | XRC },
	[URXE_OP_READ_RESP_LAST] = { "RDMA_READ_RESPONSE_LAST", H(AETH),
		URXE_F_RESP | URXE_F_PAYLOAD | URXE_F_READ | URXE_F_LAST,
		RC | XRC },
	[URXE_OP_READ_RESP_ONLY] = { "RDMA_READ_RESPONSE_ONLY", H(AETH),
		URXE_F_RESP | URXE_F_PAYLOAD | URXE_F_READ | ONLY, RC | XRC },
	[URXE_OP_ACK] = { "ACKNOWLEDGE", H(AETH),
		URXE_F_RESP | URXE_F_ACK | ONLY, RC | XRC },
	[URXE_OP_ATOMIC_ACK] = { "ATOMIC_ACKNOWLEDGE", H(AETH) | H(ATMACK),
		URXE_F_RESP | URXE_F_ACK | URXE_F_ATOMIC | ONLY, RC | XRC },
	[URXE_OP_CMP_SWAP] = { "COMPARE_SWAP", H(ATMETH),
		URXE_F_REQ | URXE_F_ATOMIC | ONLY, RC | XRC },
	[URXE_OP_FETCH_ADD] = { "FETCH_ADD", H(ATMETH),
		URXE_F_REQ | URXE_F_ATOMIC | ONLY, RC | XRC },
	[URXE_OP_SEND_LAST_INV] = { "SEND_LAST_WITH_INVALIDATE", H(IETH),
		REQ_DATA | URXE_F_SEND | URXE_F_LAST | URXE_F_INV, RC | XRC },
	[URXE_OP_SEND_ONLY_INV] = { "SEND_ONLY_WITH_INVALIDATE", H(IETH),
		REQ_DATA | URXE_F_SEND | ONLY | URXE_F_INV, RC | XRC },
};

static const struct {
	enum urxe_transport base;
	uint32_t bit;
} transports[] = {
	{ URXE_TR_RC, RC }, { URXE_TR_UC, UC }, { URXE_TR_UD, UD },
	{ URXE_TR_XRC, XRC },
};

static struct urxe_opinfo table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_entry(enum urxe_transport tr, const struct op_desc *d,
			struct urxe_opinfo *e)
{
	unsigned int off = URXE_BTH_LEN, h;

	e->name = d->name;
	e->flags = d->flags | URXE_F_VALID;
	e->hdrs = d->hdrs;
	if (tr == URXE_TR_UD)
		e->hdrs |= H(DETH);		/* IBA 9.3.2 */
	if (tr == URXE_TR_XRC && (d->flags & URXE_F_REQ))
		e->hdrs |= H(XRCETH);		/* requests only */
	/* enum urxe_hdr is in wire order: lay the present ones out. */
	for (h = 0; h < URXE_HDR__COUNT; h++) {
		if (!(e->hdrs & URXE_HDR_BIT(h)))
			continue;
		e->off[h] = (uint8_t)off;
		off += urxe_hdr_len[h];
	}
	e->hdr_len = (uint8_t)off;
}

static void build_table(void)
{
	unsigned int t, op;

	for (t = 0; t < sizeof(transports) / sizeof(transports[0]); t++)
		for (op = 0; op < URXE_OP__COUNT; op++)
			if (ops[op].transports & transports[t].bit)
				build_entry(transports[t].base, &ops[op],
					    &table[transports[t].base | op]);
}

const struct urxe_opinfo *urxe_opinfo(uint8_t opcode)
{
	pthread_once(&table_once, build_table);
	return &table[opcode];
}
