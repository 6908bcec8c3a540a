/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The world fuzz_rx drives (fuzz_world.c, its XRC SRQs fuzz_xrc.c): one
 * engine, its QPs, MRs and work requests, the captured wire, and the
 * checks made after every frame and input.  Shared by the libFuzzer entry points (fuzz_rx.c) and the
 * plain replay driver (replay.c).
 */
#ifndef URXE_FUZZ_WORLD_H
#define URXE_FUZZ_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <urxe/engine.h>

#include "eqp.h"

#define SLOT 1
#define SPORT 0xc0de
#define WIRE_SLOTS 64			/* captured packets kept */
#define WIRE_BUF 8192
#define SQ_DEPTH 16
#define RQ_DEPTH 16
#define SQ_BUSY 4			/* sends kept outstanding per QP */
#define RQ_FILL 8			/* receives kept posted per QP */
#define PD 7

#define fatal(...) do { fprintf(stderr, "fuzz_rx: " __VA_ARGS__); \
	fputc('\n', stderr); abort(); } while (0)
#define check(cond) do { if (!(cond)) fatal("%s:%d: %s", __FILE__, \
	__LINE__, #cond); } while (0)

/*
 * The QPs: an RC pair, a UC pair, a UD QP, and the XRC pair: INI (XRC_SEND)
 * sends to TGT (XRC_RECV), whose requests name XRC SRQs (XSRQ_*).
 */
enum { RC0, RC1, UC0, UC1, UD, INI, TGT, NQP };
/* MR4 is of the PD of XRC SRQ XS1 (PD + 1), as large as MR0. */
enum { MR0, MR1, MR2, MR3, MR4, NMR };
/*
 * XRC SRQs: XS0 (one SGE a WQE: the smallest stride, PD) and XS1 (six
 * SGEs, PD + 1) of the TGT QP's domain, XSB of another domain (PD): the
 * TGT QP must never touch it.
 */
enum { XS0, XS1, XSB, NXSRQ };
#define XRCD_A 0xa0a0
#define XRCD_B 0xb0b0

/* RC1 and UC1 take their receives from one SRQ: its index in wr_ids. */
#define SRQ_Q NQP
#define XSRQ_Q(k) (NQP + 1 + (k))	/* the XRC SRQs' */
#define SRQ_MAX_OUT (RQ_DEPTH + NQP)	/* posted, plus one held per QP */

/* Each WR's wr_id: bit 63 for receives, queue index, sequence number. */
#define WR_RECV (1ull << 63)
#define WR_ID(recv, q, seq) ((recv) | (uint64_t)(q) << 32 | (seq))

struct fq {
	struct urxe_eqp qp;
	struct urxe_cq_ring cq;		/* not the TGT QP's: it has none */
	uint32_t sq_seq, sq_next_cqe;	/* posted, next expected completion */
	uint32_t rq_seq, rq_next_cqe;
	uint8_t sq_op[SQ_DEPTH * 4];	/* IBV_WC_* expected, by sequence */
	uint8_t sq_sig[SQ_DEPTH * 4];
	uint32_t rq_len[RQ_DEPTH * 4];	/* bytes the receive could take */
	unsigned int script;		/* next send to post */
	unsigned int peer;
	int events;
};

/*
 * A shared receive queue and its receives not yet completed (they
 * complete in any order).  The basic SRQ's complete on its QPs' CQs, an
 * XRC SRQ's on its own @cq.
 */
struct fsrq {
	struct urxe_esrq s;
	struct urxe_cq_ring cq;		/* XRC only */
	unsigned int qid;		/* in wr_ids: SRQ_Q or XSRQ_Q(k) */
	bool added;			/* XRC: in the engine's table */
	uint32_t frozen_cons;		/* XRC, removed: consumer index then */
	uint32_t seq;
	uint32_t out[SRQ_MAX_OUT], out_len[SRQ_MAX_OUT];
	unsigned int nout;
	unsigned int limits;		/* SRQ limit events */
};

struct wire_pkt {
	uint8_t data[WIRE_BUF];
	uint32_t len;
	union ibv_gid sgid, dgid;
	uint16_t sport;
};

struct fz_world {
	struct urxe_engine *eng;
	struct fq q[NQP];
	struct urxe_mem mr[NMR];
	uint64_t now;
	unsigned int reconnects;
	struct wire_pkt *wire;		/* WIRE_SLOTS */
	uint32_t wire_head, wire_tail;	/* free-running */
	uint64_t digest;		/* of every packet sent, every CQE */
	bool rq_starved;		/* receives not replenished */
	struct fsrq srq;		/* the basic SRQ of RC1 and UC1 */
	struct fsrq xs[NXSRQ];		/* the XRC SRQs */
	uint32_t wire_budget;		/* frames the wire may still feed back */
	/*
	 * XRC SRQ numbers of slot SLOT + 1 are another process's of the
	 * domain (ops->xrc_route): TGT relays requests naming them to
	 * fz_gid_v4_owner, untouched.  What is being delivered, to compare.
	 */
	const uint8_t *cur_frame;
	uint32_t cur_len;
	unsigned int relayed;
};

struct fz_stats {
	uint64_t inputs, frames, raw, fed_back, reconnects;
	/* XRC: completions on the INI QP's CQ and the XRC SRQs' (fine, in
	 * error), XRC SRQ XS1 removed or added back */
	uint64_t ini_ok, ini_err, xrecv_ok, xrecv_err, xsrq_toggles, relayed;
	uint64_t ini_cnt[URXE_CNT__COUNT], tgt_cnt[URXE_CNT__COUNT];
	uint64_t cnt[URXE_CNT__COUNT];
	bool print;
};

extern struct fz_world fz;
extern struct fz_stats fz_stats;
extern bool fz_trace;			/* URXE_FUZZ_TRACE=1: say what happens */
extern const union ibv_gid fz_gid_v4_local, fz_gid_v4_peer;
extern const union ibv_gid fz_gid_v6_local, fz_gid_v6_peer;
extern const union ibv_gid fz_gid_v4_owner;

/* A fresh world, on a new engine or on the old one rewound. */
void fz_world_init(bool new_engine);
void fz_world_fini(bool keep_engine);
/* After each record: progress, completions checked, QPs repaired, refills. */
void fz_housekeeping(void);
/* Send queue indices in order; MR references all accounted for. */
void fz_check_queues(void);
/* Folds @n bytes into fz.digest (the plain driver only). */
void fz_digest(const void *p, size_t n);
/* An SRQ receive completes once, within its size. */
void fz_check_srq_cqe(struct fsrq *x, const struct ibv_wc *wc, uint32_t seq);

static inline uint32_t fz_srq_queued(const struct fsrq *x)
{
	return atomic_load(&x->s.rq.prod) - atomic_load(&x->s.rq.cons);
}

/* fuzz_xrc.c: the XRC SRQs, the relays, the checks of the XRC pair. */
void fz_xrc_init(void);
void fz_xrc_fini(void);
/* XRC: XS1 leaves the engine's table, or comes back (a new number). */
void fz_xsrq_toggle(void);
void fz_xrc_fill_recv(const struct fsrq *x, unsigned int k,
		      struct urxe_recv_wqe *r);
void fz_xrc_poll(unsigned int k);
void fz_xrc_check(void);
void fz_xrc_trace(void);
bool fz_xrc_route(void *priv, const struct urxe_eqp *qp, uint32_t srqn,
		  union ibv_gid *gid);
void fz_xrc_relayed(const uint8_t *p, uint32_t len);
void fz_check_mem_refs(void);
void fz_trace_qps(void);
/* atexit: the world torn down; counts printed if fz_stats.print. */
void fz_print_stats(void);
void fz_print_frames(void);

/* fuzz_rx.c: one input's records, on the world as it is. */
void fz_run_input(const uint8_t *data, size_t size);

#endif
