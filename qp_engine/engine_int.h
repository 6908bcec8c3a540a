/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the engine shared by its files: the engine object, the
 * roles' entry points, packet building helpers.  Everything here runs
 * with the progress lock held unless said otherwise.
 */
#ifndef URXE_ENGINE_INT_H
#define URXE_ENGINE_INT_H

#include <ev.h>
#include <pthread.h>

#include <urxe/engine.h>
#include <urxe/icrc.h>
#include <urxe/log.h>
#include <urxe/wire.h>

#include "eqp.h"
#include "verdict.h"

#define URXE_QP_SLOTS (1u << URXE_QPN_INDEX_BITS)
#define URXE_KEY_SLOTS (1u << 18)	/* 18 bits of a key's 24 */
#define URXE_KEY_ROUNDS 6		/* of the keys' permutation */
#define URXE_ACK_EVERY 8		/* AckReq at least every N packets */
#define URXE_TX_BATCH 32
#define URXE_TX_BUF (4096 + 128)	/* MTU payload + headers + pad + ICRC */
#define URXE_TX_PIECES 2		/* payload pieces a packet may point to */
/*
 * Payloads up to this size are copied into the packet: one iovec for the
 * kernel to walk and one ICRC pass cost less than pointing at them.
 */
#define URXE_TX_COPY_MAX 128

struct urxe_engine {
	pthread_mutex_t lock;		/* the progress lock */
	atomic_bool work;		/* someone flagged work for the holder */
	/*
	 * The engine thread found input waiting and the progress lock held:
	 * the holder reads it before it lets go (whatever its mode).
	 */
	atomic_bool input_wanted;
	const struct urxe_engine_ops *ops;
	void *priv;
	void *io_priv;			/* xmit, rx_poll, sport: conf's */
	unsigned int slot;
	char name[32];			/* the device's, for messages */
	union ibv_gid gid0;
	struct urxe_icrc_ids icrc_ids;	/* IDs solved, header CRCs; under lock */

	/* QP table (qp_table.c): index -> QP; under qp_lock for add/remove */
	struct {
		uint32_t live_cap;
		pthread_mutex_t qp_lock;
		struct urxe_eqp **qps;
		uint32_t qp_next;
		/*
		 * XRC SRQ table (srq.c): index -> SRQ, the same index space
		 * as the QPs' (an index is one QP's or one XRC SRQ's);
		 * allocated with the first.  Changed under the progress lock
		 * and qp_lock.  xsrq_stride: the largest WQE slot of any XRC
		 * SRQ added so far; every TGT QP's srq_wqe is NULL or at
		 * least that big.
		 */
		struct urxe_esrq **xsrqs;
		uint32_t xsrq_stride;
		/* QPs that exist, compactly (timer scans); qp_lock + lock */
		struct urxe_eqp **live;
		uint32_t nlive;
	} qpt;

	/* key table (keys.c) */
	struct {
		/* a few instructions held */
		pthread_spinlock_t key_lock;
		struct urxe_mem **keys;
		uint32_t key_next;	/* the next index tried */
		uint32_t key_count;	/* keys handed out: the reuse bits */
		uint64_t key_rng;	/* the regions' low bytes */
		/* the permutation's round keys */
		uint32_t key_secret[URXE_KEY_ROUNDS];
	} keyt;

	/* time and timers (timer.c) */
	struct {
		/*
		 * No timer expires before this; written under the progress
		 * lock, read without it by waiters choosing how long to
		 * sleep.
		 */
		_Atomic uint64_t deadline_hint;
		/*
		 * The time a progress round began, for the lock holder's
		 * timers and stamps (urxe_clock): one clock read per round,
		 * not one per use.
		 */
		uint64_t clock_ns;
		bool clock_valid;	/* inside progress_locked() */
		atomic_bool timer_moved; /* the engine thread must re-arm */
		/* ops->xrc_watch due then (0: off); under the progress lock */
		uint64_t xrc_watch_due;
	} clk;

	/* QPs with send work or ACKs to send (progress.c) */
	struct {
		/* a few instructions held */
		pthread_spinlock_t list_lock;
		struct urxe_eqp *pending;
	} sched;

	/* outgoing packet batch (tx.c): packets are assembled in tx_buf */
	struct {
		struct urxe_pkt tx[URXE_TX_BATCH];
		uint8_t (*tx_buf)[URXE_TX_BUF];
		unsigned int ntx;
		/* registered memory the batch's packets point into, held
		 * till sent */
		struct urxe_mem *tx_mem[URXE_TX_BATCH][URXE_TX_PIECES];
	} txb;

	/* counters and statistics (stats.c), under the progress lock */
	struct {
		/* the slot's shared record (conf->stats), else cnt_own */
		_Atomic uint64_t *cnt;
		_Atomic uint64_t cnt_own[URXE_CNT__COUNT];
		struct urxe_stats_rec *stats;
		/* whose work runs: its counts are its own too */
		struct urxe_eqp *acct;
		/* publish then (0: nothing new to publish) */
		uint64_t stats_due;
		/* packets counted at the last publish */
		uint64_t stats_mark;
		/* receive completions made by this engine so far */
		uint64_t cqes;
	} ctr;

	/* multicast attachments (mcast.c), under the progress lock */
	struct {
		struct urxe_mcast_att *mc;
		uint32_t nmc, mc_cap;
	} mcast;

	/* QP1's MADs (gsi.c): the pointer under the progress lock */
	struct {
		struct urxe_gsi *gsi;
		uint32_t gsi_psn;
	} qp1;

	/* engine thread (loop.c) */
	struct {
		pthread_t thread;
		atomic_bool thread_running;
		atomic_bool thread_stopping;	/* it must not linger */
		struct ev_loop *loop;
		ev_async wake;
		ev_async stop;
		ev_timer timer;
		ev_timer backoff;	/* application threads are polling */
		double backoff_s;	/* its period: grows while they do */
		/* what woke it, and what it did (URXE_LOG=debug) */
		/* io, timer, doorbell, backoff */
		unsigned long wakes[4];
		unsigned long runs, parks, busy, taken;
		ev_io io[10];
		unsigned int nio;
		bool io_parked;
	} th;

	/* what application threads do, as the engine thread sees it */
	struct {
		unsigned int app_takes;	/* in a row: input an app read */
		/* last time an application thread ran progress (ns) */
		_Atomic uint64_t app_progress_ns;
		/* ... whether one is running it now (a hint: not counted) */
		atomic_bool app_in_progress;
		/* ... and posted (ns) */
		_Atomic uint64_t app_post_ns;
		/* when a poller left ACKs owed (0: none); cleared by the
		 * next pass */
		_Atomic uint64_t acks_deferred_ns;
	} app;

	/*
	 * The budget (budget.c): packets in flight, all QPs' together (0: no
	 * budget), and one QP's at most; @inflight is the budget in use,
	 * @budget_wait the QPs waiting for room in it (FIFO).  Under the
	 * progress lock.
	 */
	struct {
		uint32_t budget_pkts;
		uint32_t window;
		uint32_t inflight;
		struct urxe_eqp *budget_wait, *budget_wait_tail;
		/* READ answers awaited at most (0: the window) */
		uint32_t read_window;
	} budget;
};

/* Period of ops->xrc_watch. */
#define URXE_XRC_WATCH_NS 200000000ull

/*
 * Unacknowledged packets per RC QP: the engine's budget (what the
 * receive socket holds, urxe_engine_set_budget) shared by its QPs, within
 * these bounds; URXE_WINDOW_PKTS without a budget.
 */
#define URXE_WINDOW_PKTS 32
#define URXE_WINDOW_MIN 1
#define URXE_WINDOW_MAX 128
/*
 * The engine thread leaves the sockets to applications that polled this
 * recently...
 */
#define URXE_APP_ACTIVE_NS 100000
/*
 * ...unless input woke it and the application has not called for this
 * long (it is not polling: ib_write_lat's spins on memory)...
 */
#define URXE_APP_SILENT_NS 3000
/* ...and after this many inputs in a row they took, it stops watching... */
#define URXE_APP_TAKES 8
/*
 * ...and looks again this often, then less and less often, down to this
 * (libev's epoll waits whole milliseconds), taking input that waits
 * while no application called for URXE_LOOK_SILENT_NS.
 */
#define URXE_BACKOFF_S 0.001
#define URXE_BACKOFF_MAX_S 0.0016
#define URXE_LOOK_SILENT_NS 15000
/* Serving alone, it goes on polling this long after its last input. */
#define URXE_LINGER_NS 20000
/* A post to a streaming QP waits for the poller that called this recently. */
#define URXE_POST_DEFER_NS 10000
/* ACKs a poller deferred this long ago: the engine thread sends them. */
#define URXE_ACK_OVERDUE_NS 50000

/*
 * Counters of the engine as a whole, never a QP's: a transmit batch
 * carries many QPs' packets, and drops happen before a QP is known.  A
 * QP's sent and received packets are counted where the QP is known
 * (urxe_tx_commit, urxe_engine_input).
 */
#define URXE_CNT_ENGINE_ONLY						\
	(1u << URXE_CNT_SENT_PKTS | 1u << URXE_CNT_RCVD_PKTS |		\
	 1u << URXE_CNT_SEND_ERR | 1u << URXE_CNT_DROPPED |		\
	 1u << URXE_CNT_DROPPED_ICRC | 1u << URXE_CNT_DROPPED_NO_QP)

/* Counts an event; one caused by eng->ctr.acct's work counts for it too. */
static inline void urxe_count(struct urxe_engine *eng, enum urxe_counter c,
			      uint64_t n)
{
	/* The progress lock's holder is the only writer: no atomic add. */
	atomic_store_explicit(&eng->ctr.cnt[c],
			      atomic_load_explicit(&eng->ctr.cnt[c],
						   memory_order_relaxed) + n,
			      memory_order_relaxed);
	if (eng->ctr.acct && !(URXE_CNT_ENGINE_ONLY & 1u << c))
		eng->ctr.acct->cnt[c] += n;
}

/* Is the calling thread @eng's engine thread? */
bool urxe_in_engine_thread(const struct urxe_engine *eng);
/*
 * The engine thread's progress: as urxe_engine_progress(), or -EBUSY when
 * another thread holds the progress lock (it was asked to read the input).
 */
int urxe_engine_progress_thread(struct urxe_engine *eng);

/*
 * stats.c: the QP table of the slot's statistics record.  Publishes now
 * (a QP came, went or changed state); after a progress pass, publishes if
 * packets moved and the period is over, else makes sure a deadline
 * brings progress back then.
 */
#define URXE_STATS_PUBLISH_NS 100000000ull
void urxe_qpstats_publish(struct urxe_engine *eng);
void urxe_qpstats_tick(struct urxe_engine *eng);
void urxe_qpstats_retire(struct urxe_engine *eng, const struct urxe_eqp *qp);

/*
 * RC and both halves of XRC: acknowledged, retransmitted, READs and
 * atomics (IBA 9.7; XRC annex A14).
 */
static inline bool urxe_qp_reliable(const struct urxe_eqp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}

/* Packets of @qp sent and not yet acknowledged (0 if it sends none). */
static inline uint32_t urxe_qp_inflight(const struct urxe_eqp *qp)
{
	int32_t d;

	if (!urxe_qp_reliable(qp) || qp->attr.state == IBV_QPS_ERR ||
	    qp->attr.state == IBV_QPS_RESET)
		return 0;
	d = urxe_psn_diff(qp->req.psn, qp->comp.acked_psn);
	return d > 0 ? (uint32_t)d : 0;
}

/* qp_table.c */
struct urxe_eqp *urxe_qp_lookup(struct urxe_engine *eng, uint32_t qpn);
/* Flushes @qp's outstanding work (completer, then responder). */
void urxe_qp_flush(struct urxe_eqp *qp);

/* keys.c: the permutation's round keys, from @seed (0: getrandom()). */
void urxe_keys_seed(struct urxe_engine *eng, uint64_t seed);

/*
 * progress.c: takes @qp off the work list (it is going away); progress
 * lock held.
 */
void urxe_pending_remove(struct urxe_eqp *qp);

/* timer.c: runs the expired timers of every QP; progress lock held. */
void urxe_timers_run(struct urxe_engine *eng);

/*
 * budget.c.  The engine's budget (urxe_engine_set_budget):
 * urxe_budget_sync() counts @qp's packets in flight (PSNs sent and not
 * acknowledged, READ answers included) into eng->budget.inflight and,
 * when that fell, wakes QPs waiting for room.  urxe_budget_room() says
 * whether @qp may send @pkts more packets now; when not, @qp waits on the
 * list (woken by the sync that frees room).  Progress lock held.
 */
void urxe_budget_sync(struct urxe_eqp *qp);
bool urxe_budget_room(struct urxe_eqp *qp, uint32_t pkts);
/* Takes @qp off the list of QPs waiting for room. */
void urxe_budget_unwait(struct urxe_eqp *qp);
/* Syncs @qp's budget and says whether it has packets in flight. */
void urxe_streaming_update(struct urxe_eqp *qp);
/* Sets one QP's window from the budget; under qp_lock. */
void urxe_window_update(struct urxe_engine *eng);
/*
 * A free index of the QP number space (no QP, no XRC SRQ holds it), round
 * robin; -ENOMEM when all are taken.  qp_lock held.
 */
int urxe_index_alloc(struct urxe_engine *eng);
/* A QP attached to a multicast group. */
struct urxe_mcast_att {
	union ibv_gid gid;
	struct urxe_eqp *qp;
};

/* Delivers a SEND to QPN 0xFFFFFF (progress lock held; ICRC unchecked). */
/* QP1's ring (gsi.c). */
struct urxe_gsi {
	pthread_mutex_t lock;
	int notify_fd;
	unsigned int head, count;
	uint64_t dropped;
	struct urxe_gsi_mad ring[URXE_GSI_RING];
};

void urxe_gsi_destroy(struct urxe_engine *eng);
void urxe_gsi_input(struct urxe_engine *eng, const struct urxe_bth *bth,
		    const uint8_t *roce, uint32_t paylen,
		    const struct urxe_rx_meta *meta);
void urxe_mcast_input(struct urxe_engine *eng, const struct urxe_bth *bth,
		      const struct urxe_opinfo *oi, const uint8_t *roce,
		      uint32_t len, uint32_t paylen,
		      const struct urxe_rx_meta *meta);
/* Forgets @qp's attachments (progress lock held). */
void urxe_mcast_qp_gone(struct urxe_engine *eng, struct urxe_eqp *qp);
struct urxe_mem *urxe_mem_get(struct urxe_engine *eng, uint32_t key,
			      bool remote);
void urxe_mem_put(struct urxe_mem *mem);
/*
 * The region of local key @lkey, or NULL, for use while the progress lock
 * is held and without a reference (removal takes that lock too).
 */
struct urxe_mem *urxe_mem_borrow(struct urxe_engine *eng, uint32_t lkey);
/*
 * Checks a remote access arriving at @qp (its PD; a type 2 window must be
 * bound to it); on success holds a reference in *out.
 */
int urxe_mem_remote(const struct urxe_eqp *qp, uint32_t rkey,
		    uint64_t va, uint64_t len, unsigned int access,
		    struct urxe_mem **out, uint8_t **ptr);
/*
 * mw.c: memory windows (IBA 10.6.7).  The requester binds
 * (IBV_WR_BIND_MW) and invalidates (IBV_WR_LOCAL_INV) in send queue
 * order; the responder invalidates for a SEND with Invalidate.  0, or
 * -EINVAL when the checks refuse.
 */
int urxe_mw_bind(struct urxe_eqp *qp, const struct urxe_send_wqe *wqe);
int urxe_mw_invalidate(struct urxe_eqp *qp, uint32_t rkey);
/* Puts @qp on the work list; the progress lock held (posters: kick). */
void urxe_qp_schedule(struct urxe_eqp *qp);
/* Moves @qp to ERR (flushing) and reports @ev (URXE_NO_EVENT: none, for
 * errors the requester reports in a completion; verdict.h). */
void urxe_qp_error(struct urxe_eqp *qp, enum ibv_event_type ev);

/*
 * tx.c: packet assembly and batching.  urxe_tx_begin() returns a buffer
 * with the BTH written; the caller writes the extension headers at
 * oi->off[] and @paylen bytes of payload at oi->hdr_len, then commits.
 */
struct urxe_tx_path {
	const union ibv_gid *dgid;
	const union ibv_gid *sgid;
	uint16_t sport;
	uint8_t tclass;
	uint8_t hop_limit;
};

uint8_t *urxe_tx_begin(struct urxe_engine *eng, const struct urxe_bth *bth);
void urxe_tx_commit(struct urxe_engine *eng, const struct urxe_tx_path *path,
		    const struct urxe_opinfo *oi, uint32_t paylen);
/*
 * Payload straight from registered memory: up to URXE_TX_PIECES pieces,
 * whose keys the packet holds (@mem, references taken) until it is sent.
 * The header is in the buffer urxe_tx_begin() returned.
 */
struct urxe_tx_piece {
	const uint8_t *addr;
	uint32_t len;
	struct urxe_mem *mem;
};
void urxe_tx_commit_pieces(struct urxe_engine *eng,
			   const struct urxe_tx_path *path,
			   const struct urxe_opinfo *oi,
			   const struct urxe_tx_piece *p, unsigned int n);
void urxe_tx_flush(struct urxe_engine *eng);
void urxe_qp_path(const struct urxe_eqp *qp, struct urxe_tx_path *p);

/* Memory access checks shared by roles. */
int urxe_sge_copy_out(struct urxe_engine *eng, uint32_t pd,
		      const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		      void *dst, uint32_t len);
int urxe_sge_copy_in(struct urxe_engine *eng, uint32_t pd,
		     const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		     const void *src, uint32_t len);
/*
 * The pieces of registered memory @len bytes of the SGE list from @off
 * lie in, each holding a reference: how many (at most @max), -E2BIG if
 * more are needed (nothing held then), -EACCES for a bad key or range.
 */
int urxe_sge_pieces(struct urxe_engine *eng, uint32_t pd,
		    const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		    uint32_t len, struct urxe_tx_piece *p, unsigned int max);

/* req.c */
void urxe_req_run(struct urxe_eqp *qp);
/* Go back to @psn: resend from the WQE that holds it (go-back-N). */
void urxe_req_rewind(struct urxe_eqp *qp, uint32_t psn);
uint32_t urxe_wqe_pkts(const struct urxe_eqp *qp,
		       const struct urxe_send_wqe *wqe);
static inline unsigned int urxe_qp_mtu(const struct urxe_eqp *qp)
{
	if (qp->type == IBV_QPT_UD)
		return qp->attr.port_mtu ? qp->attr.port_mtu : 4096;
	return qp->attr.path_mtu ? qp->attr.path_mtu : 256;
}
uint64_t urxe_now(struct urxe_engine *eng);
/*
 * The clock for the progress lock's holder: the time its progress round
 * began, or a fresh reading outside one.  Rounds last microseconds; the
 * timers and samples that use it are not finer.
 */
static inline uint64_t urxe_clock(struct urxe_engine *eng)
{
	return eng->clk.clock_valid ? eng->clk.clock_ns : urxe_now(eng);
}
/* Sets a QP timer (@slot points at retx_deadline or rnr_deadline). */
void urxe_timer_set(struct urxe_eqp *qp, uint64_t *slot, uint64_t deadline);

/* comp.c */
/* (Re)arms the transport timer of @qp if it has packets in flight. */
void urxe_retx_arm(struct urxe_eqp *qp);
/* Starts a round-trip sample at @psn unless one is in flight. */
static inline void urxe_rtt_start(struct urxe_eqp *qp, uint32_t psn)
{
	if (qp->comp.rtt_active || !urxe_qp_reliable(qp))
		return;
	qp->comp.rtt_active = true;
	qp->comp.rtt_psn = psn;
	qp->comp.rtt_start = urxe_clock(qp->eng);
}
void urxe_comp_send(struct urxe_eqp *qp, struct urxe_send_wqe *wqe,
		    enum ibv_wc_status status);
void urxe_comp_timers(struct urxe_eqp *qp, uint64_t now);
void urxe_comp_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
		     const struct urxe_opinfo *oi, const uint8_t *pkt,
		     uint32_t paylen);
void urxe_comp_flush(struct urxe_eqp *qp);
/* resp.c */
void urxe_resp_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
		     const struct urxe_opinfo *oi, const uint8_t *pkt,
		     uint32_t paylen, const struct urxe_rx_meta *meta);
void urxe_resp_send_ack(struct urxe_eqp *qp);
void urxe_resp_flush(struct urxe_eqp *qp);
/*
 * A TGT QP lets go of the XRC SRQ it points at: the WQE it holds is
 * completed with IBV_WC_WR_FLUSH_ERR (to the SRQ's CQ), the message in
 * progress is dropped, @srq, @pd and @rcq are cleared.
 */
void urxe_resp_xrc_release(struct urxe_eqp *qp);

/*
 * A TGT QP's shared state (tgt_shared.c): urxe_tgt_begin() locks it and
 * copies it into @qp, urxe_tgt_end() copies @qp's back and unlocks.  No-ops
 * without ->shared.  Progress lock held.
 */
void urxe_tgt_begin(struct urxe_eqp *qp);
void urxe_tgt_end(struct urxe_eqp *qp);

/* The key table index @key names (keys.c); 0: none. */
uint32_t urxe_engine_key_index(const struct urxe_engine *eng, uint32_t key);

/*
 * qperr.c: the line a QP's move to ERR by the transport leaves at the
 * default log level (rate-limited), with the reason and what to do, in
 * the words of the verdict's table entry (verdict.c).  Requester side: @v
 * failed the WQE at @psn.  Responder side: @v was NAKed for the request
 * at @psn.  Progress lock held; QP state still the old one.
 */
void urxe_qp_err_requester(struct urxe_eqp *qp, enum urxe_verdict v,
			   uint32_t psn);
void urxe_qp_err_responder(struct urxe_eqp *qp, enum urxe_verdict v,
			   uint32_t psn);

#endif
