// SPDX-License-Identifier: BSD-2-Clause
/*
 * URXE_FAULTS in the data path, for both backends: the spec, checked when
 * the device opens (a bad one fails the open); the injector and its
 * scratch, made when the data path opens; and what the "wire" does to a
 * transmit batch, each fault counted (fault_* in `urxe stats`) and, with
 * URXE_PCAP, marked in the capture with a pcapng comment — a dropped
 * packet is captured too, with a comment saying it was never sent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/util.h>

#include "dp_int.h"

/* Fault injection's scratch: the batch, corrupted copies, the held packet. */
struct dp_faults {
	struct urxe_pkt faulted[2 * DP_FAULTS_BATCH];
	uint8_t corrupt[2 * DP_FAULTS_BATCH][DP_PKT_BUF];
	uint8_t held[DP_PKT_BUF];
	size_t held_len;
	struct urxe_pkt held_pkt;
	/* URXE_PCAP's comment on each packet of faulted[] (NULL: none) */
	const char *note[2 * DP_FAULTS_BATCH];
	char corrupt_note[2 * DP_FAULTS_BATCH][96];
};

int urxe_dp_faults_read(const char *name, struct urxe_faults_conf *conf,
			bool *set)
{
	const char *spec = getenv("URXE_FAULTS");
	char why[256];

	*set = false;
	/* Unset or empty: no injection. */
	if (!spec || !*spec)
		return 0;
	if (urxe_faults_parse(spec, conf, why, sizeof(why))) {
		urxe_err("%s: URXE_FAULTS: %s", name, why);
		return -EINVAL;
	}
	*set = true;
	return 0;
}

int dp_faults_start(struct urxe_dp *dp, const struct urxe_faults_conf *conf)
{
	int rc;

	if (!conf)
		return 0;
	rc = urxe_faults_create(conf, &dp->faults);
	if (rc)
		return rc;
	dp->ft = calloc(1, sizeof(*dp->ft));
	if (!dp->ft) {
		urxe_faults_destroy(dp->faults);
		dp->faults = NULL;
		return -ENOMEM;
	}
	return 0;
}

void dp_faults_stop(struct urxe_dp *dp)
{
	urxe_faults_destroy(dp->faults);
	dp->faults = NULL;
	free(dp->ft);
	dp->ft = NULL;
}

struct urxe_pkt *dp_faulted(struct urxe_dp *dp)
{
	return dp->ft->faulted;
}

/* @p, whole in one piece at @buf (@len bytes). */
static void one_piece(struct urxe_pkt *out, const struct urxe_pkt *p,
		      const uint8_t *buf, size_t len)
{
	*out = *p;
	out->iov[0].iov_base = (void *)(uintptr_t)buf;
	out->iov[0].iov_len = len;
	out->niov = 1;
	out->len = (uint32_t)len;
}

static void count_fault(struct urxe_dp *dp, enum urxe_fault f)
{
	static const enum urxe_counter cnt[] = {
		[URXE_FAULT_DROP] = URXE_CNT_FAULT_DROP,
		[URXE_FAULT_DUP] = URXE_CNT_FAULT_DUP,
		[URXE_FAULT_REORDER] = URXE_CNT_FAULT_REORDER,
		[URXE_FAULT_CORRUPT] = URXE_CNT_FAULT_CORRUPT,
	};

	if (dp->stats && f != URXE_FAULT_NONE)
		atomic_fetch_add_explicit(&dp->stats->counters[cnt[f]], 1,
					  memory_order_relaxed);
}

/* A packet the injector dropped is still captured, saying so. */
static void capture_dropped(struct urxe_dp *dp, const struct urxe_pkt *p,
			    const uint8_t *data, size_t len)
{
	struct urxe_capture_pkt c = {
		.tx = true, .src = p->sgid.raw, .dst = p->dgid.raw,
		.sport = dp->ops->sport(dp->b, p->sport),
		.dport = URXE_UDP_PORT,
		.tos = p->tclass, .ttl = 64, .roce = data, .len = (uint32_t)len,
		.comment = "urxe fault: dropped (URXE_FAULTS): never sent",
	};

	urxe_capture_write(dp->cap, &c);
}

const char *dp_fault_note(struct urxe_dp *dp, unsigned int i)
{
	return dp->ft && i < 2 * DP_FAULTS_BATCH ? dp->ft->note[i] : NULL;
}

/* Flips a bit in the middle of packet @k's copy; notes where. */
static const uint8_t *corrupt(struct dp_faults *t, unsigned int k,
			      const uint8_t *b, size_t len, bool flat)
{
	if (!flat)
		memcpy(t->corrupt[k], b, len);
	t->corrupt[k][len / 2] ^= 0x20;
	snprintf(t->corrupt_note[k], sizeof(t->corrupt_note[k]),
		 "urxe fault: corrupted (URXE_FAULTS): RoCE byte %u, bit 5 flipped",
		 (unsigned int)(len / 2));
	t->note[k] = t->corrupt_note[k];
	return t->corrupt[k];
}

/* The fate of the packet at @b (QPN, PSN and opcode from its BTH). */
static enum urxe_fault decide(struct urxe_dp *dp, const uint8_t *b)
{
	return urxe_faults_decide(dp->faults,
		(uint32_t)b[5] << 16 | b[6] << 8 | b[7],
		(uint32_t)b[9] << 16 | b[10] << 8 | b[11], b[0], false);
}

unsigned int dp_faults_apply(struct urxe_dp *dp, const struct urxe_pkt *pkts,
			     unsigned int n, struct urxe_pkt *out)
{
	struct dp_faults *t = dp->ft;
	unsigned int i, k = 0;

	if (n > DP_FAULTS_BATCH)
		n = DP_FAULTS_BATCH;
	for (i = 0; i < n; i++) {
		const uint8_t *b = pkts[i].iov[0].iov_base, *data = b;
		enum urxe_fault f = decide(dp, b);
		size_t len = pkts[i].iov[0].iov_len;
		bool flat = pkts[i].niov > 1;

		if (flat) {
			data = t->corrupt[k];
			len = urxe_iov_gather(pkts[i].iov, pkts[i].niov,
					      t->corrupt[k], DP_PKT_BUF);
		}
		t->note[k] = NULL;
		switch (f) {
		case URXE_FAULT_DROP:
			count_fault(dp, f);
			capture_dropped(dp, &pkts[i], data, len);
			continue;
		case URXE_FAULT_CORRUPT:
			data = corrupt(t, k, b, len, flat);
			break;
		case URXE_FAULT_REORDER:
			if (!t->held_len) {
				count_fault(dp, f);
				memcpy(t->held, data, len);
				t->held_len = len;
				t->held_pkt = pkts[i];
				continue;
			}
			/* One is held already: this one goes, the held after. */
			f = URXE_FAULT_NONE;
			break;
		default:
			break;
		}
		/* Counted where it happens: a count has its frame. */
		count_fault(dp, f);
		one_piece(&out[k++], &pkts[i], data, len);
		if (f == URXE_FAULT_DUP && k < 2 * DP_FAULTS_BATCH) {
			out[k] = out[k - 1];
			t->note[k++] = "urxe fault: duplicate (URXE_FAULTS): the frame before, sent again";
		}
		if (t->held_len && f != URXE_FAULT_REORDER) {
			/*
			 * The held packet goes after this one, from a copy of
			 * its own: held may take another packet before this
			 * batch leaves.
			 */
			memcpy(t->corrupt[k], t->held, t->held_len);
			one_piece(&out[k], &t->held_pkt, t->corrupt[k],
				  t->held_len);
			t->note[k++] = "urxe fault: reordered (URXE_FAULTS): held back, sent after the frame before";
			t->held_len = 0;
		}
	}
	return k;
}
