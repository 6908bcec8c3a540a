// SPDX-License-Identifier: BSD-2-Clause
/*
 * Flow control for UC and UD between instances on one host (the engine's
 * tx_wait operation, udp backend).
 *
 * A UC or UD sender has nothing to pace it: what overflows the receiver's
 * UDP socket is lost, and on loopback a sender easily outruns its
 * receiver.  For a destination that is an address of this host, the
 * kernel says how much room its receive socket has (netdev/sockroom.c).
 * The sender keeps an estimate of that room per destination, takes from
 * it a bound of what each packet will cost the socket (the kernel
 * charges a datagram's whole buffer, its truesize), asks again when the
 * estimate runs out, and when there is no room the QP waits (FLOW_RETRY_NS
 * at a time, on the engine's timers) instead of losing the packet.
 *
 * What the kernel reports does not hold the packets charged and not yet
 * handed to it (the engine's transmit batch, urxe_dev_flow_sent()): a
 * new estimate is the reported room less those.  On loopback a datagram
 * reaches the receiving socket inside the sender's sendmsg (the kernel
 * runs the receive softirq as the send returns), so nothing else is on
 * its way.  A destination that does not drain is waited for at most
 * FLOW_MAX_WAIT_NS; then packets go unchecked for FLOW_FREE_NS (what
 * does not fit is lost, as on a network) and are counted.  Remote
 * destinations cost one table lookup per packet.  No state is shared
 * with any other process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "transport_packet.h"

#define FLOW_DSTS 16			/* destinations remembered */
#define FLOW_RETRY_NS 20000ull		/* no room: ask again after */
#define FLOW_MAX_WAIT_NS 1000000000ull	/* a destination that never drains */
#define FLOW_FREE_NS 100000000ull	/* ... is then sent to unchecked */
#define FLOW_GONE_NS 10000000ull	/* no socket there: ask again after */

struct flow_dst {
	union ibv_gid gid;
	bool used;
	bool local;			/* an address of this host */
	int64_t room;			/* bytes it may still be sent */
	int64_t unsent;			/* charged, not handed to the kernel */
	uint64_t gen;			/* ... as of this batch */
	uint64_t wait_since;		/* refused since (0: not waiting) */
	uint64_t free_until;		/* unchecked until (a vain wait) */
	uint64_t last;			/* last use (f->uses), for replacement */
};

struct urxe_flow {
	struct urxe_sockroom *sr;
	struct flow_dst dst[FLOW_DSTS];
	uint64_t gen;			/* transmit batches handed over */
	uint64_t uses;			/* lookups so far */
	uint64_t queries, waits, overruns;
};

/*
 * What a datagram of @len bytes costs a receive socket at most.  The
 * kernel charges the buffer it sits in: a linear one is a power-of-two
 * slab with ~576 bytes of bookkeeping (measured on Linux 6.18: 832 bytes
 * for up to ~200, 8,448 for a 4,156-byte packet), a GSO or GRO datagram
 * ~its length plus one such share, which is less per packet.
 */
static int64_t truesize_bound(uint32_t len)
{
	uint64_t n = len + 512;
	uint64_t p = 1024;

	while (p < n)
		p <<= 1;
	return (int64_t)(p + 1024);
}

/* @gid's entry; a new one (replacing the least recently used) learns
 * whether it is local. */
static struct flow_dst *dst_find(struct urxe_flow *f,
				 const union ibv_gid *gid)
{
	struct flow_dst *d, *old = &f->dst[0];
	unsigned int i;
	int rc;

	f->uses++;
	for (i = 0; i < FLOW_DSTS; i++) {
		d = &f->dst[i];
		if (d->used && urxe_gid_eq(d->gid.raw, gid->raw)) {
			d->last = f->uses;
			return d;
		}
		if (!d->used || (old->used && d->last < old->last))
			old = d;
	}
	d = old;
	memset(d, 0, sizeof(*d));
	d->used = true;
	d->gid = *gid;
	d->last = f->uses;
	rc = urxe_sockroom_is_local(f->sr, gid->raw);
	d->local = rc > 0;
	return d;
}

/* Asks the kernel for @d's room; false when there is no socket to ask. */
static bool dst_query(struct urxe_dev *dev, struct urxe_flow *f,
		      struct flow_dst *d)
{
	int64_t room;
	int rc;

	f->queries++;
	rc = urxe_sockroom_query(f->sr, d->gid.raw, URXE_UDP_PORT, &room);
	if (rc) {
		urxe_dbg("%s: no receive socket room for a local destination: %s",
			 dev->desc.name, strerror(-rc));
		return false;
	}
	if (d->gen != f->gen)
		d->unsent = 0;		/* its batch has gone since */
	d->room = room - d->unsent;
	return true;
}

static struct urxe_flow *flow_get(struct urxe_dev *dev)
{
	struct urxe_flow *f = dev->flow;

	if (f || dev->flow_off)
		return f;
	f = calloc(1, sizeof(*f));
	if (f && urxe_sockroom_open(&f->sr)) {
		free(f);
		f = NULL;
	}
	if (!f) {
		urxe_warn("%s: no socket diagnostics: UC and UD go unpaced",
			  dev->desc.name);
		dev->flow_off = true;
	}
	dev->flow = f;
	return f;
}

/* No room at @d: how long to wait, or 0 when it has been full too long. */
static uint64_t dst_wait(struct urxe_dev *dev, struct urxe_flow *f,
			 struct flow_dst *d, uint64_t now)
{
	if (!d->wait_since) {
		d->wait_since = now;
		f->waits++;
	}
	if (now - d->wait_since < FLOW_MAX_WAIT_NS)
		return FLOW_RETRY_NS;
	/* It does not drain: as on a network, what does not fit is lost. */
	f->overruns++;
	urxe_dbg("%s: a local receive socket stayed full for %llu ms: sending unpaced for %llu ms",
		 dev->desc.name, FLOW_MAX_WAIT_NS / 1000000,
		 FLOW_FREE_NS / 1000000);
	d->wait_since = 0;
	d->free_until = now + FLOW_FREE_NS;
	return 0;
}

uint64_t urxe_dev_tx_wait(void *priv, const union ibv_gid *dgid, uint32_t len)
{
	struct urxe_dev *dev = priv;
	struct urxe_flow *f;
	struct flow_dst *d;
	int64_t cost = truesize_bound(len);
	uint64_t now;

	if (urxe_gid_is_mcast(dgid->raw) || !(f = flow_get(dev)))
		return 0;
	d = dst_find(f, dgid);
	if (!d->local)
		return 0;		/* a remote one: never paced */
	now = urxe_dev_now(dev);
	if (now < d->free_until)
		return 0;
	if (d->room < cost && !dst_query(dev, f, d)) {
		d->free_until = now + FLOW_GONE_NS;
		return 0;
	}
	if (d->room >= cost) {
		if (d->gen != f->gen) {
			d->gen = f->gen;
			d->unsent = 0;
		}
		d->room -= cost;
		d->unsent += cost;
		d->wait_since = 0;
		return 0;
	}
	return dst_wait(dev, f, d, now);
}

void urxe_dev_flow_sent(struct urxe_dev *dev)
{
	if (dev->flow)
		dev->flow->gen++;
}

void urxe_dev_flow_free(struct urxe_dev *dev)
{
	struct urxe_flow *f = dev->flow;

	if (!f)
		return;
	if (f->waits)
		urxe_dbg("%s: UC/UD flow control: %llu room queries, %llu waits, %llu vain",
			 dev->desc.name, (unsigned long long)f->queries,
			 (unsigned long long)f->waits,
			 (unsigned long long)f->overruns);
	urxe_sockroom_close(f->sr);
	free(f);
	dev->flow = NULL;
}
