// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe-udp-limit: the machine's own UDP limits, the yardstick bench/run
 * holds urxe against.
 *
 *   tput: batched throughput, GSO on send (UDP_SEGMENT, e.g. 15 segments of
 *         4154 bytes, the size of a RoCEv2 frame with a 4096-byte payload)
 *         and GRO on receive (UDP_GRO), for a fixed time.  Reports payload
 *         bytes and datagrams (segments) received per second.
 *   rtt:  64-byte ping-pong; both ends busy-poll (non-blocking receive in
 *         a spin loop) or, with --block, sleep in recv().  Reports the
 *         median, minimum and 99th percentile round trip.
 *   mem:  memcpy of a hot 64 KiB and a cold 64 MiB buffer: what a GSO/GRO
 *         transfer (one copy in, one copy out) is bound by, to tell a
 *         slower machine from a slower network stack.
 *
 * Without --recv/--send (--echo/--ping) both ends run as two threads of
 * this process on 127.0.0.1, pinned to different CPUs where allowed; with
 * them, one end per process, so that bench/run can put each in its own
 * network namespace.  Socket buffers are forced (SO_RCVBUFFORCE and
 * SO_SNDBUFFORCE, CAP_NET_ADMIN) to --buf bytes, else set as far as
 * net.core.[rw]mem_max lets an ordinary user; the sizes obtained are
 * printed.  Results are one "key=value ..." line on stdout; diagnostics go
 * to stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define RX_BUF		(1 << 16)	/* a GRO super-datagram is < 64 KiB */
#define WARM_NS		200000000LL	/* tput: ignored after the first datagram */
#define RTT_TIMEOUT_NS	200000000LL	/* rtt: resend after this long */
#define MSG_PING	'P'
#define MSG_QUIT	'Q'

struct opts {
	const char *peer;	/* ADDR:PORT of --recv/--send/--echo/--ping */
	int role;		/* 'r', 's', 'e', 'p', or 0: both, as threads */
	double secs;		/* tput measuring window; rtt echo lifetime */
	int seg;		/* tput: GSO segment (datagram) size */
	int gso;		/* tput: segments per send */
	int buf;		/* wished-for socket buffer size */
	int busy;		/* tput receiver spins instead of sleeping */
	int cpu;		/* pin to this CPU, or -1 */
	int nopin;		/* threads: let the scheduler place them */
	long iters;		/* rtt: measured round trips */
	int size;		/* rtt: datagram size */
	int block;		/* rtt: blocking receive */
	double wait;		/* seconds to wait for the peer's first datagram */
};

static struct opts o = {
	.secs = 2.0, .seg = 4154, .gso = 15, .buf = 32 << 20, .cpu = -1,
	.iters = 100000, .size = 64, .wait = 10.0,
};

static atomic_int stop_sender;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "urxe-udp-limit: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t n;

	if (!colon || colon == s || (n = colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1 || !sa->sin_port)
		return -EINVAL;
	return 0;
}

/* The n-th CPU this process may run on, or -1. */
static int allowed_cpu(int n)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && n-- == 0)
			return cpu;
	return -1;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || o.nopin)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Pinning is a wish: a restricted cpuset just runs unpinned. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int getint(int fd, int level, int name)
{
	int v = 0;
	socklen_t len = sizeof(v);

	getsockopt(fd, level, name, &v, &len);
	return v;
}

/* Forced if allowed (root), else as large as the sysctl cap lets us. */
static void size_buffers(int fd)
{
	int v = o.buf;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	size_buffers(fd);
	return fd;
}

static void bind_to(int fd, const struct sockaddr_in *sa)
{
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		die("bind");
}

static void bound_loopback(int fd, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind_to(fd, sa);
	if (getsockname(fd, (struct sockaddr *)sa, &len))
		die("getsockname");
}

/* --- tput ---------------------------------------------------------------- */

struct rx_stats {
	int64_t bytes, segs, reads;	/* inside the measuring window */
	int64_t t_start, t_end;		/* the window actually measured */
	uint32_t drops;			/* SO_RXQ_OVFL: socket queue overflows */
	int rcvbuf;
};

struct tx_stats {
	int64_t sends, bytes, enobufs;
	int sndbuf;
	int err;			/* errno that ended sending, or 0 */
};

/* Segments in one received (possibly GRO-coalesced) datagram. */
static int64_t count_segs(struct msghdr *mh, ssize_t len, uint32_t *drops)
{
	struct cmsghdr *c;
	int gso = 0;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
			memcpy(&gso, CMSG_DATA(c), sizeof(gso));
		else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
			memcpy(drops, CMSG_DATA(c), sizeof(*drops));
	}
	return gso > 0 ? (len + gso - 1) / gso : 1;
}

/*
 * Receives until the window (WARM_NS after the first datagram, then
 * o.secs) closes or the sender falls silent for a second.
 */
static void tput_receive(int fd, struct rx_stats *st)
{
	static char buf[RX_BUF];
	char ctl[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	int64_t first = 0, win_end = 0, last = 0, t, deadline;
	int flags = o.busy ? MSG_DONTWAIT : 0;

	deadline = now_ns() + (int64_t)(o.wait * 1e9);
	for (;;) {
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl, .msg_controllen = sizeof(ctl),
		};
		ssize_t n = recvmsg(fd, &mh, flags);
		int64_t segs;

		t = now_ns();
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				die("recvmsg");
			if (t > (first ? last + 1000000000LL : deadline))
				break;
			continue;
		}
		segs = count_segs(&mh, n, &st->drops);
		last = t;
		if (!first) {
			first = t;
			st->t_start = t + WARM_NS;
			win_end = st->t_start + (int64_t)(o.secs * 1e9);
		}
		if (t < st->t_start)
			continue;
		st->bytes += n;
		st->segs += segs;
		st->reads++;
		if (t >= win_end)
			break;
	}
	st->t_end = st->bytes ? last : st->t_start;
}

static int tput_rx_socket(const struct sockaddr_in *sa)
{
	int fd = udp_socket(), one = 1;
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };

	if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)))
		fprintf(stderr, "urxe-udp-limit: UDP_GRO: %s (counting datagrams)\n",
			strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sa)
		bind_to(fd, sa);
	return fd;
}

static int tput_tx_socket(const struct sockaddr_in *dst)
{
	int fd = udp_socket(), seg = o.seg;

	if (o.gso > 1 && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		die("UDP_SEGMENT (GSO)");
	if (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)))
		die("connect");
	return fd;
}

/* Sends until told to stop, the time is up, or the receiver is gone. */
static void tput_send(int fd, int64_t until, struct tx_stats *st)
{
	size_t len = (size_t)o.seg * o.gso;
	char *buf = calloc(1, len);
	int64_t i;

	if (!buf)
		die("calloc");
	st->sndbuf = getint(fd, SOL_SOCKET, SO_SNDBUF);
	for (i = 0;; i++) {
		ssize_t n;

		if ((i & 63) == 0 && (atomic_load_explicit(&stop_sender,
			memory_order_relaxed) || now_ns() > until))
			break;
		n = send(fd, buf, len, 0);
		if (n >= 0) {
			st->sends++;
			st->bytes += n;
		} else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
			st->enobufs++;
		} else {
			/* ECONNREFUSED: the receiver has finished and closed. */
			st->err = errno;
			break;
		}
	}
	free(buf);
}

static void print_rx(const struct rx_stats *st)
{
	double secs = (st->t_end - st->t_start) / 1e9;

	if (secs <= 0 || !st->bytes) {
		printf("tput gbps=0 mpps=0 bytes=0 secs=0 rcvbuf=%d error=nothing_received\n",
		       st->rcvbuf);
		return;
	}
	printf("tput gbps=%.3f mpps=%.3f bytes=%lld secs=%.3f seg=%d gso=%d "
	       "rcvbuf=%d segs_per_read=%.1f drops=%u\n",
	       st->bytes / secs / 1e9, st->segs / secs / 1e6,
	       (long long)st->bytes, secs, o.seg, o.gso, st->rcvbuf,
	       (double)st->segs / st->reads, st->drops);
}

static void print_tx(const struct tx_stats *st)
{
	fprintf(stderr, "urxe-udp-limit: sender: %lld sends, %lld bytes, %lld ENOBUFS/EAGAIN, "
		"sndbuf %d%s%s\n", (long long)st->sends, (long long)st->bytes,
		(long long)st->enobufs, st->sndbuf, st->err ? ", ended by " : "",
		st->err ? strerror(st->err) : "");
}

struct tx_thread {
	struct sockaddr_in dst;
	struct tx_stats st;
	int cpu;
};

static void *tx_thread_main(void *arg)
{
	struct tx_thread *tt = arg;
	int fd;

	pin(tt->cpu);
	fd = tput_tx_socket(&tt->dst);
	tput_send(fd, INT64_MAX, &tt->st);
	close(fd);
	return NULL;
}

static int tput_threads(void)
{
	struct tx_thread tt = { .cpu = allowed_cpu(0) };
	struct rx_stats st = { 0 };
	pthread_t tid;
	int fd;

	pin(allowed_cpu(1));
	fd = tput_rx_socket(NULL);
	bound_loopback(fd, &tt.dst);
	st.rcvbuf = getint(fd, SOL_SOCKET, SO_RCVBUF);
	if (pthread_create(&tid, NULL, tx_thread_main, &tt))
		die("pthread_create");
	tput_receive(fd, &st);
	atomic_store(&stop_sender, 1);
	pthread_join(tid, NULL);
	close(fd);
	print_tx(&tt.st);
	print_rx(&st);
	return st.bytes ? 0 : 1;
}

static int tput_main(void)
{
	struct sockaddr_in sa;
	struct rx_stats rx = { 0 };
	struct tx_stats tx = { 0 };
	int fd;

	if (!o.role)
		return tput_threads();
	if (parse_addr(o.peer, &sa)) {
		fprintf(stderr, "urxe-udp-limit: bad address %s (want IPv4:PORT)\n", o.peer);
		return 2;
	}
	pin(o.cpu);
	if (o.role == 'r') {
		fd = tput_rx_socket(&sa);
		rx.rcvbuf = getint(fd, SOL_SOCKET, SO_RCVBUF);
		tput_receive(fd, &rx);
		print_rx(&rx);
		return rx.bytes ? 0 : 1;
	}
	fd = tput_tx_socket(&sa);
	/* The receiver ends first (and closes: ECONNREFUSED); this is a bound. */
	tput_send(fd, now_ns() + (int64_t)((o.wait + o.secs + 2) * 1e9), &tx);
	print_tx(&tx);
	return tx.sends ? 0 : 1;
}

/* --- rtt ----------------------------------------------------------------- */

/* One datagram, spinning (busy) or sleeping until it comes or `until`. */
static ssize_t rtt_recv(int fd, char *buf, size_t len, int64_t until)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, o.block ? 0 : MSG_DONTWAIT);

		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EINTR)
			die("recv");
		if (now_ns() > until)
			return -1;
	}
}

static int rtt_socket(void)
{
	int fd = udp_socket();
	struct timeval tv = { .tv_sec = 0, .tv_usec = RTT_TIMEOUT_NS / 1000 };

	if (o.block)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * Answers every ping until a quit message or o.secs of silence.  The
 * socket is connected to the first pinger, as the pinger's is to it: no
 * route lookup per answer, the way a tuned ping-pong runs.
 */
static void rtt_echo(int fd)
{
	char buf[RX_BUF];
	int64_t idle = (int64_t)(o.secs * 1e9);
	int connected = 0;

	for (;;) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		int64_t until = now_ns() + idle;
		ssize_t n;

		do {
			n = recvfrom(fd, buf, sizeof(buf), o.block ? 0 : MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("recvfrom");
		} while (n < 0 && now_ns() < until);
		if (n < 0 || (n > 0 && buf[0] == MSG_QUIT))
			return;
		if (!connected) {
			if (connect(fd, (struct sockaddr *)&from, flen))
				die("connect");
			connected = 1;
		}
		send(fd, buf, n, 0);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* One round trip; resent until answered.  Returns ns, or -1 (gave up). */
static int64_t rtt_once(int fd, char *buf, uint64_t seq, int64_t give_up,
			long *lost)
{
	char in[RX_BUF];

	memcpy(buf + 8, &seq, sizeof(seq));
	for (;;) {
		int64_t t0 = now_ns(), t1;
		ssize_t n;

		if (send(fd, buf, o.size, 0) < 0 && errno != ECONNREFUSED)
			die("send");
		while ((n = rtt_recv(fd, in, sizeof(in), t0 + RTT_TIMEOUT_NS)) >= 0) {
			uint64_t got;

			if (n < 16)
				continue;
			memcpy(&got, in + 8, sizeof(got));
			if (got == seq) {
				t1 = now_ns();
				return t1 - t0;
			}
		}
		++*lost;
		if (now_ns() > give_up)
			return -1;
	}
}

static int rtt_ping(int fd)
{
	char *buf = calloc(1, o.size);
	int64_t *rtt = calloc(o.iters, sizeof(*rtt));
	int64_t give_up = now_ns() + (int64_t)(o.wait * 1e9);
	long warm = o.iters / 10 < 100 ? 100 : o.iters / 10, lost = 0, i;
	uint64_t seq = 1;

	if (!buf || !rtt)
		die("calloc");
	buf[0] = MSG_PING;
	/* Warm-up: caches, the peer's first wake-up, its late start. */
	for (i = 0; i < warm; i++)
		if (rtt_once(fd, buf, seq++, give_up, &lost) < 0)
			goto no_answer;
	for (i = 0; i < o.iters; i++) {
		rtt[i] = rtt_once(fd, buf, seq++, now_ns() + 5000000000LL, &lost);
		if (rtt[i] < 0)
			goto no_answer;
	}
	buf[0] = MSG_QUIT;
	for (i = 0; i < 3; i++)
		send(fd, buf, o.size, 0);
	qsort(rtt, o.iters, sizeof(*rtt), cmp_i64);
	printf("rtt median_us=%.2f min_us=%.2f p99_us=%.2f iters=%ld size=%d "
	       "mode=%s lost=%ld\n", rtt[o.iters / 2] / 1e3, rtt[0] / 1e3,
	       rtt[o.iters * 99 / 100] / 1e3, o.iters, o.size,
	       o.block ? "block" : "busy", lost);
	free(rtt);
	free(buf);
	return 0;
no_answer:
	printf("rtt median_us=0 error=no_answer\n");
	free(rtt);
	free(buf);
	return 1;
}

struct echo_thread {
	int fd, cpu;
};

static void *echo_thread_main(void *arg)
{
	struct echo_thread *et = arg;

	pin(et->cpu);
	rtt_echo(et->fd);
	return NULL;
}

static int rtt_threads(void)
{
	struct echo_thread et = { .cpu = allowed_cpu(1) };
	struct sockaddr_in sa;
	pthread_t tid;
	int fd, ret;

	et.fd = rtt_socket();
	bound_loopback(et.fd, &sa);
	if (pthread_create(&tid, NULL, echo_thread_main, &et))
		die("pthread_create");
	pin(allowed_cpu(0));
	fd = rtt_socket();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	ret = rtt_ping(fd);
	pthread_join(tid, NULL);
	close(et.fd);
	close(fd);
	return ret;
}

static int rtt_main(void)
{
	struct sockaddr_in sa;
	int fd;

	if (o.size < 16 || o.size > RX_BUF - 1024 || o.iters < 1) {
		fprintf(stderr, "urxe-udp-limit: --size 16..%d, --iters >= 1\n",
			RX_BUF - 1024);
		return 2;
	}
	if (!o.role)
		return rtt_threads();
	if (parse_addr(o.peer, &sa)) {
		fprintf(stderr, "urxe-udp-limit: bad address %s (want IPv4:PORT)\n", o.peer);
		return 2;
	}
	pin(o.cpu);
	fd = rtt_socket();
	if (o.role == 'e') {
		bind_to(fd, &sa);
		rtt_echo(fd);
		return 0;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	return rtt_ping(fd);
}

/* --- mem ----------------------------------------------------------------- */

/* Copies len bytes from src to dst for about secs; returns GB/s. */
static double copy_rate(char *dst, const char *src, size_t len, double secs)
{
	int64_t t0 = now_ns(), end = t0 + (int64_t)(secs * 1e9), t;
	long long n = 0;

	do {
		int i;

		for (i = 0; i < 16; i++) {
			memcpy(dst, src, len);
			/* The copy is the point: keep the compiler from eliding it. */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		n += 16;
		t = now_ns();
	} while (t < end);
	return (double)n * len / (t - t0);
}

static int mem_main(void)
{
	size_t big = 64 << 20, small = 64 << 10;
	char *a = malloc(big), *b = malloc(big);
	double hot, cold;

	if (!a || !b)
		die("malloc");
	memset(a, 1, big);
	memset(b, 2, big);
	pin(o.cpu);
	cold = copy_rate(b, a, big, 0.4);
	hot = copy_rate(b, a, small, 0.2);
	printf("mem hot_gbps=%.1f cold_gbps=%.1f\n", hot, cold);
	free(a);
	free(b);
	return 0;
}

/* --- options ------------------------------------------------------------- */

static const char usage[] =
	"usage: urxe-udp-limit tput [--recv ADDR:PORT | --send ADDR:PORT]\n"
	"                           [--time S] [--seg BYTES] [--gso N] [--buf BYTES]\n"
	"                           [--busy] [--cpu N] [--nopin] [--wait S]\n"
	"       urxe-udp-limit rtt [--echo ADDR:PORT | --ping ADDR:PORT]\n"
	"                          [--iters N] [--size BYTES] [--block] [--time S]\n"
	"                          [--buf BYTES] [--cpu N] [--wait S]\n"
	"       urxe-udp-limit mem [--cpu N]\n"
	"Without an address both ends run here, as two threads on 127.0.0.1.\n"
	"tput: --seg 4154 --gso 15 --time 2 (seconds measured) --buf 33554432.\n"
	"rtt: --iters 100000 --size 64; --time: the echo end quits after so many\n"
	"seconds without a ping.  --wait: how long to wait for the peer (10 s).\n";

static const struct option longopts[] = {
	{ "recv", required_argument, NULL, 'r' },
	{ "send", required_argument, NULL, 's' },
	{ "echo", required_argument, NULL, 'e' },
	{ "ping", required_argument, NULL, 'p' },
	{ "time", required_argument, NULL, 't' },
	{ "seg", required_argument, NULL, 'S' },
	{ "gso", required_argument, NULL, 'g' },
	{ "buf", required_argument, NULL, 'b' },
	{ "busy", no_argument, NULL, 'B' },
	{ "cpu", required_argument, NULL, 'c' },
	{ "nopin", no_argument, NULL, 'N' },
	{ "iters", required_argument, NULL, 'n' },
	{ "size", required_argument, NULL, 'z' },
	{ "block", no_argument, NULL, 'k' },
	{ "wait", required_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 }
};

static int parse_opts(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': case 's': case 'e': case 'p':
			o.role = c;
			o.peer = optarg;
			break;
		case 't': o.secs = atof(optarg); break;
		case 'S': o.seg = atoi(optarg); break;
		case 'g': o.gso = atoi(optarg); break;
		case 'b': o.buf = atoi(optarg); break;
		case 'B': o.busy = 1; break;
		case 'c': o.cpu = atoi(optarg); break;
		case 'N': o.nopin = 1; break;
		case 'n': o.iters = atol(optarg); break;
		case 'z': o.size = atoi(optarg); break;
		case 'k': o.block = 1; break;
		case 'w': o.wait = atof(optarg); break;
		case 'h': fputs(usage, stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (o.secs <= 0 || o.seg < 1 || o.gso < 1 || o.gso > 64 ||
	    (long)o.seg * o.gso > 65507 || o.buf < 0)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "-h") || !strcmp(mode, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc < 2 || parse_opts(argc - 1, argv + 1)) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(mode, "tput") && strchr("rs", o.role ? o.role : 'r'))
		return tput_main();
	if (!strcmp(mode, "rtt") && strchr("ep", o.role ? o.role : 'e'))
		return rtt_main();
	if (!strcmp(mode, "mem") && !o.role)
		return mem_main();
	fputs(usage, stderr);
	return 2;
}
