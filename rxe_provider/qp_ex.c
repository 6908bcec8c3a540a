// SPDX-License-Identifier: BSD-2-Clause
/*
 * The extended QP: ibv_create_qp_ex(3) and the ibv_wr_*(3) family of its
 * struct ibv_qp_ex.  A batch is built in the send ring itself, between
 * wr_start (which takes the send queue's lock: the man page's per-QP
 * critical section) and wr_complete (which publishes the producer index
 * once and kicks the engine) or wr_abort (which publishes nothing).
 *
 * Each builder (wr_send, wr_rdma_write, ...) opens a work request in the
 * batch's staging struct ibv_send_wr; the setters after it fill it in;
 * the next builder, or wr_complete, closes it: checked and written into
 * the next slot by the same code as ibv_post_send (qp_post.c).  The
 * calls return nothing, so the first failure is kept and reported by
 * wr_complete, which then discards the whole batch (ibv_wr_post(3)).
 * Inline data is copied at the setter, as the man page promises.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

/* What each transport can do (IBA 9.4; qp_post.c's opcode_ok). */
#define OPS_UD (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define OPS_UC (OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | \
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_BIND_MW | \
		IBV_QP_EX_WITH_LOCAL_INV)
#define OPS_RC (OPS_UC | IBV_QP_EX_WITH_RDMA_READ | \
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
		IBV_QP_EX_WITH_SEND_WITH_INV)
/*
 * Not (yet): TSO (raw packet), ATOMIC_WRITE and FLUSH — creating with them fails with EOPNOTSUPP, and
 * their builders make wr_complete fail with EOPNOTSUPP.
 */

#define QPX_COMP_MASK (IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | \
		       IBV_QP_INIT_ATTR_CREATE_FLAGS | \
		       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

struct urxe_wr_batch {
	uint64_t ops;			/* send_ops_flags granted */
	uint32_t start;			/* producer index at wr_start */
	uint32_t prod;			/* next slot to write */
	int err;			/* first failure, negative errno */
	bool open;			/* @wr is being built */
	struct ibv_send_wr wr;
	struct ibv_sge sge[URXE_MAX_SGE];
	uint8_t inl[URXE_MAX_INLINE];
};

static struct urxe_qp *xqp(struct ibv_qp_ex *x)
{
	return to_uqp(&x->qp_base);
}

static void fail(struct urxe_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Closes the request being built: into the ring, or the batch fails. */
static void close_wr(struct urxe_qp *qp, struct urxe_wr_batch *b)
{
	int rc;

	if (!b->open)
		return;
	b->open = false;
	if (b->err)
		return;
	rc = urxe_qp_send_fill(qp, &b->wr, b->prod);
	if (rc)
		fail(b, rc);
	else
		b->prod++;
}

/* A builder: closes the previous request and opens one of @op. */
static struct ibv_send_wr *open_wr(struct ibv_qp_ex *x, enum ibv_wr_opcode op,
				   uint64_t flag)
{
	struct urxe_qp *qp = xqp(x);
	struct urxe_wr_batch *b = qp->wrb;

	close_wr(qp, b);
	if (!(b->ops & flag)) {
		urxe_dbg("QP 0x%06x: opcode %d not among its send_ops_flags",
			 qp->e->qpn, op);
		fail(b, -EINVAL);
	}
	if (b->err)
		return NULL;
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.wr_id = x->wr_id;
	/* Inline is what the inline setters say, not a flag. */
	b->wr.send_flags = x->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	b->wr.opcode = op;
	b->wr.sg_list = b->sge;
	b->open = true;
	return &b->wr;
}

/* A builder urxe cannot do: the batch fails with EOPNOTSUPP. */
static void refuse(struct ibv_qp_ex *x, const char *what)
{
	struct urxe_qp *qp = xqp(x);

	close_wr(qp, qp->wrb);
	urxe_dbg("QP 0x%06x: %s is not supported", qp->e->qpn, what);
	fail(qp->wrb, -EOPNOTSUPP);
}

/* A setter: the request it applies to, or NULL (the batch fails). */
static struct ibv_send_wr *cur_wr(struct ibv_qp_ex *x)
{
	struct urxe_wr_batch *b = xqp(x)->wrb;

	if (!b->open) {
		fail(b, -EINVAL);	/* a setter without a builder */
		return NULL;
	}
	return b->err ? NULL : &b->wr;
}

/* ---- the critical section ---- */

static void qpx_start(struct ibv_qp_ex *x)
{
	struct urxe_qp *qp = xqp(x);
	struct urxe_wr_batch *b = qp->wrb;

	b->start = urxe_engine_sq_begin(qp->eobj);
	b->err = 0;
	b->open = false;
	b->prod = b->start;
}

int urxe_qpx_complete(struct ibv_qp_ex *x)
{
	struct urxe_qp *qp = xqp(x);
	struct urxe_wr_batch *b = qp->wrb;
	bool posted;
	int rc;

	close_wr(qp, b);
	rc = b->err;
	posted = b->prod != b->start;
	/* As ibv_post_send: RESET, INIT and RTR take no work (kernel rxe). */
	if (!rc && posted && !urxe_qp_send_ready(qp))
		rc = -EINVAL;
	if (!rc && posted)
		urxe_engine_sq_publish(qp->eobj, b->prod);
	urxe_engine_sq_end(qp->eobj);
	if (!rc && posted)
		urxe_engine_kick(qp->eobj);
	return rc;
}

static void qpx_abort(struct ibv_qp_ex *x)
{
	struct urxe_qp *qp = xqp(x);

	qp->wrb->open = false;
	urxe_engine_sq_end(qp->eobj);
}

/* ---- builders ---- */

static void qpx_send(struct ibv_qp_ex *x)
{
	open_wr(x, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct ibv_send_wr *wr = open_wr(x, IBV_WR_SEND_WITH_IMM,
					 IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void qpx_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct ibv_send_wr *wr = open_wr(x, IBV_WR_SEND_WITH_INV,
					 IBV_QP_EX_WITH_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void set_rdma(struct ibv_send_wr *wr, uint32_t rkey, uint64_t addr)
{
	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = addr;
	}
}

static void qpx_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	set_rdma(open_wr(x, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE),
		 rkey, addr);
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey,
			       uint64_t addr, __be32 imm)
{
	struct ibv_send_wr *wr = open_wr(x, IBV_WR_RDMA_WRITE_WITH_IMM,
					 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	set_rdma(wr, rkey, addr);
	if (wr)
		wr->imm_data = imm;
}

static void qpx_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	set_rdma(open_wr(x, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ),
		 rkey, addr);
}

static void set_atomic(struct ibv_send_wr *wr, uint32_t rkey, uint64_t addr,
		       uint64_t compare_add, uint64_t swap)
{
	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = addr;
		wr->wr.atomic.compare_add = compare_add;
		wr->wr.atomic.swap = swap;
	}
}

static void qpx_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
			uint64_t compare, uint64_t swap)
{
	set_atomic(open_wr(x, IBV_WR_ATOMIC_CMP_AND_SWP,
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP),
		   rkey, addr, compare, swap);
}

static void qpx_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
			  uint64_t add)
{
	set_atomic(open_wr(x, IBV_WR_ATOMIC_FETCH_AND_ADD,
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD),
		   rkey, addr, add, 0);
}

/* A window of either type; qp_post.c checks it as for ibv_post_send. */
static void qpx_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = open_wr(x, IBV_WR_BIND_MW,
					 IBV_QP_EX_WITH_BIND_MW);

	if (!wr)
		return;
	if (!info) {
		fail(xqp(x)->wrb, -EINVAL);
		return;
	}
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

static void qpx_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct ibv_send_wr *wr = open_wr(x, IBV_WR_LOCAL_INV,
					 IBV_QP_EX_WITH_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void qpx_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz,
			 uint16_t mss)
{
	(void)hdr; (void)hdr_sz; (void)mss;
	refuse(x, "ibv_wr_send_tso");
}

static void qpx_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
			     const void *data)
{
	(void)rkey; (void)addr; (void)data;
	refuse(x, "ibv_wr_atomic_write");
}

/* ---- setters ---- */

static void qpx_set_sge_list(struct ibv_qp_ex *x, size_t n,
			     const struct ibv_sge *sg)
{
	struct ibv_send_wr *wr = cur_wr(x);

	if (!wr)
		return;
	if (n > URXE_MAX_SGE || (n && !sg)) {
		fail(xqp(x)->wrb, -EINVAL);
		return;
	}
	if (n)
		memcpy(xqp(x)->wrb->sge, sg, n * sizeof(*sg));
	wr->num_sge = (int)n;
	wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr,
			uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qpx_set_sge_list(x, 1, &sge);
}

static void qpx_set_inline_list(struct ibv_qp_ex *x, size_t n,
				const struct ibv_data_buf *bufs)
{
	struct ibv_send_wr *wr = cur_wr(x);
	struct urxe_wr_batch *b = xqp(x)->wrb;
	size_t i, len = 0;

	if (!wr)
		return;
	for (i = 0; i < n; i++) {
		if (bufs[i].length > sizeof(b->inl) - len) {
			fail(b, -EINVAL);	/* more than any QP's inline size */
			return;
		}
		memcpy(b->inl + len, bufs[i].addr, bufs[i].length);
		len += bufs[i].length;
	}
	/* qp_post.c checks it against the QP's own max_inline_data. */
	b->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)b->inl,
				      .length = (uint32_t)len };
	wr->num_sge = len ? 1 : 0;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void qpx_set_inline(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qpx_set_inline_list(x, 1, &buf);
}

static void qpx_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah,
			    uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = cur_wr(x);

	/* Only UD requests have a destination of their own. */
	if (!wr || x->qp_base.qp_type != IBV_QPT_UD)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/* The remote XRC SRQ of an XRC_SEND QP's request; others have none. */
static void qpx_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t srqn)
{
	struct ibv_send_wr *wr = cur_wr(x);

	if (!wr || x->qp_base.qp_type != IBV_QPT_XRC_SEND)
		return;
	wr->qp_type.xrc.remote_srqn = srqn;
}

static void install(struct ibv_qp_ex *x)
{
	x->wr_start = qpx_start;
	x->wr_complete = urxe_qpx_complete;
	x->wr_abort = qpx_abort;
	x->wr_send = qpx_send;
	x->wr_send_imm = qpx_send_imm;
	x->wr_send_inv = qpx_send_inv;
	x->wr_send_tso = qpx_send_tso;
	x->wr_rdma_write = qpx_rdma_write;
	x->wr_rdma_write_imm = qpx_rdma_write_imm;
	x->wr_rdma_read = qpx_rdma_read;
	x->wr_atomic_cmp_swp = qpx_cmp_swp;
	x->wr_atomic_fetch_add = qpx_fetch_add;
	x->wr_atomic_write = qpx_atomic_write;
	x->wr_bind_mw = qpx_bind_mw;
	x->wr_local_inv = qpx_local_inv;
	x->wr_set_sge = qpx_set_sge;
	x->wr_set_sge_list = qpx_set_sge_list;
	x->wr_set_inline_data = qpx_set_inline;
	x->wr_set_inline_data_list = qpx_set_inline_list;
	x->wr_set_ud_addr = qpx_set_ud_addr;
	x->wr_set_xrc_srqn = qpx_set_xrc_srqn;
}

/* ---- creation ---- */

static uint64_t ops_of(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:		/* an RC requester (IBA A14.4) */
		return OPS_RC;
	case IBV_QPT_UC:
		return OPS_UC;
	case IBV_QPT_UD:
		return OPS_UD;
	default:
		return 0;
	}
}

static int check_init_ex(const struct ibv_qp_init_attr_ex *a)
{
	if (a->comp_mask & ~(uint32_t)QPX_COMP_MASK) {
		urxe_dbg("ibv_create_qp_ex: comp_mask 0x%x not supported",
			 a->comp_mask & ~(uint32_t)QPX_COMP_MASK);
		return -EOPNOTSUPP;
	}
	/* A TGT QP belongs to an XRC domain; the others to a PD. */
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd) {
			urxe_dbg("ibv_create_qp_ex: an XRC_RECV QP needs comp_mask IBV_QP_INIT_ATTR_XRCD and an XRCD");
			return -EINVAL;
		}
		if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
			urxe_dbg("ibv_create_qp_ex: an XRC_RECV QP has no send queue for send_ops_flags");
			return -EOPNOTSUPP;
		}
	} else if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd) {
		urxe_dbg("ibv_create_qp_ex: QP type %d needs comp_mask IBV_QP_INIT_ATTR_PD and a PD",
			 a->qp_type);
		return -EINVAL;
	}
	/* No creation flag (loopback blocking, scatter FCS, ...) exists here. */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) {
		urxe_dbg("ibv_create_qp_ex: create_flags 0x%x not supported",
			 a->create_flags);
		return -EOPNOTSUPP;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~ops_of(a->qp_type))) {
		urxe_dbg("ibv_create_qp_ex: send_ops_flags 0x%llx not supported for QP type %d",
			 (unsigned long long)(a->send_ops_flags & ~ops_of(a->qp_type)),
			 a->qp_type);
		return -EOPNOTSUPP;
	}
	return 0;
}

int urxe_qp_create_ex(struct urxe_dev *dev, struct ibv_qp_init_attr_ex *a,
		      struct urxe_evpipe *async, struct ibv_qp **out)
{
	struct ibv_qp_init_attr ia;
	struct urxe_wr_batch *b = NULL;
	struct ibv_xrcd *xrcd = NULL;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_qp *ibqp;
	int rc;

	if (!a)
		return -EINVAL;
	rc = check_init_ex(a);
	if (rc)
		return rc;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->ops = a->send_ops_flags;
	}
	ia = (struct ibv_qp_init_attr){
		.qp_context = a->qp_context,
		.send_cq = a->send_cq,
		.recv_cq = a->recv_cq,
		.srq = a->srq,
		.cap = a->cap,
		.qp_type = a->qp_type,
		.sq_sig_all = a->sq_sig_all,
	};
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		xrcd = a->xrcd;
		ctx = xrcd->context;
	} else {
		pd = a->pd;
		ctx = pd->context;
	}
	rc = urxe_qp_create_in(dev, ctx, pd, xrcd, &ia, async, &ibqp);
	if (rc) {
		free(b);
		return rc;
	}
	a->cap = ia.cap;
	if (b) {
		/* Nobody can use the QP before it is returned. */
		to_uqp(ibqp)->wrb = b;
		install(&to_uqp(ibqp)->vqp);
	}
	*out = ibqp;
	return 0;
}

struct ibv_qp_ex *urxe_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct urxe_qp *qp = to_uqp(ibqp);

	return qp->wrb ? &qp->vqp : NULL;
}

void urxe_qpx_fini(struct urxe_qp *qp)
{
	free(qp->wrb);
	qp->wrb = NULL;
}
