/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What core/private.c tells the rest of core about the provider ABI
 * (IBVERBS_PRIVATE_34).  urxe loads no rdma-core providers, but Debian's
 * libmlx5 and libefa still register themselves from their constructors
 * whenever a client links them; core only counts those calls.
 */
#ifndef URXE_CORE_PRIVATE_H
#define URXE_CORE_PRIVATE_H

/* Calls to verbs_register_driver_34() since load; never decreases. */
unsigned int urxe_registered_drivers(void);

#endif
