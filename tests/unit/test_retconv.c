// SPDX-License-Identifier: BSD-2-Clause
/*
 * Return conventions (core/retconv.[ch]): the per-verb table is well
 * formed and agrees with the man pages, the converter helpers set errno
 * and return what their convention says, and the built libibverbs.so.1
 * really answers that way — every convention is provoked through exported
 * verbs on device rxe0 (lo, private runtime directory).  Also the context
 * layout the inline verbs of verbs.h depend on (verbs_context, abi_compat,
 * sz, the ops they call unconditionally) and the descriptors cmd_fd and
 * async_fd (real, with inodes of their own).
 */
#include <check.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "testutil.h"
#include "verbs_util.h"

/* Exported at IBVERBS_1.0, declared only in rdma-core's uninstalled sysfs.h. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

static struct tu_sandbox sb;
static struct ibv_context *ctx;

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	setenv("URXE_DEVICES", "rxe0 netdev lo", 1);
	ctx = vu_open_rxe0();
}

static void teardown(void)
{
	if (ctx)
		ibv_close_device(ctx);
	ctx = NULL;
	tu_sandbox_fini(&sb);
}

/* --- the table --- */

/* Verbs that are static inline in verbs.h: no symbol, but a convention. */
static const char *const inline_verbs[] = {
	"ibv_alloc_mw", "ibv_bind_mw", "ibv_close_xrcd", "ibv_create_cq_ex",
	"ibv_create_qp_ex", "ibv_create_srq_ex", "ibv_dealloc_mw",
	"ibv_get_srq_num", "ibv_modify_cq", "ibv_next_poll", "ibv_open_qp",
	"ibv_open_xrcd", "ibv_poll_cq", "ibv_post_recv", "ibv_post_send",
	"ibv_post_srq_recv", "ibv_query_device_ex", "ibv_query_gid_ex",
	"ibv_query_rt_values_ex", "ibv_req_notify_cq", "ibv_start_poll",
	"ibv_wr_complete",
};

static bool is_inline_verb(const char *verb)
{
	size_t i;

	for (i = 0; i < URXE_ARRAY_SIZE(inline_verbs); i++)
		if (!strcmp(inline_verbs[i], verb))
			return true;
	return false;
}

START_TEST(table_well_formed)
{
	void *lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	size_t i, j;

	ck_assert_ptr_nonnull(lib);
	ck_assert_uint_gt(urxe_verb_convs_len, 0);
	for (i = 0; i < URXE_RET__COUNT; i++) {
		ck_assert_ptr_nonnull(urxe_retconv_names[i]);
		ck_assert_uint_gt(strlen(urxe_retconv_names[i]), 0);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(urxe_retconv_names[i], urxe_retconv_names[j]);
	}
	for (i = 0; i < urxe_verb_convs_len; i++) {
		const struct urxe_verb_conv *r = &urxe_verb_convs[i];

		ck_assert_ptr_nonnull(r->verb);
		ck_assert_msg((unsigned int)r->conv < URXE_RET__COUNT,
			      "%s: convention %d unknown", r->verb, r->conv);
		for (j = 0; j < i; j++)
			ck_assert_msg(strcmp(r->verb, urxe_verb_convs[j].verb),
				      "%s listed twice", r->verb);
		/* A row names a real verb: exported by the library, or inline. */
		ck_assert_msg(dlsym(lib, r->verb) || is_inline_verb(r->verb),
			      "%s is neither exported nor a verbs.h inline", r->verb);
		ck_assert_int_eq(urxe_retconv_of(r->verb), (int)r->conv);
	}
	dlclose(lib);
}
END_TEST

/* The man pages' RETURN VALUE sections, restated independently of retconv.c. */
static const struct urxe_verb_conv man_pages[] = {
	{ "ibv_get_device_list", URXE_RET_NULL },
	{ "ibv_open_device", URXE_RET_NULL },
	{ "ibv_close_device", URXE_RET_MINUS1 },
	{ "ibv_query_device", URXE_RET_ERRNO },
	{ "ibv_query_device_ex", URXE_RET_ERRNO },
	{ "ibv_query_port", URXE_RET_ERRNO },
	{ "ibv_query_gid", URXE_RET_MINUS1 },
	{ "ibv_query_gid_ex", URXE_RET_ERRNO },
	{ "_ibv_query_gid_table", URXE_RET_NEGERRNO },
	{ "ibv_query_pkey", URXE_RET_MINUS1 },
	{ "ibv_get_pkey_index", URXE_RET_MINUS1 },
	{ "ibv_get_device_index", URXE_RET_MINUS1 },
	{ "ibv_get_async_event", URXE_RET_MINUS1 },
	{ "ibv_ack_async_event", URXE_RET_VOID },
	{ "ibv_alloc_pd", URXE_RET_NULL },
	{ "ibv_dealloc_pd", URXE_RET_ERRNO },
	{ "ibv_open_xrcd", URXE_RET_NULL },
	{ "ibv_close_xrcd", URXE_RET_ERRNO },
	{ "ibv_create_cq", URXE_RET_NULL },
	{ "ibv_destroy_cq", URXE_RET_ERRNO },
	{ "ibv_poll_cq", URXE_RET_POLL },
	{ "ibv_req_notify_cq", URXE_RET_ERRNO },
	{ "ibv_get_cq_event", URXE_RET_MINUS1 },
	{ "ibv_ack_cq_events", URXE_RET_VOID },
	{ "ibv_post_send", URXE_RET_ERRNO },
	{ "ibv_post_recv", URXE_RET_ERRNO },
	{ "ibv_modify_qp", URXE_RET_ERRNO },
	{ "ibv_init_ah_from_wc", URXE_RET_MINUS1 },
	{ "ibv_fork_init", URXE_RET_ERRNO },
	{ "ibv_wr_complete", URXE_RET_ERRNO },
	{ "ibv_start_poll", URXE_RET_ERRNO },
	{ "ibv_next_poll", URXE_RET_ERRNO },
	{ "ibv_query_rt_values_ex", URXE_RET_ERRNO },
	{ "ibv_create_qp_ex", URXE_RET_NULL },
	{ "ibv_create_cq_ex", URXE_RET_NULL },
	{ "ibv_import_device", URXE_RET_NULL },
};

START_TEST(table_matches_man_pages)
{
	const struct urxe_verb_conv *m = &man_pages[_i];

	ck_assert_msg(urxe_retconv_of(m->verb) == (int)m->conv,
		      "%s: table says %d, the man page %s", m->verb,
		      urxe_retconv_of(m->verb), urxe_retconv_names[m->conv]);
}
END_TEST

START_TEST(retconv_of_unknown)
{
	ck_assert_int_eq(urxe_retconv_of("ibv_no_such_verb"), -ENOENT);
	ck_assert_int_eq(urxe_retconv_of(""), -ENOENT);
	ck_assert_int_eq(urxe_retconv_of("ibv_query_gid "), -ENOENT);
}
END_TEST

/* --- the helpers --- */

struct helper_case {
	long in;		/* 0, a count, or a negative errno */
	int ret_errno;		/* what urxe_ret_errno returns */
	int ret_minus1;
	long ret_negerrno;
	bool null;		/* urxe_ret_null gives NULL */
	int err;		/* errno afterwards; 0: untouched */
};

static const struct helper_case helper_cases[] = {
	{ 0, 0, 0, 0, false, 0 },
	{ 3, 0, 3, 3, false, 0 },
	{ -EINVAL, EINVAL, -1, -EINVAL, true, EINVAL },
	{ -ENODATA, ENODATA, -1, -ENODATA, true, ENODATA },
	{ -EOPNOTSUPP, EOPNOTSUPP, -1, -EOPNOTSUPP, true, EOPNOTSUPP },
	{ -EBUSY, EBUSY, -1, -EBUSY, true, EBUSY },
};

#define SENTINEL 12345	/* errno value no helper ever sets */

START_TEST(helpers)
{
	const struct helper_case *c = &helper_cases[_i];
	int obj, want_errno = c->err ? c->err : SENTINEL;

	errno = SENTINEL;
	ck_assert_int_eq(urxe_ret_errno((int)c->in), c->ret_errno);
	ck_assert_int_eq(errno, want_errno);

	errno = SENTINEL;
	ck_assert_int_eq(urxe_ret_minus1((int)c->in), c->ret_minus1);
	ck_assert_int_eq(errno, want_errno);

	errno = SENTINEL;
	ck_assert_int_eq(urxe_ret_negerrno(c->in), c->ret_negerrno);
	ck_assert_int_eq(errno, want_errno);

	errno = SENTINEL;
	if (c->null)
		ck_assert_ptr_null(urxe_ret_null((int)c->in, &obj));
	else
		ck_assert_ptr_eq(urxe_ret_null((int)c->in, &obj), &obj);
	ck_assert_int_eq(errno, want_errno);
}
END_TEST

/* --- each convention, provoked through the library --- */

static void assert_conv(const char *verb, enum urxe_retconv conv)
{
	ck_assert_msg(urxe_retconv_of(verb) == (int)conv, "%s is not %s in the table",
		      verb, urxe_retconv_names[conv]);
}

/* URXE_RET_ERRNO: the errno value itself is returned. */
START_TEST(errno_query_port)
{
	struct ibv_port_attr pa;

	assert_conv("ibv_query_port", URXE_RET_ERRNO);
	errno = 0;
	ck_assert_int_eq(ibv_query_port(ctx, 2, &pa), EINVAL);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_query_port(ctx, 0, &pa), EINVAL);
	ck_assert_int_eq(ibv_query_port(ctx, 1, &pa), 0);
	/* The exported (non-inline) symbol, old layout, same convention. */
	ck_assert_int_eq((ibv_query_port)(ctx, 2, (struct _compat_ibv_port_attr *)&pa),
			 EINVAL);
	ck_assert_int_eq((ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)&pa),
			 0);
}
END_TEST

START_TEST(errno_query_device_ex)
{
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_device_attr_ex attr;

	assert_conv("ibv_query_device_ex", URXE_RET_ERRNO);
	ck_assert_int_eq(ibv_query_device_ex(ctx, &in, &attr), EINVAL);
	/* The inline refuses that itself; the library's slot must too. */
	errno = 0;
	ck_assert_int_eq(v->query_device_ex(ctx, &in, &attr, sizeof(attr)), EINVAL);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(v->query_device_ex(ctx, NULL, &attr, 8), EINVAL);
	memset(&attr, 0, sizeof(attr));
	ck_assert_int_eq(ibv_query_device_ex(ctx, NULL, &attr), 0);
	ck_assert_uint_eq(attr.orig_attr.vendor_id, URXE_VENDOR_ID);
	ck_assert_uint_eq(attr.phys_port_cnt_ex, 1);
}
END_TEST

/* ibv_query_gid(3): 0, or -1 with errno; an empty index reads as zero. */
START_TEST(minus1_query_gid)
{
	static const union ibv_gid zero;
	union ibv_gid gid;

	assert_conv("ibv_query_gid", URXE_RET_MINUS1);
	errno = 0;
	ck_assert_int_eq(ibv_query_gid(ctx, 1, URXE_GID_TBL_LEN, &gid), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(ibv_query_gid(ctx, 1, -1, &gid), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(ibv_query_gid(ctx, 2, 0, &gid), -1);
	ck_assert_int_eq(errno, EINVAL);

	memset(&gid, 0xaa, sizeof(gid));
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 5, &gid), 0);
	ck_assert_mem_eq(&gid, &zero, sizeof(gid));

	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid), 0);
	ck_assert_int_eq(gid.raw[10], 0xff);
	ck_assert_int_eq(gid.raw[11], 0xff);
	ck_assert_int_eq(gid.raw[12], 127);
	ck_assert_int_eq(gid.raw[13], 117);
}
END_TEST

/* ibv_query_gid_ex(3): the errno value; ENODATA for an empty index. */
START_TEST(errno_query_gid_ex)
{
	struct ibv_gid_entry e;
	union ibv_gid gid;

	assert_conv("ibv_query_gid_ex", URXE_RET_ERRNO);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid), 0);

	errno = 0;
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, 5, &e, 0), ENODATA);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, URXE_GID_TBL_LEN, &e, 0), EINVAL);
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 2, 0, &e, 0), EINVAL);
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, 0, &e, 1), EINVAL);
	ck_assert_int_eq(_ibv_query_gid_ex(ctx, 1, 0, &e, 0, sizeof(e) - 1), EINVAL);

	memset(&e, 0xaa, sizeof(e));
	ck_assert_int_eq(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
	ck_assert_mem_eq(&e.gid, &gid, sizeof(gid));
	ck_assert_uint_eq(e.gid_index, 0);
	ck_assert_uint_eq(e.port_num, 1);
	ck_assert_uint_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	ck_assert_uint_eq(e.ndev_ifindex, if_nametoindex("lo"));
}
END_TEST

/* ibv_query_gid_table(3): a count, or a negative errno value. */
START_TEST(negerrno_query_gid_table)
{
	struct ibv_gid_entry e[URXE_GID_TBL_LEN];
	union ibv_gid gid;

	assert_conv("_ibv_query_gid_table", URXE_RET_NEGERRNO);
	ck_assert_int_eq(ibv_query_gid(ctx, 1, 0, &gid), 0);
	errno = 0;
	ck_assert_int_eq(ibv_query_gid_table(ctx, e, 0, 0), -EINVAL);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_query_gid_table(ctx, e, URXE_GID_TBL_LEN, 1), -EINVAL);
	ck_assert_int_eq(_ibv_query_gid_table(ctx, e, URXE_GID_TBL_LEN, 0, 8), -EINVAL);

	memset(e, 0xaa, sizeof(e));
	/* Loopback: GID[0] and GID[1], one address. */
	ck_assert_int_eq(ibv_query_gid_table(ctx, e, URXE_GID_TBL_LEN, 0), 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_mem_eq(&e[i].gid, &gid, sizeof(gid));
		ck_assert_uint_eq(e[i].gid_index, i);
		ck_assert_uint_eq(e[i].port_num, 1);
		ck_assert_uint_eq(e[i].gid_type, IBV_GID_TYPE_ROCE_V2);
	}
	/* Exactly as many entries as valid GIDs: room for two is enough. */
	ck_assert_int_eq(ibv_query_gid_table(ctx, e, 2, 0), 2);
	ck_assert_int_eq(ibv_query_gid_table(ctx, e, 1, 0), -EINVAL);
}
END_TEST

START_TEST(minus1_query_gid_type)
{
	enum ibv_gid_type_sysfs type;

	assert_conv("ibv_query_gid_type", URXE_RET_MINUS1);
	ck_assert_int_eq(ibv_query_gid_type(ctx, 1, 0, &type), 0);
	ck_assert_int_eq(type, IBV_GID_TYPE_SYSFS_ROCE_V2);
	ck_assert_int_eq(ibv_query_gid_type(ctx, 1, 1, &type), 0);
	ck_assert_int_eq(type, IBV_GID_TYPE_SYSFS_ROCE_V2);
	errno = 0;
	ck_assert_int_eq(ibv_query_gid_type(ctx, 1, URXE_GID_TBL_LEN, &type), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(minus1_query_pkey)
{
	__be16 pkey = 0;

	assert_conv("ibv_query_pkey", URXE_RET_MINUS1);
	assert_conv("ibv_get_pkey_index", URXE_RET_MINUS1);
	ck_assert_int_eq(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	ck_assert_uint_eq(pkey, htobe16(0xffff));
	errno = 0;
	ck_assert_int_eq(ibv_query_pkey(ctx, 1, URXE_PKEY_TBL_LEN, &pkey), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(ibv_query_pkey(ctx, 1, -1, &pkey), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(ibv_query_pkey(ctx, 2, 0, &pkey), -1);
	ck_assert_int_eq(errno, EINVAL);

	ck_assert_int_eq(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_pkey_index(ctx, 1, htobe16(0x7fff)), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(ibv_get_pkey_index(ctx, 2, htobe16(0xffff)), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(minus1_async_event_and_close)
{
	struct ibv_async_event ev;
	int fl = fcntl(ctx->async_fd, F_GETFL);

	assert_conv("ibv_get_async_event", URXE_RET_MINUS1);
	assert_conv("ibv_close_device", URXE_RET_MINUS1);
	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_async_event(ctx, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);

	/* context.c refuses NULL rather than crash. */
	errno = 0;
	ck_assert_int_eq(ibv_close_device(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ibv_close_device(ctx), 0);
	ctx = NULL;
}
END_TEST

START_TEST(minus1_read_sysfs_file)
{
	char buf[16];
	char *dir = tu_path(sb.dir, "sysfs");

	assert_conv("ibv_read_sysfs_file", URXE_RET_MINUS1);
	errno = 0;
	ck_assert_int_eq(ibv_read_sysfs_file(sb.dir, "x", NULL, 16), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(ibv_read_sysfs_file(sb.dir, "absent", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* Success is a count: the bytes read, newline stripped. */
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	{
		char *f = tu_path(dir, "attr");

		ck_assert_int_eq(tu_write_file(f, "abc\n"), 0);
		ck_assert_int_eq(ibv_read_sysfs_file(dir, "attr", buf, sizeof(buf)), 3);
		ck_assert_str_eq(buf, "abc");
		free(f);
	}
	free(dir);
}
END_TEST

/* URXE_RET_NULL: NULL and errno. */
START_TEST(null_constructors)
{
	struct ibv_cq *cq;
	struct ibv_pd *pd;

	assert_conv("ibv_open_device", URXE_RET_NULL);
	assert_conv("ibv_create_cq", URXE_RET_NULL);
	assert_conv("ibv_alloc_pd", URXE_RET_NULL);
	errno = 0;
	ck_assert_ptr_null(ibv_open_device(NULL));
	ck_assert_int_eq(errno, EINVAL);

	/* ibv_create_cq(3): cqe below 1 is EINVAL. */
	errno = 0;
	cq = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	ck_assert_ptr_null(cq);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(ibv_create_comp_channel(NULL));
	ck_assert_int_eq(errno, EINVAL);

	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	ck_assert_ptr_eq(pd->context, ctx);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
}
END_TEST

/*
 * The data-path inlines jump through ibv_context.ops without checking, so
 * the slots must answer in each verb's own convention.  Only real objects
 * are used: the slots cast them to the provider's types.
 */
START_TEST(ops_conventions)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_send_wr swr, *sbad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;

	assert_conv("ibv_poll_cq", URXE_RET_POLL);
	assert_conv("ibv_post_send", URXE_RET_ERRNO);
	assert_conv("ibv_post_recv", URXE_RET_ERRNO);

	/* CQs exist: an empty one polls 0, a bad count is negative. */
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(ibv_poll_cq(cq, 1, &wc), 0);
	ck_assert_int_lt(ibv_poll_cq(cq, -1, &wc), 0);
	ck_assert_int_eq(ibv_req_notify_cq(cq, 0), 0);

	/*
	 * A QP in RESET takes no work requests (kernel rxe: EINVAL), and the
	 * refused request is the one bad_wr names.
	 */
	pd = ibv_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	ck_assert_msg(qp != NULL, "ibv_create_qp: %s", strerror(errno));
	memset(&swr, 0, sizeof(swr));
	memset(&rwr, 0, sizeof(rwr));
	swr.opcode = IBV_WR_SEND;
	ck_assert_int_eq(ibv_post_send(qp, &swr, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &swr);
	ck_assert_int_eq(ibv_post_recv(qp, &rwr, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);

	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
}
END_TEST

START_TEST(errno_fork_init)
{
	assert_conv("ibv_fork_init", URXE_RET_ERRNO);
	ck_assert_int_eq(ibv_fork_init(), 0);
}
END_TEST

/* --- the context's layout and descriptors --- */

static void assert_distinct_inodes(int a, int b)
{
	struct stat sa, sb_;

	ck_assert_int_eq(fstat(a, &sa), 0);
	ck_assert_int_eq(fstat(b, &sb_), 0);
	ck_assert_msg(sa.st_dev != sb_.st_dev || sa.st_ino != sb_.st_ino,
		      "fds %d and %d share inode %lu", a, b, (unsigned long)sa.st_ino);
}

START_TEST(context_layout)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_context_ops *ops = &ctx->ops;

	ck_assert_ptr_eq(ctx->abi_compat, __VERBS_ABI_IS_EXTENDED);
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_eq(&v->context, ctx);
	ck_assert_uint_eq(v->sz, sizeof(struct verbs_context));
	ck_assert_ptr_nonnull(ctx->device);
	ck_assert_str_eq(ctx->device->name, "rxe0");
	ck_assert_int_ge(ctx->num_comp_vectors, 1);
	/* The slots the extended inlines look up. */
	ck_assert_ptr_nonnull(verbs_get_ctx_op(ctx, query_port));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(ctx, query_device_ex));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(ctx, open_xrcd));
	ck_assert_ptr_nonnull(v->close_xrcd);
	/* The ones the data-path inlines call unconditionally. */
	ck_assert_ptr_nonnull(ops->poll_cq);
	ck_assert_ptr_nonnull(ops->req_notify_cq);
	ck_assert_ptr_nonnull(ops->post_send);
	ck_assert_ptr_nonnull(ops->post_recv);
	ck_assert_ptr_nonnull(ops->post_srq_recv);
	ck_assert_ptr_nonnull(ops->alloc_mw);
	ck_assert_ptr_nonnull(ops->bind_mw);
	ck_assert_ptr_nonnull(ops->dealloc_mw);
}
END_TEST

START_TEST(context_fds)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_context *ctx2;

	ck_assert_int_ge(ctx->cmd_fd, 0);
	ck_assert_int_ge(ctx->async_fd, 0);
	ck_assert_int_ne(ctx->cmd_fd, ctx->async_fd);
	ck_assert_int_ge(fcntl(ctx->cmd_fd, F_GETFD), 0);
	ck_assert_int_ge(fcntl(ctx->async_fd, F_GETFD), 0);
	assert_distinct_inodes(ctx->cmd_fd, ctx->async_fd);
	/* Pollable, and quiet: no events happen on an idle device. */
	ck_assert_int_eq(poll(&p, 1, 0), 0);

	ctx2 = vu_open_rxe0();
	assert_distinct_inodes(ctx->cmd_fd, ctx2->cmd_fd);
	assert_distinct_inodes(ctx->async_fd, ctx2->async_fd);
	assert_distinct_inodes(ctx->cmd_fd, ctx2->async_fd);
	ck_assert_int_eq(ibv_close_device(ctx2), 0);
}
END_TEST

/*
 * The library under test is this build's, not the system's, and it
 * exports verbs only: the project's own symbols are hidden.
 */
START_TEST(library_is_ours)
{
	const char *build = getenv("URXE_TEST_BUILD");
	void *lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	Dl_info info;

	ck_assert_ptr_nonnull(lib);
	ck_assert_int_ne(dladdr((void *)ibv_get_device_list, &info), 0);
	ck_assert_ptr_nonnull(info.dli_fname);
	if (build)
		ck_assert_msg(!strncmp(info.dli_fname, build, strlen(build)),
			      "libibverbs loaded from %s, not from %s",
			      info.dli_fname, build);
	ck_assert_ptr_nonnull(dlsym(lib, "ibv_query_gid"));
	ck_assert_ptr_null(dlsym(lib, "urxe_retconv_of"));
	ck_assert_ptr_null(dlsym(lib, "urxe_config_load"));
	ck_assert_ptr_null(dlsym(lib, "urxe_dev_get"));
	dlclose(lib);
}
END_TEST

static Suite *retconv_suite(void)
{
	Suite *s = suite_create("retconv");
	TCase *tc;

	tc = tu_tcase(s, "table", NULL, NULL);
	tcase_add_test(tc, table_well_formed);
	tcase_add_loop_test(tc, table_matches_man_pages, 0,
			    (int)URXE_ARRAY_SIZE(man_pages));
	tcase_add_test(tc, retconv_of_unknown);
	tcase_add_loop_test(tc, helpers, 0, (int)URXE_ARRAY_SIZE(helper_cases));

	tc = tu_tcase(s, "library", setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, errno_query_port);
	tcase_add_test(tc, errno_query_device_ex);
	tcase_add_test(tc, minus1_query_gid);
	tcase_add_test(tc, errno_query_gid_ex);
	tcase_add_test(tc, negerrno_query_gid_table);
	tcase_add_test(tc, minus1_query_gid_type);
	tcase_add_test(tc, minus1_query_pkey);
	tcase_add_test(tc, minus1_async_event_and_close);
	tcase_add_test(tc, minus1_read_sysfs_file);
	tcase_add_test(tc, null_constructors);
	tcase_add_test(tc, ops_conventions);
	tcase_add_test(tc, errno_fork_init);
	tcase_add_test(tc, context_layout);
	tcase_add_test(tc, context_fds);
	tcase_add_test(tc, library_is_ours);
	return s;
}

int main(void)
{
	return tu_run(retconv_suite());
}
