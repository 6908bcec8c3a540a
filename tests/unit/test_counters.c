// SPDX-License-Identifier: BSD-2-Clause
/*
 * Per-slot statistics in <rundir>/counters (host/stats.c) and the
 * engine's use of them (qp_engine/stats.c): the record layout; a claim
 * zeroes the record and bumps its generation, leaving other slots' records
 * alone; readers get -ENOENT for records never claimed; a writer that died
 * mid-update costs readers the QP table, not the counters; a fork()ed
 * child's record is private.  The engine keeps its counters in the record,
 * attributes QP events to the QP whose work caused them, and publishes its
 * QP table when QPs come, go or change state, and otherwise at most every
 * URXE_STATS_PUBLISH_NS — with a deadline that brings progress back to
 * publish the last figures.  Two engines in one thread, a fake clock and a
 * queue for a wire (dropping one chosen packet) make the traffic.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/host.h>

#include "engine_wire.h"
#include "testutil.h"

#define PUBLISH_NS 100000000ull		/* the engine's period, 100 ms */

static struct tu_sandbox sb;

/* ---- two engines on a wire ---- */

struct node {
	struct urxe_slot slot;
	struct urxe_stats_rec *rec;
	struct urxe_engine *eng;
	union ibv_gid gid;
	struct urxe_eqp qp;
	struct urxe_cq_ring cq;
	struct urxe_mem mem;
	uint8_t buf[65536];
};

static struct node nodes[2];

/* A slot, its record, an engine counting into it, one RC QP. */
static void node_init(struct node *nd)
{
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &nd->slot), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &nd->slot, "rxe7", "lo",
					   &nd->rec), 0);
	wire_gid_v4(&nd->gid, 127, 0, 0, (uint8_t)nd->slot.index);
	nd->eng = wire_engine(nd->slot.index, &nd->gid, nd->rec);
	wire_mem_add(nd->eng, &nd->mem, nd->buf, sizeof(nd->buf), 7,
		     IBV_ACCESS_LOCAL_WRITE);
	wire_qp_add(nd->eng, &nd->qp, &nd->cq, IBV_QPT_RC, 7,
		    &(struct wire_qp_shape){ .cqe = 64, .depth = 16,
					     .max_sge = 1 });
}

static void node_fini(struct node *nd)
{
	if (!nd->eng)
		return;
	wire_qp_del(nd->eng, &nd->qp, &nd->cq);
	urxe_engine_mem_remove(nd->eng, &nd->mem);
	urxe_engine_destroy(nd->eng);
	urxe_stats_detach(nd->rec);
	urxe_slot_release(&nd->slot);
	memset(nd, 0, sizeof(*nd));
}

static void to_state(struct node *a, enum ibv_qp_state st, int mask)
{
	struct urxe_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.state = st;
	ck_assert_int_eq(urxe_engine_qp_modify(&a->qp, &at, mask), 0);
}

static void qp_connect(struct node *a, struct node *b)
{
	struct urxe_qp_attr at;

	wire_rc_attr(&at, b->qp.qpn, &a->gid, &b->gid);
	at.sq_psn = 100;
	at.rq_psn = 100;
	at.min_rnr_timer = 1;
	ck_assert_int_eq(urxe_engine_qp_modify(&a->qp, &at, WIRE_RC_MASK |
			 IBV_QP_MIN_RNR_TIMER), 0);
}

static void pump(void)
{
	struct urxe_engine *eng[2] = { nodes[0].eng, nodes[1].eng };

	wire_pump(eng, 2, 1000);
}

/* One SEND of @len bytes from node 0 to node 1, waited for. */
static void send_once(uint32_t len)
{
	struct node *a = &nodes[0], *b = &nodes[1];
	uint32_t p = atomic_load(&b->qp.rq.prod);
	struct urxe_recv_wqe *r = urxe_wq_slot(&b->qp.rq, p);
	struct urxe_send_wqe *w;
	struct ibv_wc wc;

	r->wr_id = 1;
	r->num_sge = 1;
	r->length = len;
	r->sge[0].addr = b->mem.iova;
	r->sge[0].length = len;
	r->sge[0].lkey = b->mem.lkey;
	atomic_store(&b->qp.rq.prod, p + 1);

	p = atomic_load(&a->qp.sq.prod);
	w = urxe_wq_slot(&a->qp.sq, p);
	memset(w, 0, sizeof(*w));
	w->wr_id = 2;
	w->opcode = IBV_WR_SEND;
	w->send_flags = IBV_SEND_SIGNALED;
	w->length = len;
	w->num_sge = 1;
	w->sge[0].addr = a->mem.iova;
	w->sge[0].length = len;
	w->sge[0].lkey = a->mem.lkey;
	w->state = URXE_WQE_POSTED;
	atomic_store(&a->qp.sq.prod, p + 1);
	urxe_engine_kick(&a->qp);
	pump();
	ck_assert_int_eq(urxe_cq_pop(&a->cq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(urxe_cq_pop(&b->cq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
}

/* Reads slot @index's record through the file, as `urxe stats` does. */
static int read_rec(unsigned int index, struct urxe_stats_snap *s)
{
	int fd = urxe_stats_open(sb.rundir), rc;

	if (fd < 0)
		return fd;
	rc = urxe_stats_read(fd, index, s);
	close(fd);
	return rc;
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	memset(nodes, 0, sizeof(nodes));
	wire_setup(false);
}

static void teardown(void)
{
	node_fini(&nodes[0]);
	node_fini(&nodes[1]);
	wire_teardown();
	tu_sandbox_fini(&sb);
}

/* ---- the record ---- */

START_TEST(layout)
{
	ck_assert_uint_eq(offsetof(struct urxe_stats_rec, counters), 256);
	ck_assert_uint_le(sizeof(struct urxe_stats_rec), URXE_STATS_REC_SIZE);
	ck_assert_uint_eq(URXE_STATS_REC_SIZE % 4096, 0);
	ck_assert_uint_eq(sizeof(struct urxe_stats_qp),
			  16 + 8 * URXE_STATS_QP_COUNTERS);
	/* Every engine counter has room in the record, a QP's per QP. */
	ck_assert_uint_le(URXE_CNT__COUNT, URXE_STATS_COUNTERS);
	ck_assert_uint_le(URXE_CNT__QP, URXE_STATS_QP_COUNTERS);
}
END_TEST

/* No file, or a record never claimed: -ENOENT, and nothing created. */
START_TEST(absent)
{
	struct urxe_stats_snap s;
	struct urxe_slot a;
	struct urxe_stats_rec *rec;
	struct stat st;
	char *path = tu_path(sb.userdir, URXE_STATS_FILE);
	int fd;

	ck_assert_int_eq(urxe_stats_open(sb.rundir), -ENOENT);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &rec), 0);
	/* The user's own, sized for every slot, sparse. */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_size,
			 (off_t)(URXE_SLOT_LAST + 1) * URXE_STATS_REC_SIZE);
	fd = urxe_stats_open(sb.rundir);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(urxe_stats_read(fd, a.index + 1, &s), -ENOENT);
	ck_assert_int_eq(urxe_stats_read(fd, 0, &s), -ENOENT);
	ck_assert_int_eq(urxe_stats_read(fd, URXE_SLOT_LAST, &s), -ENOENT);
	ck_assert_int_eq(urxe_stats_read(fd, URXE_SLOT_LAST + 1, &s), -EINVAL);
	ck_assert_int_eq(urxe_stats_read(fd, a.index, &s), 0);
	close(fd);
	urxe_stats_detach(rec);
	urxe_slot_release(&a);
	free(path);
}
END_TEST

/* A claim: zeroed, generation + 1, this pid and names; others untouched. */
START_TEST(claim_zeroes)
{
	struct urxe_stats_rec *ra, *rb;
	struct urxe_stats_snap s;
	struct urxe_slot a, b;

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &ra), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &b, "rxe1", "vethA", &rb), 0);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.generation, 1);
	ck_assert_int_eq(s.pid, getpid());
	ck_assert_uint_eq(s.slot, a.index);
	ck_assert_str_eq(s.dev, "rxe0");
	ck_assert_str_eq(s.netdev, "lo");
	ck_assert_uint_eq(s.nqps, 0);

	/* The instance writes; a reader sees it. */
	urxe_stats_shape(ra, 3, 1);
	atomic_store(&ra->counters[2], 42);
	atomic_store(&rb->counters[0], 7);
	urxe_stats_shape(rb, 1, 1);
	urxe_stats_qps_begin(ra);
	urxe_stats_qp_put(ra, 0, &(struct urxe_stats_qp){
		.qpn = 0x4001, .type = IBV_QPT_RC, .state = IBV_QPS_RTS,
		.cnt = { 9 } });
	urxe_stats_qps_end(ra, 1, 5);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.ncounters, 3);
	ck_assert_uint_eq(s.counters[2], 42);
	ck_assert_uint_eq(s.nqps, 1);
	ck_assert_uint_eq(s.qps_total, 5);
	ck_assert_uint_eq(s.nqp_counters, 1);
	ck_assert_uint_eq(s.qps[0].qpn, 0x4001);
	ck_assert_uint_eq(s.qps[0].type, IBV_QPT_RC);
	ck_assert_uint_eq(s.qps[0].state, IBV_QPS_RTS);
	ck_assert_uint_eq(s.qps[0].cnt[0], 9);

	/* Released: the last figures stay readable (urxe stats --all). */
	urxe_stats_detach(ra);
	urxe_slot_release(&a);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.counters[2], 42);

	/* Claimed again: all zero, the next generation, the new names. */
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe2", "eth0", &ra), 0);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.generation, 2);
	ck_assert_str_eq(s.dev, "rxe2");
	ck_assert_str_eq(s.netdev, "eth0");
	ck_assert_uint_eq(s.ncounters, 0);
	ck_assert_uint_eq(atomic_load(&ra->counters[2]), 0);
	ck_assert_uint_eq(s.nqps, 0);
	ck_assert_uint_eq(ra->qps[0].qpn, 0);

	/* The neighbour's record did not move. */
	ck_assert_int_eq(read_rec(b.index, &s), 0);
	ck_assert_uint_eq(s.generation, 1);
	ck_assert_str_eq(s.dev, "rxe1");
	ck_assert_uint_eq(s.counters[0], 7);

	urxe_stats_detach(ra);
	urxe_stats_detach(rb);
	urxe_slot_release(&a);
	urxe_slot_release(&b);
}
END_TEST

/* A writer that died inside an update: counters yes, QP table no. */
START_TEST(torn_table)
{
	struct urxe_stats_rec *r;
	struct urxe_stats_snap s;
	struct urxe_slot a;

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &r), 0);
	urxe_stats_shape(r, 1, 1);
	atomic_store(&r->counters[0], 5);
	urxe_stats_qps_begin(r);
	urxe_stats_qp_put(r, 0, &(struct urxe_stats_qp){ .qpn = 0x4002 });
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.counters[0], 5);
	ck_assert_uint_eq(s.nqps, 0);
	urxe_stats_qps_end(r, 1, 1);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.nqps, 1);
	urxe_stats_detach(r);
	urxe_slot_release(&a);
}
END_TEST

/* After fork() the child's writes stay in the child. */
START_TEST(fork_child_private)
{
	struct urxe_stats_rec *r;
	struct urxe_stats_snap s;
	struct urxe_slot a;
	pid_t pid;

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &r), 0);
	urxe_stats_shape(r, 1, 1);
	atomic_store(&r->counters[0], 5);
	pid = tu_fork(10);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		urxe_stats_forget(r);
		/* Still mapped at the same place: a stray count cannot crash. */
		atomic_store(&r->counters[0], 999);
		urxe_stats_qps_begin(r);
		urxe_stats_qps_end(r, 3, 3);
		urxe_stats_detach(r);
		_exit(0);
	}
	ck_assert_int_eq(tu_exit_code(tu_wait_child(pid, 10000)), 0);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.counters[0], 5);
	ck_assert_uint_eq(s.nqps, 0);
	ck_assert_int_eq(s.pid, getpid());
	urxe_stats_detach(r);
	urxe_slot_release(&a);
}
END_TEST

/* ---- the engine ---- */

/* Counters live in the record; the QP table follows creation and states. */
START_TEST(engine_counters_and_states)
{
	static const uint8_t junk[8];
	struct urxe_stats_snap s;
	struct node *a = &nodes[0];

	node_init(a);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.ncounters, URXE_CNT__COUNT);
	ck_assert_uint_eq(s.nqp_counters, URXE_CNT__QP);
	ck_assert_uint_eq(s.nqps, 1);
	ck_assert_uint_eq(s.qps_total, 1);
	ck_assert_uint_eq(s.qps[0].qpn, a->qp.qpn);
	ck_assert_uint_eq(s.qps[0].type, IBV_QPT_RC);
	ck_assert_uint_eq(s.qps[0].state, IBV_QPS_RESET);

	/* A frame too short to parse: counted in the record, for no QP. */
	urxe_engine_input(a->eng, junk, sizeof(junk), &(struct urxe_rx_meta){ 0 });
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.counters[URXE_CNT_RCVD_PKTS], 1);
	ck_assert_uint_eq(s.counters[URXE_CNT_DROPPED], 1);
	ck_assert_uint_eq(a->qp.cnt[URXE_CNT_DROPPED], 0);

	to_state(a, IBV_QPS_INIT, IBV_QP_STATE);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.qps[0].state, IBV_QPS_INIT);
	to_state(a, IBV_QPS_ERR, IBV_QP_STATE);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.qps[0].state, IBV_QPS_ERR);

	urxe_engine_qp_remove(a->eng, &a->qp);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.nqps, 0);
	ck_assert_uint_eq(s.qps_total, 0);
	/* Destroyed: its last figures stay, among the retired QPs. */
	ck_assert_uint_eq(s.retired_total, 1);
	ck_assert_uint_eq(s.nretired, 1);
	ck_assert_uint_eq(s.retired[0].qpn, a->qp.qpn);
	ck_assert_uint_eq(s.retired[0].state, IBV_QPS_ERR);
	ck_assert_int_eq(urxe_engine_qp_add(a->eng, &a->qp), 0);
}
END_TEST

/* The retired ring keeps the last URXE_STATS_RETIRED, oldest first. */
START_TEST(retired_ring)
{
	struct urxe_stats_rec *r;
	struct urxe_stats_snap s;
	struct urxe_slot a;
	unsigned int i, n = URXE_STATS_RETIRED + 5;

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &r), 0);
	urxe_stats_shape(r, 1, 2);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.retired_total, 0);
	ck_assert_uint_eq(s.nretired, 0);
	for (i = 0; i < n; i++)
		urxe_stats_qp_retire(r, &(struct urxe_stats_qp){
			.qpn = 0x4000 + i, .cnt = { i, 2 * i } });
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.retired_total, n);
	ck_assert_uint_eq(s.nretired, URXE_STATS_RETIRED);
	for (i = 0; i < URXE_STATS_RETIRED; i++) {
		ck_assert_uint_eq(s.retired[i].qpn, 0x4000 + 5 + i);
		ck_assert_uint_eq(s.retired[i].cnt[1], 2 * (5 + i));
	}
	urxe_stats_detach(r);
	urxe_slot_release(&a);
	/* The next claim of the slot starts with none. */
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_stats_attach(sb.rundir, &a, "rxe0", "lo", &r), 0);
	ck_assert_int_eq(read_rec(a.index, &s), 0);
	ck_assert_uint_eq(s.retired_total, 0);
	urxe_stats_detach(r);
	urxe_slot_release(&a);
}
END_TEST

/*
 * Lossy traffic: the events land on the QPs that caused them, the table is
 * not republished per packet but once the period is over, and a deadline
 * is set so that the engine thread comes back for it.
 */
START_TEST(engine_publishes_per_qp)
{
	struct node *a = &nodes[0], *b = &nodes[1];
	struct urxe_stats_snap s;
	uint64_t g[URXE_CNT__COUNT];
	unsigned int c;

	node_init(a);
	node_init(b);
	qp_connect(a, b);
	qp_connect(b, a);
	/* 8 packets of 1024; the third is lost: a PSN-sequence NAK. */
	drop_at = 2;
	send_once(8 * 1024);

	urxe_engine_counters(a->eng, g);
	ck_assert_uint_ge(g[URXE_CNT_RCV_SEQ_ERR], 1);
	/* One QP per engine: its share of every QP event is all of it. */
	for (c = 0; c < URXE_CNT__COUNT; c++)
		if (c != URXE_CNT_SEND_ERR && c != URXE_CNT_DROPPED &&
		    c != URXE_CNT_DROPPED_ICRC && c != URXE_CNT_DROPPED_NO_QP)
			ck_assert_msg(a->qp.cnt[c] == g[c], "%s: QP %llu, engine %llu",
				      urxe_counter_names[c],
				      (unsigned long long)a->qp.cnt[c],
				      (unsigned long long)g[c]);
	ck_assert_uint_ge(b->qp.cnt[URXE_CNT_OUT_OF_SEQ_REQUEST], 1);
	ck_assert_uint_eq(a->qp.cnt[URXE_CNT_OUT_OF_SEQ_REQUEST], 0);
	ck_assert_uint_eq(b->qp.cnt[URXE_CNT_RCV_SEQ_ERR], 0);

	/* The record's counters are live; the QP table is not, yet... */
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.counters[URXE_CNT_SENT_PKTS], g[URXE_CNT_SENT_PKTS]);
	ck_assert_uint_eq(s.nqps, 1);
	ck_assert_uint_eq(s.qps[0].state, IBV_QPS_RTS);
	ck_assert_uint_eq(s.qps[0].cnt[URXE_CNT_SENT_PKTS], 0);
	/* ...but a deadline brings progress back when it is due. */
	ck_assert_uint_le(urxe_engine_next_deadline(a->eng),
			  fake_now + PUBLISH_NS);

	fake_now += PUBLISH_NS / 2;
	urxe_engine_progress(a->eng);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	ck_assert_uint_eq(s.qps[0].cnt[URXE_CNT_SENT_PKTS], 0);

	fake_now += PUBLISH_NS / 2;
	urxe_engine_progress(a->eng);
	urxe_engine_progress(b->eng);
	ck_assert_int_eq(read_rec(a->slot.index, &s), 0);
	for (c = 0; c < URXE_CNT__QP; c++)
		ck_assert_uint_eq(s.qps[0].cnt[c], a->qp.cnt[c]);
	ck_assert_uint_ge(s.qps[0].cnt[URXE_CNT_SENT_PKTS], 9);
	ck_assert_uint_ge(s.qps[0].cnt[URXE_CNT_RCVD_PKTS], 1);
	ck_assert_int_eq(read_rec(b->slot.index, &s), 0);
	ck_assert_uint_eq(s.qps[0].qpn, b->qp.qpn);
	ck_assert_uint_eq(s.qps[0].cnt[URXE_CNT_OUT_OF_SEQ_REQUEST],
			  b->qp.cnt[URXE_CNT_OUT_OF_SEQ_REQUEST]);

	/* Nothing new: once the timers are looked at, no deadline is left. */
	fake_now += 1;
	urxe_engine_progress(a->eng);
	ck_assert_uint_eq(urxe_engine_next_deadline(a->eng), UINT64_MAX);
}
END_TEST

/* Without a record (unit tests, no shared memory): private counters. */
START_TEST(engine_without_record)
{
	struct urxe_engine_conf conf = { .ops = &wire_ops, .slot = 3 };
	static const uint8_t junk[8];
	struct urxe_engine *eng;
	uint64_t g[URXE_CNT__COUNT];

	ck_assert_int_eq(urxe_engine_create(&conf, &eng), 0);
	urxe_engine_input(eng, junk, sizeof(junk), &(struct urxe_rx_meta){ 0 });
	urxe_engine_counters(eng, g);
	ck_assert_uint_eq(g[URXE_CNT_DROPPED], 1);
	urxe_engine_destroy(eng);
	ck_assert_int_eq(urxe_stats_open(sb.rundir), -ENOENT);
}
END_TEST

static Suite *counters_suite(void)
{
	Suite *s = suite_create("counters");
	TCase *tc = tu_tcase(s, "counters", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, layout);
	tcase_add_test(tc, absent);
	tcase_add_test(tc, claim_zeroes);
	tcase_add_test(tc, torn_table);
	tcase_add_test(tc, fork_child_private);
	tcase_add_test(tc, retired_ring);
	tcase_add_test(tc, engine_counters_and_states);
	tcase_add_test(tc, engine_publishes_per_qp);
	tcase_add_test(tc, engine_without_record);
	return s;
}

int main(void)
{
	return tu_run(counters_suite());
}
