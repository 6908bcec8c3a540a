/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP1 as a port, from libibverbs.so.1 to urxe's librdmacm.so.1: the one
 * private interface between them (core/gsi.c; the MAD ring is the
 * engine's, qp_engine/gsi.c).  librdmacm finds it with
 * urxe_private_gsi(URXE_GSI_ABI), exported under URXE_PRIVATE_1; NULL
 * means another libibverbs (Debian's) or another version of this one.
 */
#ifndef URXE_GSI_H
#define URXE_GSI_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>

#include <urxe/engine.h>

#define URXE_GSI_ABI 1

struct urxe_gsi_port;

/* What the CM needs to know of a device instance. */
struct urxe_gsi_info {
	char netdev[IF_NAMESIZE];	/* the interface it rides on */
	bool loopback;			/* on lo: its own 127.x address */
	struct in_addr lo_addr;		/* ... this one */
	unsigned int slot;		/* 1..1022 */
	uint64_t node_guid;		/* network byte order */
	char rundir[256];		/* the user's runtime directory */
};

struct urxe_gsi_ops {
	unsigned int abi;
	/*
	 * Opens QP1 on @ctx's instance, binding its sockets (the engine
	 * thread then reads them while nobody polls): a handle, and in
	 * *@notify_fd an eventfd written when MADs wait.  NULL and errno
	 * (EBUSY: already open in this process).
	 */
	struct urxe_gsi_port *(*open)(struct ibv_context *ctx, int *notify_fd);
	void (*close)(struct urxe_gsi_port *p);
	/* The oldest waiting MAD: 1, or 0 when none; -errno. */
	int (*recv)(struct urxe_gsi_port *p, struct urxe_gsi_mad *out);
	/* Sends one 256-byte MAD to QP1 at @dgid from @sgid. */
	int (*send)(struct urxe_gsi_port *p, const union ibv_gid *sgid,
		    const union ibv_gid *dgid, uint8_t tclass,
		    const uint8_t *mad);
	/* What @ctx's instance is (no need to open QP1 for it). */
	void (*info)(struct ibv_context *ctx, struct urxe_gsi_info *out);
};

/* The interface of version @abi, or NULL (and a log line) if not this one. */
const struct urxe_gsi_ops *urxe_private_gsi(unsigned int abi);

#endif
