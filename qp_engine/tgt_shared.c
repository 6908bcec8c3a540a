// SPDX-License-Identifier: BSD-2-Clause
/*
 * TGT QPs shared across processes (docs/design.md, "XRC across
 * processes"): the responder state lives in struct urxe_tgt_shared, in
 * memory every process of the domain maps.  Whoever handles a request or a
 * modify copies it into its own view of the QP under the shared mutex,
 * works on the view as on any TGT QP, and copies it back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

/* A view of a QP another process hosts: its QPN carries another slot. */
static bool foreign(const struct urxe_eqp *qp)
{
	return qp->qpn >> URXE_QPN_INDEX_BITS != qp->eng->slot;
}

void urxe_engine_tgt_seed(const struct urxe_eqp *qp,
			  struct urxe_tgt_shared *st)
{
	st->attr = qp->attr;
	st->epsn = qp->resp.epsn;
	st->msn = qp->resp.msn;
}

void urxe_tgt_begin(struct urxe_eqp *qp)
{
	struct urxe_tgt_shared *st = qp->shared;
	union ibv_gid sgid = qp->attr.sgid;
	uint32_t n;

	if (!st)
		return;
	if (pthread_mutex_lock(&st->lock) == EOWNERDEAD) {
		/* Its holder died mid-update: the state cannot be trusted. */
		st->broken = 1;
		pthread_mutex_consistent(&st->lock);
	}
	if (st->broken)
		st->attr.state = IBV_QPS_ERR;
	qp->attr = st->attr;
	/* A view answers from its own address (our socket sends it). */
	if (foreign(qp))
		qp->attr.sgid = sgid;
	qp->resp.epsn = st->epsn;
	qp->resp.msn = st->msn;
	qp->resp.nak_seq_sent = st->nak_seq_sent;
	n = st->attr.max_dest_rd_atomic ? st->attr.max_dest_rd_atomic : 1;
	if (n > URXE_TGT_RD_RES)
		n = URXE_TGT_RD_RES;
	if (!qp->resp.rd_res || qp->resp.rd_res_n != n) {
		struct urxe_rd_res *r = realloc(qp->resp.rd_res,
						n * sizeof(*r));

		if (!r) {
			/* No room to answer READs now: they are refused. */
			free(qp->resp.rd_res);
			qp->resp.rd_res = NULL;
			qp->resp.rd_res_n = 0;
			return;
		}
		qp->resp.rd_res = r;
		qp->resp.rd_res_n = n;
	}
	memcpy(qp->resp.rd_res, st->rd_res, n * sizeof(*qp->resp.rd_res));
	qp->resp.rd_res_next = st->rd_res_next % n;
}

void urxe_tgt_end(struct urxe_eqp *qp)
{
	struct urxe_tgt_shared *st = qp->shared;
	union ibv_gid sgid;

	if (!st)
		return;
	sgid = st->attr.sgid;
	st->attr = qp->attr;
	/* Only the host's own address is the QP's. */
	if (foreign(qp))
		st->attr.sgid = sgid;
	st->epsn = qp->resp.epsn;
	st->msn = qp->resp.msn;
	st->nak_seq_sent = qp->resp.nak_seq_sent;
	if (qp->resp.rd_res && qp->resp.rd_res_n) {
		/* At most URXE_TGT_RD_RES answers are kept for replay. */
		uint32_t n = qp->resp.rd_res_n < URXE_TGT_RD_RES ? qp->resp.rd_res_n
							    : URXE_TGT_RD_RES;

		memcpy(st->rd_res, qp->resp.rd_res,
		       n * sizeof(*qp->resp.rd_res));
		st->rd_res_next = qp->resp.rd_res_next % n;
	}
	st->seq++;
	pthread_mutex_unlock(&st->lock);
}
