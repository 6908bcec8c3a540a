// SPDX-License-Identifier: BSD-2-Clause
/*
 * Slots.  Every device instance (one per process and device) claims a
 * slot k in 1..1022: the top bits of its QPNs, and on loopback its address
 * 127.117.h.l.  A claim holds two things, both dropped by the kernel when
 * the holder dies:
 *
 *   - a write lock, taken with F_OFD_SETLK, on byte k of `slots` in the
 *     user's own runtime directory (rundir.c): k is unique among this
 *     user's instances on the host, in every network namespace, so the
 *     user's files (counters, mcast, XRC) can be indexed by it;
 *   - the abstract unix socket name "urxe-v2/<base>/slot/<k>", bound: k is
 *     unique among every user's instances of the network namespace, and
 *     the kernel, not a file anybody could write, says so.  An unlistened
 *     stream socket: nobody can connect to it or send it anything.
 *
 * The locks belong to the open file description, so two instances in one
 * process (two descriptions) exclude each other just as two processes do.
 * A user's instances are at most URXE_INSTANCES_MAX (default 512 of the
 * 1022; /etc/urxe/limits.conf sets it host-wide, the variable only lowers
 * it): no runaway program takes every slot of the host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <urxe/host.h>
#include <urxe/log.h>

static uint64_t base_hash(const char *rundir)
{
	uint64_t h = 14695981039346656037ull;

	for (; *rundir; rundir++)
		h = (h ^ (uint8_t)*rundir) * 1099511628211ull;
	return h;
}

static bool base_default(const char *rundir)
{
	return !strcmp(rundir, URXE_RUNDIR_DEFAULT);
}

/*
 * The address index of slot @k: the slot itself under the default base; in
 * any other, a place in 1024 .. 1024 + 61000 picked by a hash of its path,
 * so that processes of different bases (each test has its own) seldom meet
 * on one address — and when they would, the claim probes and moves on.
 */
static unsigned int addr_index(const char *rundir, unsigned int k)
{
	if (base_default(rundir))
		return k;
	return 1024 + (k - URXE_SLOT_FIRST +
		       (unsigned int)(base_hash(rundir) % 61000)) % 61000;
}

unsigned int urxe_slot_addr_index(const char *rundir, unsigned int k)
{
	return addr_index(rundir, k);
}

static socklen_t slot_name(const char *rundir, unsigned int k,
			   struct sockaddr_un *sun)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* sun_path[0] = '\0': the abstract namespace, no file anywhere. */
	if (base_default(rundir))
		n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
			     "urxe-v2/slot/%u", k);
	else
		n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
			     "urxe-v2/%016llx/slot/%u",
			     (unsigned long long)base_hash(rundir), k);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int urxe_slot_from_name(const char *rundir, const char *name)
{
	unsigned long long h;
	unsigned int k;
	char tail;

	if (base_default(rundir)) {
		if (sscanf(name, "urxe-v2/slot/%u%c", &k, &tail) != 1)
			return -1;
	} else if (sscanf(name, "urxe-v2/%16llx/slot/%u%c", &h, &k, &tail) != 2 ||
		   h != base_hash(rundir)) {
		return -1;
	}
	return k >= URXE_SLOT_FIRST && k <= URXE_SLOT_LAST ? (int)k : -1;
}

/* Binds slot @k's name: the fd, -EADDRINUSE where anyone has it, -errno. */
static int name_bind(const char *rundir, unsigned int k)
{
	struct sockaddr_un sun;
	socklen_t len = slot_name(rundir, k, &sun);
	int fd, rc;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!bind(fd, (struct sockaddr *)&sun, len))
		return fd;
	rc = -errno;
	close(fd);
	return rc;
}

static unsigned int limit_test;

void urxe_slot_test_limit(unsigned int max)
{
	limit_test = max;
}

/*
 * How many instances a user may have: the administrator's figure from
 * URXE_LIMITS_CONF ("instances_per_user N", believed only in a file root
 * owns and nobody else may write), lowered by URXE_INSTANCES_MAX.
 */
unsigned int urxe_slot_user_limit(void)
{
	unsigned int max = URXE_INSTANCES_DEFAULT, v;
	const char *env = getenv("URXE_INSTANCES_MAX");
	char line[256];
	struct stat st;
	FILE *f;

	if (limit_test)
		return limit_test;
	f = fopen(URXE_LIMITS_CONF, "re");
	if (f && !fstat(fileno(f), &st) && st.st_uid == 0 &&
	    !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " instances_per_user %u", &v) == 1 &&
			    v >= 1)
				max = v;
	}
	if (f)
		fclose(f);
	if (env && *env) {
		char *end;
		unsigned long e = strtoul(env, &end, 10);

		if (*end || e < 1)
			urxe_warn("URXE_INSTANCES_MAX=%s is not a count; ignored",
				  env);
		else if (e < max)
			max = (unsigned int)e;
	}
	return max > URXE_SLOT_LAST ? URXE_SLOT_LAST : max;
}

/* This user's instances on the host, counted up to @stop. */
static unsigned int user_held(int fd, unsigned int stop)
{
	unsigned int k, n = 0;

	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST && n < stop; k++)
		if (urxe_ofd_held(fd, k))
			n++;
	return n;
}

int urxe_slot_claim(const char *rundir, struct urxe_slot *slot)
{
	unsigned int k, max = urxe_slot_user_limit(), others = 0;
	int fd, nfd, rc;

	fd = urxe_rundir_open(rundir, "slots");
	if (fd < 0)
		return fd;
	if (max < URXE_SLOT_LAST - URXE_SLOT_FIRST + 1 &&
	    user_held(fd, max) >= max) {
		close(fd);
		urxe_err("you have %u urxe device instances open on this host, your limit (instances_per_user in %s, URXE_INSTANCES_MAX): close some",
			 max, URXE_LIMITS_CONF);
		return -EUSERS;
	}
	for (k = URXE_SLOT_FIRST; k <= URXE_SLOT_LAST; k++) {
		rc = urxe_ofd_lock(fd, F_OFD_SETLK, F_WRLCK, k);
		if (rc == -EAGAIN || rc == -EACCES)
			continue;	/* another instance of ours */
		if (rc)
			goto err;
		nfd = name_bind(rundir, k);
		if (nfd >= 0) {
			slot->fd = fd;
			slot->name_fd = nfd;
			slot->index = k;
			slot->addr_index = addr_index(rundir, k);
			return 0;
		}
		urxe_ofd_lock(fd, F_OFD_SETLK, F_UNLCK, k);
		if (nfd != -EADDRINUSE) {
			rc = nfd;
			goto err;
		}
		others++;	/* another user's, in this network namespace */
	}
	close(fd);
	urxe_err("all %d slots of %s are taken (%u by other users): too many urxe processes on this host",
		 URXE_SLOT_LAST - URXE_SLOT_FIRST + 1, rundir, others);
	return -EUSERS;
err:
	close(fd);
	urxe_err("cannot claim a slot in %s: %s", rundir, strerror(-rc));
	return rc;
}

void urxe_slot_release(struct urxe_slot *slot)
{
	/* A slot with fd -1 was never claimed: name_fd means nothing. */
	if (slot->fd >= 0) {
		close(slot->name_fd);	/* the name is free again */
		close(slot->fd);	/* closing the description drops its lock */
	}
	slot->fd = -1;
	slot->name_fd = -1;
}

int urxe_slot_busy_fd(int slots_fd, unsigned int index)
{
	/* Unlike urxe_ofd_held(): a failure is told, not taken as held. */
	return urxe_ofd_test(slots_fd, index);
}

int urxe_slot_busy(const char *rundir, unsigned int index)
{
	int fd, rc;

	fd = urxe_rundir_open(rundir, "slots");
	if (fd < 0)
		return fd;
	rc = urxe_slot_busy_fd(fd, index);
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
