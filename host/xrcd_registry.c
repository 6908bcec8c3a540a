// SPDX-License-Identifier: BSD-2-Clause
/*
 * The registry of a user's XRC domains, <userdir>/xrcd (host.h), read and
 * written as bytes; rxe_provider/xrcd.c says what the domains are and
 * when entries come and go.  The directory is the user's own (rundir.c):
 * no other user reaches the file.  Still, nothing here trusts it further
 * than bounds: numbers read are only compared, indexes are always the
 * loops' own, and tests/fuzz/fuzz_rundir.c feeds the readers arbitrary
 * bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <urxe/host.h>

#define XRCD_MAGIC 0x31637278u	/* "xrc1" */

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
