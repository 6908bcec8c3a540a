/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For suites that drive transport engines deterministically in one
 * thread: a "wire" that is an array of packets, a fake clock, and the
 * pieces of a node (an engine, registered memory, a QP with its CQ).
 *
 * The wire: an engine's transmit copies each packet (gathered from its
 * pieces) onto @wire; an engine's receive poll takes, in order, every
 * packet whose destination GID is its own and leaves the others;
 * wire_pump() runs engines until nothing is in flight and none has work.
 * Knobs, reset by wire_setup():
 *   drop_at     lose the packet of this serial (wire_sent before it);
 *   drop_every  lose pseudo-randomly one packet in this many (the draw
 *               is made for every packet; the sequence is not reset);
 *   sent_log    wire_setup(true): every packet sent, lost ones too;
 *   mangle      rewrites each packet (lost ones too) before it travels;
 *   fake_now    the engines' clock, in ns.
 *
 * Header-only, as testutil.h: each suite is its own executable.
 */
#ifndef URXE_TEST_ENGINE_WIRE_H
#define URXE_TEST_ENGINE_WIRE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>

#include "eqp.h"

#include "pkt_gather.h"

#define WIRE_MAX 4096		/* packets in flight, and in the log */
#define WIRE_UDP_PORT 4791	/* RoCEv2 */
#define WIRE_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct wire_pkt {
	uint8_t data[4200];
	uint32_t len;
	union ibv_gid src, dst;
	uint16_t sport;
};

static struct wire_pkt *wire;		/* in flight, in the order sent */
static unsigned int wire_n;
static unsigned int wire_sent;		/* packets ever sent */
static int drop_at = -1;
static unsigned int drop_every;
static uint64_t wire_rng = 88172645463325252ull;
static uint64_t fake_now;
static struct wire_pkt *sent_log;
static unsigned int nlog;
static void (*mangle)(struct wire_pkt *w, unsigned int serial);

static inline bool wire_lost(unsigned int serial)
{
	bool lost = (int)serial == drop_at;

	if (drop_every) {
		wire_rng ^= wire_rng << 13;
		wire_rng ^= wire_rng >> 7;
		wire_rng ^= wire_rng << 17;
		lost |= wire_rng % drop_every == 0;
	}
	return lost;
}

/*
 * Each packet takes the next serial; with a log it is logged (and may be
 * rewritten) lost or not, without one a lost packet is not even copied.
 */
static inline int wire_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	unsigned int i;

	(void)priv;
	for (i = 0; i < n; i++) {
		unsigned int serial = wire_sent++;
		bool lost = wire_lost(serial);
		struct wire_pkt *w;

		if (sent_log) {
			ck_assert_uint_lt(nlog, WIRE_MAX);
			w = &sent_log[nlog++];
		} else if (lost) {
			continue;
		} else {
			ck_assert_uint_lt(wire_n, WIRE_MAX);
			w = &wire[wire_n];
		}
		/* Payload may be pieces of registered memory (zero copy). */
		ck_assert_uint_le(pkts[i].len, sizeof(w->data));
		ck_assert_uint_eq(urxe_test_gather(&pkts[i], w->data),
				  pkts[i].len);
		w->len = pkts[i].len;
		w->src = pkts[i].sgid;
		w->dst = pkts[i].dgid;
		w->sport = pkts[i].sport;
		if (mangle)
			mangle(w, serial);
		if (lost)
			continue;
		if (sent_log) {
			ck_assert_uint_lt(wire_n, WIRE_MAX);
			wire[wire_n] = *w;
		}
		wire_n++;
	}
	return (int)n;
}

static inline uint64_t wire_now(void *priv)
{
	(void)priv;
	return fake_now;
}

/* Delivers every queued packet addressed to @priv, the engine's GID. */
static inline int wire_rx(void *priv, struct urxe_engine *eng, int budget)
{
	const union ibv_gid *me = priv;
	unsigned int i, kept = 0;
	int n = 0;

	(void)budget;
	for (i = 0; i < wire_n; i++) {
		struct wire_pkt w = wire[i];
		struct urxe_rx_meta meta = {
			.sgid = w.src, .dgid = w.dst, .sport = w.sport,
			.dport = WIRE_UDP_PORT,
		};

		if (memcmp(&w.dst, me, sizeof(w.dst))) {
			wire[kept++] = w;
			continue;
		}
		urxe_engine_input(eng, w.data, w.len, &meta);
		n++;
	}
	wire_n = kept;
	return n;
}

/*
 * Room at the receivers for UC and UD packets (ops->tx_wait): how many
 * more may leave, -1 for no limit; when none, a sender is told to ask
 * again after WIRE_FLOW_RETRY_NS, and wire_waits counts it.
 */
#define WIRE_FLOW_RETRY_NS 20000
static long wire_room = -1;
static unsigned int wire_waits;

static inline uint64_t wire_tx_wait(void *priv, const union ibv_gid *dgid,
				    uint32_t len)
{
	(void)priv;
	(void)dgid;
	(void)len;
	if (wire_room < 0)
		return 0;
	if (!wire_room) {
		wire_waits++;
		return WIRE_FLOW_RETRY_NS;
	}
	wire_room--;
	return 0;
}

/* Whether every peer has unread datagrams (ops->peer_unread). */
static bool wire_unread;

static inline bool wire_peer_unread(void *priv, const union ibv_gid *dgid)
{
	(void)priv;
	(void)dgid;
	return wire_unread;
}

static const struct urxe_engine_ops wire_ops = {
	.xmit = wire_xmit,
	.now = wire_now,
	.rx_poll = wire_rx,
	.tx_wait = wire_tx_wait,
	.peer_unread = wire_peer_unread,
};

/* An empty wire, no loss, no rewriting, the clock at 1 s; @log: a sent_log. */
static inline void wire_setup(bool log)
{
	wire = calloc(WIRE_MAX, sizeof(*wire));
	ck_assert_ptr_nonnull(wire);
	sent_log = NULL;
	if (log) {
		sent_log = calloc(WIRE_MAX, sizeof(*sent_log));
		ck_assert_ptr_nonnull(sent_log);
	}
	wire_n = wire_sent = nlog = 0;
	drop_at = -1;
	drop_every = 0;
	wire_room = -1;
	wire_waits = 0;
	wire_unread = false;
	mangle = NULL;
	fake_now = 1000000000ull;
}

static inline void wire_teardown(void)
{
	free(wire);
	free(sent_log);
	wire = sent_log = NULL;
}

/*
 * Runs the @n engines until the wire is quiet and none has work left;
 * failing if that takes @max_rounds rounds.
 */
static inline void wire_pump(struct urxe_engine *const *eng, unsigned int n,
			     int max_rounds)
{
	int rounds = 0;
	bool busy;
	unsigned int i;

	do {
		for (i = 0; i < n; i++)
			urxe_engine_progress(eng[i]);
		ck_assert_int_lt(++rounds, max_rounds);
		busy = wire_n != 0;
		for (i = 0; i < n && !busy; i++)
			busy = urxe_engine_has_work(eng[i]);
	} while (busy);
}

/* The IPv4-mapped GID of a.b.c.d. */
static inline void wire_gid_v4(union ibv_gid *g, uint8_t a, uint8_t b,
			       uint8_t c, uint8_t d)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = a;
	g->raw[13] = b;
	g->raw[14] = c;
	g->raw[15] = d;
}

/*
 * An engine of @slot on the wire, taking the packets addressed to *@gid
 * (which must live as long as it); @stats: its record, or NULL.
 */
static inline struct urxe_engine *wire_engine(unsigned int slot,
					      union ibv_gid *gid,
					      struct urxe_stats_rec *stats)
{
	struct urxe_engine_conf conf = {
		.slot = slot, .gid0 = *gid, .ops = &wire_ops, .priv = gid,
		.stats = stats,
	};
	struct urxe_engine *eng;

	ck_assert_int_eq(urxe_engine_create(&conf, &eng), 0);
	return eng;
}

/* Registers @len bytes at @buf in PD @pd, with IBV_ACCESS_* @access. */
static inline void wire_mem_add(struct urxe_engine *eng, struct urxe_mem *m,
				uint8_t *buf, size_t len, uint32_t pd,
				unsigned int access)
{
	memset(m, 0, sizeof(*m));
	m->addr = buf;
	m->iova = (uint64_t)(uintptr_t)buf;
	m->length = len;
	m->access = access;
	m->pd = pd;
	ck_assert_int_gt(urxe_engine_mem_add(eng, m), 0);
}

/* The sizes of a QP wire_qp_add() makes, and of its CQ. */
struct wire_qp_shape {
	uint32_t cqe;
	uint32_t depth;		/* WQEs in each queue */
	uint32_t max_sge;	/* in each queue */
	uint32_t max_inline;	/* send queue */
};

/*
 * A QP of @type in PD @pd on @eng, with a send and a receive queue and
 * @cq (initialized here) for both; still in RESET.
 */
static inline void wire_qp_add(struct urxe_engine *eng, struct urxe_eqp *qp,
			       struct urxe_cq_ring *cq, enum ibv_qp_type type,
			       uint32_t pd, const struct wire_qp_shape *sh)
{
	ck_assert_int_eq(urxe_cq_ring_init(cq, sh->cqe), 0);
	memset(qp, 0, sizeof(*qp));
	qp->type = type;
	qp->pd = pd;
	qp->scq = qp->rcq = cq;
	ck_assert_int_eq(urxe_wq_init(&qp->sq, sh->depth, sh->max_sge,
				      sh->max_inline,
				      sizeof(struct urxe_send_wqe)), 0);
	ck_assert_int_eq(urxe_wq_init(&qp->rq, sh->depth, sh->max_sge, 0,
				      sizeof(struct urxe_recv_wqe)), 0);
	ck_assert_int_eq(urxe_engine_qp_add(eng, qp), 0);
}

/* Undoes wire_qp_add(). */
static inline void wire_qp_del(struct urxe_engine *eng, struct urxe_eqp *qp,
			       struct urxe_cq_ring *cq)
{
	urxe_engine_qp_remove(eng, qp);
	urxe_wq_fini(&qp->sq);
	urxe_wq_fini(&qp->rq);
	urxe_cq_ring_fini(cq);
}

/*
 * The next send WQE of @qp, in place and zeroed: @op on @len bytes at @off
 * of @m, signalled, wr_id 100 + its index.  Not posted: the caller moves
 * the producer index when it has filled in the rest.
 */
static inline struct urxe_send_wqe *wire_send_wqe(struct urxe_eqp *qp,
						  const struct urxe_mem *m,
						  enum ibv_wr_opcode op,
						  uint64_t off, uint32_t len)
{
	uint32_t p = atomic_load(&qp->sq.prod);
	struct urxe_send_wqe *w = urxe_wq_slot(&qp->sq, p);

	memset(w, 0, sizeof(*w));
	w->wr_id = p + 100;
	w->opcode = op;
	w->send_flags = IBV_SEND_SIGNALED;
	w->length = len;
	w->num_sge = 1;
	w->sge[0].addr = m->iova + off;
	w->sge[0].length = len;
	w->sge[0].lkey = m->lkey;
	w->state = URXE_WQE_POSTED;
	return w;
}

/* Bytes that tell one message (@seed) and one offset from another. */
static inline void wire_fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/*
 * RC attributes to RTS towards @dest_qpn at @dgid, from @sgid: PSNs 0,
 * path MTU 1024, timeout 14, 7 retries of each kind, one READ/atomic
 * each way; the caller changes what it needs and modifies with
 * WIRE_RC_MASK plus the bits of what it added.
 */
#define WIRE_RC_MASK (IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_SQ_PSN | \
		      IBV_QP_RQ_PSN | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | \
		      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | \
		      IBV_QP_AV)

static inline void wire_rc_attr(struct urxe_qp_attr *at, uint32_t dest_qpn,
				const union ibv_gid *sgid,
				const union ibv_gid *dgid)
{
	memset(at, 0, sizeof(*at));
	at->state = IBV_QPS_RTS;
	at->dest_qpn = dest_qpn;
	at->path_mtu = 1024;
	at->timeout = 14;
	at->retry_cnt = 7;
	at->rnr_retry = 7;
	at->max_rd_atomic = 1;
	at->max_dest_rd_atomic = 1;
	at->dgid = *dgid;
	at->sgid = *sgid;
}

#endif
