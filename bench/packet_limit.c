// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe-packet-limit NS_A IF_A IP_A NS_B IF_B IP_B [SECONDS] [BYTES]: the
 * raw ring limit under the packet backend — frames of BYTES (default 4154,
 * a 4096-byte RoCE payload) built in A's TX ring (netdev/packet.c, one
 * send() per batch of 64) toward B's address and read from B's RX ring
 * through its demux filter, no verbs and no ICRC.  Prints the frames and
 * bytes per second B received and what A sent.  Root (namespaces).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urxe/netdev.h>

#define SLOT 7
#define BATCH 64

static atomic_bool stop;
static atomic_ulong rcvd;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int enter(const char *ns)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		perror(path);
		return -1;
	}
	close(fd);
	return 0;
}

static struct urxe_packet *open_in(const char *ns, const char *ifn,
				   struct urxe_iface *ifc)
{
	struct urxe_packet_conf c = { .ifc = ifc, .slot = SLOT };
	struct urxe_packet *p;

	if (enter(ns) || urxe_iface_query(ifn, ifc) ||
	    urxe_packet_open(&c, &p)) {
		fprintf(stderr, "cannot open the packet backend on %s in %s\n",
			ifn, ns);
		return NULL;
	}
	return p;
}

static void *rx_main(void *arg)
{
	struct urxe_packet *p = arg;
	struct urxe_packet_in in[BATCH];
	int n;

	while (!atomic_load(&stop)) {
		n = urxe_packet_recv(p, in, BATCH);
		if (n > 0) {
			atomic_fetch_add(&rcvd, (unsigned long)n);
			urxe_packet_release(p);
		}
	}
	return NULL;
}

static void gid4(uint8_t *g, const char *ip)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	inet_pton(AF_INET, ip, g + 12);
}

int main(int argc, char **argv)
{
	struct urxe_iface ifa, ifb;
	struct urxe_packet *a, *b;
	struct urxe_frame_desc o[BATCH];
	static uint8_t payload[9000];
	uint8_t src[16], dst[16];
	struct iovec iov;
	double secs = argc > 7 ? atof(argv[7]) : 3, t0, t = 0;
	size_t bytes = argc > 8 ? (size_t)atol(argv[8]) : 4154;
	unsigned long sent = 0, got;
	pthread_t th;
	int i, rc;

	if (argc < 7 || bytes < 16 || bytes > sizeof(payload)) {
		fprintf(stderr, "usage: %s NS_A IF_A IP_A NS_B IF_B IP_B [SECONDS] [BYTES]\n",
			argv[0]);
		return 2;
	}
	b = open_in(argv[4], argv[5], &ifb);
	a = open_in(argv[1], argv[2], &ifa);
	if (!a || !b)
		return 1;
	gid4(src, argv[3]);
	gid4(dst, argv[6]);
	/* A BTH to slot SLOT's QPN 1: B's filter takes it. */
	payload[0] = 0x04;
	payload[5] = (uint8_t)((SLOT << 14 | 1) >> 16);
	payload[6] = (uint8_t)((SLOT << 14 | 1) >> 8);
	payload[7] = 1;
	iov.iov_base = payload;
	iov.iov_len = bytes;
	for (i = 0; i < BATCH; i++)
		o[i] = (struct urxe_frame_desc){
			.dst = dst, .src = src, .sport = 0xc000,
			.iov = &iov, .niov = 1,
		};
	pthread_create(&th, NULL, rx_main, b);
	t0 = now_s();
	do {
		rc = urxe_packet_send(a, o, BATCH, NULL);
		if (rc > 0)
			sent += (unsigned long)rc;
		else if (rc != -EAGAIN)
			break;
		t = now_s();
	} while (t - t0 < secs);
	usleep(100000);
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	got = atomic_load(&rcvd);
	printf("sent %lu frames, received %lu in %.2f s: %.3f Mpps, %.3f GB/s (%zu-byte RoCE payloads)\n",
	       sent, got, t - t0, (double)got / (t - t0) / 1e6,
	       (double)got * (double)bytes / (t - t0) / 1e9, bytes);
	urxe_packet_close(a);
	urxe_packet_close(b);
	return rc < 0 && rc != -EAGAIN ? 1 : 0;
}
