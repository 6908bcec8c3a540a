/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider ABI, IBVERBS_PRIVATE_34: the symbols rdma-core's providers
 * (libmlx5, libefa, libmlx4, ...) import from libibverbs.  urxe brings its
 * own device and never loads those providers, but Debian links them into
 * perftest and pyverbs, and binaries are linked -z now, so every symbol
 * must exist for those clients even to start.
 *
 * Only verbs_register_driver_34() is really called: the providers'
 * constructors call it when the client loads.  It is counted and ignored.
 * Everything else fails cleanly with EOPNOTSUPP.  The prototypes are
 * generic on purpose: driver.h is not installed, and no caller ever
 * reaches these with an object of ours.  ibv_query_gid_type, the one
 * private symbol that must really work, lives in query.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include <urxe/log.h>
#include <urxe/util.h>

#include "private.h"
#include "retconv.h"

/*
 * Read by providers' destroy paths; the real library sets it from
 * RDMAV_ALLOW_DISASSOC_DESTROY.  Clients see a 1-byte data object.
 */
URXE_EXPORT bool verbs_allow_disassociate_destroy;

static unsigned int registered_drivers;

unsigned int urxe_registered_drivers(void)
{
	return __atomic_load_n(&registered_drivers, __ATOMIC_RELAXED);
}

/*
 * The head of struct verbs_device_ops as of provider ABI 34: the name
 * comes first.  Only used to say who registered.
 */
struct pabi34_device_ops_head {
	const char *name;
};

URXE_EXPORT void verbs_register_driver_34(const struct pabi34_device_ops_head *ops);
void verbs_register_driver_34(const struct pabi34_device_ops_head *ops)
{
	unsigned int n;

	/* Constructors of several dlopen()ed providers may race. */
	n = __atomic_add_fetch(&registered_drivers, 1, __ATOMIC_RELAXED);
	urxe_dbg("provider %s registered (%u so far), ignored: urxe has its own device",
		 ops && ops->name ? ops->name : "(unnamed)", n);
}

static int private_unsupported(const char *name)
{
	urxe_dbg("%s: provider ABI call not supported", name);
	return -EOPNOTSUPP;
}

/* Provider log sink; nothing of ours calls providers, so drop it. */
URXE_EXPORT void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...);
void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

URXE_EXPORT void verbs_set_ops(void);
void verbs_set_ops(void)
{
}

URXE_EXPORT void verbs_uninit_context(void);
void verbs_uninit_context(void)
{
}

/* void in rdma-core 44: it only fills in the fields of a provider's CQ. */
URXE_EXPORT void verbs_init_cq(void);
void verbs_init_cq(void)
{
}

URXE_EXPORT void *_verbs_init_and_alloc_context(void);
void *_verbs_init_and_alloc_context(void)
{
	return urxe_ret_null(private_unsupported(__func__), NULL);
}

URXE_EXPORT void *verbs_open_device(void);
void *verbs_open_device(void)
{
	return urxe_ret_null(private_unsupported(__func__), NULL);
}

/* Returns 0 or -1 with errno, like the public ibv_read_sysfs_file(). */
URXE_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
					  const char *fnfmt, ...);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	return urxe_ret_minus1(private_unsupported(__func__));
}

/*
 * The kernel-command wrappers.  rdma-core's return 0 or a positive errno;
 * ours always return EOPNOTSUPP (errno set too).
 */
#define PRIVATE_ERRNO_STUBS(X)			\
	X(__ioctl_final_num_attrs)		\
	X(execute_ioctl)			\
	X(ibv_cmd_advise_mr)			\
	X(ibv_cmd_alloc_dm)			\
	X(ibv_cmd_alloc_mw)			\
	X(ibv_cmd_alloc_pd)			\
	X(ibv_cmd_attach_mcast)			\
	X(ibv_cmd_close_xrcd)			\
	X(ibv_cmd_create_ah)			\
	X(ibv_cmd_create_counters)		\
	X(ibv_cmd_create_cq)			\
	X(ibv_cmd_create_cq_ex)			\
	X(ibv_cmd_create_flow)			\
	X(ibv_cmd_create_flow_action_esp)	\
	X(ibv_cmd_create_qp)			\
	X(ibv_cmd_create_qp_ex)			\
	X(ibv_cmd_create_qp_ex2)		\
	X(ibv_cmd_create_rwq_ind_table)		\
	X(ibv_cmd_create_srq)			\
	X(ibv_cmd_create_srq_ex)		\
	X(ibv_cmd_create_wq)			\
	X(ibv_cmd_dealloc_mw)			\
	X(ibv_cmd_dealloc_pd)			\
	X(ibv_cmd_dereg_mr)			\
	X(ibv_cmd_destroy_ah)			\
	X(ibv_cmd_destroy_counters)		\
	X(ibv_cmd_destroy_cq)			\
	X(ibv_cmd_destroy_flow)			\
	X(ibv_cmd_destroy_flow_action)		\
	X(ibv_cmd_destroy_qp)			\
	X(ibv_cmd_destroy_rwq_ind_table)	\
	X(ibv_cmd_destroy_srq)			\
	X(ibv_cmd_destroy_wq)			\
	X(ibv_cmd_detach_mcast)			\
	X(ibv_cmd_free_dm)			\
	X(ibv_cmd_get_context)			\
	X(ibv_cmd_modify_cq)			\
	X(ibv_cmd_modify_flow_action_esp)	\
	X(ibv_cmd_modify_qp)			\
	X(ibv_cmd_modify_qp_ex)			\
	X(ibv_cmd_modify_srq)			\
	X(ibv_cmd_modify_wq)			\
	X(ibv_cmd_open_qp)			\
	X(ibv_cmd_open_xrcd)			\
	X(ibv_cmd_poll_cq)			\
	X(ibv_cmd_post_recv)			\
	X(ibv_cmd_post_send)			\
	X(ibv_cmd_post_srq_recv)		\
	X(ibv_cmd_query_context)		\
	X(ibv_cmd_query_device_any)		\
	X(ibv_cmd_query_mr)			\
	X(ibv_cmd_query_port)			\
	X(ibv_cmd_query_qp)			\
	X(ibv_cmd_query_srq)			\
	X(ibv_cmd_read_counters)		\
	X(ibv_cmd_reg_dm_mr)			\
	X(ibv_cmd_reg_dmabuf_mr)		\
	X(ibv_cmd_reg_mr)			\
	X(ibv_cmd_req_notify_cq)		\
	X(ibv_cmd_rereg_mr)			\
	X(ibv_cmd_resize_cq)

#define DEFINE_ERRNO_STUB(name)					\
	URXE_EXPORT int name(void);				\
	int name(void)						\
	{							\
		return urxe_ret_errno(private_unsupported(#name)); \
	}

PRIVATE_ERRNO_STUBS(DEFINE_ERRNO_STUB)
