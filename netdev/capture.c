// SPDX-License-Identifier: BSD-2-Clause
/*
 * URXE_PCAP: every frame a process sends and receives, written as a full
 * Ethernet/IP/UDP/RoCE frame to a pcap file (one per process with %p).
 * libpcap is loaded with dlopen() only when capturing: Debian's libpcap
 * drags in dbus, systemd and more, which no verbs program should carry.
 * A UDP socket hides the IP header, so it is rebuilt: addresses, ports,
 * TOS/TTL as the socket reported them and the IPv4 ID the caller knows
 * (0 for what urxe sends; solved from the ICRC for what it receives), so
 * that the ICRC of every captured frame checks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#include "ipudp.h"

#define DLT_EN10MB 1
#define SNAPLEN 262144

/* The few libpcap entry points used, with their real prototypes' shapes. */
struct pcap_pkthdr_compat {
	struct timeval ts;
	uint32_t caplen;
	uint32_t len;
};

struct urxe_capture {
	pthread_mutex_t lock;
	void *lib;
	void *pcap;
	void *dumper;
	void (*dump)(unsigned char *, const struct pcap_pkthdr_compat *,
		     const unsigned char *);
	int (*flush)(void *);
	void (*dump_close)(void *);
	void (*close)(void *);
	uint8_t mac[6];
	uint8_t frame[14 + 40 + 8 + 9216];
};

static void expand_path(const char *spec, char *out, size_t len)
{
	size_t n = 0;

	for (; *spec && n + 1 < len; spec++) {
		if (spec[0] == '%' && spec[1] == 'p') {
			n += (size_t)snprintf(out + n, len - n, "%d", (int)getpid());
			spec++;
		} else {
			out[n++] = *spec;
		}
		if (n >= len)
			n = len - 1;
	}
	out[n] = '\0';
}

int urxe_capture_open(const char *spec, const uint8_t mac[6],
		      struct urxe_capture **out)
{
	void *(*open_dead)(int, int);
	void *(*dump_open)(void *, const char *);
	char path[4096];
	struct urxe_capture *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->lib = dlopen("libpcap.so.0.8", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib)
		c->lib = dlopen("libpcap.so", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		urxe_err("URXE_PCAP: cannot load libpcap (install libpcap0.8): %s",
			 dlerror());
		free(c);
		return -ENOENT;
	}
	open_dead = (void *(*)(int, int))dlsym(c->lib, "pcap_open_dead");
	dump_open = (void *(*)(void *, const char *))dlsym(c->lib, "pcap_dump_open");
	*(void **)&c->dump = dlsym(c->lib, "pcap_dump");
	*(void **)&c->flush = dlsym(c->lib, "pcap_dump_flush");
	*(void **)&c->dump_close = dlsym(c->lib, "pcap_dump_close");
	*(void **)&c->close = dlsym(c->lib, "pcap_close");
	if (!open_dead || !dump_open || !c->dump || !c->flush ||
	    !c->dump_close || !c->close)
		goto err_lib;
	expand_path(spec, path, sizeof(path));
	c->pcap = open_dead(DLT_EN10MB, SNAPLEN);
	if (!c->pcap)
		goto err_lib;
	c->dumper = dump_open(c->pcap, path);
	if (!c->dumper) {
		urxe_err("URXE_PCAP: cannot write %s", path);
		c->close(c->pcap);
		goto err_lib;
	}
	memcpy(c->mac, mac, 6);
	pthread_mutex_init(&c->lock, NULL);
	urxe_info("capturing to %s", path);
	*out = c;
	return 0;

err_lib:
	dlclose(c->lib);
	free(c);
	return -EIO;
}

void urxe_capture_close(struct urxe_capture *c)
{
	if (!c)
		return;
	c->dump_close(c->dumper);
	c->close(c->pcap);
	dlclose(c->lib);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Builds Ethernet + IP + UDP in front of @len RoCE bytes; returns its size. */
static size_t build_headers(struct urxe_capture *c,
			    const struct urxe_capture_pkt *p, size_t len)
{
	struct urxe_ipudp h = {
		.src = p->src, .dst = p->dst, .tos = p->tos,
		.ttl = p->ttl ? p->ttl : 64, .ip_id = p->ip_id,
		.sport = p->sport, .dport = p->dport,
	};
	uint8_t *f = c->frame;
	bool v4 = urxe_gid_is_v4(p->src) && urxe_gid_is_v4(p->dst);

	memset(f, 0, 14);
	/* Our MAC on the side that is ours. */
	memcpy(p->tx ? f + 6 : f, c->mac, 6);
	urxe_put16(f + 12, v4 ? 0x0800 : 0x86dd);
	return 14 + urxe_ipudp_build(f + 14, &h, p->roce, len);
}

void urxe_capture_write(struct urxe_capture *c, const struct urxe_capture_pkt *p)
{
	struct pcap_pkthdr_compat h;
	size_t hl, len = p->len;

	if (!c)
		return;
	if (len > sizeof(c->frame) - 14 - 40 - 8)
		len = sizeof(c->frame) - 14 - 40 - 8;
	pthread_mutex_lock(&c->lock);
	hl = build_headers(c, p, p->len);
	memcpy(c->frame + hl, p->roce, len);
	gettimeofday(&h.ts, NULL);
	h.caplen = h.len = (uint32_t)(hl + len);
	c->dump((unsigned char *)c->dumper, &h, c->frame);
	/* Flushed per frame: a crashing process still leaves its truth. */
	c->flush(c->dumper);
	pthread_mutex_unlock(&c->lock);
}
