// SPDX-License-Identifier: BSD-2-Clause
/*
 * QP1, the general services interface, as a port rather than a QP: the
 * CM MADs of RDMA CM (librdmacm, rdmacm/) arrive and leave here.
 *
 * What arrives for DQPN 1 is checked as kernel rxe checks its GSI QP's
 * packets (UD SEND_ONLY, the partition's P_Key, Q_Key 0x80010000) and
 * must be one 256-byte MAD; it is copied into a small ring and the
 * reader's eventfd written.  Nothing is parsed here: the CM's state
 * machines run in librdmacm's thread, which reads the ring.  A full ring
 * drops (and counts) what does not fit: the CM retransmits.  Sending
 * builds a UD SEND_ONLY to DQPN 1 from SrcQP 1 and flushes it at once.
 * Before urxe_engine_gsi_open() (no RDMA CM in the process) QP1's
 * packets are dropped as for a QP that does not exist.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/wire.h>

#include "engine_int.h"

#define GSI_SPORT 0xc001	/* a UDP source port, as for any UD QP */
#define GSI_OPCODE (URXE_TR_UD | URXE_OP_SEND_ONLY)

int urxe_engine_gsi_open(struct urxe_engine *eng, int notify_fd)
{
	struct urxe_gsi *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->notify_fd = notify_fd;
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_lock(&eng->lock);
	if (eng->qp1.gsi) {
		pthread_mutex_unlock(&eng->lock);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -EBUSY;
	}
	eng->qp1.gsi = g;
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

static void gsi_free(struct urxe_gsi *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void urxe_engine_gsi_close(struct urxe_engine *eng)
{
	struct urxe_gsi *g;

	pthread_mutex_lock(&eng->lock);
	g = eng->qp1.gsi;
	eng->qp1.gsi = NULL;
	pthread_mutex_unlock(&eng->lock);
	gsi_free(g);
}

/*
 * The engine goes: nobody runs in it any more (its thread stopped, or this
 * is a fork child, where the progress lock may be held for ever by a
 * thread of the parent's that fork() did not copy).
 */
void urxe_gsi_destroy(struct urxe_engine *eng)
{
	gsi_free(eng->qp1.gsi);
	eng->qp1.gsi = NULL;
}

/* Progress lock held. */
void urxe_gsi_input(struct urxe_engine *eng, const struct urxe_bth *bth,
		    const uint8_t *roce, uint32_t paylen,
		    const struct urxe_rx_meta *meta)
{
	struct urxe_gsi *g = eng->qp1.gsi;
	struct urxe_gsi_mad *m;
	const uint64_t one = 1;
	bool wake;

	if (!g) {
		urxe_count(eng, URXE_CNT_DROPPED_NO_QP, 1);
		return;
	}
	if (bth->opcode != GSI_OPCODE ||
	    bth->pkey != URXE_GSI_PKEY || paylen != URXE_MAD_LEN ||
	    urxe_get32(roce + URXE_BTH_LEN) != URXE_GSI_QKEY) {
		urxe_count(eng, URXE_CNT_DROPPED, 1);
		return;
	}
	pthread_mutex_lock(&g->lock);
	if (g->count == URXE_GSI_RING) {
		g->dropped++;
		pthread_mutex_unlock(&g->lock);
		urxe_count(eng, URXE_CNT_DROPPED, 1);
		return;
	}
	m = &g->ring[(g->head + g->count) % URXE_GSI_RING];
	m->sgid = meta->sgid;
	m->dgid = meta->dgid;
	m->sport = meta->sport;
	m->tos = meta->tos;
	m->ttl = meta->ttl;
	m->pkey = bth->pkey;
	m->src_qp = urxe_get24(roce + URXE_BTH_LEN + 5);
	memcpy(m->mad, roce + URXE_BTH_LEN + URXE_DETH_LEN, URXE_MAD_LEN);
	wake = !g->count++;
	pthread_mutex_unlock(&g->lock);
	if (wake && write(g->notify_fd, &one, sizeof(one)) < 0)
		urxe_dbg("slot %u: QP1: cannot wake the CM: %s", eng->slot,
			 strerror(errno));
}

int urxe_engine_gsi_recv(struct urxe_engine *eng, struct urxe_gsi_mad *out)
{
	struct urxe_gsi *g;
	int got = 0;

	/* The ring outlives nothing: open and close are the reader's. */
	g = eng->qp1.gsi;
	if (!g)
		return -ENOTCONN;
	pthread_mutex_lock(&g->lock);
	if (g->count) {
		*out = g->ring[g->head];
		g->head = (g->head + 1) % URXE_GSI_RING;
		g->count--;
		got = 1;
	}
	pthread_mutex_unlock(&g->lock);
	return got;
}

int urxe_engine_gsi_send(struct urxe_engine *eng, const union ibv_gid *sgid,
			 const union ibv_gid *dgid, uint8_t tclass,
			 const uint8_t mad[URXE_MAD_LEN])
{
	const struct urxe_opinfo *oi = urxe_opinfo(GSI_OPCODE);
	struct urxe_tx_path path = {
		.dgid = dgid, .sgid = sgid, .sport = GSI_SPORT,
		.tclass = tclass, .hop_limit = 64,
	};
	struct urxe_bth bth = {
		.opcode = GSI_OPCODE, .pkey = URXE_GSI_PKEY,
		.dqpn = URXE_GSI_QPN,
	};
	uint8_t *buf;

	pthread_mutex_lock(&eng->lock);
	bth.psn = eng->qp1.gsi_psn++ & URXE_PSN_MASK;
	buf = urxe_tx_begin(eng, &bth);
	urxe_deth_put(buf + URXE_BTH_LEN, URXE_GSI_QKEY, URXE_GSI_QPN);
	memcpy(buf + oi->hdr_len, mad, URXE_MAD_LEN);
	urxe_tx_commit(eng, &path, oi, URXE_MAD_LEN);
	urxe_tx_flush(eng);
	pthread_mutex_unlock(&eng->lock);
	return 0;
}
