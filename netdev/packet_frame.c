// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet backend's frames, apart from its rings (packet.c): the demux
 * filter a ring socket gets (the slot's QPNs, compiled by a dlopen()ed
 * libpcap), and one RoCEv2 frame built (Ethernet, IPv4 or IPv6, UDP, the
 * RoCE bytes) and parsed.  Pure functions, which the tests call.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <urxe/host.h>
#include <urxe/ipudp.h>
#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#include "nl.h"
#include "packet_int.h"

#define SNAPLEN 262144			/* the filter accepts whole frames */
#define DLT_EN10MB 1

/* ---- the demux filter ---- */

/*
 * @b is the BTH as a pcap byte-offset base ("udp[8+" or "ip6[48+").  The
 * slot is bits 23..14 of the destination QPN (BTH bytes 5..7) — of the
 * SRQ number in XRCETH (BTH + 12) for XRC requests, which name the SRQ
 * they go to; XRC responses (opcodes 0x0D..0x12) carry none.  Multicast
 * QPN 0xFFFFFF reaches every instance.
 */
static int cond_expr(char *buf, size_t len, const char *b, unsigned int slot)
{
	char xrc[160];

	snprintf(xrc, sizeof(xrc),
		 "(%s0] & 0xe0 = 0xa0 and (%s0] & 0x1f < 0x0d or %s0] & 0x1f > 0x12))",
		 b, b, b);
	return snprintf(buf, len,
			"((%s and %s13:2] >> 6 = %u) or (not %s and %s5:2] >> 6 = %u) or (%s5:2] = 0xffff and %s7] = 0xff))",
			xrc, b, slot, xrc, b, slot, b, b);
}

int urxe_packet_filter_expr(unsigned int slot, char *buf, size_t len)
{
	char v4[512], v6[512];
	int n;

	if (slot < URXE_SLOT_FIRST || slot > URXE_SLOT_LAST)
		return -EINVAL;
	cond_expr(v4, sizeof(v4), "udp[8+", slot);
	cond_expr(v6, sizeof(v6), "ip6[48+", slot);
	/* libpcap has no udp[] over IPv6: its header is 40 bytes, fixed. */
	n = snprintf(buf, len,
		     "(ip and udp dst port %d and %s) or (ip6 and ip6[6] = 17 and ip6[42:2] = %d and %s)",
		     URXE_UDP_PORT, v4, URXE_UDP_PORT, v6);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* libpcap's struct bpf_program; its instructions are struct sock_filter. */
struct bpf_prog_compat {
	unsigned int bf_len;
	struct sock_filter *bf_insns;
};

int urxe_packet_filter_compile(unsigned int slot, struct sock_fprog *out)
{
	void *(*open_dead)(int, int);
	int (*compile)(void *, struct bpf_prog_compat *, const char *, int,
		       uint32_t);
	void (*freecode)(struct bpf_prog_compat *);
	void (*pclose)(void *);
	char *(*geterr)(void *);
	struct bpf_prog_compat prog;
	char expr[2048];
	void *lib, *pc;
	int rc;

	rc = urxe_packet_filter_expr(slot, expr, sizeof(expr));
	if (rc)
		return rc;
	lib = dlopen("libpcap.so.0.8", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libpcap.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		urxe_err("packet backend: cannot load libpcap to compile the receive filter (install libpcap0.8): %s",
			 dlerror());
		return -ENOENT;
	}
	*(void **)&open_dead = dlsym(lib, "pcap_open_dead");
	*(void **)&compile = dlsym(lib, "pcap_compile");
	*(void **)&freecode = dlsym(lib, "pcap_freecode");
	*(void **)&pclose = dlsym(lib, "pcap_close");
	*(void **)&geterr = dlsym(lib, "pcap_geterr");
	rc = -EIO;
	if (!open_dead || !compile || !freecode || !pclose || !geterr)
		goto out_lib;
	/* Whole frames: the accept length is the snapshot length. */
	pc = open_dead(DLT_EN10MB, SNAPLEN);
	if (!pc)
		goto out_lib;
	if (compile(pc, &prog, expr, 1, 0xffffffffu)) {
		urxe_err("packet backend: libpcap rejects the filter: %s",
			 geterr(pc));
		goto out_pcap;
	}
	out->len = (unsigned short)prog.bf_len;
	out->filter = malloc(prog.bf_len * sizeof(*prog.bf_insns));
	if (out->filter) {
		memcpy(out->filter, prog.bf_insns,
		       prog.bf_len * sizeof(*prog.bf_insns));
		rc = 0;
	} else {
		rc = -ENOMEM;
	}
	freecode(&prog);
out_pcap:
	pclose(pc);
out_lib:
	dlclose(lib);
	return rc;
}

/* ---- frames ---- */

int urxe_packet_build(const uint8_t dmac[6], const uint8_t smac[6],
		      const struct urxe_frame_desc *o, uint8_t *f, size_t cap,
		      unsigned int mtu)
{
	bool v4 = urxe_gid_is_v4(o->dst) && urxe_gid_is_v4(o->src);
	size_t ip_len = v4 ? 20 : 40, len = urxe_iov_len(o->iov, o->niov), hl;
	struct urxe_ipudp h = {
		.src = o->src, .dst = o->dst, .tos = o->tos, .ttl = 64,
		.ip_id = 0,			/* the ICRC assumes it */
		.sport = o->sport, .dport = URXE_UDP_PORT,
	};

	hl = 14 + ip_len + 8;
	if (hl + len > cap || ip_len + 8 + len > mtu || len > 0xffff - 48)
		return -EMSGSIZE;
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	urxe_put16(f + 12, v4 ? ETH_P_IP : ETH_P_IPV6);
	urxe_iov_gather(o->iov, o->niov, f + hl, len);
	urxe_ipudp_build(f + 14, &h, f + hl, len);
	return (int)(hl + len);
}

int urxe_packet_parse(const uint8_t *f, uint32_t len, struct urxe_packet_in *in)
{
	const uint8_t *ip = f + 14, *udp;
	uint32_t ip_len, ulen;
	uint16_t type;

	if (len < 14 + 20 + 8)
		return -EINVAL;
	type = urxe_get16(f + 12);
	if (type == ETH_P_IP) {
		ip_len = (uint32_t)(ip[0] & 0xf) * 4;
		if (ip[0] >> 4 != 4 || ip_len < 20 || ip[9] != IPPROTO_UDP ||
		    (urxe_get16(ip + 6) & 0x3fff) ||	/* a fragment */
		    urxe_get16(ip + 2) < ip_len + 8 ||
		    14u + urxe_get16(ip + 2) > len ||
		    urxe_csum_fold(urxe_csum_add(0, ip, ip_len)) != 0xffff)
			return -EINVAL;
		urxe_gid_from_v4(in->src, ip + 12);
		urxe_gid_from_v4(in->dst, ip + 16);
		in->tos = ip[1];
		in->ttl = ip[8];
		in->ip_id = urxe_get16(ip + 4);
		ulen = urxe_get16(ip + 2) - ip_len;
	} else if (type == ETH_P_IPV6) {
		ip_len = 40;
		if (len < 14 + 40 + 8 || ip[0] >> 4 != 6 ||
		    ip[6] != IPPROTO_UDP || 14u + 40 + urxe_get16(ip + 4) > len)
			return -EINVAL;
		memcpy(in->src, ip + 8, 16);
		memcpy(in->dst, ip + 24, 16);
		in->tos = (uint8_t)((ip[0] & 0xf) << 4 | ip[1] >> 4);
		in->ttl = ip[7];
		in->ip_id = 0;
		ulen = urxe_get16(ip + 4);
	} else {
		return -EINVAL;
	}
	udp = ip + ip_len;
	if (ulen < 8 || urxe_get16(udp + 4) != ulen)
		return -EINVAL;
	in->ip = ip;
	in->ip_len = ip_len;
	in->sport = urxe_get16(udp);
	in->dport = urxe_get16(udp + 2);
	in->roce = udp + 8;
	in->len = ulen - 8;
	in->frame = f;
	in->frame_len = 14 + ip_len + ulen;
	return in->dport == URXE_UDP_PORT ? 0 : -EINVAL;
}
