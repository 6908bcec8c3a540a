// SPDX-License-Identifier: BSD-2-Clause
/*
 * Per-slot statistics in shared memory: <rundir>/counters holds one record
 * per slot (URXE_STATS_REC_SIZE apart, so slot k's record sits at k times
 * that), each a header, the instance's counters and a table of its QPs.
 * The instance that holds slot k is the only writer of record k — the slot
 * lock says so — and maps just that record; readers (`urxe stats`) map the
 * records they read, read-only.
 *
 * Counters are 64-bit atomics, read one by one.  The QP table is republished
 * as a whole now and then, under a sequence lock: the writer makes `seq` odd,
 * writes, makes it even; a reader copies and retries if `seq` was odd or
 * moved.  A writer that dies mid-update leaves `seq` odd: readers then give
 * up on the table (not on the counters).
 *
 * Like the slot file, the file is for every user (0666 in the 1777
 * directory) and sparse: only records of slots ever claimed take memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <urxe/log.h>
#include <urxe/netdev.h>

_Static_assert(offsetof(struct urxe_stats_rec, counters) == 256,
	       "the header is 256 bytes");
_Static_assert(sizeof(struct urxe_stats_qp) == 16 + 8 * URXE_STATS_QP_COUNTERS,
	       "QP entries are packed");
_Static_assert(sizeof(struct urxe_stats_rec) <= URXE_STATS_REC_SIZE,
	       "a record fits its stride");
_Static_assert(URXE_STATS_REC_SIZE % 4096 == 0, "records are page-aligned");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "atomics in shared memory must be lock-free");

#define FILE_SIZE ((off_t)(URXE_SLOT_LAST + 1) * URXE_STATS_REC_SIZE)
#define READ_TRIES 1000

/*
 * The pages that hold the record at @off: on systems whose pages are
 * larger than 4 KiB a record shares its page with neighbours.
 */
static void rec_span(off_t off, off_t *start, size_t *len, size_t *skew)
{
	long page = sysconf(_SC_PAGESIZE);

	*start = off & ~(off_t)(page - 1);
	*skew = (size_t)(off - *start);
	*len = (*skew + URXE_STATS_REC_SIZE + (size_t)page - 1) &
	       ~((size_t)page - 1);
}

/* The mapping a record pointer came from. */
static void rec_mapping(const struct urxe_stats_rec *rec, void **base,
			size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t p = (uintptr_t)rec, b = p & ~((uintptr_t)page - 1);

	*base = (void *)b;
	*len = ((p - b) + URXE_STATS_REC_SIZE + (size_t)page - 1) &
	       ~((size_t)page - 1);
}

static void *rec_map(int fd, unsigned int index, int prot)
{
	off_t start;
	size_t len, skew;
	uint8_t *p;

	rec_span((off_t)index * URXE_STATS_REC_SIZE, &start, &len, &skew);
	p = mmap(NULL, len, prot, MAP_SHARED, fd, start);
	return p == MAP_FAILED ? NULL : p + skew;
}

/* Sizes the file once; growing it to the same size twice is harmless. */
static int size_file(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_size < FILE_SIZE && ftruncate(fd, FILE_SIZE))
		return -errno;
	return 0;
}

/* A new claim: hide the old header, zero everything, then publish. */
static void rec_claim(struct urxe_stats_rec *rec, unsigned int slot,
		      const char *dev, const char *netdev)
{
	uint32_t gen = rec->generation;
	unsigned int i;

	atomic_store_explicit(&rec->magic, 0, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store_explicit(&rec->seq, 0, memory_order_relaxed);
	for (i = 0; i < URXE_STATS_COUNTERS; i++)
		atomic_store_explicit(&rec->counters[i], 0, memory_order_relaxed);
	memset(rec->qps, 0, sizeof(rec->qps));
	rec->nqps = rec->qps_total = 0;
	rec->ncounters = rec->nqp_counters = 0;
	memset(rec->reserved, 0, sizeof(rec->reserved));
	rec->generation = gen + 1;
	rec->pid = (int32_t)getpid();
	rec->slot = slot;
	rec->claimed_s = (uint64_t)time(NULL);
	snprintf(rec->dev, sizeof(rec->dev), "%s", dev);
	snprintf(rec->netdev, sizeof(rec->netdev), "%s", netdev);
	atomic_store_explicit(&rec->magic, URXE_STATS_MAGIC, memory_order_release);
}

int urxe_stats_attach(const char *rundir, const struct urxe_slot *slot,
		      const char *dev, const char *netdev,
		      struct urxe_stats_rec **out)
{
	struct urxe_stats_rec *rec;
	int fd, rc;

	if (slot->index > URXE_SLOT_LAST)
		return -EINVAL;
	fd = urxe_rundir_open(rundir, URXE_STATS_FILE);
	if (fd < 0)
		return fd;
	rc = size_file(fd);
	if (rc)
		goto out;
	rec = rec_map(fd, slot->index, PROT_READ | PROT_WRITE);
	if (!rec) {
		rc = -errno;
		goto out;
	}
	rec_claim(rec, slot->index, dev, netdev);
	*out = rec;
out:
	close(fd);	/* the mapping keeps the file */
	return rc;
}

void urxe_stats_detach(struct urxe_stats_rec *rec)
{
	size_t len;
	void *base;

	if (!rec)
		return;
	rec_mapping(rec, &base, &len);
	munmap(base, len);
}

void urxe_stats_forget(struct urxe_stats_rec *rec)
{
	size_t len;
	void *base;

	if (!rec)
		return;
	rec_mapping(rec, &base, &len);
	/* Same address, so pointers into it (the engine's) stay valid. */
	if (mmap(base, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		urxe_warn("statistics: cannot detach the inherited record: %s",
			  strerror(errno));
}

void urxe_stats_qps_begin(struct urxe_stats_rec *rec)
{
	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_relaxed);
	/* The odd count is visible before any entry changes. */
	atomic_thread_fence(memory_order_release);
}

void urxe_stats_qps_end(struct urxe_stats_rec *rec)
{
	/* Every entry is written before the count is even again. */
	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_release);
}

int urxe_stats_open(const char *rundir)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", rundir,
			     URXE_STATS_FILE) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

/* The QP table under the sequence lock; false if it never held still. */
static bool read_qps(const struct urxe_stats_rec *rec,
		     struct urxe_stats_snap *out)
{
	uint32_t s1, s2;
	int i;

	for (i = 0; i < READ_TRIES; i++) {
		s1 = atomic_load_explicit(&rec->seq, memory_order_acquire);
		if (!(s1 & 1)) {
			out->nqps = rec->nqps;
			out->qps_total = rec->qps_total;
			if (out->nqps > URXE_STATS_QPS)
				out->nqps = URXE_STATS_QPS;
			memcpy(out->qps, rec->qps, out->nqps * sizeof(out->qps[0]));
			atomic_thread_fence(memory_order_acquire);
			s2 = atomic_load_explicit(&rec->seq, memory_order_relaxed);
			if (s1 == s2)
				return true;
		}
		sched_yield();
	}
	out->nqps = 0;
	return false;
}

static bool read_header(const struct urxe_stats_rec *rec,
			struct urxe_stats_snap *out)
{
	if (atomic_load_explicit(&rec->magic, memory_order_acquire) !=
	    URXE_STATS_MAGIC)
		return false;
	out->generation = rec->generation;
	out->pid = rec->pid;
	out->slot = rec->slot;
	out->claimed_s = rec->claimed_s;
	memcpy(out->dev, rec->dev, sizeof(out->dev));
	out->dev[sizeof(out->dev) - 1] = '\0';
	memcpy(out->netdev, rec->netdev, sizeof(out->netdev));
	out->netdev[sizeof(out->netdev) - 1] = '\0';
	out->ncounters = rec->ncounters < URXE_STATS_COUNTERS ?
			 rec->ncounters : URXE_STATS_COUNTERS;
	out->nqp_counters = rec->nqp_counters < URXE_STATS_QP_COUNTERS ?
			    rec->nqp_counters : URXE_STATS_QP_COUNTERS;
	return true;
}

int urxe_stats_read(int fd, unsigned int index, struct urxe_stats_snap *out)
{
	const struct urxe_stats_rec *rec;
	uint32_t magic = 0;
	unsigned int i;
	ssize_t n;
	int rc = 0;

	if (index > URXE_SLOT_LAST)
		return -EINVAL;
	/*
	 * pread() first: it reads a never-written record as zeros without
	 * giving it memory, where touching the mapping would.
	 */
	n = pread(fd, &magic, sizeof(magic), (off_t)index * URXE_STATS_REC_SIZE);
	if (n < 0)
		return -errno;
	if (n != sizeof(magic) || magic != URXE_STATS_MAGIC)
		return -ENOENT;
	rec = rec_map(fd, index, PROT_READ);
	if (!rec)
		return -errno;
	memset(out, 0, sizeof(*out));
	if (!read_header(rec, out)) {
		rc = -ENOENT;
		goto out;
	}
	for (i = 0; i < out->ncounters; i++)
		out->counters[i] = atomic_load_explicit(&rec->counters[i],
							memory_order_relaxed);
	read_qps(rec, out);
	/* Claimed again while we read: the figures may mix two instances. */
	if (atomic_load_explicit(&rec->magic, memory_order_acquire) !=
	    URXE_STATS_MAGIC || rec->generation != out->generation)
		rc = -ENOENT;
out:
	urxe_stats_detach((struct urxe_stats_rec *)rec);
	return rc;
}
