// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CM MAD codec: the common MAD header (IBA 13.4.2), the CM messages
 * (IBA 12.6, tables 106-120) and the RDMA IP CM header (Annex A11).
 *
 * Each message is a table of fields, each a run of bits at a byte offset
 * counted from the start of the CM message (MAD byte 24), bits numbered
 * from the most significant as in the spec's tables, big-endian on the
 * wire.  One pair of loops encodes and decodes every message; the private
 * data always fills the message to its end, so its offset is computed
 * from its size.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "mad.h"

#define MAD_HDR_LEN 24
#define MAD_BASE_VERSION 1
#define MAD_METHOD_SEND 0x03
#define CM_MSG_LEN (URXE_MAD_LEN - MAD_HDR_LEN)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Common MAD header offsets, IBA 13.4.2. */
enum {
	HDR_BASE_VERSION = 0,
	HDR_MGMT_CLASS = 1,
	HDR_CLASS_VERSION = 2,
	HDR_METHOD = 3,		/* R (1) and Method (7) */
	HDR_TID = 8,
	HDR_ATTR_ID = 16,
	HDR_ATTR_MOD = 20,
};

/*
 * One field of a message: @bits bits starting at bit @bit (0 = MSB) of
 * byte @off, holding the member's bits @shift and up.  @bits 0 is a byte
 * string as long as the member (a GID, the ARI).
 */
struct cm_field {
	uint8_t off;
	uint8_t bit;
	uint8_t bits;
	uint8_t shift;
	uint8_t size;		/* sizeof the member */
	uint16_t member;	/* offsetof the member */
};

#define MEMBER(x) .member = offsetof(struct urxe_cm_msg, x), \
	.size = sizeof(((struct urxe_cm_msg *)0)->x)
/* @n bits at bit @b of byte @o. */
#define BF(o, b, n, x) { .off = (o), .bit = (b), .bits = (n), MEMBER(x) }
/* @n bits at byte @o. */
#define U(o, n, x) BF(o, 0, n, x)
/* @n bits at byte @o: the member's bits @s and up. */
#define PART(o, n, x, s) { .off = (o), .bits = (n), .shift = (s), MEMBER(x) }
/* The member's bytes at byte @o. */
#define BYTES(o, x) { .off = (o), MEMBER(x) }

/* Table 106.  The alternate path (96-139) is sent as zeros. */
static const struct cm_field req_fields[] = {
	U(0, 32, local_id),
	U(5, 24, vendor_id),		/* ECE, IBA comment #9434 */
	U(8, 64, service_id),
	U(16, 64, local_ca_guid),
	U(28, 32, local_qkey),
	U(32, 24, local_qpn),
	U(35, 8, resp_resources),
	U(36, 24, local_eecn),
	U(39, 8, init_depth),
	U(40, 24, remote_eecn),
	BF(43, 0, 5, remote_cm_timeout),
	BF(43, 5, 2, transport),
	BF(43, 7, 1, e2e_flow),
	U(44, 24, start_psn),
	BF(47, 0, 5, local_cm_timeout),
	BF(47, 5, 3, retry_count),
	U(48, 16, pkey),
	BF(50, 0, 4, path_mtu),
	BF(50, 4, 1, rdc_exists),
	BF(50, 5, 3, rnr_retry),
	BF(51, 0, 4, max_cm_retries),
	BF(51, 4, 1, srq),
	BF(51, 5, 3, ext_transport),
	U(52, 16, local_lid),
	U(54, 16, remote_lid),
	BYTES(56, local_gid),
	BYTES(72, remote_gid),
	U(88, 20, flow_label),
	BF(91, 2, 6, packet_rate),
	U(92, 8, traffic_class),
	U(93, 8, hop_limit),
	BF(94, 0, 4, sl),
	BF(94, 4, 1, subnet_local),
	BF(95, 0, 5, local_ack_timeout),
};

/* Table 107. */
static const struct cm_field mra_fields[] = {
	U(0, 32, local_id),
	U(4, 32, remote_id),
	BF(8, 0, 2, msg_rejected),	/* Message MRAed */
	BF(9, 0, 5, service_timeout),
};

/* Table 108. */
static const struct cm_field rej_fields[] = {
	U(0, 32, local_id),
	U(4, 32, remote_id),
	BF(8, 0, 2, msg_rejected),
	BF(9, 0, 7, reject_info_len),
	U(10, 16, reason),
	BYTES(12, ari),
};

/* Table 110; ECE puts the vendor ID in the bytes after three 24-bit fields. */
static const struct cm_field rep_fields[] = {
	U(0, 32, local_id),
	U(4, 32, remote_id),
	U(8, 32, local_qkey),
	U(12, 24, local_qpn),
	PART(15, 8, vendor_id, 16),
	U(16, 24, local_eecn),
	PART(19, 8, vendor_id, 8),
	U(20, 24, start_psn),
	PART(23, 8, vendor_id, 0),
	U(24, 8, resp_resources),
	U(25, 8, init_depth),
	BF(26, 0, 5, target_ack_delay),
	BF(26, 5, 2, failover),
	BF(26, 7, 1, e2e_flow),
	BF(27, 0, 3, rnr_retry),
	BF(27, 3, 1, srq),
	U(28, 64, local_ca_guid),
};

/* Tables 111 (RTU) and 113 (DREP). */
static const struct cm_field ids_fields[] = {
	U(0, 32, local_id),
	U(4, 32, remote_id),
};

/* Table 112. */
static const struct cm_field dreq_fields[] = {
	U(0, 32, local_id),
	U(4, 32, remote_id),
	U(8, 24, local_qpn),		/* the receiver's QPN */
};

/* Table 119. */
static const struct cm_field sidr_req_fields[] = {
	U(0, 32, local_id),		/* Request ID */
	U(4, 16, pkey),
	U(8, 64, service_id),
};

/* Table 120.  Linux writes only vendor ID bits 15:0 (bytes 7 and 11). */
static const struct cm_field sidr_rep_fields[] = {
	U(0, 32, local_id),		/* Request ID */
	U(4, 8, sidr_status),
	U(5, 8, add_info_len),
	PART(6, 16, vendor_id, 8),
	U(8, 24, local_qpn),
	PART(11, 8, vendor_id, 0),
	U(12, 64, service_id),
	U(20, 32, local_qkey),
	BYTES(24, ari),			/* Additional Information */
};

struct cm_layout {
	const struct cm_field *fields;
	uint8_t nfields;
	uint8_t priv;		/* private-data bytes, at the message's end */
};

#define LAYOUT(f, p) { (f), ARRAY_SIZE(f), (p) }
#define IDX(a) ((a) - URXE_CM_REQ)

/* LAP and APR (tables 115, 116): header only. */
static const struct cm_layout layouts[] = {
	[IDX(URXE_CM_REQ)] = LAYOUT(req_fields, URXE_CM_REQ_PRIV),
	[IDX(URXE_CM_MRA)] = LAYOUT(mra_fields, URXE_CM_MRA_PRIV),
	[IDX(URXE_CM_REJ)] = LAYOUT(rej_fields, URXE_CM_REJ_PRIV),
	[IDX(URXE_CM_REP)] = LAYOUT(rep_fields, URXE_CM_REP_PRIV),
	[IDX(URXE_CM_RTU)] = LAYOUT(ids_fields, URXE_CM_RTU_PRIV),
	[IDX(URXE_CM_DREQ)] = LAYOUT(dreq_fields, URXE_CM_DREQ_PRIV),
	[IDX(URXE_CM_DREP)] = LAYOUT(ids_fields, URXE_CM_DREP_PRIV),
	[IDX(URXE_CM_SIDR_REQ)] = LAYOUT(sidr_req_fields, URXE_CM_SIDR_REQ_PRIV),
	[IDX(URXE_CM_SIDR_REP)] = LAYOUT(sidr_rep_fields, URXE_CM_SIDR_REP_PRIV),
	[IDX(URXE_CM_LAP)] = { NULL, 0, 0 },
	[IDX(URXE_CM_APR)] = { NULL, 0, 0 },
};

static const char *const attr_names[] = {
	"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REQ",
	"SIDR_REP", "LAP", "APR",
};

_Static_assert(ARRAY_SIZE(layouts) == IDX(URXE_CM_APR) + 1, "layouts");
_Static_assert(ARRAY_SIZE(attr_names) == ARRAY_SIZE(layouts), "names");
/* Private data ends each message: the one after the fixed fields. */
_Static_assert(CM_MSG_LEN - URXE_CM_REQ_PRIV == 140, "REQ private data");
_Static_assert(CM_MSG_LEN - URXE_CM_REJ_PRIV == 84, "REJ private data");
_Static_assert(CM_MSG_LEN - URXE_CM_REP_PRIV == 36, "REP private data");
_Static_assert(CM_MSG_LEN - URXE_CM_SIDR_REP_PRIV == 96, "SIDR_REP private");
_Static_assert(sizeof(((struct urxe_cm_msg *)0)->priv) == URXE_CM_RTU_PRIV,
	       "priv holds the largest private data");
_Static_assert(sizeof(bool) == 1, "bool members are accessed as bytes");

/* The layout of @attr, or NULL. */
static const struct cm_layout *layout_of(uint16_t attr)
{
	if (attr < URXE_CM_REQ || attr > URXE_CM_APR)
		return NULL;
	return &layouts[IDX(attr)];
}

const char *urxe_cm_attr_name(uint16_t attr)
{
	return layout_of(attr) ? attr_names[IDX(attr)] : "?";
}

static uint64_t get_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

static void put_be(uint8_t *p, unsigned int n, uint64_t v)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t low_mask(unsigned int bits)
{
	return bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
}

/* The bytes a field touches, and where its least significant bit is. */
static unsigned int field_span(const struct cm_field *f)
{
	return (f->bit + f->bits + 7u) / 8u;
}

static unsigned int field_lsb(const struct cm_field *f)
{
	return field_span(f) * 8u - f->bit - f->bits;
}

static uint64_t field_get(const uint8_t *msg, const struct cm_field *f)
{
	uint64_t w = get_be(msg + f->off, field_span(f));

	return w >> field_lsb(f) & low_mask(f->bits);
}

/* Read-modify-write: neighbours sharing the bytes keep their bits. */
static void field_put(uint8_t *msg, const struct cm_field *f, uint64_t v)
{
	unsigned int n = field_span(f), lsb = field_lsb(f);
	uint64_t mask = low_mask(f->bits) << lsb;
	uint64_t w = get_be(msg + f->off, n);

	put_be(msg + f->off, n, (w & ~mask) | (v << lsb & mask));
}

static uint64_t member_get(const struct urxe_cm_msg *m,
			   const struct cm_field *f)
{
	const uint8_t *p = (const uint8_t *)m + f->member;
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;
	uint8_t v8;

	switch (f->size) {
	case 1:
		memcpy(&v8, p, 1);
		return v8;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

/* ORs @v into the member: a field may hold only some of its bits. */
static void member_or(struct urxe_cm_msg *m, const struct cm_field *f,
		      uint64_t v)
{
	uint8_t *p = (uint8_t *)m + f->member;
	uint64_t v64 = member_get(m, f) | v;
	uint32_t v32 = (uint32_t)v64;
	uint16_t v16 = (uint16_t)v64;
	uint8_t v8 = (uint8_t)v64;

	switch (f->size) {
	case 1:
		memcpy(p, &v8, 1);
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	default:
		memcpy(p, &v64, 8);
		break;
	}
}

int urxe_cm_encode(const struct urxe_cm_msg *m, uint8_t mad[URXE_MAD_LEN])
{
	const struct cm_layout *l = layout_of(m->attr);
	uint8_t *msg = mad + MAD_HDR_LEN;
	unsigned int i;

	/* LAP and APR are never sent by RDMA CM: no body to encode. */
	if (!l || !l->fields || m->priv_len > l->priv)
		return -EINVAL;

	memset(mad, 0, URXE_MAD_LEN);
	mad[HDR_BASE_VERSION] = MAD_BASE_VERSION;
	mad[HDR_MGMT_CLASS] = URXE_CM_MGMT_CLASS;
	mad[HDR_CLASS_VERSION] = URXE_CM_CLASS_VERSION;
	mad[HDR_METHOD] = MAD_METHOD_SEND;
	put_be(mad + HDR_TID, 8, m->tid);
	put_be(mad + HDR_ATTR_ID, 2, m->attr);
	put_be(mad + HDR_ATTR_MOD, 4, m->attr_mod);

	for (i = 0; i < l->nfields; i++) {
		const struct cm_field *f = &l->fields[i];

		if (!f->bits)
			memcpy(msg + f->off, (const uint8_t *)m + f->member,
			       f->size);
		else
			field_put(msg, f, member_get(m, f) >> f->shift);
	}
	memcpy(msg + CM_MSG_LEN - l->priv, m->priv, m->priv_len);
	return 0;
}

int urxe_cm_decode(const uint8_t *mad, size_t len, struct urxe_cm_msg *m)
{
	const uint8_t *msg = mad + MAD_HDR_LEN;
	const struct cm_layout *l;
	unsigned int i;
	uint16_t attr;

	if (len < URXE_MAD_LEN || mad[HDR_BASE_VERSION] != MAD_BASE_VERSION ||
	    mad[HDR_MGMT_CLASS] != URXE_CM_MGMT_CLASS ||
	    mad[HDR_CLASS_VERSION] != URXE_CM_CLASS_VERSION ||
	    mad[HDR_METHOD] != MAD_METHOD_SEND)
		return -EINVAL;
	attr = (uint16_t)get_be(mad + HDR_ATTR_ID, 2);
	l = layout_of(attr);
	if (!l)
		return -EINVAL;

	memset(m, 0, sizeof(*m));
	m->attr = attr;
	m->tid = get_be(mad + HDR_TID, 8);
	m->attr_mod = (uint32_t)get_be(mad + HDR_ATTR_MOD, 4);
	for (i = 0; i < l->nfields; i++) {
		const struct cm_field *f = &l->fields[i];

		if (!f->bits)
			memcpy((uint8_t *)m + f->member, msg + f->off, f->size);
		else
			member_or(m, f, field_get(msg, f) << f->shift);
	}
	memcpy(m->priv, msg + CM_MSG_LEN - l->priv, l->priv);
	m->priv_len = l->priv;
	return 0;
}

/* The 16-byte address field of @sa (AF_INET or AF_INET6), Annex A11. */
static void cma_addr_put(uint8_t *p, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		memset(p, 0, 12);
		memcpy(p + 12, &in->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)sa;

		memcpy(p, &in6->sin6_addr, 16);
	}
}

int urxe_cma_hdr_put(uint8_t *priv, const struct sockaddr *src,
		     const struct sockaddr *dst)
{
	sa_family_t fam = src->sa_family;
	uint16_t port;

	if ((fam != AF_INET && fam != AF_INET6) ||
	    (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	if (dst->sa_family != fam)
		return -EINVAL;

	/* sin_port and sin6_port are both network order already. */
	if (fam == AF_INET)
		port = ((const struct sockaddr_in *)src)->sin_port;
	else
		port = ((const struct sockaddr_in6 *)src)->sin6_port;
	priv[0] = 0;					/* CM version */
	priv[1] = (uint8_t)((fam == AF_INET ? 4 : 6) << 4);	/* IP version */
	memcpy(priv + 2, &port, 2);
	cma_addr_put(priv + 4, src);
	cma_addr_put(priv + 20, dst);
	return 0;
}

/* The address field at @p as a @ver (4 or 6) address and @port (host order). */
static void cma_addr_get(const uint8_t *p, uint8_t ver, uint16_t port,
			 struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ver == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, p + 12, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, p, 16);
	}
}

int urxe_cma_hdr_get(const uint8_t *priv, struct urxe_cma_hdr *h)
{
	/* The low nibble of byte 1 is reserved: ignored, as Linux does. */
	uint8_t ver = priv[1] >> 4;
	uint16_t port = (uint16_t)get_be(priv + 2, 2);

	if (priv[0] != 0 || (ver != 4 && ver != 6))
		return -EINVAL;
	h->ip_version = ver;
	h->src_port = port;
	cma_addr_get(priv + 4, ver, port, &h->src);
	cma_addr_get(priv + 20, ver, 0, &h->dst);
	return 0;
}
