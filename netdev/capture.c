// SPDX-License-Identifier: BSD-2-Clause
/*
 * URXE_PCAP: every frame a process sends and receives, written as a full
 * Ethernet/IP/UDP/RoCE frame to a pcapng file (one per process with %p).
 * pcapng, written here by hand (a section header, one interface, an
 * enhanced packet block per frame), because its packet blocks carry what
 * classic pcap cannot: the direction (epb_flags) and a comment on the
 * frames URXE_FAULTS touched ("urxe fault: dropped ..."), so a reader of
 * the capture sees what the injector did; libpcap (which writes classic
 * pcap only), tcpdump, tshark and the validator all read it.
 * A UDP socket hides the IP header, so it is rebuilt: addresses, ports,
 * TOS/TTL as the socket reported them and the IPv4 ID the caller knows
 * (0 for what urxe sends; solved from the ICRC for what it receives), so
 * that the ICRC of every captured frame checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <urxe/ipudp.h>
#include <urxe/log.h>
#include <urxe/netdev.h>
#include <urxe/util.h>

#define LINKTYPE_ETHERNET 1
#define SNAPLEN 262144
#define FRAME_MAX (14 + 40 + 8 + 9216)
#define COMMENT_MAX 256

/* pcapng block types and option codes (pcapng spec, section 4) */
#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du
#define OPT_ENDOFOPT 0
#define OPT_COMMENT 1
#define EPB_FLAGS 2
#define EPB_INBOUND 1u		/* epb_flags bits 0-1: direction */
#define EPB_OUTBOUND 2u

struct urxe_capture {
	pthread_mutex_t lock;
	int fd;
	bool failed;			/* a write failed (reported once) */
	uint8_t mac[6];
	uint8_t frame[FRAME_MAX];
	/* one enhanced packet block: header, frame, options, trailer */
	uint8_t blk[28 + FRAME_MAX + 4 + 8 + 4 + COMMENT_MAX + 4 + 4 + 4];
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

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Host order throughout: the section's byte-order magic says which. */
static size_t put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put_opt(uint8_t *p, uint16_t code, const void *val, size_t len)
{
	uint16_t h[2] = { code, (uint16_t)len };

	memcpy(p, h, 4);
	if (len)
		memcpy(p + 4, val, len);
	memset(p + 4 + len, 0, pad4(len) - len);
	return 4 + pad4(len);
}

/* Ends a block of @n bytes so far at @b: end of options, total length. */
static size_t close_block(uint8_t *b, size_t n, bool opts)
{
	if (opts)
		n += put_opt(b + n, OPT_ENDOFOPT, NULL, 0);
	n += 4;
	put32(b + 4, (uint32_t)n);
	put32(b + n - 4, (uint32_t)n);
	return n;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The section header and the one interface: an Ethernet "wire". */
static int write_header(int fd)
{
	static const char app[] = "urxe (URXE_PCAP)";
	uint8_t b[128];
	size_t n = 0, m;
	uint16_t v[2] = { 1, 0 };		/* pcapng 1.0 */
	uint16_t lt[2] = { LINKTYPE_ETHERNET, 0 };
	int64_t section_len = -1;		/* not given */

	n += put32(b, BT_SHB) + 4;
	n += put32(b + n, BYTE_ORDER_MAGIC);
	memcpy(b + n, v, 4);
	memcpy(b + n + 4, &section_len, 8);
	n += 12;
	n += put_opt(b + n, 4, app, sizeof(app) - 1);	/* shb_userappl */
	n = close_block(b, n, true);
	m = n;
	n += put32(b + n, BT_IDB) + 4;
	memcpy(b + n, lt, 4);
	n += 4;
	n += put32(b + n, SNAPLEN);
	n = m + close_block(b + m, n - m, false);
	return write_all(fd, b, n);
}

int urxe_capture_open(const char *spec, const uint8_t mac[6],
		      struct urxe_capture **out)
{
	char path[4096];
	struct urxe_capture *c;
	struct stat st;
	int rc;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	expand_path(spec, path, sizeof(path));
	/*
	 * The user's alone (0600): captures hold what the QPs carried.  Not
	 * through a link, and not into a file someone else made for us to
	 * fill (in /tmp, say): they would read it.
	 */
	c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		     0600);
	if (c->fd >= 0 && (fstat(c->fd, &st) || st.st_uid != geteuid())) {
		close(c->fd);
		c->fd = -1;
		errno = EACCES;
	}
	if (c->fd < 0) {
		rc = -errno;
		urxe_err("URXE_PCAP: cannot write %s: %s (it must be a file of yours, not a link)",
			 path, strerror(-rc));
		free(c);
		return rc;
	}
	rc = write_header(c->fd);
	if (rc) {
		urxe_err("URXE_PCAP: cannot write %s", path);
		close(c->fd);
		free(c);
		return rc;
	}
	memcpy(c->mac, mac, 6);
	pthread_mutex_init(&c->lock, NULL);
	urxe_info("capturing to %s", path);
	*out = c;
	return 0;
}

void urxe_capture_close(struct urxe_capture *c)
{
	if (!c)
		return;
	close(c->fd);
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

uint64_t urxe_capture_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The enhanced packet block of the frame in c->frame (@len bytes). */
static size_t build_epb(struct urxe_capture *c, size_t len, bool tx,
			const char *comment, uint64_t when_us)
{
	uint8_t *b = c->blk;
	/* if_tsresol absent: microseconds */
	uint64_t us = when_us ? when_us : urxe_capture_now_us();
	uint32_t flags = tx ? EPB_OUTBOUND : EPB_INBOUND;
	size_t n = 0, clen;

	n += put32(b, BT_EPB) + 4;
	n += put32(b + n, 0);			/* interface 0 */
	n += put32(b + n, (uint32_t)(us >> 32));
	n += put32(b + n, (uint32_t)us);
	n += put32(b + n, (uint32_t)len);	/* captured */
	n += put32(b + n, (uint32_t)len);	/* on the wire */
	memcpy(b + n, c->frame, len);
	memset(b + n + len, 0, pad4(len) - len);
	n += pad4(len);
	n += put_opt(b + n, EPB_FLAGS, &flags, 4);
	if (comment && *comment) {
		clen = strlen(comment);
		if (clen > COMMENT_MAX)
			clen = COMMENT_MAX;
		n += put_opt(b + n, OPT_COMMENT, comment, clen);
	}
	return close_block(b, n, true);
}

void urxe_capture_write(struct urxe_capture *c, const struct urxe_capture_pkt *p)
{
	size_t hl, n, len;

	if (!c)
		return;
	len = p->len;
	if (len > sizeof(c->frame) - 14 - 40 - 8)
		len = sizeof(c->frame) - 14 - 40 - 8;
	pthread_mutex_lock(&c->lock);
	hl = build_headers(c, p, p->len);
	memcpy(c->frame + hl, p->roce, len);
	n = build_epb(c, hl + len, p->tx, p->comment, p->when_us);
	/* One write per frame: a crashing process still leaves its truth. */
	if (write_all(c->fd, c->blk, n) && !c->failed) {
		c->failed = true;	/* said once: this is the packet path */
		urxe_warn("URXE_PCAP: a frame could not be written (disk full?); the capture is incomplete");
	}
	pthread_mutex_unlock(&c->lock);
}
