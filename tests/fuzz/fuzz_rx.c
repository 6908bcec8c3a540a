// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzzer for the engine's receive path with live QPs behind it.
 *
 * One engine, driven in this thread with a fake clock, holds an RC pair
 * (rc0 <-> rc1), a UC pair (uc0 <-> uc1), a UD QP that sends to itself and
 * an XRC pair (ini -> tgt, whose requests name XRC SRQs xs0 and xs1 of
 * its domain, or xsb of another), all in RTS (tgt: RTR or RTS), with
 * registered memory open to remote access, receives
 * posted and sends in flight: SEND, WRITE, READ, atomics.  What the
 * engine transmits is captured in a ring (the "wire"); it reaches the
 * engine again only when the input says so.  An input is a list of
 * records, each a 4-byte header and (for frames) the frame's bytes:
 *
 *   flag  bits 0-2: 0-4 a frame for rc0 rc1 uc0 uc1 ud (its BTH DestQP is
 *                   patched to that QP), 5 a frame with DestQP as it is
 *                   (with bit 4: for the XRC pair, see there),
 *                   6 a wire operation, 7 a clock jump (no bytes follow);
 *         bit 3: raw: no fix-up at all, the last 4 bytes are the ICRC;
 *                with a clock jump: receives stop (or resume) being
 *                replenished, so senders meet RNR;
 *         bit 4: the opcode's transport is made the target QP's; with
 *                target 5: made XRC, and the frame goes to tgt if the
 *                opcode is a request, to ini if it is an answer;
 *                with a clock jump and bits 5-7 clear: XRC SRQ xs1 is
 *                removed from the engine (or added back, under a new
 *                number);
 *         bits 5-7: the frame is delivered 1 + this many times.
 *   mode  bits 0-1: PSN: 0 as is, 1 the one the QP expects next
 *                   (responder: ePSN; completer: the oldest unacked),
 *                   2 that + (int8_t) the PSN's low byte, 3 that - 1;
 *         bit 2: RETH/AtomicETH R_Key and VA made to name one of the
 *                MRs (which one, and the offset, from the fuzzed values;
 *                MR4 is of xs1's PD, the others but MR2 of xs0's);
 *         bit 3: IPv6 GIDs in the receive metadata (else IPv4-mapped);
 *         bit 4: the metadata carries the IP header (packet backend);
 *         bits 5-7: clock advance before the frame, 1 us .. 1 s.
 *   len   16-bit little-endian: frame length (BTH .. ICRC); for a wire
 *         operation: low byte a count (0: all), high byte & 3 the action
 *         (0 deliver in order, 1 drop, 2 deliver copies and keep them,
 *         3 deliver the count-th alone: reordering; at most WIRE_BUDGET
 *         frames per input come back from the wire); for a clock jump:
 *         len x 50 us.
 *
 * Unless raw, a frame with an XRCETH has it name an XRC SRQ by the low 2
 * bits of its reserved byte (which are then cleared): 0 the number as it
 * is, 1 xs0, 2 xs1, 3 xsb (another domain).  XRC SRQ numbers of slot 2
 * are another process's of the domain: tgt relays requests naming them,
 * which must leave as they came and change nothing of tgt.  Unless raw,
 * the harness
 * writes the ICRC the engine's own icrc functions
 * compute, so frames get past the ICRC check to header parsing, the PSN
 * checks and the responder / completer.  After every frame the send
 * queues' indices must be in order (retired <= next <= posted).  After
 * each record the engine runs, completions are taken and checked (each
 * work request completes once, in order, on its own QP's CQ, which never
 * overflows; a receive never reports more bytes than it had room for; an
 * SRQ's receives complete once each, in any order, an XRC SRQ's on its own
 * CQ with tgt's QP number; every SRQ WQE posted and not completed is in
 * the ring or held by one QP; tgt points at an XRC SRQ of its domain, with
 * its PD and CQ, exactly while a message is under way; xsb is never
 * consumed from),
 * QPs that ended in ERR are reset and connected again (the pair
 * together), receives are replenished and sends topped up.  At the end of
 * the input the wire is drained once so the real traffic plays the
 * perturbation out, and every MR must hold no reference but those QPs
 * keep for a WRITE in progress.
 *
 * Every input starts from a fresh world (the engine rewound: see
 * engine_rewind()), so a crash reproduces from its input alone;
 * URXE_FUZZ_PERSIST=N keeps the world for N inputs instead (state
 * accumulates; crashes may then need the inputs before them).
 *
 * The world (engine, QPs, work requests, checks) is fuzz_world.c; this
 * file reads the records.  Linked with libFuzzer (fuzz_rx, built with
 * -DURXE_FUZZ_LIBFUZZER) or with replay.c, a main() that runs files.
 */
#include <string.h>

#include <urxe/icrc.h>
#include <urxe/wire.h>

#include "fuzz_world.h"

#define MAX_FRAME 8192
#define MAX_RECORDS 1024
#define DRAIN_ROUNDS 1
/*
 * Frames the wire feeds back per input, and then for the drain: real
 * traffic builds the state, but unbounded (copies delivered over and over)
 * it would take the time the fuzzer's own frames should have.
 */
#define WIRE_BUDGET 256
#define DRAIN_BUDGET 64

static unsigned int persist = 1;

/* ---- delivering frames ---- */

/* The engine sees exactly @len bytes: ASan catches any read beyond. */
static void deliver(const uint8_t *bytes, uint32_t len,
		    const struct urxe_rx_meta *meta)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (fz_trace && len >= URXE_BTH_LEN)
		fprintf(stderr, "fuzz_rx:   frame %s QPN 0x%06x PSN 0x%06x, %u bytes\n",
			urxe_opinfo(bytes[0])->name ? urxe_opinfo(bytes[0])->name : "?",
			urxe_get24(bytes + 5), urxe_get24(bytes + 9), len);
	check(copy);
	memcpy(copy, bytes, len);
	urxe_engine_input(fz.eng, copy, len, meta);
	free(copy);
	fz_stats.frames++;
	fz_check_queues();
	if (fz_trace)
		fz_trace_qps();
}

static void deliver_wire(uint32_t idx)
{
	const struct wire_pkt *p = &fz.wire[idx % WIRE_SLOTS];
	struct urxe_rx_meta meta = {
		.sgid = p->sgid, .dgid = p->dgid, .sport = p->sport,
		.dport = URXE_ROCE_UDP_PORT, .ttl = 64, .now_ns = fz.now,
	};

	/* deliver() copies first: what the engine sends may reuse the slot. */
	deliver(p->data, p->len, &meta);
	fz_stats.fed_back++;
}

static void wire_op(uint16_t arg)
{
	uint32_t have = fz.wire_tail - fz.wire_head, n = arg & 0xff, i;
	unsigned int action = arg >> 8 & 3;

	if (!n || n > have)
		n = have;
	if (action == 1) {			/* lost */
		fz.wire_head += n;
		return;
	}
	if (action == 3)
		n = have ? 1 : 0;
	if (n > fz.wire_budget)
		n = fz.wire_budget;
	fz.wire_budget -= n;
	switch (action) {
	case 0:					/* in order */
		for (i = 0; i < n; i++)
			deliver_wire(fz.wire_head++);
		break;
	case 2:					/* duplicated */
		for (i = 0; i < n; i++)
			deliver_wire(fz.wire_head + i);
		break;
	default:				/* one overtakes the others */
		if (!n)
			break;
		i = (arg & 0xff) % have;
		deliver_wire(fz.wire_head + i);
		for (; i > 0; i--)
			fz.wire[(fz.wire_head + i) % WIRE_SLOTS] =
				fz.wire[(fz.wire_head + i - 1) % WIRE_SLOTS];
		fz.wire_head++;
		break;
	}
}

/* ---- fix-ups ---- */

static uint8_t transport_of(unsigned int target)
{
	return target == INI || target == TGT ? URXE_TR_XRC :
	       target == UD ? URXE_TR_UD :
	       target >= UC0 ? URXE_TR_UC : URXE_TR_RC;
}

/* The PSN the target would accept next, for this direction. */
static uint32_t expected_psn(const struct urxe_eqp *qp, uint8_t opcode)
{
	return urxe_opinfo(opcode)->flags & URXE_F_REQ ? qp->resp.epsn : qp->comp.acked_psn;
}

static void fix_psn(uint8_t *f, const struct urxe_eqp *qp, unsigned int mode)
{
	uint32_t psn = expected_psn(qp, f[0]);

	if (mode == 2)
		psn = urxe_psn_add(psn, (uint32_t)(int32_t)(int8_t)f[11]);
	else if (mode == 3)
		psn = urxe_psn_add(psn, URXE_PSN_MASK);
	urxe_put24(f + 9, psn);
}

/* R_Key and VA of a RETH or AtomicETH at @p made to fall in an MR. */
static void fix_key(uint8_t *p, bool atomic)
{
	uint64_t va = urxe_get64(p);
	const struct urxe_mem *m = &fz.mr[urxe_get32(p + 8) % NMR];
	uint64_t nva = m->iova + va % m->length;

	if (atomic && !(va >> 63))
		nva &= ~7ull;		/* usually aligned, sometimes not */
	urxe_put64(p, nva);
	urxe_put32(p + 8, m->rkey);
}

static void fix_keys(uint8_t *f, uint32_t len)
{
	const struct urxe_opinfo *oi = urxe_opinfo(f[0]);

	if ((oi->hdrs & URXE_HDR_BIT(URXE_HDR_RETH)) &&
	    (uint32_t)oi->off[URXE_HDR_RETH] + URXE_RETH_LEN <= len) {
		uint8_t *r = f + oi->off[URXE_HDR_RETH];
		uint32_t dma = urxe_get32(r + 12);

		fix_key(r, false);
		/* A DMA length with the top bit set: the payload's length. */
		if ((dma >> 31) && len >= (uint32_t)oi->hdr_len + URXE_ICRC_LEN)
			urxe_put32(r + 12, len - oi->hdr_len - URXE_ICRC_LEN);
	}
	if ((oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH)) &&
	    (uint32_t)oi->off[URXE_HDR_ATMETH] + URXE_ATMETH_LEN <= len)
		fix_key(f + oi->off[URXE_HDR_ATMETH], true);
}

/* XRCETH's SRQ number chosen by the low bits of its reserved byte. */
static void fix_xrceth(uint8_t *f, uint32_t len)
{
	const struct urxe_opinfo *oi = urxe_opinfo(f[0]);
	unsigned int sel;
	uint8_t *x;

	if (!(oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH)) ||
	    (uint32_t)oi->off[URXE_HDR_XRCETH] + URXE_XRCETH_LEN > len)
		return;
	x = f + oi->off[URXE_HDR_XRCETH];
	sel = x[0] & 3;
	x[0] &= (uint8_t)~3;
	if (sel)
		urxe_put24(x + 1, fz.xs[sel - 1].s.srqn);
}

static void fix_up(uint8_t *f, uint32_t len, uint8_t flag, uint8_t mode,
		   const struct urxe_rx_meta *meta)
{
	unsigned int target = flag & 7;

	if (len < URXE_BTH_LEN + URXE_ICRC_LEN)
		return;
	if (target == 5 && (flag & 0x10)) {
		/* The XRC pair: requests to tgt, answers to ini. */
		f[0] = (uint8_t)((f[0] & 0x1f) | URXE_TR_XRC);
		target = urxe_opinfo(f[0])->flags & URXE_F_RESP ? INI : TGT;
	}
	if (target < NQP) {
		const struct urxe_eqp *qp = &fz.q[target].qp;

		if (flag & 0x10)
			f[0] = (uint8_t)((f[0] & 0x1f) | transport_of(target));
		urxe_put24(f + 5, qp->qpn);
		if (mode & 3)
			fix_psn(f, qp, mode & 3);
	}
	fix_xrceth(f, len);
	if (mode & 4)
		fix_keys(f, len);
	urxe_icrc_store(f + len - URXE_ICRC_LEN,
			urxe_icrc_tx(NULL, meta->sgid.raw, meta->dgid.raw, meta->sport,
				     f, len - URXE_ICRC_LEN));
}

static const uint64_t clock_steps[8] = {
	1000, 10000, 100000, 1000000, 4000000, 16000000, 70000000, 1000000000,
};

static void frame_record(uint8_t flag, uint8_t mode, const uint8_t *data,
			 uint32_t len)
{
	uint8_t f[MAX_FRAME], hdr[40 + 8], *ip = NULL;
	struct urxe_rx_meta meta = {
		.sport = SPORT, .dport = URXE_ROCE_UDP_PORT, .ttl = 64,
	};
	unsigned int i;

	if (len > sizeof(f))
		len = sizeof(f);
	memcpy(f, data, len);
	fz.now += clock_steps[mode >> 5];
	meta.now_ns = fz.now;
	meta.sgid = mode & 8 ? fz_gid_v6_peer : fz_gid_v4_peer;
	meta.dgid = mode & 8 ? fz_gid_v6_local : fz_gid_v4_local;
	if (mode & 0x10) {
		/* The IP and UDP headers, in a buffer of their exact size. */
		meta.ip_len = (uint32_t)urxe_icrc_pseudo_hdr(hdr, meta.sgid.raw,
				meta.dgid.raw, meta.sport, meta.dport, len, 0, true);
		ip = malloc(meta.ip_len + 8);
		check(ip);
		memcpy(ip, hdr, meta.ip_len + 8);
		meta.ip = ip;
		meta.ip_hdr_known = true;
	}
	if (flag & 8)
		fz_stats.raw++;
	else
		fix_up(f, len, flag, mode, &meta);
	fz.cur_frame = f;
	fz.cur_len = len;
	for (i = 0; i <= (unsigned int)(flag >> 5); i++) {
		const struct urxe_eqp *t = &fz.q[TGT].qp;
		uint32_t epsn = t->resp.epsn, msn = t->resp.msn, relayed = fz.relayed;
		enum ibv_qp_state st = t->attr.state;

		deliver(f, len, &meta);
		urxe_engine_progress(fz.eng);
		/* A relayed request is none of this TGT QP's business. */
		if (fz.relayed != relayed &&
		    (fz.relayed != relayed + 1 || t->resp.epsn != epsn ||
		     t->resp.msn != msn || t->attr.state != st))
			fatal("TGT QP 0x%x: %u relayed; ePSN 0x%06x -> 0x%06x, "
			      "MSN %u -> %u, state %d -> %d", t->qpn,
			      fz.relayed - relayed, epsn, t->resp.epsn, msn, t->resp.msn,
			      st, t->attr.state);
	}
	fz.cur_frame = NULL;
	free(ip);
}

/* ---- the entry points ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *p = getenv("URXE_FUZZ_PERSIST");
	int i;

	fz_trace = getenv("URXE_FUZZ_TRACE") && atoi(getenv("URXE_FUZZ_TRACE"));
	for (i = 1; i < *argc; i++)
		if (!strcmp((*argv)[i], "-print_final_stats=1"))
			fz_stats.print = true;
	if (p && atoi(p) > 0)
		persist = (unsigned int)atoi(p);
	fz_world_init(true);
	atexit(fz_print_stats);
	return 0;
}

void fz_run_input(const uint8_t *data, size_t size)
{
	unsigned int nrec = 0, i;

	fz.wire_budget = WIRE_BUDGET;
	fz.rq_starved = false;
	while (size >= 4 && nrec++ < MAX_RECORDS) {
		uint8_t flag = data[0], mode = data[1];
		uint16_t len = (uint16_t)(data[2] | data[3] << 8);

		data += 4;
		size -= 4;
		if (fz_trace)
			fprintf(stderr, "fuzz_rx: record %u: flag 0x%02x mode 0x%02x "
				"len %u\n", nrec, flag, mode, len);
		if ((flag & 7) == 6) {
			wire_op(len);
		} else if ((flag & 7) == 7) {
			fz.now += (uint64_t)len * 50000;
			if (flag & 8)
				fz.rq_starved = !fz.rq_starved;
			if ((flag & 0xf0) == 0x10)
				fz_xsrq_toggle();
		} else {
			if (len > size)
				len = (uint16_t)size;
			frame_record(flag, mode, data, len);
			data += len;
			size -= len;
		}
		fz_housekeeping();
	}
	/* Let the real traffic play out what the frames started. */
	fz.wire_budget = DRAIN_BUDGET;
	fz.rq_starved = false;
	for (i = 0; i < DRAIN_ROUNDS; i++) {
		wire_op(0);
		fz.now += 1000000;
		fz_housekeeping();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fz_stats.inputs++ && fz_stats.inputs % persist == 0) {
		fz_world_fini(true);
		fz_world_init(false);
	}
	fz_run_input(data, size);
	fz_check_mem_refs();
	if (fz_stats.print && fz_stats.inputs % 100000 == 0)
		fz_print_frames();
	return 0;
}
