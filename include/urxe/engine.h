/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the transport engine (qp_engine/) toward the provider.
 *
 * The engine owns the transport: work queues, completion rings, the key
 * table of registered memory, the QP table, and the requester, responder
 * and completer that turn work requests into RoCEv2 packets and back.  It
 * never touches a socket: frames leave through struct urxe_engine_ops and
 * arrive through urxe_engine_input(); time comes from ops->now.  Driven
 * single-threaded with a fake clock and a capturing xmit, it is
 * deterministic (tests, fuzzer).
 *
 * Locking: one progress lock per engine covers the transport state of
 * every QP.  Application threads post work under the queue's own lock and
 * then try the progress lock (urxe_engine_kick); whoever holds it also
 * does the work others flagged meanwhile.
 *
 * All functions return 0 or a negative errno unless said otherwise.
 */
#ifndef URXE_ENGINE_H
#define URXE_ENGINE_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <urxe/counters.h>
#include <urxe/pkt.h>
#include <urxe/wire.h>

/* QPNs and SRQNs are slot << 14 | index: the slot is in every number. */
#define URXE_QPN_INDEX_BITS 14

/* ---- registered memory ---- */

/* What a key names: a range of this process's memory. */
struct urxe_mem {
	uint64_t iova;		/* first byte as work requests address it */
	uint8_t *addr;		/* first byte in this process */
	uint64_t length;
	uint32_t lkey;
	uint32_t rkey;
	unsigned int access;	/* IBV_ACCESS_* */
	uint32_t pd;		/* keys work only within their PD */
	atomic_int refs;	/* the key table's, plus one per user */
	/*
	 * Memory windows (IBA 10.6.7) are in the key table too, with no
	 * local key.  A bound window's iova/addr/length/access are its
	 * range and rights, @mr the region it lies in (the binding holds a
	 * reference on it), @qpn the QP a type 2 window is bound to.
	 * Changed by binds and invalidations, under the progress lock.
	 */
	uint8_t mw_type;		/* 0: a region; 1 or 2: a window */
	struct urxe_mem *mr;
	uint32_t qpn;
};

/* ---- work queues ---- */

#define URXE_MAX_MSG_SZ 0x80000000u	/* 2 GiB, the IBA maximum message */

/* The bytes an SGE list of @n entries covers. */
uint64_t urxe_sge_len(const struct ibv_sge *sg, int n);

struct urxe_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum urxe_wqe_state {
	URXE_WQE_POSTED,	/* not yet started */
	URXE_WQE_SENDING,	/* some packets sent */
	URXE_WQE_SENT,		/* all packets sent, waiting for the ACK */
	URXE_WQE_DONE,		/* completed, not yet retired */
};

struct urxe_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;	/* IBV_SEND_* */
	uint32_t imm_inv;		/* imm_data (wire order) or rkey */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add;
	uint64_t swap;
	/* UD: the destination, resolved from the AH at post time. */
	union ibv_gid dgid;
	union ibv_gid sgid;		/* zero: the device's GID 0 */
	uint32_t remote_qpn;		/* UD: the QPN; XRC_SEND: the SRQN */
	uint32_t remote_qkey;
	/*
	 * BIND_MW: the window's handle (its lkey) in @imm_inv, its new rkey in
	 * @rkey, address and length in @remote_addr and @compare_add, and:
	 */
	uint32_t mr_lkey;
	unsigned int mw_access;
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t length;		/* bytes of payload */
	uint32_t num_sge;		/* 0 with IBV_SEND_INLINE */
	/* transport bookkeeping, under the progress lock */
	enum urxe_wqe_state state;
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t sent;			/* payload bytes already sent */
	uint32_t piece;			/* READ: bytes per request, fixed at start */
	uint32_t rcvd;			/* READ: response bytes placed */
	enum ibv_wc_status status;
	/* then num_sge struct urxe_sge, or the inline data */
	struct urxe_sge sge[];
};

struct urxe_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;		/* sum of the SGEs */
	struct urxe_sge sge[];
};

/* ---- shared receive queues ---- */

/*
 * An SRQ as the provider sees it (the engine's whole struct urxe_esrq,
 * ring and all, is private to qp_engine/): urxe_engine_srq_new() makes
 * one, urxe_esrq_pub() gives these fields, which the provider sets before
 * the SRQ is used and reads after.  They are a list (a macro) so that the
 * engine's struct names them directly, through an anonymous struct.
 * @pd is the PD handle for the receives' keys.
 *
 * @limit: the armed limit (IBV_SRQ_LIMIT), 0 when disarmed: when a WQE
 * taken leaves fewer than this posted, the engine disarms it and calls
 * @limit_reached once (progress lock held; must not block).
 *
 * XRC SRQs (IBA annex A14; urxe_engine_xsrq_add): @srqn is the number
 * XRCETH names, @xrcd the domain whose TGT QPs deliver into it, @cq the
 * ring its receives complete to.  Requests that name it are checked
 * against @pd (rkeys and receive lkeys).  All 0/NULL for a basic SRQ.
 * @owner is the provider's, for @limit_reached.
 */
struct urxe_esrq;

#define URXE_ESRQ_PUBLIC_FIELDS \
	struct urxe_engine *eng; \
	uint32_t pd; \
	_Atomic uint32_t limit; \
	void (*limit_reached)(struct urxe_esrq *srq); \
	uint32_t srqn; \
	uint64_t xrcd; \
	struct urxe_cq_ring *cq; \
	void *owner;

struct urxe_esrq_pub {
	URXE_ESRQ_PUBLIC_FIELDS
};

/* The public part of @srq: its first member. */
static inline struct urxe_esrq_pub *urxe_esrq_pub(struct urxe_esrq *srq)
{
	return (struct urxe_esrq_pub *)(void *)srq;
}

/*
 * A new SRQ with room for @max_wr receive WRs of @max_sge SGEs each,
 * everything else 0; urxe_engine_srq_free() frees it (NULL: nothing).
 * urxe_engine_srq_caps(): what it was sized (or resized) for.
 */
int urxe_engine_srq_new(uint32_t max_wr, uint32_t max_sge,
			struct urxe_esrq **out);
void urxe_engine_srq_free(struct urxe_esrq *srq);
void urxe_engine_srq_caps(struct urxe_esrq *srq, uint32_t *max_wr,
			  uint32_t *max_sge);


/* ---- completion rings ---- */

struct urxe_cq_ring {
	pthread_spinlock_t lock;
	struct ibv_wc *wc;
	uint32_t mask;
	uint32_t cqe;			/* what the application asked for */
	_Atomic uint32_t prod;
	_Atomic uint32_t cons;
	bool overflow;
	/* IBV_CQ notification: 0 disarmed, 1 next completion, 2 solicited */
	int armed;
	/* Called (ring lock not held) when an armed ring gets a completion. */
	void (*notify)(struct urxe_cq_ring *ring);
	/* Called once when the ring overflows (IBV_EVENT_CQ_ERR). */
	void (*overrun)(struct urxe_cq_ring *ring);
};

int urxe_cq_ring_init(struct urxe_cq_ring *r, uint32_t cqe);
void urxe_cq_ring_fini(struct urxe_cq_ring *r);
/* Adds a completion; false (and overrun) if the ring was full. */
bool urxe_cq_push(struct urxe_cq_ring *r, const struct ibv_wc *wc,
		  bool solicited);
/* Takes up to @n completions; returns how many. */
int urxe_cq_pop(struct urxe_cq_ring *r, int n, struct ibv_wc *wc);
static inline bool urxe_cq_empty(struct urxe_cq_ring *r)
{
	return atomic_load_explicit(&r->prod, memory_order_acquire) ==
	       atomic_load_explicit(&r->cons, memory_order_relaxed);
}

/* ---- counters (enum urxe_counter: counters.h) ---- */

extern const char *const urxe_counter_names[URXE_CNT__COUNT];

/* ---- queue pairs ---- */

struct urxe_engine;

/* Attributes the transport uses, set by modify_qp (provider-validated). */
struct urxe_qp_attr {
	enum ibv_qp_state state;
	uint32_t dest_qpn;
	uint32_t sq_psn;
	uint32_t rq_psn;
	uint32_t qkey;
	unsigned int access;		/* IBV_ACCESS_REMOTE_* allowed */
	unsigned int path_mtu;		/* bytes */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint16_t pkey;
	/* primary path */
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t flow_label;
	unsigned int port_mtu;		/* bytes: UD messages at most this */
};

/* A READ or atomic the responder answered, kept for replay. */
struct urxe_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn;
	uint32_t last_psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint64_t orig;			/* atomic: the value returned */
};

/*
 * A TGT QP of a domain shared across processes (IBV_QPT_XRC_RECV through
 * a file's XRCD): its responder state lives in memory every process of
 * the domain maps (the provider places it).  A request goes to the process
 * that owns the SRQ it names, which copies this state into its own view of
 * the QP (struct urxe_eqp with ->shared set), handles the request and
 * copies the state back, all under @lock (process-shared and robust: a
 * holder that dies leaves it to the next, which sets @broken).
 */
#define URXE_TGT_RD_RES 16
struct urxe_tgt_shared {
	pthread_mutex_t lock;
	uint32_t qpn;
	uint32_t seq;			/* bumped by every store */
	struct urxe_qp_attr attr;
	uint32_t epsn;
	uint32_t msn;
	uint32_t rd_res_next;
	uint8_t nak_seq_sent;
	uint8_t broken;			/* a holder died mid-update */
	struct urxe_rd_res rd_res[URXE_TGT_RD_RES];
};

/*
 * A QP as the provider sees it.  The engine's whole struct urxe_eqp — the
 * work rings, and the requester, completer and responder state (grouped
 * by role, as the IBA 9.7 and kernel rxe group it) — is private to
 * qp_engine/ (eqp.h): urxe_engine_qp_new() makes one, urxe_eqp_pub()
 * gives these fields, which the provider sets before urxe_engine_qp_add()
 * and reads after.  They are a list (a macro) so that the engine's struct
 * names them directly (qp->qpn), through an anonymous struct.
 *
 * @pd: the PD handle for key checks; @attr is under the progress lock;
 * @sport the UDP source port (flow hash).
 *
 * XRC.  IBV_QPT_XRC_SEND (INI): a requester only, no receive queue; each
 * send WQE names the remote SRQ in remote_qpn, sent as XRCETH.
 * IBV_QPT_XRC_RECV (TGT): a responder only, no PD, queues or CQs of its
 * own; each request's XRCETH names an XRC SRQ of domain @xrcd, whose
 * receive WQEs, PD (rkeys) and CQ the message uses (the engine points
 * its SRQ, @pd and @rcq at it for the message's duration, and allocates
 * the receive WQE it holds, freed in urxe_engine_qp_remove()).  Responses
 * and ACKs of both carry XRC opcodes (0xA0 + operation).  @shared: the
 * state of a TGT QP of a shared domain, or NULL.
 *
 * @fatal: affiliated async events back to the provider (progress lock
 * held, must not block): the errors, and IBV_EVENT_QP_LAST_WQE_REACHED
 * each time an SRQ QP in ERR is flushed (the provider reports it once per
 * visit to ERR).  @owner is the provider's, for @fatal.
 */
struct urxe_eqp;

#define URXE_EQP_PUBLIC_FIELDS \
	struct urxe_engine *eng; \
	uint32_t qpn; \
	enum ibv_qp_type type; \
	uint32_t pd; \
	bool sq_sig_all; \
	struct urxe_cq_ring *scq; \
	struct urxe_cq_ring *rcq; \
	struct urxe_qp_attr attr; \
	uint16_t sport; \
	uint64_t xrcd; \
	struct urxe_tgt_shared *shared; \
	void (*fatal)(struct urxe_eqp *qp, enum ibv_event_type ev); \
	void *owner;

struct urxe_eqp_pub {
	URXE_EQP_PUBLIC_FIELDS
};

/* The public part of @qp: its first member. */
static inline struct urxe_eqp_pub *urxe_eqp_pub(struct urxe_eqp *qp)
{
	return (struct urxe_eqp_pub *)(void *)qp;
}

static inline const struct urxe_eqp_pub *
urxe_eqp_cpub(const struct urxe_eqp *qp)
{
	return (const struct urxe_eqp_pub *)(const void *)qp;
}

/*
 * A new QP, everything 0 but its rings: a send and a receive queue sized
 * by @cap (max_send_wr, _sge, max_inline_data; max_recv_wr, _sge), or
 * none with @cap NULL (a TGT QP's view, an opened handle).
 * urxe_engine_qp_free() frees it (NULL: nothing), after
 * urxe_engine_qp_remove() if it was added.
 */
int urxe_engine_qp_new(const struct ibv_qp_cap *cap, struct urxe_eqp **out);
void urxe_engine_qp_free(struct urxe_eqp *qp);

/*
 * Says once, at the default log level, that @qp sends to @dgid, an
 * address of this host no process owns; marks the QP so.  For the
 * provider (at RTR) and the completer alike.
 */
void urxe_engine_qp_dst_absent(struct urxe_eqp *qp, const union ibv_gid *dgid);

/* ---- posting work ---- */

/*
 * Posting: the producer side of the work rings (the engine consumes).
 * A poster brackets its posts with urxe_engine_sq_begin(), which takes
 * the send queue's poster lock and returns the index the next post
 * fills, and urxe_engine_sq_end(), which lets it go.  In between,
 * urxe_engine_sq_slot() gives the slot of index @idx to write the WQE
 * into, or NULL while the queue holds max_wr WQEs not yet retired;
 * urxe_engine_sq_publish() hands every slot before @end to the engine
 * (a release store: their contents are seen first).  Then
 * urxe_engine_kick().
 *
 * Receives, for a QP's own receive queue and an SRQ alike: each WR is
 * checked (its SGE count) and written, and published at once; the first
 * bad one (-EINVAL) or the first that finds the ring full (-ENOMEM)
 * stops the list and is returned in *@bad; *@posted says how many went.
 */
uint32_t urxe_engine_sq_begin(struct urxe_eqp *qp);
struct urxe_send_wqe *urxe_engine_sq_slot(struct urxe_eqp *qp, uint32_t idx);
void urxe_engine_sq_publish(struct urxe_eqp *qp, uint32_t end);
void urxe_engine_sq_end(struct urxe_eqp *qp);
int urxe_engine_rq_post(struct urxe_eqp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad, unsigned int *posted);
int urxe_engine_srq_post(struct urxe_esrq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, unsigned int *posted);

/* ---- the engine ---- */

/* An outgoing packet (struct urxe_pkt): pkt.h, the data path's input. */

struct urxe_engine_ops {
	/* Sends @n packets; returns how many left, or a negative errno. */
	int (*xmit)(void *priv, struct urxe_pkt *pkts, unsigned int n);
	/* Monotonic nanoseconds. */
	uint64_t (*now)(void *priv);
	/* The UDP source port a packet for @sport really leaves with. */
	uint16_t (*sport)(void *priv, uint16_t sport);
	/* Reads pending frames and feeds them to urxe_engine_input(). */
	int (*rx_poll)(void *priv, struct urxe_engine *eng, int budget);
	/*
	 * XRC across processes (any may be NULL), called with the progress
	 * lock held.  @xrc_route: TGT QP @qp got a request naming SRQ @srqn,
	 * which is none of this engine's: true, with the GID of the process
	 * of the domain that owns it (the request is relayed there), or
	 * false (the request is NAKed).  @xrc_foreign: this process's view of
	 * TGT QP @qpn, hosted by another process (its slot is not ours), or
	 * NULL.  @xrc_watch: every 200 ms while urxe_engine_xrc_watch() is on.
	 */
	bool (*xrc_route)(void *priv, const struct urxe_eqp *qp, uint32_t srqn,
			  union ibv_gid *gid);
	struct urxe_eqp *(*xrc_foreign)(void *priv, uint32_t qpn);
	void (*xrc_watch)(void *priv);
	/*
	 * UC and UD have no acknowledgements to pace them (may be NULL: send
	 * at once): may a packet of @len bytes (BTH .. ICRC) leave for @dgid
	 * now?  0: yes, and it is counted against the destination's room;
	 * else the nanoseconds after which to ask again — the QP keeps its
	 * WQE and waits.  Called with the progress lock held.
	 */
	uint64_t (*tx_wait)(void *priv, const union ibv_gid *dgid,
			    uint32_t len);
	/*
	 * RC's transport timer (may be NULL): is @dgid an instance on this
	 * host whose receive socket holds datagrams it has not read?  Then a
	 * timeout without an answer is not counted as a retry (comp.c).
	 * Called with the progress lock held.
	 */
	bool (*peer_unread)(void *priv, const union ibv_gid *dgid);
	/*
	 * For the messages of an RC requester that gets no answer (may be
	 * NULL): is @dgid an address of this host on which no process has
	 * a RoCE socket (UDP 4791)?  Then nobody can answer.  Called with the
	 * progress lock held, at a retry timeout.
	 */
	bool (*peer_absent)(void *priv, const union ibv_gid *dgid);
};

struct urxe_stats_rec;

struct urxe_engine_conf {
	unsigned int slot;		/* QPNs are slot << 14 | index */
	const char *name;		/* the device's, for messages (or NULL) */
	union ibv_gid gid0;		/* default source GID (UD without sgid) */
	const struct urxe_engine_ops *ops;
	void *priv;
	/*
	 * The context of ops->xmit, ->rx_poll and ->sport, the frames' way
	 * (the data path, datapath.h), or NULL: @priv.
	 */
	void *io_priv;
	/*
	 * The slot's shared statistics record (host.h), or NULL.  The
	 * engine's counters then live in it, and the engine publishes its QP
	 * table there: when a QP comes, goes or changes state, and at most
	 * every 100 ms while packets move (once more 100 ms after they stop).
	 * NULL: private counters, nothing published.
	 */
	struct urxe_stats_rec *stats;
	/*
	 * 0: memory keys are unpredictable (getrandom()).  Otherwise the
	 * seed they follow from, the same for the same seed: for tests and
	 * fuzzing, which replay what an engine does.
	 */
	uint64_t key_seed;
};

int urxe_engine_create(const struct urxe_engine_conf *conf,
		       struct urxe_engine **out);
void urxe_engine_destroy(struct urxe_engine *eng);

/*
 * Key table.  Sets @mem's lkey and rkey (the same; keys.c) and
 * returns the table index taken (> 0), or -ENOMEM.
 */
int urxe_engine_mem_add(struct urxe_engine *eng, struct urxe_mem *mem);
/* Unpublishes @mem; -EBUSY while in use (MW bound, DMA in flight). */
int urxe_engine_mem_remove(struct urxe_engine *eng, struct urxe_mem *mem);
/*
 * A memory window: urxe_engine_mem_add() with @mem->mw_type set (1 or 2,
 * length 0: unbound).  Removing one unbinds it (-EBUSY only while a
 * transfer holds it).
 */
int urxe_engine_mw_remove(struct urxe_engine *eng, struct urxe_mem *mem);

/* QP table: allocates the QPN. */
int urxe_engine_qp_add(struct urxe_engine *eng, struct urxe_eqp *qp);
void urxe_engine_qp_remove(struct urxe_engine *eng, struct urxe_eqp *qp);
/*
 * Applies a validated state change; @mask is the IBV_QP_* attr mask.
 * Moving to ERR flushes every outstanding work request.
 */
int urxe_engine_qp_modify(struct urxe_eqp *qp, const struct urxe_qp_attr *a,
			  int mask);

/*
 * SRQs: urxe_engine_srq_attach() before urxe_engine_qp_add() makes @qp
 * take its receives from @srq (urxe_engine_srq_new()'s, @srq->eng set);
 * urxe_engine_srq_detach() after urxe_engine_qp_remove().
 */
int urxe_engine_srq_attach(struct urxe_eqp *qp, struct urxe_esrq *srq);
void urxe_engine_srq_detach(struct urxe_eqp *qp);
/*
 * XRC SRQs: urxe_engine_xsrq_add() numbers @srq (@srq->srqn = slot << 14
 * | index, an index no QP of this engine holds, and no QP gets while the
 * SRQ lives) and makes it a target of the TGT QPs of domain @srq->xrcd
 * (set, with ->pd and ->cq, before).  After urxe_engine_xsrq_remove()
 * no request reaches it; a TGT QP in the middle of a message into it
 * drops the message (the WQE it took is completed with
 * IBV_WC_WR_FLUSH_ERR first).  urxe_engine_xsrq_lookup(): the SRQ of that
 * number, or NULL (progress lock held).
 */
int urxe_engine_xsrq_add(struct urxe_engine *eng, struct urxe_esrq *srq);
void urxe_engine_xsrq_remove(struct urxe_engine *eng, struct urxe_esrq *srq);
struct urxe_esrq *urxe_engine_xsrq_lookup(struct urxe_engine *eng,
					  uint32_t srqn);

/*
 * Gives @srq room for @max_wr WRs, keeping the posted ones in order;
 * -EINVAL when more than @max_wr are posted.  Takes the progress lock and
 * the ring's lock.
 */
int urxe_engine_srq_resize(struct urxe_esrq *srq, uint32_t max_wr);

/*
 * Multicast (IBA 10.5.2.3, UD only): a SEND to destination QPN
 * URXE_MCAST_QPN goes to every local QP attached to the packet's group,
 * the IP destination — or, when that is a unicast address (the loopback
 * registry's copies), the attached group for which the ICRC checks (the
 * sender computes it for the group address).  Each QP takes its own
 * receive WQE; one without drops it.
 *
 * urxe_engine_mcast_attach() returns 1 when @gid is new to the engine, 0
 * when it was already attached (@qp too: nothing changes), -ENOMEM past
 * @max_grp groups or @max_qp QPs in the group.
 * urxe_engine_mcast_detach() returns 1 when the group has no QP left, 0,
 * or -EINVAL when @qp is not attached.  urxe_engine_mcast_first() puts
 * one group @qp is attached to in @gid, -ENOENT if none.
 * urxe_engine_qp_remove() drops a QP's attachments.
 */
#define URXE_MCAST_QPN 0xffffffu
int urxe_engine_mcast_attach(struct urxe_eqp *qp, const union ibv_gid *gid,
			     unsigned int max_grp, unsigned int max_qp);
int urxe_engine_mcast_detach(struct urxe_eqp *qp, const union ibv_gid *gid);
int urxe_engine_mcast_first(struct urxe_eqp *qp, union ibv_gid *gid);
/*
 * For captures, from rx_poll (progress lock held): the group for which a
 * loopback copy @roce (DestQP URXE_MCAST_QPN, sent to this slot's unicast
 * address, @meta) was sent — the attached group whose address makes its
 * ICRC check.  false: not such a copy, or no attached group matches.
 */
bool urxe_engine_mcast_group(struct urxe_engine *eng, const uint8_t *roce,
			     uint32_t len, const struct urxe_rx_meta *meta,
			     union ibv_gid *group);

/*
 * XRC across processes.  A view of a TGT QP hosted by another process
 * (@qp->shared set, @qp->qpn the host's, @qp->eng ours) is found through
 * ops->xrc_foreign, never added with urxe_engine_qp_add();
 * urxe_engine_qp_remove() retires it all the same.  A TGT QP with
 * ->shared runs its responder and its modifies on the shared state.
 * urxe_engine_xrc_watch() turns ops->xrc_watch on or off.
 * urxe_engine_qp_fail() moves a QP to ERR and raises @ev through its
 * ->fatal; progress lock held (from ops->xrc_watch).
 */
void urxe_engine_xrc_watch(struct urxe_engine *eng, bool on);
void urxe_engine_qp_fail(struct urxe_eqp *qp, enum ibv_event_type ev);
/*
 * The shared state of TGT QP @qp's domain, @st, starts as @qp's own
 * (attributes, ePSN, MSN); before the domain publishes it, so without
 * its lock.  A view's UDP source port: urxe_engine_qp_sport() of the
 * QPN, as urxe_engine_qp_add() gives every QP.
 */
void urxe_engine_tgt_seed(const struct urxe_eqp *qp,
			  struct urxe_tgt_shared *st);
uint16_t urxe_engine_qp_sport(uint32_t qpn);

/*
 * QP1, the GSI, as a port (gsi.c): RDMA CM's MADs.  After
 * urxe_engine_gsi_open() each valid MAD that arrives for DQPN 1 (UD
 * SEND_ONLY, P_Key 0xFFFF, Q_Key 0x80010000, 256 bytes) is queued, up to
 * URXE_GSI_RING (the rest dropped and counted), and @notify_fd (an
 * eventfd) written when the queue was empty; urxe_engine_gsi_recv() takes
 * the oldest (1), or says there is none (0).  urxe_engine_gsi_send()
 * sends one MAD to QP1 at @dgid from @sgid (SrcQP 1).  One reader per
 * engine; close only once nobody reads.
 */
#define URXE_GSI_QPN 1
#define URXE_GSI_QKEY 0x80010000u
#define URXE_GSI_PKEY 0xffff
#define URXE_MAD_LEN 256
#define URXE_GSI_RING 512

struct urxe_gsi_mad {
	union ibv_gid sgid;		/* the sender's address */
	union ibv_gid dgid;		/* ours it was sent to */
	uint16_t sport;
	uint8_t tos;
	uint8_t ttl;
	uint16_t pkey;
	uint32_t src_qp;		/* DETH SrcQP */
	uint8_t mad[URXE_MAD_LEN];
};

int urxe_engine_gsi_open(struct urxe_engine *eng, int notify_fd);
void urxe_engine_gsi_close(struct urxe_engine *eng);
int urxe_engine_gsi_recv(struct urxe_engine *eng, struct urxe_gsi_mad *out);
int urxe_engine_gsi_send(struct urxe_engine *eng, const union ibv_gid *sgid,
			 const union ibv_gid *dgid, uint8_t tclass,
			 const uint8_t mad[URXE_MAD_LEN]);

/* After posting to @qp's send queue: sends now if the engine is free. */
void urxe_engine_kick(struct urxe_eqp *qp);
/* Receives, runs timers and queued work; returns whether work was done. */
int urxe_engine_progress(struct urxe_engine *eng);
/* Earliest timer deadline (ns, ops->now scale) or UINT64_MAX. */
uint64_t urxe_engine_next_deadline(struct urxe_engine *eng);
/*
 * Waits for the progress lock (where urxe_engine_progress() only tries
 * it) and does the work flagged so far: what was posted has been sent,
 * and the completions of unreliable sends are in their CQs.
 */
void urxe_engine_settle(struct urxe_engine *eng);
/*
 * Work is flagged for the next progress call: packets to send, or ACKs a
 * poller left owed when it returned to fresh completions.
 */
bool urxe_engine_has_work(struct urxe_engine *eng);

/*
 * How many packets the receive path holds (socket buffer over packet
 * size): RC QPs share it as their windows of unacknowledged packets.
 * 0: a fixed window of 32 packets per QP.
 */
void urxe_engine_set_budget(struct urxe_engine *eng, uint32_t pkts);
/*
 * At most @pkts READ answer packets awaited, and asked for by one READ
 * request (0: the window).  Toward peers on a real network the answers
 * come in bursts the path may not hold.
 */
void urxe_engine_set_read_window(struct urxe_engine *eng, uint32_t pkts);

/* Reads the engine's counters. */
void urxe_engine_counters(struct urxe_engine *eng, uint64_t *out);

/*
 * For rx_poll: the engine's time, as its progress round saw it (a
 * reading shared by everything the round does).
 */
uint64_t urxe_engine_clock(struct urxe_engine *eng);
/* Called by rx_poll for each frame: @roce is BTH .. ICRC. */
void urxe_engine_input(struct urxe_engine *eng, const uint8_t *roce,
		       uint32_t len, const struct urxe_rx_meta *meta);

/* Engine thread: parks on @fds with libev and runs progress. */
int urxe_engine_thread_start(struct urxe_engine *eng, const int *fds,
			     unsigned int nfds);
void urxe_engine_thread_stop(struct urxe_engine *eng);
/* exit(): the ACKs pollers deferred leave now. */
void urxe_engine_exit_acks(struct urxe_engine *eng);
/*
 * In a fork()ed child: the thread stayed in the parent.  Frees the
 * child's copy of its loop and closes the child's copies of the loop's
 * descriptors; the epoll set, shared with the parent, is not touched.
 */
void urxe_engine_thread_forget(struct urxe_engine *eng);
/* Wakes the engine thread (a deadline moved, work was queued). */
void urxe_engine_thread_wake(struct urxe_engine *eng);

#endif
