// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_mad: arbitrary bytes as a CM MAD (rdmacm/mad.c), the first thing
 * the RDMA CM does with what arrives on QP1 from anyone on the network.
 * Whatever the input, the decoder must not crash or overrun, and:
 * - a MAD it takes names a CM attribute it knows, and its private data
 *   fits the message's room;
 * - what it took encodes again (LAP and APR, which RDMA CM never sends,
 *   are taken with no body and not encoded), and that MAD decodes to the
 *   same message and encodes to the same bytes (nothing decoded is lost
 *   or invented);
 * - the input's first 36 bytes, and a REQ's private data, as the RDMA
 *   CM's private-data header (urxe_cma_hdr_get) either fail or give IPv4
 *   / IPv6 addresses that put back and read again unchanged.
 * The ctest fuzz.mad (a URXE_FUZZ build, clang) fuzzes it from the seeds
 * in mad_corpus/: MADs of rping, ucmatose and udaddy runs (REQ, REP,
 * RTU, DREQ, DREP, REJ, SIDR_REQ, SIDR_REP).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../rdmacm/mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t priv_room(uint16_t attr)
{
	switch (attr) {
	case URXE_CM_REQ:
		return URXE_CM_REQ_PRIV;
	case URXE_CM_MRA:
		return URXE_CM_MRA_PRIV;
	case URXE_CM_REJ:
		return URXE_CM_REJ_PRIV;
	case URXE_CM_REP:
		return URXE_CM_REP_PRIV;
	case URXE_CM_RTU:
		return URXE_CM_RTU_PRIV;
	case URXE_CM_DREQ:
		return URXE_CM_DREQ_PRIV;
	case URXE_CM_DREP:
		return URXE_CM_DREP_PRIV;
	case URXE_CM_SIDR_REQ:
		return URXE_CM_SIDR_REQ_PRIV;
	case URXE_CM_SIDR_REP:
		return URXE_CM_SIDR_REP_PRIV;
	default:
		return 0;
	}
}

static void check_cma_hdr(const uint8_t *data, size_t size)
{
	static struct urxe_cma_hdr h, h2;
	uint8_t buf[URXE_CMA_HDR_LEN], again[URXE_CMA_HDR_LEN];
	struct sockaddr_storage src;

	if (size < URXE_CMA_HDR_LEN)
		return;
	memcpy(buf, data, sizeof(buf));
	memset(&h, 0, sizeof(h));
	if (urxe_cma_hdr_get(buf, &h))
		return;
	if (h.ip_version != 4 && h.ip_version != 6)
		abort();
	if (h.src.ss_family != (h.ip_version == 4 ? AF_INET : AF_INET6) ||
	    h.dst.ss_family != h.src.ss_family)
		abort();
	src = h.src;
	if (urxe_cma_hdr_put(again, (struct sockaddr *)&src,
			     (struct sockaddr *)&h.dst))
		abort();
	memset(&h2, 0, sizeof(h2));
	if (urxe_cma_hdr_get(again, &h2) || h2.ip_version != h.ip_version ||
	    h2.src_port != h.src_port ||
	    memcmp(&h2.src, &h.src, sizeof(h.src)) ||
	    memcmp(&h2.dst, &h.dst, sizeof(h.dst)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct urxe_cm_msg m, m2;
	static uint8_t mad[URXE_MAD_LEN], mad2[URXE_MAD_LEN];

	memset(&m, 0, sizeof(m));
	if (urxe_cm_decode(data, size, &m) == 0 &&
	    (m.attr == URXE_CM_LAP || m.attr == URXE_CM_APR)) {
		if (urxe_cm_encode(&m, mad) == 0)
			abort();
	} else if (urxe_cm_decode(data, size, &m) == 0) {
		if (!priv_room(m.attr) || m.priv_len > priv_room(m.attr) ||
		    !urxe_cm_attr_name(m.attr))
			abort();
		if (urxe_cm_encode(&m, mad))
			abort();
		memset(&m2, 0, sizeof(m2));
		if (urxe_cm_decode(mad, sizeof(mad), &m2) ||
		    memcmp(&m, &m2, sizeof(m)))
			abort();
		if (urxe_cm_encode(&m2, mad2) || memcmp(mad, mad2, sizeof(mad)))
			abort();
		if (m.attr == URXE_CM_REQ)
			check_cma_hdr(m.priv, m.priv_len);
	}
	check_cma_hdr(data, size);
	return 0;
}
