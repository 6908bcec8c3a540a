// SPDX-License-Identifier: BSD-2-Clause
/*
 * An XRC domain's file in a user's runtime directory (xrcd_file.h), read
 * and written as bytes (the registry of domains: host/xrcd_registry.c).
 * The directory is the user's own (host/rundir.c): no other user reaches
 * these files.  Still, nothing here trusts them further than bounds:
 * slots and numbers read are only compared, indexes are always the
 * loops' own, and tests/fuzz/fuzz_rundir.c feeds the readers arbitrary
 * bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xrcd_file.h"

#define XS_MAGIC 0x32637278u	/* "xrc2" */

bool urxe_xs_slot_live(int fd, unsigned int mine, unsigned int slot)
{
	return slot == mine || urxe_ofd_held(fd, URXE_XS_LIVE + (off_t)slot);
}

int urxe_xs_map(int fd, unsigned int slot, struct urxe_xs_file **out)
{
	struct urxe_xs_file *f;
	int rc, i;

	rc = urxe_regfile_lock(fd);
	if (rc)
		return rc;
	f = urxe_regfile_map(fd, sizeof(*f), 0, sizeof(*f),
			     PROT_READ | PROT_WRITE);
	if (!f) {
		rc = -errno;
		goto out;
	}
	if (f->magic != XS_MAGIC || f->ntgt != URXE_XS_TGTS ||
	    f->nsrq != URXE_XS_SRQS) {
		memset(f, 0, sizeof(*f));
		f->ntgt = URXE_XS_TGTS;
		f->nsrq = URXE_XS_SRQS;
		f->magic = XS_MAGIC;
	}
	/* What an earlier holder of our slot left is stale. */
	for (i = 0; i < URXE_XS_TGTS; i++)
		if (f->tgt[i].in_use && f->tgt[i].host_slot == slot)
			f->tgt[i].in_use = 0;
	for (i = 0; i < URXE_XS_SRQS; i++)
		if (f->srq[i].in_use && f->srq[i].owner_slot == slot)
			f->srq[i].in_use = 0;
	rc = urxe_ofd_lock(fd, F_OFD_SETLK, F_RDLCK, URXE_XS_LIVE + (off_t)slot);
	if (rc)
		urxe_regfile_unmap(f, sizeof(*f));
	else
		*out = f;
out:
	urxe_regfile_unlock(fd);
	return rc;
}

void urxe_xs_unmap(struct urxe_xs_file *f)
{
	urxe_regfile_unmap(f, sizeof(*f));
}

struct urxe_xs_tgt *urxe_xs_tgt_find(struct urxe_xs_file *f, int fd,
				     unsigned int mine, uint32_t qpn)
{
	int i;

	for (i = 0; i < URXE_XS_TGTS; i++) {
		struct urxe_xs_tgt *t = &f->tgt[i];

		if (t->in_use && t->st.qpn == qpn &&
		    urxe_xs_slot_live(fd, mine, t->host_slot))
			return t;
	}
	return NULL;
}

bool urxe_xs_srq_route(struct urxe_xs_file *f, int fd, unsigned int mine,
		       uint32_t srqn, union ibv_gid *gid)
{
	int i;

	for (i = 0; i < URXE_XS_SRQS; i++) {
		struct urxe_xs_srq *s = &f->srq[i];

		if (__atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE) &&
		    s->srqn == srqn && s->owner_slot != mine &&
		    urxe_xs_slot_live(fd, mine, s->owner_slot)) {
			*gid = s->gid;
			return true;
		}
	}
	return false;
}
