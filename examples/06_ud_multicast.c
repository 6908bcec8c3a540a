// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 6: UD (unreliable datagram) and multicast.
 *
 * A UD QP is not connected: like a UDP socket, one QP sends to any number
 * of others, each SEND naming its destination in the work request: an
 * address handle (AH: the destination GID, made once with
 * ibv_create_ah()), the remote QP number and a Q_Key, which must match
 * the one the receiving QP was given (else the datagram is dropped).
 * Nothing is acknowledged or retried, a message fits in one packet (at
 * most the path MTU), and SEND is the only operation.
 *
 * Every UD receive buffer starts with 40 bytes for the GRH (global route
 * header) of the packet.  On RoCE v2 over IPv4 the last 20 of those hold
 * the IP header; the message follows at byte 40.
 *
 * Multicast: a UD QP attached to a group (ibv_attach_mcast) receives every
 * SEND addressed to the group's GID with QP number 0xFFFFFF, one copy per
 * attached QP.  On RoCE v2 a multicast GID is an IP multicast address
 * (an IPv4 one written ::ffff:239.255.0.1): the device joins that IP group
 * on its interface.
 *
 *   06_ud_multicast [-d DEV] [-g GIDX] [-G GROUP]   (default 239.255.0.1)
 *
 * (An IPv6 group, such as ff15::1, needs an IPv6 source GID: -g GIDX.)
 *
 * One sender QP and two receiver QPs, in one process: a unicast SEND to
 * receiver 0, then a multicast SEND that reaches both.
 */
#include "common.h"

#include <arpa/inet.h>

#define QKEY 0x11111111u	/* any value; both sides must agree */
#define GRH_SIZE 40
#define MSG_SIZE 64
#define SLOT (GRH_SIZE + MSG_SIZE)
#define MCAST_QPN 0xffffffu

struct ud {
	struct ibv_cq *cq;
	struct ibv_mr *mr;	/* slot 0: to send from; 1, 2: receivers' */
	struct ibv_qp *qp[3];	/* 0: the sender, 1 and 2: receivers */
};

/* UD QPs take no peer: RESET -> INIT (port, Q_Key) -> RTR -> RTS. */
static struct ibv_qp *create_ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = PORT_NUM, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY), "ibv_modify_qp(INIT)");
	a.qp_state = IBV_QPS_RTR;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE), "ibv_modify_qp(RTR)");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
	      "ibv_modify_qp(RTS)");
	return qp;
}

static char *slot(struct ud *u, int i)
{
	return (char *)u->mr->addr + i * SLOT;
}

static void post_recv(struct ud *u, int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot(u, i), .length = SLOT,
			       .lkey = u->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	check(ibv_post_recv(u->qp[i], &wr, &bad), "ibv_post_recv");
}

/* A SEND from QP 0 to @qpn through @ah; waits for its completion. */
static void send_to(struct ud *u, struct ibv_ah *ah, uint32_t qpn,
		    const char *text)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot(u, 0),
			       .length = MSG_SIZE, .lkey = u->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = QKEY },
	}, *bad;
	struct ibv_wc wc;

	snprintf(slot(u, 0), MSG_SIZE, "%s", text);
	check(ibv_post_send(u->qp[0], &wr, &bad), "ibv_post_send");
	wait_completion(u->cq, &wc);
	/* Success means "sent", not "received": UD has no ACKs. */
	printf("SEND \"%s\": %s\n", text, wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

/* Takes @n receive completions, then reports receivers 1 and 2. */
static void receive(struct ud *u, int n)
{
	int got[3] = { 0 };
	struct ibv_wc wc;

	while (n--) {
		wait_completion(u->cq, &wc);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.src_qp != u->qp[0]->qp_num || wc.wr_id > 2) {
			printf("unexpected completion: %s\n",
			       wc_status_name(wc.status));
			exit(1);
		}
		got[wc.wr_id] = (int)wc.byte_len;
	}
	for (int i = 1; i <= 2; i++)
		if (got[i])
			printf("  receiver %d got %d bytes (%d of GRH): \"%s\"\n",
			       i, got[i], GRH_SIZE, slot(u, i) + GRH_SIZE);
}

/* The group's GID: an IPv4 group maps to ::ffff:a.b.c.d. */
static union ibv_gid group_gid(const char *text)
{
	union ibv_gid g = { .raw = { 0 } };
	struct in_addr a4;

	if (inet_pton(AF_INET, text, &a4) == 1) {
		g.raw[10] = g.raw[11] = 0xff;
		memcpy(&g.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, text, g.raw) != 1) {
		errno = EINVAL;
		die("parsing the group address");
	}
	return g;
}

static struct ibv_ah *make_ah(struct ibv_pd *pd, union ibv_gid dgid, int gidx)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = PORT_NUM,
		.grh = { .dgid = dgid, .sgid_index = (uint8_t)gidx,
			 .hop_limit = 1 },
	};
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);

	if (!ah)
		die("ibv_create_ah");
	return ah;
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:G:");
	struct ibv_context *ctx = open_device(o.dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ud u = { .cq = ibv_create_cq(ctx, 8, NULL, NULL, 0) };
	char *buf = calloc(3, SLOT);
	union ibv_gid me, group = group_gid(o.group);

	if (!pd || !u.cq || !buf)
		die("ibv_alloc_pd/ibv_create_cq/calloc");
	u.mr = ibv_reg_mr(pd, buf, 3 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!u.mr)
		die("ibv_reg_mr");
	for (int i = 0; i < 3; i++)
		u.qp[i] = create_ud_qp(pd, u.cq);
	check(ibv_query_gid(ctx, PORT_NUM, o.gidx, &me), "ibv_query_gid");

	/* Unicast: to receiver 1's QP number at our own GID. */
	struct ibv_ah *ah = make_ah(pd, me, o.gidx);
	post_recv(&u, 1);
	send_to(&u, ah, u.qp[1]->qp_num, "one datagram for receiver 1");
	receive(&u, 1);

	/* Multicast: both receivers attach; one SEND, two copies.  (On
	 * RoCE the LID argument is unused: 0.) */
	struct ibv_ah *mc_ah = make_ah(pd, group, o.gidx);
	for (int i = 1; i <= 2; i++) {
		check(ibv_attach_mcast(u.qp[i], &group, 0), "ibv_attach_mcast");
		post_recv(&u, i);
	}
	printf("receivers 1 and 2 attached to group %s\n", o.group);
	send_to(&u, mc_ah, MCAST_QPN, "one datagram for the group");
	receive(&u, 2);
	for (int i = 1; i <= 2; i++)
		check(ibv_detach_mcast(u.qp[i], &group, 0), "ibv_detach_mcast");

	check(ibv_destroy_ah(ah), "ibv_destroy_ah");
	check(ibv_destroy_ah(mc_ah), "ibv_destroy_ah");
	for (int i = 0; i < 3; i++)
		check(ibv_destroy_qp(u.qp[i]), "ibv_destroy_qp");
	check(ibv_dereg_mr(u.mr), "ibv_dereg_mr");
	check(ibv_destroy_cq(u.cq), "ibv_destroy_cq");
	check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	check(ibv_close_device(ctx), "ibv_close_device");
	free(buf);
	return 0;
}
