// SPDX-License-Identifier: BSD-2-Clause
/*
 * Posting work: ibv_post_send(3) and ibv_post_recv(3), reached through
 * ibv_context.ops.  Each work request is checked, then written into the
 * next free slot of the send queue and published, through the engine's
 * posting API (urxe_engine_sq_*: the ring's lock and indices are the
 * engine's); receives go to urxe_engine_rq_post whole.  The first bad
 * request stops the list and is returned in *bad; those before it stay
 * posted.  After the list the engine is kicked: it sends at once when no
 * one else is running it.
 */
#include <errno.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"

#define QPN_MASK 0xffffffu

static enum ibv_qp_state qp_state(struct urxe_qp *qp)
{
	return __atomic_load_n(&qp->e->attr.state, __ATOMIC_ACQUIRE);
}

/* ---- send ---- */

/* RC, and XRC INI QPs, which are RC requesters (IBA A14.4). */
static bool rc_like(enum ibv_qp_type type)
{
	return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
}

/* Operations per transport (IBA 9.4, Table 38 rows per service). */
static bool opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type != IBV_QPT_UD;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return rc_like(type);
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return rc_like(type) || type == IBV_QPT_UC; /* kernel rxe */
	default:
		return false;	/* TSO, ATOMIC_WRITE, FLUSH: not yet */
	}
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* Inline data carries what goes out: sends and writes. */
static bool may_inline(enum ibv_wr_opcode op)
{
	return op != IBV_WR_RDMA_READ && !is_atomic(op);
}

/*
 * A bind names a window of this context, and a region unless it unbinds
 * (length 0); it carries no data (rdma-core's rxe checks the same).  The
 * rest is checked when it runs: failures complete with
 * IBV_WC_MW_BIND_ERR.
 */
static int check_bind_wr(struct urxe_qp *qp, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	if (wr->num_sge || !wr->bind_mw.mw ||
	    wr->bind_mw.mw->context != qp->vqp.qp_base.context ||
	    (b->length && !b->mr))
		return -EINVAL;
	return 0;
}

static int check_send_wr(struct urxe_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t *len)
{
	const struct ibv_qp_cap *cap = &qp->init.cap;	/* as granted */

	if (!opcode_ok(qp->e->type, wr->opcode))
		return -EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > cap->max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	*len = urxe_sge_len(wr->sg_list, wr->num_sge);
	if (*len > URXE_MAX_MSG_SZ)
		return -EINVAL;
	/* IBA 9.4.5: one 8-byte local buffer receives the original value. */
	if (is_atomic(wr->opcode) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return -EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (!may_inline(wr->opcode) || *len > cap->max_inline_data))
		return -EINVAL;
	if (qp->e->type == IBV_QPT_UD && !wr->wr.ud.ah)
		return -EINVAL;
	return wr->opcode == IBV_WR_BIND_MW ? check_bind_wr(qp, wr) : 0;
}

static void fill_ud(struct urxe_qp *qp, struct urxe_send_wqe *w,
		    const struct ibv_send_wr *wr)
{
	const struct urxe_ah *ah = to_uah(wr->wr.ud.ah);
	uint32_t qkey = wr->wr.ud.remote_qkey;

	w->dgid = ah->dgid;
	w->sgid = ah->sgid;
	w->tclass = ah->tclass;
	w->hop_limit = ah->hop_limit ? ah->hop_limit : 64;
	w->remote_qpn = wr->wr.ud.remote_qpn & QPN_MASK;
	/* IBA 10.2.5: a Q_Key with the high bit set means the QP's own. */
	if (qkey & 0x80000000u)
		qkey = __atomic_load_n(&qp->e->attr.qkey, __ATOMIC_RELAXED);
	w->remote_qkey = qkey;
}

/* The window by its handle (its rkey changes with each bind). */
static void fill_bind(struct urxe_send_wqe *w, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	w->imm_inv = to_umw(wr->bind_mw.mw)->mem.lkey;
	w->rkey = wr->bind_mw.rkey;
	w->remote_addr = b->addr;
	w->compare_add = b->length;
	w->mr_lkey = b->length ? b->mr->lkey : 0;
	w->mw_access = b->mw_access_flags;
	w->length = 0;
}

static void fill_send(struct urxe_qp *qp, struct urxe_send_wqe *w,
		      const struct ibv_send_wr *wr, uint32_t len)
{
	int i;

	*w = (struct urxe_send_wqe){
		.wr_id = wr->wr_id,
		.opcode = wr->opcode,
		.send_flags = wr->send_flags,
		.length = len,
		.state = URXE_WQE_POSTED,
		.status = IBV_WC_SUCCESS,
	};
	/* XRC: the SRQ the message goes to, sent as XRCETH (IBA A14.3.1). */
	if (qp->e->type == IBV_QPT_XRC_SEND)
		w->remote_qpn = wr->qp_type.xrc.remote_srqn & QPN_MASK;
	if (wr->opcode == IBV_WR_SEND_WITH_INV ||
	    wr->opcode == IBV_WR_LOCAL_INV)
		w->imm_inv = wr->invalidate_rkey;
	else
		w->imm_inv = (uint32_t)wr->imm_data;	/* stays in wire order */
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		w->length = 0;		/* a local operation: no data */
		return;
	}
	if (wr->opcode == IBV_WR_BIND_MW) {
		fill_bind(w, wr);
		return;
	}
	if (is_atomic(wr->opcode)) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (qp->e->type == IBV_QPT_UD) {
		fill_ud(qp, w, wr);
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *p = (uint8_t *)w->sge;

		/* The data is copied now: the buffers are free on return. */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		return;
	}
	w->num_sge = (uint32_t)wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		w->sge[i] = (struct urxe_sge){
			.addr = wr->sg_list[i].addr,
			.length = wr->sg_list[i].length,
			.lkey = wr->sg_list[i].lkey,
		};
}

/*
 * Posting is allowed from RTS and SQD (the engine holds new work in SQD),
 * and in SQE/ERR, where the engine completes it with IBV_WC_WR_FLUSH_ERR;
 * RESET, INIT and RTR refuse it, as kernel rxe does.
 */
static bool send_state_ok(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE ||
	       s == IBV_QPS_ERR;
}

bool urxe_qp_send_ready(struct urxe_qp *qp)
{
	return send_state_ok(qp_state(qp));
}

int urxe_qp_send_fill(struct urxe_qp *qp, const struct ibv_send_wr *wr,
		      uint32_t prod)
{
	struct urxe_send_wqe *w = NULL;
	uint64_t len;
	int rc;

	rc = check_send_wr(qp, wr, &len);
	if (!rc && !(w = urxe_engine_sq_slot(qp->eobj, prod)))
		rc = -ENOMEM;
	if (!rc)
		fill_send(qp, w, wr, (uint32_t)len);
	return rc;
}

int urxe_qp_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad)
{
	struct urxe_qp *qp = to_uqp(ibqp);
	unsigned int posted = 0;
	uint32_t prod;
	int rc = 0;

	if (ibqp->qp_type == IBV_QPT_XRC_RECV) {
		urxe_dbg("QP 0x%06x: an XRC TGT QP has no send queue: post on the XRC_SEND QP",
			 ibqp->qp_num);
		*bad = wr;
		return -EINVAL;
	}
	if (!send_state_ok(qp_state(qp))) {
		*bad = wr;
		return -EINVAL;
	}
	prod = urxe_engine_sq_begin(qp->eobj);
	for (; wr; wr = wr->next, prod++, posted++) {
		rc = urxe_qp_send_fill(qp, wr, prod);
		if (rc) {
			*bad = wr;
			break;
		}
		urxe_engine_sq_publish(qp->eobj, prod + 1);
	}
	urxe_engine_sq_end(qp->eobj);
	if (posted)
		urxe_engine_kick(qp->eobj);
	return rc;
}

/* ---- receive ---- */

int urxe_qp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	struct urxe_qp *qp = to_uqp(ibqp);
	enum ibv_qp_state s;
	unsigned int posted;
	int rc;

	/* XRC QPs have no receive queue: receives go to XRC SRQs. */
	if (ibqp->qp_type == IBV_QPT_XRC_SEND ||
	    ibqp->qp_type == IBV_QPT_XRC_RECV) {
		urxe_dbg("QP 0x%06x: an XRC QP has no receive queue: post to the XRC SRQ (ibv_post_srq_recv)",
			 ibqp->qp_num);
		*bad = wr;
		return -EINVAL;
	}
	s = qp_state(qp);

	/* Receives may wait from INIT on (IBA 10.3.1); SRQ QPs use the SRQ. */
	if (s == IBV_QPS_RESET || ibqp->srq) {
		*bad = wr;
		return -EINVAL;
	}
	rc = urxe_engine_rq_post(qp->eobj, wr, bad, &posted);
	/* In ERR the engine flushes what was just posted. */
	if (posted && s == IBV_QPS_ERR)
		urxe_engine_kick(qp->eobj);
	return rc;
}
