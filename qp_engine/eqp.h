/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's own state of a QP and an SRQ: the work rings, and the
 * requester, completer and responder state.  Private to qp_engine/ (and
 * to the tests and fuzzers that drive the engine alone and fill its
 * rings themselves); the provider sees only the public parts engine.h
 * declares (struct urxe_eqp_pub, struct urxe_esrq_pub) and posts through
 * the posting API.  tests/contract_check.sh keeps it so: no file outside
 * qp_engine/ and tests/ includes this header.
 */
#ifndef URXE_QP_ENGINE_EQP_H
#define URXE_QP_ENGINE_EQP_H

#include <urxe/engine.h>

/*
 * A ring of fixed-size slots.  Indices run free; slot = index & mask.
 * prod is written by the poster (under lock), read by the engine; both
 * sides are the engine's code (posting: urxe_engine_sq_*, *_post).  The
 * engine sizes a QP's rings (urxe_engine_qp_new) and an SRQ's
 * (urxe_engine_srq_new); tests that drive the engine alone size theirs.
 */
struct urxe_wq {
	uint8_t *buf;
	uint32_t stride;		/* bytes per slot */
	uint32_t mask;			/* slots - 1 (a power of two) */
	uint32_t max_wr;		/* what the application may post */
	uint32_t max_sge;
	uint32_t max_inline;
	pthread_spinlock_t lock;	/* posters */
	_Atomic uint32_t prod;
	_Atomic uint32_t cons;		/* retired: slots free again */
};

static inline void *urxe_wq_slot(struct urxe_wq *q, uint32_t idx)
{
	return q->buf + (size_t)(idx & q->mask) * q->stride;
}

int urxe_wq_init(struct urxe_wq *q, uint32_t max_wr, uint32_t max_sge,
		 uint32_t max_inline, size_t hdr_size);
void urxe_wq_fini(struct urxe_wq *q);

/*
 * A basic SRQ: one receive ring that any number of the engine's QPs
 * consume from.  Posters fill @rq (urxe_engine_srq_post) as a QP's own
 * receive queue; the engine consumes under the progress lock, one WQE per
 * message, which the QP then holds (urxe_eqp.srq_wqe) until it
 * completes.  The WQEs' lkeys are checked against the SRQ's PD.  The
 * fields the provider sets and reads (engine.h, struct urxe_esrq_pub)
 * come first, named directly; the ring is the engine's.
 */
struct urxe_esrq {
	union {
		struct urxe_esrq_pub pub;
		struct { URXE_ESRQ_PUBLIC_FIELDS };
	};
	struct urxe_wq rq;
};

/*
 * A QP's transport state by role, as the IBA (9.7) and kernel rxe group
 * it: the requester sends the send queue's WQEs, the completer retires
 * them as ACKs and responses come, the responder carries out requests.
 * Under the progress lock unless said otherwise.
 */
struct urxe_req_state {
	uint32_t sq_next;		/* next WQE to start */
	uint32_t psn;			/* next PSN to send */
	uint32_t rd_outstanding;	/* READs/atomics in flight */
	uint32_t unacked_pkts;		/* since the last AckReq */
	uint32_t resend_end;		/* after a rewind: the PSN it left */
	bool resending;			/* ... and it is not there yet */
	uint32_t resp_pkts;		/* READ response packets awaited */
	/*
	 * The engine's budget of packets in flight is shared by its QPs as
	 * they need it: what this QP holds of it (urxe_budget_sync), and its
	 * place on the list of QPs waiting for room.
	 */
	uint32_t budget_held;
	bool budget_waiting;
	struct urxe_eqp *budget_next;
	/*
	 * Packets in flight (read without the lock by posters): their ACKs
	 * will bring progress, so a post may leave its packets to the next
	 * poll and its batch.
	 */
	atomic_bool streaming;
	/*
	 * UC/UD waiting for room at a destination on this host (ops->tx_wait)
	 * until then; 0: not waiting.
	 */
	uint64_t flow_deadline;
	/*
	 * RC/UC requester: the destination GID is an address of this host
	 * nobody owns (no process, no socket): found by the provider at the
	 * modify to RTR or by the completer at a retry timeout, and said
	 * once (@dst_absent_said) at the default log level; the line when
	 * the QP then fails says so too.
	 */
	atomic_bool dst_absent;
	atomic_bool dst_absent_said;
};

struct urxe_comp_state {
	uint32_t sq_comp;		/* oldest WQE not completed */
	uint32_t last_retired_psn;	/* last PSN of the WQE before sq_comp */
	uint32_t acked_psn;		/* next PSN not yet acknowledged */
	uint64_t retx_deadline;		/* 0: no transport timer armed */
	uint64_t progress_ns;		/* last forward progress (or start) */
	uint32_t srtt_ns;		/* smoothed round trip, 0: unknown */
	uint32_t rto_ns;		/* backed-off fast timer, 0: base */
	uint64_t rtt_start;		/* the sample in flight: sent at */
	uint32_t rtt_psn;		/* ... this PSN */
	bool rtt_active;
	uint64_t rnr_deadline;		/* 0: not waiting out an RNR NAK */
	uint8_t retries_left;
	uint8_t rnr_left;
	/*
	 * RC: since when retries have not been counted because the peer, on
	 * this host, has not read what it was sent (0: not now).
	 */
	uint64_t stall_since;
};

struct urxe_resp_state {
	uint32_t epsn;			/* expected PSN */
	uint32_t msn;
	uint32_t rq_cur;		/* receive WQE being filled (multi-packet SEND) */
	bool rq_active;
	uint32_t rq_off;
	struct urxe_mem *wr_mem;	/* multi-packet WRITE target */
	uint64_t wr_va;
	uint32_t wr_resid;
	struct urxe_rd_res *rd_res;	/* max_dest_rd_atomic entries */
	uint32_t rd_res_n;
	uint32_t rd_res_next;
	bool ack_pending;		/* an ACK to send at the end of the batch */
	uint32_t ack_psn;
	bool nak_seq_sent;		/* one PSN-sequence NAK per gap */
};

/*
 * The whole QP.  The fields the provider sets and reads (engine.h,
 * struct urxe_eqp_pub) come first, named directly (qp->qpn) through the
 * anonymous struct and as a whole through @pub, which urxe_eqp_pub()
 * hands the provider; the rest is the engine's alone.
 */
struct urxe_eqp {
	union {
		struct urxe_eqp_pub pub;
		struct { URXE_EQP_PUBLIC_FIELDS };
	};
	struct urxe_wq sq;
	struct urxe_wq rq;		/* unused with an SRQ */
	struct urxe_esrq *srq;		/* receives come from here, or NULL */
	struct urxe_recv_wqe *srq_wqe;	/* the one taken from @srq ... */
	bool srq_held;			/* ... until it completes */
	struct urxe_req_state req;
	struct urxe_comp_state comp;
	struct urxe_resp_state resp;
	struct urxe_eqp *pending_next;	/* on the engine's work list */
	atomic_bool on_list;		/* set under list_lock */
	/*
	 * This QP's share of the engine's counters, under the progress lock
	 * (the engine-wide ones, such as drops before a QP is known, stay 0).
	 * Published to the slot's statistics record now and then.
	 */
	uint64_t cnt[URXE_CNT__COUNT];
};

#endif
