/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers every layer uses: container_of, array sizes, the
 * visibility marker for the few symbols the library exports.
 */
#ifndef URXE_UTIL_H
#define URXE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define urxe_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define URXE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Marks a definition that the version script exports. */
#define URXE_EXPORT __attribute__((visibility("default")))

/* Is this 16-byte GID an IPv4-mapped address (::ffff:a.b.c.d)? */
static inline bool urxe_gid_is_v4(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, sizeof(prefix));
}

#define urxe_likely(x) __builtin_expect(!!(x), 1)
#define urxe_unlikely(x) __builtin_expect(!!(x), 0)

#endif
