/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers every layer uses: container_of, array sizes, the
 * visibility marker for the few symbols the library exports, big-endian
 * field access.
 */
#ifndef URXE_UTIL_H
#define URXE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define urxe_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define URXE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Marks a definition that the version script exports. */
#define URXE_EXPORT __attribute__((visibility("default")))

/* Is this 16-byte GID an IPv4-mapped address (::ffff:a.b.c.d)? */
static inline bool urxe_gid_is_v4(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };
	uint64_t a, p;
	uint32_t b, q;

	/* memcmp() in two loads: this is asked several times a packet. */
	memcpy(&a, gid, 8);
	memcpy(&b, gid + 8, 4);
	memcpy(&p, prefix, 8);
	memcpy(&q, prefix + 8, 4);
	return a == p && b == q;
}

/*
 * A total order of 16-byte GIDs (not memcmp's): for grouping, inline.
 */
static inline int urxe_gid_cmp(const uint8_t *a, const uint8_t *b)
{
	uint64_t x[2], y[2];

	memcpy(x, a, 16);
	memcpy(y, b, 16);
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static inline bool urxe_gid_eq(const uint8_t *a, const uint8_t *b)
{
	return !urxe_gid_cmp(a, b);
}

/* Writes @gid as the IPv4-mapped address of the 4 bytes at @addr. */
static inline void urxe_gid_from_v4(uint8_t *gid, const void *addr)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

/* Is @gid a multicast address (IPv4 224.0.0.0/4, IPv6 ff00::/8)? */
static inline bool urxe_gid_is_mcast(const uint8_t *gid)
{
	return urxe_gid_is_v4(gid) ? (gid[12] & 0xf0) == 0xe0 : gid[0] == 0xff;
}

/* XORs @v into the little-endian 32-bit field at @p (an ICRC). */
static inline void urxe_xor_le32(uint8_t *p, uint32_t v)
{
	p[0] ^= (uint8_t)v;
	p[1] ^= (uint8_t)(v >> 8);
	p[2] ^= (uint8_t)(v >> 16);
	p[3] ^= (uint8_t)(v >> 24);
}

/* Big-endian (network order) fields, read and written with shifts. */
static inline uint16_t urxe_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t urxe_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t urxe_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t urxe_get64(const uint8_t *p)
{
	return (uint64_t)urxe_get32(p) << 32 | urxe_get32(p + 4);
}

static inline void urxe_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void urxe_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void urxe_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void urxe_put64(uint8_t *p, uint64_t v)
{
	urxe_put32(p, (uint32_t)(v >> 32));
	urxe_put32(p + 4, (uint32_t)v);
}

/* The smallest power of two >= @n (1 for 0): ring sizes. */
static inline uint32_t urxe_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* In a spin-wait: lets the core's other thread (and the bus) breathe. */
static inline void urxe_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#define urxe_likely(x) __builtin_expect(!!(x), 1)
#define urxe_unlikely(x) __builtin_expect(!!(x), 0)

/* Bytes in @n iovecs. */
static inline size_t urxe_iov_len(const struct iovec *iov, unsigned int n)
{
	size_t len = 0;

	while (n--)
		len += iov[n].iov_len;
	return len;
}

/*
 * Copies the pieces of @iov into @dst, in order, while they fit in @cap
 * bytes; returns the bytes copied.
 */
static inline size_t urxe_iov_gather(const struct iovec *iov, unsigned int n,
				     uint8_t *dst, size_t cap)
{
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < n && len + iov[i].iov_len <= cap; i++) {
		memcpy(dst + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	return len;
}

#endif
