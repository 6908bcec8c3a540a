// SPDX-License-Identifier: BSD-2-Clause
/*
 * The extended CQ: ibv_create_cq_ex(3) and the polling API of its
 * struct ibv_cq_ex (ibv_start_poll, ibv_next_poll, ibv_end_poll and the
 * ibv_wc_read_* accessors).  It is an ordinary CQ (cq.c) whose
 * completions are taken one at a time into urxe_cq.cur, where the
 * accessors read them; taking one runs the engine when the ring is empty,
 * as ibv_poll_cq does.  Unless the CQ was made single-threaded, a poll
 * holds the CQ's poll lock from a successful start_poll to end_poll, as
 * hardware providers do, so that two pollers never share urxe_cq.cur.
 * It is a mutex, not a spinlock: its holder may be running the engine
 * (system calls) or yielding the core.
 */
#include <errno.h>

#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

/*
 * What a completion of urxe holds (struct ibv_wc's fields, as kernel
 * rxe offers them).  No completion timestamps, wall clock, VLAN, flow tag
 * or tag matching.
 */
#define WC_FLAGS_OK (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
		     IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
		     IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
		     IBV_WC_EX_WITH_DLID_PATH_BITS)
#define CQ_COMP_MASK_OK IBV_CQ_INIT_ATTR_MASK_FLAGS
#define CQ_FLAGS_OK IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static struct urxe_cq *xcq(struct ibv_cq_ex *c)
{
	return to_ucq(ibv_cq_ex_to_cq(c));
}

static const struct ibv_wc *cur(struct ibv_cq_ex *c)
{
	return &xcq(c)->cur;
}

/* Takes the next completion into cur: 0, or -ENOENT when there is none. */
static int take(struct urxe_cq *cq)
{
	int n = urxe_cq_poll(ibv_cq_ex_to_cq(&cq->ibv), 1, &cq->cur);

	if (n < 0)
		return n;
	if (!n)
		return -ENOENT;
	cq->ibv.wr_id = cq->cur.wr_id;
	cq->ibv.status = cq->cur.status;
	return 0;
}

int urxe_cq_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct urxe_cq *cq = xcq(c);
	int rc;

	if (attr && attr->comp_mask)
		return -EINVAL;
	if (cq->poll_locked)
		pthread_mutex_lock(&cq->poll_lock);
	rc = take(cq);
	/* ibv_create_cq_ex(3): no end_poll follows a failed start_poll. */
	if (rc && cq->poll_locked)
		pthread_mutex_unlock(&cq->poll_lock);
	return rc;
}

int urxe_cq_next_poll(struct ibv_cq_ex *c)
{
	return take(xcq(c));
}

static void cq_end_poll(struct ibv_cq_ex *c)
{
	struct urxe_cq *cq = xcq(c);

	if (cq->poll_locked)
		pthread_mutex_unlock(&cq->poll_lock);
}

static enum ibv_wc_opcode rd_opcode(struct ibv_cq_ex *c)
{
	return cur(c)->opcode;
}

static uint32_t rd_vendor_err(struct ibv_cq_ex *c)
{
	return cur(c)->vendor_err;
}

static uint32_t rd_byte_len(struct ibv_cq_ex *c)
{
	return cur(c)->byte_len;
}

/* imm_data and invalidated_rkey share the field (ibv_wc_read_invalidated_rkey). */
static __be32 rd_imm_data(struct ibv_cq_ex *c)
{
	return cur(c)->imm_data;
}

static uint32_t rd_qp_num(struct ibv_cq_ex *c)
{
	return cur(c)->qp_num;
}

static uint32_t rd_src_qp(struct ibv_cq_ex *c)
{
	return cur(c)->src_qp;
}

static unsigned int rd_wc_flags(struct ibv_cq_ex *c)
{
	return cur(c)->wc_flags;
}

static uint32_t rd_slid(struct ibv_cq_ex *c)
{
	return cur(c)->slid;
}

static uint8_t rd_sl(struct ibv_cq_ex *c)
{
	return cur(c)->sl;
}

static uint8_t rd_dlid_path_bits(struct ibv_cq_ex *c)
{
	return cur(c)->dlid_path_bits;
}

static int check_attr(const struct ibv_cq_init_attr_ex *a)
{
	if (a->comp_mask & ~(uint32_t)CQ_COMP_MASK_OK) {
		urxe_dbg("ibv_create_cq_ex: comp_mask 0x%x not supported",
			 a->comp_mask);
		return -EOPNOTSUPP;
	}
	if (a->wc_flags & ~(uint64_t)WC_FLAGS_OK) {
		urxe_dbg("ibv_create_cq_ex: wc_flags 0x%llx not supported",
			 (unsigned long long)(a->wc_flags & ~(uint64_t)WC_FLAGS_OK));
		return -EOPNOTSUPP;
	}
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)CQ_FLAGS_OK)) {
		urxe_dbg("ibv_create_cq_ex: flags 0x%x not supported", a->flags);
		return -EOPNOTSUPP;
	}
	if (a->cqe > INT32_MAX || a->comp_vector > INT32_MAX)
		return -EINVAL;
	return 0;
}

int urxe_cq_create_ex(struct urxe_dev *dev, struct ibv_context *ctx,
		      const struct ibv_cq_init_attr_ex *a,
		      struct urxe_evpipe *async, struct ibv_cq_ex **out)
{
	struct ibv_cq *ibcq;
	struct urxe_cq *cq;
	int rc;

	if (!a)
		return -EINVAL;
	rc = check_attr(a);
	if (rc)
		return rc;
	rc = urxe_cq_create(dev, ctx, (int)a->cqe, a->cq_context, a->channel,
			    (int)a->comp_vector, async, &ibcq);
	if (rc)
		return rc;
	cq = to_ucq(ibcq);
	cq->poll_locked = !((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
			    (a->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED));
	cq->ibv.end_poll = cq_end_poll;
	cq->ibv.read_opcode = rd_opcode;
	cq->ibv.read_vendor_err = rd_vendor_err;
	cq->ibv.read_byte_len = rd_byte_len;
	cq->ibv.read_imm_data = rd_imm_data;
	cq->ibv.read_qp_num = rd_qp_num;
	cq->ibv.read_src_qp = rd_src_qp;
	cq->ibv.read_wc_flags = rd_wc_flags;
	cq->ibv.read_slid = rd_slid;
	cq->ibv.read_sl = rd_sl;
	cq->ibv.read_dlid_path_bits = rd_dlid_path_bits;
	*out = &cq->ibv;
	return 0;
}
