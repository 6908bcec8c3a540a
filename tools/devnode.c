// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe run --dev-node: device nodes for programs that look for them.
 *
 * Some verbs consumers (UCX, and Open MPI and MPICH through it) skip any
 * device whose /dev/infiniband/<dev_name> is not a character device they
 * may read and write, although they never open it: they reach the device
 * through ibv_open_device().  A host without RDMA hardware has no
 * /dev/infiniband, and only root can make one there.
 *
 * So the program runs in a user and mount namespace of its own, made
 * without privilege, whose /dev is a small tmpfs holding a bind mount of
 * every entry of the real /dev (so /dev/null, /dev/pts and /dev/shm --
 * where urxe's runtime directory lives -- are the host's own) plus
 * /dev/infiniband/uverbsN, one per configured device, each a bind mount of
 * /dev/null: a character device anyone may read and write, and harmless to
 * open.  The user and group map to themselves, so the program keeps its
 * identity; the namespace's capabilities end at execve(), since the
 * program's uid is not 0 in it.  The new tree is built on a tmpfs mounted
 * over /tmp for the moment, then moved onto /dev, which needs no scratch
 * directory on disk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/host.h>

#include "cli.h"

#define STAGE "/tmp"		/* any directory that surely exists */

static const char *const none[] = { NULL };

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* This user and group, mapped to themselves in the new user namespace. */
static int map_self(uid_t uid, gid_t gid)
{
	char map[64];
	int rc;

	snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
	rc = write_file("/proc/self/uid_map", map);
	if (rc)
		return rc;
	/* Required before an unprivileged gid_map. */
	rc = write_file("/proc/self/setgroups", "deny");
	if (rc && rc != -ENOENT)
		return rc;
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	return write_file("/proc/self/gid_map", map);
}

/* @dst/@name becomes a bind mount of @src/@name, of whatever kind. */
static int bind_entry(const char *src, const char *dst, const char *name)
{
	char from[PATH_MAX], to[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(from, sizeof(from), "%s/%s", src, name);
	snprintf(to, sizeof(to), "%s/%s", dst, name);
	if (lstat(from, &st))
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(from, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		return symlink(link, to) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(to, st.st_mode & 07777))
			return -errno;
	} else {
		fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	return mount(from, to, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
}

/* Every entry of @src, bound into @dst but those @skip lists. */
static int bind_all(const char *src, const char *dst, const char *const *skip)
{
	const char *const *k;

	struct dirent *e;
	DIR *d = opendir(src);
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (e = readdir(d))) {
		for (k = skip; *k && strcmp(e->d_name, *k); k++)
			;
		if (*k || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		rc = bind_entry(src, dst, e->d_name);
		/* Some entries cannot be bound (a vanished one); go on. */
		if (rc == -ENOENT)
			rc = 0;
	}
	closedir(d);
	return rc;
}

/*
 * STAGE/infiniband: what /dev/infiniband holds already (a host with RDMA
 * hardware), plus uverbs0 .. uverbs<@ndev - 1> where missing.
 */
static int make_infiniband(unsigned int ndev)
{
	char path[PATH_MAX];
	unsigned int i;
	int fd, rc;

	if (mkdir(STAGE "/infiniband", 0755))
		return -errno;
	if (!access("/dev/infiniband", F_OK)) {
		rc = bind_all("/dev/infiniband", STAGE "/infiniband", none);
		if (rc)
			return rc;
	}
	for (i = 0; i < ndev; i++) {
		snprintf(path, sizeof(path), STAGE "/infiniband/uverbs%u", i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			if (errno == EEXIST)
				continue;	/* a real device's node */
			return -errno;
		}
		close(fd);
		if (mount("/dev/null", path, NULL, MS_BIND, NULL))
			return -errno;
	}
	return 0;
}

/*
 * STAGE/shm: a directory of ours (sticky, as /dev/shm), holding the host's
 * <base>/urxe-v2-<uid>.  Not the host's /dev/shm itself: root, its owner,
 * is no one in this user namespace (uid 65534), and the library rightly
 * refuses a runtime directory whose owner could move its files away.  So
 * the program's own POSIX shared memory is private to its namespace (and
 * shared with its children: every rank one mpirun starts), while urxe's
 * files are the host's: its instances meet every other of the user's.
 */
static int make_shm(void)
{
	char name[32];
	int rc;

	if (mkdir(STAGE "/shm", 01777) || chmod(STAGE "/shm", 01777))
		return -errno;
	urxe_rundir_user_name(name, sizeof(name));
	rc = bind_entry(URXE_RUNDIR_DEFAULT, STAGE "/shm", name);
	return rc == -ENOENT ? 0 : rc;
}

static int build_dev(unsigned int ndev)
{
	static const char *const skip[] = { "infiniband", "shm", NULL };
	int rc;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID, "mode=0755"))
		return -errno;
	rc = bind_all("/dev", STAGE, skip);
	if (!rc)
		rc = make_infiniband(ndev);
	if (!rc)
		rc = make_shm();
	if (rc)
		return rc;
	return mount(STAGE, "/dev", NULL, MS_MOVE, NULL) ? -errno : 0;
}

/* True when every node is there already: nothing to do. */
static bool nodes_present(unsigned int ndev)
{
	char path[64];
	struct stat st;
	unsigned int i;

	for (i = 0; i < ndev; i++) {
		snprintf(path, sizeof(path), "/dev/infiniband/uverbs%u", i);
		if (stat(path, &st) || !S_ISCHR(st.st_mode) ||
		    access(path, R_OK | W_OK))
			return false;
	}
	return true;
}

int urxe_cli_devnode_enter(unsigned int ndev)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	const char *rdir;
	int rc;

	ndev = ndev ? ndev : 1;
	if (nodes_present(ndev))
		return 0;
	/*
	 * The user's runtime directory, made and checked here, where owners
	 * are still what they are; inside, only ours can be seen for what it
	 * is.  A base other than the default one must then be the user's own.
	 */
	rdir = getenv("URXE_RUNDIR");
	rc = urxe_rundir_user(rdir && *rdir ? rdir : URXE_RUNDIR_DEFAULT);
	if (rc < 0)
		return rc;
	close(rc);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		rc = errno;
		fprintf(stderr,
			"urxe: run --dev-node: cannot make a user namespace (%s): user namespaces are off here (sysctl kernel.unprivileged_userns_clone, or a container's seccomp profile); instead, as root once: mkdir -p /dev/infiniband && mknod -m 666 /dev/infiniband/uverbs0 c 1 3 (a null device), or run the container with --device /dev/null:/dev/infiniband/uverbs0\n",
			strerror(rc));
		return -rc;
	}
	rc = map_self(uid, gid);
	if (!rc)
		rc = build_dev(ndev);
	if (rc)
		fprintf(stderr,
			"urxe: run --dev-node: cannot build /dev/infiniband in the program's namespace: %s\n",
			strerror(-rc));
	return rc;
}
