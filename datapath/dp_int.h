/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the data path: the state one device's pipeline keeps, and
 * what its files share.  Everything here runs under the engine's progress
 * lock (transmit and receive), or before the engine thread starts.
 */
#ifndef URXE_DP_INT_H
#define URXE_DP_INT_H

#include <stdatomic.h>

#include <urxe/datapath.h>
#include <urxe/counters.h>
#include <urxe/host.h>
#include <urxe/icrc.h>

/* Packets dp_faults_apply() takes at most (it makes up to twice as many). */
#define DP_FAULTS_BATCH 32
/* One packet's bytes, jumbo frames included. */
#define DP_PKT_BUF 9216
/* Frames one receive asks for at most (the backends' rx_batch). */
#define DP_RX_MAX 32

_Static_assert(2 * DP_FAULTS_BATCH <= URXE_BACKEND_SEND_MAX,
	       "a faulted batch fits one send");

/* Where one packet's bytes lie in a GSO frame's iovec. */
struct dp_seg {
	unsigned int iov0, niov;
	uint32_t len;
};

/* One transmit batch's frames: GSO runs, and where their packets lie. */
struct dp_gso {
	struct urxe_frame_desc g[URXE_BACKEND_SEND_MAX];
	struct iovec iov[URXE_BACKEND_SEND_MAX * 4];
	struct dp_seg segs[URXE_BACKEND_SEND_MAX];
	unsigned int seg0[URXE_BACKEND_SEND_MAX];	/* g[i]'s first seg */
	unsigned int nseg[URXE_BACKEND_SEND_MAX];
	struct urxe_ipid_deltas ids;	/* for the GSO segments' ICRCs */
	union ibv_gid mdst[URXE_BACKEND_SEND_MAX];	/* multicast copies' */
};

struct dp_faults;

struct urxe_dp {
	const struct urxe_backend_ops *ops;
	void *b;			/* the backend's; NULL once forgotten */
	const char *name;
	const char *rundir;
	const struct urxe_iface *ifc;
	unsigned int slot;
	unsigned int addr_index;
	const struct urxe_faults_conf *faults_conf;
	/* Loopback multicast goes as a unicast copy to each member slot. */
	bool lo_copies;
	bool gso;			/* send runs of packets as one */
	bool forked;			/* the capture is the parent's */
	unsigned int gso_failures;	/* GSO sends refused in a row */
	atomic_bool ip_meta;		/* receives report TOS and TTL */
	/*
	 * The backend's input descriptors, fixed once bound: waiters of
	 * other threads read the count (acquire) and then the descriptors.
	 */
	int rx_fds[URXE_BACKEND_MAX_FDS];
	atomic_uint nrx_fds;
	struct urxe_stats_rec *stats;
	struct urxe_dp_sink sink;
	struct urxe_faults *faults;	/* URXE_FAULTS, or NULL */
	struct dp_faults *ft;		/* ... and its scratch */
	struct urxe_capture *cap;	/* URXE_PCAP, or NULL */
	struct dp_gso gb;		/* the transmit batch's */
	struct urxe_frame_desc in[DP_RX_MAX];
};

/* dp_faults.c: URXE_FAULTS' injector, made with the data path. */
int dp_faults_start(struct urxe_dp *dp, const struct urxe_faults_conf *conf);
void dp_faults_stop(struct urxe_dp *dp);
/* Room for the batch dp_faults_apply() makes (2 x the batch). */
struct urxe_pkt *dp_faulted(struct urxe_dp *dp);
/*
 * URXE_FAULTS: what the wire does to the packets of a transmit batch —
 * dropped ones vanish, duplicated ones go twice, corrupted ones go with a
 * flipped bit (the receiver's ICRC check drops them), a reordered one
 * waits for the next packet.  The first @n (at most DP_FAULTS_BATCH) of
 * @pkts become the batch in @out (room for twice as many), each packet in
 * one piece (a packet in pieces is first copied whole); returns its
 * length.  It counts each fault (URXE_CNT_FAULT_*) and, for URXE_PCAP,
 * captures a dropped packet with a comment saying so.
 */
unsigned int dp_faults_apply(struct urxe_dp *dp, const struct urxe_pkt *pkts,
			     unsigned int n, struct urxe_pkt *out);
/* The comment on packet @i of the batch it made, or NULL. */
const char *dp_fault_note(struct urxe_dp *dp, unsigned int i);

/* dp_capture.c: URXE_PCAP, both directions. */
/*
 * Records a packet as it left: @c gives its addresses, ports and IP ID;
 * its bytes lie in @iov (@n pieces, copied whole if several).
 */
void dp_capture_sent(struct urxe_dp *dp, struct urxe_capture_pkt *c,
		     const struct iovec *iov, unsigned int n);
/* A frame as it left; @segs: a GSO frame's packets; @note: a comment. */
void dp_capture_out(struct urxe_dp *dp, const struct urxe_frame_desc *o,
		    const struct dp_seg *segs, const char *note,
		    uint64_t when_us);
/* One packet as it left, with IPv4 ID @ip_id. */
void dp_capture_pkt(struct urxe_dp *dp, const struct urxe_frame_desc *o,
		    const struct iovec *iov, unsigned int n, uint16_t ip_id,
		    const char *note, uint64_t when_us);
/* A loopback multicast send, as the group's frame (@k copies went). */
void dp_capture_mcast(struct urxe_dp *dp, const struct urxe_pkt *p,
		      unsigned int k, uint64_t when_us);
/* A received packet @one, as @meta describes it, for engine @eng. */
void dp_capture_rx(struct urxe_dp *dp, struct urxe_engine *eng,
		   const struct urxe_frame_desc *one,
		   const struct urxe_rx_meta *meta);

/* dp_mcast.c: loopback multicast fan-out. */
bool dp_mcast_pkt(const struct urxe_dp *dp, const struct urxe_pkt *p);
unsigned int dp_mcast_copies(struct urxe_dp *dp, const struct urxe_pkt *p,
			     union ibv_gid *dst, unsigned int max);

/* dp_tx.c: the frame that carries packet @p. */
void dp_frame_from_pkt(struct urxe_frame_desc *o, const struct urxe_pkt *p);

/* Counts @n packets lost on the way out (URXE_CNT_SEND_ERR). */
void dp_count_lost(struct urxe_dp *dp, unsigned int n);

#endif
