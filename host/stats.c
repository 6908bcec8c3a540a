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
 * as a whole now and then, and a destroyed QP's last figures are added to
 * a small ring of retired QPs (so that they outlive the QP and the
 * process: `urxe stats --qp --all`), both under a sequence lock: the writer makes `seq` odd,
 * writes, makes it even; a reader copies and retries if `seq` was odd or
 * moved.  A writer that dies mid-update leaves `seq` odd: readers then give
 * up on the table (not on the counters).
 *
 * Like the slot file, the file is the user's own (0600 in its 0700
 * runtime directory: nobody else can truncate it under the mappings) and
 * sparse: only records of slots ever claimed take memory.
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

#include <urxe/host.h>
#include <urxe/log.h>

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

/* Slot @index's record, mapped; @size > 0 grows the file first. */
static void *rec_map(int fd, off_t size, unsigned int index, int prot)
{
	return urxe_regfile_map(fd, size, (off_t)index * URXE_STATS_REC_SIZE,
				URXE_STATS_REC_SIZE, prot);
}

/*
 * Shared-memory accesses.  Every store into a record is a release and
 * every load an acquire (no fences: ThreadSanitizer and the C11 model
 * both understand these): a reader whose load sees any store of a writer
 * also sees everything that writer stored before it — the cleared magic
 * of a claim, the odd sequence count of a table update — so its checks
 * after the loads catch a record that changed under it.
 */
#define put_rel(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define get_acq(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

static void put_bytes(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		put_rel(&dst[i], src[i]);
}

static void get_bytes(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = get_acq(&src[i]);
}

static void put_qp(struct urxe_stats_qp *d, const struct urxe_stats_qp *s)
{
	unsigned int i;

	put_rel(&d->qpn, s->qpn);
	put_rel(&d->type, s->type);
	put_rel(&d->state, s->state);
	for (i = 0; i < URXE_STATS_QP_COUNTERS; i++)
		put_rel(&d->cnt[i], s->cnt[i]);
}

static void get_qp(struct urxe_stats_qp *d, const struct urxe_stats_qp *s)
{
	unsigned int i;

	memset(d, 0, sizeof(*d));
	d->qpn = get_acq(&s->qpn);
	d->type = get_acq(&s->type);
	d->state = get_acq(&s->state);
	for (i = 0; i < URXE_STATS_QP_COUNTERS; i++)
		d->cnt[i] = get_acq(&s->cnt[i]);
}

/* A new claim: hide the old header, zero everything, then publish. */
static void rec_claim(struct urxe_stats_rec *rec, unsigned int slot,
		      const char *dev, const char *netdev)
{
	static const struct urxe_stats_qp zero_qp;
	char name[sizeof(rec->dev)] = "", ifname[sizeof(rec->netdev)] = "";
	uint32_t gen = get_acq(&rec->generation);
	unsigned int i;

	atomic_store_explicit(&rec->magic, 0, memory_order_release);
	for (i = 0; i < URXE_STATS_COUNTERS; i++)
		atomic_store_explicit(&rec->counters[i], 0, memory_order_release);
	for (i = 0; i < URXE_STATS_QPS; i++)
		put_qp(&rec->qps[i], &zero_qp);
	for (i = 0; i < URXE_STATS_RETIRED; i++)
		put_qp(&rec->retired_qps[i], &zero_qp);
	put_rel(&rec->retired, 0);
	put_rel(&rec->nqps, 0);
	put_rel(&rec->qps_total, 0);
	put_rel(&rec->ncounters, 0);
	put_rel(&rec->nqp_counters, 0);
	atomic_store_explicit(&rec->seq, 0, memory_order_release);
	put_rel(&rec->generation, gen + 1);
	put_rel(&rec->pid, (int32_t)getpid());
	put_rel(&rec->slot, slot);
	put_rel(&rec->claimed_s, (uint64_t)time(NULL));
	snprintf(name, sizeof(name), "%s", dev);
	snprintf(ifname, sizeof(ifname), "%s", netdev);
	put_bytes(rec->dev, name, sizeof(name));
	put_bytes(rec->netdev, ifname, sizeof(ifname));
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
	rec = rec_map(fd, FILE_SIZE, slot->index, PROT_READ | PROT_WRITE);
	rc = rec ? 0 : -errno;
	close(fd);	/* the mapping keeps the file */
	if (rc)
		return rc;
	rec_claim(rec, slot->index, dev, netdev);
	*out = rec;
	return 0;
}

void urxe_stats_detach(struct urxe_stats_rec *rec)
{
	if (rec)
		urxe_regfile_unmap(rec, URXE_STATS_REC_SIZE);
}

void urxe_stats_forget(struct urxe_stats_rec *rec)
{
	int rc;

	if (!rec)
		return;
	/* Same address, so pointers into it (the engine's) stay valid. */
	rc = urxe_regfile_forget(rec, URXE_STATS_REC_SIZE);
	if (rc)
		urxe_warn("statistics: cannot detach the inherited record: %s",
			  strerror(-rc));
}

void urxe_stats_shape(struct urxe_stats_rec *rec, unsigned int ncounters,
		      unsigned int nqp_counters)
{
	put_rel(&rec->ncounters, (uint16_t)ncounters);
	put_rel(&rec->nqp_counters, (uint16_t)nqp_counters);
}

void urxe_stats_qps_begin(struct urxe_stats_rec *rec)
{
	/* Odd: the entries' release stores that follow are ordered after. */
	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_relaxed);
}

void urxe_stats_qp_put(struct urxe_stats_rec *rec, unsigned int i,
		       const struct urxe_stats_qp *e)
{
	if (i < URXE_STATS_QPS)
		put_qp(&rec->qps[i], e);
}

void urxe_stats_qps_end(struct urxe_stats_rec *rec, unsigned int n,
			unsigned int total)
{
	put_rel(&rec->nqps, n < URXE_STATS_QPS ? n : URXE_STATS_QPS);
	put_rel(&rec->qps_total, total);
	/* Even again, after every entry. */
	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_release);
}

void urxe_stats_qp_retire(struct urxe_stats_rec *rec,
			  const struct urxe_stats_qp *e)
{
	/* Only this instance writes the record: a plain load is ours. */
	uint32_t n = __atomic_load_n(&rec->retired, __ATOMIC_RELAXED);

	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_relaxed);
	put_qp(&rec->retired_qps[n % URXE_STATS_RETIRED], e);
	put_rel(&rec->retired, n + 1);
	atomic_fetch_add_explicit(&rec->seq, 1, memory_order_release);
}

int urxe_stats_open(const char *rundir)
{
	return urxe_rundir_open_ro(rundir, URXE_STATS_FILE);
}

/* The retired QPs, oldest first (sequence lock held by the caller). */
static void read_retired(const struct urxe_stats_rec *rec,
			 struct urxe_stats_snap *out)
{
	uint32_t n = get_acq(&rec->retired), first, i;

	out->retired_total = n;
	out->nretired = n < URXE_STATS_RETIRED ? n : URXE_STATS_RETIRED;
	first = n - out->nretired;
	for (i = 0; i < out->nretired; i++)
		get_qp(&out->retired[i],
		       &rec->retired_qps[(first + i) % URXE_STATS_RETIRED]);
}

/* The QP tables under the sequence lock; false if they never held still. */
static bool read_qps(const struct urxe_stats_rec *rec,
		     struct urxe_stats_snap *out)
{
	unsigned int i;
	uint32_t s1;
	int tries;

	for (tries = 0; tries < READ_TRIES; tries++) {
		s1 = atomic_load_explicit(&rec->seq, memory_order_acquire);
		if (!(s1 & 1)) {
			out->nqps = get_acq(&rec->nqps);
			out->qps_total = get_acq(&rec->qps_total);
			if (out->nqps > URXE_STATS_QPS)
				out->nqps = URXE_STATS_QPS;
			for (i = 0; i < out->nqps; i++)
				get_qp(&out->qps[i], &rec->qps[i]);
			read_retired(rec, out);
			/* The acquires above keep this load after them. */
			if (atomic_load_explicit(&rec->seq, memory_order_relaxed) == s1)
				return true;
		}
		sched_yield();
	}
	out->nqps = 0;
	out->nretired = 0;
	return false;
}

static bool read_header(const struct urxe_stats_rec *rec,
			struct urxe_stats_snap *out)
{
	if (atomic_load_explicit(&rec->magic, memory_order_acquire) !=
	    URXE_STATS_MAGIC)
		return false;
	out->generation = get_acq(&rec->generation);
	out->pid = get_acq(&rec->pid);
	out->slot = get_acq(&rec->slot);
	out->claimed_s = get_acq(&rec->claimed_s);
	get_bytes(out->dev, rec->dev, sizeof(out->dev));
	out->dev[sizeof(out->dev) - 1] = '\0';
	get_bytes(out->netdev, rec->netdev, sizeof(out->netdev));
	out->netdev[sizeof(out->netdev) - 1] = '\0';
	out->ncounters = get_acq(&rec->ncounters);
	if (out->ncounters > URXE_STATS_COUNTERS)
		out->ncounters = URXE_STATS_COUNTERS;
	out->nqp_counters = get_acq(&rec->nqp_counters);
	if (out->nqp_counters > URXE_STATS_QP_COUNTERS)
		out->nqp_counters = URXE_STATS_QP_COUNTERS;
	return true;
}

int urxe_stats_read(int fd, unsigned int index, struct urxe_stats_snap *out)
{
	const struct urxe_stats_rec *rec;
	struct stat st;
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
	/* A file cut short under the record would fault where it ends. */
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size < ((off_t)index + 1) * URXE_STATS_REC_SIZE)
		return -ENOENT;
	rec = rec_map(fd, 0, index, PROT_READ);
	if (!rec)
		return -errno;
	memset(out, 0, sizeof(*out));
	if (!read_header(rec, out)) {
		rc = -ENOENT;
		goto out;
	}
	for (i = 0; i < out->ncounters; i++)
		out->counters[i] = atomic_load_explicit(&rec->counters[i],
							memory_order_acquire);
	read_qps(rec, out);
	/* Claimed again while we read: the figures may mix two instances. */
	if (atomic_load_explicit(&rec->magic, memory_order_acquire) !=
	    URXE_STATS_MAGIC || get_acq(&rec->generation) != out->generation)
		rc = -ENOENT;
out:
	urxe_stats_detach((struct urxe_stats_rec *)rec);
	return rc;
}
