// SPDX-License-Identifier: BSD-2-Clause
/*
 * Host-wide slots.  Every device instance (one per process and device)
 * claims a slot: a write lock, taken with F_OFD_SETLK, on byte k of
 * <rundir>/slots.  The lock belongs to the open file description, so the
 * kernel drops it when the holder dies, and two instances in one process
 * (two descriptions) exclude each other just as two processes do.
 *
 * The runtime directory is shared by every user: sticky and world-writable
 * (1777) like /tmp, with its files mode 0666.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/netdev.h>

int urxe_rundir_prepare(const char *rundir)
{
	struct stat st;

	if (mkdir(rundir, 01777) == 0) {
		/* mkdir() obeys the umask; the directory is for everyone. */
		if (chmod(rundir, 01777) && errno != EPERM)
			return -errno;
		return 0;
	}
	if (errno != EEXIST)
		return -errno;
	if (stat(rundir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

int urxe_rundir_open(const char *rundir, const char *file)
{
	char path[4096];
	int fd, rc;

	rc = urxe_rundir_prepare(rundir);
	if (rc) {
		urxe_err("cannot use runtime directory %s: %s (set URXE_RUNDIR to a writable directory)",
			 rundir, strerror(-rc));
		return rc;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", rundir, file) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0) {
		rc = -errno;
		urxe_err("cannot open %s: %s (it must be mode 0666 in a 1777 directory)",
			 path, strerror(errno));
		return rc;
	}
	/* The creator's umask may have narrowed the mode; others need it. */
	fchmod(fd, 0666);
	return fd;
}

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

bool urxe_ofd_held(int fd, off_t at)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = at,
		.l_len = 1,
	};

	if (fcntl(fd, F_OFD_GETLK, &fl))
		return true;	/* when in doubt, held */
	return fl.l_type != F_UNLCK;
}

/*
 * The address index of slot @k: the slot itself in the default runtime
 * directory; in any other, a place in 1024 .. 1024 + 61000 picked by a
 * hash of its path, so that processes of different runtime directories
 * (each test has its own) seldom meet on one address — and when they
 * would, the claim probes and moves on.
 */
static unsigned int addr_index(const char *rundir, unsigned int k)
{
	uint32_t h = 2166136261u;

	if (!strcmp(rundir, URXE_RUNDIR_DEFAULT))
		return k;
	for (; *rundir; rundir++)
		h = (h ^ (uint8_t)*rundir) * 16777619u;
	return 1024 + (k - URXE_SLOT_FIRST + h % 61000) % 61000;
}

int urxe_slot_claim(const char *rundir, struct urxe_slot *slot)
{
	unsigned int k;
	int fd, rc;

	fd = urxe_rundir_open(rundir, "slots");
	if (fd < 0)
		return fd;
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		rc = urxe_ofd_lock(fd, F_OFD_SETLK, F_WRLCK, k);
		if (!rc) {
			slot->fd = fd;
			slot->index = k;
			slot->addr_index = addr_index(rundir, k);
			return 0;
		}
		if (rc != -EAGAIN && rc != -EACCES) {
			close(fd);
			return rc;
		}
	}
	close(fd);
	urxe_err("all %d slots of %s are taken: too many urxe processes on this host",
		 URXE_SLOT_LAST - URXE_SLOT_FIRST + 1, rundir);
	return -EUSERS;
}

void urxe_slot_release(struct urxe_slot *slot)
{
	if (slot->fd >= 0)
		close(slot->fd);	/* closing the description drops its lock */
	slot->fd = -1;
}

int urxe_slot_busy(const char *rundir, unsigned int index)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = index,
		.l_len = 1,
	};
	int fd, rc;

	fd = urxe_rundir_open(rundir, "slots");
	if (fd < 0)
		return fd;
	/* Unlike urxe_ofd_held(): a failure is told, not taken as held. */
	rc = fcntl(fd, F_OFD_GETLK, &fl) ? -errno : fl.l_type != F_UNLCK;
	close(fd);
	return rc;
}

int urxe_udp_addr_free(struct in_addr addr)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(4791),
		.sin_addr = addr,
	};
	int fd, rc;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ? -errno : 1;
	close(fd);
	return rc == -EADDRINUSE ? 0 : rc;
}

struct in_addr urxe_slot_loopback_addr(unsigned int index)
{
	struct in_addr a;
	/* 127.117.h.l with h, l >= 1: never a network or broadcast address. */
	unsigned int h = 1 + index / 250, l = 1 + index % 250;

	a.s_addr = htonl(127u << 24 | 117u << 16 | h << 8 | l);
	return a;
}
