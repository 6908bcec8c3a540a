/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The XRC files of a user's runtime directory, as bytes (xrcd_file.c):
 * the registry of domains ("xrcd", used by xrcd.c) and a file-backed
 * domain's shared tables ("xrcd.<entry>.<gen>", used by xrc_shared.c).
 * Their readers take whatever is in the files: a value out of range finds
 * nothing, it is never an index.  Functions return 0 or a negative errno
 * unless said otherwise.
 */
#ifndef URXE_XRCD_FILE_H
#define URXE_XRCD_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <urxe/engine.h>
#include <urxe/host.h>

/* ---- the registry: <userdir>/xrcd ---- */

#define URXE_XRCD_ENTRIES 4096
#define URXE_XRCD_KEY_MAX 64

struct urxe_xrcd_entry {
	uint32_t in_use;
	uint32_t gen;
	uint64_t st_dev;
	uint64_t st_ino;
	char dev[URXE_XRCD_KEY_MAX];	/* the device key (xrcd.c) */
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

/* ---- a domain's tables: <userdir>/xrcd.<entry>.<gen> ---- */

#define URXE_XS_TGTS 64
#define URXE_XS_SRQS 1024
#define URXE_XS_LIVE 4096	/* byte LIVE + slot: that slot uses the domain */

struct urxe_xs_tgt {
	uint32_t in_use;
	uint32_t host_slot;
	struct urxe_tgt_shared st;
};

struct urxe_xs_srq {
	uint32_t in_use;
	uint32_t owner_slot;
	uint32_t srqn;
	uint32_t pad;
	union ibv_gid gid;
};

struct urxe_xs_file {
	uint32_t magic;
	uint32_t ntgt;
	uint32_t nsrq;
	uint8_t pad[52];
	struct urxe_xs_tgt tgt[URXE_XS_TGTS];
	struct urxe_xs_srq srq[URXE_XS_SRQS];
};

/*
 * Maps the tables of @fd for the instance of slot @slot: under the table
 * mutex (byte 0), sizes the file, starts it afresh when it is not one,
 * drops what an earlier holder of @slot left, and takes @slot's liveness
 * lock.
 */
int urxe_xs_map(int fd, unsigned int slot, struct urxe_xs_file **out);
void urxe_xs_unmap(struct urxe_xs_file *f);
/* Whether the process of @slot uses the domain (@mine, ours, always does). */
bool urxe_xs_slot_live(int fd, unsigned int mine, unsigned int slot);
/* The live TGT QP @qpn's entry, or NULL; the caller holds the mutex. */
struct urxe_xs_tgt *urxe_xs_tgt_find(struct urxe_xs_file *f, int fd,
				     unsigned int mine, uint32_t qpn);
/*
 * SRQ @srqn of another live process of the domain: true, with the GID its
 * requests are relayed to.  Lock-free: an entry is whole before in_use.
 */
bool urxe_xs_srq_route(struct urxe_xs_file *f, int fd, unsigned int mine,
		       uint32_t srqn, union ibv_gid *gid);

#endif
