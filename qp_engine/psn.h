/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 24-bit PSN arithmetic (IBA 9.7.1): PSNs wrap; a PSN is "before" another
 * when it lies in the half of the space behind it.
 */
#ifndef URXE_PSN_H
#define URXE_PSN_H

#include <stdbool.h>
#include <stdint.h>

#include "hdr.h"

static inline uint32_t urxe_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & URXE_PSN_MASK;
}

/* a - b as a signed distance in (-2^23, 2^23]. */
static inline int32_t urxe_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool urxe_psn_before(uint32_t a, uint32_t b)
{
	return urxe_psn_diff(a, b) < 0;
}

#endif
