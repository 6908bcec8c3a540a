// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unloading.  When dlclose() drops the last reference, the library's code
 * is unmapped: an engine thread still parked in its loop would wake in
 * nothing and crash the process.  Programs leave contexts open —
 * librdmacm's rdma_get_devices() does by design — and Open MPI unloads
 * its components, and with them libfabric, librdmacm and this library,
 * in MPI_Finalize.  So a destructor stops and joins every engine thread,
 * then closes every context, completion channel and XRCD handle the
 * application left, the instances with their sockets and slots, and
 * frees the device objects: a later dlopen() starts from nothing, as
 * the first did.  Memory of the application's other objects (QPs, CQs,
 * MRs...) is not walked: it becomes unreachable.
 *
 * Not at exit().  Then other application threads may still be in a verb,
 * and exit handlers and the destructors of libraries that run after this
 * one may still use their objects; the kernel takes everything back
 * anyway.  exit() runs every atexit handler before the destructors (they
 * run from _dl_fini, itself an exit handler registered before main()),
 * while dlclose() runs this library's atexit handlers after its own
 * destructors (from __cxa_finalize, the object's last .fini_array entry).
 * So the first verb registers a handler that notes the exit, and the
 * destructor does nothing when it has run.  docs/design.md, "Unloading".
 */
#include <pthread.h>
#include <stdlib.h>

#include <urxe/exit_notice.h>
#include <urxe/log.h>
#include <urxe/provider.h>

#include "core.h"

/* The one thing not left to the kernel at exit: ACKs owed to peers. */
static struct urxe_exit_notice exit_notice = { .also = urxe_dev_exit_acks };
static pthread_once_t used_once = PTHREAD_ONCE_INIT;

static void register_exit(void)
{
	/*
	 * From the first verb, so after _dl_fini's registration: handlers
	 * run in reverse order.  A verb called from a constructor, before
	 * main(), registers too early: then this library is taken down at
	 * exit too, as if unloaded.
	 */
	if (urxe_exit_notice_register(&exit_notice))
		urxe_warn("atexit failed: the library will be taken down at exit too");
}

void urxe_lib_used(void)
{
	pthread_once(&used_once, register_exit);
}

__attribute__((destructor)) static void unload(void)
{
	if (urxe_exit_notice_seen(&exit_notice))
		return;
	urxe_dbg("unloading: engine threads stop, open objects close");
	urxe_dev_unload_begin();
	urxe_ctx_unload();
	urxe_dev_unload_end();
	urxe_devlist_unload();
}
