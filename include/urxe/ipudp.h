/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP and UDP headers as urxe writes them (wire/ipudp.c): netdev's packet
 * backend's frames (packet.c, packet_gso.c) and the frames URXE_PCAP
 * rebuilds (capture.c), and the Internet checksums they carry.
 */
#ifndef URXE_IPUDP_H
#define URXE_IPUDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/util.h>

/* @s plus the @n bytes at @p as 16-bit words (an odd last byte padded). */
uint32_t urxe_csum_add(uint32_t s, const uint8_t *p, size_t n);
/* The ones' complement sum @s, folded to 16 bits (not inverted). */
uint16_t urxe_csum_fold(uint32_t s);
/*
 * The sum of the UDP pseudo-header of the IPv4 (@v4) or IPv6 header at
 * @ip, for a UDP datagram of @udp_len bytes (header included).
 */
uint32_t urxe_csum_pseudo(const uint8_t *ip, bool v4, uint32_t udp_len);
/* Sets the header checksum of the IPv4 header at @ip (@ip_len bytes). */
void urxe_csum_ip4(uint8_t *ip, size_t ip_len);

/* What the IP and UDP headers of a RoCEv2 datagram say. */
struct urxe_ipudp {
	const uint8_t *src;		/* 16 bytes: a GID; IPv4 if both */
	const uint8_t *dst;		/* ... are IPv4-mapped */
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;			/* IPv4 TTL / IPv6 hop limit */
	uint16_t ip_id;			/* IPv4 */
	uint16_t sport, dport;
};

/*
 * Writes at @ip an IPv4 header (DF, its checksum) or an IPv6 one (flow
 * label 0), then the UDP header, for @len payload bytes at @payload
 * (behind the headers or elsewhere).  The UDP checksum is 0 over IPv4,
 * as rxe; over IPv6 a real one, of @payload too.  Returns the headers'
 * length (28 or 48).
 */
size_t urxe_ipudp_build(uint8_t *ip, const struct urxe_ipudp *h,
			const uint8_t *payload, size_t len);

#endif
