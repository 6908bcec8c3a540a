/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finding the RoCEv2 packet in a captured frame: the link header of the
 * capture's link type, the IP and UDP headers, port 4791.  Shared by the
 * frame validator (urxe-validate, urxe trace --check) and urxe trace, so
 * that both see the same packets in a capture.
 */
#ifndef URXE_TOOLS_FRAME_H
#define URXE_TOOLS_FRAME_H

#include <stdbool.h>
#include <stdint.h>

struct urxe_frame {
	bool v6;
	const uint8_t *ip;		/* the IP header */
	uint32_t ip_len;		/* its length */
	uint32_t rest;			/* bytes from the IP header on */
	const uint8_t *udp;
	const uint8_t *roce;		/* BTH .. ICRC, per the UDP length */
	uint32_t roce_len;
	uint8_t src[16], dst[16];	/* the addresses as GIDs (v4-mapped) */
};

/*
 * Locates the UDP/4791 datagram in the @caplen bytes at @p, a frame of
 * pcap link type @dlt.  1 with @f filled (roce/roce_len from the UDP
 * length, which the caller checks against rest); 0 when the frame holds
 * no RoCEv2 (another protocol, an IP fragment, an unknown link type).
 */
int urxe_frame_locate(int dlt, const uint8_t *p, uint32_t caplen,
		      struct urxe_frame *f);

/* The UDP length agrees with the IP length (the frame is whole). */
bool urxe_frame_whole(const struct urxe_frame *f);

/* The packet's ICRC is the one its headers and payload give. */
bool urxe_frame_icrc_ok(const struct urxe_frame *f);

#endif
