// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC domains (ibv_open_xrcd(3)).  fd = -1 makes a private domain; a
 * file's descriptor names the domain of that file's inode on this device,
 * one domain for every opener of the user on the host, in any process
 * (another user's opener has a domain of its own: docs/design.md).
 *
 * The user's state is one file, <userdir>/xrcd, mapped shared
 * (host/xrcd_registry.c): a header, then URXE_XRCD_ENTRIES entries (device,
 * st_dev, st_ino, gen).
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
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"
#include "xrc_shared.h"

static atomic_ullong private_ids = 1;

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
	char key[URXE_XRCD_KEY_MAX];
	struct urxe_xrcd_registry *reg;
	struct stat st;
	uint32_t gen = 0;
	bool created = false;
	int lfd, rc;

	if (fstat(fd, &st))
		return -EBADF;
	lfd = urxe_rundir_open(x->dev->desc.rundir, "xrcd");
	if (lfd < 0)
		return lfd;
	rc = urxe_regfile_lock(lfd);
	if (rc)
		goto err_close;
	rc = urxe_xrcd_registry_map(lfd, &reg);
	if (rc)
		goto err_close;
	device_key(x->dev, key, sizeof(key));
	rc = urxe_xrcd_registry_join(reg, lfd, key, &st, oflags, &gen,
				     &created);
	urxe_xrcd_registry_unmap(reg);
	if (rc == -ENOSPC)
		urxe_err("all %d XRC domains of this user are in use",
			 URXE_XRCD_ENTRIES);
	if (rc < 0)
		goto err_close;
	urxe_regfile_unlock(lfd);
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
		struct urxe_xrcd_registry *reg;

		/* The last handle out marks the entry free. */
		if (!urxe_regfile_lock(x->lock_fd) &&
		    !urxe_ofd_lock(x->lock_fd, F_OFD_SETLK, F_UNLCK, 1 + x->entry) &&
		    !urxe_xrcd_entry_live(x->lock_fd, x->entry) &&
		    !urxe_xrcd_registry_map(x->lock_fd, &reg)) {
			if (reg->e[x->entry].gen == (uint32_t)(x->domain_id >> 32)) {
				reg->e[x->entry].in_use = 0;
				urxe_xrc_dom_unlink(x->dev->desc.rundir,
						    x->domain_id);
			}
			urxe_xrcd_registry_unmap(reg);
		}
		urxe_regfile_unlock(x->lock_fd);
	}
	if (x->lock_fd >= 0)
		close(x->lock_fd);
	if (x->file_fd >= 0)
		close(x->file_fd);
	free(x);
}
