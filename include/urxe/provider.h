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

#include <urxe/datapath.h>
#include <urxe/engine.h>
#include <urxe/host.h>
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
/* Loopback: GID[0] and GID[1], both the slot's own address. */
#define URXE_GID_LOOPBACK_LEN 2
#define URXE_PKEY_TBL_LEN 1
#define URXE_DEFAULT_PKEY 0xffff
#define URXE_VENDOR_ID 0xffffff	/* as kernel rxe: no vendor */

struct urxe_dev {
	struct urxe_dev_desc desc;
	pthread_mutex_t lock;	/* guards iface, gids, channels, xrcds */
	struct urxe_iface iface;
	struct urxe_slot slot;
	/* the slot's shared statistics record (the engine's counters), or NULL */
	struct urxe_stats_rec *stats;
	union ibv_gid gids[URXE_GID_TBL_LEN];	/* all-zero: empty */
	/*
	 * The last empty GID index ibv_query_gid() read, plus one (0: none):
	 * a program that sends its peer an empty GID (`-g 3`) later asks for
	 * an address without a GRH, and the message then names the index.
	 */
	atomic_uint gid_empty_read;
	uint64_t node_guid;		/* network byte order */
	int refcnt;			/* under the instance list lock */
	bool dead;			/* inherited across fork() */
	struct urxe_dev *next;
	/* transport: the engine exists from open; the data path comes lazily */
	struct urxe_engine *eng;
	pthread_mutex_t bind_lock;
	struct urxe_dp *dp;		/* NULL until urxe_dev_bind() */
	struct urxe_faults_conf faults_conf;	/* URXE_FAULTS as read at open */
	bool faults_set;		/* ... if it was set */
	/* UC/UD flow control (flow.c), under the progress lock */
	struct urxe_flow *flow;
	bool flow_off;			/* no socket diagnostics here */
	atomic_int nsrq;		/* SRQs that exist (max_srq) */
	/* open completion channels and XRCD handles, for unloading (lock) */
	struct urxe_channel *channels;
	struct urxe_xrcd *xrcds;
	/* port events: link changes, and the contexts' async pipes (lock) */
	struct urxe_iface_watch *link;	/* NULL: no events */
	bool port_active;		/* as last reported */
	struct urxe_evpipe **asyncs;
	unsigned int nasyncs;
	/*
	 * XRC: the TGT QPs of this instance, whatever context made them, for
	 * ibv_open_qp(3); @xrc_lock also guards each one's handles and their
	 * count.  Never held while taking the engine's progress lock (the
	 * engine's event callback takes it with the progress lock held).
	 */
	pthread_mutex_t xrc_lock;
	struct urxe_qp *tgt_qps;
};

/*
 * A context's async pipe receives the device's port events
 * (IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR) while registered.
 */
int urxe_dev_async_add(struct urxe_dev *dev, struct urxe_evpipe *p);
void urxe_dev_async_del(struct urxe_dev *dev, struct urxe_evpipe *p);
/*
 * Reads link changes (non-blocking) and posts a port event to every
 * registered pipe when the port's state changed.  Called by threads
 * waiting in ibv_get_async_event (and the other waits).
 */
void urxe_dev_link_check(struct urxe_dev *dev);

/* Looks up or creates this process's instance of @desc. */
int urxe_dev_get(const struct urxe_dev_desc *desc, struct urxe_dev **out);
void urxe_dev_put(struct urxe_dev *dev);
/* In a fork()ed child: every inherited instance is dead, its slot dropped. */
void urxe_dev_after_fork_child(void);
/*
 * Unloading: the library is being dlclose()d with objects still open
 * (docs/design.md, "Unloading").  Begin stops and joins every engine
 * thread, then closes every completion channel and XRCD handle and
 * unmaps the shared XRC domain files; the caller then closes the
 * contexts, and end frees whatever instance is left.  No application
 * thread may be in a verb.
 */
void urxe_dev_unload_begin(void);
/* exit(): every instance's deferred ACKs leave. */
void urxe_dev_exit_acks(void);
void urxe_dev_unload_end(void);
void urxe_xrc_unload(void);
/* ...and the provider's other process-wide locks are free again. */
void urxe_mcast_after_fork_child(void);
void urxe_import_after_fork_child(void);

/*
 * Opens the sockets and starts the engine thread, once: the first QP or AH
 * that needs the network calls it (ibv_devinfo never does).
 */
int urxe_dev_bind(struct urxe_dev *dev);
/*
 * From now on, received packets carry their IP TOS and TTL (a UD QP's
 * GRH shows them); until then the udp backend leaves them out, which
 * saves every receive two control messages.  Call once bound.
 */
void urxe_dev_want_ip_meta(struct urxe_dev *dev);

/*
 * Runs progress while waiting up to @timeout_ms (-1: forever) for @fd to
 * become readable: ibv_get_cq_event / ibv_get_async_event block here
 * (the data path's urxe_dp_wait, with this instance's engine and link).
 * Returns 1 when @fd is readable, 0 on timeout, or a negative errno
 * (-EINTR: a signal handler ran).
 */
int urxe_dev_wait_fd(struct urxe_dev *dev, int fd, int timeout_ms);

/* Re-reads the interface (MTU, state, addresses) and rebuilds the GIDs. */
int urxe_dev_refresh(struct urxe_dev *dev);

/* Node GUID (network order) of a device on @ifc, as kernel rxe derives it. */
uint64_t urxe_guid_from_mac(const uint8_t mac[6]);

/*
 * Builds the GID table of a device on @ifc whose instance holds a slot of
 * address index @slot: on loopback the slot's own ::ffff:127.117.h.l at
 * indexes 0 and 1 (URXE_GID_LOOPBACK_LEN entries, one address); on a
 * real interface the link-local GID from the MAC (when the interface has
 * IPv6), then one GID per IPv4 address, then per IPv6 address.  Unused
 * entries are zeroed.  Returns the number of valid entries.
 */
unsigned int urxe_gid_table_build(const struct urxe_iface *ifc,
				  unsigned int slot, union ibv_gid *tbl,
				  unsigned int len);

/*
 * For a message about a wrong GID index: "(this device has GID[0] and
 * GID[1], ::ffff:127.117.1.2); use -g 0 or -g 1" from the @len entries
 * of @tbl (empty ones all-zero).  Returns what snprintf() would.
 */
size_t urxe_gid_hint(const union ibv_gid *tbl, unsigned int len, char *buf,
		     size_t buflen);
/* The same for @dev's table now. */
size_t urxe_dev_gid_hint(struct urxe_dev *dev, char *buf, size_t buflen);

int urxe_dev_query_device(struct urxe_dev *dev, struct ibv_device_attr_ex *attr);
int urxe_dev_query_port(struct urxe_dev *dev, uint32_t port,
			struct ibv_port_attr *attr);
/*
 * Copies GID @index; -EINVAL past the table, -ENODATA for an empty entry.
 * urxe_dev_query_gid_user() is for a program's own query: it says so at
 * the default log level when the index is past the table, and with
 * @remember notes an empty one (gid_empty_read: ibv_query_gid(3), which
 * answers an empty entry with the zero GID and no error).
 */
int urxe_dev_query_gid_user(struct urxe_dev *dev, uint32_t port,
			    uint32_t index, union ibv_gid *gid, bool remember);
int urxe_dev_query_gid(struct urxe_dev *dev, uint32_t port, uint32_t index,
		       union ibv_gid *gid);
int urxe_dev_query_pkey(struct urxe_dev *dev, uint32_t port, uint16_t index,
			uint16_t *pkey);

/* Protection domains. */
struct urxe_pd {
	struct ibv_pd ibv;
	atomic_int users;		/* MRs, QPs, SRQs, AHs, MWs on it */
	struct urxe_dev *dev;
	bool imported;			/* ibv_import_pd's: the handle of another */
};

static inline struct urxe_pd *to_upd(struct ibv_pd *pd)
{
	return (struct urxe_pd *)((char *)pd - offsetof(struct urxe_pd, ibv));
}

int urxe_pd_alloc(struct urxe_dev *dev, struct ibv_context *ctx,
		  struct ibv_pd **out);
/* -EBUSY while objects still use the PD. */
int urxe_pd_dealloc(struct ibv_pd *pd);

struct urxe_xrc_dom;

/* XRC domains, shared host-wide by the inode of a file. */
struct urxe_xrcd {
	struct ibv_xrcd ibv;
	struct urxe_dev *dev;
	int file_fd;			/* dup of the caller's fd, or -1 */
	int lock_fd;			/* this handle's claim on the domain */
	int entry;			/* registry entry, -1: private domain */
	uint64_t domain_id;		/* equal for all openers of one domain */
	atomic_int users;		/* XRC SRQs / TGT QPs made through it */
	struct urxe_xrcd *next;		/* dev->xrcds */
};

static inline struct urxe_xrcd *to_uxrcd(struct ibv_xrcd *x)
{
	return (struct urxe_xrcd *)((char *)x - offsetof(struct urxe_xrcd, ibv));
}

int urxe_xrcd_open(struct urxe_dev *dev, struct ibv_context *ctx,
		   const struct ibv_xrcd_init_attr *attr, struct ibv_xrcd **out);
/* -EBUSY while resources made through this handle live. */
int urxe_xrcd_close(struct ibv_xrcd *xrcd);
/* Unloading: closes @x whatever was made through it. */
void urxe_xrcd_release(struct urxe_xrcd *x);

/*
 * Event pipes: fixed-size records written whole (atomically, being under
 * PIPE_BUF) into a pipe whose read end the application holds, may poll
 * and may make non-blocking.  A completion channel carries struct ibv_cq
 * pointers; the context's async_fd carries struct ibv_async_event.
 * Writers never block (the write end is O_NONBLOCK: a full pipe drops the
 * record, -EAGAIN).  Posts, takes and purges serialize on @lock, so a
 * purge sees every record and keeps the others in order.
 */
struct urxe_evpipe {
	int rd;				/* the application's fd */
	int wr;
	size_t size;			/* bytes per record */
	pthread_mutex_t lock;
};

int urxe_evpipe_init(struct urxe_evpipe *p, size_t rec_size);
void urxe_evpipe_fini(struct urxe_evpipe *p);
int urxe_evpipe_post(struct urxe_evpipe *p, const void *rec);
/*
 * Takes one record.  While there is none it waits in urxe_dev_wait_fd()
 * (making progress on @dev), unless the application set O_NONBLOCK on the
 * read end: then -EAGAIN.  A signal handler that ran without SA_RESTART
 * ends the wait with -EINTR, as it ends the kernel's read().
 */
int urxe_evpipe_get(struct urxe_evpipe *p, struct urxe_dev *dev, void *rec);
/* Drops the records @match accepts; returns how many. */
unsigned int urxe_evpipe_purge(struct urxe_evpipe *p,
			       bool (*match)(const void *rec, const void *arg),
			       const void *arg);

/*
 * Memory regions (ibv_reg_mr(3), ibv_rereg_mr(3)).  Memory is not pinned:
 * registration checks that the range is mapped, readable, and writable
 * when the access flags can write (as the kernel's ib_umem_get does), and
 * the engine's key table names @mem.
 */
struct urxe_mr {
	struct ibv_mr ibv;
	struct urxe_mem mem;
	struct urxe_pd *pd;
	struct urxe_dev *dev;
	bool published;			/* @mem is in the engine's key table */
	bool imported;			/* ibv_import_mr's: keys of another MR */
};

static inline struct urxe_mr *to_umr(struct ibv_mr *mr)
{
	return (struct urxe_mr *)((char *)mr - offsetof(struct urxe_mr, ibv));
}

int urxe_mr_reg(struct urxe_dev *dev, struct ibv_pd *pd, void *addr,
		size_t length, uint64_t iova, unsigned int access,
		struct ibv_mr **out);
/*
 * Changes what @flags (IBV_REREG_MR_CHANGE_*) say.  PD and access change
 * in place and keep the keys (remote peers hold the rkey); a new
 * translation is a new registration with new keys.  On failure the MR is
 * unchanged, except after a failed re-publication (then only dereg works).
 */
int urxe_mr_rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, unsigned int access);
/* -EBUSY while the engine uses the memory (a bound MW, a transfer). */
int urxe_mr_dereg(struct ibv_mr *mr);

/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)), types 1 and 2B: keys
 * of the engine's key table without a local key, bound by
 * IBV_WR_BIND_MW work requests (ibv_bind_mw posts one for type 1).
 * ibv.handle is the window's fixed identity (the key it was made with);
 * ibv.rkey changes with each bind.
 */
struct urxe_mw {
	struct ibv_mw ibv;
	struct urxe_mem mem;
	struct urxe_pd *pd;
	struct urxe_dev *dev;
};

static inline struct urxe_mw *to_umw(struct ibv_mw *mw)
{
	return (struct urxe_mw *)((char *)mw - offsetof(struct urxe_mw, ibv));
}

/* -EINVAL for a type other than 1 and 2. */
int urxe_mw_alloc(struct urxe_dev *dev, struct ibv_pd *pd,
		  enum ibv_mw_type type, struct ibv_mw **out);
/* Unbinds a bound window; -EBUSY only while a transfer uses it. */
int urxe_mw_dealloc(struct ibv_mw *mw);
/* ibv_bind_mw(3): posts IBV_WR_BIND_MW with ibv_inc_rkey(mw->rkey). */
int urxe_mw_post_bind(struct ibv_qp *qp, struct ibv_mw *mw,
		      struct ibv_mw_bind *bind);

/*
 * ibv_import_pd(3), ibv_import_mr(3), within one process: a new handle
 * object, made in the importing context @ctx, for the live PD (MR) of
 * the same device instance that @handle names (-ENOENT: none).  An
 * imported MR names the original's keys; it must be imported into a PD
 * of the original's PD handle (-EINVAL).  Unimporting frees the handle
 * object only; an imported PD that still has objects on it is freed when
 * its context closes (urxe_pd_release_imports).
 */
int urxe_pd_import(struct urxe_dev *dev, struct ibv_context *ctx,
		   uint32_t handle, struct ibv_pd **out);
void urxe_pd_unimport(struct ibv_pd *pd);
void urxe_pd_release_imports(struct ibv_context *ctx);
int urxe_mr_import(struct ibv_pd *pd, uint32_t handle, struct ibv_mr **out);
void urxe_mr_unimport(struct ibv_mr *mr);
/*
 * Is [addr, addr + length) mapped and readable, and writable if @write?
 * 0, -EINVAL (empty or wrapping range) or -EFAULT.
 */
int urxe_mem_check_range(const void *addr, size_t length, bool write);

/* Completion channels (ibv_create_comp_channel(3)): ibv.fd is ev.rd. */
struct urxe_channel {
	struct ibv_comp_channel ibv;
	struct urxe_dev *dev;
	struct urxe_evpipe ev;		/* struct ibv_cq * records */
	atomic_int users;		/* CQs reporting to it */
	struct urxe_channel *next;	/* dev->channels */
};

static inline struct urxe_channel *to_uch(struct ibv_comp_channel *ch)
{
	return (struct urxe_channel *)((char *)ch -
				       offsetof(struct urxe_channel, ibv));
}

int urxe_channel_create(struct urxe_dev *dev, struct ibv_context *ctx,
			struct ibv_comp_channel **out);
/* -EBUSY while CQs use it. */
int urxe_channel_destroy(struct ibv_comp_channel *ch);
/* Unloading: closes @ch whatever uses it. */
void urxe_channel_release(struct urxe_channel *ch);
int urxe_channel_get_event(struct ibv_comp_channel *ch, struct ibv_cq **cq);

/*
 * Completion queues (ibv_create_cq(3)).  Applications get &ibv as a
 * struct ibv_cq (its prefix).  The engine pushes into @ring; an armed
 * ring's completion posts the CQ to its channel, an overrun posts
 * IBV_EVENT_CQ_ERR to @async, the event pipe of the context (core owns it
 * and passes it at creation).  Destroy drops this CQ's events nobody read
 * yet and waits until the ones read were acknowledged, as rdma-core does
 * with the kernel's counts (ibv_get_cq_event(3)).
 */
struct urxe_cq {
	struct ibv_cq_ex ibv;
	struct urxe_cq_ring ring;
	struct urxe_dev *dev;
	struct urxe_channel *ch;
	struct urxe_evpipe *async;
	atomic_int users;		/* QPs and SRQs completing into it */
	atomic_uint comp_events;	/* posted to ch */
	atomic_uint async_events;	/* posted to async */
	unsigned int idle_polls;	/* empty polls in a row (racy: a hint) */
	/* ibv_start_poll(3) .. ibv_end_poll: the completion being read */
	pthread_mutex_t poll_lock;	/* held from start to end (not single-threaded) */
	bool poll_locked;		/* poll_lock is used */
	struct ibv_wc cur;
};

static inline struct urxe_cq *to_ucq(struct ibv_cq *cq)
{
	return (struct urxe_cq *)((char *)cq - offsetof(struct urxe_cq, ibv));
}

int urxe_cq_create(struct urxe_dev *dev, struct ibv_context *ctx, int cqe,
		   void *cq_context, struct ibv_comp_channel *ch,
		   int comp_vector, struct urxe_evpipe *async,
		   struct ibv_cq **out);
/* -EBUSY while QPs or SRQs use it. */
int urxe_cq_destroy(struct ibv_cq *cq);
int urxe_cq_resize(struct ibv_cq *cq, int cqe);
/* A count, or a negative errno: ibv_poll_cq's own convention. */
int urxe_cq_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int urxe_cq_req_notify(struct ibv_cq *cq, int solicited_only);
/*
 * ibv_create_cq_ex(3): a CQ whose ibv_cq_ex reads completions one by one
 * (start_poll / next_poll / end_poll and the ibv_wc_read_* accessors of
 * the wc_flags asked for; unsupported flags -EOPNOTSUPP).  start_poll and
 * next_poll are left for core to install over urxe_cq_start_poll /
 * urxe_cq_next_poll, which return 0, -ENOENT (empty) or a negative errno.
 */
int urxe_cq_create_ex(struct urxe_dev *dev, struct ibv_context *ctx,
		      const struct ibv_cq_init_attr_ex *attr,
		      struct urxe_evpipe *async, struct ibv_cq_ex **out);
int urxe_cq_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr);
int urxe_cq_next_poll(struct ibv_cq_ex *cq);
void urxe_cq_ack_events(struct ibv_cq *cq, unsigned int nevents);
/* ibv_ack_async_event() of an IBV_EVENT_CQ_ERR. */
void urxe_cq_ack_async(struct ibv_cq *cq);

/*
 * Address handles (ibv_create_ah(3)): the GRH of a RoCE path, resolved
 * once.  Posting a UD send copies these fields into the work request, so
 * an AH may be destroyed while sends that used it are still in flight.
 */
struct urxe_ah {
	struct ibv_ah ibv;
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint8_t tclass;
	uint8_t hop_limit;		/* as given; 0 sends with 64 */
	uint32_t flow_label;
};

static inline struct urxe_ah *to_uah(struct ibv_ah *ah)
{
	return (struct urxe_ah *)((char *)ah - offsetof(struct urxe_ah, ibv));
}

int urxe_ah_create(struct urxe_dev *dev, struct ibv_pd *pd,
		   const struct ibv_ah_attr *attr, struct ibv_ah **out);
int urxe_ah_destroy(struct ibv_ah *ah);

/*
 * Queue pairs (ibv_create_qp(3), ibv_modify_qp(3)).  The transport state
 * lives in the engine's struct urxe_eqp; the provider validates, keeps
 * every attribute the application set (for ibv_query_qp) and posts work.
 *
 * Affiliated async events (IBV_EVENT_QP_FATAL, ...) go to @async, the
 * context's event pipe (core owns it and passes it at creation), as
 * struct ibv_async_event records.  Destroy drops this QP's records nobody
 * read yet and waits until the ones read were acknowledged
 * (ibv_ack_async_event -> urxe_qp_ack_async), as rdma-core does with the
 * kernel's counts (ibv_get_async_event(3)).
 */
struct urxe_qp {
	struct ibv_qp_ex vqp;		/* vqp.qp_base is the ibv_qp */
	/*
	 * The engine's QP (urxe_engine_qp_new), which the provider passes to
	 * the engine, and @e, its public part (urxe_eqp_pub(@eobj)), the
	 * fields the provider sets and reads.
	 */
	struct urxe_eqp *eobj;
	struct urxe_eqp_pub *e;
	struct urxe_dev *dev;
	struct ibv_qp_init_attr init;	/* as created, with the granted caps */
	pthread_mutex_t lock;		/* serialises modify and query */
	struct ibv_qp_attr attr;	/* every attribute set so far; lock */
	struct urxe_evpipe *async;
	atomic_uint events_reported;	/* posted to async */
	/* SRQ QPs: IBV_EVENT_QP_LAST_WQE_REACHED posted since the last RESET */
	atomic_bool last_wqe_reported;
	/* the ibv_wr_* batch being built; NULL without SEND_OPS_FLAGS */
	struct urxe_wr_batch *wrb;
	/*
	 * XRC TGT QPs (IBV_QPT_XRC_RECV) are used through handles: the
	 * creator's is this object's own ibv_qp, each ibv_open_qp(3) makes
	 * another struct urxe_qp whose @real names this one (its other
	 * transport fields unused).  Each handle counts in the users of the
	 * XRCD handle it came through (@xrcd) and gets the QP's async events
	 * in its own context.  The QP lives until its last handle goes.
	 * Handles, @nhandles and @creator_open are under dev->xrc_lock.
	 */
	struct urxe_qp *real;		/* an opened handle: the TGT QP */
	struct urxe_xrcd *xrcd;		/* a handle's XRCD handle */
	struct urxe_qp *handles;	/* TGT: the opened handles ... */
	struct urxe_qp *hnext;		/* ... linked here */
	unsigned int nhandles;		/* TGT: the creator's, if open, + opened */
	bool creator_open;
	struct urxe_qp *tgt_next;	/* dev->tgt_qps */
	/*
	 * A TGT QP of a file-backed domain: the domain's shared file (its
	 * state is in ->e->shared).  @view: a QP another process hosts, seen
	 * through ibv_open_qp(3) here (docs/design.md, XRC across processes).
	 */
	struct urxe_xrc_dom *xdom;
	bool view;
};

static inline struct urxe_qp *to_uqp(struct ibv_qp *qp)
{
	return (struct urxe_qp *)((char *)qp - offsetof(struct urxe_qp, vqp.qp_base));
}

/* The QP behind a handle: itself, unless ibv_open_qp(3) made it. */
static inline struct urxe_qp *urxe_qp_real(struct urxe_qp *qp)
{
	return qp->real ? qp->real : qp;
}

/*
 * RC, UC, UD and IBV_QPT_XRC_SEND (an XRC INI QP: a PD, a send CQ and a
 * send queue; receive caps, recv_cq and srq are ignored, as by the
 * kernel).  IBV_QPT_XRC_RECV needs ibv_create_qp_ex(3): -EINVAL here.
 * An XRC SRQ on any QP: -EINVAL.
 */
int urxe_qp_create(struct urxe_dev *dev, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *attr, struct urxe_evpipe *async,
		   struct ibv_qp **out);
int urxe_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int urxe_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int urxe_qp_destroy(struct ibv_qp *qp);
/*
 * ibv_attach_mcast(3), ibv_detach_mcast(3): UD QPs, multicast GIDs
 * (-EINVAL otherwise; detaching a group not attached too), -ENOMEM past
 * the limits.  Loopback: through the runtime directory's registry; a real
 * interface: IP multicast (the receive socket joins the group).
 */
int urxe_qp_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid);
int urxe_qp_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid);
/* ibv_ack_async_event() of an event affiliated with @qp. */
void urxe_qp_ack_async(struct ibv_qp *qp);
/*
 * ibv_create_qp_ex(3): PD, XRCD, CREATE_FLAGS (none supported) and
 * SEND_OPS_FLAGS; with the latter the QP's ibv_qp_ex carries the ibv_wr_*
 * family (qp_ex.c), except wr_complete, which core installs over
 * urxe_qpx_complete (0 or a negative errno).  Other comp_mask bits,
 * flags and operations the transport lacks: -EOPNOTSUPP.
 * IBV_QPT_XRC_RECV (an XRC TGT QP) needs IBV_QP_INIT_ATTR_XRCD and an
 * XRCD of this instance (-EINVAL); it has no PD, CQs, SRQ or queues
 * (whatever is given is ignored, the caps come back 0).
 */
int urxe_qp_create_ex(struct urxe_dev *dev, struct ibv_qp_init_attr_ex *attr,
		      struct urxe_evpipe *async, struct ibv_qp **out);
/*
 * ibv_open_qp(3): a new handle, in context @ctx, on the TGT QP numbered
 * attr->qp_num of attr->xrcd's domain that a context of this instance
 * made (comp_mask NUM, XRCD and TYPE, type IBV_QPT_XRC_RECV, the XRCD of
 * @ctx: else -EINVAL; unknown comp_mask bits -EOPNOTSUPP; no such QP
 * -EINVAL).  ibv_destroy_qp(3) of a handle drops only the handle.
 */
int urxe_qp_open(struct urxe_dev *dev, struct ibv_context *ctx,
		 struct ibv_qp_open_attr *attr, struct urxe_evpipe *async,
		 struct ibv_qp **out);
/* The ibv_qp_ex of a QP made with SEND_OPS_FLAGS, else NULL. */
struct ibv_qp_ex *urxe_qp_to_qp_ex(struct ibv_qp *qp);
int urxe_qpx_complete(struct ibv_qp_ex *qpx);
/* The data path: 0, or a negative errno with *bad naming the failed WR. */
int urxe_qp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad);
int urxe_qp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);

/*
 * Shared receive queues (ibv_create_srq(3), ibv_modify_srq(3)): basic SRQs
 * on a PD, which the RC, UC and UD QPs made with them (init_attr.srq)
 * take their receives from, and XRC SRQs (ibv_create_srq_ex(3) with
 * IBV_SRQT_XRC), numbered by the engine, which the TGT QPs of their XRC
 * domain deliver into and whose receives complete to their own CQ.  An
 * XRC SRQ counts in the users of its PD, CQ and XRCD handle; no QP
 * attaches to it.  The ring is the engine's struct urxe_esrq.
 * IBV_EVENT_SRQ_LIMIT_REACHED goes to @async, the context's event pipe,
 * as a QP's events do.  Destroy refuses (-EBUSY) while QPs use the SRQ,
 * then drops its events nobody read and waits until the ones read were
 * acknowledged (ibv_ack_async_event -> urxe_srq_ack_async).
 */
struct urxe_srq {
	struct ibv_srq ibv;
	/* The engine's SRQ (urxe_engine_srq_new) and its public part. */
	struct urxe_esrq *eobj;
	struct urxe_esrq_pub *e;
	struct urxe_dev *dev;
	pthread_mutex_t lock;		/* serialises modify and query */
	struct urxe_evpipe *async;
	atomic_uint events_reported;	/* posted to async */
	atomic_int users;		/* QPs attached */
	/* XRC SRQs: the XRCD handle and CQ it was made with; NULL: basic */
	struct urxe_xrcd *xrcd;
	struct urxe_cq *cq;
	struct urxe_xrc_dom *xdom;	/* a file-backed domain's shared file */
};

static inline struct urxe_srq *to_usrq(struct ibv_srq *srq)
{
	return (struct urxe_srq *)((char *)srq - offsetof(struct urxe_srq, ibv));
}

/*
 * ibv_create_srq_ex(3) (ibv_create_srq(3) passes comp_mask PD): the
 * granted max_wr and max_sge are written back into @attr.  An XRC SRQ
 * needs comp_mask XRCD, CQ and PD, each of @ctx (-EINVAL).  Tag-matching
 * SRQs: -EOPNOTSUPP.
 */
int urxe_srq_create(struct urxe_dev *dev, struct ibv_context *ctx,
		    struct ibv_srq_init_attr_ex *attr,
		    struct urxe_evpipe *async, struct ibv_srq **out);
int urxe_srq_modify(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int urxe_srq_query(struct ibv_srq *srq, struct ibv_srq_attr *attr);
/* -EBUSY while QPs use it. */
int urxe_srq_destroy(struct ibv_srq *srq);
/* 0, or a negative errno with *bad naming the failed WR. */
int urxe_srq_post_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad);
/* ibv_ack_async_event() of an event affiliated with @srq. */
void urxe_srq_ack_async(struct ibv_srq *srq);
/* ibv_get_srq_num(3): an XRC SRQ's number; -EINVAL for a basic SRQ. */
int urxe_srq_get_num(struct ibv_srq *srq, uint32_t *srq_num);

/* Whether an async event of this type names an SRQ (element.srq). */
static inline bool urxe_event_is_srq(enum ibv_event_type t)
{
	return t == IBV_EVENT_SRQ_ERR || t == IBV_EVENT_SRQ_LIMIT_REACHED;
}

/* Whether an async event of this type names a QP (element.qp). */
static inline bool urxe_event_is_qp(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

#endif
