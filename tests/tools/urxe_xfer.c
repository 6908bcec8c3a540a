// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_xfer: a verbs program that moves patterned data over one RC QP and
 * checks every byte, every completion and every atomic result.  It uses
 * the public verbs API only (it runs on any libibverbs device), and
 * bounds its own time.
 *
 *   server: urxe_xfer [-d dev] [-g gid] [-p port] [-t s]
 *   client: urxe_xfer [options] HOST
 *
 * The client picks the work (the server learns it in the TCP rendezvous,
 * which also carries QPN, PSN, GID, MTU and the server's rkeys/addresses).
 * Streams, all on one QP, interleaved in "all" mode:
 *   write   client buffer -> server buffer by RDMA WRITE (server checks);
 *   read    server buffer -> client buffer by RDMA READ (client checks);
 *   send    SEND / SEND_WITH_IMM (some inline) into a ring of receives:
 *           the server checks length, immediate and bytes of each one;
 *   atomic  fetch-add and compare-swap (hits and misses) on 8 counters:
 *           every returned value must be what a sequential model of the
 *           counters predicts; the final values are read back by RDMA
 *           READ and reported by the server.
 * Message lengths come from a seeded sequence both ends compute: mostly
 * [chunk/2, chunk], some around one MTU, some tiny (odd: pad bytes), and
 * zero-length ones.  Data is a per-offset pseudo-random pattern.  Up to
 * -q requests are in flight; send completions must come back in posting
 * order.  The PSNs start close to 2^24 so that they wrap.  Each end spins
 * on its CQs, or with -e sleeps on a completion channel (poll() on its
 * descriptor, as an event loop would); a server with no receive stream
 * just waits in read() on the TCP socket: the device must progress alone.
 *
 * Error-path modes (both ends given the same flag by the client):
 *   --rnr-test   the server posts no receive; one SEND with the client's
 *                -R rnr_retry must end in IBV_WC_RNR_RETRY_EXC_ERR, or,
 *                with -R 7, keep retrying until the server posts its
 *                receive (after --late ms) and then succeed;
 *   --vanish-test the server kills itself (SIGKILL) after the rendezvous;
 *                the client's requests must end in IBV_WC_RETRY_EXC_ERR
 *                (then IBV_WC_WR_FLUSH_ERR) within 2 x (retry_cnt + 1) x
 *                4.096 us x 2^timeout + 1 s, or with -T 0 (no transport
 *                timer) not complete at all within --late ms.
 *
 * Exit: 0 success, 1 a check failed, 2 usage or set-up error, 3 timeout.
 * Output lines start with a keyword (local:, remote:, result:, verify:,
 * statuses:, PASS / FAIL) for scripts.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ST_WRITE, ST_READ, ST_SEND, ST_ATOMIC, ST_N };
static const char *const st_names[ST_N] = { "write", "read", "send", "atomic" };

#define MODE_ALL ((1u << ST_N) - 1)
#define F_RNR 1u
#define F_VANISH 2u
#define MAGIC 0x75727865786672ull	/* "urxexfr" */
#define NCTR 8				/* atomic counters */
#define NFIELD 32			/* u64 fields per TCP message */
#define MAX_DEPTH 1024

enum { EXIT_CHECK = 1, EXIT_SETUP = 2, EXIT_TIME = 3 };

/* Hello fields; then the other messages reuse f[0] as their type. */
enum {
	H_MAGIC, H_MODE, H_FLAGS, H_SIZE, H_CHUNK, H_DEPTH, H_ATOMICS, H_SEED,
	H_QPN, H_PSN, H_GID_HI, H_GID_LO, H_MTU, H_WADDR, H_WKEY, H_RADDR,
	H_RKEY, H_CADDR, H_CKEY, H_MAXRD,
};
enum { M_READY = 1, M_DONE, M_RESULT, M_POST, M_DIE };
/* M_RESULT fields */
enum { RS_OK = 1, RS_BAD, RS_FIRST_BAD, RS_RECVS, RS_RECV_BYTES, RS_CTR };

struct opts {
	const char *dev, *host;
	int gidx, port, timeout_s, depth, qp_timeout, retry_cnt, rnr_retry;
	int rnr_timer, late_ms;
	unsigned int mode, flags, atomics, seed;
	uint64_t size;
	uint32_t chunk;
	bool server;
	bool events;		/* -e: wait for completion events */
};

struct xfer {
	struct opts o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;	/* -e */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr_a, *mr_b, *mr_ctr, *mr_recv;
	uint8_t *a;		/* client: write/send source; server: write target */
	uint8_t *b;		/* client: read target; server: read source */
	uint64_t *ctr;		/* client: atomic results + read-back; server: counters */
	uint8_t *recv;		/* server: the receive ring */
	uint32_t nrecv, maxlen, max_inline, mtu_bytes;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint32_t psn, max_rd;
	int sock;
	uint64_t peer[NFIELD];	/* the peer's hello */
	uint64_t deadline_ns;
};

/* ---- small things ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void on_alarm(int sig)
{
	static const char m[] = "FAIL timeout: the time limit (-t) ran out\n";

	(void)sig;
	if (write(1, m, sizeof(m) - 1) < 0) {
		/* nothing to do */
	}
	_exit(EXIT_TIME);
}

static bool timed_out(const struct xfer *x)
{
	return now_ns() > x->deadline_ns;
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the pattern: byte at offset off = byte off%8 of word off/8 ---- */

static uint64_t pat_word(uint64_t seed, uint64_t w)
{
	return mix64(seed * 0x100000001b3ull ^ w);
}

static void pat_fill(uint8_t *p, uint64_t seed, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++, off++) {
		if (!(off & 7) && len - i >= 8) {
			uint64_t v = htole64(pat_word(seed, off >> 3));

			memcpy(p + i, &v, 8);
			i += 7;
			off += 7;
			continue;
		}
		p[i] = (uint8_t)(pat_word(seed, off >> 3) >> (8 * (off & 7)));
	}
}

/* Number of bytes of p[0..len) that differ from the pattern at @off. */
static uint64_t pat_check(const uint8_t *p, uint64_t seed, uint64_t off,
			  uint64_t len, uint64_t *first_bad)
{
	uint64_t i, bad = 0;

	for (i = 0; i < len; i++, off++) {
		if (!(off & 7) && len - i >= 8) {
			uint64_t v = htole64(pat_word(seed, off >> 3));

			if (!memcmp(p + i, &v, 8)) {
				i += 7;
				off += 7;
				continue;
			}
		}
		if (p[i] != (uint8_t)(pat_word(seed, off >> 3) >> (8 * (off & 7)))) {
			if (!bad++)
				*first_bad = off;
		}
	}
	return bad;
}

static uint64_t seed_of(const struct xfer *x, int st)
{
	/* send uses the write source: same pattern */
	return (uint64_t)x->o.seed * 4 + (st == ST_READ ? 2 : 1);
}

/*
 * Length of message @i of stream @st, with @left bytes still to move:
 * both ends compute the same sequence.
 */
static uint32_t msg_len(const struct xfer *x, int st, uint32_t i, uint64_t left)
{
	uint64_t h = mix64((uint64_t)x->o.seed << 32 ^ (uint64_t)st << 28 ^ i);
	uint32_t c = x->o.chunk, len;

	if (i == 3)
		len = 0;
	else if (h % 16 == 0)
		len = (uint32_t)((h >> 8) % 300);
	else if (h % 16 == 1)
		len = 4092 + (uint32_t)((h >> 8) % 9);
	else
		len = c / 2 + (uint32_t)((h >> 8) % (c / 2 + 1));
	if (len > x->maxlen)
		len = x->maxlen;
	return len > left ? (uint32_t)left : len;
}

/* ---- TCP rendezvous ---- */

static int tcp_send(struct xfer *x, const uint64_t *f)
{
	uint64_t be[NFIELD];
	size_t off = 0;
	int i;

	for (i = 0; i < NFIELD; i++)
		be[i] = htobe64(f[i]);
	while (off < sizeof(be)) {
		ssize_t n = send(x->sock, (char *)be + off, sizeof(be) - off,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/*
 * Receives one message, waiting at most until the deadline (or @ms if
 * >= 0).  0, or -1 on EOF/error, -2 on timeout.
 */
static int tcp_recv(struct xfer *x, uint64_t *f, int ms)
{
	uint64_t be[NFIELD];
	size_t off = 0;
	int i;

	while (off < sizeof(be)) {
		uint64_t now = now_ns();
		int wait = now >= x->deadline_ns ? 0 :
			   (int)((x->deadline_ns - now) / 1000000 + 1);
		struct pollfd p = { .fd = x->sock, .events = POLLIN };
		ssize_t n;

		if (ms >= 0 && ms < wait)
			wait = ms;
		i = poll(&p, 1, wait);
		if (i < 0 && errno == EINTR)
			continue;
		if (i < 0)
			return -1;
		if (i == 0 && off == 0)
			return -2;
		if (i == 0) {
			/* a message half in: wait for the rest */
			if (ms >= 0 && now_ns() < x->deadline_ns) {
				ms = -1;
				continue;
			}
			return -2;
		}
		n = recv(x->sock, (char *)be + off, sizeof(be) - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	for (i = 0; i < NFIELD; i++)
		f[i] = be64toh(be[i]);
	return 0;
}

static int tcp_connect(struct xfer *x)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *r;
	char port[16];
	int fd = -1;

	snprintf(port, sizeof(port), "%d", x->o.port);
	if (getaddrinfo(x->o.host, port, &hints, &res)) {
		fprintf(stderr, "cannot resolve %s\n", x->o.host);
		return -1;
	}
	/* The server may not listen yet: retry until the deadline. */
	while (fd < 0 && !timed_out(x)) {
		for (r = res; r && fd < 0; r = r->ai_next) {
			fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, r->ai_addr, r->ai_addrlen)) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			usleep(50000);
	}
	freeaddrinfo(res);
	x->sock = fd;
	return fd < 0 ? -1 : 0;
}

static int tcp_accept(struct xfer *x)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)x->o.port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, ls, rc;
	struct pollfd p;

	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)x->o.port) };
	bool v6 = true;

	/* Both families on one socket; IPv4 alone where IPv6 is off. */
	ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0) {
		v6 = false;
		ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	if (ls < 0)
		return -1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if ((v6 ? bind(ls, (struct sockaddr *)&a, sizeof(a)) :
		  bind(ls, (struct sockaddr *)&a4, sizeof(a4))) || listen(ls, 1)) {
		perror("bind/listen");
		close(ls);
		return -1;
	}
	say("listening on TCP port %d\n", x->o.port);
	p = (struct pollfd){ .fd = ls, .events = POLLIN };
	do {
		rc = poll(&p, 1, (int)((x->deadline_ns - now_ns()) / 1000000) + 1);
	} while (rc < 0 && errno == EINTR);
	x->sock = rc > 0 ? accept4(ls, NULL, NULL, SOCK_CLOEXEC) : -1;
	close(ls);
	return x->sock < 0 ? -1 : 0;
}

/* ---- verbs set-up ---- */

static struct ibv_mr *reg(struct xfer *x, void *p, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(x->pd, p, len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_ATOMIC);

	if (!mr)
		fprintf(stderr, "ibv_reg_mr(%zu bytes): %s\n", len, strerror(errno));
	return mr;
}

static void *alloc_buf(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 8))
		return NULL;
	return p;
}

static int open_dev(struct xfer *x)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int i;

	if (!list) {
		perror("ibv_get_device_list");
		return -1;
	}
	for (i = 0; list[i] && !x->ctx; i++)
		if (!x->o.dev || !strcmp(ibv_get_device_name(list[i]), x->o.dev))
			x->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!x->ctx) {
		fprintf(stderr, "no device %s\n", x->o.dev ? x->o.dev : "at all");
		return -1;
	}
	if (ibv_query_port(x->ctx, 1, &pa) ||
	    ibv_query_gid(x->ctx, 1, x->o.gidx, &x->gid)) {
		perror("ibv_query_port/gid");
		return -1;
	}
	x->mtu = pa.active_mtu;
	x->pd = ibv_alloc_pd(x->ctx);
	return x->pd ? 0 : -1;
}

/* Buffers, MRs, CQs and the QP, once the work is known. */
static int setup(struct xfer *x)
{
	unsigned int m = x->o.mode;
	bool cl = !x->o.server;
	uint64_t n = x->o.size;
	struct ibv_qp_init_attr ia;
	uint32_t i;

	x->maxlen = x->o.chunk > 4100 ? x->o.chunk : 4100;
	x->nrecv = x->o.flags ? 1 : (uint32_t)(2 * x->o.depth < 32 ? 32 : 2 * x->o.depth);
	if ((m & (1u << ST_WRITE | 1u << ST_SEND)) || x->o.flags) {
		x->a = alloc_buf(n);
		if (!x->a || !(x->mr_a = reg(x, x->a, n ? n : 8)))
			return -1;
		/* client: the source; server: junk the writes must replace */
		pat_fill(x->a, cl ? seed_of(x, ST_WRITE) : ~seed_of(x, ST_WRITE), 0, n);
	}
	if (m & 1u << ST_READ) {
		x->b = alloc_buf(n);
		if (!x->b || !(x->mr_b = reg(x, x->b, n ? n : 8)))
			return -1;
		pat_fill(x->b, cl ? ~seed_of(x, ST_READ) : seed_of(x, ST_READ), 0, n);
	}
	/* client: a result slot per request in flight, then NCTR read back */
	x->ctr = alloc_buf(((size_t)MAX_DEPTH + NCTR) * 8);
	if (!x->ctr || !(x->mr_ctr = reg(x, x->ctr, ((size_t)MAX_DEPTH + NCTR) * 8)))
		return -1;
	for (i = 0; i < MAX_DEPTH + NCTR; i++)
		x->ctr[i] = mix64(x->o.seed ^ 0xc0ffee ^ i);
	if (x->o.server && ((m & 1u << ST_SEND) || (x->o.flags & F_RNR))) {
		x->recv = alloc_buf((size_t)x->nrecv * x->maxlen);
		if (!x->recv || !(x->mr_recv = reg(x, x->recv, (size_t)x->nrecv * x->maxlen)))
			return -1;
	}
	if (x->o.events && !(x->ch = ibv_create_comp_channel(x->ctx))) {
		perror("ibv_create_comp_channel");
		return -1;
	}
	x->scq = ibv_create_cq(x->ctx, x->o.depth + 1, NULL, x->ch, 0);
	x->rcq = ibv_create_cq(x->ctx, (int)x->nrecv + 1, NULL, x->ch, 0);
	if (!x->scq || !x->rcq) {
		perror("ibv_create_cq");
		return -1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = x->scq;
	ia.recv_cq = x->rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = (uint32_t)x->o.depth;
	ia.cap.max_recv_wr = x->nrecv;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
	x->qp = ibv_create_qp(x->pd, &ia);
	if (!x->qp) {
		perror("ibv_create_qp");
		return -1;
	}
	x->max_inline = ia.cap.max_inline_data;
	return 0;
}

static void hello_fill(struct xfer *x, uint64_t *f)
{
	memset(f, 0, NFIELD * sizeof(*f));
	f[H_MAGIC] = MAGIC;
	f[H_MODE] = x->o.mode;
	f[H_FLAGS] = x->o.flags;
	f[H_SIZE] = x->o.size;
	f[H_CHUNK] = x->o.chunk;
	f[H_DEPTH] = (uint64_t)x->o.depth;
	f[H_ATOMICS] = x->o.atomics;
	f[H_SEED] = x->o.seed;
	f[H_QPN] = x->qp->qp_num;
	f[H_PSN] = x->psn;
	memcpy(&f[H_GID_HI], x->gid.raw, 8);
	memcpy(&f[H_GID_LO], x->gid.raw + 8, 8);
	f[H_GID_HI] = be64toh(f[H_GID_HI]);
	f[H_GID_LO] = be64toh(f[H_GID_LO]);
	f[H_MTU] = x->mtu;
	f[H_MAXRD] = x->max_rd;
	if (x->mr_a) {
		f[H_WADDR] = (uintptr_t)x->a;
		f[H_WKEY] = x->mr_a->rkey;
	}
	if (x->mr_b) {
		f[H_RADDR] = (uintptr_t)x->b;
		f[H_RKEY] = x->mr_b->rkey;
	}
	f[H_CADDR] = (uintptr_t)x->ctr;
	f[H_CKEY] = x->mr_ctr->rkey;
}

static void gid_str(const union ibv_gid *g, char *s, size_t n)
{
	inet_ntop(AF_INET6, g->raw, s, (socklen_t)n);
}

static void peer_gid(const struct xfer *x, union ibv_gid *g)
{
	uint64_t hi = htobe64(x->peer[H_GID_HI]), lo = htobe64(x->peer[H_GID_LO]);

	memcpy(g->raw, &hi, 8);
	memcpy(g->raw + 8, &lo, 8);
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		  const char *what)
{
	int rc = ibv_modify_qp(qp, a, mask);

	if (rc)
		fprintf(stderr, "ibv_modify_qp to %s: %s\n", what, strerror(rc));
	return rc;
}

static int connect_qp(struct xfer *x)
{
	enum ibv_mtu mtu = x->mtu < (enum ibv_mtu)x->peer[H_MTU] ?
			   x->mtu : (enum ibv_mtu)x->peer[H_MTU];
	struct ibv_qp_attr a;
	char g[64];

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (modify(x->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   IBV_QP_ACCESS_FLAGS, "INIT"))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = (uint32_t)x->peer[H_QPN];
	a.rq_psn = (uint32_t)x->peer[H_PSN];
	a.max_dest_rd_atomic = (uint8_t)x->max_rd;
	a.min_rnr_timer = (uint8_t)x->o.rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)x->o.gidx;
	peer_gid(x, &a.ah_attr.grh.dgid);
	if (modify(x->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		   IBV_QP_MIN_RNR_TIMER, "RTR"))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)x->o.qp_timeout;
	a.retry_cnt = (uint8_t)x->o.retry_cnt;
	a.rnr_retry = (uint8_t)x->o.rnr_retry;
	a.sq_psn = x->psn;
	a.max_rd_atomic = (uint8_t)x->peer[H_MAXRD];
	if (modify(x->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS"))
		return -1;
	x->mtu_bytes = 128u << mtu;
	peer_gid(x, &a.ah_attr.grh.dgid);
	gid_str(&a.ah_attr.grh.dgid, g, sizeof(g));
	say("remote: qpn 0x%06x psn 0x%06x gid %s mtu %u\n",
	    (unsigned int)x->peer[H_QPN], (unsigned int)x->peer[H_PSN], g,
	    x->mtu_bytes);
	return 0;
}

static void print_local(const struct xfer *x)
{
	char g[64];

	gid_str(&x->gid, g, sizeof(g));
	say("local: qpn 0x%06x psn 0x%06x gid %s\n", x->qp->qp_num, x->psn, g);
}

/* ---- completions ---- */

#define NSTATUS 32

struct stats {
	uint64_t by_status[NSTATUS];	/* the last: out of range */
	uint64_t bad;		/* failed checks */
};

static void count_status(struct stats *s, enum ibv_wc_status st)
{
	s->by_status[(unsigned int)st < NSTATUS - 1 ? st : NSTATUS - 1]++;
}

static void print_statuses(const char *who, const struct stats *s)
{
	char line[1024];
	size_t n = 0;
	int i;

	for (i = 0; i < NSTATUS; i++)
		if (s->by_status[i] && n < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%llu",
				i < NSTATUS - 1 ?
				ibv_wc_status_str((enum ibv_wc_status)i) : "other",
				(unsigned long long)s->by_status[i]);
	say("statuses: %s%s\n", who, n ? line : " none");
}

/*
 * ibv_poll_cq, or with -e: when @cq is empty, arm it, look again, then
 * wait (up to 50 ms, so that callers keep their deadlines) until the
 * channel says a completion came.  The descriptor is watched with poll()
 * like an event loop would: progress meanwhile is the engine thread's.
 */
static int cq_poll(struct xfer *x, struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct pollfd p;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int got = ibv_poll_cq(cq, n, wc);

	if (got || !x->ch)
		return got;
	if (ibv_req_notify_cq(cq, 0))
		return -1;
	got = ibv_poll_cq(cq, n, wc);
	if (got)
		return got;
	p = (struct pollfd){ .fd = x->ch->fd, .events = POLLIN };
	if (poll(&p, 1, 50) > 0) {
		if (ibv_get_cq_event(x->ch, &ev_cq, &ev_ctx))
			return -1;
		ibv_ack_cq_events(ev_cq, 1);
	}
	return ibv_poll_cq(cq, n, wc);
}

/* ---- the client ---- */

struct stream {
	uint64_t total, off;	/* bytes to move, bytes posted */
	uint32_t posted, done;	/* messages */
	uint64_t bytes_done;
	bool active;
};

struct client {
	struct xfer *x;
	struct stream s[ST_N];
	uint64_t model[NCTR];	/* the counters as the server must have them */
	uint64_t expect[MAX_DEPTH];	/* atomic results, by ring slot */
	uint64_t fifo[MAX_DEPTH];	/* wr_ids in posting order */
	uint32_t fifo_head, fifo_tail;
	int rr;
	struct stats st;
	bool failed;
};

#define WRID(st, i) ((uint64_t)(st) << 56 | (i))

static bool stream_more(const struct client *c, int st)
{
	const struct stream *s = &c->s[st];

	if (!s->active)
		return false;
	if (st == ST_ATOMIC)
		return s->posted < s->total;
	return s->off < s->total || (s->posted <= 3 && s->total > 0);
}

static int post_atomic(struct client *c, struct ibv_send_wr *wr,
		       struct ibv_sge *sge, uint32_t i)
{
	struct xfer *x = c->x;
	uint64_t h = mix64((uint64_t)x->o.seed << 40 ^ 0xa70c ^ i);
	unsigned int k = (unsigned int)(h % NCTR);
	uint32_t slot = i % (uint32_t)x->o.depth;

	sge->addr = (uintptr_t)&x->ctr[slot];
	sge->length = 8;
	sge->lkey = x->mr_ctr->lkey;
	x->ctr[slot] = 0x5555555555555555ull;	/* must be overwritten */
	wr->wr.atomic.remote_addr = x->peer[H_CADDR] + 8 * k;
	wr->wr.atomic.rkey = (uint32_t)x->peer[H_CKEY];
	c->expect[slot] = c->model[k];
	if (h >> 60 & 1) {
		wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.compare_add = mix64(h);
		c->model[k] += wr->wr.atomic.compare_add;
	} else {
		wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		/* half hits, half misses */
		wr->wr.atomic.compare_add = h >> 61 & 1 ? c->model[k] :
					    c->model[k] ^ (h | 1);
		wr->wr.atomic.swap = mix64(h + 1);
		if (wr->wr.atomic.compare_add == c->model[k])
			c->model[k] = wr->wr.atomic.swap;
	}
	return 0;
}

/* Posts the next request of stream @st. */
static int post_one(struct client *c, int st)
{
	struct xfer *x = c->x;
	struct stream *s = &c->s[st];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i = s->posted, len = 0;
	int rc;

	memset(&wr, 0, sizeof(wr));
	memset(&sge, 0, sizeof(sge));
	wr.wr_id = WRID(st, i);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (st == ST_ATOMIC) {
		post_atomic(c, &wr, &sge, i);
	} else {
		len = msg_len(x, st, i, s->total - s->off);
		sge.addr = (uintptr_t)(st == ST_READ ? x->b : x->a) + s->off;
		sge.length = len;
		sge.lkey = st == ST_READ ? x->mr_b->lkey : x->mr_a->lkey;
		if (!len)
			wr.num_sge = 0;
		if (st == ST_SEND) {
			wr.opcode = i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
			wr.imm_data = htonl(i);
			if (len <= x->max_inline && i % 3 == 0)
				wr.send_flags |= IBV_SEND_INLINE;
		} else {
			wr.opcode = st == ST_WRITE ? IBV_WR_RDMA_WRITE :
				    IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = x->peer[st == ST_WRITE ?
							 H_WADDR : H_RADDR] + s->off;
			wr.wr.rdma.rkey = (uint32_t)x->peer[st == ST_WRITE ?
							    H_WKEY : H_RKEY];
		}
	}
	rc = ibv_post_send(x->qp, &wr, &bad);
	if (rc) {
		say("FAIL ibv_post_send(%s #%u): %s\n", st_names[st], i, strerror(rc));
		return -1;
	}
	c->fifo[c->fifo_tail++ % MAX_DEPTH] = wr.wr_id;
	s->posted++;
	s->off += len;
	return 0;
}

static const enum ibv_wc_opcode st_wc_op[ST_N] = {
	IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_SEND, 0,
};

static void check_wc(struct client *c, const struct ibv_wc *wc)
{
	struct xfer *x = c->x;
	uint64_t want = c->fifo[c->fifo_head++ % MAX_DEPTH];
	int st = (int)(wc->wr_id >> 56);
	uint32_t i = (uint32_t)wc->wr_id;

	count_status(&c->st, wc->status);
	if (wc->status != IBV_WC_SUCCESS) {
		if (!c->failed)
			say("FAIL completion %s #%u: %s (vendor_err %u)\n",
			    st < ST_N ? st_names[st] : "?", i,
			    ibv_wc_status_str(wc->status), wc->vendor_err);
		c->failed = true;
		return;
	}
	if (wc->wr_id != want || st >= ST_N) {
		say("FAIL completion out of order: wr_id 0x%llx, expected 0x%llx\n",
		    (unsigned long long)wc->wr_id, (unsigned long long)want);
		c->st.bad++;
		c->failed = true;
		return;
	}
	if (st == ST_ATOMIC) {
		uint32_t slot = i % (uint32_t)x->o.depth;

		if ((wc->opcode != IBV_WC_FETCH_ADD && wc->opcode != IBV_WC_COMP_SWAP) ||
		    x->ctr[slot] != c->expect[slot]) {
			say("FAIL atomic #%u (wc opcode %d): returned 0x%016llx, the sequential model says 0x%016llx\n",
			    i, wc->opcode, (unsigned long long)x->ctr[slot],
			    (unsigned long long)c->expect[slot]);
			c->st.bad++;
			c->failed = true;
		}
	} else if (wc->opcode != st_wc_op[st]) {
		say("FAIL %s #%u: completion opcode %d, expected %d\n",
		    st_names[st], i, wc->opcode, st_wc_op[st]);
		c->st.bad++;
		c->failed = true;
	}
	c->s[st].done++;
}

/* Posts and reaps until every stream is done (or something failed). */
static int client_run(struct client *c, uint64_t *elapsed)
{
	struct xfer *x = c->x;
	uint64_t t0 = now_ns(), spins = 0;
	struct ibv_wc wc[32];
	int n, k, st;

	for (;;) {
		bool more = false;

		while (!c->failed &&
		       c->fifo_tail - c->fifo_head < (uint32_t)x->o.depth) {
			for (k = 0, st = -1; k < ST_N && st < 0; k++)
				if (stream_more(c, (c->rr + k) % ST_N))
					st = (c->rr + k) % ST_N;
			if (st < 0)
				break;
			c->rr = st + 1;
			if (post_one(c, st))
				return -1;
		}
		for (k = 0; k < ST_N; k++)
			more |= stream_more(c, k);
		if (c->fifo_head == c->fifo_tail && (!more || c->failed))
			break;
		n = cq_poll(x, x->scq, 32, wc);
		if (n < 0) {
			say("FAIL ibv_poll_cq: %d\n", n);
			return -1;
		}
		for (k = 0; k < n; k++)
			check_wc(c, &wc[k]);
		if (++spins % 4096 == 0 && timed_out(x)) {
			say("FAIL timeout: %u requests still in flight\n",
			    c->fifo_tail - c->fifo_head);
			return -2;
		}
	}
	*elapsed = now_ns() - t0;
	return c->failed ? -1 : 0;
}

/* Reads the counters back by RDMA READ into ctr[MAX_DEPTH..]. */
static int read_back_counters(struct client *c)
{
	struct xfer *x = c->x;
	struct ibv_sge sge = {
		.addr = (uintptr_t)&x->ctr[MAX_DEPTH], .length = 8 * NCTR,
		.lkey = x->mr_ctr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0xfeed, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	int n;

	wr.wr.rdma.remote_addr = x->peer[H_CADDR];
	wr.wr.rdma.rkey = (uint32_t)x->peer[H_CKEY];
	if (ibv_post_send(x->qp, &wr, &bad))
		return -1;
	do {
		n = cq_poll(x, x->scq, 1, &wc);
	} while (n == 0 && !timed_out(x));
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		say("FAIL reading the counters back: %s\n",
		    n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
		return -1;
	}
	return 0;
}

static int client_verify(struct client *c, const uint64_t *res, bool ctr_ok)
{
	struct xfer *x = c->x;
	uint64_t first = 0, bad;
	int rc = 0, k;

	if (c->s[ST_WRITE].active) {
		if (res[RS_BAD])
			say("verify: FAIL write: %llu bytes differ at the server, the first at offset %llu\n",
			    (unsigned long long)res[RS_BAD],
			    (unsigned long long)res[RS_FIRST_BAD]);
		else
			say("verify: write ok, %llu bytes\n",
			    (unsigned long long)x->o.size);
		rc |= res[RS_BAD] != 0;
	}
	if (c->s[ST_READ].active) {
		bad = pat_check(x->b, seed_of(x, ST_READ), 0, x->o.size, &first);
		if (bad)
			say("verify: FAIL read: %llu bytes differ, the first at offset %llu\n",
			    (unsigned long long)bad, (unsigned long long)first);
		else
			say("verify: read ok, %llu bytes\n", (unsigned long long)x->o.size);
		rc |= bad != 0;
	}
	if (c->s[ST_SEND].active) {
		bool ok = res[RS_OK] && res[RS_RECVS] == c->s[ST_SEND].posted &&
			  res[RS_RECV_BYTES] == x->o.size;

		say("verify: %s send: the server checked %llu messages, %llu bytes (sent %u, %llu)\n",
		    ok ? "ok" : "FAIL", (unsigned long long)res[RS_RECVS],
		    (unsigned long long)res[RS_RECV_BYTES], c->s[ST_SEND].posted,
		    (unsigned long long)x->o.size);
		rc |= !ok;
	}
	if (c->s[ST_ATOMIC].active) {
		bool ok = ctr_ok;

		for (k = 0; k < NCTR; k++) {
			if (res[RS_CTR + k] != c->model[k] ||
			    x->ctr[MAX_DEPTH + k] != c->model[k]) {
				say("verify: FAIL counter %d: server 0x%016llx, read back 0x%016llx, model 0x%016llx\n",
				    k, (unsigned long long)res[RS_CTR + k],
				    (unsigned long long)x->ctr[MAX_DEPTH + k],
				    (unsigned long long)c->model[k]);
				ok = false;
			}
		}
		if (ok)
			say("verify: atomic ok, %u operations, every result and the %d final counters as modelled\n",
			    c->s[ST_ATOMIC].posted, NCTR);
		rc |= !ok;
	}
	return rc ? -1 : 0;
}

static void client_init_streams(struct client *c)
{
	struct xfer *x = c->x;
	int k;

	for (k = 0; k < ST_N; k++) {
		c->s[k].active = x->o.mode & 1u << k;
		c->s[k].total = k == ST_ATOMIC ? x->o.atomics : x->o.size;
	}
	for (k = 0; k < NCTR; k++)
		c->model[k] = mix64(x->o.seed ^ 0xc0ffee ^ (uint64_t)k);
}

static int client_transfer(struct xfer *x)
{
	static struct client c;
	uint64_t msg[NFIELD] = { M_DONE }, res[NFIELD], elapsed = 0, bytes = 0;
	bool ctr_ok = true;
	int rc, k;

	c.x = x;
	client_init_streams(&c);
	rc = client_run(&c, &elapsed);
	/* The final counters, by RDMA READ after the last atomic. */
	if (!rc && c.s[ST_ATOMIC].active)
		ctr_ok = !read_back_counters(&c);
	msg[1] = rc != 0;
	if (rc) {
		/* Reap what is left (flushes) for the status report. */
		uint64_t until = now_ns() + 2000000000ull;
		struct ibv_wc wc;

		while (c.fifo_head != c.fifo_tail && now_ns() < until)
			if (cq_poll(x, x->scq, 1, &wc) == 1)
				check_wc(&c, &wc);
	}
	for (k = 0; k < ST_N; k++)
		if (c.s[k].active && k != ST_ATOMIC)
			bytes += c.s[k].off;
	say("result: mode 0x%x bytes %llu requests %u seconds %.3f MB/s %.1f\n",
	    x->o.mode, (unsigned long long)bytes, c.fifo_tail,
	    (double)elapsed / 1e9,
	    elapsed ? (double)bytes / ((double)elapsed / 1e9) / 1e6 : 0.0);
	print_statuses("client", &c.st);
	if (tcp_send(x, msg) || tcp_recv(x, res, -1) || res[0] != M_RESULT) {
		say("FAIL no result from the server\n");
		return rc == -2 ? EXIT_TIME : EXIT_CHECK;
	}
	if (rc)
		return rc == -2 ? EXIT_TIME : EXIT_CHECK;
	return client_verify(&c, res, ctr_ok) ? EXIT_CHECK : 0;
}

/* ---- error-path modes, client side ---- */

static int wait_wc(struct xfer *x, struct ibv_wc *wc, uint64_t until)
{
	int n;

	do {
		n = cq_poll(x, x->scq, 1, wc);
	} while (n == 0 && now_ns() < until);
	return n;
}

static int client_rnr(struct xfer *x)
{
	uint64_t msg[NFIELD] = { M_POST }, res[NFIELD], t0, until;
	static struct client c;
	struct ibv_wc wc;
	int n, rc = EXIT_CHECK;

	/* message #0 of the send stream, which the server checks */
	c.x = x;
	client_init_streams(&c);
	t0 = now_ns();
	if (post_one(&c, ST_SEND))
		return EXIT_SETUP;
	until = t0 + (uint64_t)x->o.late_ms * 1000000ull;
	n = wait_wc(x, &wc, x->o.rnr_retry == 7 ? until : x->deadline_ns);
	if (x->o.rnr_retry != 7) {
		double s = (double)(now_ns() - t0) / 1e9;

		if (n == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR) {
			say("PASS rnr_retry %d: IBV_WC_RNR_RETRY_EXC_ERR after %.6f s\n",
			    x->o.rnr_retry, s);
			rc = 0;
		} else {
			say("FAIL rnr_retry %d: %s after %.6f s, expected IBV_WC_RNR_RETRY_EXC_ERR\n",
			    x->o.rnr_retry,
			    n == 1 ? ibv_wc_status_str(wc.status) : "no completion", s);
		}
	} else if (n != 0) {
		say("FAIL rnr_retry 7: the SEND completed (%s) before the receive was posted\n",
		    ibv_wc_status_str(wc.status));
	} else {
		/* Still retrying after late_ms: now the receive comes. */
		tcp_send(x, msg);
		n = wait_wc(x, &wc, now_ns() + 5000000000ull);
		if (n == 1 && wc.status == IBV_WC_SUCCESS) {
			say("PASS rnr_retry 7: still retrying after %d ms, completed once the receive was posted\n",
			    x->o.late_ms);
			rc = 0;
		} else {
			say("FAIL rnr_retry 7: %s after the receive was posted\n",
			    n == 1 ? ibv_wc_status_str(wc.status) : "no completion in 5 s");
		}
	}
	msg[0] = M_DONE;
	msg[1] = rc != 0;
	if (tcp_send(x, msg) || tcp_recv(x, res, -1) || res[0] != M_RESULT) {
		say("FAIL no result from the server\n");
		return EXIT_CHECK;
	}
	if (x->o.rnr_retry == 7 && res[RS_RECVS] != 1) {
		say("FAIL the server's receive did not complete successfully\n");
		return EXIT_CHECK;
	}
	return rc;
}

static int client_vanish(struct xfer *x)
{
	uint64_t msg[NFIELD] = { M_DIE }, res[NFIELD], t0, bound_ns;
	double t = 4.096e-6 * (double)(1ull << x->o.qp_timeout);
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4];
	struct ibv_wc wc;
	int k, n, rc = 0;

	/* The server kills itself; its TCP end closing tells us it is gone. */
	tcp_send(x, msg);
	if (tcp_recv(x, res, 10000) != -1) {
		say("FAIL the server did not go away\n");
		return EXIT_CHECK;
	}
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < 4; k++) {
		sge[k] = (struct ibv_sge){ (uintptr_t)x->a, 4096, x->mr_a->lkey };
		wr[k].wr_id = (uint64_t)k;
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].send_flags = IBV_SEND_SIGNALED;
		wr[k].opcode = k == 2 ? IBV_WR_RDMA_READ : k == 3 ? IBV_WR_SEND :
			       IBV_WR_RDMA_WRITE;
		wr[k].wr.rdma.remote_addr = x->peer[H_WADDR];
		wr[k].wr.rdma.rkey = (uint32_t)x->peer[H_WKEY];
		wr[k].next = k < 3 ? &wr[k + 1] : NULL;
	}
	t0 = now_ns();
	if (ibv_post_send(x->qp, wr, &bad)) {
		say("FAIL ibv_post_send\n");
		return EXIT_SETUP;
	}
	if (!x->o.qp_timeout) {
		n = wait_wc(x, &wc, t0 + (uint64_t)x->o.late_ms * 1000000ull);
		if (n) {
			say("FAIL timeout 0 (no transport timer): a request completed (%s) after %.3f s\n",
			    ibv_wc_status_str(wc.status), (double)(now_ns() - t0) / 1e9);
			return EXIT_CHECK;
		}
		say("PASS timeout 0: nothing completed in %d ms (no transport timer)\n",
		    x->o.late_ms);
		return 0;
	}
	bound_ns = (uint64_t)((2.0 * (x->o.retry_cnt + 1) * t + 1.0) * 1e9);
	for (k = 0; k < 4; k++) {
		enum ibv_wc_status want = k ? IBV_WC_WR_FLUSH_ERR :
					  IBV_WC_RETRY_EXC_ERR;
		double s;

		n = wait_wc(x, &wc, t0 + bound_ns + 1000000000ull);
		s = (double)(now_ns() - t0) / 1e9;
		if (n != 1 || wc.status != want || wc.wr_id != (uint64_t)k) {
			say("FAIL request %d: %s (wr_id %llu) after %.6f s, expected %s\n",
			    k, n == 1 ? ibv_wc_status_str(wc.status) : "no completion",
			    n == 1 ? (unsigned long long)wc.wr_id : 0ull, s,
			    ibv_wc_status_str(want));
			return EXIT_CHECK;
		}
		if (k)
			continue;
		say("measured: IBV_WC_RETRY_EXC_ERR after %.6f s (timeout %d = %.6f s, retry_cnt %d: budget %.6f s, bound %.6f s)\n",
		    s, x->o.qp_timeout, t, x->o.retry_cnt,
		    (x->o.retry_cnt + 1) * t, (double)bound_ns / 1e9);
		if (now_ns() - t0 > bound_ns) {
			say("FAIL IBV_WC_RETRY_EXC_ERR came after the bound\n");
			rc = EXIT_CHECK;
		}
	}
	if (!rc)
		say("PASS vanished peer: IBV_WC_RETRY_EXC_ERR, then IBV_WC_WR_FLUSH_ERR x3, within the bound\n");
	return rc;
}

/* ---- the server ---- */

static int post_recv(struct xfer *x, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(x->recv + (size_t)slot * x->maxlen),
		.length = x->maxlen, .lkey = x->mr_recv->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(x->qp, &wr, &bad);
}

struct srv_recv {
	uint64_t off, bytes;
	uint32_t n, total;
	struct stats st;
	bool failed;
};

/* Checks receive completion @wc: message r->n of the send stream. */
static void srv_check_recv(struct xfer *x, struct srv_recv *r,
			   const struct ibv_wc *wc)
{
	uint32_t i = r->n, len = msg_len(x, ST_SEND, i, x->o.size - r->off);
	uint32_t slot = i % x->nrecv;
	uint64_t first = 0, bad;

	count_status(&r->st, wc->status);
	if (wc->status != IBV_WC_SUCCESS) {
		if (!r->failed)
			say("FAIL receive #%u: %s\n", i, ibv_wc_status_str(wc->status));
		r->failed = true;
		return;
	}
	if (wc->wr_id != slot || wc->opcode != IBV_WC_RECV ||
	    wc->byte_len != len || wc->qp_num != x->qp->qp_num ||
	    !!(wc->wc_flags & IBV_WC_WITH_IMM) != (i & 1) ||
	    ((i & 1) && ntohl(wc->imm_data) != i)) {
		say("FAIL receive #%u: wr_id %llu (want %u) opcode %d byte_len %u (want %u) flags 0x%x imm %u\n",
		    i, (unsigned long long)wc->wr_id, slot, wc->opcode,
		    wc->byte_len, len, wc->wc_flags, ntohl(wc->imm_data));
		r->failed = true;
		r->st.bad++;
	}
	bad = pat_check(x->recv + (size_t)slot * x->maxlen,
			seed_of(x, ST_SEND), r->off, len, &first);
	if (bad) {
		say("FAIL receive #%u: %llu of %u bytes differ, the first at stream offset %llu\n",
		    i, (unsigned long long)bad, len, (unsigned long long)first);
		r->failed = true;
		r->st.bad++;
	}
	r->off += len;
	r->bytes += wc->byte_len;
	r->n++;
}

/* Receives the send stream: checks each message, posts its slot again. */
static int srv_receive(struct xfer *x, struct srv_recv *r)
{
	uint64_t spins = 0, msg[NFIELD];
	struct ibv_wc wc[16];
	int n, k;

	while (r->n < r->total && !r->failed) {
		n = cq_poll(x, x->rcq, 16, wc);
		for (k = 0; k < n; k++) {
			srv_check_recv(x, r, &wc[k]);
			/* message n - 1 done: its slot takes n - 1 + nrecv */
			if (r->n - 1 + x->nrecv < r->total &&
			    post_recv(x, (r->n - 1) % x->nrecv))
				r->failed = true;
		}
		if (n == 0 && (x->ch || ++spins % 8192 == 0)) {
			/* The client gave up: its DONE says so. */
			if (tcp_recv(x, msg, 0) == 0 && msg[0] == M_DONE) {
				say("FAIL the client finished after %u of %u messages\n",
				    r->n, r->total);
				return msg[1] ? 1 : -1;
			}
			if (timed_out(x)) {
				say("FAIL timeout: %u of %u messages received\n",
				    r->n, r->total);
				return -2;
			}
		}
	}
	return 0;
}

static uint32_t send_messages(const struct xfer *x)
{
	uint64_t left = x->o.size;
	uint32_t i;

	for (i = 0; left > 0 || (i <= 3 && x->o.size); i++)
		left -= msg_len(x, ST_SEND, i, left);
	return i;
}

static int server_transfer(struct xfer *x)
{
	uint64_t msg[NFIELD], res[NFIELD] = { M_RESULT };
	struct srv_recv r;
	uint32_t k;
	int rc = 0, got_done = 0;

	memset(&r, 0, sizeof(r));
	if ((x->o.mode & 1u << ST_SEND) && !(x->o.flags & F_RNR)) {
		r.total = send_messages(x);
		for (k = 0; k < x->nrecv; k++)
			if (post_recv(x, k))
				return EXIT_SETUP;
	}
	msg[0] = M_READY;
	if (tcp_send(x, msg))
		return EXIT_SETUP;
	if (x->o.flags & F_VANISH) {
		if (tcp_recv(x, msg, -1) == 0 && msg[0] == M_DIE) {
			say("vanishing (SIGKILL)\n");
			raise(SIGKILL);
		}
		return EXIT_CHECK;
	}
	if (x->o.flags & F_RNR) {
		r.total = 1;
		if (tcp_recv(x, msg, -1))
			return EXIT_CHECK;
		if (msg[0] == M_POST) {
			if (post_recv(x, 0) || srv_receive(x, &r))
				rc = EXIT_CHECK;
		} else {
			got_done = 1;
		}
	} else if (r.total) {
		rc = srv_receive(x, &r);
		if (rc == 1 || rc == -1)
			got_done = 1;
		rc = rc ? EXIT_CHECK : 0;
	}
	if (!got_done && (tcp_recv(x, msg, -1) || msg[0] != M_DONE)) {
		say("FAIL no DONE from the client\n");
		return EXIT_CHECK;
	}
	res[RS_OK] = !r.failed;
	res[RS_RECVS] = r.n;
	res[RS_RECV_BYTES] = r.bytes;
	if ((x->o.mode & 1u << ST_WRITE) && !x->o.flags) {
		res[RS_BAD] = pat_check(x->a, seed_of(x, ST_WRITE), 0, x->o.size,
				       &res[RS_FIRST_BAD]);
		say("verify: %s write: %llu bytes differ\n", res[RS_BAD] ? "FAIL" : "ok",
		    (unsigned long long)res[RS_BAD]);
		if (res[RS_BAD])
			rc = EXIT_CHECK;
	}
	for (k = 0; k < NCTR; k++)
		res[RS_CTR + k] = __atomic_load_n(&x->ctr[k], __ATOMIC_SEQ_CST);
	if (r.total)
		say("verify: %s send: %u messages, %llu bytes checked\n",
		    r.failed ? "FAIL" : "ok", r.n, (unsigned long long)r.bytes);
	print_statuses("server", &r.st);
	tcp_send(x, res);
	return rc;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr,
"usage: urxe_xfer [options] [HOST]    (no HOST: the server)\n"
"  -m write|read|send|atomic|all  what to move (client; default all)\n"
"  -s MiB        bytes per data stream (default 64)\n"
"  -c bytes      largest message (default 65536)\n"
"  -q depth      requests in flight (default 16)\n"
"  -a n          atomic operations (default 4096)\n"
"  -d dev -g gid-index -p tcp-port -t seconds (default first, 0, 18515, 120)\n"
"  -T timeout -r retry_cnt -R rnr_retry -n min_rnr_timer (14, 7, 7, 1)\n"
"  -S seed       pattern and length sequence seed (default 1)\n"
"  -e            wait for completion events (a channel) instead of spinning\n"
"  --rnr-test | --vanish-test  [--late ms (default 300)]\n");
	exit(EXIT_SETUP);
}

static unsigned int parse_mode(const char *s)
{
	int k;

	if (!strcmp(s, "all"))
		return MODE_ALL;
	for (k = 0; k < ST_N; k++)
		if (!strcmp(s, st_names[k]))
			return 1u << k;
	usage();
	return 0;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "rnr-test", no_argument, NULL, 'N' },
		{ "vanish-test", no_argument, NULL, 'V' },
		{ "late", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .port = 18515, .timeout_s = 120, .depth = 16,
			    .qp_timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			    .rnr_timer = 1, .late_ms = 300, .mode = MODE_ALL,
			    .atomics = 4096, .seed = 1, .size = 64ull << 20,
			    .chunk = 65536 };
	while ((c = getopt_long(argc, argv, "m:s:c:q:a:d:g:p:t:T:r:R:n:S:e", lo,
				NULL)) != -1) {
		switch (c) {
		case 'm': o->mode = parse_mode(optarg); break;
		case 's': o->size = (uint64_t)(strtod(optarg, NULL) * 1048576.0); break;
		case 'c': o->chunk = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'q': o->depth = atoi(optarg); break;
		case 'a': o->atomics = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': o->dev = optarg; break;
		case 'g': o->gidx = atoi(optarg); break;
		case 'p': o->port = atoi(optarg); break;
		case 't': o->timeout_s = atoi(optarg); break;
		case 'T': o->qp_timeout = atoi(optarg); break;
		case 'r': o->retry_cnt = atoi(optarg); break;
		case 'R': o->rnr_retry = atoi(optarg); break;
		case 'n': o->rnr_timer = atoi(optarg); break;
		case 'S': o->seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'N': o->flags |= F_RNR; break;
		case 'V': o->flags |= F_VANISH; break;
		case 'L': o->late_ms = atoi(optarg); break;
		case 'e': o->events = true; break;
		default: usage();
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (o->flags & F_RNR)
		o->mode = 1u << ST_SEND;
	if (o->flags & F_VANISH)
		o->mode = 1u << ST_WRITE;
	o->server = !o->host;
	if (optind != argc || o->depth < 1 || o->depth > MAX_DEPTH ||
	    o->chunk < 2 || o->timeout_s < 1 || o->qp_timeout < 0 ||
	    o->qp_timeout > 31 || o->retry_cnt < 0 || o->retry_cnt > 7 ||
	    o->rnr_retry < 0 || o->rnr_retry > 7 || o->rnr_timer < 0 ||
	    o->rnr_timer > 31 || o->flags == (F_RNR | F_VANISH))
		usage();
}

/* The server takes the work from the client's hello. */
static int server_adopt(struct xfer *x, const uint64_t *f)
{
	if (f[H_MAGIC] != MAGIC || !f[H_MODE] || f[H_MODE] > MODE_ALL ||
	    !f[H_DEPTH] || f[H_DEPTH] > MAX_DEPTH || f[H_CHUNK] < 2 ||
	    f[H_SIZE] > (1ull << 34)) {
		fprintf(stderr, "bad hello from the client\n");
		return -1;
	}
	x->o.mode = (unsigned int)f[H_MODE];
	x->o.flags = (unsigned int)f[H_FLAGS];
	x->o.size = f[H_SIZE];
	x->o.chunk = (uint32_t)f[H_CHUNK];
	x->o.depth = (int)f[H_DEPTH];
	x->o.atomics = (unsigned int)f[H_ATOMICS];
	x->o.seed = (unsigned int)f[H_SEED];
	return 0;
}

/* Everything goes, and says so if it cannot: a refusal is a finding. */
static int teardown(struct xfer *x)
{
	int rc = 0;

#define DESTROY(obj, fn)						\
	do {								\
		int e_ = (obj) ? fn(obj) : 0;				\
									\
		if (e_) {						\
			say("FAIL " #fn ": %s\n", strerror(e_ > 0 ? e_ : errno)); \
			rc = -1;					\
		}							\
	} while (0)
	DESTROY(x->qp, ibv_destroy_qp);
	DESTROY(x->scq, ibv_destroy_cq);
	DESTROY(x->rcq, ibv_destroy_cq);
	DESTROY(x->ch, ibv_destroy_comp_channel);
	DESTROY(x->mr_a, ibv_dereg_mr);
	DESTROY(x->mr_b, ibv_dereg_mr);
	DESTROY(x->mr_ctr, ibv_dereg_mr);
	DESTROY(x->mr_recv, ibv_dereg_mr);
	DESTROY(x->pd, ibv_dealloc_pd);
	DESTROY(x->ctx, ibv_close_device);
#undef DESTROY
	free(x->a);
	free(x->b);
	free(x->ctr);
	free(x->recv);
	if (x->sock >= 0)
		close(x->sock);
	return rc;
}

int main(int argc, char **argv)
{
	static struct xfer x;
	uint64_t hello[NFIELD], msg[NFIELD];
	int rc;

	parse(argc, argv, &x.o);
	x.sock = -1;
	x.deadline_ns = now_ns() + (uint64_t)x.o.timeout_s * 1000000000ull;
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)x.o.timeout_s + 5);
	/* PSNs start near the top of the 24-bit space: they wrap. */
	x.psn = x.o.server ? 0xfff800 : 0xffff00 - 0x300;
	x.max_rd = 16;
	if (open_dev(&x) ||
	    (x.o.server ? tcp_accept(&x) : tcp_connect(&x))) {
		fprintf(stderr, "set-up failed\n");
		teardown(&x);
		return EXIT_SETUP;
	}
	if (x.o.server) {
		if (tcp_recv(&x, x.peer, -1) || server_adopt(&x, x.peer) ||
		    setup(&x)) {
			teardown(&x);
			return EXIT_SETUP;
		}
		hello_fill(&x, hello);
		print_local(&x);
		if (tcp_send(&x, hello) || connect_qp(&x)) {
			teardown(&x);
			return EXIT_SETUP;
		}
		rc = server_transfer(&x);
	} else {
		if (setup(&x)) {
			teardown(&x);
			return EXIT_SETUP;
		}
		hello_fill(&x, hello);
		print_local(&x);
		if (tcp_send(&x, hello) || tcp_recv(&x, x.peer, -1) ||
		    x.peer[H_MAGIC] != MAGIC || connect_qp(&x) ||
		    tcp_recv(&x, msg, -1) || msg[0] != M_READY) {
			fprintf(stderr, "rendezvous failed\n");
			teardown(&x);
			return EXIT_SETUP;
		}
		rc = x.o.flags & F_RNR ? client_rnr(&x) :
		     x.o.flags & F_VANISH ? client_vanish(&x) :
		     client_transfer(&x);
	}
	if (teardown(&x) && !rc)
		rc = EXIT_CHECK;
	say("%s %s (exit %d)\n", rc ? "FAIL" : "PASS",
	    x.o.server ? "server" : "client", rc);
	return rc;
}
