// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 9: connecting through the RDMA connection manager (RDMA CM).
 *
 * Lessons 2-8 connected QPs by hand: an out-of-band exchange of QP
 * numbers, PSNs and GIDs, then INIT, RTR and RTS.  The RDMA CM
 * (librdmacm) does all of it with IP addresses and ports, much as
 * sockets do: a server listens, a client connects, and the CM exchanges
 * the communication management messages of IBA chapter 12 (REQ, REP,
 * RTU; on RoCE they travel as UDP datagrams like any RDMA packet), moves
 * both QPs to RTS and picks the PSNs.  rdma_getaddrinfo() resolves an
 * address the way getaddrinfo() does; rdma_create_ep() makes the CM id
 * (the CM's socket) and, given the attributes, its QP and CQs.
 *
 * This lesson uses the synchronous calls (each blocks until done); the
 * event-channel API (rdma_create_event_channel, rdma_get_cm_event) does
 * the same steps asynchronously, for servers with many connections.
 * The rdma_post_send/recv and rdma_get_send/recv_comp helpers of
 * <rdma/rdma_verbs.h> are thin wrappers around ibv_post_send and friends.
 *
 *   09_rdma_cm [-p PORT]           the server: serves one client
 *   09_rdma_cm [-p PORT] SERVER    the client, e.g. 09_rdma_cm 127.0.0.1
 *
 * No -d or -g here: the RDMA CM picks the device, port and GID that own
 * the address.  Compile with -lrdmacm -libverbs.
 */
#include "common.h"

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define MSG_SIZE 64

/* The CM makes the QP and its CQs from these (rdma_create_ep). */
static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,	/* every send completes */
	};

	return a;
}

/* Step 1: an address (and port) to listen on or to connect to. */
static struct rdma_addrinfo *resolve(const char *server, int port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP },
			     *res;
	char service[8];

	snprintf(service, sizeof(service), "%d", port);
	if (!server)
		hints.ai_flags = RAI_PASSIVE;	/* for listening */
	if (rdma_getaddrinfo(server, service, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

static void send_text(struct rdma_cm_id *id, struct ibv_mr *mr,
		      const char *who, const char *text)
{
	struct ibv_wc wc;

	snprintf(mr->addr, MSG_SIZE, "%s", text);
	check(rdma_post_send(id, NULL, mr->addr, MSG_SIZE, mr, 0),
	      "rdma_post_send");
	if (rdma_get_send_comp(id, &wc) <= 0)
		die("rdma_get_send_comp");
	printf("%s: sent \"%s\": %s\n", who, text, wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

static void receive_text(struct rdma_cm_id *id, struct ibv_mr *mr,
			 const char *who)
{
	struct ibv_wc wc;

	if (rdma_get_recv_comp(id, &wc) <= 0)
		die("rdma_get_recv_comp");
	printf("%s: received \"%s\": %s\n", who, (char *)mr->addr,
	       wc_status_name(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		exit(1);
}

/* Step 2 (server): listen, take one request, accept it. */
static struct rdma_cm_id *serve(struct rdma_addrinfo *res, int port,
				struct rdma_cm_id **listener)
{
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_id *id;

	/* Given QP attributes, the listener gives each request a QP. */
	if (rdma_create_ep(listener, res, NULL, &a))
		die("rdma_create_ep");
	if (rdma_listen(*listener, 1))
		die("rdma_listen");
	printf("server: listening on port %d\n", port);
	fflush(stdout);
	if (rdma_get_request(*listener, &id))
		die("rdma_get_request");
	printf("server: a connection request\n");
	return id;
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "p:");
	const char *who = o.server ? "client" : "server";
	struct rdma_addrinfo *res = resolve(o.server, o.port);
	struct rdma_cm_id *listener = NULL, *id;
	struct ibv_qp_init_attr a = qp_attr();
	char *sbuf = calloc(1, MSG_SIZE), *rbuf = calloc(1, MSG_SIZE);

	if (!sbuf || !rbuf)
		die("calloc");
	if (o.server) {
		/* The client's endpoint: id, QP and CQs in one call. */
		if (rdma_create_ep(&id, res, NULL, &a))
			die("rdma_create_ep");
	} else {
		id = serve(res, o.port, &listener);
	}
	/* Memory regions on the id's PD (rdma_reg_msgs: local access). */
	struct ibv_mr *smr = rdma_reg_msgs(id, sbuf, MSG_SIZE);
	struct ibv_mr *rmr = rdma_reg_msgs(id, rbuf, MSG_SIZE);
	if (!smr || !rmr)
		die("rdma_reg_msgs");
	/* As ever, the receive is posted before the peer can send. */
	check(rdma_post_recv(id, NULL, rbuf, MSG_SIZE, rmr), "rdma_post_recv");

	/* Step 3: connect (client) or accept (server).  When these return
	 * the QP is in RTS: no ibv_modify_qp anywhere in this program. */
	if (o.server) {
		if (rdma_connect(id, NULL))
			die("rdma_connect");
		printf("client: connected to %s port %d\n", o.server, o.port);
		send_text(id, smr, who, "hello through the RDMA CM");
		receive_text(id, rmr, who);
	} else {
		if (rdma_accept(id, NULL))
			die("rdma_accept");
		printf("server: accepted\n");
		receive_text(id, rmr, who);
		send_text(id, smr, who, "hello back");
	}

	/* Step 4: disconnect (a DREQ; the peer answers DREP), then free
	 * in reverse: MRs, the endpoint (its QP, CQs and id), the rest. */
	rdma_disconnect(id);
	printf("%s: disconnected\n", who);
	check(rdma_dereg_mr(smr), "rdma_dereg_mr");
	check(rdma_dereg_mr(rmr), "rdma_dereg_mr");
	rdma_destroy_ep(id);
	if (listener)
		rdma_destroy_ep(listener);
	rdma_freeaddrinfo(res);
	free(sbuf);
	free(rbuf);
	return 0;
}
