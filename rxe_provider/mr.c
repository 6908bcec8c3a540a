// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory regions.  A kernel device pins the pages of a registration; urxe
 * reads and writes the application's memory directly, so registration
 * instead checks, in /proc/self/maps, that the range is mapped with the
 * rights the access flags imply (what ib_umem_get's get_user_pages would
 * have refused: EFAULT).  Keys come from the engine's key table, which
 * holds a reference on struct urxe_mem while a transfer uses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"

/*
 * IBV_ACCESS_FLUSH_GLOBAL/_PERSISTENT (rdma-core 45, kernel 6.2): known to
 * the kernel, which answers EOPNOTSUPP on a device without FLUSH.
 */
#define ACCESS_FLUSH (3u << 8)

#define ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
		      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
		      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | ACCESS_FLUSH)

/*
 * Rights that can write the memory, now or through a bound window: the
 * kernel's ib_access_writable().
 */
#define ACCESS_WRITABLE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* The kernel's ib_check_mr_access(), for a device without ODP or FLUSH. */
static int check_access(unsigned int access)
{
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* Optional bits (IBV_ACCESS_RELAXED_ORDERING...) are hints: ignored. */
	if (access & ~(ACCESS_KNOWN | IBV_ACCESS_OPTIONAL_RANGE))
		return -EINVAL;
	if (access & (IBV_ACCESS_ON_DEMAND | ACCESS_FLUSH))
		return -EOPNOTSUPP;
	return 0;
}

/* ---- /proc/self/maps ---- */

/* Parses a hex number ending at @stop; NULL when malformed. */
static const char *parse_hex(const char *s, const char *end, char stop,
			     uint64_t *out)
{
	uint64_t v = 0;
	const char *start = s;

	for (; s < end && *s != stop; s++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else
			return NULL;
		v = v << 4 | d;
	}
	if (s == start || s == end)
		return NULL;
	*out = v;
	return s + 1;
}

struct maps_walk {
	uint64_t cur;			/* first byte not yet covered */
	uint64_t end;
	bool write;
	int rc;				/* 1 while walking */
};

/* One line "lo-hi perms ...": advances the walk over [lo, hi). */
static void maps_line(struct maps_walk *w, const char *s, const char *e)
{
	uint64_t lo, hi;

	s = parse_hex(s, e, '-', &lo);
	if (s)
		s = parse_hex(s, e, ' ', &hi);
	if (!s || e - s < 2) {
		w->rc = -EIO;
		return;
	}
	if (hi <= w->cur)
		return;			/* below the range: the file is sorted */
	if (lo > w->cur || s[0] != 'r' || (w->write && s[1] != 'w')) {
		w->rc = -EFAULT;	/* a hole, or missing rights */
		return;
	}
	w->cur = hi;
	if (w->cur >= w->end)
		w->rc = 0;
}

/*
 * Streams the file through a stack buffer, stopping at the first line
 * that decides: the ranges applications register are usually found long
 * before the end.
 */
static int maps_check(uint64_t start, uint64_t end, bool write)
{
	struct maps_walk w = { .cur = start, .end = end, .write = write, .rc = 1 };
	char buf[8192];
	size_t have = 0;
	int fd;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (w.rc == 1) {
		char *p = buf, *nl;
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The end (or a failed read) before covering it all. */
			w.rc = n < 0 ? -errno : -EFAULT;
			break;
		}
		have += (size_t)n;
		while (w.rc == 1 && (nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
			maps_line(&w, p, nl);
			p = nl + 1;
		}
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		if (have == sizeof(buf))
			w.rc = -EIO;	/* a line longer than any path */
	}
	close(fd);
	if (w.rc == -EIO)
		urxe_warn("cannot parse /proc/self/maps");
	return w.rc;
}

int urxe_mem_check_range(const void *addr, size_t length, bool write)
{
	uint64_t start = (uintptr_t)addr;

	/* ib_umem_get: an empty or wrapping range is EINVAL. */
	if (!length || start + length < start)
		return -EINVAL;
	return maps_check(start, start + length, write);
}

static int check_range(const void *addr, size_t length, unsigned int access)
{
	return urxe_mem_check_range(addr, length, access & ACCESS_WRITABLE);
}

/* ---- verbs ---- */

int urxe_mr_reg(struct urxe_dev *dev, struct ibv_pd *ibpd, void *addr,
		size_t length, uint64_t iova, unsigned int access,
		struct ibv_mr **out)
{
	struct urxe_mr *mr;
	int rc;

	if (!ibpd)
		return -EINVAL;
	rc = check_access(access);
	if (rc)
		return rc;
	rc = check_range(addr, length, access);
	if (rc)
		return rc;
	if (dev->dead)
		return -EIO;
	if (!dev->eng)
		return -ENODEV;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->dev = dev;
	mr->pd = to_upd(ibpd);
	mr->mem.addr = addr;
	mr->mem.length = length;
	/* IBA 10.6.3.2: a zero-based region is addressed from offset 0. */
	mr->mem.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->mem.access = access & ACCESS_KNOWN;
	mr->mem.pd = ibpd->handle;
	rc = urxe_engine_mem_add(dev->eng, &mr->mem);
	if (rc < 0) {
		free(mr);
		return rc;
	}
	mr->published = true;
	atomic_fetch_add(&mr->pd->users, 1);
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->mem.lkey;
	mr->ibv.lkey = mr->mem.lkey;
	mr->ibv.rkey = mr->mem.rkey;
	urxe_import_add_mr(mr);
	*out = &mr->ibv;
	return 0;
}

/* A new translation: unpublish (refused while in use), change, publish. */
static int rereg_translation(struct urxe_mr *mr, struct urxe_pd *pd,
			     void *addr, size_t length, unsigned int access)
{
	struct urxe_engine *eng = mr->dev->eng;
	int rc;

	rc = urxe_engine_mem_remove(eng, &mr->mem);
	if (rc)
		return rc;
	mr->published = false;
	mr->mem.addr = addr;
	mr->mem.length = length;
	/* As ibv_cmd_rereg_mr: the new iova is the new address. */
	mr->mem.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : (uintptr_t)addr;
	mr->mem.access = access & ACCESS_KNOWN;
	mr->mem.pd = pd->ibv.handle;
	rc = urxe_engine_mem_add(eng, &mr->mem);
	if (rc < 0)
		return rc;		/* IBV_REREG_MR_ERR_CMD: only dereg now */
	mr->published = true;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->mem.lkey;
	mr->ibv.lkey = mr->mem.lkey;
	mr->ibv.rkey = mr->mem.rkey;
	return 0;
}

/*
 * PD and access in place, keys kept.  The engine reads these fields under
 * its reference without a lock: narrow the rights first, so that no
 * moment grants what neither the old nor the new registration grants.
 */
static void rereg_in_place(struct urxe_mr *mr, struct urxe_pd *pd,
			   unsigned int access)
{
	unsigned int now = mr->mem.access, want = access & ACCESS_KNOWN;

	__atomic_store_n(&mr->mem.access, now & want, __ATOMIC_RELEASE);
	__atomic_store_n(&mr->mem.pd, pd->ibv.handle, __ATOMIC_RELEASE);
	__atomic_store_n(&mr->mem.access, want, __ATOMIC_RELEASE);
}

int urxe_mr_rereg(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
		  void *addr, size_t length, unsigned int access)
{
	struct urxe_mr *mr = to_umr(ibmr);
	struct urxe_pd *pd = mr->pd;
	int rc;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		return -EINVAL;
	if (!mr->published)
		return -EINVAL;		/* a failed rereg left it unusable */
	if (mr->dev->dead)
		return -EIO;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!ibpd || ibpd->context != ibmr->context)
			return -EINVAL;
		pd = to_upd(ibpd);
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		rc = check_access(access);
		if (rc)
			return rc;
	} else {
		access = mr->mem.access;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = mr->mem.addr;
		length = mr->mem.length;
	}
	if (flags & (IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS)) {
		rc = check_range(addr, length, access);
		if (rc)
			return rc;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		rc = rereg_translation(mr, pd, addr, length, access);
		if (rc)
			return rc;
	} else {
		rereg_in_place(mr, pd, access);
	}
	if (pd != mr->pd) {
		atomic_fetch_add(&pd->users, 1);
		atomic_fetch_sub(&mr->pd->users, 1);
		mr->pd = pd;
		ibmr->pd = &pd->ibv;
	}
	return 0;
}

int urxe_mr_dereg(struct ibv_mr *ibmr)
{
	struct urxe_mr *mr = to_umr(ibmr);
	int rc;

	if (mr->imported) {
		urxe_mr_unimport(ibmr);
		return 0;
	}
	/* After fork() the inherited engine is gone: nothing to unpublish. */
	if (mr->published && !mr->dev->dead) {
		rc = urxe_engine_mem_remove(mr->dev->eng, &mr->mem);
		if (rc)
			return rc;
	}
	urxe_import_del_mr(mr);
	atomic_fetch_sub(&mr->pd->users, 1);
	free(mr);
	return 0;
}
