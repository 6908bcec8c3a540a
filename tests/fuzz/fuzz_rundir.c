// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_rundir: arbitrary bytes as each file of the runtime directory that
 * urxe reads back (host/stats.c's `counters`, host/mcast.c's `mcast`,
 * the XRC registry `xrcd` and a domain's `xrcd.I.G`, through the readers
 * in host/xrcd_registry.c and rxe_provider/xrcd_file.c), then every
 * reader and writer of it.
 *
 * The first byte picks the file and an index, the rest is its contents
 * (written at an offset the second byte picks, so that files longer than
 * the input, and records past the end, are reached too).  Whatever the
 * bytes, nothing may crash, hang or overrun (ASan/UBSan), and what the
 * readers hand out must be in range: a statistics snapshot's counts within
 * their arrays and its names terminated, multicast members on real slots
 * and addresses, registry and domain lookups only on entries they checked.
 * The ctest fuzz.rundir (a URXE_FUZZ build, clang) runs it from the seeds
 * in rundir_corpus/.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/host.h>

#include "../../rxe_provider/xrcd_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];
static struct urxe_slot slot = { .fd = -1 };

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* The temporary base goes with the process. */
static void cleanup(void)
{
	urxe_slot_release(&slot);
	nftw(base, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void init(void)
{
	if (base[0])
		return;
	snprintf(base, sizeof(base), "/tmp/urxe-fuzz-rundir.XXXXXX");
	if (!mkdtemp(base) || urxe_slot_claim(base, &slot))
		abort();
	atexit(cleanup);
}

static void put(const char *file, const uint8_t *data, size_t size, off_t at)
{
	int fd = urxe_rundir_open(base, file);

	if (fd < 0)
		abort();
	if (ftruncate(fd, 0) ||
	    (size && pwrite(fd, data, size, at) != (ssize_t)size))
		abort();
	close(fd);
}

static void check_snap(const struct urxe_stats_snap *s)
{
	if (s->ncounters > URXE_STATS_COUNTERS ||
	    s->nqp_counters > URXE_STATS_QP_COUNTERS ||
	    s->nqps > URXE_STATS_QPS || s->nretired > URXE_STATS_RETIRED ||
	    !memchr(s->dev, 0, sizeof(s->dev)) ||
	    !memchr(s->netdev, 0, sizeof(s->netdev)))
		abort();
}

static void counters(const uint8_t *data, size_t size, unsigned int pick)
{
	struct urxe_stats_snap *s = malloc(sizeof(*s));
	struct urxe_stats_rec *rec;
	unsigned int idx[] = { 0, 1, slot.index, pick % (URXE_SLOT_LAST + 2),
			       URXE_SLOT_LAST };
	unsigned int i;
	int fd;

	if (!s)
		return;
	/* Records 0 and 1 are where short inputs land. */
	put(URXE_STATS_FILE, data, size, (off_t)(pick & 1) * URXE_STATS_REC_SIZE);
	fd = urxe_stats_open(base);
	if (fd < 0)
		abort();
	for (i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		int rc = urxe_stats_read(fd, idx[i], s);

		if (rc == 0)
			check_snap(s);
		else if (rc != -ENOENT && rc != -EINVAL)
			abort();
	}
	close(fd);
	/* Claiming our record over whatever is there, then reading it. */
	if (urxe_stats_attach(base, &slot, "rxe0", "lo", &rec))
		abort();
	urxe_stats_detach(rec);
	fd = urxe_stats_open(base);
	if (fd < 0 || urxe_stats_read(fd, slot.index, s))
		abort();
	check_snap(s);
	if (strcmp(s->dev, "rxe0") || s->pid != (int32_t)getpid())
		abort();
	close(fd);
	free(s);
}

static void mcast(const uint8_t *data, size_t size, unsigned int pick)
{
	unsigned int idx[8], i;
	uint8_t gid[16] = { 0 };
	int n;

	put("mcast", data, size, (off_t)(pick % 4) * 32);
	/* A group the input names, if it is long enough to name one. */
	if (size >= 16)
		memcpy(gid, data, 16);
	n = urxe_mcast_members(base, gid, idx, 8);
	if (n < 0 || n > 8)
		abort();
	for (i = 0; i < (unsigned int)n; i++)
		if (idx[i] >= 62500)
			abort();
	if (urxe_mcast_join(base, &slot, gid) == 0) {
		n = urxe_mcast_members(base, gid, idx, 8);
		if (n < 1)
			abort();	/* we are a live member now */
		if (urxe_mcast_leave(base, &slot, gid))
			abort();
	}
}

static void xrcd(const uint8_t *data, size_t size, unsigned int pick)
{
	struct urxe_xrcd_registry *reg;
	struct stat st = { .st_dev = 8, .st_ino = pick };
	uint32_t gen = 0;
	bool created = false;
	int fd, rc;

	put("xrcd", data, size, 0);
	fd = urxe_rundir_open(base, "xrcd");
	if (fd < 0 || urxe_xrcd_registry_map(fd, &reg))
		abort();
	rc = urxe_xrcd_registry_join(reg, fd, "rxe0/lo/1", &st,
				     O_CREAT, &gen, &created);
	if (rc < -4095 || rc >= URXE_XRCD_ENTRIES)
		abort();
	if (rc >= 0 && (!reg->e[rc].in_use || reg->e[rc].st_ino != st.st_ino))
		abort();
	urxe_xrcd_registry_unmap(reg);
	close(fd);	/* drops the read lock the join took */
}

static void domain(const uint8_t *data, size_t size, unsigned int pick)
{
	struct urxe_xs_file *f;
	union ibv_gid gid;
	int fd;

	put("xrcd.0.1", data, size, (off_t)(pick % 8) * 64);
	fd = urxe_rundir_open(base, "xrcd.0.1");
	if (fd < 0 || urxe_xs_map(fd, slot.index, &f))
		abort();
	/* Lookups by number: only entries that say in use, on live slots. */
	urxe_xs_tgt_find(f, fd, slot.index, pick);
	urxe_xs_srq_route(f, fd, slot.index, pick, &gid);
	urxe_xs_unmap(f);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int pick;

	init();
	if (size < 2)
		return 0;
	pick = data[1] * 257u + data[0];
	switch (data[0] % 4) {
	case 0:
		counters(data + 2, size - 2, pick);
		break;
	case 1:
		mcast(data + 2, size - 2, pick);
		break;
	case 2:
		xrcd(data + 2, size - 2, pick);
		break;
	default:
		domain(data + 2, size - 2, pick);
		break;
	}
	return 0;
}
