/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The compat-only exports: 33 name@IBVERBS_1.0 verbs that took the
 * pre-1.1 structure layouts, plus the empty ibv_register_driver@IBVERBS_1.1.
 * Debian's libibverbs still carries them, so a drop-in must too, but no
 * client on Debian binds to them (all reference the 1.1 defaults), so
 * they only fail cleanly with EOPNOTSUPP, each with the convention of its
 * 1.1 namesake: constructors NULL, errno-style verbs EOPNOTSUPP, -1-style
 * verbs -1, void verbs nothing.  errno is EOPNOTSUPP in every failure.
 *
 * Each one is a C function bound with ".symver impl, name@VERSION, remove":
 * the non-default version comes from the directive (the version script
 * lists these names only under IBVERBS_1.1, for the plain @@ definitions
 * elsewhere in core), and "remove" drops the impl's own C name from the
 * object, so it can neither be exported nor called by mistake.  The impls
 * need default visibility: a hidden impl would make a hidden alias.
 * libibverbs.map explains the rest of the trick.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <urxe/log.h>
#include <urxe/util.h>

#include "retconv.h"

static int compat_unsupported(const char *name)
{
	urxe_dbg("%s@IBVERBS_1.0 (pre-1.1 ABI) is not supported", name);
	return -EOPNOTSUPP;
}

#define COMPAT_BIND(name, impl, version) \
	__asm__(".symver " #impl ", " #name "@" version ", remove")

/* Generic prototypes: these are never called with meaningful arguments. */
#define COMPAT_1_0(ret, name, body)					\
	URXE_EXPORT ret compat_1_0_##name(void);			\
	ret compat_1_0_##name(void)					\
	{								\
		body;							\
	}								\
	COMPAT_BIND(name, compat_1_0_##name, "IBVERBS_1.0");

#define COMPAT_NULL(name) \
	COMPAT_1_0(void *, name, return urxe_ret_null(compat_unsupported(#name), NULL))
#define COMPAT_ERRNO(name) \
	COMPAT_1_0(int, name, return urxe_ret_errno(compat_unsupported(#name)))
#define COMPAT_MINUS1(name) \
	COMPAT_1_0(int, name, return urxe_ret_minus1(compat_unsupported(#name)))
#define COMPAT_VOID(name) \
	COMPAT_1_0(void, name, (void)compat_unsupported(#name))

/* Devices and contexts. */
COMPAT_NULL(ibv_get_device_list)
COMPAT_VOID(ibv_free_device_list)
COMPAT_NULL(ibv_get_device_name)
COMPAT_NULL(ibv_open_device)
COMPAT_MINUS1(ibv_close_device)
COMPAT_MINUS1(ibv_get_async_event)
COMPAT_VOID(ibv_ack_async_event)

/* Returns the GUID in network order; 0 (with errno) when unknown. */
COMPAT_1_0(uint64_t, ibv_get_device_guid,
	   urxe_ret_errno(compat_unsupported("ibv_get_device_guid")); return 0)

/* Queries. */
COMPAT_ERRNO(ibv_query_device)
COMPAT_ERRNO(ibv_query_port)
COMPAT_MINUS1(ibv_query_gid)
COMPAT_MINUS1(ibv_query_pkey)

/* PD and MR. */
COMPAT_NULL(ibv_alloc_pd)
COMPAT_ERRNO(ibv_dealloc_pd)
COMPAT_NULL(ibv_reg_mr)
COMPAT_ERRNO(ibv_dereg_mr)

/* CQ and completion events. */
COMPAT_NULL(ibv_create_cq)
COMPAT_ERRNO(ibv_resize_cq)
COMPAT_ERRNO(ibv_destroy_cq)
COMPAT_MINUS1(ibv_get_cq_event)
COMPAT_VOID(ibv_ack_cq_events)

/* SRQ. */
COMPAT_NULL(ibv_create_srq)
COMPAT_ERRNO(ibv_modify_srq)
COMPAT_ERRNO(ibv_query_srq)
COMPAT_ERRNO(ibv_destroy_srq)

/* QP and multicast. */
COMPAT_NULL(ibv_create_qp)
COMPAT_ERRNO(ibv_modify_qp)
COMPAT_ERRNO(ibv_query_qp)
COMPAT_ERRNO(ibv_destroy_qp)
COMPAT_ERRNO(ibv_attach_mcast)
COMPAT_ERRNO(ibv_detach_mcast)

/* AH. */
COMPAT_NULL(ibv_create_ah)
COMPAT_ERRNO(ibv_destroy_ah)

/*
 * The pre-provider-ABI way for a driver to register: empty in rdma-core
 * too, and only ever exported as a non-default version.
 */
URXE_EXPORT void compat_1_1_ibv_register_driver(void);
void compat_1_1_ibv_register_driver(void)
{
}
COMPAT_BIND(ibv_register_driver, compat_1_1_ibv_register_driver, "IBVERBS_1.1");
