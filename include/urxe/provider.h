/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contract of the virtual device (rxe_provider/) toward core/.
 *
 * A device is described by a struct urxe_dev_desc (from configuration).
 * Opening it yields the process's instance of it, struct urxe_dev: one per
 * (process, device), shared and reference-counted by every context the
 * process opens on the device.  The instance owns the host-wide slot, the
 * GID table and, later, the engine and sockets.
 *
 * All functions return 0 or a negative errno.
 */
#ifndef URXE_PROVIDER_H
#define URXE_PROVIDER_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <urxe/netdev.h>

enum urxe_backend {
	URXE_BACKEND_UDP,
	URXE_BACKEND_PACKET,
	URXE_BACKEND__COUNT,
};

extern const char *const urxe_backend_names[URXE_BACKEND__COUNT];

#define URXE_DEV_NAME_MAX 64	/* IBV_SYSFS_NAME_MAX */
#define URXE_RUNDIR_MAX 256

struct urxe_dev_desc {
	char name[URXE_DEV_NAME_MAX];
	char netdev[IF_NAMESIZE];
	enum urxe_backend backend;
	char rundir[URXE_RUNDIR_MAX];
};

#define URXE_GID_TBL_LEN 16
#define URXE_PKEY_TBL_LEN 1
#define URXE_DEFAULT_PKEY 0xffff
#define URXE_VENDOR_ID 0xffffff	/* as kernel rxe: no vendor */
#define URXE_QPN_INDEX_BITS 14	/* QPN = slot << 14 | index */

struct urxe_dev {
	struct urxe_dev_desc desc;
	pthread_mutex_t lock;		/* guards iface and gids */
	struct urxe_iface iface;
	struct urxe_slot slot;
	union ibv_gid gids[URXE_GID_TBL_LEN];	/* all-zero: empty */
	uint64_t node_guid;		/* network byte order */
	int refcnt;			/* under the instance list lock */
	bool dead;			/* inherited across fork() */
	struct urxe_dev *next;
};

/* Looks up or creates this process's instance of @desc. */
int urxe_dev_get(const struct urxe_dev_desc *desc, struct urxe_dev **out);
void urxe_dev_put(struct urxe_dev *dev);
/* In a fork()ed child: every inherited instance is dead, its slot dropped. */
void urxe_dev_after_fork_child(void);

/* Re-reads the interface (MTU, state, addresses) and rebuilds the GIDs. */
int urxe_dev_refresh(struct urxe_dev *dev);

/* Node GUID (network order) of a device on @ifc, as kernel rxe derives it. */
uint64_t urxe_guid_from_mac(const uint8_t mac[6]);

/*
 * Builds the GID table of a device on @ifc whose instance holds slot
 * @slot: on loopback the slot's own ::ffff:127.117.h.l at index 0; on a
 * real interface the link-local GID from the MAC (when the interface has
 * IPv6), then one GID per IPv4 address, then per IPv6 address.  Unused
 * entries are zeroed.  Returns the number of valid entries.
 */
unsigned int urxe_gid_table_build(const struct urxe_iface *ifc,
				  unsigned int slot, union ibv_gid *tbl,
				  unsigned int len);

int urxe_dev_query_device(struct urxe_dev *dev, struct ibv_device_attr_ex *attr);
int urxe_dev_query_port(struct urxe_dev *dev, uint32_t port,
			struct ibv_port_attr *attr);
/* Copies GID @index; -EINVAL past the table, -ENODATA for an empty entry. */
int urxe_dev_query_gid(struct urxe_dev *dev, uint32_t port, uint32_t index,
		       union ibv_gid *gid);
int urxe_dev_query_pkey(struct urxe_dev *dev, uint32_t port, uint16_t index,
			uint16_t *pkey);

/* Protection domains. */
struct urxe_pd {
	struct ibv_pd ibv;
	atomic_int users;		/* MRs, QPs, SRQs, AHs, MWs on it */
};

static inline struct urxe_pd *to_upd(struct ibv_pd *pd)
{
	return (struct urxe_pd *)((char *)pd - offsetof(struct urxe_pd, ibv));
}

int urxe_pd_alloc(struct urxe_dev *dev, struct ibv_context *ctx,
		  struct ibv_pd **out);
/* -EBUSY while objects still use the PD. */
int urxe_pd_dealloc(struct ibv_pd *pd);

/* XRC domains, shared host-wide by the inode of a file. */
struct urxe_xrcd {
	struct ibv_xrcd ibv;
	struct urxe_dev *dev;
	int file_fd;			/* dup of the caller's fd, or -1 */
	int lock_fd;			/* this handle's claim on the domain */
	int entry;			/* registry entry, -1: private domain */
	uint64_t domain_id;		/* equal for all openers of one domain */
	atomic_int users;		/* XRC SRQs / TGT QPs made through it */
};

static inline struct urxe_xrcd *to_uxrcd(struct ibv_xrcd *x)
{
	return (struct urxe_xrcd *)((char *)x - offsetof(struct urxe_xrcd, ibv));
}

int urxe_xrcd_open(struct urxe_dev *dev, struct ibv_context *ctx,
		   const struct ibv_xrcd_init_attr *attr, struct ibv_xrcd **out);
/* -EBUSY while resources made through this handle live. */
int urxe_xrcd_close(struct ibv_xrcd *xrcd);

#endif
