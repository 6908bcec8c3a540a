// SPDX-License-Identifier: BSD-2-Clause
/*
 * UD through the public library on rxe0 (lo), both QPs in one process:
 * the Q_Key check (a wrong Q_Key is dropped, the receive WQE stays; the
 * WR's high Q_Key bit means "the sending QP's own", IBA 10.2.5); the GRH
 * in front of every UD receive (20 zero bytes and a valid IPv4 header:
 * addresses, TTL, TOS, protocol, length, checksum), src_qp, IBV_WC_GRH and
 * wc.sl naming the network header as mlx5 does (2 IPv4, 1 IPv6: UCX reads it);
 * message sizes up to the port MTU, and past it (C10-93.1.1: no packet,
 * no error — as kernel rxe; URXE_PCAP shows what was sent); a receive
 * buffer too short;
 * ibv_init_ah_from_wc(3) and ibv_create_ah_from_wc(3): the reply to a
 * sender built from its receive, the attributes from IPv4 and IPv6 GRHs,
 * and the cases that fail.  Over IPv6 (root: a child in a network
 * namespace of its own, rxe0 on a veth with 2001:db8::7): the IPv6 GRH
 * and the reply through the AH from the wc.
 */
#include <check.h>
#include <sched.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "testutil.h"
#include "verbs_util.h"

#define QKEY 0x11111111u
#define GRH_LEN 40
#define BUFSZ (GRH_LEN + 4096 + 64)

static struct tu_sandbox sb;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid0;
static struct ibv_qp *u1, *u2;
static uint8_t *sbuf, *rbuf;
static struct ibv_mr *smr, *rmr;

static struct ibv_qp *make_ud(uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	ck_assert_msg(qp != NULL, "ibv_create_qp: %s", strerror(errno));
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	ctx = vu_open_rxe0();
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid0), 0);
	sbuf = calloc(1, BUFSZ);
	rbuf = calloc(1, BUFSZ);
	ck_assert(sbuf && rbuf);
	smr = ibv_reg_mr(pd, sbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	ck_assert(smr && rmr);
	u1 = make_ud(QKEY);
	u2 = make_ud(QKEY);
}

/* Closes what setup() made (the device instance with it). */
static void release(void)
{
	if (u1)
		ibv_destroy_qp(u1);
	if (u2)
		ibv_destroy_qp(u2);
	if (smr)
		ibv_dereg_mr(smr);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	free(sbuf);
	free(rbuf);
	u1 = u2 = NULL;
	smr = rmr = NULL;
	sbuf = rbuf = NULL;
	cq = NULL;
	pd = NULL;
	ctx = NULL;
}

static void teardown(void)
{
	release();
	tu_sandbox_fini(&sb);
}

/* What the process sent and received, per packet (URXE_PCAP). */
static char *pcap_dir, *pcap_file;

static void pcap_setup(void)
{
	pcap_dir = tu_mkdtemp();
	ck_assert_ptr_nonnull(pcap_dir);
	pcap_file = tu_path(pcap_dir, "ud.pcap");
	ck_assert_ptr_nonnull(pcap_file);
	setenv("URXE_PCAP", pcap_file, 1);
	setup();
}

static void pcap_teardown(void)
{
	teardown();
	unsetenv("URXE_PCAP");
	tu_rmtree(pcap_dir);
	free(pcap_dir);
	free(pcap_file);
	pcap_dir = pcap_file = NULL;
}

static struct ibv_ah *make_ah(uint8_t tclass, uint8_t hop_limit)
{
	struct ibv_ah_attr av = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = gid0, .hop_limit = hop_limit,
			 .traffic_class = tclass },
	};
	struct ibv_ah *ah = ibv_create_ah(pd, &av);

	ck_assert_msg(ah != NULL, "ibv_create_ah: %s", strerror(errno));
	return ah;
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	ck_assert_int_eq(ibv_post_recv(qp, &wr, &bad), 0);
}

static void post_ud(struct ibv_qp *qp, uint64_t wr_id, struct ibv_ah *ah,
		    uint32_t dqpn, uint32_t qkey, void *buf, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = len,
			     .lkey = smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = dqpn, .remote_qkey = qkey },
	};
	struct ibv_send_wr *bad = NULL;

	ck_assert_int_eq(ibv_post_send(qp, &wr, &bad), 0);
}

/*
 * Takes completions until @n arrived or @ms passed (polling drives the
 * engine); returns how many.
 */
static int poll_n(struct ibv_wc *wc, int n, int ms)
{
	struct timespec tick = { 0, 200 * 1000 };
	int got = 0, i, rc;

	for (i = 0; i < ms * 5 && got < n; i++) {
		rc = ibv_poll_cq(cq, n - got, wc + got);
		ck_assert_int_ge(rc, 0);
		got += rc;
		if (!rc)
			nanosleep(&tick, NULL);
	}
	return got;
}

static const struct ibv_wc *wc_of(const struct ibv_wc *wc, int n,
				  uint64_t wr_id)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	ck_abort_msg("no completion for wr_id %llu", (unsigned long long)wr_id);
	return NULL;
}

/* Sends @len bytes u1 -> u2 with @qkey; true if u2 received them. */
static bool send_one(struct ibv_ah *ah, uint32_t qkey, uint32_t len,
		     struct ibv_wc *recv_wc)
{
	struct ibv_wc wc[2];
	int n;

	memset(sbuf, 0x5a, len);
	post_ud(u1, 1, ah, u2->qp_num, qkey, sbuf, len);
	n = poll_n(wc, 2, 300);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(wc_of(wc, n, 1)->status, IBV_WC_SUCCESS);
	if (n == 1)
		return false;
	*recv_wc = *wc_of(wc, n, 100);
	return true;
}

/* ---- Q_Keys (IBA 10.2.5) ---- */

START_TEST(qkey_mismatch_dropped)
{
	struct ibv_ah *ah = make_ah(0, 64);
	struct ibv_wc wc;

	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert_msg(!send_one(ah, QKEY ^ 1, 16, &wc),
		      "a datagram with the wrong Q_Key was delivered");
	/* The receive WQE is still there: the right Q_Key takes it. */
	ck_assert(send_one(ah, QKEY, 16, &wc));
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, GRH_LEN + 16);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

START_TEST(qkey_privileged_bit)
{
	struct ibv_ah *ah = make_ah(0, 64);
	struct ibv_qp_attr a = { .qkey = QKEY + 1 };
	struct ibv_wc wc;

	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	/* The high bit: u1's own Q_Key, which is u2's — delivered. */
	ck_assert(send_one(ah, 0x80000000u, 16, &wc));
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	/* Once u1's own Q_Key differs, the same WR is dropped. */
	ck_assert_int_eq(ibv_modify_qp(u1, &a, IBV_QP_QKEY), 0);
	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert(!send_one(ah, 0x80000000u | QKEY, 16, &wc));
	/* The low bits of a privileged Q_Key do not matter either way. */
	a.qkey = QKEY;
	ck_assert_int_eq(ibv_modify_qp(u1, &a, IBV_QP_QKEY), 0);
	ck_assert(send_one(ah, 0xffffffffu, 16, &wc));
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/* ---- the GRH and the completion ---- */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

START_TEST(grh_ipv4)
{
	struct ibv_ah *ah = make_ah(0x28, 7);
	static const uint8_t zero[20];
	const uint8_t *ip = rbuf + 20;
	uint32_t sum = 0;
	struct ibv_wc wc;
	int i;

	memset(rbuf, 0xee, GRH_LEN);
	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert(send_one(ah, QKEY, 100, &wc));
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, GRH_LEN + 100);
	ck_assert_uint_eq(wc.src_qp, u1->qp_num);
	ck_assert_uint_eq(wc.qp_num, u2->qp_num);
	ck_assert(wc.wc_flags & IBV_WC_GRH);
	ck_assert(!(wc.wc_flags & IBV_WC_WITH_IMM));
	ck_assert_uint_eq(wc.sl, 2);		/* network header: IPv4, as mlx5 */
	ck_assert_int_eq(memcmp(rbuf, zero, 20), 0);
	ck_assert_uint_eq(ip[0], 0x45);		/* version 4, IHL 5 */
	ck_assert_uint_eq(ip[1], 0x28);		/* TOS = traffic class */
	/* IP + UDP + BTH + DETH + payload + ICRC */
	ck_assert_uint_eq(get16(ip + 2), 20 + 8 + 12 + 8 + 100 + 4);
	ck_assert_uint_eq(get16(ip + 4), 0);	/* ID */
	/*
	 * The TTL is the route's (64), not the AV's hop limit: the kernel
	 * resolves a RoCEv2 hop limit from the route, and so does urxe.
	 */
	ck_assert_uint_eq(ip[8], 64);
	ck_assert_uint_eq(ip[9], 17);		/* UDP */
	ck_assert_int_eq(memcmp(ip + 12, gid0.raw + 12, 4), 0);
	ck_assert_int_eq(memcmp(ip + 16, gid0.raw + 12, 4), 0);
	for (i = 0; i < 20; i += 2)
		sum += get16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ck_assert_msg(sum == 0xffff, "IPv4 header checksum invalid (%#x)", sum);
	for (i = 0; i < 100; i++)
		ck_assert_uint_eq(rbuf[GRH_LEN + i], 0x5a);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/*
 * Loopback's GID[1] is GID[0] again (the index tutorials pass): every
 * query says so, and a datagram sent from it leaves from the slot's own
 * address, the only one the instance has.
 */
START_TEST(gid1_is_gid0)
{
	struct ibv_ah_attr av = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = gid0, .sgid_index = 1, .hop_limit = 64 },
	};
	const uint8_t *ip = rbuf + 20;
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	union ibv_gid g;
	struct ibv_wc wc;
	struct ibv_ah *ah;

	ck_assert_int_eq(ibv_query_port(ctx, 1, &pa), 0);
	ck_assert_int_ge(pa.gid_tbl_len, 2);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 1, &g), 0);
	ck_assert_mem_eq(g.raw, gid0.raw, 16);
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, 1, &e, 0), 0);
	ck_assert_mem_eq(e.gid.raw, gid0.raw, 16);
	ck_assert_uint_eq(e.gid_index, 1);
	ck_assert_uint_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	/* Index 2 is empty. */
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, 2, &e, 0), ENODATA);

	ah = ibv_create_ah(pd, &av);
	ck_assert_msg(ah != NULL, "ibv_create_ah, sgid_index 1: %s", strerror(errno));
	memset(rbuf, 0xee, GRH_LEN);
	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert(send_one(ah, QKEY, 32, &wc));
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(ip + 12, gid0.raw + 12, 4), 0);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/*
 * Reads the URXE_PCAP file (pcapng, host order): @npkts frames (each sent
 * once and received once), every one a UD SEND_ONLY of at most @mtu
 * payload bytes.  Blocks: a section header, an interface, then one
 * enhanced packet block (type 6) per frame, its captured length at byte
 * 20 and the frame at 28.  Ethernet 14 + IPv4 20 + UDP 8 before the BTH;
 * BTH 12 + DETH 8 + ICRC 4.
 */
static void check_capture(unsigned int npkts, uint32_t mtu)
{
	uint8_t blk[28 + 14 + 20 + 8 + 12 + 8 + 4096 + 4 + 512];
	const uint8_t *frame = blk + 28;
	FILE *f = fopen(pcap_file, "rb");
	unsigned int n = 0, blocks = 0;
	uint32_t type, len, caplen;

	ck_assert_msg(f != NULL, "no capture %s", pcap_file);
	while (fread(blk, 1, 8, f) == 8) {
		memcpy(&type, blk, 4);
		memcpy(&len, blk + 4, 4);
		ck_assert_msg(len >= 12 && len <= sizeof(blk) && len % 4 == 0,
			      "block %u: %u bytes", blocks, len);
		ck_assert_uint_eq(fread(blk + 8, 1, len - 8, f), len - 8);
		ck_assert_uint_eq(type, blocks == 0 ? 0x0A0D0D0Au :
					blocks == 1 ? 1u : 6u);
		blocks++;
		if (type != 6)
			continue;
		memcpy(&caplen, blk + 20, 4);
		ck_assert_msg(caplen <= len - 32 &&
			      caplen >= 14 + 20 + 8 + 24,
			      "frame %u: %u bytes", n, caplen);
		ck_assert_msg(frame[14 + 20 + 8] == 0x64,
			      "frame %u: opcode %#x, not UD SEND_ONLY", n,
			      frame[14 + 20 + 8]);
		ck_assert_uint_le(caplen - (14 + 20 + 8 + 12 + 8 + 4), mtu);
		n++;
	}
	fclose(f);
	ck_assert_uint_eq(n, npkts);
}

/* Up to the port's active MTU a datagram arrives; past it nothing. */
START_TEST(sizes_to_mtu)
{
	static const uint32_t ok[] = { 0, 1, 1000, 4095 };
	struct ibv_port_attr pa;
	struct ibv_ah *ah = make_ah(0, 64);
	struct ibv_wc wc;
	uint32_t mtu;
	size_t i;

	ck_assert_int_eq(ibv_query_port(ctx, 1, &pa), 0);
	mtu = 128u << pa.active_mtu;
	ck_assert_uint_eq(mtu, 4096);		/* lo: 65536 - headers */
	for (i = 0; i <= sizeof(ok) / sizeof(ok[0]); i++) {
		uint32_t len = i < sizeof(ok) / sizeof(ok[0]) ? ok[i] : mtu;

		memset(rbuf, 0, BUFSZ);
		post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
		ck_assert_msg(send_one(ah, QKEY, len, &wc), "%u bytes lost", len);
		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc.byte_len, GRH_LEN + len);
		ck_assert(len == 0 || rbuf[GRH_LEN + len - 1] == 0x5a);
	}
	/*
	 * IBA C10-93.1.1: a UD message longer than the MTU emits no packet
	 * and reports no error (kernel rxe completes it successfully).  The
	 * posted receive stays for the next datagram.
	 */
	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert(!send_one(ah, QKEY, mtu + 1, &wc));
	ck_assert(send_one(ah, QKEY, 8, &wc));
	ck_assert_uint_eq(wc.byte_len, GRH_LEN + 8);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
	/* Closing the instance closes its capture: no packet but UD SEND_ONLYs. */
	release();
	check_capture(2 * (sizeof(ok) / sizeof(ok[0]) + 2), mtu);
}
END_TEST

/* A buffer without room for GRH + payload: IBV_WC_LOC_LEN_ERR. */
START_TEST(recv_too_short)
{
	struct ibv_ah *ah = make_ah(0, 64);
	struct ibv_wc wc;

	post_recv(u2, 100, rbuf, GRH_LEN + 15, rmr->lkey);
	ck_assert(send_one(ah, QKEY, 16, &wc));
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/* ---- AHs from a work completion ---- */

/* u2 answers u1 through the AH its receive gives; u1 checks the answer. */
START_TEST(reply_from_wc)
{
	struct ibv_ah *ah = make_ah(0x28, 9), *reply;
	struct ibv_ah_attr at;
	struct ibv_wc rwc, wc[2];
	int n;

	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	ck_assert(send_one(ah, QKEY, 32, &rwc));
	ck_assert_int_eq(ibv_init_ah_from_wc(ctx, 1, &rwc,
					     (struct ibv_grh *)rbuf, &at), 0);
	ck_assert_uint_eq(at.is_global, 1);
	ck_assert_uint_eq(at.port_num, 1);
	ck_assert_int_eq(memcmp(at.grh.dgid.raw, gid0.raw, 16), 0);
	ck_assert_uint_eq(at.grh.sgid_index, 0);
	ck_assert_uint_eq(at.grh.hop_limit, 64);	/* the TTL received */
	ck_assert_uint_eq(at.grh.traffic_class, 0x28);
	ck_assert_uint_eq(at.grh.flow_label, 0);
	reply = ibv_create_ah_from_wc(pd, &rwc, (struct ibv_grh *)rbuf, 1);
	ck_assert_msg(reply != NULL, "ibv_create_ah_from_wc: %s",
		      strerror(errno));
	ck_assert_ptr_eq(reply->pd, pd);
	/* The reply: u2 -> rwc.src_qp, through the AH from the wc. */
	memset(rbuf, 0, BUFSZ);
	post_recv(u1, 200, rbuf, BUFSZ, rmr->lkey);
	memcpy(sbuf, "pong", 5);
	post_ud(u2, 2, reply, rwc.src_qp, QKEY, sbuf, 5);
	n = poll_n(wc, 2, 300);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(wc_of(wc, n, 2)->status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc_of(wc, n, 200)->status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc_of(wc, n, 200)->src_qp, u2->qp_num);
	ck_assert_str_eq((char *)rbuf + GRH_LEN, "pong");
	ck_assert_uint_eq(rbuf[20 + 1], 0x28);
	ck_assert_int_eq(ibv_destroy_ah(reply), 0);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
}
END_TEST

/* An IPv4 header at byte 20, as urxe and kernel rxe write it. */
static void make_grh4(uint8_t *g, const uint8_t src[4], const uint8_t dst[4])
{
	uint32_t sum = 0;
	int i;

	memset(g, 0, GRH_LEN);
	g[20] = 0x45;
	g[21] = 0x10;
	g[22] = 0;
	g[23] = 60;
	g[26] = 0x40;
	g[28] = 33;
	g[29] = 17;
	memcpy(g + 32, src, 4);
	memcpy(g + 36, dst, 4);
	for (i = 20; i < 40; i += 2)
		sum += get16(g + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	g[30] = (uint8_t)(~sum >> 8);
	g[31] = (uint8_t)~sum;
}

/* An IPv6 header: version 6, class 0x24, flow 0x12345, hop limit 5. */
static void make_grh6(struct ibv_grh *g, const union ibv_gid *src,
		      const union ibv_gid *dst, uint8_t next)
{
	memset(g, 0, sizeof(*g));
	g->version_tclass_flow = htobe32(6u << 28 | 0x24u << 20 | 0x12345);
	g->paylen = htobe16(60);
	g->next_hdr = next;
	g->hop_limit = 5;
	g->sgid = *src;
	g->dgid = *dst;
}

static void init_fails(struct ibv_wc *wc, const void *grh, int err,
		       const char *what)
{
	struct ibv_ah_attr at;

	errno = 0;
	ck_assert_msg(ibv_init_ah_from_wc(ctx, 1, wc, (struct ibv_grh *)grh,
					  &at) == -1, "%s: accepted", what);
	ck_assert_msg(errno == err, "%s: errno %d, expected %d", what, errno,
		      err);
	errno = 0;
	ck_assert_ptr_null(ibv_create_ah_from_wc(pd, wc, (struct ibv_grh *)grh, 1));
	ck_assert_msg(errno == err, "%s (create): errno %d", what, errno);
}

START_TEST(init_from_grh)
{
	static const uint8_t peer4[4] = { 198, 18, 0, 9 };
	static const uint8_t mcast4[4] = { 239, 255, 0, 1 };
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .src_qp = 0x123 };
	union ibv_gid peer6 = { .raw = { 0x20, 0x01, 0x0d, 0xb8, [15] = 9 } };
	union ibv_gid mcast6 = { .raw = { 0xff, 0x15, [15] = 1 } };
	uint8_t g[GRH_LEN];
	struct ibv_grh g6;
	struct ibv_ah_attr at;

	/* IPv4 from 198.18.0.9 to our address. */
	make_grh4(g, peer4, gid0.raw + 12);
	ck_assert_int_eq(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)g,
					     &at), 0);
	ck_assert_uint_eq(at.is_global, 1);
	ck_assert_uint_eq(at.grh.sgid_index, 0);
	ck_assert_uint_eq(at.grh.hop_limit, 33);
	ck_assert_uint_eq(at.grh.traffic_class, 0x10);
	ck_assert_uint_eq(at.grh.dgid.raw[11], 0xff);
	ck_assert_int_eq(memcmp(at.grh.dgid.raw + 12, peer4, 4), 0);
	/* An IPv6 header to our GID (IPv4-mapped: it is GID 0's value). */
	make_grh6(&g6, &peer6, &gid0, 17);
	ck_assert_int_eq(ibv_init_ah_from_wc(ctx, 1, &wc, &g6, &at), 0);
	ck_assert_uint_eq(at.grh.sgid_index, 0);
	ck_assert_int_eq(memcmp(at.grh.dgid.raw, peer6.raw, 16), 0);
	ck_assert_uint_eq(at.grh.hop_limit, 5);
	ck_assert_uint_eq(at.grh.traffic_class, 0x24);
	ck_assert_uint_eq(at.grh.flow_label, 0x12345);
	/* A first nibble of 6 and a checksummed IPv4 header: IPv4 wins. */
	make_grh4(g, peer4, gid0.raw + 12);
	g[0] = 0x60;
	ck_assert_int_eq(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)g,
					     &at), 0);
	ck_assert_uint_eq(at.grh.hop_limit, 33);
	/* ... with a bad checksum it is read as IPv6 (next header 0). */
	g[30] ^= 1;
	init_fails(&wc, g, EPROTONOSUPPORT, "IPv6 with next header 0");

	/* No GRH on RoCE: nothing to answer (libibverbs' ibv_create_ah fails). */
	make_grh4(g, peer4, gid0.raw + 12);
	wc.wc_flags = 0;
	init_fails(&wc, g, EINVAL, "no IBV_WC_GRH");
	wc.wc_flags = IBV_WC_GRH;
	make_grh4(g, peer4, peer4);
	init_fails(&wc, g, ENOENT, "IPv4 to no local GID");
	make_grh4(g, peer4, mcast4);
	init_fails(&wc, g, EINVAL, "IPv4 multicast");
	make_grh6(&g6, &peer6, &mcast6, 17);
	init_fails(&wc, &g6, EINVAL, "IPv6 multicast");
	make_grh6(&g6, &peer6, &gid0, 0x1b);
	init_fails(&wc, &g6, ENOENT, "RoCE v1 (no v1 GIDs)");
	make_grh6(&g6, &peer6, &gid0, 6);
	init_fails(&wc, &g6, EPROTONOSUPPORT, "next header TCP");
	memset(g, 0, sizeof(g));
	init_fails(&wc, g, EPROTONOSUPPORT, "no IP version");
	make_grh4(g, peer4, gid0.raw + 12);
	errno = 0;
	ck_assert_int_eq(ibv_init_ah_from_wc(ctx, 2, &wc, (struct ibv_grh *)g,
					     &at), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(ibv_create_ah_from_wc(pd, NULL, (struct ibv_grh *)g, 1));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* ---- IPv6, in a child in a network namespace of its own ---- */

static char v6msg[256];
#define CHK(cond)							\
	do {								\
		if (!(cond)) {						\
			snprintf(v6msg, sizeof(v6msg), "line %d: %s (%s)", \
				 __LINE__, #cond, strerror(errno));	\
			return 1;					\
		}							\
	} while (0)

static const union ibv_gid v6_gid = {
	.raw = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 },
};

/* 0, 77 (no namespace or veth here) or 1 with v6msg set. */
static int v6_netns(void)
{
	if (unshare(CLONE_NEWNET)) {
		snprintf(v6msg, sizeof(v6msg), "unshare: %s", strerror(errno));
		return 77;
	}
	if (system("ip link add urxv0 type veth peer name urxv1 && "
		   "ip addr add 2001:db8::7/64 dev urxv0 nodad && "
		   "ip link set urxv0 up && ip link set urxv1 up && "
		   "ip link set lo up")) {
		snprintf(v6msg, sizeof(v6msg), "no veth with 2001:db8::7");
		return 77;
	}
	return 0;
}

static int v6_poll(struct ibv_wc *wc, int n)
{
	struct timespec tick = { 0, 200 * 1000 };
	int got = 0, i, rc;

	for (i = 0; i < 10000 && got < n; i++) {
		rc = ibv_poll_cq(cq, n - got, wc + got);
		if (rc < 0)
			return rc;
		got += rc;
		if (!rc)
			nanosleep(&tick, NULL);
	}
	return got;
}

/* The IPv6 GRH of a datagram to ourselves, and the reply built from it. */
static int v6_case(void)
{
	struct ibv_ah_attr av = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah, *reply;
	struct ibv_grh *g;
	struct ibv_wc wc[2], rwc;
	union ibv_gid gid;
	uint32_t vtf;
	int idx = -1, i, n;

	setenv("URXE_DEVICES", "rxe0 netdev urxv0", 1);
	ctx = open_dev("rxe0");
	CHK(ctx);
	for (i = 0; i < 16 && idx < 0; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) &&
		    !memcmp(gid.raw, v6_gid.raw, 16))
			idx = i;
	CHK(idx >= 0);
	pd = ibv_alloc_pd(ctx);
	CHK(pd);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHK(cq);
	sbuf = calloc(1, BUFSZ);
	rbuf = calloc(1, BUFSZ);
	CHK(sbuf && rbuf);
	smr = ibv_reg_mr(pd, sbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	CHK(smr && rmr);
	u1 = make_ud(QKEY);
	u2 = make_ud(QKEY);
	av.grh.dgid = v6_gid;
	av.grh.sgid_index = (uint8_t)idx;
	av.grh.traffic_class = 0x28;
	ah = ibv_create_ah(pd, &av);
	CHK(ah);
	post_recv(u2, 100, rbuf, BUFSZ, rmr->lkey);
	memset(sbuf, 0x6b, 100);
	post_ud(u1, 1, ah, u2->qp_num, QKEY, sbuf, 100);
	n = v6_poll(wc, 2);
	CHK(n == 2);
	rwc = *wc_of(wc, n, 100);
	CHK(rwc.status == IBV_WC_SUCCESS);
	CHK(rwc.wc_flags & IBV_WC_GRH);
	CHK(rwc.src_qp == u1->qp_num);
	CHK(rwc.byte_len == GRH_LEN + 100);
	CHK(rwc.sl == 1);			/* network header: IPv6 */
	g = (struct ibv_grh *)rbuf;
	vtf = be32toh(g->version_tclass_flow);
	CHK(vtf >> 28 == 6);
	CHK((vtf >> 20 & 0xff) == 0x28);
	/* UDP + BTH + DETH + payload + ICRC */
	CHK(be16toh(g->paylen) == 8 + 12 + 8 + 100 + 4);
	CHK(g->next_hdr == 17);
	CHK(g->hop_limit == 64);
	CHK(!memcmp(g->sgid.raw, v6_gid.raw, 16));
	CHK(!memcmp(g->dgid.raw, v6_gid.raw, 16));
	CHK(rbuf[GRH_LEN] == 0x6b && rbuf[GRH_LEN + 99] == 0x6b);
	/* The reply, through the AH the completion gives. */
	reply = ibv_create_ah_from_wc(pd, &rwc, g, 1);
	CHK(reply);
	memset(rbuf, 0, BUFSZ);
	post_recv(u1, 200, rbuf, BUFSZ, rmr->lkey);
	memcpy(sbuf, "pong6", 6);
	post_ud(u2, 2, reply, rwc.src_qp, QKEY, sbuf, 6);
	n = v6_poll(wc, 2);
	CHK(n == 2);
	CHK(wc_of(wc, n, 200)->status == IBV_WC_SUCCESS);
	CHK(!strcmp((char *)rbuf + GRH_LEN, "pong6"));
	CHK(be32toh(((struct ibv_grh *)rbuf)->version_tclass_flow) >> 20 ==
	    (6u << 8 | 0x28));
	CHK(!ibv_destroy_ah(reply) && !ibv_destroy_ah(ah));
	teardown();
	return 0;
}

START_TEST(grh_ipv6)
{
	char msg[sizeof(v6msg)] = "";
	int pfd[2], code, status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = tu_fork(20);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		code = v6_netns();
		if (!code)
			code = v6_case();
		if (write(pfd[1], v6msg, strlen(v6msg)) < 0)
			code = 1;
		_exit(code);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	status = tu_wait_child(pid, 20000);
	code = tu_exit_code(status);
	tu_sandbox_fini(&sb);
	if (code == 77) {
		fprintf(stderr, "note: IPv6 case skipped: %s\n", msg);
		return;
	}
	ck_assert_msg(code == 0, "IPv6 case: %s (status %d)", msg, status);
}
END_TEST

static Suite *ud_suite(void)
{
	Suite *s = suite_create("ud");
	TCase *tc = tu_tcase(s, "ud", setup, teardown);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, qkey_mismatch_dropped);
	tcase_add_test(tc, qkey_privileged_bit);
	tcase_add_test(tc, grh_ipv4);
	tcase_add_test(tc, gid1_is_gid0);
	tcase_add_test(tc, recv_too_short);
	tcase_add_test(tc, reply_from_wc);
	tcase_add_test(tc, init_from_grh);

	tc = tu_tcase(s, "captured", pcap_setup, pcap_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, sizes_to_mtu);

	tc = tu_tcase(s, "ipv6", NULL, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, grh_ipv6);
	return s;
}

int main(void)
{
	return tu_run(ud_suite());
}
