// SPDX-License-Identifier: BSD-2-Clause
/*
 * Flow control for UC and UD between instances on one host (the engine's
 * tx_wait operation: udp backend, and packet backend on lo).
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
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"

#define FLOW_DSTS 16			/* destinations remembered */
#define FLOW_RETRY_NS 20000ull		/* no room: ask again after */
#define FLOW_MAX_WAIT_NS 1000000000ull	/* a destination that never drains */
#define FLOW_FREE_NS 100000000ull	/* ... is then sent to unchecked */
#define FLOW_GONE_NS 10000000ull	/* no socket there: ask again after */
#define FLOW_COUNT_NS 1000000ull	/* a destination's senders: count again */
#define FLOW_SENDERS 64			/* ... told apart at most */
#define FLOW_SETTLE_NS 3000000ull	/* counted by the others since: a share */
#define FLOW_JOIN 8			/* newcomers' packets kept room for */

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
	uint32_t senders;		/* instances sending to it, this one too */
	uint64_t counted;		/* ... as of then (0: never) */
	uint64_t seen_since;		/* this one among them since (0: not) */
	int64_t size;			/* its socket's SO_RCVBUF (0: not known) */
	int presence;			/* packet backend: fd + 1 (0: none) */
};

struct urxe_flow {
	struct urxe_sockroom *sr;
	struct flow_dst dst[FLOW_DSTS];
	uint64_t gen;			/* transmit batches handed over */
	uint64_t uses;			/* lookups so far */
	uint64_t queries, waits, overruns, counts, fails;
	uint32_t senders_max;		/* the most senders a count found */
	uint8_t src[FLOW_SENDERS][16];	/* a count's sources */
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

/*
 * A packet-backend sender (on lo) sends from its ring, through no UDP
 * socket that the other senders to @d could count (dst_count), and its
 * frames never reach @d's sockets (the kernel's IP drops them on lo as
 * martians: 127/8 from no route).  So it holds a connected one toward @d
 * from its own address, and sends through it a 1-byte token for each
 * packet: the receiver's sink keeps it until it has read the packet
 * (netdev/packet.c, open_sink), and its room is then @d's as for a udp
 * backend's socket.
 */
static void presence_open(struct urxe_dev *dev, struct flow_dst *d)
{
	struct sockaddr_in src = {
		.sin_family = AF_INET,
		.sin_addr = urxe_slot_loopback_addr(dev->slot.addr_index),
	};
	struct sockaddr_in dst = {
		.sin_family = AF_INET, .sin_port = htons(URXE_UDP_PORT),
	};
	int fd, zero = 0;

	if (dev->desc.backend != URXE_BACKEND_PACKET ||
	    !urxe_gid_is_v4(d->gid.raw))
		return;
	memcpy(&dst.sin_addr, d->gid.raw + 12, 4);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		urxe_dbg("%s: no connected socket toward a local destination (%s): the other senders to it do not count this one",
			 dev->desc.name, strerror(errno));
		close(fd);
		return;
	}
	d->presence = fd + 1;
}

static void presence_close(struct flow_dst *d)
{
	if (d->presence)
		close(d->presence - 1);
	d->presence = 0;
}

/* @gid's entry; a new one (replacing the least recently used) learns
 * whether it is local. */
static struct flow_dst *dst_find(struct urxe_dev *dev, struct urxe_flow *f,
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
	presence_close(d);
	memset(d, 0, sizeof(*d));
	d->used = true;
	d->gid = *gid;
	d->last = f->uses;
	rc = urxe_sockroom_is_local(f->sr, gid->raw);
	d->local = rc > 0;
	if (d->local)
		presence_open(dev, d);
	return d;
}

static bool own_gid(const struct urxe_dev *dev, const uint8_t *gid)
{
	unsigned int i;

	for (i = 0; i < URXE_GID_TBL_LEN; i++)
		if (urxe_gid_eq(dev->gids[i].raw, gid))
			return true;
	return false;
}

/*
 * Counts the instances that send to @d, this one included: the other
 * addresses with a connected socket to it, plus one; and notes since when
 * the others can count this one (its own address among them).
 */
static void dst_count(struct urxe_dev *dev, struct urxe_flow *f,
		      struct flow_dst *d, uint64_t now)
{
	unsigned int i, known;
	bool self = false;
	int n;

	f->counts++;
	d->counted = now;
	n = urxe_sockroom_senders(f->sr, d->gid.raw, URXE_UDP_PORT, f->src,
				  FLOW_SENDERS);
	if (n < 0) {
		/* Not known: the last count stands (at first, alone). */
		if (!d->senders)
			d->senders = 1;
		return;
	}
	known = n < FLOW_SENDERS ? (unsigned int)n : FLOW_SENDERS;
	for (i = 0; i < known && !self; i++)
		self = own_gid(dev, f->src[i]);
	d->senders = (uint32_t)n + !self;
	if (!self)
		d->seen_since = 0;
	else if (!d->seen_since)
		d->seen_since = now;
	if (d->senders > f->senders_max)
		f->senders_max = d->senders;
}

/* Not yet counted by the other senders to @d for sure. */
static bool dst_newcomer(const struct flow_dst *d, uint64_t now)
{
	return !d->seen_since || now - d->seen_since < FLOW_SETTLE_NS;
}

/* What this sender may hold of @d's socket (charged, not delivered). */
static int64_t dst_share(const struct flow_dst *d, uint64_t now, int64_t cost)
{
	int64_t g;

	if (dst_newcomer(d, now))
		return cost;		/* one packet at a time */
	if (d->senders <= 1)
		return INT64_MAX;
	g = d->size / (2 * (int64_t)d->senders);
	return g < cost ? cost : g;
}

/*
 * Asks the kernel for @d's room, for packets that cost @cost at least;
 * false when there is no socket to ask.
 *
 * A sender alone takes the whole room but what newcomers may need.  With
 * n senders each holds at most a share g = size / 2n (and one packet at
 * least) of what it has charged and not yet delivered, and takes it only
 * from the room beyond the shares the n - 1 others may hold and the
 * newcomers' room (FLOW_JOIN packets).  A newcomer, which the others
 * cannot count before its first datagram connects its socket, takes one
 * packet at a time from the newcomers' room until they have counted it
 * (FLOW_SETTLE_NS); a sender counts again every FLOW_COUNT_NS it sends,
 * and gives back what its new share does not cover.  Nothing of a grant
 * is in the kernel's count until delivered, but a datagram reaches the
 * socket inside its send and a sender asks again only when its grant is
 * spent: however their asks interleave, what they may still deliver does
 * not exceed the room.  Limits: a share must cover a packet (up to
 * size / 2 packets senders: 11 of 4 KiB with stock buffers, 455 with
 * 4 MiB), and more than FLOW_JOIN newcomers at one instant can overflow.
 */
static bool dst_query(struct urxe_dev *dev, struct urxe_flow *f,
		      struct flow_dst *d, uint64_t now, int64_t cost)
{
	int64_t room, size, share, join, others;
	int rc;

	f->queries++;
	rc = urxe_sockroom_query(f->sr, d->gid.raw, URXE_UDP_PORT, &room,
				 &size);
	if (rc) {
		f->fails++;
		urxe_dbg("%s: no receive socket room for a local destination: %s",
			 dev->desc.name, strerror(-rc));
		return false;
	}
	d->size = size;
	if (d->gen != f->gen)
		d->unsent = 0;		/* its batch has gone since */
	room -= d->unsent;
	share = dst_share(d, now, cost);
	join = FLOW_JOIN * cost;
	if (join > size / 4)
		join = size / 4;
	if (d->senders > 1) {
		others = size / (2 * (int64_t)d->senders);
		if (others < cost)
			others = cost;
		room -= (int64_t)(d->senders - 1) * others;
	}
	if (!dst_newcomer(d, now))
		room -= join;		/* the newcomers' */
	if (share != INT64_MAX && room > share - d->unsent)
		room = share - d->unsent;
	d->room = room;
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
	/* A packet backend's packet costs the receiver's sink its token. */
	int64_t cost = truesize_bound(dev->desc.backend == URXE_BACKEND_PACKET ?
				      1 : len);
	uint64_t now;

	if (urxe_gid_is_mcast(dgid->raw) || !(f = flow_get(dev)))
		return 0;
	d = dst_find(dev, f, dgid);
	if (!d->local)
		return 0;		/* a remote one: never paced */
	now = urxe_dev_now(dev);
	if (now < d->free_until)
		return 0;
	if (!d->counted || now - d->counted >= FLOW_COUNT_NS) {
		int64_t share, unsent = d->gen == f->gen ? d->unsent : 0;

		dst_count(dev, f, d, now);
		/* A new sender counted: what the new share does not cover. */
		share = dst_share(d, now, cost);
		if (share != INT64_MAX && d->room > share - unsent)
			d->room = share - unsent;
	}
	if (d->room < cost && !dst_query(dev, f, d, now, cost)) {
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
		if (d->presence)
			(void)!send(d->presence - 1, "T", 1, MSG_DONTWAIT);
		return 0;
	}
	return dst_wait(dev, f, d, now);
}

/*
 * The kernel's word on the receive socket of the instance at @dgid, an
 * address of this host: sockroom's answer (0, -ENOENT: no such socket),
 * or 1 when @dgid is not a local unicast address (nothing to ask).
 */
static int local_peer_query(struct urxe_dev *dev, const union ibv_gid *dgid,
			    int64_t *room, int64_t *size)
{
	struct urxe_flow *f;

	if (urxe_gid_is_mcast(dgid->raw) || !(f = flow_get(dev)) ||
	    !dst_find(dev, f, dgid)->local)
		return 1;
	f->queries++;
	return urxe_sockroom_query(f->sr, dgid->raw, URXE_UDP_PORT, room, size);
}

/*
 * RC's retry timer: has the instance at @dgid, on this host, datagrams in
 * its receive socket it has not read?  Then it is not running (stopped,
 * in a debugger, starved of CPU) rather than losing what it is sent: a
 * kernel device would still answer for it, so its silence is no loss.
 */
bool urxe_dev_peer_unread(void *priv, const union ibv_gid *dgid)
{
	int64_t room, size;

	/* Nobody there (or not local): its silence is real. */
	if (local_peer_query(priv, dgid, &room, &size))
		return false;
	return room < size;
}

/*
 * RC's transport timer, for its messages: is @dgid an address of this
 * host without a RoCE socket?  Every live instance holds one on its
 * address (the udp backend's receive sockets, the packet backend's sink),
 * so the kernel's answer "no such socket" means no process owns it.
 */
bool urxe_dev_peer_absent(void *priv, const union ibv_gid *dgid)
{
	int64_t room, size;

	return local_peer_query(priv, dgid, &room, &size) == -ENOENT;
}

void urxe_dev_flow_sent(struct urxe_dev *dev)
{
	if (dev->flow)
		dev->flow->gen++;
}

void urxe_dev_flow_free(struct urxe_dev *dev)
{
	struct urxe_flow *f = dev->flow;
	unsigned int i;

	if (!f)
		return;
	if (f->waits)
		urxe_dbg("%s: UC/UD flow control: %llu room queries, %llu waits, %llu vain; %llu sender counts, %u senders at most, %llu failed queries",
			 dev->desc.name, (unsigned long long)f->queries,
			 (unsigned long long)f->waits,
			 (unsigned long long)f->overruns,
			 (unsigned long long)f->counts, f->senders_max,
			 (unsigned long long)f->fails);
	for (i = 0; i < FLOW_DSTS; i++)
		presence_close(&f->dst[i]);
	urxe_sockroom_close(f->sr);
	free(f);
	dev->flow = NULL;
}
