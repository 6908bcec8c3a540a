// SPDX-License-Identifier: BSD-2-Clause
/*
 * The device's addressing rules, as pure functions of an interface
 * description: the GID table (rxe_provider/gid.c) on loopback (one
 * ::ffff:127.117.h.l per slot, host/slot.c, at indexes 0 and 1) and
 * on a real interface (link-local from the MAC, then IPv4-mapped, then
 * IPv6, no duplicates, never past the table), the node GUID from the
 * MAC, and the active MTU a link carries (qp_engine/mtu.c: largest IB
 * MTU <= link MTU - 80).  And the words people read about them: the hint
 * naming the GID indexes that exist, and why ibv_modify_qp refused a mask
 * (rxe_provider/qp_state.c), by attribute name.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/engine.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "testutil.h"

static void gid_parse(const char *text, union ibv_gid *gid)
{
	ck_assert_msg(inet_pton(AF_INET6, text, gid->raw) == 1, "bad GID %s", text);
}

static void assert_gid(const union ibv_gid *got, const char *want, unsigned int idx)
{
	char buf[INET6_ADDRSTRLEN];
	union ibv_gid w;

	gid_parse(want, &w);
	inet_ntop(AF_INET6, got->raw, buf, sizeof(buf));
	ck_assert_msg(!memcmp(got->raw, w.raw, 16), "GID[%u] is %s, expected %s",
		      idx, buf, want);
}

static void assert_empty_from(const union ibv_gid *tbl, unsigned int from,
			      unsigned int len)
{
	static const union ibv_gid zero;
	unsigned int i;

	for (i = from; i < len; i++)
		ck_assert_msg(!memcmp(&tbl[i], &zero, sizeof(zero)),
			      "GID[%u] should be empty", i);
}

static void add_v4(struct urxe_iface *ifc, const char *a)
{
	struct urxe_ifaddr *e = &ifc->addrs[ifc->naddrs++];

	memset(e, 0, sizeof(*e));
	e->family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, a, &e->v4), 1);
}

static void add_v6(struct urxe_iface *ifc, const char *a)
{
	struct urxe_ifaddr *e = &ifc->addrs[ifc->naddrs++];

	memset(e, 0, sizeof(*e));
	e->family = AF_INET6;
	ck_assert_int_eq(inet_pton(AF_INET6, a, &e->v6), 1);
}

/* --- loopback: one address per slot --- */

struct slot_case {
	unsigned int slot;
	unsigned int h, l;	/* 127.117.h.l */
};

/* h = 1 + slot / 250, l = 1 + slot % 250, spelled out. */
static const struct slot_case slot_cases[] = {
	{ 1, 1, 2 },
	{ 2, 1, 3 },
	{ 249, 1, 250 },
	{ 250, 2, 1 },
	{ 251, 2, 2 },
	{ 499, 2, 250 },
	{ 500, 3, 1 },
	{ 999, 4, 250 },
	{ 1000, 5, 1 },
	{ 1021, 5, 22 },
	{ 1022, 5, 23 },
};

START_TEST(loopback_addr_formula)
{
	const struct slot_case *c = &slot_cases[_i];
	struct in_addr a = urxe_slot_loopback_addr(c->slot);
	uint32_t want = 127u << 24 | 117u << 16 | c->h << 8 | c->l;

	ck_assert_msg(ntohl(a.s_addr) == want, "slot %u: 0x%08x, expected 127.117.%u.%u",
		      c->slot, ntohl(a.s_addr), c->h, c->l);
}
END_TEST

START_TEST(loopback_table)
{
	const struct slot_case *c = &slot_cases[_i];
	struct urxe_iface ifc;
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	char want[64];

	/* lo's own addresses (127.0.0.1, ::1) never become GIDs. */
	memset(&ifc, 0, sizeof(ifc));
	ifc.loopback = true;
	ifc.has_ipv6 = true;
	ifc.mtu = 65536;
	add_v4(&ifc, "127.0.0.1");
	add_v6(&ifc, "::1");
	memset(tbl, 0xee, sizeof(tbl));

	/* Index 1 repeats index 0 (`-g 1`, the usual IPv4 index, works). */
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, c->slot, tbl, URXE_GID_TBL_LEN), 2);
	snprintf(want, sizeof(want), "::ffff:127.117.%u.%u", c->h, c->l);
	assert_gid(&tbl[0], want, 0);
	assert_gid(&tbl[1], want, 1);
	assert_empty_from(tbl, 2, URXE_GID_TBL_LEN);
	/* A table of one entry holds index 0 alone. */
	memset(tbl, 0xee, sizeof(tbl));
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, c->slot, tbl, 1), 1);
	assert_gid(&tbl[0], want, 0);
}
END_TEST

/* --- a real interface --- */

static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static void real_iface(struct urxe_iface *ifc, bool ipv6)
{
	memset(ifc, 0, sizeof(*ifc));
	snprintf(ifc->name, sizeof(ifc->name), "veth0");
	ifc->ifindex = 7;
	ifc->mtu = 1500;
	memcpy(ifc->mac, mac, 6);
	ifc->up = ifc->running = true;
	ifc->has_ipv6 = ipv6;
}

START_TEST(real_iface_order)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	struct urxe_iface ifc;

	real_iface(&ifc, true);
	/* Deliberately interleaved: the table orders by family, not by arrival. */
	add_v6(&ifc, "2001:db8::1");
	add_v4(&ifc, "198.18.0.1");
	add_v6(&ifc, "fe80::5054:ff:fe12:3456");	/* equals the default GID */
	add_v4(&ifc, "198.18.1.1");
	memset(tbl, 0xee, sizeof(tbl));

	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, URXE_GID_TBL_LEN), 4);
	/* 0x52 with the universal/local bit flipped is 0x50. */
	assert_gid(&tbl[0], "fe80::5054:ff:fe12:3456", 0);
	assert_gid(&tbl[1], "::ffff:198.18.0.1", 1);
	assert_gid(&tbl[2], "::ffff:198.18.1.1", 2);
	assert_gid(&tbl[3], "2001:db8::1", 3);
	assert_empty_from(tbl, 4, URXE_GID_TBL_LEN);
}
END_TEST

/* A link-local address not derived from the MAC (stable privacy) is its own GID. */
START_TEST(real_iface_other_link_local)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	struct urxe_iface ifc;

	real_iface(&ifc, true);
	ifc.mac[0] = 0x02;	/* locally administered: the flip clears the bit */
	add_v4(&ifc, "198.18.0.1");
	add_v6(&ifc, "fe80::1234:5678:9abc:def0");
	add_v4(&ifc, "198.18.0.1");	/* listed twice: one GID */

	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, URXE_GID_TBL_LEN), 3);
	assert_gid(&tbl[0], "fe80::0054:ff:fe12:3456", 0);
	assert_gid(&tbl[1], "::ffff:198.18.0.1", 1);
	assert_gid(&tbl[2], "fe80::1234:5678:9abc:def0", 2);
	assert_empty_from(tbl, 3, URXE_GID_TBL_LEN);
}
END_TEST

START_TEST(real_iface_no_ipv6)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	struct urxe_iface ifc;

	real_iface(&ifc, false);
	add_v4(&ifc, "198.18.0.1");
	add_v4(&ifc, "198.18.0.2");
	memset(tbl, 0xee, sizeof(tbl));

	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, URXE_GID_TBL_LEN), 2);
	assert_gid(&tbl[0], "::ffff:198.18.0.1", 0);
	assert_gid(&tbl[1], "::ffff:198.18.0.2", 1);
	assert_empty_from(tbl, 2, URXE_GID_TBL_LEN);

	/* No address at all: an empty table. */
	real_iface(&ifc, false);
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, URXE_GID_TBL_LEN), 0);
	assert_empty_from(tbl, 0, URXE_GID_TBL_LEN);
}
END_TEST

/*
 * More addresses than the table holds: the first ones win and nothing is
 * written past @len.  An interface carries at most URXE_IFACE_MAX_ADDRS
 * addresses, so the overflow is provoked with a shorter table.
 */
START_TEST(table_overflow)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	struct urxe_iface ifc;
	unsigned int i, n;
	char a[32];

	real_iface(&ifc, true);
	for (i = 0; i < URXE_IFACE_MAX_ADDRS; i++) {
		snprintf(a, sizeof(a), "198.18.0.%u", i + 1);
		add_v4(&ifc, a);
	}
	memset(tbl, 0xee, sizeof(tbl));
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, 4), 4);
	assert_gid(&tbl[0], "fe80::5054:ff:fe12:3456", 0);
	assert_gid(&tbl[1], "::ffff:198.18.0.1", 1);
	assert_gid(&tbl[3], "::ffff:198.18.0.3", 3);
	for (i = 4; i < URXE_GID_TBL_LEN; i++)
		for (n = 0; n < 16; n++)
			ck_assert_uint_eq(tbl[i].raw[n], 0xee);

	/* The fullest interface still fits the device's table. */
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, URXE_GID_TBL_LEN),
			  URXE_IFACE_MAX_ADDRS + 1);
	assert_gid(&tbl[URXE_IFACE_MAX_ADDRS], "::ffff:198.18.0.14",
		   URXE_IFACE_MAX_ADDRS);
	assert_empty_from(tbl, URXE_IFACE_MAX_ADDRS + 1, URXE_GID_TBL_LEN);

	/* A loopback device given a zero-length table writes nothing. */
	ifc.loopback = true;
	memset(tbl, 0xee, sizeof(tbl));
	ck_assert_uint_eq(urxe_gid_table_build(&ifc, 3, tbl, 0), 0);
	ck_assert_uint_eq(tbl[0].raw[0], 0xee);
}
END_TEST

/* --- node GUID --- */

struct guid_case {
	uint8_t mac[6];
	uint8_t guid[8];	/* in memory (network) order */
};

static const struct guid_case guid_cases[] = {
	{ { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55 },
	  { 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 } },
	{ { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
	  { 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
	  { 0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01 } },
	/* loopback's all-zero MAC (docs/design.md: 0200:00ff:fe00:0000) */
	{ { 0 }, { 0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x00 } },
};

START_TEST(guid_from_mac)
{
	const struct guid_case *c = &guid_cases[_i];
	uint64_t guid = urxe_guid_from_mac(c->mac);

	ck_assert_mem_eq(&guid, c->guid, 8);
}
END_TEST

/* --- MTU --- */

struct mtu_case {
	unsigned int link;
	unsigned int ib;
};

static const struct mtu_case mtu_cases[] = {
	{ 65536, 4096 },
	{ 9000, 4096 },
	{ 4176, 4096 },	/* 4096 + 80 */
	{ 4175, 2048 },
	{ 2128, 2048 },
	{ 2127, 1024 },
	{ 1500, 1024 },
	{ 1104, 1024 },
	{ 1103, 512 },
	{ 1100, 512 },
	{ 592, 512 },
	{ 591, 256 },
	{ 336, 256 },
	{ 335, 0 },
	{ 80, 0 },
	{ 0, 0 },
};

START_TEST(mtu_for_link)
{
	const struct mtu_case *c = &mtu_cases[_i];

	ck_assert_msg(urxe_mtu_for_link(c->link) == c->ib,
		      "link MTU %u: IB MTU %u, expected %u", c->link,
		      urxe_mtu_for_link(c->link), c->ib);
}
END_TEST

struct mtu_enum_case {
	unsigned int bytes;
	int e;
};

static const struct mtu_enum_case mtu_enum_cases[] = {
	{ 256, IBV_MTU_256 },
	{ 512, IBV_MTU_512 },
	{ 1024, IBV_MTU_1024 },
	{ 2048, IBV_MTU_2048 },
	{ 4096, IBV_MTU_4096 },
};

START_TEST(mtu_enum)
{
	const struct mtu_enum_case *c = &mtu_enum_cases[_i];

	ck_assert_int_eq(urxe_mtu_to_enum(c->bytes), c->e);
	ck_assert_uint_eq(urxe_mtu_from_enum(c->e), c->bytes);
}
END_TEST

START_TEST(mtu_enum_invalid)
{
	static const unsigned int bad_bytes[] = { 0, 128, 255, 300, 1500, 8192, 65536 };
	static const int bad_enums[] = { -1, 0, 6, 7, 100 };
	unsigned int i;

	for (i = 0; i < URXE_ARRAY_SIZE(bad_bytes); i++)
		ck_assert_int_eq(urxe_mtu_to_enum(bad_bytes[i]), 0);
	for (i = 0; i < URXE_ARRAY_SIZE(bad_enums); i++)
		ck_assert_uint_eq(urxe_mtu_from_enum(bad_enums[i]), 0);
}
END_TEST

/* The hint of a wrong GID index: the indexes that exist, and `-g`. */
START_TEST(gid_hint)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];
	struct urxe_iface ifc;
	char buf[256];

	memset(&ifc, 0, sizeof(ifc));
	ifc.loopback = true;
	urxe_gid_table_build(&ifc, 4, tbl, URXE_GID_TBL_LEN);
	urxe_gid_hint(tbl, URXE_GID_TBL_LEN, buf, sizeof(buf));
	ck_assert_str_eq(buf, "(this device has GID[0] and GID[1], ::ffff:127.117.1.5); use -g 0 or -g 1");

	real_iface(&ifc, true);
	add_v4(&ifc, "198.18.0.1");
	add_v6(&ifc, "2001:db8::1");
	urxe_gid_table_build(&ifc, 0, tbl, URXE_GID_TBL_LEN);
	urxe_gid_hint(tbl, URXE_GID_TBL_LEN, buf, sizeof(buf));
	ck_assert_str_eq(buf, "(this device has GID[0] fe80::5054:ff:fe12:3456, GID[1] ::ffff:198.18.0.1, GID[2] 2001:db8::1); use -g 0, -g 1 or -g 2");

	memset(tbl, 0, sizeof(tbl));
	urxe_gid_hint(tbl, URXE_GID_TBL_LEN, buf, sizeof(buf));
	ck_assert_str_eq(buf, "(this device has no GID: its interface has no address)");
	/* Cut short, still a string. */
	urxe_gid_table_build(&ifc, 0, tbl, URXE_GID_TBL_LEN);
	urxe_gid_hint(tbl, URXE_GID_TBL_LEN, buf, 20);
	ck_assert_str_eq(buf, "(this device has GI");
}
END_TEST

/* --- ibv_modify_qp's refusals, by name --- */

struct explain_case {
	enum ibv_qp_type type;
	enum ibv_qp_state cur, next;
	int mask;
	const char *want;
};

static const struct explain_case explain_cases[] = {
	{ IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
	  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_SQ_PSN |
	  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	  "missing IBV_QP_RQ_PSN, IBV_QP_DEST_QPN; not allowed: IBV_QP_SQ_PSN" },
	{ IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
	  IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	  "missing IBV_QP_PKEY_INDEX" },
	{ IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
	  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
	  IBV_QP_ACCESS_FLAGS,
	  "not allowed: IBV_QP_ACCESS_FLAGS" },
	{ IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTS, IBV_QP_STATE,
	  "RESET->RTS is no transition (IBA 10.3.1)" },
	{ IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT,
	  IBV_QP_STATE | IBV_QP_CUR_STATE,
	  "not allowed: IBV_QP_CUR_STATE (only from RTR, RTS, SQD or SQE)" },
};

START_TEST(modify_explain)
{
	const struct explain_case *c = &explain_cases[_i];
	char buf[512];

	ck_assert(!urxe_qp_mask_ok(c->cur, c->next, c->type, c->mask));
	urxe_qp_mask_explain(c->cur, c->next, c->type, c->mask, buf, sizeof(buf));
	ck_assert_str_eq(buf, c->want);
}
END_TEST

START_TEST(mask_names)
{
	char buf[128];

	urxe_qp_mask_names(IBV_QP_AV | IBV_QP_DEST_QPN | (1 << 30), buf,
			   sizeof(buf));
	ck_assert_str_eq(buf, "IBV_QP_AV, IBV_QP_DEST_QPN, 0x40000000");
	urxe_qp_mask_names(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	urxe_qp_mask_names(IBV_QP_STATE | IBV_QP_AV, buf, 16);
	ck_assert_str_eq(buf, "IBV_QP_STATE, I");	/* cut, still a string */
	ck_assert_str_eq(urxe_qp_attr_range(IBV_QP_TIMEOUT), "timeout 0..31");
}
END_TEST

static Suite *gid_suite(void)
{
	Suite *s = suite_create("gid");
	TCase *tc;

	tc = tu_tcase(s, "loopback", NULL, NULL);
	tcase_add_loop_test(tc, loopback_addr_formula, 0,
			    (int)URXE_ARRAY_SIZE(slot_cases));
	tcase_add_loop_test(tc, loopback_table, 0, (int)URXE_ARRAY_SIZE(slot_cases));

	tc = tu_tcase(s, "interface", NULL, NULL);
	tcase_add_test(tc, real_iface_order);
	tcase_add_test(tc, real_iface_other_link_local);
	tcase_add_test(tc, real_iface_no_ipv6);
	tcase_add_test(tc, table_overflow);
	tcase_add_loop_test(tc, guid_from_mac, 0, (int)URXE_ARRAY_SIZE(guid_cases));

	tc = tu_tcase(s, "mtu", NULL, NULL);
	tcase_add_loop_test(tc, mtu_for_link, 0, (int)URXE_ARRAY_SIZE(mtu_cases));
	tcase_add_loop_test(tc, mtu_enum, 0, (int)URXE_ARRAY_SIZE(mtu_enum_cases));
	tcase_add_test(tc, mtu_enum_invalid);

	tc = tu_tcase(s, "messages", NULL, NULL);
	tcase_add_test(tc, gid_hint);
	tcase_add_loop_test(tc, modify_explain, 0,
			    (int)URXE_ARRAY_SIZE(explain_cases));
	tcase_add_test(tc, mask_names);
	return s;
}

int main(void)
{
	return tu_run(gid_suite());
}
