// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine object: its creation and destruction, and its counters.
 * Its concerns live in files of their own: the key table (keys.c), the
 * QP table and the effects of state changes (qp_table.c), packet input
 * (input.c), the budget of packets in flight (budget.c), timers
 * (timer.c), and progress with its hand-off protocol (progress.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <urxe/host.h>

#include "engine_int.h"

int urxe_engine_create(const struct urxe_engine_conf *conf,
		       struct urxe_engine **out)
{
	struct urxe_engine *eng;

	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return -ENOMEM;
	eng->budget.window = URXE_WINDOW_PKTS;
	eng->qpt.qps = calloc(URXE_QP_SLOTS, sizeof(*eng->qpt.qps));
	eng->keyt.keys = calloc(URXE_KEY_SLOTS, sizeof(*eng->keyt.keys));
	eng->txb.tx_buf = malloc(URXE_TX_BATCH * sizeof(*eng->txb.tx_buf));
	if (!eng->qpt.qps || !eng->keyt.keys || !eng->txb.tx_buf) {
		free(eng->txb.tx_buf);
		free(eng->qpt.qps);
		free(eng->keyt.keys);
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
	eng->keyt.key_next = 1;
	urxe_keys_seed(eng, conf->key_seed);
	atomic_init(&eng->clk.deadline_hint, UINT64_MAX);
	/* Counters live in the slot's shared record when there is one. */
	eng->ctr.cnt = conf->stats ? conf->stats->counters : eng->ctr.cnt_own;
	eng->ctr.stats = conf->stats;
	/*
	 * A slot freed by one process is the next one's at once: its QPNs
	 * must not be (a peer may still be retransmitting to an old QP).
	 * Each claim of the slot starts its QP numbers elsewhere: 1021 on
	 * from the user's last claim, and users (whose records, and so
	 * generations, are their own) at places of their own.
	 */
	if (conf->stats)
		eng->qpt.qp_next = (conf->stats->generation * 1021u +
				(uint32_t)geteuid() * 7919u) &
			       (URXE_QP_SLOTS - 1);
	urxe_qpstats_publish(eng);
	pthread_mutex_init(&eng->lock, NULL);
	pthread_mutex_init(&eng->qpt.qp_lock, NULL);
	pthread_spin_init(&eng->keyt.key_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&eng->sched.list_lock, PTHREAD_PROCESS_PRIVATE);
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
			if (atomic_load(&eng->ctr.cnt[i]))
				urxe_dbg("slot %u: %s %llu", eng->slot,
					 urxe_counter_names[i],
					 (unsigned long long)atomic_load(&eng->ctr.cnt[i]));
	pthread_mutex_destroy(&eng->lock);
	pthread_mutex_destroy(&eng->qpt.qp_lock);
	pthread_spin_destroy(&eng->keyt.key_lock);
	pthread_spin_destroy(&eng->sched.list_lock);
	urxe_gsi_destroy(eng);
	free(eng->txb.tx_buf);
	free(eng->qpt.live);
	free(eng->mcast.mc);
	free(eng->qpt.xsrqs);
	free(eng->qpt.qps);
	free(eng->keyt.keys);
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
		out[i] = atomic_load_explicit(&eng->ctr.cnt[i],
					      memory_order_relaxed);
}
