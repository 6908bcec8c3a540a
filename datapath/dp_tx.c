// SPDX-License-Identifier: BSD-2-Clause
/*
 * The transmit pipeline, one for both backends.  A batch of the engine's
 * packets becomes frames: a loopback multicast packet goes alone, as a
 * copy per member slot; with URXE_FAULTS the injector decides each
 * packet's fate first; else packets of one flow are grouped, and (udp)
 * runs of one size fold into GSO frames.  The frames go to the backend,
 * waiting briefly for room when it is full; what still finds no room is
 * lost as on a congested wire, and counted.  URXE_PCAP records each
 * packet as it left.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/util.h>

#include "dp_int.h"

/*
 * One GSO send: at most this many bytes (an IPv4 datagram's payload is
 * at most 65507) and segments; 15 packets of a 4096-byte MTU fit.
 */
#define GSO_MAX_BYTES 65000
#define GSO_MAX_SEGS 64
#define TX_TRIES 3

/* A transmit batch on its way: the frames, and what became of them. */
struct tx {
	struct urxe_frame_desc *send;	/* the frames (out, or the GSO runs) */
	unsigned int k;			/* how many */
	bool merged;			/* send is gb.g */
	bool mcast;			/* copies of one multicast packet */
	uint64_t t_us;			/* capture: when the last send began */
};

void dp_frame_from_pkt(struct urxe_frame_desc *o, const struct urxe_pkt *p)
{
	const uint8_t *bth = p->iov[0].iov_base;

	memset(o, 0, sizeof(*o));
	o->dst = p->dgid.raw;
	o->src = p->sgid.raw;
	o->sport = p->sport;
	o->tos = p->tclass;
	/*
	 * RoCEv2 packets are routed IP: the TTL is the route's (the kernel's
	 * default, 64), not the GRH hop limit — ibv_rc_pingpong asks for 1,
	 * which would die at the first router.  Kernel rxe does the same.
	 */
	o->ttl = 0;
	/* ACKNOWLEDGE, RC (0x11) or XRC (0xb1): no answer. */
	o->ack = bth[0] == 0x11 || bth[0] == 0xb1;
	o->iov = p->iov;
	o->niov = p->niov;
}

void dp_count_lost(struct urxe_dp *dp, unsigned int n)
{
	if (dp->stats && n)
		atomic_fetch_add_explicit(&dp->stats->counters[URXE_CNT_SEND_ERR],
					  n, memory_order_relaxed);
}

/* Waits (briefly) for room in the backend: its socket buffers, its ring. */
static void wait_writable(struct urxe_dp *dp)
{
	struct pollfd pfd[URXE_BACKEND_MAX_FDS];
	int fds[URXE_BACKEND_MAX_FDS];
	unsigned int i, n = dp->ops->tx_fds(dp->b, fds);

	for (i = 0; i < n; i++) {
		pfd[i].fd = fds[i];
		pfd[i].events = POLLOUT;
	}
	poll(pfd, n, 1);
}

static bool same_flow(const struct urxe_frame_desc *a,
		      const struct urxe_frame_desc *b)
{
	return a->sport == b->sport && a->tos == b->tos && a->ttl == b->ttl &&
	       urxe_gid_eq(a->dst, b->dst) && urxe_gid_eq(a->src, b->src);
}

static int flow_cmp(const struct urxe_frame_desc *a,
		    const struct urxe_frame_desc *b)
{
	int c = urxe_gid_cmp(a->dst, b->dst);

	return c ? c : (int)a->sport - (int)b->sport;
}

/*
 * Groups a transmit batch by destination and source port, keeping the
 * order within each group.  A flow's (a QP's) packets stay in order;
 * packets of many QPs sharing a pool port come together, and runs of one
 * flow can leave as one (GSO).
 */
static void group_flows(struct urxe_frame_desc *out, unsigned int k)
{
	unsigned int i, j;

	for (i = 1; i < k; i++) {
		struct urxe_frame_desc t = out[i];

		for (j = i; j > 0 && flow_cmp(&out[j - 1], &t) > 0; j--)
			out[j] = out[j - 1];
		out[j] = t;
	}
}

/* How many of @out[j..k) (at least 1) make one GSO run. */
static unsigned int gso_run(const struct urxe_frame_desc *out, unsigned int j,
			    unsigned int k)
{
	uint32_t seg = (uint32_t)urxe_iov_len(out[j].iov, out[j].niov);
	uint32_t total = seg;
	unsigned int m;

	for (m = 1; j + m < k && m < GSO_MAX_SEGS; m++) {
		const struct urxe_frame_desc *o = &out[j + m];
		uint32_t len = (uint32_t)urxe_iov_len(o->iov, o->niov);

		if (len > seg || !same_flow(o, &out[j]) ||
		    total + len > GSO_MAX_BYTES)
			break;
		total += len;
		if (len < seg) {
			m++;		/* a shorter one ends the run */
			break;
		}
	}
	return m;
}

/*
 * Folds runs of packets of one flow and one size (the last may be
 * shorter) — the middle packets of messages — into GSO sends.  @out
 * (k packets, grouped) becomes b->g; returns its length.
 */
static unsigned int gso_merge(const struct urxe_frame_desc *out, unsigned int k,
			      struct dp_gso *b)
{
	unsigned int j = 0, ng = 0, m, i, nio = 0, ns = 0;

	while (j < k) {
		m = gso_run(out, j, k);
		b->g[ng] = out[j];
		b->seg0[ng] = ns;
		b->nseg[ng] = m;
		if (m > 1) {
			unsigned int start = nio;

			for (i = 0; i < m; i++) {
				const struct urxe_frame_desc *o = &out[j + i];

				memcpy(&b->iov[nio], o->iov,
				       o->niov * sizeof(*o->iov));
				b->segs[ns + i].iov0 = nio - start;
				b->segs[ns + i].niov = o->niov;
				b->segs[ns + i].len =
					(uint32_t)urxe_iov_len(o->iov, o->niov);
				nio += o->niov;
			}
			b->g[ng].iov = &b->iov[start];
			b->g[ng].niov = nio - start;
			b->g[ng].gso_size = (uint16_t)urxe_iov_len(out[j].iov,
								   out[j].niov);
			/* Segment i leaves with IPv4 ID i: its ICRC too. */
			urxe_ipid_gso(&b->ids, b->g[ng].dst, b->g[ng].iov,
				      b->g[ng].niov, b->g[ng].gso_size);
		} else {
			b->segs[ns].iov0 = 0;
			b->segs[ns].niov = out[j].niov;
			b->segs[ns].len = (uint32_t)urxe_iov_len(out[j].iov,
								 out[j].niov);
		}
		ns += m;
		j += m;
		ng++;
	}
	return ng;
}

/*
 * A GSO send the kernel refused (no UDP_SEGMENT, a segment over the path
 * MTU, ...): its packets go one by one, with the ICRCs for ID 0 again.
 */
static void gso_unfold(struct urxe_dp *dp, struct urxe_frame_desc *o,
		       const struct dp_seg *segs, unsigned int nseg)
{
	struct urxe_frame_desc one = *o;
	unsigned int i;

	/* XOR again: back to ID 0 */
	urxe_ipid_gso(&dp->gb.ids, o->dst, o->iov, o->niov, o->gso_size);
	if (++dp->gso_failures >= 3 && dp->gso) {
		dp->gso = false;
		urxe_dbg("%s: the kernel refuses UDP GSO here; sending packet by packet",
			 dp->name);
	}
	one.gso_size = 0;
	for (i = 0; i < nseg; i++) {
		one.iov = o->iov + segs[i].iov0;
		one.niov = segs[i].niov;
		if (dp->ops->send(dp->b, &one, 1) == 1 && dp->cap)
			dp_capture_pkt(dp, &one, one.iov, one.niov, 0, NULL, 0);
	}
}

/*
 * The batch's frames in @out from the first @n of @pkts (clipped: *@n
 * is then how many the engine hands over): a multicast packet's copies,
 * the injector's batch, or the packets, grouped and folded.
 */
static void prepare(struct urxe_dp *dp, struct urxe_pkt *pkts,
		    unsigned int *n, struct urxe_frame_desc *out, struct tx *t)
{
	unsigned int i, k;

	/* Loopback multicast goes alone, as a copy per member (dp_mcast.c). */
	for (i = 1; i < *n; i++)
		if (dp_mcast_pkt(dp, &pkts[i]))
			*n = i;
	t->send = out;
	if (dp_mcast_pkt(dp, &pkts[0])) {
		*n = 1;
		t->mcast = true;
		k = dp_mcast_copies(dp, &pkts[0], dp->gb.mdst,
				    URXE_BACKEND_SEND_MAX);
		for (i = 0; i < k; i++) {
			dp_frame_from_pkt(&out[i], &pkts[0]);
			out[i].dst = dp->gb.mdst[i].raw;
			out[i].fixed_ids = true;
		}
	} else if (dp->faults) {
		struct urxe_pkt *faulted = dp_faulted(dp);

		if (*n > DP_FAULTS_BATCH)
			*n = DP_FAULTS_BATCH;
		k = dp_faults_apply(dp, pkts, *n, faulted);
		for (i = 0; i < k; i++)
			dp_frame_from_pkt(&out[i], &faulted[i]);
	} else {
		for (i = 0; i < *n; i++)
			dp_frame_from_pkt(&out[i], &pkts[i]);
		k = *n;
		if (dp->gso && k > 1) {
			group_flows(out, k);
			if (dp->ops->tx_merge) {
				k = gso_merge(out, k, &dp->gb);
				t->send = dp->gb.g;
				t->merged = true;
			}
		}
	}
	t->k = k;
}

/* Frames [@sent, @sent + @n) left: into the capture. */
static void capture_sent(struct urxe_dp *dp, const struct tx *t,
			 unsigned int sent, unsigned int n)
{
	const struct dp_seg *segs;
	unsigned int i;

	for (i = sent; i < sent + n; i++) {
		segs = t->merged ? &dp->gb.segs[dp->gb.seg0[i]] : NULL;
		/* (no GSO with faults: i is the injector's index) */
		dp_capture_out(dp, &t->send[i], segs, dp->faults ?
			       dp_fault_note(dp, i) : NULL, t->t_us);
	}
}

/*
 * Sends the batch's frames; returns how many went (refused ones count as
 * gone: dropped), *@rc the last send's answer.
 */
static unsigned int send_all(struct urxe_dp *dp, struct tx *t, int *rc)
{
	unsigned int sent = 0, tries = 0;
	struct dp_gso *gb = &dp->gb;

	while (sent < t->k) {
		if (dp->cap)
			t->t_us = urxe_capture_now_us();
		*rc = dp->ops->send(dp->b, t->send + sent, t->k - sent);
		if (*rc == -EAGAIN && ++tries <= TX_TRIES) {
			wait_writable(dp);
			continue;
		}
		if (*rc == -EAGAIN)
			break;
		if (*rc < 0 && t->send[sent].gso_size) {
			gso_unfold(dp, &t->send[sent], &gb->segs[gb->seg0[sent]],
				   gb->nseg[sent]);
			sent++;
			continue;
		}
		if (*rc < 0) {
			/* This one cannot go (no route, too big): dropped. */
			urxe_dbg("%s: send: %s", dp->name, strerror(-*rc));
			dp_count_lost(dp, 1);
			sent++;
			continue;
		}
		if (t->send[sent].gso_size)
			dp->gso_failures = 0;
		if (dp->cap && !t->mcast)
			capture_sent(dp, t, sent, (unsigned int)*rc);
		sent += (unsigned int)*rc;
	}
	return sent;
}

int urxe_dp_xmit(void *priv, struct urxe_pkt *pkts, unsigned int n)
{
	struct urxe_dp *dp = priv;
	struct urxe_frame_desc out[URXE_BACKEND_SEND_MAX];
	struct tx t = { 0 };
	unsigned int i, sent, lost = 0;
	int rc = 0;

	if (!dp || !dp->b)
		return -ENOTCONN;
	if (n > dp->ops->tx_batch)
		n = dp->ops->tx_batch;
	prepare(dp, pkts, &n, out, &t);
	sent = send_all(dp, &t, &rc);
	if (t.mcast && dp->cap && (sent || !t.k))
		dp_capture_mcast(dp, &pkts[0], t.k, t.t_us);
	if (sent < t.k && sent) {
		/*
		 * The backend stayed full: the rest is lost as on a congested
		 * wire (retransmission recovers it), and counted.
		 */
		for (i = sent; i < t.k; i++)
			lost += t.merged ? dp->gb.nseg[i] : 1;
		dp_count_lost(dp, lost);
	}
	/* The engine's packets are all accounted for, whatever the wire did. */
	if (!sent && rc == -EAGAIN)
		return -EAGAIN;
	if (dp->sink.sent)
		dp->sink.sent(dp->sink.owner);
	return (int)n;
}
