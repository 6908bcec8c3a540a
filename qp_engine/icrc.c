// SPDX-License-Identifier: BSD-2-Clause
/*
 * ICRC computation with ISA-L's crc32_gzip_refl (the zlib CRC-32, folded
 * with carry-less multiplication: ~59 GB/s on 4 KiB here).
 */
#include <isa-l/crc.h>
#include <string.h>

#include "hdr.h"
#include "icrc.h"

#define IPV6_HDR_LEN 40
#define IPV4_MIN_HDR_LEN 20
#define UDP_HDR_LEN 8

void urxe_icrc_begin(struct urxe_icrc *c, const uint8_t *ip, size_t ip_len,
		     const uint8_t *udp, const uint8_t *bth)
{
	static const uint8_t lrh_ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	uint8_t buf[60 + UDP_HDR_LEN + URXE_BTH_LEN];
	uint8_t *u, *b;

	if (ip_len > 60)
		ip_len = 60;
	memcpy(buf, ip, ip_len);
	if ((ip[0] >> 4) == 6) {
		buf[0] |= 0x0f;			/* traffic class, high nibble */
		buf[1] = buf[2] = buf[3] = 0xff;	/* class low, flow label */
		buf[7] = 0xff;			/* hop limit */
	} else {
		buf[1] = 0xff;			/* TOS */
		buf[8] = 0xff;			/* TTL */
		buf[10] = buf[11] = 0xff;	/* header checksum */
	}
	u = buf + ip_len;
	memcpy(u, udp, UDP_HDR_LEN);
	u[6] = u[7] = 0xff;			/* UDP checksum */
	b = u + UDP_HDR_LEN;
	memcpy(b, bth, URXE_BTH_LEN);
	b[4] = 0xff;				/* FECN, BECN, reserved */
	c->crc = crc32_gzip_refl(0, lrh_ones, sizeof(lrh_ones));
	c->crc = crc32_gzip_refl(c->crc, buf, ip_len + UDP_HDR_LEN + URXE_BTH_LEN);
}

void urxe_icrc_update(struct urxe_icrc *c, const void *p, size_t len)
{
	c->crc = crc32_gzip_refl(c->crc, p, len);
}

uint32_t urxe_icrc_end(const struct urxe_icrc *c)
{
	/* crc32_gzip_refl already returns the final (inverted) value. */
	return c->crc;
}

uint32_t urxe_icrc_frame(const uint8_t *ip, size_t len, bool *ok)
{
	size_t ip_len, hdrs;
	struct urxe_icrc c;

	*ok = false;
	if (len < 1)
		return 0;
	if ((ip[0] >> 4) == 6)
		ip_len = IPV6_HDR_LEN;
	else if ((ip[0] >> 4) == 4)
		ip_len = (size_t)(ip[0] & 0xf) * 4;
	else
		return 0;
	if (ip_len < IPV4_MIN_HDR_LEN || ip_len > 60)
		return 0;
	hdrs = ip_len + UDP_HDR_LEN + URXE_BTH_LEN;
	if (len < hdrs + URXE_ICRC_LEN)
		return 0;
	urxe_icrc_begin(&c, ip, ip_len, ip + ip_len, ip + ip_len + UDP_HDR_LEN);
	urxe_icrc_update(&c, ip + hdrs, len - hdrs - URXE_ICRC_LEN);
	*ok = true;
	return urxe_icrc_end(&c);
}
