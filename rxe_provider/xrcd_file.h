/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The XRC files of a user's runtime directory, as bytes: a file-backed
 * domain's shared tables ("xrcd.<entry>.<gen>", xrcd_file.c, used by
 * xrc_shared.c); the registry of domains ("xrcd", used by xrcd.c) is
 * host.h's.  Their readers take whatever is in the files: a value out of range finds
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
