// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device, context and PD verbs of the built libibverbs.so.1, held to their
 * man pages: ibv_get_device_list(3) (num optional, NULL-terminated, empty
 * but non-NULL when no interface exists, devices outliving the list, one
 * object per device), names/GUIDs/indexes, one shared instance per
 * (process, device), ibv_close_device, ibv_alloc_pd/ibv_dealloc_pd (EBUSY
 * with users), fork (ibv_fork_init, IBV_FORK_UNNEEDED, dead inherited
 * contexts, a fresh slot in the child), port and device attributes on lo,
 * the packet backend refusing to open, and a bad URXE_FAULTS failing the
 * open (EINVAL).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "testutil.h"
#include "verbs_util.h"

static struct tu_sandbox sb;

/* Contexts a test has open: a failed test's are closed by teardown. */
static struct ibv_context *live[8];

static struct ibv_context *keep(struct ibv_context *c)
{
	size_t i;

	for (i = 0; c && i < URXE_ARRAY_SIZE(live); i++)
		if (!live[i]) {
			live[i] = c;
			break;
		}
	return c;
}

static void close_ctx(struct ibv_context *c)
{
	size_t i;

	for (i = 0; i < URXE_ARRAY_SIZE(live); i++)
		if (live[i] == c)
			live[i] = NULL;
	ck_assert_int_eq(ibv_close_device(c), 0);
}

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
}

static void teardown(void)
{
	size_t i;

	for (i = 0; i < URXE_ARRAY_SIZE(live); i++)
		if (live[i])
			ibv_close_device(live[i]);
	memset(live, 0, sizeof(live));
	tu_sandbox_fini(&sb);
}

/* The device called @name in @list, or NULL. */
static struct ibv_device *find(struct ibv_device **list, const char *name)
{
	int i;

	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	return NULL;
}

/* The device called @name, kept for teardown; NULL if it cannot open. */
static struct ibv_context *open_kept(const char *name)
{
	return keep(open_dev(name));
}

static void gid0(struct ibv_context *c, union ibv_gid *gid)
{
	ck_assert_int_eq(ibv_query_gid(c, 1, 0, gid), 0);
}

/* --- the device list --- */

START_TEST(list_num_optional)
{
	struct ibv_device **list;
	int n = -1, i;

	list = ibv_get_device_list(NULL);
	ck_assert_ptr_nonnull(list);
	ck_assert_ptr_nonnull(find(list, "rxe0"));
	ibv_free_device_list(list);

	setenv("URXE_DEVICES", "rxe0 netdev lo; rxe1 netdev lo", 1);
	list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(list);
	ck_assert_int_eq(n, 2);
	for (i = 0; i < n; i++)
		ck_assert_ptr_nonnull(list[i]);
	ck_assert_ptr_null(list[n]);
	ck_assert_ptr_nonnull(find(list, "rxe0"));
	ck_assert_ptr_nonnull(find(list, "rxe1"));
	ibv_free_device_list(list);
}
END_TEST

/* Zero set-up: with nothing configured there is rxe0 on lo. */
START_TEST(list_builtin_rxe0)
{
	struct ibv_device **list;
	int n = -1;

	if (access("/etc/urxe/devices.conf", F_OK) == 0)
		return;	/* this machine configures its own devices */
	unsetenv("URXE_DEVICES");
	list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(list);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(ibv_get_device_name(list[0]), "rxe0");
	ibv_free_device_list(list);
}
END_TEST

START_TEST(list_absent_interface)
{
	struct ibv_device **list;
	int n = -1;

	setenv("URXE_DEVICES", "x0 netdev nosuchif0", 1);
	list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(list);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_null(list[0]);
	ibv_free_device_list(list);

	/* Only the device whose interface exists is listed. */
	setenv("URXE_DEVICES", "x0 netdev nosuchif0; rxe0 netdev lo", 1);
	list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(list);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(ibv_get_device_name(list[0]), "rxe0");
	ck_assert_ptr_null(list[1]);
	ibv_free_device_list(list);
}
END_TEST

START_TEST(device_outlives_list)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr attr;
	struct ibv_context *c;

	ck_assert_ptr_nonnull(list);
	c = keep(ibv_open_device(find(list, "rxe0")));
	ck_assert_ptr_nonnull(c);
	ibv_free_device_list(list);
	ck_assert_int_eq(ibv_query_device(c, &attr), 0);
	ck_assert_str_eq(ibv_get_device_name(c->device), "rxe0");
	close_ctx(c);
}
END_TEST

START_TEST(same_device_object)
{
	struct ibv_device **l1 = ibv_get_device_list(NULL);
	struct ibv_device **l2 = ibv_get_device_list(NULL);
	struct ibv_device *d1, *d2;

	ck_assert_ptr_nonnull(l1);
	ck_assert_ptr_nonnull(l2);
	ck_assert_ptr_ne(l1, l2);
	d1 = find(l1, "rxe0");
	d2 = find(l2, "rxe0");
	ck_assert_ptr_nonnull(d1);
	ck_assert_ptr_eq(d1, d2);
	ibv_free_device_list(l1);
	ibv_free_device_list(l2);
}
END_TEST

START_TEST(name_guid_index)
{
	struct ibv_device **list;
	struct ibv_device_attr attr;
	struct ibv_device *d0, *d1;
	struct ibv_context *c;

	setenv("URXE_DEVICES", "rxe0 netdev lo; rxe1 netdev lo", 1);
	list = ibv_get_device_list(NULL);
	ck_assert_ptr_nonnull(list);
	d0 = find(list, "rxe0");
	d1 = find(list, "rxe1");
	ck_assert_ptr_nonnull(d0);
	ck_assert_ptr_nonnull(d1);
	ck_assert_str_eq(ibv_get_device_name(d0), "rxe0");
	ck_assert_str_eq(d0->name, "rxe0");
	ck_assert_int_eq(d0->node_type, IBV_NODE_CA);
	ck_assert_int_eq(d0->transport_type, IBV_TRANSPORT_IB);

	ck_assert_int_ge(ibv_get_device_index(d0), 0);
	ck_assert_int_ge(ibv_get_device_index(d1), 0);
	ck_assert_int_ne(ibv_get_device_index(d0), ibv_get_device_index(d1));

	/* The device's GUID is the node GUID the device reports. */
	ck_assert_uint_ne(ibv_get_device_guid(d0), 0);
	c = keep(ibv_open_device(d0));
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ibv_query_device(c, &attr), 0);
	ck_assert_uint_eq(ibv_get_device_guid(d0), attr.node_guid);
	close_ctx(c);
	ibv_free_device_list(list);
}
END_TEST

/* --- instances --- */

START_TEST(one_instance_per_process)
{
	struct ibv_context *c1, *c2, *other;
	union ibv_gid g1, g2, go;
	struct ibv_pd *p1, *p2;

	setenv("URXE_DEVICES", "rxe0 netdev lo; rxe1 netdev lo", 1);
	c1 = open_kept("rxe0");
	c2 = open_kept("rxe0");
	ck_assert_ptr_nonnull(c1);
	ck_assert_ptr_nonnull(c2);
	ck_assert_ptr_ne(c1, c2);
	gid0(c1, &g1);
	gid0(c2, &g2);
	ck_assert_mem_eq(&g1, &g2, sizeof(g1));

	/* Another device is another instance, with a slot (and GID) of its own. */
	other = open_kept("rxe1");
	ck_assert_ptr_nonnull(other);
	gid0(other, &go);
	ck_assert_mem_ne(&g1, &go, sizeof(g1));

	p1 = ibv_alloc_pd(c1);
	p2 = ibv_alloc_pd(c2);
	ck_assert_ptr_nonnull(p1);
	ck_assert_ptr_nonnull(p2);
	ck_assert_ptr_eq(p1->context, c1);
	ck_assert_ptr_eq(p2->context, c2);
	ck_assert_int_eq(ibv_dealloc_pd(p1), 0);
	ck_assert_int_eq(ibv_dealloc_pd(p2), 0);

	/* Closing one context leaves the shared instance to the other. */
	close_ctx(c1);
	gid0(c2, &g1);
	ck_assert_mem_eq(&g1, &g2, sizeof(g1));
	close_ctx(c2);
	close_ctx(other);
}
END_TEST

START_TEST(pd_busy)
{
	struct ibv_context *c = open_kept("rxe0");
	struct ibv_pd *pd, *pd2;

	ck_assert_ptr_nonnull(c);
	pd = ibv_alloc_pd(c);
	pd2 = ibv_alloc_pd(c);
	ck_assert_ptr_nonnull(pd);
	ck_assert_ptr_nonnull(pd2);
	ck_assert_ptr_ne(pd, pd2);
	ck_assert_uint_ne(pd->handle, pd2->handle);
	/*
	 * No object can be made on a PD yet (MRs, QPs, ... are to come): raise
	 * its count of users directly to see the refusal.
	 */
	atomic_store(&to_upd(pd)->users, 1);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(errno, EBUSY);
	atomic_store(&to_upd(pd)->users, 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd2), 0);
	close_ctx(c);
}
END_TEST

/* --- fork --- */

START_TEST(fork_init)
{
	ck_assert_int_eq(ibv_fork_init(), 0);
	ck_assert_int_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}
END_TEST

enum fork_child_fail {
	FC_OK,
	FC_INHERITED_PD = 10,	/* ibv_alloc_pd on the inherited context: not EIO */
	FC_INHERITED_XRCD,
	FC_OPEN,
	FC_SAME_GID,		/* the fresh context got the parent's slot */
	FC_FRESH_PD,
	FC_CLOSE,
};

static int fork_child(struct ibv_context *inherited, const union ibv_gid *parent_gid)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
	};
	struct ibv_context *c;
	union ibv_gid g;
	struct ibv_pd *pd;

	errno = 0;
	if (ibv_alloc_pd(inherited) || errno != EIO)
		return FC_INHERITED_PD;
	errno = 0;
	if (ibv_open_xrcd(inherited, &xa) || errno != EIO)
		return FC_INHERITED_XRCD;
	c = open_kept("rxe0");
	if (!c)
		return FC_OPEN;
	if (ibv_query_gid(c, 1, 0, &g) || !memcmp(&g, parent_gid, sizeof(g)))
		return FC_SAME_GID;
	pd = ibv_alloc_pd(c);
	if (!pd || ibv_dealloc_pd(pd))
		return FC_FRESH_PD;
	if (ibv_close_device(c) || ibv_close_device(inherited))
		return FC_CLOSE;
	return FC_OK;
}

START_TEST(fork_child_dead_context)
{
	struct ibv_context *c = open_kept("rxe0");
	union ibv_gid g, after;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	pid_t pid;
	int status;

	ck_assert_ptr_nonnull(c);
	gid0(c, &g);
	pid = tu_fork(30);
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fork_child(c, &g));
	status = tu_wait_child(pid, 20000);
	ck_assert_int_eq(tu_exit_code(status), FC_OK);

	/* The parent's context is untouched by the child's closing its copy. */
	gid0(c, &after);
	ck_assert_mem_eq(&g, &after, sizeof(g));
	ck_assert_int_eq(ibv_query_port(c, 1, &pa), 0);
	ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
	pd = ibv_alloc_pd(c);
	ck_assert_ptr_nonnull(pd);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	close_ctx(c);
}
END_TEST

/* --- attributes on lo --- */

START_TEST(port_attrs)
{
	struct ibv_context *c = open_kept("rxe0");
	struct ibv_port_attr pa;

	ck_assert_ptr_nonnull(c);
	memset(&pa, 0xa5, sizeof(pa));
	ck_assert_int_eq(ibv_query_port(c, 1, &pa), 0);
	ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
	ck_assert_uint_eq(pa.phys_state, 5);	/* LinkUp */
	ck_assert_uint_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	ck_assert_int_eq(pa.active_mtu, IBV_MTU_4096);	/* lo: 65536 */
	ck_assert_int_eq(pa.max_mtu, IBV_MTU_4096);
	ck_assert_int_eq(pa.gid_tbl_len, URXE_GID_TBL_LEN);
	ck_assert_uint_eq(pa.pkey_tbl_len, 1);
	ck_assert_uint_gt(pa.max_msg_sz, 0x1000);
	ck_assert_uint_eq(pa.port_cap_flags2, 0);	/* the extended layout is filled */
	close_ctx(c);
}
END_TEST

START_TEST(device_attrs)
{
	struct ibv_context *c = open_kept("rxe0");
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_device_attr_ex ex;
	struct ibv_device_attr a;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ibv_query_device(c, &a), 0);
	ck_assert_uint_eq(a.vendor_id, 0xffffff);
	ck_assert_uint_ne(a.node_guid, 0);
	ck_assert_uint_eq(a.phys_port_cnt, 1);
	ck_assert_uint_ge(a.page_size_cap, (uint64_t)page);
	/* Only multiples of the page size: no bit below it. */
	ck_assert_uint_eq(a.page_size_cap & ((uint64_t)page - 1), 0);
	ck_assert_int_gt(a.max_qp, 0);
	ck_assert_int_gt(a.max_qp_wr, 0);
	ck_assert_int_gt(a.max_cqe, 0);
	ck_assert_uint_gt(strlen(a.fw_ver), 0);
	/*
	 * Honest caps: atomics work (pyverbs' test_atomic skips on NONE),
	 * RNR NAKs are generated, SRQs resize, memory windows of types 1
	 * and 2B, port events, XRC; no path migration yet.
	 */
	ck_assert_int_eq(a.atomic_cap, IBV_ATOMIC_HCA);
	ck_assert_uint_eq(a.device_cap_flags,
			  IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
			  IBV_DEVICE_PORT_ACTIVE_EVENT |
			  IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_WINDOW |
			  IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC);
	ck_assert_int_gt(a.max_srq, 0);
	ck_assert_int_gt(a.max_srq_wr, 0);
	ck_assert_int_gt(a.max_srq_sge, 0);

	ck_assert_int_eq(ibv_query_device_ex(c, NULL, &ex), 0);
	ck_assert_int_eq(ex.orig_attr.atomic_cap, a.atomic_cap);
	ck_assert_uint_eq(ex.orig_attr.device_cap_flags, a.device_cap_flags);
	ck_assert_uint_eq(ex.device_cap_flags_ex, a.device_cap_flags);
	ck_assert_uint_eq(ex.phys_port_cnt_ex, a.phys_port_cnt);
	ck_assert_uint_eq(ex.orig_attr.node_guid, a.node_guid);
	close_ctx(c);
}
END_TEST

/*
 * A packet-backend device is listed and opens like any other: its sockets
 * (and the CAP_NET_RAW they need) come with the first QP, never with
 * ibv_open_device, so ibv_devinfo works for every user.
 */
START_TEST(packet_backend_opens)
{
	struct ibv_port_attr pa;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device *d;
	struct ibv_pd *pd;

	setenv("URXE_DEVICES", "p0 netdev lo backend packet", 1);
	list = ibv_get_device_list(NULL);
	ck_assert_ptr_nonnull(list);
	d = find(list, "p0");
	ck_assert_ptr_nonnull(d);
	ctx = ibv_open_device(d);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(ibv_query_port(ctx, 1, &pa), 0);
	ck_assert_int_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	ck_assert_int_eq(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
}
END_TEST

/*
 * A bad URXE_FAULTS fails ibv_open_device with EINVAL (a spec that
 * injected nothing would let a lossy test pass on a perfect wire); the
 * device is still listed, and opens once the spec is good or gone.
 */
START_TEST(bad_faults_fail_open)
{
	static const char *const bad[] = { "dorp=0.1", "drop=5%", "drop=0.1," };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device *d;
	size_t i;

	for (i = 0; i < URXE_ARRAY_SIZE(bad); i++) {
		setenv("URXE_FAULTS", bad[i], 1);
		list = ibv_get_device_list(NULL);
		ck_assert_ptr_nonnull(list);
		d = find(list, "rxe0");
		ck_assert_ptr_nonnull(d);
		errno = 0;
		ctx = ibv_open_device(d);
		ck_assert_msg(!ctx, "URXE_FAULTS=%s: opened", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
		ibv_free_device_list(list);
	}
	setenv("URXE_FAULTS", "drop=0.1,seed=2", 1);
	ctx = open_kept("rxe0");
	ck_assert_ptr_nonnull(ctx);
	close_ctx(ctx);
	setenv("URXE_FAULTS", "", 1);		/* empty: no faults */
	ctx = open_kept("rxe0");
	ck_assert_ptr_nonnull(ctx);
	close_ctx(ctx);
}
END_TEST

static Suite *verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc;

	tc = tu_tcase(s, "devices", setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, list_num_optional);
	tcase_add_test(tc, list_builtin_rxe0);
	tcase_add_test(tc, list_absent_interface);
	tcase_add_test(tc, device_outlives_list);
	tcase_add_test(tc, same_device_object);
	tcase_add_test(tc, name_guid_index);
	tcase_add_test(tc, packet_backend_opens);
	tcase_add_test(tc, bad_faults_fail_open);

	tc = tu_tcase(s, "contexts", setup, teardown);
	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, one_instance_per_process);
	tcase_add_test(tc, pd_busy);
	tcase_add_test(tc, fork_init);
	tcase_add_test(tc, fork_child_dead_context);
	tcase_add_test(tc, port_attrs);
	tcase_add_test(tc, device_attrs);
	return s;
}

int main(void)
{
	return tu_run(verbs_suite());
}
