// SPDX-License-Identifier: BSD-2-Clause
/*
 * The XRC files of a user's runtime directory (xrcd_file.h), read and
 * written as bytes.  The directory is the user's own (host/rundir.c):
 * no other user reaches these files.  Still, nothing here trusts them
 * further than bounds: slots and numbers read are only compared, indexes
 * are always the loops' own, and tests/fuzz/fuzz_rundir.c feeds the
 * readers arbitrary bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xrcd_file.h"

#define XRCD_MAGIC 0x31637278u	/* "xrc1" */
#define XS_MAGIC 0x32637278u	/* "xrc2" */

_Static_assert(sizeof(struct urxe_xrcd_entry) == 88, "registry entry layout");
_Static_assert(offsetof(struct urxe_xrcd_registry, e) == 64, "registry header");

int urxe_xrcd_registry_map(int fd, struct urxe_xrcd_registry **out)
{
	struct urxe_xrcd_registry *reg;

	/* The whole registry, shared, the file grown to hold it. */
	reg = urxe_regfile_map(fd, sizeof(*reg), 0, sizeof(*reg),
			       PROT_READ | PROT_WRITE);
	if (!reg)
		return -errno;
	if (reg->magic != XRCD_MAGIC || reg->nentries != URXE_XRCD_ENTRIES) {
		memset(reg, 0, sizeof(*reg));
		reg->magic = XRCD_MAGIC;
		reg->nentries = URXE_XRCD_ENTRIES;
	}
	*out = reg;
	return 0;
}

void urxe_xrcd_registry_unmap(struct urxe_xrcd_registry *reg)
{
	urxe_regfile_unmap(reg, sizeof(*reg));
}

bool urxe_xrcd_entry_live(int fd, int i)
{
	return urxe_ofd_held(fd, 1 + i);
}

static bool entry_matches(const struct urxe_xrcd_entry *e, const char *key,
			  const struct stat *st)
{
	return e->in_use && e->st_dev == st->st_dev && e->st_ino == st->st_ino &&
	       !strncmp(e->dev, key, sizeof(e->dev));
}

int urxe_xrcd_registry_join(struct urxe_xrcd_registry *reg, int fd,
			    const char *key, const struct stat *st, int oflags,
			    uint32_t *gen, bool *created)
{
	int i, free_i = -1, rc;

	for (i = 0; i < URXE_XRCD_ENTRIES; i++) {
		struct urxe_xrcd_entry *e = &reg->e[i];

		if (!e->in_use || !urxe_xrcd_entry_live(fd, i)) {
			if (free_i < 0)
				free_i = i;
			continue;
		}
		if (entry_matches(e, key, st))
			break;
	}
	if (i < URXE_XRCD_ENTRIES) {
		if ((oflags & O_CREAT) && (oflags & O_EXCL))
			return -EINVAL;
	} else {
		if (!(oflags & O_CREAT))
			return -EAGAIN;
		if (free_i < 0)
			return -ENOSPC;
		i = free_i;
		reg->e[i].st_dev = st->st_dev;
		reg->e[i].st_ino = st->st_ino;
		snprintf(reg->e[i].dev, sizeof(reg->e[i].dev), "%s", key);
		reg->e[i].gen++;
		reg->e[i].in_use = 1;
		*created = true;
	}
	rc = urxe_ofd_lock(fd, F_OFD_SETLK, F_RDLCK, 1 + i);
	if (rc)
		return rc;
	*gen = reg->e[i].gen;
	return i;
}

/* ---- a domain's tables ---- */

bool urxe_xs_slot_live(int fd, unsigned int mine, unsigned int slot)
{
	return slot == mine || urxe_ofd_held(fd, URXE_XS_LIVE + (off_t)slot);
}

int urxe_xs_map(int fd, unsigned int slot, struct urxe_xs_file **out)
{
	struct urxe_xs_file *f;
	int rc, i;

	rc = urxe_ofd_lock(fd, F_OFD_SETLKW, F_WRLCK, 0);
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
	urxe_ofd_lock(fd, F_OFD_SETLK, F_UNLCK, 0);
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
