// SPDX-License-Identifier: BSD-2-Clause
/*
 * GID table and node GUID derivation.  Pure functions of an interface
 * description, so the rules are unit-tested without a network.
 */
#include <string.h>

#include <urxe/provider.h>
#include <urxe/util.h>

/* EUI-64 from a MAC, universal/local bit flipped (RFC 4291 appendix A). */
static void eui64_from_mac(const uint8_t mac[6], uint8_t eui[8])
{
	eui[0] = mac[0] ^ 0x02;
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
}

uint64_t urxe_guid_from_mac(const uint8_t mac[6])
{
	uint64_t guid;
	uint8_t eui[8];

	eui64_from_mac(mac, eui);
	memcpy(&guid, eui, sizeof(guid));
	return guid;
}

static void gid_from_v4(union ibv_gid *gid, struct in_addr a)
{
	urxe_gid_from_v4(gid->raw, &a);
}

static bool gid_present(const union ibv_gid *tbl, unsigned int n,
			const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!memcmp(&tbl[i], gid, sizeof(*gid)))
			return true;
	return false;
}

static unsigned int add_gid(union ibv_gid *tbl, unsigned int n,
			    unsigned int len, const union ibv_gid *gid)
{
	if (n == len || gid_present(tbl, n, gid))
		return n;
	tbl[n] = *gid;
	return n + 1;
}

unsigned int urxe_gid_table_build(const struct urxe_iface *ifc,
				  unsigned int slot, union ibv_gid *tbl,
				  unsigned int len)
{
	union ibv_gid gid;
	unsigned int n = 0, i;

	memset(tbl, 0, len * sizeof(*tbl));
	if (ifc->loopback) {
		/*
		 * Every process shares lo; each slot owns its own address so
		 * that any number of them bind port 4791 unprivileged.
		 */
		gid_from_v4(&gid, urxe_slot_loopback_addr(slot));
		return add_gid(tbl, n, len, &gid);
	}
	if (ifc->has_ipv6) {
		memset(&gid, 0, sizeof(gid));
		gid.raw[0] = 0xfe;
		gid.raw[1] = 0x80;
		eui64_from_mac(ifc->mac, &gid.raw[8]);
		n = add_gid(tbl, n, len, &gid);
	}
	for (i = 0; i < ifc->naddrs; i++) {
		if (ifc->addrs[i].family != AF_INET)
			continue;
		gid_from_v4(&gid, ifc->addrs[i].v4);
		n = add_gid(tbl, n, len, &gid);
	}
	for (i = 0; i < ifc->naddrs; i++) {
		if (ifc->addrs[i].family != AF_INET6)
			continue;
		memcpy(gid.raw, &ifc->addrs[i].v6, 16);
		n = add_gid(tbl, n, len, &gid);
	}
	return n;
}
