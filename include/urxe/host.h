/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the host layer: what the device instances of this host
 * share, kept in each user's runtime directory — its slots, the loopback
 * multicast registry, the per-slot statistics, the registry of XRC
 * domains — and the one way every registry file there is locked, sized
 * and mapped (regfile.c; an XRC domain's own file, rxe_provider/
 * xrcd_file.c, uses it too).
 * Nothing here knows about verbs or packets.
 */
#ifndef URXE_HOST_H
#define URXE_HOST_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- registry files (regfile.c) ---- */

/*
 * A registry is a file of the user's runtime directory (urxe_rundir_open:
 * created 0600 in the 0700 directory, so no other user reaches it),
 * changed under open file description (OFD) locks and, where processes
 * share it live, mapped shared.  The kernel drops a description's locks
 * when the last descriptor of it closes — the process dies — so a lock
 * held is a sign of life, and nobody has to clean up after the dead.
 *
 * Locks on byte @at of a runtime file (slots, the XRC registry and
 * domains): urxe_ofd_lock() runs fcntl @cmd with lock
 * @type (0 or -errno); urxe_ofd_held() says whether another description
 * holds the byte (true when fcntl fails: in doubt, held).
 */
int urxe_ofd_lock(int fd, int cmd, short type, off_t at);
bool urxe_ofd_held(int fd, off_t at);
/*
 * The same test, told: 1 when another description holds byte @at, 0 when
 * none does, or a negative errno (where urxe_ofd_held() says "held").
 */
int urxe_ofd_test(int fd, off_t at);
/*
 * Locks the whole file (@type F_RDLCK or F_WRLCK), waiting, through
 * signals: 0 or a negative errno.  Closing @fd drops it.
 */
int urxe_ofd_lock_file(int fd, short type);
/*
 * The mutex of a registry that keeps other locks beside it (the XRC
 * registry and domains): a write lock on byte 0, waited for (0 or
 * -errno); urxe_regfile_unlock() drops it.
 */
int urxe_regfile_lock(int fd);
void urxe_regfile_unlock(int fd);

/*
 * Maps bytes [@off, @off + @len) of registry file @fd, MAP_SHARED with
 * @prot; @size > 0 first grows the file to at least @size bytes (never
 * shrinks it: processes growing it to the same size at once is harmless).
 * The mapping is widened to whole pages: where pages are larger than a
 * record, a record shares its page with neighbours.  Returns the address
 * of byte @off, or NULL with errno set.
 */
void *urxe_regfile_map(int fd, off_t size, off_t off, size_t len, int prot);
/* Unmaps what urxe_regfile_map() returned for @len bytes. */
void urxe_regfile_unmap(const void *p, size_t len);
/*
 * In a fork()ed child: the mapping urxe_regfile_map() returned becomes
 * private, zeroed memory at the same address (pointers into it stay
 * valid; nothing written there reaches the file).  0 or a negative errno.
 */
int urxe_regfile_forget(void *p, size_t len);

/*
 * Slots (slot.c): k in FIRST..LAST, unique among this user's instances on
 * the host (a lock on byte k of its `slots`) and among every user's in the
 * network namespace (an abstract socket name).
 */
#define URXE_SLOT_FIRST 1
#define URXE_SLOT_LAST 1022	/* QPN = slot << 14 | index stays < 0xFFFFFF */
/* The base every user's runtime directory is in (rundir.c). */
#define URXE_RUNDIR_DEFAULT "/dev/shm"
/* The administrator's limits ("instances_per_user N"). */
#define URXE_LIMITS_CONF "/etc/urxe/limits.conf"
#define URXE_INSTANCES_DEFAULT 512	/* a user's instances on the host */

struct urxe_slot {
	int fd;			/* `slots`, O_CLOEXEC, holds the OFD lock; -1: none */
	int name_fd;		/* the bound abstract socket */
	unsigned int index;
	/*
	 * Index of the slot's loopback address: the slot itself under the
	 * default base; under another one a place from a hash of its path,
	 * so that separate bases (tests) rarely share addresses.
	 */
	unsigned int addr_index;
};

/*
 * The user's own runtime directory, <rundir>/urxe-v2-<euid> (0700), opened
 * after checking the base and it (rundir.c): the fd, or -EACCES / -ENOTDIR
 * / -errno with a log line saying what to do.
 */
int urxe_rundir_user(const char *rundir);
/* Its name, "urxe-v2-<euid>". */
void urxe_rundir_user_name(char *buf, size_t len);
/*
 * Opens (creating mode 0600) @file in the user's runtime directory: a
 * regular file of the user's, or a negative errno.
 */
int urxe_rundir_open(const char *rundir, const char *file);
/* The same, read-only, never creating. */
int urxe_rundir_open_ro(const char *rundir, const char *file);
/* Removes @file there (gone already: 0). */
int urxe_rundir_unlink(const char *rundir, const char *file);

/* A user's instances on this host, at most (see slot.c). */
unsigned int urxe_slot_user_limit(void);
/* Tests: the limit is @max (0: as configured). */
void urxe_slot_test_limit(unsigned int max);

/*
 * Claims the lowest free slot.  The kernel drops the claim when the process
 * dies; urxe_slot_release() drops it earlier.  -EUSERS (logged) when all
 * are taken or the user has reached its limit.
 */
int urxe_slot_claim(const char *rundir, struct urxe_slot *slot);
void urxe_slot_release(struct urxe_slot *slot);
/* Whether this user holds slot @index: 1, 0, or a negative errno. */
int urxe_slot_busy(const char *rundir, unsigned int index);
/*
 * The same through @slots_fd, `slots` opened once (urxe_rundir_open) for
 * a scan of many slots.
 */
int urxe_slot_busy_fd(int slots_fd, unsigned int index);

/* 127.117.h.l for address index @index (< 62500), network order. */
struct in_addr urxe_slot_loopback_addr(unsigned int index);
/* The address index slot @k has under base @rundir (struct urxe_slot). */
unsigned int urxe_slot_addr_index(const char *rundir, unsigned int k);
/*
 * The slot an abstract socket name (without its leading NUL, as
 * /proc/net/unix shows it after '@') holds under base @rundir, or -1.
 */
int urxe_slot_from_name(const char *rundir, const char *name);

/* Whether a UDP socket can bind @addr:4791 right now: 1, 0, or -errno. */
int urxe_udp_addr_free(struct in_addr addr);

/* ---- the loopback multicast registry (mcast.c): <rundir>/mcast ---- */

/* Records (slot, group) host-wide. */
#define URXE_MCAST_REGISTRY 1024

/*
 * Adds a reference to (@slot, @gid), a 16-byte group GID; the caller holds
 * @slot.  -ENOSPC when the registry is full.
 */
int urxe_mcast_join(const char *rundir, const struct urxe_slot *slot,
		    const uint8_t gid[16]);
/* Drops one; -ENOENT when @slot has none for @gid. */
int urxe_mcast_leave(const char *rundir, const struct urxe_slot *slot,
		     const uint8_t gid[16]);
/*
 * The address indexes (urxe_slot_loopback_addr) of up to @max live slots
 * joined to @gid; returns how many, or a negative errno.
 */
int urxe_mcast_members(const char *rundir, const uint8_t gid[16],
		       unsigned int *addr_index, unsigned int max);

/* ---- per-slot statistics (stats.c): <rundir>/counters ---- */

/*
 * One record per slot in one file, mapped shared: a header saying whose
 * record it is (written at each claim), the instance's counters, and a
 * table of its QPs with theirs.  The instance is the only writer of its
 * record; anyone (`urxe stats`) reads.  The layout is part of the runtime
 * directory's version (the "v1" of urxe-v1): fields only ever use the room
 * reserved here.  What counters and QP type/state codes mean is the
 * writer's business (the engine's names); this layer just keeps numbers.
 */
#define URXE_STATS_FILE "counters"
#define URXE_STATS_MAGIC 0x53657875u	/* "uxeS": the header is complete */
#define URXE_STATS_COUNTERS 32		/* room per instance */
#define URXE_STATS_QPS 64		/* QPs published per instance */
#define URXE_STATS_QP_COUNTERS 16	/* room per QP */
#define URXE_STATS_RETIRED 16		/* destroyed QPs kept per instance */
#define URXE_STATS_REC_SIZE 12288	/* record stride in the file */

struct urxe_stats_qp {
	uint32_t qpn;
	uint8_t type;			/* the writer's code (verbs: ibv_qp_type) */
	uint8_t state;			/* the writer's code (verbs: ibv_qp_state) */
	uint8_t reserved[10];
	uint64_t cnt[URXE_STATS_QP_COUNTERS];
};

struct urxe_stats_rec {
	_Atomic uint32_t magic;		/* URXE_STATS_MAGIC once the header is in */
	uint32_t generation;		/* claims of this slot so far */
	int32_t pid;			/* the claimant */
	uint32_t slot;
	uint64_t claimed_s;		/* CLOCK_REALTIME seconds of the claim */
	char dev[64];			/* device name */
	char netdev[IF_NAMESIZE];
	uint16_t ncounters;		/* counters[] in use */
	uint16_t nqp_counters;		/* qps[].cnt[] in use */
	_Atomic uint32_t seq;		/* seqlock of the QP table: odd while written */
	uint32_t nqps;			/* qps[] entries valid */
	uint32_t qps_total;		/* QPs the instance has (may be > nqps) */
	uint32_t retired;		/* QPs destroyed so far (seqlock too) */
	uint8_t reserved[132];
	_Atomic uint64_t counters[URXE_STATS_COUNTERS];
	struct urxe_stats_qp qps[URXE_STATS_QPS];
	/*
	 * The last figures of the last URXE_STATS_RETIRED QPs destroyed, a
	 * ring: QP number n (counting from 0) at n % URXE_STATS_RETIRED.  In
	 * the stride's room past qps[]: records written before it read 0.
	 */
	struct urxe_stats_qp retired_qps[URXE_STATS_RETIRED];
};

/* A consistent copy of a record, for readers. */
struct urxe_stats_snap {
	uint32_t generation;
	int32_t pid;
	uint32_t slot;
	uint64_t claimed_s;
	char dev[64];
	char netdev[IF_NAMESIZE];
	unsigned int ncounters;
	unsigned int nqp_counters;
	unsigned int nqps;		/* 0 if the writer died mid-update */
	unsigned int qps_total;
	unsigned int nretired;		/* retired[] entries valid, oldest first */
	unsigned int retired_total;	/* QPs the instance destroyed */
	uint64_t counters[URXE_STATS_COUNTERS];
	struct urxe_stats_qp qps[URXE_STATS_QPS];
	struct urxe_stats_qp retired[URXE_STATS_RETIRED];
};

/*
 * Maps @slot's record (creating and sizing the file, mode 0600) and claims
 * it for a new instance: zeroed, generation + 1, this pid, @dev and
 * @netdev.  The caller must hold @slot.  Returns 0 or a negative errno.
 */
int urxe_stats_attach(const char *rundir, const struct urxe_slot *slot,
		      const char *dev, const char *netdev,
		      struct urxe_stats_rec **out);
/* Unmaps; the record keeps its last figures for `urxe stats --all`. */
void urxe_stats_detach(struct urxe_stats_rec *rec);
/*
 * In a fork()ed child: the inherited record becomes private memory at the
 * same address, so that nothing the child does reaches the parent's
 * figures.  urxe_stats_detach() still releases it.
 */
void urxe_stats_forget(struct urxe_stats_rec *rec);

/*
 * The writer's side.  urxe_stats_shape() says how many counters (and per
 * QP) the writer uses.  The QP table is rewritten as a whole: begin, put
 * entries 0..@n-1, end with @n and the QPs that exist (@total >= @n).
 */
void urxe_stats_shape(struct urxe_stats_rec *rec, unsigned int ncounters,
		      unsigned int nqp_counters);
void urxe_stats_qps_begin(struct urxe_stats_rec *rec);
void urxe_stats_qp_put(struct urxe_stats_rec *rec, unsigned int i,
		       const struct urxe_stats_qp *e);
void urxe_stats_qps_end(struct urxe_stats_rec *rec, unsigned int n,
			unsigned int total);
/*
 * A QP is being destroyed: its last figures join the ring of retired QPs
 * (the oldest of URXE_STATS_RETIRED leaves), so that they outlive it and
 * the instance (`urxe stats --qp --all`).
 */
void urxe_stats_qp_retire(struct urxe_stats_rec *rec,
			  const struct urxe_stats_qp *e);

/* Opens <rundir>/counters to read: an fd, or -ENOENT if there is none. */
int urxe_stats_open(const char *rundir);
/*
 * Copies slot @index's record: 0, -ENOENT when the slot has no record
 * (never claimed, or being claimed right now), or a negative errno.
 */
int urxe_stats_read(int fd, unsigned int index, struct urxe_stats_snap *out);

/* ---- the registry of XRC domains (xrcd_registry.c): <rundir>/xrcd ---- */

/*
 * Which of the user's file-backed XRC domains exist, host-wide: an entry
 * per domain (device key, the file's inode, a generation), locks on the
 * file saying who holds which (rxe_provider/xrcd.c tells the story).
 * Readers take whatever is in the file: a value out of range finds
 * nothing, it is never an index.
 */

#define URXE_XRCD_ENTRIES 4096
#define URXE_XRCD_KEY_MAX 64

struct urxe_xrcd_entry {
	uint32_t in_use;
	uint32_t gen;
	uint64_t st_dev;
	uint64_t st_ino;
	char dev[URXE_XRCD_KEY_MAX];	/* the device key (rxe_provider/xrcd.c) */
};

struct urxe_xrcd_registry {
	uint32_t magic;
	uint32_t nentries;
	uint8_t pad[56];
	struct urxe_xrcd_entry e[URXE_XRCD_ENTRIES];
};

/*
 * Maps the registry of @fd (sizing the file; a file without the magic is
 * made an empty registry).  The caller holds the registry mutex (a write
 * lock on byte 0).
 */
int urxe_xrcd_registry_map(int fd, struct urxe_xrcd_registry **out);
void urxe_xrcd_registry_unmap(struct urxe_xrcd_registry *reg);
/* Whether a handle other than @fd's holds entry @i's domain open. */
bool urxe_xrcd_entry_live(int fd, int i);
/*
 * Finds or (O_CREAT) makes the domain of inode @st on device @key, and
 * takes @fd's read lock on it: the entry index, or -EAGAIN (none and no
 * O_CREAT), -EINVAL (O_EXCL and one exists), -ENOSPC, -errno.
 */
int urxe_xrcd_registry_join(struct urxe_xrcd_registry *reg, int fd,
			    const char *key, const struct stat *st, int oflags,
			    uint32_t *gen, bool *created);

#endif
