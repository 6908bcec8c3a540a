/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * urxe trace's internals: a capture read into an array of decoded
 * packets (trace_read.c, trace_pcapng.c), the conversation worked out
 * over it (trace_model.c: who sends to whom, which packets are
 * retransmissions, duplicates, NAKs, injected faults), one label per
 * packet (trace_label.c), and three drawings of the result: text
 * (trace_text.c), SVG and HTML (trace_svg.c).
 */
#ifndef URXE_TOOLS_TRACE_H
#define URXE_TOOLS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <urxe/wire.h>

#define TRACE_QPN_UNKNOWN 0xffffffffu

/* Marks, in the order they are printed. */
enum trace_mark {
	TM_RETX = 1u << 0,	/* this PSN was sent already on this stream */
	TM_DUPACK = 1u << 1,	/* an ACK of a PSN acknowledged already */
	TM_NAK = 1u << 2,	/* a NAK (sequence error, access, ...) */
	TM_RNR = 1u << 3,	/* an RNR NAK: the receiver had no receive */
	TM_DROP = 1u << 4,	/* URXE_FAULTS dropped it: never sent */
	TM_DUP = 1u << 5,	/* URXE_FAULTS sent it twice: the copy */
	TM_REORDER = 1u << 6,	/* URXE_FAULTS held it back */
	TM_CORRUPT = 1u << 7,	/* bad ICRC (URXE_FAULTS or the wire) */
	TM_MALFORMED = 1u << 8,	/* too short for its opcode's headers */
	TM__COUNT = 9,
};

/* One end of a conversation: a QP at an address. */
struct trace_ep {
	uint8_t gid[16];
	uint32_t qpn;		/* TRACE_QPN_UNKNOWN: not learned */
};

/* The fields a label needs, decoded from the packet's headers. */
struct trace_hdrs {
	struct urxe_reth reth;
	struct urxe_atmeth atm;
	uint64_t orig;		/* AtomicAckETH */
	uint32_t imm, ieth, srqn, qkey, sqpn, msn;
	uint8_t syndrome;
	uint16_t cm_attr;	/* a CM MAD's attribute; 0 if none */
	uint32_t cm_qpn, cm_psn, cm_reason;	/* REQ/REP QPN, PSN; REJ reason */
	uint8_t mad[4];		/* base version, class, class version, method */
	uint16_t mad_attr;
};

struct trace_pkt {
	uint64_t t_ns;		/* capture time, absolute */
	unsigned int file, frame;	/* 0-based file, 1-based frame in it */
	uint8_t dir;		/* pcapng epb_flags: 0 unknown, 1 in, 2 out */
	bool hidden;		/* the receiver's copy of a packet drawn */
	uint8_t src[16], dst[16];
	struct urxe_bth bth;
	uint32_t paylen;
	uint32_t roce_len;
	uint64_t hash;		/* of the RoCE bytes: finds the other copy */
	struct trace_hdrs h;
	uint32_t marks;		/* enum trace_mark */
	int from, to;		/* endpoints (trace.eps), -1 until known */
};

struct trace {
	struct trace_pkt *pkts;
	unsigned int npkts, cap;
	unsigned long frames;	/* every frame read, RoCE or not */
	unsigned int merged;	/* receive copies folded into their send */
	struct trace_ep *eps;
	unsigned int neps;
	const char *title;	/* the first file's name, or the program's */
	unsigned int nfiles;
};

/* What to draw and how. */
struct trace_opts {
	uint32_t qpn;		/* only packets to or from this QP */
	bool have_qpn;
	uint64_t from_ns, to_ns;	/* relative to the first packet */
	unsigned long count;	/* at most this many (0: all) */
	int color;		/* 0 never, 1 always */
	unsigned int width;	/* text: columns */
};

/* The packets drawn: indexes into trace.pkts, and their endpoints. */
struct trace_view {
	const struct trace *tr;
	unsigned int *idx;
	unsigned int n;
	int *col;		/* endpoint -> column, -1 if not shown */
	int *ep_of_col;		/* column -> endpoint */
	unsigned int ncols;
	uint64_t t0;		/* the first packet's time: time 0 */
	uint64_t span;		/* to the capture's last: picks the unit */
};

/* trace_read.c: appends the RoCE packets of @file; 0 or -1 (said). */
int trace_read_file(struct trace *tr, const char *file, unsigned int fileno);
void trace_free(struct trace *tr);

/* trace_pcapng.c: the direction and comment of each packet block. */
struct trace_note {
	uint8_t dir;		/* 0 unknown, 1 inbound, 2 outbound */
	uint32_t marks;		/* TM_DROP ... from a "urxe fault:" comment */
};
/* The notes of @file's packets in order (none for classic pcap). */
int trace_pcapng_notes(const char *file, struct trace_note **out,
		       unsigned int *n);

/* trace_model.c: order, merge copies, endpoints, marks. */
int trace_model(struct trace *tr);
/*
 * trace_model.c: the packets @o keeps of a modelled @tr, and their
 * columns, into @v (to free with trace_view_free()); -ENOMEM, nothing
 * kept.
 */
int trace_view_make(const struct trace *tr, const struct trace_opts *o,
		    struct trace_view *v);
void trace_view_free(struct trace_view *v);
/* trace_endpoints.c: pkts[].from/to and eps[] of the packets not hidden. */
int trace_endpoints(struct trace *tr);

/* trace_label.c */
void trace_label(const struct trace_pkt *p, char *buf, size_t len);
/* " [retx] [nak]"; "" without marks. */
void trace_marks(uint32_t marks, char *buf, size_t len);
/* "A", "B", ... for column @i. */
void trace_col_name(unsigned int i, char *buf, size_t len);
/* The endpoint's address (dotted for IPv4) and QP: "198.18.0.1 qp 0x11". */
void trace_ep_text(const struct trace_ep *e, char *buf, size_t len);
/* The time @ns after the first packet, in the unit the span calls for. */
void trace_time(uint64_t ns, uint64_t span, char *buf, size_t len);

/* trace_text.c, trace_svg.c */
void trace_draw_text(const struct trace_view *v, const struct trace_opts *o,
		     FILE *out);
void trace_draw_svg(const struct trace_view *v, FILE *out, bool standalone);
void trace_draw_html(const struct trace_view *v, FILE *out);

#endif
