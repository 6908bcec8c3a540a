/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A shared library's exit notice (netdev/exit_notice.c): whether exit()
 * has begun, for a destructor that must tell exit() from dlclose().
 * Each library holds its own notice and registers it once, from its
 * first use (so after _dl_fini's own registration: handlers run in
 * reverse order).
 */
#ifndef URXE_EXIT_NOTICE_H
#define URXE_EXIT_NOTICE_H

#include <stdatomic.h>
#include <stdbool.h>

struct urxe_exit_notice {
	atomic_bool exiting;		/* exit() has begun */
	void (*also)(void);		/* run by the notice too, or NULL */
};

/* Registers @n's handler for this library; nonzero if it cannot. */
int urxe_exit_notice_register(struct urxe_exit_notice *n);

static inline bool urxe_exit_notice_seen(struct urxe_exit_notice *n)
{
	return atomic_load(&n->exiting);
}

#endif
