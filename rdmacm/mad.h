/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The IB Communication Manager's MADs (IBA Vol. 1 ch. 12, tables 106-120)
 * and the RDMA IP CM header they carry (Annex A11): one decoded message as
 * a plain structure, encoded to and decoded from a 256-byte MAD.  Pure
 * functions: no allocation, no globals, no I/O.  Negative errno.
 */
#ifndef URXE_RDMACM_MAD_H
#define URXE_RDMACM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define URXE_MAD_LEN 256
#define URXE_CM_MGMT_CLASS 0x07
#define URXE_CM_CLASS_VERSION 2

enum urxe_cm_attr {
	URXE_CM_REQ = 0x10,
	URXE_CM_MRA = 0x11,
	URXE_CM_REJ = 0x12,
	URXE_CM_REP = 0x13,
	URXE_CM_RTU = 0x14,
	URXE_CM_DREQ = 0x15,
	URXE_CM_DREP = 0x16,
	URXE_CM_SIDR_REQ = 0x17,
	URXE_CM_SIDR_REP = 0x18,
	URXE_CM_LAP = 0x19,
	URXE_CM_APR = 0x1a,
};

/* Private-data sizes, IBA 12.6 (tables 106-120). */
#define URXE_CM_REQ_PRIV 92
#define URXE_CM_MRA_PRIV 222
#define URXE_CM_REJ_PRIV 148
#define URXE_CM_REP_PRIV 196
#define URXE_CM_RTU_PRIV 224
#define URXE_CM_DREQ_PRIV 220
#define URXE_CM_DREP_PRIV 224
#define URXE_CM_SIDR_REQ_PRIV 216
#define URXE_CM_SIDR_REP_PRIV 136
/* REJ's Additional Rejection Information; SIDR_REP's Additional Information. */
#define URXE_CM_ARI_LEN 72

/*
 * One decoded message: the union of every field any message has.  Values
 * wider than their wire field are truncated to it on encoding.
 */
struct urxe_cm_msg {
	uint16_t attr;			/* enum urxe_cm_attr */
	uint64_t tid;			/* MAD transaction ID */
	uint32_t attr_mod;		/* ECE attribute modifier (REQ/REP) */
	uint32_t local_id, remote_id;	/* comm IDs; SIDR: request ID in local_id */
	uint64_t service_id;		/* REQ, SIDR_REQ, SIDR_REP */
	uint64_t local_ca_guid;		/* REQ, REP */
	uint32_t local_qkey;		/* REQ, REP, SIDR_REP */
	/* 24 bits; REQ/REP: local QPN; DREQ: remote QPN/EECN; SIDR_REP: QPN */
	uint32_t local_qpn;
	uint32_t local_eecn;		/* REQ/REP local EECN (XRC REP: SRQN) */
	uint32_t remote_eecn;		/* REQ */
	uint8_t resp_resources, init_depth;		/* REQ, REP */
	uint8_t remote_cm_timeout, local_cm_timeout;	/* REQ, 5 bits each */
	uint8_t transport;		/* REQ, 2 bits: 0 RC, 1 UC, 3 XRC */
	bool e2e_flow;			/* REQ, REP */
	uint32_t start_psn;		/* REQ, REP, 24 bits */
	uint8_t retry_count;		/* REQ, 3 bits */
	uint16_t pkey;			/* REQ, SIDR_REQ */
	uint8_t path_mtu;		/* REQ, 4 bits, IB enum */
	bool rdc_exists;		/* REQ */
	uint8_t rnr_retry;		/* REQ, REP, 3 bits */
	uint8_t max_cm_retries;		/* REQ, 4 bits */
	bool srq;			/* REQ, REP */
	uint8_t ext_transport;		/* REQ, 3 bits: 1 XRC */
	/* REQ primary path (the alternate path is sent as zeros, ignored) */
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label;		/* 20 bits */
	uint8_t packet_rate;		/* 6 bits */
	uint8_t traffic_class, hop_limit;
	uint8_t sl;			/* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout;	/* 5 bits */
	uint8_t target_ack_delay;	/* REP, 5 bits */
	uint8_t failover;		/* REP, 2 bits */
	uint8_t msg_rejected;		/* REJ/MRA, 2 bits: 0 REQ 1 REP 2 other */
	uint8_t reject_info_len;	/* REJ, 7 bits */
	uint16_t reason;		/* REJ */
	uint8_t ari[URXE_CM_ARI_LEN];	/* REJ ARI; SIDR_REP additional info */
	uint8_t service_timeout;	/* MRA, 5 bits */
	uint8_t sidr_status, add_info_len;	/* SIDR_REP */
	uint32_t vendor_id;		/* REQ/REP/SIDR_REP ECE vendor ID, 24 bits */
	uint8_t priv[URXE_CM_RTU_PRIV];	/* private data (224 is the largest) */
	uint16_t priv_len;		/* bytes of priv used */
};

/*
 * Encodes @m into @mad, zeroed first: the common MAD header (base version
 * 1, class 0x07, class version 2, method 0x03 Send, status 0, TID,
 * attribute ID and modifier) and the message, whose private data is the
 * first priv_len bytes of m->priv followed by zeros.  -EINVAL for an
 * attribute that is not REQ..SIDR_REP (LAP and APR are not encoded) or a
 * priv_len beyond the message's private-data size; @mad is untouched then.
 */
int urxe_cm_encode(const struct urxe_cm_msg *m, uint8_t mad[URXE_MAD_LEN]);

/*
 * Decodes the @len bytes at @mad into @m: every field of the message it
 * carries, the others zero; priv_len becomes the message's private-data
 * size.  LAP and APR decode as their header only (priv_len 0).  -EINVAL
 * unless len >= 256, base version 1, class 0x07, class version 2, method
 * 0x03 and a known attribute; @m is untouched then.
 */
int urxe_cm_decode(const uint8_t *mad, size_t len, struct urxe_cm_msg *m);

/* "REQ", "REP", ..., or "?" for an unknown attribute. */
const char *urxe_cm_attr_name(uint16_t attr);

/*
 * The RDMA IP CM header, the first 36 bytes of the private data of REQ
 * and SIDR_REQ (IBA Annex A11): version 0, the IP version in the high
 * nibble of byte 1, the active side's source port, source and destination
 * addresses in 16 bytes each.  An IPv4 address fills the last 4 bytes of
 * its field, after 12 zeros (not ::ffff:-mapped).
 */
#define URXE_CMA_HDR_LEN 36

struct urxe_cma_hdr {
	uint8_t ip_version;		/* 4 or 6 */
	uint16_t src_port;		/* host order */
	struct sockaddr_storage src, dst;	/* src with src_port, dst port 0 */
};

/*
 * Writes the header for @src (and its port) to @dst at @priv.
 * -EAFNOSUPPORT unless both are AF_INET or AF_INET6, -EINVAL if their
 * families differ; @priv is untouched then.
 */
int urxe_cma_hdr_put(uint8_t *priv, const struct sockaddr *src,
		     const struct sockaddr *dst);

/*
 * Reads the header at @priv into @h.  -EINVAL for a version other than 0
 * or an IP version other than 4 or 6; @h is untouched then.
 */
int urxe_cma_hdr_get(const uint8_t *priv, struct urxe_cma_hdr *h);

#endif
