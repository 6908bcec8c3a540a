// SPDX-License-Identifier: BSD-2-Clause
/*
 * fork() support.  Memory is never pinned, so fork needs no madvise
 * games: ibv_fork_init() succeeds and the library reports
 * IBV_FORK_UNNEEDED.  A child inherits dead device instances: their slots
 * stay with the parent and nothing in the child talks on their behalf.
 */
#include <pthread.h>

#include "core.h"

URXE_EXPORT int ibv_fork_init(void)
{
	return 0;
}

URXE_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

URXE_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

URXE_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

/*
 * Only the forking thread comes along: a lock another thread held (the
 * engine thread's, typically) would stay held for ever.  Each module
 * re-initialises its process-wide locks.
 */
static void atfork_child(void)
{
	urxe_ctx_after_fork_child();
	urxe_devlist_after_fork_child();
	urxe_dev_after_fork_child();
}

__attribute__((constructor)) static void fork_setup(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}
