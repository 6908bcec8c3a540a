/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of core/, the libibverbs ABI layer: device descriptors from
 * configuration, the ibv_device objects of the device list, contexts.
 */
#ifndef URXE_CORE_H
#define URXE_CORE_H

#include <infiniband/verbs.h>
#include <limits.h>
#include <sys/types.h>

#include <urxe/provider.h>
#include <urxe/util.h>

#include "retconv.h"

/*
 * From rdma-core's driver.h, which is not installed: the GID type as sysfs
 * spells it, returned by ibv_query_gid_type() (IBVERBS_PRIVATE_34).
 */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

/* --- configuration (config.c) --- */
#define URXE_CONFIG_MAX_DEVS 64
#define URXE_CONFIG_SYSTEM "/etc/urxe/devices.conf"

struct urxe_config {
	unsigned int ndevs;
	struct urxe_dev_desc devs[URXE_CONFIG_MAX_DEVS];
	unsigned int nentries;	/* entries listed, valid or not */
	char source[PATH_MAX];	/* where the devices came from */
	char rundir[URXE_RUNDIR_MAX];
};

/* In a fork()ed child: the module's locks are free again. */
void urxe_ctx_after_fork_child(void);
void urxe_devlist_after_fork_child(void);
/* Unloading (unload.c): what the application left open goes. */
void urxe_lib_used(void);
void urxe_ctx_unload(void);
void urxe_devlist_unload(void);

/*
 * Parses one device line: "NAME netdev IF [backend udp|packet]".  Returns
 * 0, 1 for a blank or comment line, or -EINVAL (with @err explaining).
 */
int urxe_config_parse_line(const char *line, struct urxe_dev_desc *out,
			   char *err, size_t errlen);
/* Parses a whole text (newline or ';' separated) into @cfg, appending. */
int urxe_config_parse(const char *text, const char *origin,
		      struct urxe_config *cfg);
/*
 * The same, telling @report of each entry it leaves out (@line 0: not one
 * line's fault) instead of logging a warning: `urxe doctor` words them.
 */
typedef void urxe_config_report_fn(void *ctx, const char *origin, int line,
				   const char *what);
int urxe_config_parse_report(const char *text, const char *origin,
			     struct urxe_config *cfg,
			     urxe_config_report_fn *report, void *ctx);
/* A configuration file's text (at most 1 MiB; free() it), or NULL. */
char *urxe_config_read_text(const char *path);
/*
 * Loads the devices from the first layer that exists: URXE_DEVICES, the file
 * named by URXE_CONFIG, $XDG_CONFIG_HOME/urxe/devices.conf (or
 * ~/.config/...), /etc/urxe/devices.conf; otherwise rxe0 on lo.
 */
int urxe_config_load(struct urxe_config *cfg);
/* Loads only the file layer that `urxe dev add/del` edit. */
int urxe_config_load_file(const char *path, struct urxe_config *cfg);
/* The file `urxe dev add/del` edit: URXE_CONFIG, else the user's. */
int urxe_config_edit_path(char *buf, size_t len);
int urxe_config_write(const char *path, const struct urxe_config *cfg);
int urxe_config_find(const struct urxe_config *cfg, const char *name);
void urxe_config_default_dev(struct urxe_config *cfg);
/*
 * Line-wise edits of the file at @path (config_edit.c): everything else
 * in it is kept byte for byte.  _add appends @d's line (creating the file,
 * and its directories, if needed) and says how many entries the file
 * listed before; _del removes every entry defining @name (-ENOENT if none)
 * and says how many entries are left.  0 or a negative errno.
 */
int urxe_config_file_add(const char *path, const struct urxe_dev_desc *d,
			 unsigned int *had_entries);
int urxe_config_file_del(const char *path, const char *name,
			 unsigned int *left);

/* --- the device list (device_list.c) --- */
struct urxe_ibdev {
	struct ibv_device ibv;
	struct urxe_dev_desc desc;
	int index;
	__be64 guid;
	struct urxe_ibdev *next;
};

static inline struct urxe_ibdev *to_uibdev(struct ibv_device *d)
{
	return urxe_container_of(d, struct urxe_ibdev, ibv);
}

/* --- contexts (context.c) --- */
struct urxe_ctx {
	struct urxe_ibdev *ibdev;
	struct urxe_dev *dev;
	/*
	 * async_fd's queue of struct ibv_async_event records: provider
	 * objects post to it (they get &async at creation), destroys purge
	 * it, ibv_get_async_event takes from it.
	 */
	struct urxe_evpipe async;
	int async_wr;			/* == async.wr */
	/* cmd_fd's inode: ibv_import_device() finds the context by it */
	dev_t cmd_dev;
	ino_t cmd_ino;
	struct urxe_ctx *next;		/* the process's contexts */
	struct verbs_context vctx;	/* last: ibv_context ends it */
};

_Static_assert(offsetof(struct urxe_ctx, vctx.context) +
	       sizeof(struct ibv_context) == sizeof(struct urxe_ctx),
	       "ibv_context must end the context object");

static inline struct urxe_ctx *to_uctx(struct ibv_context *c)
{
	return urxe_container_of(c, struct urxe_ctx, vctx.context);
}

static inline struct urxe_dev *ctx_dev(struct ibv_context *c)
{
	return to_uctx(c)->dev;
}

/* Verbs installed in verbs_context by context.c. */
int urxe_vctx_query_port(struct ibv_context *ctx, uint8_t port,
			 struct ibv_port_attr *attr, size_t attr_len);
int urxe_vctx_query_device_ex(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_xrcd *urxe_vctx_open_xrcd(struct ibv_context *ctx,
				     struct ibv_xrcd_init_attr *attr);
int urxe_vctx_close_xrcd(struct ibv_xrcd *xrcd);

/* (qp.c, cq.c, query.c) */
struct ibv_qp *urxe_vctx_create_qp_ex(struct ibv_context *ctx,
				      struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *urxe_vctx_open_qp(struct ibv_context *ctx,
				 struct ibv_qp_open_attr *attr);
struct ibv_cq_ex *urxe_vctx_create_cq_ex(struct ibv_context *ctx,
					 struct ibv_cq_init_attr_ex *attr);
int urxe_vctx_query_rt_values(struct ibv_context *ctx,
			      struct ibv_values_ex *values);
/* The ibv_qp_ex / ibv_cq_ex slots that return errno values. */
int urxe_ops_wr_complete(struct ibv_qp_ex *qpx);
int urxe_ops_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr);
int urxe_ops_next_poll(struct ibv_cq_ex *cq);

/* ibv_context_ops slots installed by context.c (cq.c). */
int urxe_ops_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int urxe_ops_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* (qp.c) */
int urxe_ops_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr);
int urxe_ops_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
/* (mw.c) */
struct ibv_mw *urxe_ops_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urxe_ops_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		     struct ibv_mw_bind *bind);
int urxe_ops_dealloc_mw(struct ibv_mw *mw);
/* (srq.c) */
struct ibv_srq *urxe_vctx_create_srq_ex(struct ibv_context *context,
					struct ibv_srq_init_attr_ex *attr);
int urxe_vctx_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int urxe_ops_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr);

#endif
