// SPDX-License-Identifier: BSD-2-Clause
/*
 * The runtime directory: where an instance keeps what it shares with the
 * other instances of its user (docs/design.md, "Many users on one host").
 *
 * URXE_RUNDIR (default /dev/shm) is a base shared by every user; each user
 * has a directory of its own in it, <base>/urxe-v2-<euid>, mode 0700, and
 * every file urxe keeps is in there, mode 0600.  Nothing of one user is in
 * reach of another: another local user can neither read, write, truncate,
 * replace nor lock those files.  The checks make sure of it:
 *
 *   the base   is owned by root or by us, and is sticky wherever anybody
 *              else may write to it (as /dev/shm and /tmp are): nobody else
 *              can then rename or remove our directory in it;
 *   ours       is a directory (not a link) we own, 0700;
 *   its files  are regular files (not links) we own.
 *
 * Every step works on descriptors (openat() from the base's), so nothing
 * can be swapped between a check and its use.  Where a check fails the
 * call fails with EACCES (or ENOTDIR) and a log line saying what to do:
 * another user who made a directory of our name first ("squatting") can
 * keep us from starting, never make us use its files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/host.h>
#include <urxe/log.h>

void urxe_rundir_user_name(char *buf, size_t len)
{
	snprintf(buf, len, "urxe-v2-%u", (unsigned int)geteuid());
}

/* The base, opened and checked; creates it (0700, ours) if missing. */
static int open_base(const char *rundir)
{
	uid_t me = geteuid();
	struct stat st;
	int fd;

	fd = open(rundir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && (!mkdir(rundir, 0700) || errno == EEXIST))
		fd = open(rundir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	if (st.st_uid != 0 && st.st_uid != me) {
		urxe_err("runtime directory %s belongs to uid %u: that user could move urxe's files away; set URXE_RUNDIR to a directory of yours or one of root's",
			 rundir, (unsigned int)st.st_uid);
		goto refuse;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		urxe_err("runtime directory %s is writable by others and not sticky (mode %o): anyone could replace urxe's files; chmod +t it or set URXE_RUNDIR",
			 rundir, (unsigned int)(st.st_mode & 07777));
		goto refuse;
	}
	return fd;
refuse:
	close(fd);
	return -EACCES;
}

int urxe_rundir_user(const char *rundir)
{
	char name[32];
	struct stat st;
	int base, fd, rc;

	base = open_base(rundir);
	if (base < 0)
		return base;
	urxe_rundir_user_name(name, sizeof(name));
	fd = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* EEXIST: another of our processes made it between the two calls. */
	if (fd < 0 && errno == ENOENT &&
	    (!mkdirat(base, name, 0700) || errno == EEXIST))
		fd = openat(base, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	close(base);
	if (rc) {
		/* O_NOFOLLOW on a link: ELOOP; a file of that name: ENOTDIR. */
		urxe_err("cannot use %s/%s: %s (it must be a directory of yours; remove what is there or set URXE_RUNDIR)",
			 rundir, name, strerror(-rc));
		return rc == -ELOOP ? -EACCES : rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (st.st_uid != geteuid()) {
		urxe_err("%s/%s belongs to uid %u, not to you: another user made it; ask root to remove it, or set URXE_RUNDIR to a directory of yours",
			 rundir, name, (unsigned int)st.st_uid);
		close(fd);
		return -EACCES;
	}
	/* Ours but opened up (by hand, or an old umask): ours alone again. */
	if ((st.st_mode & 077) && fchmod(fd, 0700)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* Opens @file in our directory with @flags; checks what it got. */
static int open_in(const char *rundir, const char *file, int flags)
{
	struct stat st;
	int dir, fd, rc;

	dir = urxe_rundir_user(rundir);
	if (dir < 0)
		return dir;
	/* O_NONBLOCK: a FIFO in the way must not block the open. */
	fd = openat(dir, file,
		    flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
	rc = fd < 0 ? -errno : 0;
	close(dir);
	if (rc)
		return rc == -ELOOP ? -EACCES : rc;
	if (fstat(fd, &st)) {
		rc = -errno;
	} else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		urxe_err("%s/.../%s is not a regular file of yours: remove it",
			 rundir, file);
		rc = -EACCES;
	} else if ((st.st_mode & 077) && (flags & O_ACCMODE) != O_RDONLY &&
		   fchmod(fd, 0600)) {
		rc = -errno;
	}
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int urxe_rundir_open(const char *rundir, const char *file)
{
	int fd = open_in(rundir, file, O_RDWR | O_CREAT);

	if (fd < 0 && fd != -EACCES)
		urxe_err("cannot open %s in the runtime directory %s: %s (set URXE_RUNDIR to a directory you can write)",
			 file, rundir, strerror(-fd));
	return fd;
}

int urxe_rundir_open_ro(const char *rundir, const char *file)
{
	return open_in(rundir, file, O_RDONLY);
}

int urxe_rundir_unlink(const char *rundir, const char *file)
{
	int dir = urxe_rundir_user(rundir), rc = 0;

	if (dir < 0)
		return dir;
	if (unlinkat(dir, file, 0) && errno != ENOENT)
		rc = -errno;
	close(dir);
	return rc;
}
