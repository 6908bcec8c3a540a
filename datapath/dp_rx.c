// SPDX-License-Identifier: BSD-2-Clause
/*
 * The receive pipeline, one for both backends: frames come from the
 * backend in batches, a GRO datagram is split into its packets, each is
 * described for the engine (addresses, class, TTL, arrival; the real IP
 * header when the backend has it, so that the ICRC is checked in full),
 * captured (URXE_PCAP) and handed to the sink.  A backend whose receive
 * costs no system call (the packet backend's ring) also moderates: a
 * receiver taking a stream waits a moment for more, as a NIC coalesces
 * interrupts.
 */
#include <string.h>
#include <time.h>

#include <urxe/util.h>

#include "dp_int.h"

/*
 * Receive moderation, as a NIC's interrupt coalescing.  A receiver that
 * got at least MOD_STREAM frames since it last sent anything but ACKs is
 * taking a stream: after a burst (MOD_BURST frames in one poll) it waits
 * in the ring — memory reads, no system call — for more, until
 * MOD_TARGET frames came since its last send or none for MOD_GAP_NS.  It
 * then wakes and ACKs once per MOD_TARGET packets rather than per few.
 * A ping-pong's messages (an answer between any two) never wait.  Its
 * own ACKs do not end a stream: counting them as answers, a receiver
 * that once ACKed every few packets would go on doing so.
 */
#define MOD_STREAM 16
#define MOD_BURST 4
#define MOD_TARGET 32
#define MOD_GAP_NS 200000

uint64_t urxe_dp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * When a datagram arrived, on the clock of @now (CLOCK_MONOTONIC), from
 * the kernel's receive time @rx_ns (CLOCK_REALTIME, read as @real): the
 * IPv4 ID check measures a flow's silence between arrivals, which a
 * receiver that reads late would shrink (a restarted sender's first
 * datagram, read in one batch with its predecessor's last).
 */
static uint64_t arrival(uint64_t now, uint64_t real, uint64_t rx_ns)
{
	uint64_t age;

	if (!rx_ns || rx_ns > real)
		return now;
	age = real - rx_ns;
	return age < now ? now - age : 0;
}

/* Waits up to MOD_GAP_NS for a frame; false if none came. */
static bool wait_frame(struct urxe_dp *dp)
{
	uint64_t end = urxe_dp_now() + MOD_GAP_NS;
	unsigned int i;

	for (;;) {
		for (i = 0; i < 64; i++) {
			if (dp->ops->rx_pending(dp->b))
				return true;
			urxe_cpu_relax();
		}
		if (urxe_dp_now() >= end)
			return false;
	}
}

static bool streaming(struct urxe_dp *dp)
{
	unsigned int run, now = dp->ops->rx_since_tx(dp->b, &run);

	return run >= MOD_STREAM && now < MOD_TARGET;
}

/* Nothing came after @total frames: wait for more (moderation)? */
static bool linger(struct urxe_dp *dp, int total)
{
	return dp->ops->rx_pending && total >= MOD_BURST && streaming(dp) &&
	       wait_frame(dp);
}

/* The engine's description of frame @in, arrived at @now_ns. */
static void describe(const struct urxe_frame_desc *in, uint64_t now_ns,
		     struct urxe_rx_meta *meta)
{
	memset(meta, 0, sizeof(*meta));
	memcpy(meta->sgid.raw, in->src, 16);
	memcpy(meta->dgid.raw, in->dst, 16);
	meta->sport = in->sport;
	meta->dport = in->dport;
	meta->tos = in->tos;
	meta->ttl = in->ttl;
	meta->now_ns = now_ns;
	meta->udp_csum = in->csum;
	if (in->ip) {
		/* The real header: the ICRC check is exact. */
		meta->ip_hdr_known = true;
		meta->ip = in->ip;
		meta->ip_len = in->ip_len;
		meta->ip_id_hint = in->ip_id;
	}
}

/* Frame @in's packets to @eng (a GRO datagram: several). */
static void deliver(struct urxe_dp *dp, struct urxe_engine *eng,
		    const struct urxe_frame_desc *in, struct urxe_rx_meta *meta)
{
	/* A GRO datagram: packets of gso_size, the last shorter. */
	uint32_t off, seg = in->gso_size ? in->gso_size : in->len;

	for (off = 0; off < in->len; off += seg) {
		struct urxe_frame_desc one = *in;

		one.buf = in->buf + off;
		one.len = in->len - off < seg ? in->len - off : seg;
		if (dp->cap)
			dp_capture_rx(dp, eng, &one, meta);
		dp->sink.input(eng, one.buf, one.len, meta);
		meta->ip_id_hint++;
	}
}

int urxe_dp_rx_poll(void *priv, struct urxe_engine *eng, int budget)
{
	struct urxe_dp *dp = priv;
	const struct urxe_backend_ops *ops = dp ? dp->ops : NULL;
	uint64_t now = 0, real = 0;
	int total = 0, n, i;
	unsigned int want;

	if (!dp || !dp->b)
		return 0;
	/* Without the kernel's stamps: the engine's time of this round. */
	if (!ops->rx_stamps)
		now = dp->sink.clock(eng);
	while (total < budget) {
		want = (unsigned int)(budget - total) < ops->rx_batch ?
		       (unsigned int)(budget - total) : ops->rx_batch;
		n = ops->recv(dp->b, dp->in, want);
		if (n <= 0) {
			if (!linger(dp, total))
				break;
			continue;
		}
		if (ops->rx_stamps) {
			now = urxe_dp_now();
			real = real_ns();
		}
		for (i = 0; i < n; i++) {
			const struct urxe_frame_desc *in = &dp->in[i];
			struct urxe_rx_meta meta;

			if (in->truncated)
				continue;
			describe(in, ops->rx_stamps ?
				 arrival(now, real, in->rx_ns) : now, &meta);
			deliver(dp, eng, in, &meta);
		}
		if (ops->recv_done)
			ops->recv_done(dp->b);
		total += n;
		/*
		 * Fewer than asked for: the sockets were empty a moment ago.
		 * Asking again would mostly cost a system call that finds
		 * nothing, on the path of every message a poller waits for.
		 */
		if (!ops->rx_cheap && (unsigned int)n < want)
			break;
	}
	return total;
}
