// SPDX-License-Identifier: BSD-2-Clause
/*
 * The text of an arrow: the opcode (with its transport unless RC), the
 * PSN, and what a reader needs for that opcode: the payload length; the
 * R_Key, address and DMA length of a WRITE or READ; the syndrome and MSN
 * of an ACK or NAK (the RNR NAK's timer in ms, IBA table 45); immediate
 * data; the XRC SRQ number; a UD Q_Key; the atomic operands and result;
 * the CM message a MAD to QP1 carries.  Every drawing uses these words.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <urxe/util.h>
#include <urxe/wire.h>

#include "../rdmacm/mad.h"
#include "trace.h"

static const char *const op_names[URXE_OP__COUNT] = {
	[URXE_OP_SEND_FIRST] = "SEND_FIRST",
	[URXE_OP_SEND_MIDDLE] = "SEND_MIDDLE",
	[URXE_OP_SEND_LAST] = "SEND_LAST",
	[URXE_OP_SEND_LAST_IMM] = "SEND_LAST_IMM",
	[URXE_OP_SEND_ONLY] = "SEND_ONLY",
	[URXE_OP_SEND_ONLY_IMM] = "SEND_ONLY_IMM",
	[URXE_OP_WRITE_FIRST] = "RDMA_WRITE_FIRST",
	[URXE_OP_WRITE_MIDDLE] = "RDMA_WRITE_MIDDLE",
	[URXE_OP_WRITE_LAST] = "RDMA_WRITE_LAST",
	[URXE_OP_WRITE_LAST_IMM] = "RDMA_WRITE_LAST_IMM",
	[URXE_OP_WRITE_ONLY] = "RDMA_WRITE_ONLY",
	[URXE_OP_WRITE_ONLY_IMM] = "RDMA_WRITE_ONLY_IMM",
	[URXE_OP_READ_REQ] = "RDMA_READ_REQ",
	[URXE_OP_READ_RESP_FIRST] = "READ_RESP_FIRST",
	[URXE_OP_READ_RESP_MIDDLE] = "READ_RESP_MIDDLE",
	[URXE_OP_READ_RESP_LAST] = "READ_RESP_LAST",
	[URXE_OP_READ_RESP_ONLY] = "READ_RESP_ONLY",
	[URXE_OP_ACK] = "ACK",
	[URXE_OP_ATOMIC_ACK] = "ATOMIC_ACK",
	[URXE_OP_CMP_SWAP] = "CMP_SWAP",
	[URXE_OP_FETCH_ADD] = "FETCH_ADD",
	[URXE_OP_SEND_LAST_INV] = "SEND_LAST_INV",
	[URXE_OP_SEND_ONLY_INV] = "SEND_ONLY_INV",
};

/* IBA 9.7.5.2.4, table 44: NAK codes. */
static const char *const nak_names[] = {
	"NAK(seq)", "NAK(inv req)", "NAK(access)", "NAK(op)", "NAK(inv rd)",
};

static const char *const mark_names[TM__COUNT] = {
	"retx", "dup ack", "nak", "rnr", "drop", "dup", "reorder", "corrupt",
	"malformed",
};

struct sbuf {
	char *p;
	size_t len, n;
};

__attribute__((format(printf, 2, 3)))
static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->n >= b->len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(b->p + b->n, b->len - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n += (size_t)k < b->len - b->n ? (size_t)k : b->len - b->n - 1;
}

static void put_name(struct sbuf *b, const struct trace_pkt *p)
{
	static const char *const tr_names[8] = {
		[URXE_TR_UC >> 5] = "UC ", [URXE_TR_RD >> 5] = "RD ",
		[URXE_TR_UD >> 5] = "UD ", [URXE_TR_XRC >> 5] = "XRC ",
	};
	uint8_t op = urxe_opcode_op(p->bth.opcode), syn = p->h.syndrome;
	const char *tr = tr_names[p->bth.opcode >> 5];

	if (urxe_opcode_transport(p->bth.opcode) == URXE_TR_CNP) {
		put(b, "CNP");
		return;
	}
	if (op == URXE_OP_ACK && (syn & URXE_AETH_TYPE_MASK) == URXE_AETH_RNR_NAK)
		put(b, "%sRNR_NAK", tr ? tr : "");
	else if (op == URXE_OP_ACK && (syn & URXE_AETH_TYPE_MASK) == URXE_AETH_NAK)
		put(b, "%s%s", tr ? tr : "", (syn & 0x1f) < 5 ?
		    nak_names[syn & 0x1f] : "NAK(?)");
	else
		put(b, "%s%s", tr ? tr : "", op_names[op]);
}

/* A MAD to QP1: the CM message, or the MAD's class and attribute. */
static void put_mad(struct sbuf *b, const struct trace_pkt *p)
{
	const struct trace_hdrs *h = &p->h;

	if (!h->cm_attr) {
		put(b, "MAD class 0x%02x method 0x%02x attr 0x%04x", h->mad[1],
		    h->mad[3], h->mad_attr);
		return;
	}
	put(b, "CM %s", urxe_cm_attr_name(h->cm_attr));
	if (h->cm_attr == URXE_CM_REQ || h->cm_attr == URXE_CM_REP)
		put(b, " qpn 0x%06x psn %u", h->cm_qpn, h->cm_psn);
	else if (h->cm_attr == URXE_CM_REJ)
		put(b, " reason %u", h->cm_reason);
	else if (h->cm_attr == URXE_CM_SIDR_REP)
		put(b, " status %u qpn 0x%06x", h->cm_reason, h->cm_qpn);
}

static void put_reth(struct sbuf *b, const struct trace_pkt *p,
		     const struct urxe_opinfo *oi)
{
	const struct urxe_reth *r = &p->h.reth;

	if (oi->flags & URXE_F_READ)
		put(b, " len %u", r->len);
	else if (r->len != p->paylen)
		put(b, " len %u of %u", p->paylen, r->len);
	else
		put(b, " len %u", p->paylen);
	put(b, " rkey 0x%x va 0x%" PRIx64, r->rkey, r->va);
}

static void put_fields(struct sbuf *b, const struct trace_pkt *p,
		       const struct urxe_opinfo *oi)
{
	const struct trace_hdrs *h = &p->h;
	uint32_t hdrs = oi->hdrs;

	if (hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH))
		put(b, " srq 0x%x", h->srqn);
	if (hdrs & URXE_HDR_BIT(URXE_HDR_RETH))
		put_reth(b, p, oi);
	else if (oi->flags & URXE_F_PAYLOAD)
		put(b, " len %u", p->paylen);
	if (hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH)) {
		put(b, " rkey 0x%x va 0x%" PRIx64, h->atm.rkey, h->atm.va);
		if (urxe_opcode_op(p->bth.opcode) == URXE_OP_CMP_SWAP)
			put(b, " cmp 0x%" PRIx64 " swap 0x%" PRIx64, h->atm.cmp,
			    h->atm.swap_add);
		else
			put(b, " add 0x%" PRIx64, h->atm.swap_add);
	}
	if (hdrs & URXE_HDR_BIT(URXE_HDR_AETH)) {
		put(b, " msn %u", h->msn);
		if ((h->syndrome & URXE_AETH_TYPE_MASK) == URXE_AETH_RNR_NAK)
			put(b, " timer %u.%02ums", urxe_rnr_timer_us(h->syndrome) / 1000,
			    urxe_rnr_timer_us(h->syndrome) % 1000 / 10);
	}
	if (hdrs & URXE_HDR_BIT(URXE_HDR_ATMACK))
		put(b, " orig 0x%" PRIx64, h->orig);
	if (hdrs & URXE_HDR_BIT(URXE_HDR_IMMDT))
		put(b, " imm 0x%08x", h->imm);
	if (hdrs & URXE_HDR_BIT(URXE_HDR_IETH))
		put(b, " inv 0x%x", h->ieth);
	if (hdrs & URXE_HDR_BIT(URXE_HDR_DETH))
		put(b, " qkey 0x%x", h->qkey);
}

void trace_label(const struct trace_pkt *p, char *buf, size_t len)
{
	const struct urxe_opinfo *oi = urxe_opinfo(p->bth.opcode);
	struct sbuf b = { buf, len, 0 };

	buf[0] = '\0';
	if (p->roce_len < URXE_BTH_LEN) {
		put(&b, "(%u bytes: no BTH)", p->roce_len);
		return;
	}
	if (!(oi->flags & URXE_F_VALID)) {
		put(&b, "opcode 0x%02x psn %u", p->bth.opcode, p->bth.psn);
		return;
	}
	if (p->bth.dqpn == 1 && (p->h.mad[0] || p->h.cm_attr)) {
		put_mad(&b, p);
		return;
	}
	put_name(&b, p);
	put(&b, " psn %u", p->bth.psn);
	if (!(p->marks & TM_MALFORMED))
		put_fields(&b, p, oi);
}

void trace_marks(uint32_t marks, char *buf, size_t len)
{
	struct sbuf b = { buf, len, 0 };
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < TM__COUNT; i++)
		if (marks & (1u << i))
			put(&b, " [%s]", mark_names[i]);
}

void trace_col_name(unsigned int i, char *buf, size_t len)
{
	if (i < 26)
		snprintf(buf, len, "%c", 'A' + i);
	else
		snprintf(buf, len, "%c%u", 'A' + i % 26, i / 26);
}

void trace_ep_text(const struct trace_ep *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (urxe_gid_is_v4(e->gid))
		inet_ntop(AF_INET, e->gid + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, e->gid, a, sizeof(a));
	if (e->qpn == TRACE_QPN_UNKNOWN)
		snprintf(buf, len, "%s qp ?", a);
	else
		snprintf(buf, len, "%s qp 0x%06x%s", a, e->qpn,
			 e->qpn == 1 ? " (GSI)" :
			 e->qpn != URXE_MCAST_QPN ? "" :
			 urxe_gid_is_mcast(e->gid) ? " (multicast)" :
			 " (multicast, loopback copy)");
}

void trace_time(uint64_t ns, uint64_t span, char *buf, size_t len)
{
	if (span < 10000000u)
		snprintf(buf, len, "%" PRIu64 "us", ns / 1000);
	else if (span < 100000000000u)
		snprintf(buf, len, "%" PRIu64 ".%03" PRIu64 "ms", ns / 1000000,
			 ns / 1000 % 1000);
	else
		snprintf(buf, len, "%" PRIu64 ".%03" PRIu64 "s", ns / 1000000000u,
			 ns / 1000000 % 1000);
}
