/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What icrc.c (the CRC) and ipid.c (the IPv4 ID it covers) share inside
 * wire/: header lengths and the partial CRCs both build an ICRC from.
 */
#ifndef URXE_WIRE_ICRC_INT_H
#define URXE_WIRE_ICRC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/icrc.h>
#include <urxe/util.h>

#define IPV6_HDR_LEN 40
#define IPV4_MIN_HDR_LEN 20
#define UDP_HDR_LEN 8

/* RoCE bytes after the BTH that urxe_icrc_begin_n() takes in its pass. */
#define BEGIN_MORE 128

/* The CRC of a packet from its IP and UDP headers and RoCE bytes. */
uint32_t urxe_icrc_hdrs_crc(const uint8_t *ip, size_t ip_len,
			    const uint8_t *udp, const uint8_t *roce, size_t len);
/*
 * The CRC of an IPv4 packet's LRH ones, IP header (ID 0, DF set) and UDP
 * header, from @t's cache: one flow's packets of one length all have it.
 */
uint32_t urxe_icrc_pfx_crc(struct urxe_icrc_ids *t, const uint8_t *src,
			   const uint8_t *dst, uint16_t sport, uint16_t dport,
			   uint32_t roce_len);
/* From @crc on over @len RoCE bytes (BTH first, its byte 4 as ones). */
uint32_t urxe_icrc_roce_crc(uint32_t crc, const uint8_t *roce, size_t len);

/* Whether the ICRC of a packet from @src to @dst can use urxe_icrc_pfx_crc(). */
static inline bool urxe_icrc_pfx_ok(const struct urxe_icrc_ids *t,
				    const uint8_t *src, const uint8_t *dst)
{
	return t && urxe_gid_is_v4(src) && urxe_gid_is_v4(dst);
}

#endif
