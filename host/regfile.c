// SPDX-License-Identifier: BSD-2-Clause
/*
 * Registry files: the one way urxe's files in a user's runtime directory
 * (rundir.c) are locked, sized and mapped — the slots, the multicast
 * registry, the statistics, the XRC registry and domains (host.h).
 *
 * Locks are open file description (OFD) locks: they belong to the
 * description, not the process, so two instances in one process (two
 * descriptions) exclude each other just as two processes do, and the
 * kernel drops them when the holder dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/host.h>

int urxe_ofd_lock(int fd, int cmd, short type, off_t at)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = at,
		.l_len = 1,
	};

	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

int urxe_ofd_test(int fd, off_t at)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = at,
		.l_len = 1,
	};

	return fcntl(fd, F_OFD_GETLK, &fl) ? -errno : fl.l_type != F_UNLCK;
}

bool urxe_ofd_held(int fd, off_t at)
{
	return urxe_ofd_test(fd, at) != 0;	/* when in doubt, held */
}

int urxe_ofd_lock_file(int fd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	while (fcntl(fd, F_OFD_SETLKW, &fl)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int urxe_regfile_lock(int fd)
{
	return urxe_ofd_lock(fd, F_OFD_SETLKW, F_WRLCK, 0);
}

void urxe_regfile_unlock(int fd)
{
	urxe_ofd_lock(fd, F_OFD_SETLK, F_UNLCK, 0);
}

/* Grows the file once; growing it to the same size twice is harmless. */
static int grow(int fd, off_t size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_size < size && ftruncate(fd, size))
		return -errno;
	return 0;
}

/* The whole pages that hold @len bytes at @off (or at address @off). */
static void span(uintptr_t off, size_t len, uintptr_t *start, size_t *maplen)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	*start = off & ~(page - 1);
	*maplen = ((off - *start) + len + page - 1) & ~(page - 1);
}

void *urxe_regfile_map(int fd, off_t size, off_t off, size_t len, int prot)
{
	uintptr_t start;
	size_t maplen;
	uint8_t *p;

	if (size > 0 && grow(fd, size) < 0)
		return NULL;	/* errno is fstat's or ftruncate's */
	span((uintptr_t)off, len, &start, &maplen);
	p = mmap(NULL, maplen, prot, MAP_SHARED, fd, (off_t)start);
	return p == MAP_FAILED ? NULL : p + ((uintptr_t)off - start);
}

void urxe_regfile_unmap(const void *p, size_t len)
{
	uintptr_t start;
	size_t maplen;

	span((uintptr_t)p, len, &start, &maplen);
	munmap((void *)start, maplen);
}

int urxe_regfile_forget(void *p, size_t len)
{
	uintptr_t start;
	size_t maplen;

	span((uintptr_t)p, len, &start, &maplen);
	if (mmap((void *)start, maplen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -errno;
	return 0;
}
