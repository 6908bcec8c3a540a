// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_mcast: UD multicast through the public verbs API, for the
 * integration tests (ibverbs-utils has no multicast program).
 *
 *   urxe_mcast recv [-d dev] -G group [-n count] [-t s] [-m ifname]
 *   urxe_mcast send [-d dev] -G group [-n count] [-t s]
 *
 * recv: two UD QPs attach to the group (an IPv4 address such as
 * 239.255.0.9 or an IPv6 one such as ff15::9); "attached" is printed;
 * each QP must then receive the @count messages of one sender, in order,
 * exactly once, each with a GRH naming the group; QP 1 detaches and
 * "detached" is printed; QP 0 must receive @count more and QP 1 none of
 * them (nor anything within 300 ms after); QP 0 detaches.  With -m, the
 * kernel's membership of the group on interface @ifname (the device's)
 * must follow: there while a QP is attached, gone after the last detach
 * (/proc/net/igmp, /proc/net/igmp6).
 * send: @count messages to the group (destination QPN 0xFFFFFF), from the
 * device's first GID of the group's family (IPv6: not link-local), each
 * send completed before the next goes.
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QKEY 0x11111111u
#define MCAST_QPN 0xffffffu
#define GRH_LEN 40
#define MSG_LEN 64
#define SLOT (GRH_LEN + MSG_LEN)
#define NQP 2
#define MAX_COUNT 256
#define QUIET_MS 300

enum { EXIT_CHECK = 1, EXIT_SETUP = 2, EXIT_TIME = 3 };

struct mc {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NQP];
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid group;
	const char *ifname;		/* -m: check the kernel's membership */
	unsigned int count;
	unsigned int got[NQP];		/* messages received per QP */
};

static void on_alarm(int sig)
{
	static const char msg[] = "urxe_mcast: timeout\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(EXIT_TIME);
	_exit(EXIT_TIME);
}

static void die(int code, const char *what, int err)
{
	fprintf(stderr, "urxe_mcast: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(code);
}

static bool parse_group(const char *s, union ibv_gid *g)
{
	struct in_addr a4;

	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET, s, &a4) == 1) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(g->raw + 12, &a4, 4);
		return (g->raw[12] & 0xf0) == 0xe0;
	}
	return inet_pton(AF_INET6, s, g->raw) == 1 && g->raw[0] == 0xff;
}

static bool gid_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

static void open_dev(struct mc *m, const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	if (!list || !list[0])
		die(EXIT_SETUP, "no RDMA device", 0);
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i])
		die(EXIT_SETUP, "no such device", 0);
	m->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!m->ctx)
		die(EXIT_SETUP, "ibv_open_device", errno);
	m->pd = ibv_alloc_pd(m->ctx);
	m->cq = ibv_create_cq(m->ctx, 2 * NQP * MAX_COUNT + 16, NULL, NULL, 0);
	m->buf = calloc(NQP * 2 * MAX_COUNT, SLOT);
	if (!m->pd || !m->cq || !m->buf)
		die(EXIT_SETUP, "PD, CQ or buffer", errno);
	m->mr = ibv_reg_mr(m->pd, m->buf, NQP * 2 * MAX_COUNT * SLOT,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr)
		die(EXIT_SETUP, "ibv_reg_mr", errno);
}

static struct ibv_qp *make_qp(struct mc *m)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = m->cq, .recv_cq = m->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 2 * MAX_COUNT,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qkey = QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(m->pd, &ia);
	int rc;

	if (!qp)
		die(EXIT_SETUP, "ibv_create_qp", errno);
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (rc)
		die(EXIT_SETUP, "ibv_modify_qp", rc);
	return qp;
}

/* Receive slot @k of QP @q: its buffer. */
static uint8_t *slot(struct mc *m, unsigned int q, unsigned int k)
{
	return m->buf + ((size_t)q * 2 * MAX_COUNT + k) * SLOT;
}

static void post_recvs(struct mc *m, unsigned int q)
{
	unsigned int k;

	for (k = 0; k < 2 * m->count; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)slot(m, q, k), .length = SLOT,
			.lkey = m->mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = (uint64_t)q << 32 | k, .sg_list = &sge,
			.num_sge = 1,
		}, *bad;
		int rc = ibv_post_recv(m->qp[q], &wr, &bad);

		if (rc)
			die(EXIT_SETUP, "ibv_post_recv", rc);
	}
}

/* The GRH of a datagram names the group (IPv4: the header's address). */
static bool grh_names_group(const struct mc *m, const uint8_t *grh)
{
	if (gid_v4(&m->group))
		return !memcmp(grh + 20 + 16, m->group.raw + 12, 4);
	return !memcmp(grh + 24, m->group.raw, 16);
}

/*
 * Takes completions for @ms milliseconds, or until QP 0 has @want
 * messages; any message out of order, without the group, or not from
 * one sender's sequence fails.
 */
static void receive(struct mc *m, unsigned int want, int ms)
{
	struct timespec t0, t;
	struct ibv_wc wc[16];
	int n, i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(m->cq, 16, wc);
		if (n < 0)
			die(EXIT_CHECK, "ibv_poll_cq", 0);
		for (i = 0; i < n; i++) {
			unsigned int q = (unsigned int)(wc[i].wr_id >> 32);
			unsigned int k = (unsigned int)wc[i].wr_id;
			char expect[MSG_LEN];

			if (wc[i].status != IBV_WC_SUCCESS || q >= NQP ||
			    wc[i].opcode != IBV_WC_RECV)
				die(EXIT_CHECK, "a failed or unexpected completion", 0);
			if (!(wc[i].wc_flags & IBV_WC_GRH) ||
			    !grh_names_group(m, slot(m, q, k)))
				die(EXIT_CHECK, "a datagram whose GRH does not name the group", 0);
			snprintf(expect, sizeof(expect), "urxe-mcast %u",
				 m->got[q] % m->count);
			if (wc[i].byte_len != GRH_LEN + MSG_LEN ||
			    strcmp((char *)slot(m, q, k) + GRH_LEN, expect)) {
				fprintf(stderr, "urxe_mcast: QP %u: \"%.*s\", expected \"%s\"\n",
					q, MSG_LEN, (char *)slot(m, q, k) + GRH_LEN,
					expect);
				exit(EXIT_CHECK);
			}
			m->got[q]++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((want && m->got[0] >= want) ||
		    (t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return;
		if (!n)
			usleep(100);
	}
}

/* Does the kernel hold @m's group on m->ifname? */
static bool kernel_member(const struct mc *m)
{
	bool v4 = gid_v4(&m->group), in_dev = false, found = false;
	FILE *f = fopen(v4 ? "/proc/net/igmp" : "/proc/net/igmp6", "r");
	char line[256], name[64], hex[40];
	uint32_t want4, a;

	if (!f)
		die(EXIT_SETUP, "cannot read the kernel's multicast groups", errno);
	memcpy(&want4, m->group.raw + 12, 4);
	while (!found && fgets(line, sizeof(line), f)) {
		if (!v4) {
			/* "ifindex name group users flags timer" */
			found = sscanf(line, "%*d %63s %39s", name, hex) == 2 &&
				!strcmp(name, m->ifname) && strlen(hex) == 32;
			for (a = 0; found && a < 16; a++) {
				unsigned int b;

				found = sscanf(hex + 2 * a, "%2x", &b) == 1 &&
					b == m->group.raw[a];
			}
		} else if (line[0] != '\t') {
			/* "idx name : count querier" opens a device */
			in_dev = sscanf(line, "%*d %63s", name) == 1 &&
				!strcmp(name, m->ifname);
		} else if (in_dev) {
			/* "group users timer reporter": the address as a u32 */
			found = sscanf(line, "%x", &a) == 1 && a == want4;
		}
	}
	fclose(f);
	return found;
}

static void check_member(const struct mc *m, bool want, const char *when)
{
	if (m->ifname && kernel_member(m) != want) {
		fprintf(stderr, "urxe_mcast: %s, the group is %s on %s\n", when,
			want ? "not joined" : "still joined", m->ifname);
		exit(EXIT_CHECK);
	}
}

static int do_recv(struct mc *m)
{
	unsigned int q;
	int rc;

	for (q = 0; q < NQP; q++) {
		m->qp[q] = make_qp(m);
		post_recvs(m, q);
		rc = ibv_attach_mcast(m->qp[q], &m->group, 0);
		if (rc)
			die(EXIT_CHECK, "ibv_attach_mcast", rc);
	}
	check_member(m, true, "attached");
	printf("attached: QPN 0x%06x 0x%06x\n", m->qp[0]->qp_num,
	       m->qp[1]->qp_num);
	fflush(stdout);
	receive(m, m->count, 3600 * 1000);
	receive(m, 0, QUIET_MS);	/* duplicates would come now */
	printf("round 1: %u %u\n", m->got[0], m->got[1]);
	if (m->got[0] != m->count || m->got[1] != m->count)
		die(EXIT_CHECK, "round 1: not every message once on each QP", 0);
	rc = ibv_detach_mcast(m->qp[1], &m->group, 0);
	if (rc)
		die(EXIT_CHECK, "ibv_detach_mcast", rc);
	check_member(m, true, "one of two QPs detached");
	printf("detached: QPN 0x%06x\n", m->qp[1]->qp_num);
	fflush(stdout);
	receive(m, 2 * m->count, 3600 * 1000);
	receive(m, 0, QUIET_MS);
	printf("round 2: %u %u\n", m->got[0], m->got[1]);
	if (m->got[0] != 2 * m->count || m->got[1] != m->count)
		die(EXIT_CHECK, "round 2: QP 0 short, or the detached QP got some", 0);
	rc = ibv_detach_mcast(m->qp[0], &m->group, 0);
	if (rc)
		die(EXIT_CHECK, "ibv_detach_mcast", rc);
	check_member(m, false, "both QPs detached");
	printf("PASS\n");
	return 0;
}

/* The device's first GID of @g's family (IPv6: global). */
static int pick_sgid(struct mc *m)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int i;

	if (ibv_query_port(m->ctx, 1, &pa))
		die(EXIT_SETUP, "ibv_query_port", errno);
	for (i = 0; i < pa.gid_tbl_len; i++) {
		static const union ibv_gid zero;

		if (ibv_query_gid(m->ctx, 1, i, &gid) ||
		    !memcmp(&gid, &zero, sizeof(gid)))
			continue;
		if (gid_v4(&gid) == gid_v4(&m->group) &&
		    (gid_v4(&gid) || gid.raw[0] != 0xfe))
			return i;
	}
	die(EXIT_SETUP, "no GID of the group's family", 0);
	return -1;
}

static int do_send(struct mc *m)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = m->group, .hop_limit = 1 },
	};
	struct ibv_ah *ah;
	unsigned int i;

	m->qp[0] = make_qp(m);
	aa.grh.sgid_index = (uint8_t)pick_sgid(m);
	ah = ibv_create_ah(m->pd, &aa);
	if (!ah)
		die(EXIT_SETUP, "ibv_create_ah", errno);
	for (i = 0; i < m->count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)m->buf, .length = MSG_LEN,
			.lkey = m->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = MCAST_QPN,
				   .remote_qkey = QKEY },
		}, *bad;
		struct ibv_wc wc;
		int rc, n;

		memset(m->buf, 0, MSG_LEN);
		snprintf((char *)m->buf, MSG_LEN, "urxe-mcast %u", i);
		rc = ibv_post_send(m->qp[0], &wr, &bad);
		if (rc)
			die(EXIT_CHECK, "ibv_post_send", rc);
		while (!(n = ibv_poll_cq(m->cq, 1, &wc)))
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			die(EXIT_CHECK, "a send failed", 0);
		usleep(1000);	/* a datagram at a time: no queue overflows */
	}
	ibv_destroy_ah(ah);
	printf("sent %u\n", m->count);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: urxe_mcast recv|send [-d dev] -G group [-n count] [-t s] [-m ifname]\n");
	exit(EXIT_SETUP);
}

int main(int argc, char **argv)
{
	struct mc m = { .count = 20 };
	const char *dev = NULL;
	bool have_group = false;
	int c, timeout_s = 30, rc;

	if (argc < 2 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send")))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "d:G:m:n:t:")) != -1) {
		switch (c) {
		case 'm':
			m.ifname = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'G':
			have_group = parse_group(optarg, &m.group);
			if (!have_group)
				usage();
			break;
		case 'n':
			m.count = (unsigned int)atoi(optarg);
			break;
		case 't':
			timeout_s = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!have_group || !m.count || m.count > MAX_COUNT || timeout_s <= 0)
		usage();
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)timeout_s);
	open_dev(&m, dev);
	rc = strcmp(argv[1], "recv") ? do_send(&m) : do_recv(&m);
	for (c = 0; c < NQP; c++)
		if (m.qp[c])
			ibv_destroy_qp(m.qp[c]);
	ibv_dereg_mr(m.mr);
	ibv_destroy_cq(m.cq);
	ibv_dealloc_pd(m.pd);
	ibv_close_device(m.ctx);
	free(m.buf);
	return rc;
}
