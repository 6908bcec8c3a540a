/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the data path (datapath/), the floor between the frame
 * backends (netdev/) and the engine (qp_engine/).  One pipeline for both
 * backends (include/urxe/backend.h) carries the engine's packets down to
 * the wire — loopback multicast copies, URXE_FAULTS, flow grouping, GSO
 * merge, URXE_PCAP, retries and lost-packet accounting — and received
 * frames up to the engine: receive batching, GRO split, capture.  It also
 * owns waiting on the descriptors and deadlines (urxe_dp_wait).  The
 * provider chooses the backend and makes the engine's xmit, rx_poll and
 * sport these functions (their context, the engine's io_priv, is the
 * struct urxe_dp); nothing here knows a verbs object or the engine's
 * internals.
 */
#ifndef URXE_DATAPATH_H
#define URXE_DATAPATH_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <urxe/backend.h>
#include <urxe/netdev.h>
#include <urxe/pkt.h>
#include <urxe/wire.h>

struct urxe_dp;
struct urxe_engine;

/*
 * Where received packets go: the engine that polls (urxe_dp_rx_poll's
 * @eng), through its own functions, which the data path cannot name
 * (it is the floor below): @input takes one packet (@roce is BTH ..
 * ICRC), urxe_engine_input; @mcast_group names the group of a loopback
 * multicast copy, for captures (may be NULL), urxe_engine_mcast_group;
 * @clock is the receiver's time for backends without kernel receive
 * stamps, urxe_engine_clock.  @sent (may be NULL) tells @owner that a
 * transmit batch went, whatever the wire did with it (flow control).
 */
struct urxe_dp_sink {
	void (*input)(struct urxe_engine *eng, const uint8_t *roce,
		      uint32_t len, const struct urxe_rx_meta *meta);
	bool (*mcast_group)(struct urxe_engine *eng, const uint8_t *roce,
			    uint32_t len, const struct urxe_rx_meta *meta,
			    union ibv_gid *group);
	uint64_t (*clock)(struct urxe_engine *eng);
	void (*sent)(void *owner);
	void *owner;
};

struct urxe_dp_conf {
	const char *name;			/* the device's, for messages */
	const char *rundir;			/* the multicast registry's */
	const struct urxe_backend_ops *backend;
	const struct urxe_iface *ifc;
	unsigned int slot;
	unsigned int addr_index;		/* the slot's loopback address */
	/* URXE_FAULTS as read at the device's open, or NULL */
	const struct urxe_faults_conf *faults;
	struct urxe_stats_rec *stats;		/* the counters, or NULL */
	struct urxe_dp_sink sink;
};

/*
 * URXE_FAULTS, read when the device opens: 0 with *@set false when unset
 * or empty; -EINVAL, logged with the reason, when the spec is bad — the
 * device does not open then (a spec that injected nothing would let a
 * test of a lossy wire pass on a perfect one).
 */
int urxe_dp_faults_read(const char *name, struct urxe_faults_conf *conf,
			bool *set);

/*
 * A device's data path, made with the device (@conf's pointers must
 * outlive it), bound later.
 */
int urxe_dp_create(const struct urxe_dp_conf *conf, struct urxe_dp **out);
/*
 * Opens the backend, and URXE_FAULTS' injector and URXE_PCAP's capture
 * with it.  URXE_GSO=0, or fault injection, turns GSO off.  Unbind
 * closes them again (a bind that failed further on).
 */
int urxe_dp_bind(struct urxe_dp *dp);
void urxe_dp_unbind(struct urxe_dp *dp);
bool urxe_dp_bound(const struct urxe_dp *dp);
/* Closes it all and frees it (the engine no longer calls in). */
void urxe_dp_close(struct urxe_dp *dp);
/*
 * In a fork()ed child: closes the child's copies of the sockets; the
 * capture file stays the parent's.  Sends and receives find nothing.
 */
void urxe_dp_forget(struct urxe_dp *dp);

/*
 * The engine's ops->xmit, @dp a struct urxe_dp: returns @n (clipped to
 * a batch), -EAGAIN (nothing could go), or -ENOTCONN (not bound).
 */
int urxe_dp_xmit(void *dp, struct urxe_pkt *pkts, unsigned int n);
/* ops->rx_poll: reads up to @budget frames into @eng; how many. */
int urxe_dp_rx_poll(void *dp, struct urxe_engine *eng, int budget);
/* ops->sport: the UDP source port a packet asking for @sport leaves with. */
uint16_t urxe_dp_sport(void *dp, uint16_t sport);

/* The descriptors input arrives on (<= URXE_BACKEND_MAX_FDS). */
unsigned int urxe_dp_rx_fds(struct urxe_dp *dp, int *fds);
/* Packets a peer may have in flight toward us. */
unsigned int urxe_dp_budget(struct urxe_dp *dp);
/*
 * Received packets carry their IP TOS and TTL from now on (a UD QP's
 * GRH shows them); the udp backend leaves them out until asked, which
 * saves every receive two control messages.
 */
void urxe_dp_want_ip_meta(struct urxe_dp *dp);
/*
 * A real interface: joins or leaves IP multicast group @gid through the
 * backend.  (On loopback the instance joins the host's registry instead,
 * and senders copy group packets to its members: urxe_dp_xmit.)
 */
int urxe_dp_mcast(struct urxe_dp *dp, const uint8_t gid[16], bool join);

/*
 * Waiting (ibv_get_cq_event, ibv_get_async_event): runs the engine's
 * progress while waiting up to @timeout_ms (-1: forever) for @fd to
 * become readable.  @dp (NULL: none) gives the sockets to watch, once
 * bound (maybe meanwhile: another thread's first QP binds it); @watch_fd
 * (-1: none) calls @on_watch when readable; @deadline and @progress
 * (may be NULL) are the engine's.  Returns 1 when @fd is readable, 0 on
 * timeout, or a negative errno (-EINTR: a signal handler ran).
 */
struct urxe_dp_wait {
	int fd;
	struct urxe_dp *dp;
	int watch_fd;
	void (*on_watch)(void *ctx);
	uint64_t (*deadline)(void *ctx);
	void (*progress)(void *ctx);
	void *ctx;
};
int urxe_dp_wait(const struct urxe_dp_wait *w, int timeout_ms);

/* CLOCK_MONOTONIC in ns: the engine's clock (ops->now). */
uint64_t urxe_dp_now(void);

#endif
