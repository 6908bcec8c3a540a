// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading a capture for urxe trace: libpcap reads the frames (pcap or
 * pcapng, any byte order, nanosecond timestamps where the file has them),
 * frame.c finds the RoCEv2 packet in each, and the headers its opcode
 * has (the opcode table, wire/opcode.c) are decoded into the fields
 * a label shows; a MAD to QP1 is decoded as the CM message it carries
 * (rdmacm/mad.c).  trace_pcapng.c adds what libpcap leaves out: the
 * direction and the fault injector's comment of each packet.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/util.h>
#include <urxe/wire.h>

#include "../rdmacm/mad.h"
#include "frame.h"
#include "trace.h"

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static void decode_mad(struct trace_pkt *pk, const uint8_t *mad)
{
	struct urxe_cm_msg m;

	memcpy(pk->h.mad, mad, 4);
	pk->h.mad_attr = urxe_get16(mad + 16);
	if (mad[1] != URXE_CM_MGMT_CLASS || urxe_cm_decode(mad, URXE_MAD_LEN, &m))
		return;
	pk->h.cm_attr = m.attr;
	pk->h.cm_qpn = m.local_qpn;
	pk->h.cm_psn = m.start_psn;
	pk->h.cm_reason = m.attr == URXE_CM_SIDR_REP ? m.sidr_status : m.reason;
}

/* The extension headers of @oi at @roce into pk->h. */
static void decode_hdrs(struct trace_pkt *pk, const struct urxe_opinfo *oi,
			const uint8_t *roce)
{
	const uint8_t *o = roce;
	struct trace_hdrs *h = &pk->h;

	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH))
		h->srqn = urxe_xrceth_get(o + oi->off[URXE_HDR_XRCETH]);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_DETH)) {
		h->qkey = urxe_get32(o + oi->off[URXE_HDR_DETH]);
		h->sqpn = urxe_get24(o + oi->off[URXE_HDR_DETH] + 5);
	}
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_RETH))
		urxe_reth_get(o + oi->off[URXE_HDR_RETH], &h->reth);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH))
		urxe_atmeth_get(o + oi->off[URXE_HDR_ATMETH], &h->atm);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_AETH)) {
		h->syndrome = o[oi->off[URXE_HDR_AETH]];
		h->msn = urxe_get24(o + oi->off[URXE_HDR_AETH] + 1);
	}
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMACK))
		h->orig = urxe_get64(o + oi->off[URXE_HDR_ATMACK]);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_IMMDT))
		h->imm = urxe_get32(o + oi->off[URXE_HDR_IMMDT]);
	if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_IETH))
		h->ieth = urxe_get32(o + oi->off[URXE_HDR_IETH]);
	if (pk->bth.dqpn == 1 && (oi->hdrs & URXE_HDR_BIT(URXE_HDR_DETH)) &&
	    pk->paylen >= URXE_MAD_LEN)
		decode_mad(pk, roce + oi->hdr_len);
}

/* Decodes the RoCE packet of @f into @pk. */
static void decode(struct trace_pkt *pk, const struct urxe_frame *f)
{
	const struct urxe_opinfo *oi;
	uint32_t len = f->roce_len;

	memcpy(pk->src, f->src, 16);
	memcpy(pk->dst, f->dst, 16);
	pk->roce_len = len;
	pk->hash = fnv1a(f->roce, len);
	if (len < URXE_BTH_LEN + URXE_ICRC_LEN) {
		pk->marks |= TM_MALFORMED;
		if (len >= URXE_BTH_LEN)
			urxe_bth_get(f->roce, &pk->bth);
		return;
	}
	urxe_bth_get(f->roce, &pk->bth);
	oi = urxe_opinfo(pk->bth.opcode);
	if (!(oi->flags & URXE_F_VALID) ||
	    len < (uint32_t)oi->hdr_len + pk->bth.pad + URXE_ICRC_LEN) {
		pk->marks |= TM_MALFORMED;
		return;
	}
	pk->paylen = len - oi->hdr_len - URXE_ICRC_LEN - pk->bth.pad;
	decode_hdrs(pk, oi, f->roce);
	/*
	 * urxe on loopback sends multicast as a unicast copy to each member
	 * process, and records it as the datagram to the group; a copy
	 * recorded to a member's address (by urxe before it did, or one whose
	 * group the receiver no longer had) carries no group address, which
	 * its ICRC covers: it cannot be checked here.
	 */
	if (pk->bth.dqpn == URXE_MCAST_QPN && !urxe_gid_is_mcast(pk->dst))
		return;
	if (urxe_frame_whole(f) && !urxe_frame_icrc_ok(f))
		pk->marks |= TM_CORRUPT;
}

static struct trace_pkt *new_pkt(struct trace *tr)
{
	struct trace_pkt *p;

	if (tr->npkts == tr->cap) {
		unsigned int cap = tr->cap ? tr->cap * 2 : 1024;

		p = realloc(tr->pkts, cap * sizeof(*p));
		if (!p)
			return NULL;
		tr->pkts = p;
		tr->cap = cap;
	}
	p = &tr->pkts[tr->npkts];
	memset(p, 0, sizeof(*p));
	p->from = p->to = -1;
	return p;
}

/* One frame: a packet appended if it is RoCE; -ENOMEM. */
static int add_frame(struct trace *tr, int dlt, const struct pcap_pkthdr *h,
		     const u_char *data, const struct trace_note *nt,
		     unsigned int fileno, unsigned int frameno)
{
	struct urxe_frame f;
	struct trace_pkt *pk;

	tr->frames++;
	if (!urxe_frame_locate(dlt, data, h->caplen, &f))
		return 0;
	pk = new_pkt(tr);
	if (!pk)
		return -ENOMEM;
	/* opened with nanosecond precision: tv_usec holds nanoseconds */
	pk->t_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
	pk->file = fileno;
	pk->frame = frameno;
	decode(pk, &f);
	if (nt) {
		pk->dir = nt->dir;
		pk->marks |= nt->marks;
	}
	tr->npkts++;
	return 0;
}

int trace_read_file(struct trace *tr, const char *file, unsigned int fileno)
{
	char err[PCAP_ERRBUF_SIZE];
	struct trace_note *notes = NULL;
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned int nnotes = 0, i = 0;
	pcap_t *p;
	int dlt, rc;

	p = pcap_open_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO,
						    err);
	if (!p) {
		fprintf(stderr, "urxe trace: %s: %s\n", file, err);
		return -1;
	}
	if (trace_pcapng_notes(file, &notes, &nnotes) == -ENOMEM)
		nnotes = 0;
	dlt = pcap_datalink(p);
	while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
		if (add_frame(tr, dlt, h, data, i < nnotes ? &notes[i] : NULL,
			      fileno, i + 1)) {
			rc = -3;
			break;
		}
		i++;
	}
	if (rc != -2)
		fprintf(stderr, "urxe trace: %s: %s\n", file,
			rc == -1 ? pcap_geterr(p) : "out of memory");
	pcap_close(p);
	free(notes);
	return rc == -2 ? 0 : -1;
}

void trace_free(struct trace *tr)
{
	free(tr->pkts);
	free(tr->eps);
	memset(tr, 0, sizeof(*tr));
}
