// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC (IBA annex A14) in the transport engine, driven deterministically:
 * two engines in one thread, a fake clock and a "wire" that is a queue
 * (engine_wire.h, with loss, and a hook that rewrites a packet).  An INI
 * QP on one engine sends to a TGT QP on the other; each request's XRCETH
 * names one of the target's XRC SRQs, whose WQEs, PD and CQ serve it.
 * SEND, WRITE (+IMM), READ and atomics move real bytes; an SRQ of another
 * domain or no SRQ at all is a remote access error, an empty SRQ an RNR
 * NAK, a lost packet a resend; the bytes on the wire carry XRC opcodes,
 * XRCETH in requests only, and pass the project's frame validator.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/icrc.h>
#include <urxe/wire.h>

#include "engine_wire.h"
#include "testutil.h"

#define MTU 1024
#define BUFSZ (1u << 20)
#define XRCD_A 0x1111
#define XRCD_B 0x2222
#define NSRQ 3			/* 0, 1: domain A; 2: domain B */

struct node {
	struct urxe_engine *eng;
	union ibv_gid gid;
	struct urxe_eqp qp;
	struct urxe_mem mem;
	uint8_t *buf;
};

/* node 0: the INI QP (PD 5); node 1: the TGT QP, its SRQs' memory (PD 7). */
static struct node ini, tgt;
static struct urxe_cq_ring ini_cq;
static struct urxe_mem other_mem;	/* at the target, PD 9 */
static uint8_t *other_buf;

struct xsrq {
	struct urxe_esrq s;
	struct urxe_cq_ring cq;
	bool added;
};

static struct xsrq srqs[NSRQ];
static enum ibv_event_type events[8];
static unsigned int nevents;

static void node_init(struct node *nd, unsigned int slot, uint32_t pd)
{
	memset(nd, 0, sizeof(*nd));
	wire_gid_v4(&nd->gid, 198, 18, 0, (uint8_t)(slot + 1));
	nd->eng = wire_engine(slot, &nd->gid, NULL);
	nd->buf = calloc(1, BUFSZ);
	ck_assert_ptr_nonnull(nd->buf);
	wire_mem_add(nd->eng, &nd->mem, nd->buf, BUFSZ, pd, WIRE_ACCESS_ALL);
}

static void on_event(struct urxe_eqp *qp, enum ibv_event_type ev)
{
	ck_assert_ptr_eq(qp, &tgt.qp);
	ck_assert_uint_lt(nevents, 8);
	events[nevents++] = ev;
}

static void srq_init(struct xsrq *x, uint64_t xrcd, uint32_t max_sge)
{
	memset(x, 0, sizeof(*x));
	ck_assert_int_eq(urxe_wq_init(&x->s.rq, 16, max_sge, 0,
				      sizeof(struct urxe_recv_wqe)), 0);
	ck_assert_int_eq(urxe_cq_ring_init(&x->cq, 64), 0);
	x->s.pd = 7;
	x->s.xrcd = xrcd;
	x->s.cq = &x->cq;
	ck_assert_int_eq(urxe_engine_xsrq_add(tgt.eng, &x->s), 0);
	ck_assert_ptr_eq(x->s.eng, tgt.eng);
	x->added = true;
}

static void srq_fini(struct xsrq *x)
{
	if (x->added)
		urxe_engine_xsrq_remove(tgt.eng, &x->s);
	urxe_wq_fini(&x->s.rq);
	urxe_cq_ring_fini(&x->cq);
}

static void connect_qps(void)
{
	struct urxe_qp_attr at;
	int mask = IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_SQ_PSN |
		   IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_AV;

	/* INI: a requester only, to RTS. */
	memset(&at, 0, sizeof(at));
	at.state = IBV_QPS_RTS;
	at.dest_qpn = tgt.qp.qpn;
	at.sq_psn = 0xfffff0;		/* wraps during the tests */
	at.path_mtu = MTU;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 4;
	at.dgid = tgt.gid;
	at.sgid = ini.gid;
	ck_assert_int_eq(urxe_engine_qp_modify(&ini.qp, &at, mask), 0);
	/* TGT: a responder only, RTR is as far as it goes. */
	memset(&at, 0, sizeof(at));
	at.state = IBV_QPS_RTR;
	at.dest_qpn = ini.qp.qpn;
	at.rq_psn = 0xfffff0;
	at.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		    IBV_ACCESS_REMOTE_ATOMIC;
	at.path_mtu = MTU;
	at.min_rnr_timer = 1;
	at.max_dest_rd_atomic = 4;
	at.dgid = ini.gid;
	at.sgid = tgt.gid;
	mask = IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_AV;
	ck_assert_int_eq(urxe_engine_qp_modify(&tgt.qp, &at, mask), 0);
}

static void setup(void)
{
	unsigned int i;

	wire_setup(true);
	nevents = 0;
	node_init(&ini, 1, 5);
	node_init(&tgt, 2, 7);
	other_buf = calloc(1, 65536);
	ck_assert_ptr_nonnull(other_buf);
	wire_mem_add(tgt.eng, &other_mem, other_buf, 65536, 9, WIRE_ACCESS_ALL);

	/* INI: a send queue and a CQ, no receive queue. */
	ck_assert_int_eq(urxe_cq_ring_init(&ini_cq, 256), 0);
	ini.qp.type = IBV_QPT_XRC_SEND;
	ini.qp.pd = 5;
	ini.qp.scq = &ini_cq;
	ck_assert_int_eq(urxe_wq_init(&ini.qp.sq, 64, 4, 64,
				      sizeof(struct urxe_send_wqe)), 0);
	ck_assert_int_eq(urxe_engine_qp_add(ini.eng, &ini.qp), 0);
	/* TGT: no PD, queues or CQs of its own. */
	tgt.qp.type = IBV_QPT_XRC_RECV;
	tgt.qp.xrcd = XRCD_A;
	tgt.qp.fatal = on_event;
	ck_assert_int_eq(urxe_engine_qp_add(tgt.eng, &tgt.qp), 0);
	srq_init(&srqs[0], XRCD_A, 1);
	srq_init(&srqs[1], XRCD_A, 2);
	srq_init(&srqs[2], XRCD_B, 1);
	for (i = 0; i < NSRQ; i++) {
		ck_assert_uint_eq(srqs[i].s.srqn >> URXE_QPN_INDEX_BITS, 2);
		ck_assert_uint_ne(srqs[i].s.srqn, tgt.qp.qpn);
	}
	ck_assert_uint_ne(srqs[0].s.srqn, srqs[1].s.srqn);
	connect_qps();
}

static void teardown(void)
{
	unsigned int i;

	urxe_engine_qp_remove(ini.eng, &ini.qp);
	urxe_engine_qp_remove(tgt.eng, &tgt.qp);
	for (i = 0; i < NSRQ; i++)
		srq_fini(&srqs[i]);
	urxe_wq_fini(&ini.qp.sq);
	urxe_cq_ring_fini(&ini_cq);
	ck_assert_int_eq(urxe_engine_mem_remove(tgt.eng, &other_mem), 0);
	ck_assert_int_eq(urxe_engine_mem_remove(ini.eng, &ini.mem), 0);
	ck_assert_int_eq(urxe_engine_mem_remove(tgt.eng, &tgt.mem), 0);
	urxe_engine_destroy(ini.eng);
	urxe_engine_destroy(tgt.eng);
	free(ini.buf);
	free(tgt.buf);
	free(other_buf);
	wire_teardown();
}

/* Runs both engines until the wire is quiet. */
static void pump(void)
{
	struct urxe_engine *eng[2] = { ini.eng, tgt.eng };

	wire_pump(eng, 2, 10000);
}

/* A receive on SRQ @k: @len bytes at @off of the target's buffer. */
static void srq_post(unsigned int k, uint64_t id, uint64_t off, uint32_t len)
{
	struct urxe_wq *q = &srqs[k].s.rq;
	uint32_t p = atomic_load(&q->prod), i, n = q->max_sge;
	struct urxe_recv_wqe *r = urxe_wq_slot(q, p);

	ck_assert_uint_lt(p - atomic_load(&q->cons), q->max_wr);
	r->wr_id = id;
	r->num_sge = n;		/* the WQE split in max_sge pieces */
	r->length = len;
	for (i = 0; i < n; i++) {
		uint32_t a = (uint32_t)((uint64_t)len * i / n);
		uint32_t b = (uint32_t)((uint64_t)len * (i + 1) / n);

		r->sge[i] = (struct urxe_sge){ tgt.mem.iova + off + a, b - a,
					       tgt.mem.lkey };
	}
	atomic_store(&q->prod, p + 1);
}

static uint32_t srq_posted(unsigned int k)
{
	return atomic_load(&srqs[k].s.rq.prod) - atomic_load(&srqs[k].s.rq.cons);
}

static struct urxe_send_wqe *new_wqe(enum ibv_wr_opcode op, uint64_t off,
				     uint32_t len, uint32_t srqn)
{
	struct urxe_send_wqe *w;

	w = wire_send_wqe(&ini.qp, &ini.mem, op, off, len);
	w->remote_qpn = srqn;
	return w;
}

static void post(void)
{
	atomic_store(&ini.qp.sq.prod, atomic_load(&ini.qp.sq.prod) + 1);
	urxe_engine_kick(&ini.qp);
}

static struct ibv_wc poll_one(struct urxe_cq_ring *cq)
{
	struct ibv_wc wc;

	ck_assert_int_eq(urxe_cq_pop(cq, 1, &wc), 1);
	return wc;
}

static void assert_recv(unsigned int k, uint64_t id, uint32_t len,
			enum ibv_wc_opcode op)
{
	struct ibv_wc wc = poll_one(&srqs[k].cq);

	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, id);
	ck_assert_int_eq(wc.opcode, op);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_uint_eq(wc.qp_num, tgt.qp.qpn);
	ck_assert_uint_eq(wc.src_qp, 0);
}

static bool all_cqs_empty(void)
{
	unsigned int k;

	for (k = 0; k < NSRQ; k++)
		if (!urxe_cq_empty(&srqs[k].cq))
			return false;
	return true;
}

static const uint32_t sizes[] = { 0, 1, 1024, 1025, 3000, 70000 };

/* SENDs of one and of many packets land in the SRQ XRCETH names. */
START_TEST(xrc_send_sizes)
{
	uint32_t len = sizes[_i];
	struct ibv_wc wc;

	wire_fill(ini.buf, len, 3);
	srq_post(1, 11, 4096, 100000);
	new_wqe(IBV_WR_SEND, 0, len, srqs[1].s.srqn);
	post();
	pump();
	wc = poll_one(&ini_cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc.qp_num, ini.qp.qpn);
	assert_recv(1, 11, len, IBV_WC_RECV);
	ck_assert(!memcmp(tgt.buf + 4096, ini.buf, len));
	ck_assert(all_cqs_empty());
	ck_assert_uint_eq(srq_posted(1), 0);
	/* Between messages the TGT QP points at no SRQ. */
	ck_assert_ptr_null(tgt.qp.srq);
	ck_assert_ptr_null(tgt.qp.rcq);
}
END_TEST

/* WRITE and WRITE with immediate: the rkey is the SRQ's PD's. */
START_TEST(xrc_write_imm)
{
	struct urxe_send_wqe *w;
	struct ibv_wc wc;

	wire_fill(ini.buf, 5000, 9);
	w = new_wqe(IBV_WR_RDMA_WRITE, 0, 3000, srqs[0].s.srqn);
	w->remote_addr = tgt.mem.iova + 200000;
	w->rkey = tgt.mem.rkey;
	post();
	srq_post(0, 21, 0, 16);
	w = new_wqe(IBV_WR_RDMA_WRITE_WITH_IMM, 0, 5000, srqs[0].s.srqn);
	w->remote_addr = tgt.mem.iova + 300000;
	w->rkey = tgt.mem.rkey;
	w->imm_inv = htobe32(0xabcd);
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert(!memcmp(tgt.buf + 200000, ini.buf, 3000));
	ck_assert(!memcmp(tgt.buf + 300000, ini.buf, 5000));
	wc = poll_one(&srqs[0].cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 21);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 5000);
	ck_assert_uint_eq(wc.qp_num, tgt.qp.qpn);
	ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(wc.imm_data), 0xabcd);
	ck_assert(all_cqs_empty());
}
END_TEST

/*
 * A WRITE to memory of another PD than the SRQ's: NAK remote access
 * error, the INI QP's WQE completes with IBV_WC_REM_ACCESS_ERR, the TGT
 * QP goes to ERR with IBV_EVENT_QP_ACCESS_ERR.
 */
START_TEST(xrc_write_other_pd)
{
	struct urxe_send_wqe *w;

	w = new_wqe(IBV_WR_RDMA_WRITE, 0, 64, srqs[0].s.srqn);
	w->remote_addr = other_mem.iova;
	w->rkey = other_mem.rkey;
	post();
	new_wqe(IBV_WR_SEND, 0, 8, srqs[0].s.srqn);
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(ini.qp.attr.state, IBV_QPS_ERR);
	ck_assert_int_eq(tgt.qp.attr.state, IBV_QPS_ERR);
	ck_assert_uint_eq(nevents, 1);
	ck_assert_int_eq(events[0], IBV_EVENT_QP_ACCESS_ERR);
	ck_assert_uint_eq(other_buf[0], 0);
	ck_assert(all_cqs_empty());
}
END_TEST

/* READ of many packets, checked against the SRQ's PD. */
START_TEST(xrc_read)
{
	struct urxe_send_wqe *w;
	struct ibv_wc wc;

	wire_fill(tgt.buf + 200000, 70000, 1);
	w = new_wqe(IBV_WR_RDMA_READ, 300000, 70000, srqs[1].s.srqn);
	w->remote_addr = tgt.mem.iova + 200000;
	w->rkey = tgt.mem.rkey;
	post();
	pump();
	wc = poll_one(&ini_cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, 70000);
	ck_assert(!memcmp(ini.buf + 300000, tgt.buf + 200000, 70000));
	ck_assert(all_cqs_empty());
}
END_TEST

START_TEST(xrc_atomics)
{
	uint64_t *target = (uint64_t *)(void *)(tgt.buf + 8192), v;
	struct urxe_send_wqe *w;
	struct ibv_wc wc;

	*target = 40;
	w = new_wqe(IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, srqs[0].s.srqn);
	w->remote_addr = tgt.mem.iova + 8192;
	w->rkey = tgt.mem.rkey;
	w->compare_add = 2;
	post();
	w = new_wqe(IBV_WR_ATOMIC_CMP_AND_SWP, 8, 8, srqs[1].s.srqn);
	w->remote_addr = tgt.mem.iova + 8192;
	w->rkey = tgt.mem.rkey;
	w->compare_add = 42;
	w->swap = 7;
	post();
	pump();
	wc = poll_one(&ini_cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_FETCH_ADD);
	wc = poll_one(&ini_cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_COMP_SWAP);
	memcpy(&v, ini.buf, 8);
	ck_assert_uint_eq(v, 40);
	memcpy(&v, ini.buf + 8, 8);
	ck_assert_uint_eq(v, 42);
	ck_assert_uint_eq(*target, 7);
	/* Atomics to memory of another PD than the SRQ's are refused. */
	w = new_wqe(IBV_WR_ATOMIC_FETCH_AND_ADD, 16, 8, srqs[0].s.srqn);
	w->remote_addr = other_mem.iova;
	w->rkey = other_mem.rkey;
	w->compare_add = 1;
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(other_buf[0], 0);
}
END_TEST

/* One INI QP, two SRQs of one domain addressed in turn. */
START_TEST(xrc_two_srqs_alternate)
{
	enum { MSGS = 8, LEN = 2500 };
	unsigned int i;

	for (i = 0; i < MSGS; i++) {
		wire_fill(ini.buf + i * 4096, LEN, (uint8_t)(i + 1));
		srq_post(i % 2, 1000 + i, 100000 + i * 4096, 4096);
		new_wqe(IBV_WR_SEND, i * 4096, LEN - i, srqs[i % 2].s.srqn);
		post();
	}
	pump();
	for (i = 0; i < MSGS; i++) {
		ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
		assert_recv(i % 2, 1000 + i, LEN - i, IBV_WC_RECV);
		ck_assert(!memcmp(tgt.buf + 100000 + i * 4096, ini.buf + i * 4096,
				  LEN - i));
	}
	ck_assert(all_cqs_empty());
}
END_TEST

/*
 * A request naming no SRQ of the TGT QP's domain: NAK remote access
 * error.  _i: an SRQ of another domain, a number nobody holds, the TGT
 * QP's own number (QPs and SRQs share the index space: it names no SRQ),
 * a number of another slot.
 */
START_TEST(xrc_bad_srqn)
{
	uint32_t srqn[] = {
		srqs[2].s.srqn, (2u << URXE_QPN_INDEX_BITS) | 999, tgt.qp.qpn,
		(3u << URXE_QPN_INDEX_BITS) | (srqs[0].s.srqn & 0x3fff),
	};

	srq_post(2, 1, 0, 100);
	srq_post(0, 2, 0, 100);
	new_wqe(IBV_WR_SEND, 0, 100, srqn[_i]);
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(ini.qp.attr.state, IBV_QPS_ERR);
	ck_assert_int_eq(tgt.qp.attr.state, IBV_QPS_ERR);
	ck_assert_uint_eq(nevents, 1);
	ck_assert_int_eq(events[0], IBV_EVENT_QP_ACCESS_ERR);
	ck_assert(all_cqs_empty());
	ck_assert_uint_eq(srq_posted(2), 1);
	ck_assert_uint_eq(srq_posted(0), 1);
}
END_TEST

/* An empty SRQ: RNR NAK, then success once a receive is posted. */
START_TEST(xrc_rnr)
{
	uint64_t cnt[URXE_CNT__COUNT];
	struct urxe_send_wqe *w;

	wire_fill(ini.buf, 5000, 4);
	new_wqe(IBV_WR_SEND, 0, 2000, srqs[1].s.srqn);
	post();
	pump();
	ck_assert(urxe_cq_empty(&ini_cq));
	ck_assert(all_cqs_empty());
	urxe_engine_counters(tgt.eng, cnt);
	ck_assert_uint_ge(cnt[URXE_CNT_SND_RNR_ERR], 1);
	srq_post(1, 5, 0, 4096);
	fake_now += 100000;	/* min_rnr_timer 1 = 10 us */
	pump();
	assert_recv(1, 5, 2000, IBV_WC_RECV);
	ck_assert(!memcmp(tgt.buf, ini.buf, 2000));
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);

	/* A WRITE with immediate: RNR for its last packet, placed whole. */
	w = new_wqe(IBV_WR_RDMA_WRITE_WITH_IMM, 0, 5000, srqs[1].s.srqn);
	w->remote_addr = tgt.mem.iova + 100000;
	w->rkey = tgt.mem.rkey;
	post();
	pump();
	ck_assert(urxe_cq_empty(&ini_cq));
	ck_assert(all_cqs_empty());
	srq_post(1, 6, 0, 0);
	fake_now += 100000;
	pump();
	assert_recv(1, 6, 5000, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert(!memcmp(tgt.buf + 100000, ini.buf, 5000));
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(nevents, 0);
}
END_TEST

/* A lost middle packet (PSN-sequence NAK) and a lost last one (timer). */
START_TEST(xrc_loss)
{
	wire_fill(ini.buf, 6000, 5);
	srq_post(0, 1, 20000, 4000);
	srq_post(1, 2, 30000, 4000);
	drop_at = 1;
	new_wqe(IBV_WR_SEND, 0, 3000, srqs[0].s.srqn);
	post();
	pump();
	drop_at = (int)wire_sent + 2;
	new_wqe(IBV_WR_SEND, 3000, 3000, srqs[1].s.srqn);
	post();
	pump();
	ck_assert(urxe_cq_empty(&srqs[1].cq));
	fake_now += 4096ull << 14;	/* the timeout */
	pump();
	assert_recv(0, 1, 3000, IBV_WC_RECV);
	assert_recv(1, 2, 3000, IBV_WC_RECV);
	ck_assert(!memcmp(tgt.buf + 20000, ini.buf, 3000));
	ck_assert(!memcmp(tgt.buf + 30000, ini.buf + 3000, 3000));
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert(all_cqs_empty());
}
END_TEST

/*
 * A lost READ answer: the INI QP asks again for the rest, a duplicate the
 * TGT QP replays from memory, checked against the PD of the SRQ the
 * repeat names.
 */
START_TEST(xrc_read_loss)
{
	struct urxe_send_wqe *w;
	uint64_t cnt[URXE_CNT__COUNT];

	wire_fill(tgt.buf + 200000, 5000, 2);
	w = new_wqe(IBV_WR_RDMA_READ, 300000, 5000, srqs[0].s.srqn);
	w->remote_addr = tgt.mem.iova + 200000;
	w->rkey = tgt.mem.rkey;
	drop_at = 2;		/* (0 is the request) the second answer */
	post();
	pump();
	fake_now += 4096ull << 14;
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert(!memcmp(ini.buf + 300000, tgt.buf + 200000, 5000));
	urxe_engine_counters(tgt.eng, cnt);
	ck_assert_uint_ge(cnt[URXE_CNT_DUPLICATE_REQUEST], 1);
}
END_TEST

/* Random loss both ways, messages into both SRQs and READs between. */
START_TEST(xrc_random_loss)
{
	enum { MSGS = 40, LEN = 6000 };
	unsigned int got[2] = { 0, 0 }, done = 0, i, k;
	int64_t last[2] = { -1, -1 };
	struct ibv_wc wc[64];
	int idle = 0;

	drop_every = 15;
	wire_fill(tgt.buf + 600000, 3 * LEN, 77);
	for (i = 0; i < MSGS; i++) {
		struct urxe_send_wqe *w;

		wire_fill(ini.buf + (size_t)i * LEN, LEN, (uint8_t)i);
		if (i % 4 == 3) {
			/* into the INI's buffer past the messages */
			w = new_wqe(IBV_WR_RDMA_READ, 700000 + (i % 3) * LEN, LEN,
				    srqs[i % 2].s.srqn);
			w->remote_addr = tgt.mem.iova + 600000 + (i % 3) * LEN;
			w->rkey = tgt.mem.rkey;
		} else {
			new_wqe(IBV_WR_SEND, (uint64_t)i * LEN, LEN,
				srqs[i % 2].s.srqn);
		}
		atomic_store(&ini.qp.sq.prod, atomic_load(&ini.qp.sq.prod) + 1);
	}
	/* Each SRQ holds 16: post its receives as they are consumed. */
	urxe_engine_kick(&ini.qp);
	while (done < MSGS) {
		int moved = 0, n;

		for (k = 0; k < 2; k++) {
			unsigned int want = 0, posted = 0;

			for (i = 0; i < MSGS; i++)
				if (i % 2 == k && i % 4 != 3)
					want++;
			posted = atomic_load(&srqs[k].s.rq.prod);
			while (posted < want && srq_posted(k) < 16) {
				/* the posted-th message of SRQ k */
				unsigned int m = 0, seen = 0;

				for (i = 0; i < MSGS; i++) {
					if (i % 2 != k || i % 4 == 3)
						continue;
					if (seen++ == posted) {
						m = i;
						break;
					}
				}
				srq_post(k, m, (uint64_t)m * LEN, LEN);
				posted++;
			}
		}
		pump();
		for (k = 0; k < 2; k++) {
			n = urxe_cq_pop(&srqs[k].cq, 64, wc);
			for (i = 0; i < (unsigned int)n; i++) {
				ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
				ck_assert_uint_eq(wc[i].wr_id % 2, k);
				/* in order, within each SRQ */
				ck_assert_int_gt((int64_t)wc[i].wr_id, last[k]);
				last[k] = (int64_t)wc[i].wr_id;
				ck_assert_uint_eq(wc[i].qp_num, tgt.qp.qpn);
				ck_assert_uint_eq(wc[i].byte_len, LEN);
				ck_assert(!memcmp(tgt.buf + wc[i].wr_id * LEN,
						  ini.buf + wc[i].wr_id * LEN, LEN));
			}
			got[k] += (unsigned int)n;
			moved += n;
		}
		n = urxe_cq_pop(&ini_cq, 64, wc);
		for (i = 0; i < (unsigned int)n; i++)
			ck_assert_msg(wc[i].status == IBV_WC_SUCCESS,
				      "status %d opcode %d", wc[i].status,
				      wc[i].opcode);
		done += (unsigned int)n;
		moved += n;
		if (!moved) {
			fake_now += 1000000;
			ck_assert_int_lt(++idle, 20000);
		}
	}
	ck_assert_uint_eq(got[0] + got[1], MSGS - MSGS / 4);
	for (i = 3; i < MSGS; i += 4)
		ck_assert(!memcmp(ini.buf + 700000 + (i % 3) * LEN,
				  tgt.buf + 600000 + (i % 3) * LEN, LEN));
	ck_assert_int_eq(ini.qp.attr.state, IBV_QPS_RTS);
	ck_assert_int_eq(tgt.qp.attr.state, IBV_QPS_RTR);
}
END_TEST

/* Rewrites the XRCETH of request @n to name SRQ 1 (ICRC made anew). */
static unsigned int mangle_serial;

static void to_srq1(struct wire_pkt *w, unsigned int n)
{
	if (n != mangle_serial)
		return;
	ck_assert_uint_eq(w->data[0] & 0xe0, URXE_TR_XRC);
	urxe_xrceth_put(w->data + URXE_BTH_LEN, srqs[1].s.srqn);
	urxe_icrc_store(w->data + w->len - URXE_ICRC_LEN,
			urxe_icrc_tx(NULL, w->src.raw, w->dst.raw, w->sport, w->data,
				     w->len - URXE_ICRC_LEN));
}

/*
 * The middle packet of a SEND naming another SRQ than its first: NAK
 * invalid request; the WQE the message took is flushed to its SRQ's CQ,
 * the other SRQ is left alone.
 */
START_TEST(xrc_middle_other_srq)
{
	struct ibv_wc wc;

	srq_post(0, 1, 0, 4000);
	srq_post(1, 2, 8000, 4000);
	mangle_serial = 1;
	mangle = to_srq1;
	new_wqe(IBV_WR_SEND, 0, 3000, srqs[0].s.srqn);
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_REM_INV_REQ_ERR);
	wc = poll_one(&srqs[0].cq);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.qp_num, tgt.qp.qpn);
	ck_assert(all_cqs_empty());
	ck_assert_uint_eq(srq_posted(1), 1);
	ck_assert_int_eq(tgt.qp.attr.state, IBV_QPS_ERR);
	ck_assert_uint_eq(nevents, 1);
	ck_assert_int_eq(events[0], IBV_EVENT_QP_REQ_ERR);
	ck_assert_ptr_null(tgt.qp.srq);
}
END_TEST

/*
 * A TGT QP moved to ERR in the middle of a message: the WQE it holds is
 * flushed to that SRQ's CQ (and nothing else: the SRQ's other WQEs stay,
 * no Last WQE Reached, it has no SRQ of its own).
 */
START_TEST(xrc_tgt_error_flushes_held)
{
	struct urxe_qp_attr at = { .state = IBV_QPS_ERR };
	struct ibv_wc wc;

	srq_post(1, 1, 0, 4000);
	srq_post(1, 2, 8000, 4000);
	drop_at = 2;
	new_wqe(IBV_WR_SEND, 0, 3000, srqs[1].s.srqn);
	post();
	pump();
	ck_assert(all_cqs_empty());
	ck_assert_ptr_eq(tgt.qp.srq, &srqs[1].s);
	ck_assert_uint_eq(srq_posted(1), 1);
	ck_assert_int_eq(urxe_engine_qp_modify(&tgt.qp, &at, IBV_QP_STATE), 0);
	wc = poll_one(&srqs[1].cq);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.qp_num, tgt.qp.qpn);
	ck_assert(all_cqs_empty());
	ck_assert_uint_eq(srq_posted(1), 1);
	ck_assert_uint_eq(nevents, 0);
	ck_assert_ptr_null(tgt.qp.srq);
}
END_TEST

/*
 * An SRQ removed while a TGT QP holds one of its WQEs: the WQE is flushed,
 * the QP points at it no more, and the rest of the message (resent) finds
 * no SRQ: NAK remote access error.
 */
START_TEST(xrc_srq_removed_mid_message)
{
	struct ibv_wc wc;

	srq_post(0, 1, 0, 4000);
	drop_at = 2;
	new_wqe(IBV_WR_SEND, 0, 3000, srqs[0].s.srqn);
	post();
	pump();
	ck_assert_ptr_eq(tgt.qp.srq, &srqs[0].s);
	urxe_engine_xsrq_remove(tgt.eng, &srqs[0].s);
	srqs[0].added = false;
	ck_assert_ptr_null(urxe_engine_xsrq_lookup(tgt.eng, srqs[0].s.srqn));
	ck_assert_ptr_null(tgt.qp.srq);
	wc = poll_one(&srqs[0].cq);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.wr_id, 1);
	fake_now += 4096ull << 14;
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(tgt.qp.attr.state, IBV_QPS_ERR);
	ck_assert(all_cqs_empty());
}
END_TEST

/*
 * An XRC SRQ added after the TGT QP took WQEs, with WQEs bigger than any
 * before: the QP's copy of a WQE grows with it (a sanitizer build sees
 * any overflow).  Then 31 pieces of 100 bytes take one message.
 */
START_TEST(xrc_bigger_srq_later)
{
	struct xsrq big;
	struct urxe_recv_wqe *r;
	uint32_t i, p;

	wire_fill(ini.buf, 3100, 6);
	srq_post(0, 1, 0, 100);
	new_wqe(IBV_WR_SEND, 0, 100, srqs[0].s.srqn);
	post();
	pump();
	assert_recv(0, 1, 100, IBV_WC_RECV);
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	srq_init(&big, XRCD_A, 32);
	p = atomic_load(&big.s.rq.prod);
	r = urxe_wq_slot(&big.s.rq, p);
	r->wr_id = 9;
	r->num_sge = 32;
	r->length = 3200;
	for (i = 0; i < 32; i++)
		r->sge[i] = (struct urxe_sge){ tgt.mem.iova + 50000 + i * 200,
					       100, tgt.mem.lkey };
	atomic_store(&big.s.rq.prod, p + 1);
	new_wqe(IBV_WR_SEND, 0, 3100, big.s.srqn);
	post();
	pump();
	ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(poll_one(&big.cq).byte_len, 3100);
	for (i = 0; i < 31; i++)
		ck_assert(!memcmp(tgt.buf + 50000 + i * 200, ini.buf + i * 100,
				  100));
	srq_fini(&big);
}
END_TEST

/* ---- the bytes on the wire ---- */

/* Sends one of each: a 3-packet SEND, a WRITE, a 2-packet READ, an atomic. */
static void one_of_each(void)
{
	struct urxe_send_wqe *w;
	unsigned int i;

	wire_fill(ini.buf, 3000, 1);
	srq_post(0, 1, 0, 4000);
	new_wqe(IBV_WR_SEND, 0, 2500, srqs[0].s.srqn);
	post();
	w = new_wqe(IBV_WR_RDMA_WRITE, 0, 100, srqs[1].s.srqn);
	w->remote_addr = tgt.mem.iova + 10000;
	w->rkey = tgt.mem.rkey;
	post();
	w = new_wqe(IBV_WR_RDMA_READ, 20000, 2000, srqs[0].s.srqn);
	w->remote_addr = tgt.mem.iova + 30000;
	w->rkey = tgt.mem.rkey;
	post();
	w = new_wqe(IBV_WR_ATOMIC_FETCH_AND_ADD, 40000, 8, srqs[1].s.srqn);
	w->remote_addr = tgt.mem.iova + 40000;
	w->rkey = tgt.mem.rkey;
	w->compare_add = 1;
	post();
	pump();
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(poll_one(&ini_cq).status, IBV_WC_SUCCESS);
	assert_recv(0, 1, 2500, IBV_WC_RECV);
}

/*
 * Requests: opcode 0xA0 + operation, XRCETH (a zero byte and the SRQ
 * number) right after the BTH, RETH/AtomicETH after it.  Answers: XRC
 * opcodes, AETH right after the BTH, no XRCETH.
 */
START_TEST(xrc_wire_format)
{
	static const uint8_t req_ops[] = { 0xa0, 0xa1, 0xa2, 0xaa, 0xac, 0xb4 };
	static const uint8_t resp_ops[] = { 0xad, 0xaf, 0xb2 };
	unsigned int seen[256] = { 0 }, i, acks = 0;

	one_of_each();
	ck_assert_uint_gt(nlog, 0);
	for (i = 0; i < nlog; i++) {
		const struct wire_pkt *w = &sent_log[i];
		const uint8_t *p = w->data;
		const struct urxe_opinfo *oi = urxe_opinfo(p[0]);
		struct urxe_bth bth;
		uint32_t pad = (p[1] >> 4) & 3;

		urxe_bth_get(p, &bth);
		seen[p[0]]++;
		ck_assert_msg(oi->flags & URXE_F_VALID, "opcode 0x%02x", p[0]);
		ck_assert_uint_eq(p[0] & 0xe0, 0xa0);
		if (!memcmp(&w->src, &ini.gid, sizeof(ini.gid))) {
			uint32_t srqn = urxe_get24(p + 13);

			ck_assert(oi->flags & URXE_F_REQ);
			ck_assert_uint_eq(bth.dqpn, tgt.qp.qpn);
			ck_assert_uint_eq(p[12], 0);	/* XRCETH reserved */
			ck_assert(srqn == srqs[0].s.srqn || srqn == srqs[1].s.srqn);
			if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_RETH))
				ck_assert_uint_eq(urxe_get32(p + 16 + 8),
						  tgt.mem.rkey);
			if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_ATMETH)) {
				ck_assert_uint_eq(srqn, srqs[1].s.srqn);
				ck_assert_uint_eq(urxe_get64(p + 16),
						  tgt.mem.iova + 40000);
			}
			if ((p[0] & 0x1f) <= URXE_OP_SEND_LAST ||
			    (p[0] & 0x1f) == URXE_OP_READ_REQ)
				ck_assert_uint_eq(srqn, srqs[0].s.srqn);
			if ((p[0] & 0x1f) == URXE_OP_WRITE_ONLY)
				ck_assert_uint_eq(srqn, srqs[1].s.srqn);
		} else {
			ck_assert(oi->flags & URXE_F_RESP);
			ck_assert_uint_eq(bth.dqpn, ini.qp.qpn);
			ck_assert(!(oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH)));
			ck_assert_uint_eq(oi->hdr_len, URXE_BTH_LEN +
					  (oi->hdrs & URXE_HDR_BIT(URXE_HDR_AETH) ?
					   URXE_AETH_LEN : 0) +
					  (oi->flags & URXE_F_ATOMIC ?
					   URXE_ATMACK_LEN : 0));
			/* AETH at byte 12: an ACK syndrome (credits invalid). */
			if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_AETH))
				ck_assert_uint_eq(p[12], 0x1f);
			if ((p[0] & 0x1f) == URXE_OP_ACK) {
				ck_assert_uint_eq(w->len, 12 + 4 + 4);
				acks++;
			}
			if ((p[0] & 0x1f) == URXE_OP_ATOMIC_ACK)
				ck_assert_uint_eq(urxe_get64(p + 16), 0);
		}
		/* Exactly the opcode's headers, payload, pad, ICRC. */
		ck_assert_uint_ge(w->len, oi->hdr_len + pad + URXE_ICRC_LEN);
		if (!(oi->flags & URXE_F_PAYLOAD))
			ck_assert_uint_eq(w->len, oi->hdr_len + URXE_ICRC_LEN);
	}
	for (i = 0; i < sizeof(req_ops); i++)
		ck_assert_msg(seen[req_ops[i]], "no 0x%02x", req_ops[i]);
	for (i = 0; i < sizeof(resp_ops); i++)
		ck_assert_msg(seen[resp_ops[i]], "no 0x%02x", resp_ops[i]);
	ck_assert_uint_ge(acks, 1);
	/* The first packet: SEND_FIRST with 1024 bytes after 16 of headers. */
	ck_assert_uint_eq(sent_log[0].data[0], 0xa0);
	ck_assert_uint_eq(sent_log[0].len, 16 + MTU + 4);
	ck_assert(!memcmp(sent_log[0].data + 16, ini.buf, MTU));
}
END_TEST

#ifdef URXE_VALIDATE
/*
 * Writes the packets logged into a pcap (raw IPv4 with UDP, as they
 * would travel); @bad_xrceth: the first XRC request gets a nonzero
 * reserved byte (and a matching ICRC).
 */
static void write_pcap(const char *path, bool bad_xrceth)
{
	pcap_t *pd = pcap_open_dead(DLT_RAW, 65535);
	pcap_dumper_t *d;
	unsigned int i;
	bool spoiled = false;

	ck_assert_ptr_nonnull(pd);
	d = pcap_dump_open(pd, path);
	ck_assert_msg(d, "%s", pcap_geterr(pd));
	for (i = 0; i < nlog; i++) {
		struct wire_pkt w = sent_log[i];
		uint8_t frame[68 + sizeof(w.data)];
		struct pcap_pkthdr h = { .ts = { 1, (suseconds_t)i } };
		uint32_t sum = 0;
		size_t ip_len;
		unsigned int k;

		if (bad_xrceth && !spoiled &&
		    (urxe_opinfo(w.data[0])->hdrs &
		     URXE_HDR_BIT(URXE_HDR_XRCETH))) {
			w.data[URXE_BTH_LEN] = 0x5a;
			urxe_icrc_store(w.data + w.len - URXE_ICRC_LEN,
					urxe_icrc_tx(NULL, w.src.raw, w.dst.raw,
						     w.sport, w.data,
						     w.len - URXE_ICRC_LEN));
			spoiled = true;
		}
		ip_len = urxe_icrc_pseudo_hdr(frame, w.src.raw, w.dst.raw,
					      w.sport, URXE_ROCE_UDP_PORT,
					      w.len, 0, true);
		ck_assert_uint_eq(ip_len, 20);
		frame[8] = 64;				/* TTL */
		for (k = 0; k < 20; k += 2)
			sum += urxe_get16(frame + k);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		urxe_put16(frame + 10, (uint16_t)~sum);
		memcpy(frame + 28, w.data, w.len);
		h.caplen = h.len = 28 + w.len;
		pcap_dump((u_char *)d, &h, frame);
	}
	pcap_dump_close(d);
	pcap_close(pd);
}

/* Runs the validator on @path; its exit status. */
static int validate(const char *path)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		alarm(30);
		execl(URXE_VALIDATE, URXE_VALIDATE, path, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* The frame validator takes XRC frames, and spots a bad XRCETH. */
START_TEST(xrc_validator)
{
	/* (below the suite's root: removed even if this fails) */
	char *dir = tu_mkdtemp(), *path;

	ck_assert_ptr_nonnull(dir);
	path = tu_path(dir, "xrc.pcap");
	ck_assert_ptr_nonnull(path);
	one_of_each();
	write_pcap(path, false);
	ck_assert_int_eq(validate(path), 0);
	write_pcap(path, true);
	ck_assert_int_eq(validate(path), 1);
	tu_rmtree(dir);
	free(path);
	free(dir);
}
END_TEST
#endif

/* ---- the table of XRC SRQs ---- */

/*
 * QPs and XRC SRQs share the index space: with it full, no number is
 * both a QP's and an SRQ's, and neither kind gets another; a removed
 * SRQ's index serves a QP again.
 */
START_TEST(xrc_index_space)
{
	struct urxe_eqp *qps = calloc(1u << URXE_QPN_INDEX_BITS, sizeof(*qps));
	uint8_t *used = calloc(1u << URXE_QPN_INDEX_BITS, 1);
	struct xsrq extra;
	unsigned int n = 0, i, k;

	ck_assert(qps && used);
	used[tgt.qp.qpn & 0x3fff] = 1;
	for (k = 0; k < NSRQ; k++)
		used[srqs[k].s.srqn & 0x3fff] = 1;
	while (n < (1u << URXE_QPN_INDEX_BITS)) {
		qps[n].type = IBV_QPT_RC;
		if (urxe_engine_qp_add(tgt.eng, &qps[n]))
			break;
		ck_assert_uint_eq(qps[n].qpn >> URXE_QPN_INDEX_BITS, 2);
		ck_assert_msg(!used[qps[n].qpn & 0x3fff], "index %u twice",
			      qps[n].qpn & 0x3fff);
		used[qps[n].qpn & 0x3fff] = 1;
		n++;
	}
	ck_assert_uint_eq(n, (1u << URXE_QPN_INDEX_BITS) - 1 - NSRQ);
	/* Full: no room for an SRQ either. */
	memset(&extra, 0, sizeof(extra));
	ck_assert_int_eq(urxe_wq_init(&extra.s.rq, 4, 1, 0,
				      sizeof(struct urxe_recv_wqe)), 0);
	ck_assert_int_eq(urxe_cq_ring_init(&extra.cq, 4), 0);
	extra.s.cq = &extra.cq;
	extra.s.xrcd = XRCD_A;
	ck_assert_int_eq(urxe_engine_xsrq_add(tgt.eng, &extra.s), -ENOMEM);
	/* An SRQ's index, once free, goes to a QP. */
	urxe_engine_xsrq_remove(tgt.eng, &srqs[2].s);
	srqs[2].added = false;
	qps[n].type = IBV_QPT_RC;
	ck_assert_int_eq(urxe_engine_qp_add(tgt.eng, &qps[n]), 0);
	ck_assert_uint_eq(qps[n].qpn, srqs[2].s.srqn);
	ck_assert_ptr_null(urxe_engine_xsrq_lookup(tgt.eng, srqs[2].s.srqn));
	n++;
	/* A QP's index, once free, goes to an SRQ. */
	urxe_engine_qp_remove(tgt.eng, &qps[7]);
	ck_assert_int_eq(urxe_engine_xsrq_add(tgt.eng, &extra.s), 0);
	ck_assert_uint_eq(extra.s.srqn, qps[7].qpn);
	ck_assert_ptr_eq(urxe_engine_xsrq_lookup(tgt.eng, extra.s.srqn),
			 &extra.s);
	ck_assert_ptr_null(urxe_engine_xsrq_lookup(tgt.eng, tgt.qp.qpn));
	urxe_engine_xsrq_remove(tgt.eng, &extra.s);
	for (i = 0; i < n; i++)
		if (i != 7)
			urxe_engine_qp_remove(tgt.eng, &qps[i]);
	urxe_wq_fini(&extra.s.rq);
	urxe_cq_ring_fini(&extra.cq);
	free(qps);
	free(used);
}
END_TEST

/* An XRC SRQ needs its CQ. */
START_TEST(xrc_add_checks)
{
	struct urxe_esrq s;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(urxe_wq_init(&s.rq, 4, 1, 0,
				      sizeof(struct urxe_recv_wqe)), 0);
	ck_assert_int_eq(urxe_engine_xsrq_add(tgt.eng, &s), -EINVAL);
	urxe_wq_fini(&s.rq);
	ck_assert_ptr_null(urxe_engine_xsrq_lookup(tgt.eng, 0));
	ck_assert_ptr_null(urxe_engine_xsrq_lookup(ini.eng, srqs[0].s.srqn));
	ck_assert_ptr_eq(urxe_engine_xsrq_lookup(tgt.eng, srqs[0].s.srqn),
			 &srqs[0].s);
}
END_TEST

/*
 * The transports stay apart: RC requests reach no TGT QP, XRC requests
 * no RC QP, XRC answers no TGT QP (each dropped as "no QP").
 */
START_TEST(xrc_transport_ok)
{
	struct {
		uint8_t opcode;
		bool to_tgt;
	} cases[] = {
		{ 0x04, true },		/* RC SEND_ONLY */
		{ 0xb1, true },		/* XRC ACK */
		{ 0x11, false },	/* RC ACK to the INI QP */
		{ 0xa4, false },	/* XRC SEND_ONLY to the INI QP */
	};
	uint64_t before[URXE_CNT__COUNT], after[URXE_CNT__COUNT];
	unsigned int i;

	srq_post(0, 1, 0, 100);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct urxe_opinfo *oi = urxe_opinfo(cases[i].opcode);
		struct node *to = cases[i].to_tgt ? &tgt : &ini;
		struct node *from = cases[i].to_tgt ? &ini : &tgt;
		struct urxe_bth bth = {
			.opcode = cases[i].opcode, .pkey = 0xffff,
			.dqpn = to->qp.qpn,
			.psn = cases[i].to_tgt ? 0xfffff0 : 0xffffef,
		};
		struct urxe_rx_meta meta = {
			.sgid = from->gid, .dgid = to->gid, .sport = 0xc000,
			.dport = URXE_ROCE_UDP_PORT,
		};
		uint8_t pkt[64];
		uint32_t len = oi->hdr_len + URXE_ICRC_LEN;

		memset(pkt, 0, sizeof(pkt));
		urxe_bth_put(pkt, &bth);
		if (oi->hdrs & URXE_HDR_BIT(URXE_HDR_XRCETH))
			urxe_xrceth_put(pkt + oi->off[URXE_HDR_XRCETH],
					srqs[0].s.srqn);
		urxe_icrc_store(pkt + len - URXE_ICRC_LEN,
				urxe_icrc_tx(NULL, from->gid.raw, to->gid.raw, 0xc000,
					     pkt, len - URXE_ICRC_LEN));
		urxe_engine_counters(to->eng, before);
		urxe_engine_input(to->eng, pkt, len, &meta);
		urxe_engine_counters(to->eng, after);
		ck_assert_msg(after[URXE_CNT_DROPPED_NO_QP] ==
			      before[URXE_CNT_DROPPED_NO_QP] + 1,
			      "case %u not dropped", i);
	}
	pump();
	ck_assert(all_cqs_empty());
	ck_assert(urxe_cq_empty(&ini_cq));
	ck_assert_uint_eq(srq_posted(0), 1);
	ck_assert_uint_eq(nevents, 0);
	ck_assert_int_eq(tgt.qp.resp.epsn, 0xfffff0);
}
END_TEST

static Suite *xrc_suite(void)
{
	Suite *s = suite_create("xrc_engine");
	TCase *tc = tu_tcase(s, "xrc", setup, teardown);

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, xrc_send_sizes, 0,
			    sizeof(sizes) / sizeof(sizes[0]));
	tcase_add_test(tc, xrc_write_imm);
	tcase_add_test(tc, xrc_write_other_pd);
	tcase_add_test(tc, xrc_read);
	tcase_add_test(tc, xrc_atomics);
	tcase_add_test(tc, xrc_two_srqs_alternate);
	tcase_add_loop_test(tc, xrc_bad_srqn, 0, 4);
	tcase_add_test(tc, xrc_rnr);
	tcase_add_test(tc, xrc_loss);
	tcase_add_test(tc, xrc_read_loss);
	tcase_add_test(tc, xrc_random_loss);
	tcase_add_test(tc, xrc_middle_other_srq);
	tcase_add_test(tc, xrc_tgt_error_flushes_held);
	tcase_add_test(tc, xrc_srq_removed_mid_message);
	tcase_add_test(tc, xrc_bigger_srq_later);
	tcase_add_test(tc, xrc_wire_format);
#ifdef URXE_VALIDATE
	tcase_add_test(tc, xrc_validator);
#endif
	tcase_add_test(tc, xrc_index_space);
	tcase_add_test(tc, xrc_add_checks);
	tcase_add_test(tc, xrc_transport_ok);
	return s;
}

int main(void)
{
	return tu_run(xrc_suite());
}
