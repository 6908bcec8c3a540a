// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host-wide multicast registry for loopback devices: which slots have
 * QPs attached to which group.  Loopback has no IP multicast between the
 * slots' own addresses, so a sender looks the group up here and sends a
 * unicast copy to each member slot's 127.117.h.l.
 *
 * <rundir>/mcast is a table of fixed records, changed under a whole-file
 * OFD write lock and read under a read lock.  A record names its writer's
 * pid: a slot's next claimant (the old holder died, its lock with it)
 * drops the records it inherited at its first join, readers skip records
 * of slots nobody holds, and a join that finds the table full reclaims
 * those, so a process that dies attached leaves nothing that matters.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <urxe/host.h>

#define MCAST_FILE "mcast"

struct mcast_rec {
	uint8_t gid[16];
	uint32_t slot;
	uint32_t addr_index;
	int32_t pid;
	uint32_t refs;			/* 0: a free record */
};

_Static_assert(sizeof(struct mcast_rec) == 32, "mcast record");

#define TABLE_BYTES (sizeof(struct mcast_rec) * URXE_MCAST_REGISTRY)

/* Opens, locks and reads the table into @t; returns the fd. */
static int load(const char *rundir, short type, struct mcast_rec *t)
{
	ssize_t n;
	int fd, rc;

	fd = urxe_rundir_open(rundir, MCAST_FILE);
	if (fd < 0)
		return fd;
	rc = urxe_ofd_lock_file(fd, type);
	if (rc)
		goto err;
	memset(t, 0, TABLE_BYTES);
	n = pread(fd, t, TABLE_BYTES, 0);
	if (n < 0) {
		rc = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	return rc;
}

static int store(int fd, const struct mcast_rec *t)
{
	ssize_t n = pwrite(fd, t, TABLE_BYTES, 0);

	if (n < 0)
		return -errno;
	return n == (ssize_t)TABLE_BYTES ? 0 : -EIO;
}

int urxe_mcast_join(const char *rundir, const struct urxe_slot *slot,
		    const uint8_t gid[16])
{
	struct mcast_rec t[URXE_MCAST_REGISTRY], *free_rec = NULL, *r = NULL;
	int32_t pid = (int32_t)getpid();
	unsigned int i;
	int fd, rc, sfd = -1;

	fd = load(rundir, F_WRLCK, t);
	if (fd < 0)
		return fd;
	for (i = 0; i < URXE_MCAST_REGISTRY; i++) {
		/* A dead holder's records of our slot: ours to clear. */
		if (t[i].refs && t[i].slot == slot->index && t[i].pid != pid)
			memset(&t[i], 0, sizeof(t[i]));
		if (!t[i].refs && !free_rec)
			free_rec = &t[i];
		else if (t[i].refs && t[i].slot == slot->index &&
			 !memcmp(t[i].gid, gid, 16))
			r = &t[i];
	}
	/* Full: records of slots nobody holds any more make room. */
	if (!r && !free_rec)
		sfd = urxe_rundir_open(rundir, "slots");
	for (i = 0; sfd >= 0 && !r && !free_rec && i < URXE_MCAST_REGISTRY; i++) {
		if (urxe_slot_busy_fd(sfd, t[i].slot) == 0) {
			memset(&t[i], 0, sizeof(t[i]));
			free_rec = &t[i];
		}
	}
	if (sfd >= 0)
		close(sfd);
	rc = -ENOSPC;
	if (!r && !free_rec)
		goto out;
	if (!r) {
		r = free_rec;
		memcpy(r->gid, gid, 16);
		r->slot = slot->index;
		r->addr_index = slot->addr_index;
		r->pid = pid;
	}
	r->refs++;
	rc = store(fd, t);
out:
	close(fd);			/* drops the lock */
	return rc;
}

int urxe_mcast_leave(const char *rundir, const struct urxe_slot *slot,
		     const uint8_t gid[16])
{
	struct mcast_rec t[URXE_MCAST_REGISTRY];
	int32_t pid = (int32_t)getpid();
	unsigned int i;
	int fd, rc = -ENOENT;

	fd = load(rundir, F_WRLCK, t);
	if (fd < 0)
		return fd;
	for (i = 0; i < URXE_MCAST_REGISTRY; i++) {
		if (t[i].refs && t[i].slot == slot->index && t[i].pid == pid &&
		    !memcmp(t[i].gid, gid, 16)) {
			if (!--t[i].refs)
				memset(&t[i], 0, sizeof(t[i]));
			rc = store(fd, t);
			break;
		}
	}
	close(fd);
	return rc;
}

int urxe_mcast_members(const char *rundir, const uint8_t gid[16],
		       unsigned int *addr_index, unsigned int max)
{
	struct mcast_rec t[URXE_MCAST_REGISTRY];
	unsigned int i, n = 0;
	int fd, sfd = -1;

	fd = load(rundir, F_RDLCK, t);
	if (fd < 0)
		return fd;
	close(fd);
	for (i = 0; i < URXE_MCAST_REGISTRY && n < max; i++) {
		if (!t[i].refs || memcmp(t[i].gid, gid, 16) ||
		    t[i].slot > URXE_SLOT_LAST || t[i].addr_index >= 62500)
			continue;
		/* A slot nobody holds: its member died attached. */
		if (sfd < 0 && (sfd = urxe_rundir_open(rundir, "slots")) < 0)
			break;
		if (urxe_slot_busy_fd(sfd, t[i].slot) != 1)
			continue;
		addr_index[n++] = t[i].addr_index;
	}
	if (sfd >= 0)
		close(sfd);
	return (int)n;
}
