// SPDX-License-Identifier: BSD-2-Clause
/*
 * A shared library's exit notice.  exit() runs every atexit handler
 * before the destructors (they run from _dl_fini, itself an exit handler
 * registered before main()), while dlclose() runs a library's atexit
 * handlers after its own destructors (from __cxa_finalize, the object's
 * last .fini_array entry).  So a handler registered on first use that
 * notes the exit tells a destructor which of the two is under way.
 *
 * __cxa_atexit with the object's own handle, not atexit(): an interposed
 * atexit (ThreadSanitizer's) registers for the process, and would call
 * into the library after dlclose().  This file is linked into each
 * shared library that uses it (libibverbs.so.1 through the base
 * archive, librdmacm.so.1 from source), so &__dso_handle is that
 * library's own.  core/unload.c and rdmacm/cm_chan.c use it.
 */
#include <urxe/exit_notice.h>

/* The C++ ABI's: what atexit() calls, with this object's own handle. */
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern void *__dso_handle;

static void note_exit(void *arg)
{
	struct urxe_exit_notice *n = arg;

	atomic_store(&n->exiting, true);
	if (n->also)
		n->also();
}

int urxe_exit_notice_register(struct urxe_exit_notice *n)
{
	return __cxa_atexit(note_exit, n, &__dso_handle);
}
