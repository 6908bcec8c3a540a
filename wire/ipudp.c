// SPDX-License-Identifier: BSD-2-Clause
/*
 * IP and UDP headers and their checksums, for the packet backend's
 * frames and URXE_PCAP's (ipudp.h).
 */
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include <urxe/ipudp.h>
#include <urxe/util.h>

uint32_t urxe_csum_add(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

uint16_t urxe_csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

uint32_t urxe_csum_pseudo(const uint8_t *ip, bool v4, uint32_t udp_len)
{
	uint32_t s = v4 ? urxe_csum_add(0, ip + 12, 8) :
			  urxe_csum_add(0, ip + 8, 32);

	return s + IPPROTO_UDP + udp_len;
}

void urxe_csum_ip4(uint8_t *ip, size_t ip_len)
{
	urxe_put16(ip + 10, 0);
	urxe_put16(ip + 10,
		   (uint16_t)~urxe_csum_fold(urxe_csum_add(0, ip, ip_len)));
}

size_t urxe_ipudp_build(uint8_t *ip, const struct urxe_ipudp *h,
			const uint8_t *payload, size_t len)
{
	bool v4 = urxe_gid_is_v4(h->dst) && urxe_gid_is_v4(h->src);
	size_t ip_len = v4 ? 20 : 40;
	uint8_t *udp = ip + ip_len;
	uint32_t s;
	uint16_t c;

	if (v4) {
		ip[0] = 0x45;
		ip[1] = h->tos;
		urxe_put16(ip + 2, (uint16_t)(20 + 8 + len));
		urxe_put16(ip + 4, h->ip_id);
		urxe_put16(ip + 6, 0x4000);		/* DF */
		ip[8] = h->ttl;
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, h->src + 12, 4);
		memcpy(ip + 16, h->dst + 12, 4);
		urxe_csum_ip4(ip, 20);
	} else {
		ip[0] = (uint8_t)(0x60 | h->tos >> 4);
		ip[1] = (uint8_t)(h->tos << 4);
		ip[2] = ip[3] = 0;			/* flow label */
		urxe_put16(ip + 4, (uint16_t)(8 + len));
		ip[6] = IPPROTO_UDP;
		ip[7] = h->ttl;
		memcpy(ip + 8, h->src, 16);
		memcpy(ip + 24, h->dst, 16);
	}
	urxe_put16(udp, h->sport);
	urxe_put16(udp + 2, h->dport);
	urxe_put16(udp + 4, (uint16_t)(8 + len));
	urxe_put16(udp + 6, 0);		/* IPv4: none, as rxe */
	if (!v4) {
		/* RFC 8200 8.1: UDP over IPv6 needs a real checksum. */
		s = urxe_csum_pseudo(ip, false, (uint32_t)(8 + len));
		s = urxe_csum_add(s, udp, 8);
		s = urxe_csum_add(s, payload, len);
		c = (uint16_t)~urxe_csum_fold(s);
		urxe_put16(udp + 6, c ? c : 0xffff);
	}
	return ip_len + 8;
}
