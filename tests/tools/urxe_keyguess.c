// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_keyguess: an rkey-guessing attacker and its target (t_keys drives
 * it).
 *
 *   urxe_keyguess target -n K -f DONEFILE [-t SECONDS] [-d PEER]
 *     (verbs) registers K regions of one page each over one buffer filled
 *     with 0x5a, and a canary page region, each with remote write; makes
 *     a UC and an RC QP and moves both to RTR, their peer PEER (127.0.0.1
 *     by default: where the attacker listens, as if it were the peer), QPN
 *     1; prints
 *       target gid A uc Q rc Q psn P va V canary C rkey R
 *     and waits (the engine thread answers) until DONEFILE exists.  Then
 *     it checks that no byte of the K pages changed, that the canary's
 *     first 64 bytes are 0xee (the attacker's one write with the key it
 *     was told: its packets reach the QP and are well made), that the UC
 *     QP is still in RTR and the RC QP in ERR, and says so; exit 0 if all
 *     holds.
 *
 *   urxe_keyguess attack -a A -u Q -r Q -p P -v V -n K -c C -k R -N G
 *       [-s SEED] [-b BIND]
 *     (a plain UDP socket, bound to BIND:4791, 127.0.0.1 by default:
 *     unconnected with DF set, so the kernel sends IPv4 ID 0, and the
 *     ICRC is computed for that) sends
 *       - one RC WRITE at PSN P with a random rkey, and waits for the NAK
 *         (remote access error) it must get;
 *       - G UC WRITEs of 64 bytes with random rkeys at random places of
 *         the K pages;
 *       - the walk of a counted key scheme: for each page i (1..K), the
 *         keys i << 8 | b for every byte b, at that page;
 *       - one UC WRITE of 0xee to the canary with its real key;
 *     then prints what came back: NAKs, ACKs (must be none but the NAK).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <urxe/icrc.h>

#define PAGE 4096u
#define WLEN 64u
#define ROCE_PORT 4791
#define OP_RC_WRITE_ONLY 0x0a
#define OP_RC_ACK 0x11
#define OP_UC_WRITE_ONLY 0x2a
#define NAK_REM_ACCESS 0x62	/* AETH syndrome: NAK, remote access error */

static void die(const char *what)
{
	fprintf(stderr, "urxe_keyguess: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* ---- the target ---- */

static int to_rtr(struct ibv_qp *qp, const union ibv_gid *gid, uint32_t psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 1;
	a.rq_psn = psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (qp->qp_type == IBV_QPT_UC)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		die("ibv_query_qp");
	return a.qp_state;
}

static int target(unsigned int k, const char *done, int secs,
		  const char *peer)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_qp_init_attr ia;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp *uc, *rc;
	struct ibv_mr *canary, **mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid, pgid;
	unsigned int i;
	uint8_t *buf;
	uint32_t psn = (uint32_t)(time(NULL) * 2654435761u) & 0xffffff;
	int waited = 0, bad = 0;
	char a[INET_ADDRSTRLEN];

	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		die("no rxe0");
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("ibv_query_gid");
	memset(&pgid, 0, sizeof(pgid));
	pgid.raw[10] = pgid.raw[11] = 0xff;
	if (inet_pton(AF_INET, peer, pgid.raw + 12) != 1)
		die("-d: an IPv4 address");
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(PAGE, (size_t)(k + 1) * PAGE);
	mr = calloc(k, sizeof(*mr));
	if (!pd || !buf || !mr)
		die("pd/buffer");
	memset(buf, 0x5a, (size_t)(k + 1) * PAGE);
	for (i = 0; i < k; i++)
		if (!(mr[i] = ibv_reg_mr(pd, buf + (size_t)i * PAGE, PAGE, acc)))
			die("ibv_reg_mr");
	canary = ibv_reg_mr(pd, buf + (size_t)k * PAGE, PAGE, acc);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!canary || !cq)
		die("canary/cq");
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_UC;
	uc = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_RC;
	rc = ibv_create_qp(pd, &ia);
	if (!uc || !rc || to_rtr(uc, &pgid, psn) || to_rtr(rc, &pgid, psn))
		die("QPs");
	inet_ntop(AF_INET, gid.raw + 12, a, sizeof(a));
	printf("target gid %s uc %u rc %u psn %u va %llu canary %llu rkey %u\n",
	       a, uc->qp_num, rc->qp_num, psn,
	       (unsigned long long)(uintptr_t)buf,
	       (unsigned long long)(uintptr_t)(buf + (size_t)k * PAGE),
	       canary->rkey);
	fflush(stdout);
	while (access(done, F_OK) && waited < secs * 10) {
		struct ibv_wc wc;

		(void)ibv_poll_cq(cq, 1, &wc);
		usleep(100000);
		waited++;
	}
	for (i = 0; i < k * PAGE; i++)
		if (buf[i] != 0x5a) {
			printf("FAIL byte %u of page %u changed to 0x%02x\n",
			       i % PAGE, i / PAGE, buf[i]);
			bad = 1;
			break;
		}
	for (i = 0; i < WLEN; i++)
		if (buf[(size_t)k * PAGE + i] != 0xee) {
			printf("FAIL the canary was not written (byte %u): the attacker's packets do not reach the QP\n",
			       i);
			bad = 1;
			break;
		}
	if (qp_state(uc) != IBV_QPS_RTR) {
		printf("FAIL the UC QP left RTR (state %d)\n", qp_state(uc));
		bad = 1;
	}
	if (qp_state(rc) != IBV_QPS_ERR) {
		printf("FAIL the RC QP is not in ERR after a bad key (state %d)\n",
		       qp_state(rc));
		bad = 1;
	}
	if (!bad)
		printf("untouched %u pages, canary written, UC QP in RTR, RC QP in ERR\n",
		       k);
	if (ibv_destroy_qp(uc) || ibv_destroy_qp(rc) || ibv_destroy_cq(cq) ||
	    ibv_dereg_mr(canary))
		die("teardown");
	for (i = 0; i < k; i++)
		if (ibv_dereg_mr(mr[i]))
			die("ibv_dereg_mr");
	if (ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("teardown");
	free(mr);
	free(buf);
	return bad;
}

/* ---- the attacker ---- */

struct attacker {
	int fd;
	struct in_addr src, dst;
	uint64_t rng;
	unsigned long sent, naks, acks;
};

static uint64_t rnd(struct attacker *x)
{
	x->rng ^= x->rng << 13;
	x->rng ^= x->rng >> 7;
	x->rng ^= x->rng << 17;
	return x->rng;
}

/* IPv4 header (ID 0, DF), UDP header, BTH, RETH, 64 bytes, ICRC. */
static void send_write(struct attacker *x, uint8_t op, uint32_t qpn,
		       uint32_t psn, uint64_t va, uint32_t rkey, uint8_t fill)
{
	const unsigned int roce = 12 + 16 + WLEN + 4;
	uint8_t f[20 + 8 + 12 + 16 + WLEN + 4], *b = f + 28;
	struct sockaddr_in to = {
		.sin_family = AF_INET, .sin_port = htons(ROCE_PORT),
		.sin_addr = x->dst,
	};
	bool ok;
	int i;

	memset(f, 0, sizeof(f));
	f[0] = 0x45;
	f[2] = (uint8_t)((20 + 8 + roce) >> 8);
	f[3] = (uint8_t)(20 + 8 + roce);
	f[6] = 0x40;
	f[8] = 64;
	f[9] = 17;
	memcpy(f + 12, &x->src, 4);
	memcpy(f + 16, &x->dst, 4);
	f[20] = ROCE_PORT >> 8;
	f[21] = ROCE_PORT & 0xff;
	f[22] = ROCE_PORT >> 8;
	f[23] = ROCE_PORT & 0xff;
	f[24] = (uint8_t)((8 + roce) >> 8);
	f[25] = (uint8_t)(8 + roce);
	b[0] = op;
	b[2] = b[3] = 0xff;			/* P_Key */
	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
	b[8] = 0x80;				/* AckReq */
	b[9] = (uint8_t)(psn >> 16);
	b[10] = (uint8_t)(psn >> 8);
	b[11] = (uint8_t)psn;
	for (i = 0; i < 8; i++)
		b[12 + i] = (uint8_t)(va >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		b[20 + i] = (uint8_t)(rkey >> (24 - 8 * i));
	b[27] = WLEN;
	memset(b + 28, fill, WLEN);
	urxe_icrc_store(b + roce - 4, urxe_icrc_frame(f, sizeof(f), &ok));
	if (!ok)
		die("icrc");
	if (sendto(x->fd, b, roce, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		die("sendto");
	/* Paced: what the target's socket cannot hold is not a guess. */
	if (++x->sent % 128 == 0)
		usleep(1000);
}

/* Reads what came back for @ms; counts NAKs (remote access) and ACKs. */
static void collect(struct attacker *x, int ms)
{
	uint8_t r[2048];
	struct pollfd p = { .fd = x->fd, .events = POLLIN };
	ssize_t n;

	while (poll(&p, 1, ms) > 0) {
		n = recv(x->fd, r, sizeof(r), 0);
		if (n < 16 || r[0] != OP_RC_ACK)
			continue;
		if (r[12] == NAK_REM_ACCESS)
			x->naks++;
		else
			x->acks++;
		ms = 0;
	}
}

static int attack(int argc, char **argv)
{
	struct attacker x = { .rng = 0x9e3779b97f4a7c15ull };
	struct sockaddr_in me = {
		.sin_family = AF_INET, .sin_port = htons(ROCE_PORT),
	};
	unsigned long guesses = 0, k = 0, i, b;
	uint32_t ucq = 0, rcq = 0, psn = 0, ckey = 0, upsn;
	uint64_t va = 0, canary = 0;
	const char *bind_to = "127.0.0.1";
	int o, pmtu = IP_PMTUDISC_DO, one = 1;

	x.dst.s_addr = 0;
	while ((o = getopt(argc, argv, "a:u:r:p:v:n:c:k:N:s:b:")) != -1) {
		switch (o) {
		case 'a': inet_pton(AF_INET, optarg, &x.dst); break;
		case 'u': ucq = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': rcq = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': psn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'v': va = strtoull(optarg, NULL, 0); break;
		case 'n': k = strtoul(optarg, NULL, 0); break;
		case 'c': canary = strtoull(optarg, NULL, 0); break;
		case 'k': ckey = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'N': guesses = strtoul(optarg, NULL, 0); break;
		case 's': x.rng ^= strtoull(optarg, NULL, 0) * 0xbf58476d1ce4e5b9ull; break;
		case 'b': bind_to = optarg; break;
		default: return 2;
		}
	}
	if (!x.dst.s_addr || !ucq || !rcq || !va || !k || !canary || !x.rng) {
		fprintf(stderr, "urxe_keyguess attack: -a -u -r -p -v -n -c -k needed\n");
		return 2;
	}
	inet_pton(AF_INET, bind_to, &me.sin_addr);
	x.src = me.sin_addr;
	x.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (x.fd < 0)
		die("socket");
	setsockopt(x.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(x.fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		die("IP_MTU_DISCOVER");
	if (bind(x.fd, (struct sockaddr *)&me, sizeof(me)))
		die("bind");

	/* RC: the one guess it gets, answered with a NAK. */
	send_write(&x, OP_RC_WRITE_ONLY, rcq, psn, va, (uint32_t)rnd(&x), 0xee);
	collect(&x, 2000);
	printf("rc: 1 guess, %lu NAK(s) remote access, %lu other answer(s)\n",
	       x.naks, x.acks);

	/* UC: random keys at random places of the pages. */
	upsn = psn;
	for (i = 0; i < guesses; i++) {
		uint64_t r = rnd(&x);

		send_write(&x, OP_UC_WRITE_ONLY, ucq, upsn++ & 0xffffff,
			   va + (r >> 40) % k * PAGE + (r >> 16 & 0xff) % (PAGE / WLEN) * WLEN,
			   (uint32_t)rnd(&x), 0xee);
	}
	/* The walk a counted key scheme would fall to. */
	for (i = 1; i <= k; i++)
		for (b = 0; b < 256; b++)
			send_write(&x, OP_UC_WRITE_ONLY, ucq, upsn++ & 0xffffff,
				   va + (i - 1) * PAGE, (uint32_t)(i << 8 | b),
				   0xee);
	/* And one with the key it was told: the packets are well made. */
	usleep(20000);
	send_write(&x, OP_UC_WRITE_ONLY, ucq, upsn++ & 0xffffff, canary, ckey,
		   0xee);
	collect(&x, 500);
	printf("uc: %lu random guesses, %lu walked, then the canary; sent %lu; answers: %lu NAK(s), %lu other\n",
	       guesses, k * 256, x.sent, x.naks, x.acks);
	close(x.fd);
	return x.naks == 1 && x.acks == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned int k = 64;
	const char *done = NULL, *peer = "127.0.0.1";
	int o, secs = 120;

	if (argc < 2) {
		fprintf(stderr, "usage: urxe_keyguess target|attack ...\n");
		return 2;
	}
	if (!strcmp(argv[1], "attack"))
		return attack(argc - 1, argv + 1);
	if (strcmp(argv[1], "target"))
		return 2;
	while ((o = getopt(argc - 1, argv + 1, "n:f:t:d:")) != -1) {
		switch (o) {
		case 'd': peer = optarg; break;
		case 'n': k = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'f': done = optarg; break;
		case 't': secs = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!done || !k)
		return 2;
	return target(k, done, secs, peer);
}
