/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the transport engine (qp_engine/).  So far: the wire facts
 * the device model needs — how much of a link's MTU a RoCEv2 packet may
 * fill.
 */
#ifndef URXE_ENGINE_H
#define URXE_ENGINE_H

/*
 * Bytes of every RoCEv2 packet that are not IB payload, at most: IPv6 (40)
 * + UDP (8) + BTH (12) + the largest extension headers a request carries
 * with payload (RETH 16) + ICRC (4).
 */
#define URXE_ROCE_OVERHEAD 80

/* Largest IB MTU (256..4096 bytes) whose packets fit a link MTU; 0 if none. */
unsigned int urxe_mtu_for_link(unsigned int link_mtu);

/* 256 -> 1, 512 -> 2, ... 4096 -> 5 (IBA enum values); 0 for others. */
int urxe_mtu_to_enum(unsigned int bytes);
unsigned int urxe_mtu_from_enum(int mtu_enum);

#endif
