/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the netdev layer: what an interface looks like (index, MTU,
 * MAC, state, addresses, read over rtnetlink in the caller's network
 * namespace), the frame backends, captures and faults.  Host-wide state
 * (slots, registries, statistics) is host.h's.  Nothing here knows about
 * verbs.
 */
#ifndef URXE_NETDEV_H
#define URXE_NETDEV_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/backend.h>

#define URXE_IFACE_MAX_ADDRS 14

struct urxe_ifaddr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t prefixlen;
	uint8_t scope;		/* RT_SCOPE_* */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
};

struct urxe_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	unsigned int mtu;
	uint8_t mac[6];
	bool up;		/* IFF_UP */
	bool running;		/* IFF_RUNNING: carrier, operational */
	bool loopback;		/* IFF_LOOPBACK */
	bool has_ipv6;		/* IPv6 enabled: the link has an IPv6 address */
	unsigned int naddrs;
	struct urxe_ifaddr addrs[URXE_IFACE_MAX_ADDRS];
};

/*
 * Reads link and addresses of interface @name.  Returns 0, -ENODEV when the
 * interface does not exist in this namespace, or another negative errno.
 */
int urxe_iface_query(const char *name, struct urxe_iface *out);

/*
 * Link changes: a non-blocking rtnetlink socket subscribed to link
 * messages.  urxe_iface_watch_drain() reads what is waiting and says
 * whether anything was; the caller then queries the interface again.
 */
struct urxe_iface_watch;
int urxe_iface_watch_open(struct urxe_iface_watch **out);
int urxe_iface_watch_fd(const struct urxe_iface_watch *w);
bool urxe_iface_watch_drain(struct urxe_iface_watch *w);
void urxe_iface_watch_close(struct urxe_iface_watch *w);

/* ---- the udp backend (udp.c) ---- */

/*
 * The socket buffers the udp backend asks for; an ordinary user's sockets
 * get at most net.core.rmem_max / wmem_max (`urxe doctor` compares).
 */
#define URXE_UDP_SOCK_BUF (4 << 20)

/*
 * Unprivileged RoCEv2 over UDP sockets.  One instance per device instance:
 * receive sockets on port 4791 (on loopback bound to the slot's own
 * 127.117.h.l; on a real interface the wildcard address, IPv4 and IPv6),
 * and a small pool of transmit sockets bound to 0xC000 + k, so that a
 * QP's flow hash picks its UDP source port (falling back to 4791).  All are
 * IP_PMTUDISC_DO, SO_NO_CHECK on IPv4, a real checksum on IPv6 while
 * accepting 0 (UDP_NO_CHECK6_RX).  Unconnected, the kernel sends IP ID 0
 * (ID i on segment i of a GSO send), which the ICRC covers.  With
 * urxe_udp_conf.connect, a transmit socket connects to the first unicast
 * destination it sends to (the kernel then skips a route lookup per send,
 * ~0.35 us on lo): its IPv4 IDs come from a per-socket counter, learnt
 * when it connects and followed, and each ICRC is rewritten for its ID
 * (wire/ipid.c) as it leaves.  Nothing locks inside: the
 * caller serializes the calls on one instance.
 */
#define URXE_UDP_PORT 4791
#define URXE_UDP_SPORT_BASE 0xc000
#define URXE_UDP_TX_POOL 4
#define URXE_UDP_MAX_FDS (3 + 2 * URXE_UDP_TX_POOL)

/*
 * Room in a UDP receive socket of this host, from the kernel
 * (netdev/sockroom.c): NETLINK_SOCK_DIAG and NETLINK_ROUTE, which any
 * user may ask.  Not thread-safe: the caller serializes.
 */
struct urxe_sockroom;

int urxe_sockroom_open(struct urxe_sockroom **out);
void urxe_sockroom_close(struct urxe_sockroom *r);
/*
 * The free room (SO_RCVBUF less the memory its queue holds, may be
 * negative) of the UDP socket that datagrams to @gid (16 bytes) port
 * @port reach, and (@size, if not NULL) its SO_RCVBUF; -ENOENT when no
 * socket is bound there.
 */
int urxe_sockroom_query(struct urxe_sockroom *r, const uint8_t *gid,
			uint16_t port, int64_t *room, int64_t *size);
/*
 * How many distinct addresses send to @gid:@port from connected UDP
 * sockets (a transmit socket of an instance connects to its peer): the
 * count, or -errno; the first @max of them in @src (16-byte GIDs).
 */
int urxe_sockroom_senders(struct urxe_sockroom *r, const uint8_t *gid,
			  uint16_t port, uint8_t (*src)[16], unsigned int max);
/* 1 when @gid is an address of this host (its network namespace), else 0. */
int urxe_sockroom_is_local(struct urxe_sockroom *r, const uint8_t *gid);

struct urxe_udp;

struct urxe_udp_conf {
	const struct urxe_iface *ifc;	/* may be NULL on loopback */
	bool loopback;
	struct in_addr lo_addr;		/* loopback: the slot's address */
	/*
	 * GSO sends and GRO receives (real IPv4 UDP checksums then); else
	 * one datagram per packet, IPv4 checksum 0 (SO_NO_CHECK).
	 */
	bool gso;
	/* Connect transmit sockets (see above). */
	bool connect;
};

/*
 * Binds the receive sockets.  -EADDRINUSE (logged, naming the packet
 * backend) when another process owns port 4791 there.
 */
int urxe_udp_open(const struct urxe_udp_conf *conf, struct urxe_udp **out);
void urxe_udp_close(struct urxe_udp *u);
/*
 * Descriptors to poll for input; returns how many (<= URXE_UDP_MAX_FDS).
 * The set grows when a transmit socket is bound (at the first send or
 * urxe_udp_sport() for its pool index) and only ever grows at its tail:
 * a caller watching them compares the count after sending.
 */
unsigned int urxe_udp_fds(struct urxe_udp *u, int *fds);
/*
 * The receive sockets alone (port 4791; one per family, and a second
 * for IPv4 that gets the datagrams with UDP checksum 0): input
 * arrives only there — transmit sockets drop whatever reaches them.
 */
unsigned int urxe_udp_rx_fds(struct urxe_udp *u, int *fds);
/*
 * Whether received datagrams report their IP TOS/traffic class and TTL/hop
 * limit (urxe_udp_in.tos, .ttl; 0 when off).  Off at open: the control
 * messages cost a receiver ~0.3 us per datagram, and only UD receives
 * (their GRH) and captures show them.  Returns 0 or a negative errno.
 */
int urxe_udp_ip_meta(struct urxe_udp *u, bool on);
/*
 * Bytes the receive sockets hold (SO_RCVBUF as the kernel reports it, the
 * smallest of the families), 0 if unknown.
 */
unsigned int urxe_udp_rcvbuf(struct urxe_udp *u);

/*
 * A real interface: joins (or leaves) the multicast group @gid (16 bytes,
 * IPv4-mapped or IPv6) on the receive socket of its family, on the
 * interface.  Sending to a group needs nothing: every socket sends
 * through the interface and loops a copy back to the host's members.
 * -EOPNOTSUPP on loopback (no IP multicast between slots: host/mcast.c).
 */
int urxe_udp_mcast(struct urxe_udp *u, const uint8_t *gid, bool join);

/*
 * Sends up to @n datagrams (batched, sendmmsg).  Returns how many were
 * taken, or a negative errno (-EAGAIN: socket buffer full, retry later).
 * Any other negative errno concerns out[0] alone (-EAFNOSUPPORT: no socket
 * of the destination's family, -EMSGSIZE: beyond the path MTU, ...): the
 * caller drops it or fails.  @sport_used (optional, n entries) receives
 * the source port really used (entries past the returned count: unset).
 */
int urxe_udp_send(struct urxe_udp *u, const struct urxe_frame_desc *out,
		  unsigned int n, uint16_t *sport_used);
/*
 * The source port a datagram for @sport would leave with: 0xC000 +
 * @sport % URXE_UDP_TX_POOL, or URXE_UDP_PORT when that could not be bound.
 * Binds the pool socket at the first call for its index.
 */
uint16_t urxe_udp_sport(struct urxe_udp *u, uint16_t sport);

/* One received datagram. */
struct urxe_udp_in {
	uint8_t *buf;			/* caller's buffer */
	uint32_t cap;
	uint32_t len;			/* bytes received (RoCE: BTH .. ICRC) */
	uint8_t src[16];		/* source address as a GID */
	uint8_t dst[16];		/* destination address as a GID */
	uint16_t sport;
	uint16_t dport;
	uint8_t tos;
	uint8_t ttl;
	/* GRO: nonzero, buf holds several packets of this size (last shorter) */
	uint16_t gso_size;
	bool truncated;
	/*
	 * The datagram carried a UDP checksum, which the kernel verified (IPv4:
	 * told apart by the receive sockets; IPv6: always set).
	 */
	bool csum;
	/* When the kernel received it: CLOCK_REALTIME ns (0: not known). */
	uint64_t rx_ns;
};

/*
 * Receives up to @n datagrams without blocking (recvmmsg, all sockets).
 * Returns how many, 0 when none is waiting, or a negative errno.
 */
int urxe_udp_recv(struct urxe_udp *u, struct urxe_udp_in *in, unsigned int n);

/* ---- capture (capture.c): URXE_PCAP ---- */

struct urxe_capture;

struct urxe_capture_pkt {
	bool tx;			/* sent (else received) */
	const uint8_t *src;		/* 16-byte GIDs */
	const uint8_t *dst;
	uint16_t sport;
	uint16_t dport;
	uint8_t tos;
	uint8_t ttl;
	uint16_t ip_id;
	const uint8_t *roce;		/* BTH .. ICRC */
	uint32_t len;
	const char *comment;		/* the frame's pcapng comment, or NULL */
	/*
	 * When it happened (urxe_capture_now_us()), or 0 for the moment of
	 * writing: a sender takes the time before its send, so that a reply
	 * the peer records before the sender gets round to writing does not
	 * come first in a merged trace.
	 */
	uint64_t when_us;
};

/* Opens the pcapng capture file @spec (%p = pid). */
int urxe_capture_open(const char *spec, const uint8_t mac[6],
		      struct urxe_capture **out);
void urxe_capture_close(struct urxe_capture *c);
/* The capture clock: CLOCK_REALTIME in microseconds. */
uint64_t urxe_capture_now_us(void);
/* Writes one frame; thread-safe; a NULL capture does nothing. */
void urxe_capture_write(struct urxe_capture *c,
			const struct urxe_capture_pkt *p);

/* ---- fault injection (faults.c): URXE_FAULTS ---- */

struct urxe_faults_conf {
	double drop, dup, reorder, corrupt;
	uint64_t seed;
	/* Stop after this many faults (0: never stop). */
	uint64_t limit;
};

enum urxe_fault {
	URXE_FAULT_NONE,
	URXE_FAULT_DROP,
	URXE_FAULT_DUP,
	URXE_FAULT_REORDER,
	URXE_FAULT_CORRUPT,
};

struct urxe_faults;

/*
 * "drop=0.05,dup=0.01,reorder=0.01,corrupt=0.01,seed=7,limit=N".  -EINVAL
 * if anything in it is wrong, with the reason, naming the token, in @why
 * (@len bytes; may be NULL).
 */
int urxe_faults_parse(const char *spec, struct urxe_faults_conf *conf,
		      char *why, size_t len);
int urxe_faults_create(const struct urxe_faults_conf *conf,
		       struct urxe_faults **out);
void urxe_faults_destroy(struct urxe_faults *f);
/* The fate of one packet; a NULL injector never interferes. */
enum urxe_fault urxe_faults_decide(struct urxe_faults *f, uint32_t qpn,
				   uint32_t psn, uint8_t opcode, bool rx);

/* ---- the packet backend (packet.c) ---- */

/*
 * RoCEv2 through an AF_PACKET socket (CAP_NET_RAW) with mmapped rings, so
 * that many processes share one interface and IP: a classic BPF filter
 * (compiled by a dlopen()ed libpcap) accepts only frames for the slot's
 * QPNs (XRC requests: for its SRQ numbers; multicast QPN 0xFFFFFF
 * always).  Frames are built in place in the TX ring (Ethernet, IPv4 with
 * DF, ID 0, TTL 64 and UDP checksum 0, or IPv6 with a real checksum) and
 * read in place from the TPACKET_V2 RX ring.  A sink UDP socket on port
 * 4791 that accepts nothing keeps the kernel from answering ICMP.  Nothing
 * locks inside: the caller serializes the calls on one instance.
 */
struct urxe_packet;

struct urxe_packet_conf {
	const struct urxe_iface *ifc;
	unsigned int slot;		/* accept this slot's frames */
	struct in_addr lo_addr;		/* loopback: the slot's address */
	/*
	 * GSO both ways (packet_gso.c) when the kernel takes UDP GSO in a
	 * virtio_net_hdr (PACKET_VNET_HDR, 6.2+, probed): runs of packets of
	 * one flow leave as one super-frame, super-frames arriving whole are
	 * split.  Else (or without the kernel's support) one frame a packet.
	 */
	bool gso;
};

/*
 * Opens the ring socket on conf->ifc.  -EPERM (logged, saying what to
 * grant) without CAP_NET_RAW.
 */
int urxe_packet_open(const struct urxe_packet_conf *conf,
		     struct urxe_packet **out);
void urxe_packet_close(struct urxe_packet *p);
/* The one descriptor to poll for input. */
int urxe_packet_fd(const struct urxe_packet *p);
/* Frames the RX ring holds. */
unsigned int urxe_packet_rx_frames(const struct urxe_packet *p);
/* Whether a received frame waits in the ring (no system call). */
bool urxe_packet_rx_pending(const struct urxe_packet *p);
/*
 * RoCE frames received since the last urxe_packet_send() that sent any;
 * @run (optional): since the last one that sent a frame not marked @ack
 * (a receiver that only acknowledges is taking a stream).
 */
unsigned int urxe_packet_rx_since_tx(const struct urxe_packet *p,
				     unsigned int *run);

/*
 * Joins (@join) or leaves the multicast group @gid (IPv4-mapped or IPv6)
 * on the interface, so that the kernel takes its frames in; every join
 * must be matched by a leave (-EADDRINUSE: already joined).  Nothing to
 * do on loopback, where every frame reaches every ring.
 */
int urxe_packet_mcast(struct urxe_packet *p, const uint8_t *gid, bool join);

/*
 * Builds up to @n frames in the TX ring and flushes them with one send().
 * Returns how many were taken, or a negative errno: -EAGAIN when the ring
 * is full; any other concerns out[0] alone (-EMSGSIZE: beyond the MTU,
 * -EHOSTUNREACH: no link-layer address, logged once, -EADDRNOTAVAIL: the
 * host's own address, ...).  The first packet to a destination may wait
 * (up to a second, once) for the kernel to resolve its next hop.  With
 * GSO, consecutive packets of one flow (urxe_packet_gso_run()) leave as
 * one super-frame, the i-th of a run with IPv4 ID i (its ICRC corrected
 * in the ring); @ip_id (optional, n entries) receives each packet's ID.
 */
int urxe_packet_send(struct urxe_packet *p, const struct urxe_frame_desc *out,
		     unsigned int n, uint16_t *ip_id);
/* Whether this instance sends and takes GSO super-frames. */
bool urxe_packet_gso(const struct urxe_packet *p);

/* One received frame, in place in the RX ring. */
struct urxe_packet_in {
	const uint8_t *frame;		/* Ethernet header on */
	uint32_t frame_len;
	const uint8_t *ip;		/* the IP header */
	uint32_t ip_len;
	const uint8_t *roce;		/* BTH .. ICRC */
	uint32_t len;
	uint8_t src[16];		/* source address as a GID */
	uint8_t dst[16];		/* destination address as a GID */
	uint16_t sport;
	uint16_t dport;
	uint8_t tos;
	uint8_t ttl;
	uint16_t ip_id;
	/* A segment of a super-frame: its own IP and UDP headers (@ip). */
	uint8_t hdr[68];
};

/*
 * Reads up to @n RoCEv2 frames without blocking or copying; returns how
 * many.  They stay valid until urxe_packet_release() (or the next recv,
 * which releases them first).
 */
int urxe_packet_recv(struct urxe_packet *p, struct urxe_packet_in *in,
		     unsigned int n);
/* Gives the frames of the last urxe_packet_recv() back to the kernel. */
void urxe_packet_release(struct urxe_packet *p);

/*
 * The pieces, for tests.  The pcap filter expression of @slot; the same
 * compiled (caller frees out->filter).  One frame built into @f (@cap
 * bytes; @mtu: the link's): its length or -EMSGSIZE.  One frame parsed:
 * 0, or -EINVAL if it is not IPv4/IPv6 UDP to port 4791 with sane lengths
 * (and a valid IPv4 header checksum).
 */
struct sock_fprog;
int urxe_packet_filter_expr(unsigned int slot, char *buf, size_t len);
int urxe_packet_filter_compile(unsigned int slot, struct sock_fprog *out);
int urxe_packet_build(const uint8_t dmac[6], const uint8_t smac[6],
		      const struct urxe_frame_desc *o, uint8_t *f, size_t cap,
		      unsigned int mtu);
int urxe_packet_parse(const uint8_t *f, uint32_t len,
		      struct urxe_packet_in *in);

/* ---- GSO on the packet backend (packet_gso.c) ---- */

#define URXE_PACKET_VNET_LEN 10		/* struct virtio_net_hdr */
/*
 * Whether the kernel takes VIRTIO_NET_HDR_GSO_UDP_L4 from a packet socket
 * (asked once a process: a two-segment frame to the discard port on lo,
 * else the kernel's version, 6.2 or later).
 */
bool urxe_packet_gso_probe(void);
/*
 * How many of @o[0..n-1] (at least 1) make one super-frame: one flow
 * (addresses, port, class, destination QPN or XRC SRQ), all of o[0]'s
 * length but a shorter last, within @room bytes of RoCE data.
 */
unsigned int urxe_packet_gso_run(const struct urxe_frame_desc *o,
				 unsigned int n, size_t room);
/*
 * Builds @o[0..m-1] into @f (@cap bytes) as a virtio_net_hdr and one
 * frame: for m > 1 a super-frame (UDP GSO, segment size o[0]'s length,
 * partial UDP checksum for the kernel to finish per segment, segment i's
 * ICRC corrected for IPv4 ID i, wire/ipid.c), else the plain frame of
 * urxe_packet_build() behind an empty header.  Returns the bytes written
 * (header included) or -EMSGSIZE.
 */
int urxe_packet_build_gso(const uint8_t dmac[6], const uint8_t smac[6],
			  const struct urxe_frame_desc *o, unsigned int m,
			  uint8_t *f, size_t cap, unsigned int mtu);
/*
 * A received frame @f (@len bytes) behind its virtio_net_hdr @vnet: fills
 * @in[j] with segment @first + j (j < @n) — a frame without GSO is one
 * segment, in place; a UDP GSO super-frame's segment i has its own IP and
 * UDP headers in in[j].hdr (lengths, IPv4 ID base + i).  Returns the
 * number of segments of the frame, or -EINVAL.
 */
int urxe_packet_split(const uint8_t *vnet, const uint8_t *f, uint32_t len,
		      unsigned int first, struct urxe_packet_in *in,
		      unsigned int n);

#endif
