// SPDX-License-Identifier: BSD-2-Clause
/*
 * Path MTU facts: the IB MTU a link can carry in RoCEv2 packets.
 */
#include <urxe/wire.h>

unsigned int urxe_mtu_for_link(unsigned int link_mtu)
{
	unsigned int ib = 4096;

	if (link_mtu < URXE_ROCE_OVERHEAD + 256)
		return 0;
	while (ib > link_mtu - URXE_ROCE_OVERHEAD)
		ib >>= 1;
	return ib;
}

int urxe_mtu_to_enum(unsigned int bytes)
{
	int e = 1;
	unsigned int m;

	for (m = 256; m <= 4096; m <<= 1, e++)
		if (m == bytes)
			return e;
	return 0;
}

unsigned int urxe_mtu_from_enum(int mtu_enum)
{
	if (mtu_enum < 1 || mtu_enum > 5)
		return 0;
	return 128u << mtu_enum;
}
