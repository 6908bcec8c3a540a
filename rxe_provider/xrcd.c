// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC domains (ibv_open_xrcd(3)).  fd = -1 makes a private domain; a
 * file's descriptor names the domain of that file's inode on this device,
 * one domain for every opener on the host, in any process.
 *
 * Host-wide state is one file, <rundir>/xrcd, mapped shared:
 *   a header, then URXE_XRCD_ENTRIES entries (device, st_dev, st_ino, gen).
 * Open file description locks on the same file carry the life of it:
 *   byte 0      the registry mutex (write lock, blocking);
 *   byte 1 + i  a read lock per open handle of entry i's domain.
 * A domain exists while anyone holds a read lock on its byte, so it ends
 * with its last close — or with the death of its last holder, without
 * anyone cleaning up.  An entry whose byte nobody holds is free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"
#include "xrc_shared.h"

#define XRCD_MAGIC 0x31637278u	/* "xrc1" */

struct xrcd_entry {
	uint32_t in_use;
	uint32_t gen;
	uint64_t st_dev;
	uint64_t st_ino;
	char dev[URXE_DEV_NAME_MAX];
};

struct xrcd_registry {
	uint32_t magic;
	uint32_t nentries;
	uint8_t pad[56];
	struct xrcd_entry e[URXE_XRCD_ENTRIES];
};

_Static_assert(sizeof(struct xrcd_entry) == 88, "registry entry layout");
_Static_assert(offsetof(struct xrcd_registry, e) == 64, "registry header");

static atomic_ullong private_ids = 1;

/* Whether a handle other than @fd's holds entry @i's domain open. */
static bool entry_live(int fd, int i)
{
	return urxe_ofd_held(fd, 1 + i);
}

/* Maps the registry; registry mutex held. */
static int registry_map(int fd, struct xrcd_registry **out)
{
	struct xrcd_registry *reg;
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if ((size_t)st.st_size < sizeof(*reg) && ftruncate(fd, sizeof(*reg)))
		return -errno;
	reg = mmap(NULL, sizeof(*reg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (reg == MAP_FAILED)
		return -errno;
	if (reg->magic != XRCD_MAGIC) {
		memset(reg, 0, sizeof(*reg));
		reg->magic = XRCD_MAGIC;
		reg->nentries = URXE_XRCD_ENTRIES;
	}
	*out = reg;
	return 0;
}

static bool entry_matches(const struct xrcd_entry *e, const char *dev,
			  const struct stat *st)
{
	return e->in_use && e->st_dev == st->st_dev && e->st_ino == st->st_ino &&
	       !strncmp(e->dev, dev, sizeof(e->dev));
}

/*
 * Finds or creates the domain of @st on @dev and takes this handle's read
 * lock on it.  Registry mutex held.  Returns the entry index or -errno.
 */
static int registry_join(struct xrcd_registry *reg, int fd, const char *dev,
			 const struct stat *st, int oflags, uint32_t *gen,
			 bool *created)
{
	int i, free_i = -1, rc;

	for (i = 0; i < URXE_XRCD_ENTRIES; i++) {
		struct xrcd_entry *e = &reg->e[i];

		if (!e->in_use || !entry_live(fd, i)) {
			if (free_i < 0)
				free_i = i;
			continue;
		}
		if (entry_matches(e, dev, st))
			break;
	}
	if (i < URXE_XRCD_ENTRIES) {
		if ((oflags & O_CREAT) && (oflags & O_EXCL))
			return -EINVAL;
	} else {
		if (!(oflags & O_CREAT))
			return -EAGAIN;
		if (free_i < 0) {
			urxe_err("all %d XRC domains of this host are in use",
				 URXE_XRCD_ENTRIES);
			return -ENOSPC;
		}
		i = free_i;
		reg->e[i].st_dev = st->st_dev;
		reg->e[i].st_ino = st->st_ino;
		snprintf(reg->e[i].dev, sizeof(reg->e[i].dev), "%s", dev);
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

/*
 * Which device a domain is of, host-wide: the name, the interface and the
 * network namespace (two namespaces may each have an rxe0 on their own
 * interfaces: they are two devices, and their domains are not one).
 */
static void device_key(const struct urxe_dev *dev, char *key, size_t len)
{
	struct stat ns;
	unsigned long ino = 0;

	if (!stat("/proc/self/ns/net", &ns))
		ino = (unsigned long)ns.st_ino;
	snprintf(key, len, "%.32s/%.15s/%lu", dev->desc.name, dev->desc.netdev,
		 ino);
}

static int open_shared(struct urxe_xrcd *x, int fd, int oflags)
{
	char key[URXE_DEV_NAME_MAX];
	struct xrcd_registry *reg;
	struct stat st;
	uint32_t gen = 0;
	bool created = false;
	int lfd, rc;

	if (fstat(fd, &st))
		return -EBADF;
	lfd = urxe_rundir_open(x->dev->desc.rundir, "xrcd");
	if (lfd < 0)
		return lfd;
	rc = urxe_ofd_lock(lfd, F_OFD_SETLKW, F_WRLCK, 0);
	if (rc)
		goto err_close;
	rc = registry_map(lfd, &reg);
	if (rc)
		goto err_close;
	device_key(x->dev, key, sizeof(key));
	rc = registry_join(reg, lfd, key, &st, oflags, &gen,
			   &created);
	munmap(reg, sizeof(*reg));
	if (rc < 0)
		goto err_close;
	urxe_ofd_lock(lfd, F_OFD_SETLK, F_UNLCK, 0);
	x->entry = rc;
	x->lock_fd = lfd;
	x->domain_id = (uint64_t)gen << 32 | (uint32_t)rc;
	/* A shared file its last user left behind (it died) goes. */
	if (created)
		urxe_xrc_dom_unlink(x->dev->desc.rundir,
				    (uint64_t)(gen - 1) << 32 | (uint32_t)rc);
	return 0;

err_close:
	close(lfd);	/* drops the mutex too */
	return rc;
}

int urxe_xrcd_open(struct urxe_dev *dev, struct ibv_context *ctx,
		   const struct ibv_xrcd_init_attr *attr, struct ibv_xrcd **out)
{
	struct urxe_xrcd *x;
	int rc;

	if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED)
		return -EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return -EINVAL;
	if (dev->dead)
		return -EIO;
	if (attr->fd != -1 && fcntl(attr->fd, F_GETFD) < 0)
		return -EBADF;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->ibv.context = ctx;
	x->dev = dev;
	x->entry = -1;
	x->lock_fd = -1;
	x->file_fd = -1;
	atomic_init(&x->users, 0);
	if (attr->fd == -1) {
		x->domain_id = 1ull << 63 | atomic_fetch_add(&private_ids, 1);
		goto out;
	}
	/* Holding the file keeps its inode number from being reused. */
	x->file_fd = fcntl(attr->fd, F_DUPFD_CLOEXEC, 0);
	if (x->file_fd < 0) {
		rc = errno == EBADF ? -EBADF : -errno;
		goto err_free;
	}
	rc = open_shared(x, attr->fd, attr->oflags);
	if (rc)
		goto err_file;
out:
	pthread_mutex_lock(&dev->lock);
	x->next = dev->xrcds;
	dev->xrcds = x;
	pthread_mutex_unlock(&dev->lock);
	*out = &x->ibv;
	return 0;

err_file:
	close(x->file_fd);
err_free:
	free(x);
	return rc;
}

int urxe_xrcd_close(struct ibv_xrcd *ibx)
{
	struct urxe_xrcd *x = to_uxrcd(ibx);

	if (atomic_load(&x->users) > 0) {
		urxe_dbg("ibv_close_xrcd: %d XRC SRQs and TGT QP handles made through this handle still exist: destroy them first",
			 atomic_load(&x->users));
		return -EBUSY;
	}
	urxe_xrcd_release(x);
	return 0;
}

static void xrcd_unlist(struct urxe_xrcd *x)
{
	struct urxe_xrcd **pp;

	pthread_mutex_lock(&x->dev->lock);
	for (pp = &x->dev->xrcds; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&x->dev->lock);
}

void urxe_xrcd_release(struct urxe_xrcd *x)
{
	xrcd_unlist(x);
	/*
	 * A handle inherited across fork() shares its lock description with
	 * the parent: touching the locks would release the parent's claim.
	 */
	if (x->lock_fd >= 0 && !x->dev->dead) {
		struct xrcd_registry *reg;

		/* The last handle out marks the entry free. */
		if (!urxe_ofd_lock(x->lock_fd, F_OFD_SETLKW, F_WRLCK, 0) &&
		    !urxe_ofd_lock(x->lock_fd, F_OFD_SETLK, F_UNLCK, 1 + x->entry) &&
		    !entry_live(x->lock_fd, x->entry) &&
		    !registry_map(x->lock_fd, &reg)) {
			if ((reg->e[x->entry].gen == (uint32_t)(x->domain_id >> 32))) {
				reg->e[x->entry].in_use = 0;
				urxe_xrc_dom_unlink(x->dev->desc.rundir,
						    x->domain_id);
			}
			munmap(reg, sizeof(*reg));
		}
		urxe_ofd_lock(x->lock_fd, F_OFD_SETLK, F_UNLCK, 0);
	}
	if (x->lock_fd >= 0)
		close(x->lock_fd);
	if (x->file_fd >= 0)
		close(x->file_fd);
	free(x);
}
