// SPDX-License-Identifier: BSD-2-Clause
/*
 * GID table and node GUID derivation.  Pure functions of an interface
 * description, so the rules are unit-tested without a network.
 */
#include <arpa/inet.h>
#include <stdio.h>
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
		 * that any number of them bind port 4791 unprivileged.  Index
		 * 1 repeats it: it is the IPv4 GID of a typical kernel rxe
		 * device (after the link-local one), so `-g 1` from every
		 * tutorial works here too.  Never a shared address: the
		 * source of what QPs send is their own slot's either way.
		 */
		gid_from_v4(&gid, urxe_slot_loopback_addr(slot));
		for (i = 0; i < URXE_GID_LOOPBACK_LEN && i < len; i++)
			tbl[i] = gid;
		return i;
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

/* "-g 0", "-g 0 or -g 1", "-g 0, -g 1 or -g 2"... */
static size_t hint_use(char *buf, size_t len, const unsigned int *idx,
		       unsigned int n)
{
	size_t off = 0;
	unsigned int i;

	for (i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s-g %u",
					!i ? "" : i + 1 == n ? " or " : ", ",
					idx[i]);
	return off;
}

size_t urxe_gid_hint(const union ibv_gid *tbl, unsigned int len, char *buf,
		     size_t buflen)
{
	static const union ibv_gid zero;
	char a[INET6_ADDRSTRLEN];
	unsigned int idx[URXE_GID_TBL_LEN], n = 0, i;
	size_t off;
	bool same = true;

	for (i = 0; i < len && n < URXE_GID_TBL_LEN; i++)
		if (memcmp(&tbl[i], &zero, sizeof(zero))) {
			idx[n] = i;
			same = same && (!n || !memcmp(&tbl[i], &tbl[idx[0]],
						      sizeof(tbl[i])));
			n++;
		}
	if (!n)
		return (size_t)snprintf(buf, buflen,
					"(this device has no GID: its interface has no address)");
	off = (size_t)snprintf(buf, buflen, "(this device has ");
	for (i = 0; i < n && off < buflen; i++) {
		inet_ntop(AF_INET6, tbl[idx[i]].raw, a, sizeof(a));
		/* Loopback: "GID[0] and GID[1], ::ffff:127.117.1.2". */
		if (same)
			off += (size_t)snprintf(buf + off, buflen - off,
						"%sGID[%u]%s%s",
						!i ? "" : i + 1 == n ? " and " : ", ",
						idx[i], i + 1 == n ? ", " : "",
						i + 1 == n ? a : "");
		else
			off += (size_t)snprintf(buf + off, buflen - off,
						"%sGID[%u] %s", i ? ", " : "",
						idx[i], a);
	}
	if (off < buflen)
		off += (size_t)snprintf(buf + off, buflen - off, "); use ");
	if (off < buflen)
		off += hint_use(buf + off, buflen - off, idx, n);
	return off;
}
