// SPDX-License-Identifier: BSD-2-Clause
/*
 * Multicast on rxe0 (lo): ibv_attach_mcast(3) and ibv_detach_mcast(3).
 * A UD SEND to a group (an AH to 239.255.x.y, destination QPN 0xFFFFFF)
 * reaches every QP attached to it once — two QPs of one process, a QP of
 * another process (through the runtime directory's registry) — and no QP
 * that is detached, attached to another group, or was destroyed; the GRH
 * names the group.  The errors: non-UD QP, unicast GID, detaching what is
 * not attached; a second attach is a no-op; the device advertises limits.
 * On a real interface (root: a child in a network namespace of its own,
 * a veth with 198.18.0.1): IP multicast to 239.255.0.1, looped back to
 * the sender's host; and between two namespaces joined by a veth, to
 * 239.255.0.1 and ff15::1.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <urxe/host.h>

#include "testutil.h"
#include "verbs_util.h"

#define QKEY 0x11111111u
#define GRH_LEN 40
#define BUFSZ 256
#define NQP 4
#define MCAST_QPN 0xffffffu

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp[NQP];
static uint8_t *buf;
static struct ibv_mr *mr;
static uint8_t sgid_v4;		/* the device's IPv4 GID's index */
static uint8_t sgid_v6;		/* a global IPv6 GID's, or 16 */

static union ibv_gid group(uint8_t last)
{
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff,
				     239, 255, 0, last } };

	return g;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY,
	};
	struct ibv_qp *q = ibv_create_qp(pd, &ia);

	ck_assert_msg(q != NULL, "ibv_create_qp: %s", strerror(errno));
	if (type != IBV_QPT_UD)
		return q;
	ck_assert_int_eq(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(ibv_modify_qp(q, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return q;
}

/* Opens rxe0 and makes NQP UD QPs (in a forked child: its own instance). */
static void open_all(void)
{
	int i;

	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = calloc(NQP + 1, BUFSZ);
	ck_assert(pd && cq && buf);
	mr = ibv_reg_mr(pd, buf, (NQP + 1) * BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	for (sgid_v4 = 0; sgid_v4 < 16; sgid_v4++) {
		union ibv_gid g;

		if (!ibv_query_gid(ctx, 1, sgid_v4, &g) && g.raw[10] == 0xff &&
		    g.raw[11] == 0xff && g.raw[12])
			break;
	}
	ck_assert_uint_lt(sgid_v4, 16);
	for (sgid_v6 = 0; sgid_v6 < 16; sgid_v6++) {
		union ibv_gid g;

		if (!ibv_query_gid(ctx, 1, sgid_v6, &g) && g.raw[0] == 0x20)
			break;
	}
	for (i = 0; i < NQP; i++)
		qp[i] = make_qp(IBV_QPT_UD);
}

static void close_all(void)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	free(buf);
	memset(qp, 0, sizeof(qp));
	mr = NULL;
	cq = NULL;
	pd = NULL;
	ctx = NULL;
	buf = NULL;
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
}

static void teardown(void)
{
	close_all();
	tu_sandbox_fini(&sb);
}

static void post_recv(int i)
{
	struct ibv_sge s = { .addr = (uintptr_t)(buf + (i + 1) * BUFSZ),
			     .length = BUFSZ, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &s,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	ck_assert_int_eq(ibv_post_recv(qp[i], &wr, &bad), 0);
}

/* Sends "hello" + @tag from QP @i to @g, signalled (wr_id 1). */
static void send_group(int i, const union ibv_gid *g, uint8_t tag)
{
	struct ibv_ah_attr av = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *g, .hop_limit = 64,
			 .sgid_index = g->raw[0] == 0xff ? sgid_v6 : sgid_v4 },
	};
	struct ibv_ah *ah = ibv_create_ah(pd, &av);
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 6,
			     .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad = NULL;

	ck_assert_msg(ah != NULL, "ibv_create_ah: %s", strerror(errno));
	memcpy(buf, "hello", 5);
	buf[5] = tag;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = MCAST_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	ck_assert_int_eq(ibv_post_send(qp[i], &wr, &bad), 0);
	/* The AH may go once the WR is posted: it was resolved then. */
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}

/* Polls for @ms, counting receive completions per QP (wr_id 100 + i). */
static void collect(int ms, int got[NQP], bool *sent)
{
	struct timespec tick = { 0, 200 * 1000 };
	struct ibv_wc wc[8];
	int i, k, n;

	for (i = 0; i < ms * 5; i++) {
		n = ibv_poll_cq(cq, 8, wc);
		ck_assert_int_ge(n, 0);
		for (k = 0; k < n; k++) {
			ck_assert_msg(wc[k].status == IBV_WC_SUCCESS,
				      "wr_id %llu: %s",
				      (unsigned long long)wc[k].wr_id,
				      ibv_wc_status_str(wc[k].status));
			if (wc[k].wr_id == 1) {
				*sent = true;
				continue;
			}
			ck_assert(wc[k].wr_id >= 100 && wc[k].wr_id < 100 + NQP);
			ck_assert_uint_eq(wc[k].byte_len, GRH_LEN + 6);
			got[wc[k].wr_id - 100]++;
		}
		if (!n)
			nanosleep(&tick, NULL);
	}
}

/* The receive of QP @i: the payload, and the GRH's destination. */
static void check_rx(int i, const union ibv_gid *g, uint8_t tag)
{
	const uint8_t *r = buf + (i + 1) * BUFSZ;

	ck_assert_int_eq(memcmp(r + GRH_LEN, "hello", 5), 0);
	ck_assert_uint_eq(r[GRH_LEN + 5], tag);
	if (g->raw[0] == 0xff)		/* IPv6: the whole header */
		ck_assert_int_eq(memcmp(r + 24, g->raw, 16), 0);
	else
		ck_assert_int_eq(memcmp(r + 20 + 16, g->raw + 12, 4), 0);
}

START_TEST(errors)
{
	union ibv_gid g = group(1), uni;
	struct ibv_device_attr da;
	struct ibv_qp *rc;

	open_all();
	ck_assert_int_eq(ibv_query_device(ctx, &da), 0);
	ck_assert_int_gt(da.max_mcast_grp, 0);
	ck_assert_int_gt(da.max_mcast_qp_attach, 0);
	ck_assert_int_ge(da.max_total_mcast_qp_attach, da.max_mcast_qp_attach);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &uni), 0);
	/* ib_attach_mcast(): a unicast GID, a non-UD QP: EINVAL. */
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &uni, 0), EINVAL);
	rc = make_qp(IBV_QPT_RC);
	ck_assert_int_eq(ibv_attach_mcast(rc, &g, 0), EINVAL);
	ck_assert_int_eq(ibv_destroy_qp(rc), 0);
	/* Detaching what is not attached: EINVAL. */
	ck_assert_int_eq(ibv_detach_mcast(qp[0], &g, 0), EINVAL);
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g, 0), 0);
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g, 0), 0);	/* no-op */
	ck_assert_int_eq(ibv_detach_mcast(qp[1], &g, 0), EINVAL);
	ck_assert_int_eq(ibv_detach_mcast(qp[0], &g, 0), 0);
	ck_assert_int_eq(ibv_detach_mcast(qp[0], &g, 0), EINVAL);
	/* IPv6 multicast (ff15::1) is a group too. */
	g = (union ibv_gid){ .raw = { 0xff, 0x15, [15] = 1 } };
	ck_assert_int_eq(ibv_attach_mcast(qp[1], &g, 0), 0);
	ck_assert_int_eq(ibv_detach_mcast(qp[1], &g, 0), 0);
}
END_TEST

/*
 * QPs 0 and 1 in group .1, QP 2 in group .2, QP 3 sends: 0 and 1 get one
 * copy each, 2 none.  Then 1 detached, 0 destroyed: nobody but ... 2 for .2.
 */
START_TEST(one_process)
{
	union ibv_gid g1 = group(1), g2 = group(2);
	int got[NQP] = { 0 }, i;
	bool sent = false;

	open_all();
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g1, 0), 0);
	ck_assert_int_eq(ibv_attach_mcast(qp[1], &g1, 0), 0);
	ck_assert_int_eq(ibv_attach_mcast(qp[2], &g2, 0), 0);
	for (i = 0; i < NQP; i++)
		post_recv(i);
	send_group(3, &g1, 1);
	collect(300, got, &sent);
	ck_assert(sent);
	ck_assert_int_eq(got[0], 1);
	ck_assert_int_eq(got[1], 1);
	ck_assert_int_eq(got[2], 0);
	ck_assert_int_eq(got[3], 0);
	check_rx(0, &g1, 1);
	check_rx(1, &g1, 1);

	/* 1 detached, 0 destroyed: a SEND to .1 reaches nobody. */
	post_recv(0);
	post_recv(1);
	ck_assert_int_eq(ibv_detach_mcast(qp[1], &g1, 0), 0);
	ck_assert_int_eq(ibv_destroy_qp(qp[0]), 0);
	qp[0] = NULL;
	memset(got, 0, sizeof(got));
	sent = false;
	send_group(3, &g1, 2);
	collect(200, got, &sent);
	ck_assert(sent);
	ck_assert_int_eq(got[1] + got[2] + got[3], 0);
	/* ... and .2 still reaches QP 2, the sender itself may be a member. */
	ck_assert_int_eq(ibv_attach_mcast(qp[3], &g2, 0), 0);
	post_recv(3);
	sent = false;
	send_group(3, &g2, 3);
	collect(300, got, &sent);
	ck_assert_int_eq(got[2], 1);
	ck_assert_int_eq(got[3], 1);
	ck_assert_int_eq(got[1], 0);
	check_rx(2, &g2, 3);
}
END_TEST

/*
 * Another process: the child attaches QP 0 to .1 and waits for one
 * receive; the parent's QP 0 is attached too, QP 1 sends.  Both get the
 * SEND once.
 */
START_TEST(two_processes)
{
	union ibv_gid g1 = group(1);
	int up[2], got[NQP] = { 0 }, status;
	bool sent = false;
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(up), 0);
	pid = tu_fork(20);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Its own instance: open after the fork. */
		close(up[0]);
		open_all();
		if (ibv_attach_mcast(qp[0], &g1, 0))
			_exit(2);
		post_recv(0);
		if (write(up[1], "r", 1) != 1)
			_exit(3);
		collect(2000, got, &sent);
		if (got[0] != 1 || got[1] || got[2] || got[3])
			_exit(4);
		check_rx(0, &g1, 7);
		close_all();
		_exit(0);
	}
	close(up[1]);
	open_all();
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g1, 0), 0);
	post_recv(0);
	post_recv(1);
	if (tu_read_full(up[0], &c, 1, 10000))
		ck_abort_msg("child not ready: exit %d",
			     tu_exit_code(tu_wait_child(pid, 1000)));
	send_group(1, &g1, 7);
	collect(300, got, &sent);
	ck_assert(sent);
	ck_assert_int_eq(got[0], 1);
	ck_assert_int_eq(got[1], 0);
	check_rx(0, &g1, 7);
	status = tu_wait_child(pid, 10000);
	ck_assert_int_eq(tu_exit_code(status), 0);
	close(up[0]);
}
END_TEST

/*
 * fork(): the child's inherited instance is dead, its QPs can neither
 * join nor leave (EIO); the parent's QP keeps receiving.
 */
START_TEST(fork_child)
{
	union ibv_gid g1 = group(1), g2 = group(2);
	int got[NQP] = { 0 }, status;
	bool sent = false;
	pid_t pid;

	open_all();
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g1, 0), 0);
	pid = tu_fork(20);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (ibv_attach_mcast(qp[1], &g2, 0) != EIO)
			_exit(2);
		if (ibv_detach_mcast(qp[0], &g1, 0) != EIO)
			_exit(3);
		_exit(0);
	}
	status = tu_wait_child(pid, 10000);
	ck_assert_int_eq(tu_exit_code(status), 0);
	post_recv(0);
	send_group(1, &g1, 4);
	collect(300, got, &sent);
	ck_assert(sent);
	ck_assert_int_eq(got[0], 1);
	check_rx(0, &g1, 4);
}
END_TEST

/*
 * A member that died attached (its slot's lock gone with it) does not
 * keep the group: a later sender's copies go only to the living, and
 * the next claimant of its slot drops its records.
 */
START_TEST(dead_member)
{
	union ibv_gid g1 = group(1);
	int up[2], got[NQP] = { 0 }, status;
	bool sent = false;
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(up), 0);
	pid = tu_fork(20);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(up[0]);
		open_all();
		if (ibv_attach_mcast(qp[0], &g1, 0))
			_exit(2);
		if (write(up[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(up[1]);
	ck_assert_int_eq(tu_read_full(up[0], &c, 1, 10000), 0);
	tu_kill_child(pid);
	(void)status;
	open_all();		/* may take the dead child's slot */
	ck_assert_int_eq(ibv_attach_mcast(qp[0], &g1, 0), 0);
	post_recv(0);
	send_group(1, &g1, 9);
	collect(300, got, &sent);
	ck_assert(sent);
	ck_assert_int_eq(got[0], 1);
	close(up[0]);
}
END_TEST

/*
 * A real interface, in a network namespace of a child's own: rxe0 on a
 * veth with 198.18.0.1.  The receive socket joins the group, the SEND
 * goes to 239.255.0.1 through the interface and comes back to the host's
 * members (IP_MULTICAST_LOOP): QPs 0 and 1 get it once each, QP 2 (not
 * attached) does not.  Returns 0, 77 (no namespace or veth) or 1.
 */
static char nsmsg[256];

static int netns_case(void)
{
	union ibv_gid g1 = group(1);
	int got[NQP] = { 0 }, rc;
	bool sent = false;

	if (unshare(CLONE_NEWNET)) {
		snprintf(nsmsg, sizeof(nsmsg), "unshare: %s", strerror(errno));
		return 77;
	}
	if (system("ip link add urxm0 type veth peer name urxm1 && "
		   "ip link set urxm0 addrgenmode none && "
		   "ip addr add 198.18.0.1/24 dev urxm0 && "
		   "ip link set urxm0 up && ip link set urxm1 up && "
		   "ip link set lo up")) {
		snprintf(nsmsg, sizeof(nsmsg), "no veth with 198.18.0.1");
		return 77;
	}
	setenv("URXE_DEVICES", "rxe0 netdev urxm0", 1);
	open_all();
	rc = ibv_attach_mcast(qp[0], &g1, 0);
	if (!rc)
		rc = ibv_attach_mcast(qp[1], &g1, 0);
	if (rc) {
		snprintf(nsmsg, sizeof(nsmsg), "attach: %s", strerror(rc));
		return 1;
	}
	post_recv(0);
	post_recv(1);
	post_recv(2);
	send_group(3, &g1, 5);
	collect(500, got, &sent);
	if (!sent || got[0] != 1 || got[1] != 1 || got[2] || got[3]) {
		snprintf(nsmsg, sizeof(nsmsg), "sent %d, got %d %d %d %d",
			 sent, got[0], got[1], got[2], got[3]);
		return 1;
	}
	check_rx(0, &g1, 5);
	check_rx(1, &g1, 5);
	close_all();
	return 0;
}

START_TEST(real_interface)
{
	char msg[sizeof(nsmsg)] = "";
	int pfd[2], code, status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = tu_fork(20);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		code = netns_case();
		if (write(pfd[1], nsmsg, strlen(nsmsg)) < 0)
			code = 1;
		_exit(code);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	status = tu_wait_child(pid, 20000);
	code = tu_exit_code(status);
	if (code == 77) {
		fprintf(stderr, "note: real interface case skipped: %s\n", msg);
		return;
	}
	ck_assert_msg(code == 0, "real interface: %s (status %d)", msg, status);
}
END_TEST

/*
 * Two hosts: namespaces of two children joined by a veth, 198.18.0.1 and
 * 2001:db8::1 on the sender's urxm0, .2 and ::2 on the receiver's urxm1.
 * The receiver's QPs 0 and 1 join 239.255.0.1, QP 2 ff15::1; the sender
 * sends to each group once.  @step pipes: the receiver's namespace
 * exists (r->s), the link is in it (s->r), the QPs are attached (r->s).
 */
struct hosts {
	int made[2], moved[2], attached[2];
};

static int hosts_receiver(struct hosts *h)
{
	union ibv_gid g1 = group(1), g6 = { .raw = { 0xff, 0x15, [15] = 1 } };
	int got[NQP] = { 0 }, rc;
	bool sent = false;
	char c;

	if (unshare(CLONE_NEWNET)) {
		snprintf(nsmsg, sizeof(nsmsg), "unshare: %s", strerror(errno));
		return 77;
	}
	if (write(h->made[1], "m", 1) != 1 || tu_read_full(h->moved[0], &c, 1, 10000))
		return 77;
	/*
	 * No link-local address: the kernel adds it some time after the
	 * link comes up, and the GID table (link-local first) would then
	 * shift under indexes already chosen.
	 */
	if (system("ip link set urxm1 addrgenmode none && "
		   "ip addr add 198.18.0.2/24 dev urxm1 && "
		   "ip addr add 2001:db8::2/64 dev urxm1 nodad && "
		   "ip link set urxm1 up && ip link set lo up")) {
		snprintf(nsmsg, sizeof(nsmsg), "receiver: no urxm1");
		return 77;
	}
	setenv("URXE_DEVICES", "rxe0 netdev urxm1", 1);
	open_all();
	rc = ibv_attach_mcast(qp[0], &g1, 0);
	rc = rc ? rc : ibv_attach_mcast(qp[1], &g1, 0);
	rc = rc ? rc : ibv_attach_mcast(qp[2], &g6, 0);
	if (rc) {
		snprintf(nsmsg, sizeof(nsmsg), "attach: %s", strerror(rc));
		return 1;
	}
	post_recv(0);
	post_recv(1);
	post_recv(2);
	if (write(h->attached[1], "a", 1) != 1)
		return 1;
	collect(1500, got, &sent);
	if (got[0] != 1 || got[1] != 1 || got[2] != 1 || got[3]) {
		snprintf(nsmsg, sizeof(nsmsg), "receiver got %d %d %d %d",
			 got[0], got[1], got[2], got[3]);
		return 1;
	}
	check_rx(0, &g1, 1);
	check_rx(2, &g6, 2);
	close_all();
	return 0;
}

static int hosts_sender(struct hosts *h, pid_t receiver)
{
	union ibv_gid g1 = group(1), g6 = { .raw = { 0xff, 0x15, [15] = 1 } };
	int got[NQP] = { 0 };
	bool sent = false;
	char cmd[256], c;

	if (unshare(CLONE_NEWNET) || tu_read_full(h->made[0], &c, 1, 10000))
		return 77;
	snprintf(cmd, sizeof(cmd),
		 "ip link add urxm0 type veth peer name urxm1 && "
		 "ip link set urxm1 netns %d && "
		 "ip link set urxm0 addrgenmode none && "
		 "ip addr add 198.18.0.1/24 dev urxm0 && "
		 "ip addr add 2001:db8::1/64 dev urxm0 nodad && "
		 "ip link set urxm0 up && ip link set lo up", (int)receiver);
	if (system(cmd)) {
		snprintf(nsmsg, sizeof(nsmsg), "sender: no veth");
		return 77;
	}
	if (write(h->moved[1], "v", 1) != 1 ||
	    tu_read_full(h->attached[0], &c, 1, 10000))
		return 77;
	setenv("URXE_DEVICES", "rxe0 netdev urxm0", 1);
	open_all();
	if (sgid_v6 == 16) {
		snprintf(nsmsg, sizeof(nsmsg), "sender: no IPv6 GID");
		return 1;
	}
	send_group(3, &g1, 1);
	collect(100, got, &sent);
	send_group(3, &g6, 2);
	collect(100, got, &sent);
	close_all();
	return 0;
}

static pid_t hosts_fork(int (*fn)(struct hosts *, pid_t), struct hosts *h,
			pid_t peer, int *msg)
{
	pid_t pid;
	int code;

	if (pipe2(msg, O_CLOEXEC))
		return -1;
	pid = tu_fork(20);
	if (pid == 0) {
		close(msg[0]);
		code = fn(h, peer);
		if (write(msg[1], nsmsg, strlen(nsmsg)) < 0)
			code = 1;
		_exit(code);
	}
	close(msg[1]);
	return pid;
}

static int receiver_fn(struct hosts *h, pid_t peer)
{
	(void)peer;
	return hosts_receiver(h);
}

/* A child's exit code, its message in @msg. */
static int hosts_wait(pid_t pid, int fd, char *msg, size_t cap)
{
	ssize_t n = read(fd, msg, cap - 1);

	msg[n > 0 ? n : 0] = '\0';
	close(fd);
	return tu_exit_code(tu_wait_child(pid, 20000));
}

START_TEST(two_hosts)
{
	char rmsg[sizeof(nsmsg)], smsg[sizeof(nsmsg)];
	int rfd[2], sfd[2], rcode, scode;
	struct hosts h;
	pid_t r, s;

	ck_assert_int_eq(pipe(h.made), 0);
	ck_assert_int_eq(pipe(h.moved), 0);
	ck_assert_int_eq(pipe(h.attached), 0);
	r = hosts_fork(receiver_fn, &h, 0, rfd);
	ck_assert_int_gt(r, 0);
	s = hosts_fork(hosts_sender, &h, r, sfd);
	ck_assert_int_gt(s, 0);
	scode = hosts_wait(s, sfd[0], smsg, sizeof(smsg));
	if (scode == 77)
		tu_kill_child(r);
	rcode = hosts_wait(r, rfd[0], rmsg, sizeof(rmsg));
	if (scode == 77 || rcode == 77) {
		fprintf(stderr, "note: two hosts case skipped: %s%s\n", smsg,
			rmsg);
		return;
	}
	ck_assert_msg(scode == 0, "sender: %s (%d)", smsg, scode);
	ck_assert_msg(rcode == 0, "receiver: %s (%d)", rmsg, rcode);
}
END_TEST

/*
 * The registry itself (host/mcast.c): members are the live slots joined;
 * leaving what was not joined is -ENOENT; a full table is -ENOSPC until
 * records of a slot nobody holds any more make room.
 */
START_TEST(registry)
{
	struct urxe_slot a, b;
	unsigned int idx[4], i;
	uint8_t g[16] = { [10] = 0xff, [11] = 0xff, 239, 255 };

	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &b), 0);
	ck_assert_int_eq(urxe_slot_claim(sb.rundir, &a), 0);
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 0);
	ck_assert_int_eq(urxe_mcast_leave(sb.rundir, &a, g), -ENOENT);
	/* a fills the table, one group per record */
	for (i = 0; i < URXE_MCAST_REGISTRY; i++) {
		g[14] = (uint8_t)(i >> 8);
		g[15] = (uint8_t)i;
		ck_assert_int_eq(urxe_mcast_join(sb.rundir, &a, g), 0);
	}
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 1);
	ck_assert_uint_eq(idx[0], a.addr_index);
	g[14] = 0xff;
	ck_assert_int_eq(urxe_mcast_join(sb.rundir, &b, g), -ENOSPC);
	/* a second reference to a record needs no room */
	g[14] = 0;
	g[15] = 1;
	ck_assert_int_eq(urxe_mcast_join(sb.rundir, &a, g), 0);
	ck_assert_int_eq(urxe_mcast_leave(sb.rundir, &a, g), 0);
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 1);
	/* a goes without leaving: its records no longer count, nor fill */
	urxe_slot_release(&a);
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 0);
	g[14] = 0xff;
	ck_assert_int_eq(urxe_mcast_join(sb.rundir, &b, g), 0);
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 1);
	ck_assert_uint_eq(idx[0], b.addr_index);
	ck_assert_int_eq(urxe_mcast_leave(sb.rundir, &b, g), 0);
	ck_assert_int_eq(urxe_mcast_members(sb.rundir, g, idx, 4), 0);
	urxe_slot_release(&b);
}
END_TEST

static Suite *mcast_suite(void)
{
	Suite *s = suite_create("mcast");
	TCase *tc = tu_tcase(s, "loopback", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, registry);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, one_process);
	tcase_add_test(tc, two_processes);
	tcase_add_test(tc, dead_member);
	tcase_add_test(tc, fork_child);
	tcase_add_test(tc, real_interface);
	tcase_add_test(tc, two_hosts);
	return s;
}

int main(void)
{
	return tu_run(mcast_suite());
}
