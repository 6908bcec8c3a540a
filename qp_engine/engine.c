// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine object: QP and key tables, the progress lock and the list of
 * QPs with work, packet input (validation, ICRC, dispatch to the
 * responder or completer), and the progress entry points.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <urxe/icrc.h>
#include <urxe/netdev.h>
#include <urxe/wire.h>

#include "engine_int.h"

static void keys_seed(struct urxe_engine *eng, uint64_t seed);

int urxe_engine_create(const struct urxe_engine_conf *conf,
		       struct urxe_engine **out)
{
	struct urxe_engine *eng;

	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return -ENOMEM;
	eng->window = URXE_WINDOW_PKTS;
	eng->qps = calloc(URXE_QP_SLOTS, sizeof(*eng->qps));
	eng->keys = calloc(URXE_KEY_SLOTS, sizeof(*eng->keys));
	eng->tx_buf = malloc(URXE_TX_BATCH * sizeof(*eng->tx_buf));
	if (!eng->qps || !eng->keys || !eng->tx_buf) {
		free(eng->tx_buf);
		free(eng->qps);
		free(eng->keys);
		free(eng);
		return -ENOMEM;
	}
	eng->ops = conf->ops;
	eng->priv = conf->priv;
	eng->io_priv = conf->io_priv ? conf->io_priv : conf->priv;
	eng->slot = conf->slot;
	snprintf(eng->name, sizeof(eng->name), "%s",
		 conf->name ? conf->name : "urxe");
	eng->gid0 = conf->gid0;
	eng->key_next = 1;
	keys_seed(eng, conf->key_seed);
	atomic_init(&eng->deadline_hint, UINT64_MAX);
	/* Counters live in the slot's shared record when there is one. */
	eng->cnt = conf->stats ? conf->stats->counters : eng->cnt_own;
	eng->stats = conf->stats;
	/*
	 * A slot freed by one process is the next one's at once: its QPNs
	 * must not be (a peer may still be retransmitting to an old QP).
	 * Each claim of the slot starts its QP numbers elsewhere: 1021 on
	 * from the user's last claim, and users (whose records, and so
	 * generations, are their own) at places of their own.
	 */
	if (conf->stats)
		eng->qp_next = (conf->stats->generation * 1021u +
				(uint32_t)geteuid() * 7919u) &
			       (URXE_QP_SLOTS - 1);
	urxe_qpstats_publish(eng);
	pthread_mutex_init(&eng->lock, NULL);
	pthread_mutex_init(&eng->qp_lock, NULL);
	pthread_spin_init(&eng->key_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&eng->list_lock, PTHREAD_PROCESS_PRIVATE);
	atomic_init(&eng->work, false);
	*out = eng;
	return 0;
}

void urxe_engine_destroy(struct urxe_engine *eng)
{
	int i;

	if (!eng)
		return;
	urxe_engine_thread_stop(eng);
	if (urxe_log_enabled(URXE_LOG_DEBUG))
		for (i = 0; i < URXE_CNT__COUNT; i++)
			if (atomic_load(&eng->cnt[i]))
				urxe_dbg("slot %u: %s %llu", eng->slot,
					 urxe_counter_names[i],
					 (unsigned long long)atomic_load(&eng->cnt[i]));
	pthread_mutex_destroy(&eng->lock);
	pthread_mutex_destroy(&eng->qp_lock);
	pthread_spin_destroy(&eng->key_lock);
	pthread_spin_destroy(&eng->list_lock);
	urxe_gsi_destroy(eng);
	free(eng->tx_buf);
	free(eng->live);
	free(eng->mc);
	free(eng->xsrqs);
	free(eng->qps);
	free(eng->keys);
	free(eng);
}

const char *const urxe_counter_names[URXE_CNT__COUNT] = {
	[URXE_CNT_SENT_PKTS] = "sent_pkts",
	[URXE_CNT_RCVD_PKTS] = "rcvd_pkts",
	[URXE_CNT_DUPLICATE_REQUEST] = "duplicate_request",
	[URXE_CNT_OUT_OF_SEQ_REQUEST] = "out_of_seq_request",
	[URXE_CNT_RCV_RNR_ERR] = "rcvd_rnr_err",
	[URXE_CNT_SND_RNR_ERR] = "send_rnr_err",
	[URXE_CNT_RCV_SEQ_ERR] = "rcvd_seq_err",
	[URXE_CNT_COMPLETER_RETRY_ERR] = "completer_retry_err",
	[URXE_CNT_RETRY_EXCEEDED_ERR] = "retry_exceeded_err",
	[URXE_CNT_RETRY_RNR_EXCEEDED_ERR] = "retry_rnr_exceeded_err",
	[URXE_CNT_SEND_ERR] = "send_err",
	[URXE_CNT_DROPPED] = "dropped",
	[URXE_CNT_DROPPED_ICRC] = "dropped_icrc",
	[URXE_CNT_DROPPED_NO_QP] = "dropped_no_qp",
	[URXE_CNT_FAULT_DROP] = "fault_drop",
	[URXE_CNT_FAULT_DUP] = "fault_dup",
	[URXE_CNT_FAULT_REORDER] = "fault_reorder",
	[URXE_CNT_FAULT_CORRUPT] = "fault_corrupt",
};

void urxe_engine_counters(struct urxe_engine *eng, uint64_t *out)
{
	int i;

	for (i = 0; i < URXE_CNT__COUNT; i++)
		out[i] = atomic_load_explicit(&eng->cnt[i], memory_order_relaxed);
}

/* ---- keys ---- */

/*
 * A key's low byte is free: a region's is random, a window's is the
 * consumer's once bound (ibv_inc_rkey(3)).  Its upper 24 bits name the
 * table entry: the entry's index (18 bits) and a count of the keys handed
 * out so far (6 bits, so that a reused entry gets another key), put
 * through a permutation of the 24-bit values: a Feistel network whose
 * round keys come from getrandom() when the engine starts.  Nobody who
 * does not know them -- another process, another user of this host,
 * another host -- can tell one key from the next or guess a live one
 * better than by chance (24 bits of a window's key, 32 of a region's),
 * yet the index comes back with one inverse, no search.  Kernel rxe's
 * keys are a counted index and 8 random bits.
 */
static uint64_t key_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void keys_seed(struct urxe_engine *eng, uint64_t seed)
{
	uint64_t r[URXE_KEY_ROUNDS / 2 + 1];
	unsigned int i;

	if (!seed) {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
			struct timespec ts;

			/* No getrandom (seccomp): what differs from run to run. */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
			       (uint64_t)getpid() << 16 ^ (uintptr_t)eng;
			for (i = 0; i < URXE_KEY_ROUNDS / 2 + 1; i++)
				r[i] = key_mix(seed + i);
		}
	} else {
		for (i = 0; i < URXE_KEY_ROUNDS / 2 + 1; i++)
			r[i] = key_mix(seed + i);
	}
	for (i = 0; i < URXE_KEY_ROUNDS; i++)
		eng->key_secret[i] = (uint32_t)(r[i / 2] >> (i % 2 * 32));
	eng->key_rng = r[URXE_KEY_ROUNDS / 2] | 1;
	eng->key_count = (uint32_t)(r[0] ^ r[1] >> 7);
}

static uint32_t key_round(uint32_t x, uint32_t k)
{
	x = (x ^ k) * 0x9e3779b1u;
	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return x & 0xfff;
}

/* The permutation of 24-bit values, and its inverse. */
static uint32_t key_permute(const struct urxe_engine *eng, uint32_t v)
{
	uint32_t l = v >> 12, r = v & 0xfff, t;
	unsigned int i;

	for (i = 0; i < URXE_KEY_ROUNDS; i++) {
		t = r;
		r = l ^ key_round(r, eng->key_secret[i]);
		l = t;
	}
	return l << 12 | r;
}

static uint32_t key_unpermute(const struct urxe_engine *eng, uint32_t v)
{
	uint32_t l = v >> 12, r = v & 0xfff, t;
	unsigned int i;

	for (i = URXE_KEY_ROUNDS; i-- > 0;) {
		t = l;
		l = r ^ key_round(l, eng->key_secret[i]);
		r = t;
	}
	return l << 12 | r;
}

/* The table index key @key names: 0 (none) or below URXE_KEY_SLOTS. */
static uint32_t key_index(const struct urxe_engine *eng, uint32_t key)
{
	return key_unpermute(eng, key >> 8) >> 6;
}

int urxe_engine_mem_add(struct urxe_engine *eng, struct urxe_mem *mem)
{
	uint32_t i, idx;

	pthread_spin_lock(&eng->key_lock);
	for (i = 0; i < URXE_KEY_SLOTS - 1; i++) {
		idx = eng->key_next;
		eng->key_next = eng->key_next + 1 < URXE_KEY_SLOTS ?
				eng->key_next + 1 : 1;
		if (!eng->keys[idx])
			break;
	}
	if (i == URXE_KEY_SLOTS - 1) {
		pthread_spin_unlock(&eng->key_lock);
		return -ENOMEM;
	}
	eng->key_count++;
	eng->key_rng ^= eng->key_rng << 13;	/* xorshift64 */
	eng->key_rng ^= eng->key_rng >> 7;
	eng->key_rng ^= eng->key_rng << 17;
	mem->lkey = key_permute(eng, idx << 6 | (eng->key_count & 63)) << 8 |
		    (uint32_t)(key_mix(eng->key_rng) & 0xff);
	mem->rkey = mem->lkey;
	atomic_store(&mem->refs, 1);
	/* Published whole: urxe_mem_borrow() reads without the lock. */
	__atomic_store_n(&eng->keys[idx], mem, __ATOMIC_RELEASE);
	pthread_spin_unlock(&eng->key_lock);
	return (int)idx;
}

uint32_t urxe_engine_key_index(const struct urxe_engine *eng, uint32_t key)
{
	return key_index(eng, key);
}

/*
 * Under the progress lock as well: its holder may be using the region
 * through urxe_mem_borrow(), which takes no reference.
 */
int urxe_engine_mem_remove(struct urxe_engine *eng, struct urxe_mem *mem)
{
	uint32_t idx = key_index(eng, mem->lkey);
	int rc = 0;

	pthread_mutex_lock(&eng->lock);
	pthread_spin_lock(&eng->key_lock);
	if (atomic_load(&mem->refs) > 1)
		rc = -EBUSY;
	else if (idx < URXE_KEY_SLOTS && eng->keys[idx] == mem)
		__atomic_store_n(&eng->keys[idx], NULL, __ATOMIC_RELAXED);
	pthread_spin_unlock(&eng->key_lock);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

struct urxe_mem *urxe_mem_borrow(struct urxe_engine *eng, uint32_t lkey)
{
	uint32_t idx = key_index(eng, lkey);
	struct urxe_mem *m;

	if (idx == 0)
		return NULL;
	m = __atomic_load_n(&eng->keys[idx], __ATOMIC_ACQUIRE);
	/* A memory window has no local key (IBA 10.6.7). */
	return m && m->lkey == lkey && !m->mw_type ? m : NULL;
}

struct urxe_mem *urxe_mem_get(struct urxe_engine *eng, uint32_t key,
			      bool remote)
{
	uint32_t idx = key_index(eng, key);
	struct urxe_mem *m = NULL;

	if (idx == 0)
		return NULL;
	pthread_spin_lock(&eng->key_lock);
	m = eng->keys[idx];
	/* A memory window has no local key (IBA 10.6.7). */
	if (m && (remote ? m->rkey == key : m->lkey == key && !m->mw_type))
		atomic_fetch_add(&m->refs, 1);
	else
		m = NULL;
	pthread_spin_unlock(&eng->key_lock);
	return m;
}

void urxe_mem_put(struct urxe_mem *mem)
{
	atomic_fetch_sub(&mem->refs, 1);
}

/* ---- QPs ---- */

/* ---- the budget of packets in flight ---- */

static void budget_unwait(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	struct urxe_eqp **pp, *prev = NULL;

	if (!qp->budget_waiting)
		return;
	for (pp = &eng->budget_wait; *pp; prev = *pp, pp = &(*pp)->budget_next) {
		if (*pp != qp)
			continue;
		*pp = qp->budget_next;
		if (eng->budget_wait_tail == qp)
			eng->budget_wait_tail = prev;
		break;
	}
	qp->budget_next = NULL;
	qp->budget_waiting = false;
}

void urxe_budget_sync(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	uint32_t now = urxe_qp_inflight(qp), freed, room;
	struct urxe_eqp *w;

	if (now == qp->budget_held)
		return;
	freed = qp->budget_held > now ? qp->budget_held - now : 0;
	eng->inflight += now - qp->budget_held;
	qp->budget_held = now;
	if (!freed || !eng->budget_wait)
		return;
	/* Room came back: as many waiters as it can serve, oldest first. */
	room = eng->inflight < eng->budget_pkts ?
	       eng->budget_pkts - eng->inflight : 0;
	while (room && (w = eng->budget_wait)) {
		eng->budget_wait = w->budget_next;
		if (!eng->budget_wait)
			eng->budget_wait_tail = NULL;
		w->budget_next = NULL;
		w->budget_waiting = false;
		urxe_qp_schedule(w);
		room = room > URXE_ACK_EVERY ? room - URXE_ACK_EVERY : 0;
	}
}

bool urxe_budget_room(struct urxe_eqp *qp, uint32_t pkts)
{
	struct urxe_engine *eng = qp->eng;

	if (!eng->budget_pkts)
		return true;
	urxe_budget_sync(qp);
	/* An empty budget always lets one request through. */
	if (!eng->inflight || eng->inflight + pkts <= eng->budget_pkts)
		return true;
	if (!qp->budget_waiting) {
		qp->budget_waiting = true;
		qp->budget_next = NULL;
		if (eng->budget_wait_tail)
			eng->budget_wait_tail->budget_next = qp;
		else
			eng->budget_wait = qp;
		eng->budget_wait_tail = qp;
	}
	return false;
}

/* Whether @qp has packets in flight, for posters (urxe_engine_kick). */
static void streaming_update(struct urxe_eqp *qp)
{
	urxe_budget_sync(qp);
	atomic_store_explicit(&qp->streaming,
			      urxe_qp_reliable(qp) &&
			      urxe_psn_diff(qp->psn, qp->acked_psn) > 0,
			      memory_order_relaxed);
}

/*
 * One QP's window: the whole budget, within bounds.  The budget is the
 * engine's, not divided among its QPs: QPs that send take room as they
 * need it (urxe_budget_room), so 1,000 QPs keep the windows, and the
 * ACK interval, of one.  Under qp_lock.
 */
static void window_update(struct urxe_engine *eng)
{
	uint32_t w = URXE_WINDOW_PKTS;

	if (eng->budget_pkts) {
		w = eng->budget_pkts;
		w = w < URXE_WINDOW_MIN ? URXE_WINDOW_MIN :
		    w > URXE_WINDOW_MAX ? URXE_WINDOW_MAX : w;
	}
	eng->window = w;
}

void urxe_engine_set_read_window(struct urxe_engine *eng, uint32_t pkts)
{
	pthread_mutex_lock(&eng->lock);
	eng->read_window = pkts;
	pthread_mutex_unlock(&eng->lock);
}

void urxe_engine_set_budget(struct urxe_engine *eng, uint32_t pkts)
{
	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qp_lock);
	eng->budget_pkts = pkts;
	window_update(eng);
	pthread_mutex_unlock(&eng->qp_lock);
	pthread_mutex_unlock(&eng->lock);
}

int urxe_index_alloc(struct urxe_engine *eng)
{
	uint32_t i, idx;

	for (i = 0; i < URXE_QP_SLOTS; i++) {
		idx = (eng->qp_next + i) & (URXE_QP_SLOTS - 1);
		if (!eng->qps[idx] && !(eng->xsrqs && eng->xsrqs[idx])) {
			/* Round robin: a freed number is not reused at once. */
			eng->qp_next = idx + 1;
			return (int)idx;
		}
	}
	return -ENOMEM;
}

int urxe_engine_qp_add(struct urxe_engine *eng, struct urxe_eqp *qp)
{
	uint32_t idx = 0;
	int rc = 0;

	/* Lock order: the progress lock, then qp_lock (as qp_remove). */
	pthread_mutex_lock(&eng->lock);
	pthread_mutex_lock(&eng->qp_lock);
	if (eng->nlive == eng->live_cap) {
		uint32_t cap = eng->live_cap ? eng->live_cap * 2 : 16;
		struct urxe_eqp **l = realloc(eng->live, cap * sizeof(*l));

		if (!l) {
			rc = -ENOMEM;
			goto out;
		}
		eng->live = l;
		eng->live_cap = cap;
	}
	rc = urxe_index_alloc(eng);
	if (rc < 0)
		goto out;
	idx = (uint32_t)rc;
	rc = 0;
	qp->eng = eng;
	qp->qpn = eng->slot << URXE_QPN_INDEX_BITS | idx;
	qp->attr.state = IBV_QPS_RESET;
	/* Flow entropy for ECMP and the source-port pool (IBA A17.5.1). */
	qp->sport = (uint16_t)(0xc000 | ((qp->qpn * 2654435761u) >> 18));
	memset(qp->cnt, 0, sizeof(qp->cnt));
	eng->qps[idx] = qp;
	eng->live[eng->nlive++] = qp;
	window_update(eng);
	urxe_qpstats_publish(eng);
out:
	pthread_mutex_unlock(&eng->qp_lock);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

void urxe_engine_qp_remove(struct urxe_engine *eng, struct urxe_eqp *qp)
{
	uint32_t idx = qp->qpn & (URXE_QP_SLOTS - 1), i;
	struct urxe_eqp **pp;

	/* The progress lock orders us after any packet still using @qp. */
	pthread_mutex_lock(&eng->lock);
	/* An ACK still owed (deferred by a poller) leaves before the QP. */
	if (qp->ack_pending) {
		urxe_resp_send_ack(qp);
		urxe_tx_flush(eng);
	}
	/* Its room in the budget is everyone's again. */
	budget_unwait(qp);
	eng->inflight -= qp->budget_held;
	qp->budget_held = 0;
	pthread_mutex_lock(&eng->qp_lock);
	if (eng->qps[idx] == qp)
		eng->qps[idx] = NULL;
	for (i = 0; i < eng->nlive; i++) {
		if (eng->live[i] == qp) {
			urxe_qpstats_retire(eng, qp);
			eng->live[i] = eng->live[--eng->nlive];
			break;
		}
	}
	window_update(eng);
	urxe_qpstats_publish(eng);
	pthread_mutex_unlock(&eng->qp_lock);
	pthread_spin_lock(&eng->list_lock);
	for (pp = &eng->pending; *pp; pp = &(*pp)->pending_next) {
		if (*pp == qp) {
			__atomic_store_n(pp, qp->pending_next,
					 __ATOMIC_RELAXED);
			break;
		}
	}
	atomic_store_explicit(&qp->on_list, false, memory_order_relaxed);
	pthread_spin_unlock(&eng->list_lock);
	urxe_mcast_qp_gone(eng, qp);
	if (qp->type == IBV_QPT_XRC_RECV) {
		/* The WQE a TGT QP holds goes back to its owner as flushed. */
		urxe_resp_xrc_release(qp);
		free(qp->srq_wqe);
		qp->srq_wqe = NULL;
	}
	if (qp->wr_mem)
		urxe_mem_put(qp->wr_mem);
	qp->wr_mem = NULL;
	free(qp->rd_res);
	qp->rd_res = NULL;
	pthread_mutex_unlock(&eng->lock);
}

struct urxe_eqp *urxe_qp_lookup(struct urxe_engine *eng, uint32_t qpn)
{
	if (qpn >> URXE_QPN_INDEX_BITS != eng->slot)
		return NULL;
	return eng->qps[qpn & (URXE_QP_SLOTS - 1)];
}

/* Puts @qp on the work list: posters push without the progress lock. */
static void schedule_push(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	pthread_spin_lock(&eng->list_lock);
	if (!atomic_load_explicit(&qp->on_list, memory_order_relaxed)) {
		atomic_store_explicit(&qp->on_list, true, memory_order_relaxed);
		qp->pending_next = eng->pending;
		__atomic_store_n(&eng->pending, qp, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&eng->list_lock);
}

/*
 * Progress lock held: only its holder takes QPs off the list, so a QP
 * seen on it stays there until this holder's run_pending() looks.
 */
/*
 * The process is exiting: the ACKs pollers deferred ("ACKs wait for the
 * next call") leave now, or never: the application saw those messages
 * complete, and the peer would retry them into nobody and fail a message
 * delivered (perftest -z's last handshake, every run).  Bounded: a thread
 * that called exit() holding the progress lock must not hang there.
 */
void urxe_engine_exit_acks(struct urxe_engine *eng)
{
	struct timespec until;
	uint32_t i;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 20 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_mutex_timedlock(&eng->lock, &until))
		return;
	for (i = 0; i < eng->nlive; i++)
		if (eng->live[i]->ack_pending)
			urxe_resp_send_ack(eng->live[i]);
	urxe_tx_flush(eng);
	pthread_mutex_unlock(&eng->lock);
}

void urxe_qp_schedule(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	if (atomic_load_explicit(&qp->on_list, memory_order_relaxed))
		return;
	schedule_push(qp);
	if (!atomic_load_explicit(&eng->work, memory_order_relaxed))
		atomic_store(&eng->work, true);
}

static void qp_flush(struct urxe_eqp *qp)
{
	urxe_comp_flush(qp);
	urxe_resp_flush(qp);
}

/*
 * An ACK a poller deferred ("ACKs wait for the next call") is owed for
 * messages this side has already completed; a device would have sent it
 * as the packet arrived.  It leaves before the QP changes state: dropped,
 * the peer's send of a message its receiver saw ends flushed when the
 * application moves that QP to ERR on disconnect (DAPL's dapltest -T P
 * did, 6 runs in 10), or retried into a responder that is gone.
 */
static void ack_owed_out(struct urxe_eqp *qp)
{
	if (qp->ack_pending)
		urxe_resp_send_ack(qp);
}

void urxe_qp_error(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	if (qp->attr.state == IBV_QPS_ERR)
		return;
	ack_owed_out(qp);
	qp->attr.state = IBV_QPS_ERR;
	qp_flush(qp);
	urxe_qpstats_publish(qp->eng);
	if (qp->fatal && ev != URXE_NO_EVENT)
		qp->fatal(qp, ev);
}

/*
 * Modify to RESET (IBA 10.3.1): the QP keeps its attributes, nothing of
 * its connection.  Its queues are emptied (the provider drops their
 * completions), no message is under way either way, no timer armed, and
 * the next connection starts with MSN 0, full retry budgets and no RTT
 * estimate — the path may be another.  The PSNs are not cleared: the
 * modifies back to RTR and RTS must set them (rq_psn, sq_psn).  Kernel
 * rxe's rxe_qp_reset clears the same state.
 */
static void reset_requester(struct urxe_eqp *qp)
{
	qp->sq_next = qp->sq_comp = atomic_load(&qp->sq.cons);
	atomic_store(&qp->sq.prod, qp->sq_next);
	qp->rd_outstanding = 0;
	qp->unacked_pkts = 0;
	qp->resending = false;
	qp->resend_end = qp->psn;
	qp->resp_pkts = 0;
	qp->flow_deadline = 0;
	atomic_store_explicit(&qp->streaming, false, memory_order_relaxed);
}

static void reset_completer(struct urxe_eqp *qp)
{
	qp->last_retired_psn = urxe_psn_add(qp->psn, URXE_PSN_MASK);
	qp->acked_psn = qp->psn;
	qp->retx_deadline = 0;
	qp->rnr_deadline = 0;
	qp->progress_ns = 0;
	qp->stall_since = 0;
	qp->srtt_ns = 0;
	qp->rto_ns = 0;
	qp->rtt_active = false;
	qp->retries_left = qp->attr.retry_cnt;
	qp->rnr_left = qp->attr.rnr_retry;
}

static void reset_responder(struct urxe_eqp *qp)
{
	/* A TGT QP's WQE goes back to its SRQ's CQ, as it always has. */
	if (qp->type == IBV_QPT_XRC_RECV)
		urxe_resp_xrc_release(qp);
	atomic_store(&qp->rq.prod, atomic_load(&qp->rq.cons));
	qp->msn = 0;
	qp->rq_active = false;
	qp->rq_off = 0;
	/*
	 * A WQE taken from an SRQ for a message cut short stays held, its
	 * offset 0: the next message fills it.  Dropped, it would be a
	 * receive the application posted and never sees again (fuzz_rx's
	 * accounting of an SRQ's receives caught that).
	 */
	if (qp->wr_mem)
		urxe_mem_put(qp->wr_mem);
	qp->wr_mem = NULL;
	qp->wr_va = 0;
	qp->wr_resid = 0;
	qp->ack_pending = false;
	qp->ack_psn = 0;
	qp->nak_seq_sent = false;
	qp->rd_res_next = 0;
	if (qp->rd_res)
		memset(qp->rd_res, 0, qp->rd_res_n * sizeof(*qp->rd_res));
}

static void qp_reset(struct urxe_eqp *qp)
{
	reset_requester(qp);
	reset_completer(qp);
	reset_responder(qp);
}

/*
 * Packets waiting in the sockets reached the device before the verb that
 * calls this: a device would have handled them already.  An ACK there
 * completes a send that a move to ERR would otherwise flush — the peer's
 * receiver saw the message, so its sender must see success.  (DAPL's
 * dapltest -T P: the server, given the client's last SEND, disconnects;
 * the client's CM thread moved its QP to ERR while the ACK waited for the
 * engine thread, and the test failed 6 runs in 10.)  Progress lock held.
 */
static void input_arrived(struct urxe_engine *eng)
{
	unsigned int rounds = 16;
	int n;

	if (!eng->ops->rx_poll)
		return;
	eng->clock_ns = urxe_now(eng);
	eng->clock_valid = true;
	do
		n = eng->ops->rx_poll(eng->io_priv, eng, 64);
	while (n >= 64 && --rounds);
	eng->clock_valid = false;
}

static bool state_takes_input(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD ||
	       s == IBV_QPS_SQE;
}

/*
 * A requester's new path: a destination on this host that nobody owns
 * (the peer exited between exchanging its address and now, or the GID
 * is wrong) is said at once, not only when the retries run out.  The
 * peer's sockets exist from its QP's creation, before it can have told
 * its QPN.  Progress lock held.
 */
static void dst_check(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;

	atomic_store(&qp->dst_absent, false);
	atomic_store(&qp->dst_absent_said, false);
	if (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC &&
	    qp->type != IBV_QPT_XRC_SEND)
		return;
	if (eng->ops->peer_absent &&
	    eng->ops->peer_absent(eng->priv, &qp->attr.dgid))
		urxe_engine_qp_dst_absent(qp, &qp->attr.dgid);
}
int urxe_engine_qp_modify(struct urxe_eqp *qp, const struct urxe_qp_attr *a,
			  int mask)
{
	struct urxe_engine *eng = qp->eng;
	int rc = 0;

	pthread_mutex_lock(&eng->lock);
	if ((mask & IBV_QP_STATE) && a->state != qp->attr.state &&
	    state_takes_input(qp->attr.state))
		input_arrived(eng);
	urxe_tgt_begin(qp);
	/*
	 * The transport may have moved the QP to ERR since the caller looked:
	 * from ERR only RESET (or ERR again) is a legal next state.
	 */
	if (qp->attr.state == IBV_QPS_ERR && (mask & IBV_QP_STATE) &&
	    a->state != IBV_QPS_RESET && a->state != IBV_QPS_ERR) {
		rc = -EINVAL;
		goto out;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		uint32_t n = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
		struct urxe_rd_res *r = calloc(n, sizeof(*r));

		if (!r) {
			rc = -ENOMEM;
			goto out;
		}
		free(qp->rd_res);
		qp->rd_res = r;
		qp->rd_res_n = n;
		qp->rd_res_next = 0;
	}
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qpn = a->dest_qpn;
	if (mask & IBV_QP_SQ_PSN) {
		qp->attr.sq_psn = a->sq_psn & URXE_PSN_MASK;
		qp->psn = qp->attr.sq_psn;
		qp->acked_psn = qp->psn;
		qp->resend_end = qp->psn;
		/* A rewind before the first retirement resumes here. */
		qp->last_retired_psn = urxe_psn_add(qp->psn, URXE_PSN_MASK);
	}
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = a->rq_psn & URXE_PSN_MASK;
		qp->epsn = qp->attr.rq_psn;
	}
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.access = a->access;
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retries_left = qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_left = qp->attr.rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey = a->pkey;
	if (a->port_mtu)
		qp->attr.port_mtu = a->port_mtu;
	if (mask & IBV_QP_AV) {
		qp->attr.dgid = a->dgid;
		qp->attr.sgid = a->sgid;
		qp->attr.tclass = a->tclass;
		qp->attr.hop_limit = a->hop_limit;
		qp->attr.flow_label = a->flow_label;
		dst_check(qp);
	}
	if (mask & IBV_QP_STATE) {
		enum ibv_qp_state old = qp->attr.state;

		if (a->state != old) {
			ack_owed_out(qp);
			urxe_tx_flush(eng);
		}
		qp->attr.state = a->state;
		if (a->state == IBV_QPS_RESET)
			qp_reset(qp);
		else if (a->state == IBV_QPS_ERR && old != IBV_QPS_ERR)
			qp_flush(qp);
		else if (a->state == IBV_QPS_RTS)
			urxe_qp_schedule(qp);
		if (a->state != old)
			urxe_qpstats_publish(eng);
	}
	urxe_budget_sync(qp);
out:
	urxe_tgt_end(qp);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

void urxe_engine_qp_fail(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	urxe_qp_error(qp, ev);
}

void urxe_engine_xrc_watch(struct urxe_engine *eng, bool on)
{
	uint64_t due;

	pthread_mutex_lock(&eng->lock);
	if (!on) {
		eng->xrc_watch_due = 0;
	} else if (!eng->xrc_watch_due) {
		due = urxe_now(eng) + URXE_XRC_WATCH_NS;
		eng->xrc_watch_due = due;
		if (due < atomic_load_explicit(&eng->deadline_hint,
					       memory_order_relaxed)) {
			atomic_store_explicit(&eng->deadline_hint, due,
					      memory_order_relaxed);
			atomic_store(&eng->timer_moved, true);
		}
	}
	pthread_mutex_unlock(&eng->lock);
	if (on)
		urxe_engine_thread_wake(eng);
}

/* ---- input ---- */

static bool transport_ok(const struct urxe_eqp *qp, uint8_t opcode,
			 const struct urxe_opinfo *oi)
{
	switch (urxe_opcode_transport(opcode)) {
	case URXE_TR_RC:
		return qp->type == IBV_QPT_RC;
	case URXE_TR_UC:
		return qp->type == IBV_QPT_UC;
	case URXE_TR_UD:
		return qp->type == IBV_QPT_UD;
	case URXE_TR_XRC:
		/* XRC annex A14: requests to TGT QPs, answers to INI QPs. */
		return qp->type == (oi->flags & URXE_F_REQ ? IBV_QPT_XRC_RECV
							   : IBV_QPT_XRC_SEND);
	default:
		return false;
	}
}

void urxe_engine_input(struct urxe_engine *eng, const uint8_t *roce,
		       uint32_t len, const struct urxe_rx_meta *meta)
{
	const struct urxe_opinfo *oi;
	struct urxe_bth bth;
	struct urxe_eqp *qp;
	uint32_t paylen;

	urxe_count(eng, URXE_CNT_RCVD_PKTS, 1);
	if (len < URXE_BTH_LEN + URXE_ICRC_LEN)
		goto drop;
	urxe_bth_get(roce, &bth);
	oi = urxe_opinfo(bth.opcode);
	if (!(oi->flags & URXE_F_VALID) || bth.tver != 0)
		goto drop;
	if (len < (uint32_t)oi->hdr_len + bth.pad + URXE_ICRC_LEN)
		goto drop;
	paylen = len - oi->hdr_len - bth.pad - URXE_ICRC_LEN;
	if (!(oi->flags & URXE_F_PAYLOAD) && paylen)
		goto drop;
	if (bth.dqpn == URXE_MCAST_QPN) {
		urxe_mcast_input(eng, &bth, oi, roce, len, paylen, meta);
		return;
	}
	if (!urxe_icrc_check_rx(roce, len, meta, &eng->icrc_ids)) {
		urxe_count(eng, URXE_CNT_DROPPED_ICRC, 1);
		return;
	}
	if (bth.dqpn == URXE_GSI_QPN) {
		urxe_gsi_input(eng, &bth, roce, paylen, meta);
		return;
	}
	qp = urxe_qp_lookup(eng, bth.dqpn);
	if (!qp && eng->ops->xrc_foreign &&
	    bth.dqpn >> URXE_QPN_INDEX_BITS != eng->slot)
		qp = eng->ops->xrc_foreign(eng->priv, bth.dqpn);
	if (!qp || !transport_ok(qp, bth.opcode, oi)) {
		urxe_count(eng, URXE_CNT_DROPPED_NO_QP, 1);
		return;
	}
	qp->cnt[URXE_CNT_RCVD_PKTS]++;
	eng->acct = qp;
	if (oi->flags & URXE_F_REQ)
		urxe_resp_input(qp, &bth, oi, roce, paylen, meta);
	else
		urxe_comp_input(qp, &bth, oi, roce, paylen);
	streaming_update(qp);
	eng->acct = NULL;
	return;
drop:
	urxe_count(eng, URXE_CNT_DROPPED, 1);
}

/* ---- progress ---- */

/*
 * Takes QPs off the work list one at a time: a QP may be scheduled again
 * (by another thread posting, or by its own work) while it is processed,
 * and must then come back on the list, not corrupt a walk of it.
 */
static struct urxe_eqp *pop_pending(struct urxe_engine *eng)
{
	struct urxe_eqp *qp;

	/* The idle (busy-polling) path: no lock for an empty list. */
	if (!__atomic_load_n(&eng->pending, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_spin_lock(&eng->list_lock);
	qp = eng->pending;
	if (qp) {
		__atomic_store_n(&eng->pending, qp->pending_next,
				 __ATOMIC_RELAXED);
		qp->pending_next = NULL;
		atomic_store_explicit(&qp->on_list, false,
				      memory_order_relaxed);
	}
	pthread_spin_unlock(&eng->list_lock);
	return qp;
}

static void run_pending(struct urxe_engine *eng)
{
	struct urxe_eqp *qp;
	unsigned int budget = 4096;

	while (budget-- && (qp = pop_pending(eng))) {
		if (qp->attr.state == IBV_QPS_ERR) {
			/* Work posted to a QP in error is flushed. */
			qp_flush(qp);
			continue;
		}
		eng->acct = qp;
		if (qp->ack_pending)
			urxe_resp_send_ack(qp);
		urxe_req_run(qp);
		streaming_update(qp);
		eng->acct = NULL;
	}
}

uint64_t urxe_now(struct urxe_engine *eng)
{
	return eng->ops->now(eng->priv);
}

uint64_t urxe_engine_clock(struct urxe_engine *eng)
{
	return urxe_clock(eng);
}

void urxe_timer_set(struct urxe_eqp *qp, uint64_t *slot, uint64_t deadline)
{
	*slot = deadline;
	if (deadline && deadline < atomic_load_explicit(&qp->eng->deadline_hint,
							memory_order_relaxed)) {
		atomic_store_explicit(&qp->eng->deadline_hint, deadline,
				      memory_order_relaxed);
		atomic_store(&qp->eng->timer_moved, true);
	}
}

/* Runs the expired transport and RNR timers of every QP. */
static void run_timers(struct urxe_engine *eng)
{
	/* A statistics publish due is a deadline too (urxe_qpstats_tick). */
	uint64_t now = urxe_clock(eng), hint = eng->stats_due ? eng->stats_due
							    : UINT64_MAX;
	uint32_t i;

	if (now < atomic_load_explicit(&eng->deadline_hint, memory_order_relaxed))
		return;
	atomic_store_explicit(&eng->deadline_hint, UINT64_MAX,
			      memory_order_relaxed);
	for (i = 0; i < eng->nlive; i++) {
		struct urxe_eqp *qp = eng->live[i];

		if (qp->retx_deadline || qp->rnr_deadline ||
		    qp->flow_deadline) {
			eng->acct = qp;
			urxe_comp_timers(qp, now);
			streaming_update(qp);
			eng->acct = NULL;
		}
		if (qp->retx_deadline && qp->retx_deadline < hint)
			hint = qp->retx_deadline;
		if (qp->rnr_deadline && qp->rnr_deadline < hint)
			hint = qp->rnr_deadline;
		if (qp->flow_deadline && qp->flow_deadline < hint)
			hint = qp->flow_deadline;
	}
	if (eng->xrc_watch_due) {
		if (now >= eng->xrc_watch_due) {
			eng->xrc_watch_due = now + URXE_XRC_WATCH_NS;
			if (eng->ops->xrc_watch)
				eng->ops->xrc_watch(eng->priv);
		}
		if (eng->xrc_watch_due && eng->xrc_watch_due < hint)
			hint = eng->xrc_watch_due;
	}
	if (hint < atomic_load_explicit(&eng->deadline_hint, memory_order_relaxed))
		atomic_store_explicit(&eng->deadline_hint, hint,
				      memory_order_relaxed);
}

/*
 * Who runs progress.  A thread polling a CQ wants its completions at once
 * and will call again soon; a poster wants its packets out and may not
 * call again (ib_write_lat spins on memory); the engine thread does all.
 */
enum prog_mode {
	PROG_POLL,	/* return as soon as input made completions */
	PROG_KICK,	/* send what is flagged; input is the others' job */
	PROG_ENGINE,
};

/*
 * Progress lock held: do everything flagged, then drain the sockets.
 * Returns 1 if input arrived (or completions were made); @clock, if not
 * NULL, gets the time its last round began.
 */
static int progress_locked(struct urxe_engine *eng, enum prog_mode mode,
			   uint64_t *clock)
{
	uint64_t cqes = eng->cqes;
	int did = 0, n, rounds = 0;
	bool input;

	do {
		/*
		 * Bounded: with both ends of a connection in this process,
		 * traffic could keep the holder here for ever, away from its
		 * application.  Leftover work stays flagged for the next one.
		 */
		if (++rounds > 16) {
			atomic_store(&eng->work, true);
			break;
		}
		eng->clock_ns = urxe_now(eng);
		eng->clock_valid = true;
		/*
		 * Cleared before the list is read, with a full barrier (a
		 * poster sets it after its push).  Read first: an idle poll
		 * finds it clear, and an atomic exchange less each time.
		 */
		if (atomic_load_explicit(&eng->work, memory_order_relaxed))
			atomic_store(&eng->work, false);
		atomic_store_explicit(&eng->acks_deferred_ns, 0,
				      memory_order_relaxed);
		run_pending(eng);
		/*
		 * A poster reads no input (the pollers' and the engine
		 * thread's job) unless the engine thread, finding the lock
		 * held, left it to the holder.
		 */
		input = mode != PROG_KICK;
		if (atomic_load_explicit(&eng->input_wanted,
					 memory_order_relaxed))
			input = atomic_exchange(&eng->input_wanted, false) ||
				input;
		if (!input) {
			n = 0;
			run_timers(eng);
			break;
		}
		/* Input first: a late ACK waiting in the socket is not a loss. */
		n = eng->ops->rx_poll ? eng->ops->rx_poll(eng->io_priv, eng, 64) : 0;
		if (n > 0)
			did = 1;
		run_timers(eng);
		if (mode == PROG_POLL && eng->cqes != cqes) {
			/*
			 * Messages arrived: the caller returns to them now.
			 * The ACKs this input owes stay flagged and leave at
			 * its next call — typically the post of its answer,
			 * in the same batch — or from the engine thread if it
			 * does not call again.  (Input that only completes
			 * sends, or WRITEs without immediate, defers nothing:
			 * a program spinning on memory may never call.)
			 */
			if (__atomic_load_n(&eng->pending, __ATOMIC_RELAXED)) {
				if (!atomic_load_explicit(&eng->work,
							  memory_order_relaxed))
					atomic_store(&eng->work, true);
				atomic_store_explicit(&eng->acks_deferred_ns,
						      urxe_clock(eng),
						      memory_order_relaxed);
			}
			break;
		}
		run_pending(eng);
	} while (n > 0 || atomic_load(&eng->work));
	urxe_tx_flush(eng);
	urxe_qpstats_tick(eng);
	if (clock)
		*clock = eng->clock_ns;
	eng->clock_valid = false;
	return did;
}

static int progress(struct urxe_engine *eng, enum prog_mode mode,
		    uint64_t *clock);

/*
 * Progress from a thread that polls (an empty CQ, a wait for an event):
 * it will call again soon, so the engine thread may keep out of its way.
 * It called in until it returns: a run made slow by system calls (or a
 * tracer) must not make the next post think it gone.
 */
int urxe_engine_progress(struct urxe_engine *eng)
{
	uint64_t clock = 0;
	int did;

	if (urxe_in_engine_thread(eng)) {
		did = progress(eng, PROG_ENGINE, NULL);
		return did > 0 ? did : 0;
	}
	/*
	 * Stamped at the end only: while it runs, app_in_progress says so
	 * (a clock read less on every poll of an empty CQ).
	 */
	atomic_store_explicit(&eng->app_in_progress, true, memory_order_relaxed);
	did = progress(eng, PROG_POLL, &clock);
	atomic_store_explicit(&eng->app_in_progress, false,
			      memory_order_relaxed);
	/* The last round's clock (a run lasts microseconds), or a reading. */
	if (!clock)
		clock = urxe_now(eng);
	atomic_store_explicit(&eng->app_progress_ns, clock,
			      memory_order_relaxed);
	return did;
}

int urxe_engine_progress_thread(struct urxe_engine *eng)
{
	return progress(eng, PROG_ENGINE, NULL);
}

static int progress(struct urxe_engine *eng, enum prog_mode mode,
		    uint64_t *clock)
{
	int did;

	if (pthread_mutex_trylock(&eng->lock)) {
		/*
		 * The holder drains the sockets anyway; new work (a post) it
		 * must be told about.  A poller that flagged it each time
		 * would keep the holder looping, away from its own caller.
		 */
		if (mode == PROG_POLL)
			return 0;
		if (mode == PROG_KICK) {
			atomic_store(&eng->work, true);
			return 0;
		}
		/*
		 * The engine thread, woken by input (or a timer) while a
		 * poster holds the lock — and a poster reads no input.  The
		 * socket stays readable until someone does: waking on it again
		 * and again would only spin.  The holder reads it before it
		 * lets go; one more try covers a holder that let go meanwhile
		 * (it looks at the flags after unlocking, we at the lock after
		 * raising them).
		 */
		atomic_store(&eng->input_wanted, true);
		atomic_store(&eng->work, true);
		if (pthread_mutex_trylock(&eng->lock))
			return -EBUSY;
	}
	did = progress_locked(eng, mode, clock);
	pthread_mutex_unlock(&eng->lock);
	/*
	 * Work flagged after our last check, while we were unlocking (a
	 * poller leaves posts to the holder; input it takes when asked).
	 */
	if (((mode != PROG_POLL && atomic_load(&eng->work)) ||
	     atomic_load(&eng->input_wanted)) &&
	    !pthread_mutex_trylock(&eng->lock)) {
		did |= progress_locked(eng, mode, clock);
		pthread_mutex_unlock(&eng->lock);
	}
	/* An earlier deadline: the engine thread's timer must know it. */
	if (atomic_load_explicit(&eng->timer_moved, memory_order_relaxed) &&
	    atomic_exchange(&eng->timer_moved, false) &&
	    !urxe_in_engine_thread(eng))
		urxe_engine_thread_wake(eng);
	return did;
}

/*
 * After a post: send now if the lock is free.  A poster need not call
 * again (ib_write_lat spins on memory after posting), so this does not
 * count as an application driving progress, and leaves input to pollers
 * and the engine thread.
 */
void urxe_engine_kick(struct urxe_eqp *qp)
{
	struct urxe_engine *eng = qp->eng;
	uint64_t last, post, now;

	/* Pushed, then flagged: a holder that clears the flag sees the QP. */
	schedule_push(qp);
	if (!atomic_load_explicit(&eng->work, memory_order_relaxed))
		atomic_store(&eng->work, true);
	/*
	 * A QP streaming to its peer while the application polls: these
	 * packets join the next poll's batch (one GSO send for many posts)
	 * rather than leaving one system call per post.  An idle QP — a
	 * latency test's — sends at once.  "Recently" is since the poll or
	 * the last post, whichever came later: a burst of posts after a poll
	 * waits for the next poll whole, even if a post of it had to send
	 * (a slow system call, under a tracer, would otherwise make every
	 * later post of the burst send alone).  Posts that never end in a
	 * poll leave their packets to the engine thread, which the ACKs of
	 * those in flight wake.
	 */
	if (atomic_load_explicit(&qp->streaming, memory_order_relaxed)) {
		last = atomic_load_explicit(&eng->app_progress_ns,
					    memory_order_relaxed);
		post = atomic_load_explicit(&eng->app_post_ns,
					    memory_order_relaxed);
		now = urxe_now(eng);
		if (last && now - (post > last ? post : last) <
			    URXE_POST_DEFER_NS) {
			atomic_store_explicit(&eng->app_post_ns, now,
					      memory_order_relaxed);
			return;
		}
	}
	progress(eng, PROG_KICK, NULL);
	atomic_store_explicit(&eng->app_post_ns, urxe_now(eng),
			      memory_order_relaxed);
}

void urxe_engine_settle(struct urxe_engine *eng)
{
	pthread_mutex_lock(&eng->lock);
	progress_locked(eng, PROG_KICK, NULL);
	pthread_mutex_unlock(&eng->lock);
}

bool urxe_engine_has_work(struct urxe_engine *eng)
{
	return atomic_load(&eng->work);
}

uint64_t urxe_engine_next_deadline(struct urxe_engine *eng)
{
	return atomic_load_explicit(&eng->deadline_hint, memory_order_relaxed);
}
