/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the provider: the limits the device advertises.  They are
 * sized for a 2-core CI machine; queues are allocated lazily, so large
 * limits cost nothing until used.
 */
#ifndef URXE_PROVIDER_INT_H
#define URXE_PROVIDER_INT_H

#include <endian.h>
#include <stdio.h>

#include <urxe/provider.h>

#define URXE_FW_VERSION "urxe 0.1.0"
#define URXE_MAX_QP_WR 16384
#define URXE_MAX_SGE 32
#define URXE_MAX_INLINE 256	/* bytes of IBV_SEND_INLINE data per WR */
#define URXE_MAX_CQ 16384
#define URXE_MAX_CQE 4194303	/* 2^22 - 1, as mlx5: libfabric's rxm asks 262,144 */
#define URXE_MAX_MR 262144
#define URXE_MAX_PD 65536
#define URXE_MAX_RD_ATOM 128
/* An empty CQ polled this many times in a row: the poller yields once. */
#define URXE_IDLE_POLLS_YIELD 16
#define URXE_MAX_MCAST_GRP 256
#define URXE_MAX_MCAST_QP_ATTACH 56
#define URXE_MAX_AH 32768

/* transport.c: the engine and data path of an instance. */
struct urxe_dev;
int urxe_dev_transport_init(struct urxe_dev *dev);
/*
 * Reads URXE_FAULTS into dev->faults_conf (used when the data path
 * opens): 0, or -EINVAL when the spec is bad (urxe_dp_faults_read).
 */
int urxe_dev_faults_read(struct urxe_dev *dev);
void urxe_dev_transport_fini(struct urxe_dev *dev);
/* The engine's clock (now): CLOCK_MONOTONIC, in ns; @priv unused. */
uint64_t urxe_dev_now(void *priv);
/*
 * flow.c: UC/UD flow control toward receive sockets of this host (the
 * engine's tx_wait, udp backend), and its end with the instance.
 */
/* ops->peer_unread (flow.c): a local peer that has not read its socket. */
bool urxe_dev_peer_unread(void *priv, const union ibv_gid *dgid);
/* ops->peer_absent (flow.c): an address of this host nobody owns. */
bool urxe_dev_peer_absent(void *priv, const union ibv_gid *dgid);
uint64_t urxe_dev_tx_wait(void *priv, const union ibv_gid *dgid,
			  uint32_t len);
/* The transmit batch went to the kernel: its packets are no longer unsent. */
void urxe_dev_flow_sent(struct urxe_dev *dev);
void urxe_dev_flow_free(struct urxe_dev *dev);

/*
 * ah.c: a validated RoCE path, what an AH or a QP's primary AV resolves
 * to: port 1, a GRH, a source GID that exists, both GIDs of one family.
 */
struct urxe_path {
	union ibv_gid dgid;
	union ibv_gid sgid;
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t flow_label;
};

int urxe_av_resolve(struct urxe_dev *dev, const struct ibv_ah_attr *av,
		    struct urxe_path *out);

/*
 * cq.c: drops the completions of QP @qpn still waiting in @cq, keeping
 * the others in order; returns how many went.  A QP moved to RESET takes
 * its completions with it, as rdma-core's mlx4, mlx5 and hns providers
 * clean their CQs (*_cq_clean in their modify_qp): applications reuse
 * the QP after RESET and expect a CQ without its old flush errors.
 */
unsigned int urxe_cq_clean(struct ibv_cq *cq, uint32_t qpn);

/*
 * qp_state.c: the transitions of ibv_modify_qp(3).  Whether @mask suits
 * the transition @cur -> @next of a QP of @type (IBA 11.2.5.2); the masks
 * a transition requires and allows (-1: no such transition), for logs.
 */
extern const char *const urxe_qp_state_names[IBV_QPS_ERR + 1];
bool urxe_qp_mask_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
		     enum ibv_qp_type type, int mask);
int urxe_qp_mask_required(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type);
int urxe_qp_mask_optional(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type);
/*
 * For messages: the IBV_QP_* names of @mask's bits ("IBV_QP_AV,
 * IBV_QP_DEST_QPN"); why @mask does not suit @cur -> @next ("missing
 * IBV_QP_RQ_PSN; not allowed: IBV_QP_SQ_PSN", or that there is no such
 * transition); and what a value of attribute @bit must be.
 */
void urxe_qp_mask_names(int mask, char *buf, size_t len);
void urxe_qp_mask_explain(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type, int mask, char *buf,
			  size_t len);
const char *urxe_qp_attr_range(int bit);
/*
 * The attributes a QP of @type ignores, dropped from the mask before the
 * table is consulted, as the kernel's modify_qp does: an XRC INI QP has
 * no responder (MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER), a TGT QP no requester
 * (MAX_QP_RD_ATOMIC, RETRY_CNT, RNR_RETRY).
 */
int urxe_qp_mask_ignored(enum ibv_qp_type type);

/*
 * qp.c: creation behind urxe_qp_create() and urxe_qp_create_ex(), in
 * context @ctx, with @xrcd for an XRC TGT QP (else NULL).
 */
int urxe_qp_create_in(struct urxe_dev *dev, struct ibv_context *ctx,
		      struct ibv_pd *pd, struct ibv_xrcd *xrcd,
		      struct ibv_qp_init_attr *attr, struct urxe_evpipe *async,
		      struct ibv_qp **out);
/*
 * qp.c: posts an affiliated event naming handle @h to its context (engine
 * context: never blocks); drops the events of @h nobody read and waits
 * until the ones read were acknowledged; frees a QP and everything it
 * holds (the engine lets it go first).
 */
void urxe_qp_post_event(struct urxe_qp *h, enum ibv_event_type type);
void urxe_qp_drain_events(struct urxe_qp *h);
void urxe_qp_release(struct urxe_qp *qp);
/*
 * qp_xrc.c, XRC TGT QPs: @qp, just made through @xrcd, becomes findable
 * by ibv_open_qp(3) with its creator's handle open; an event goes to
 * every open handle (engine context, progress lock held); a handle
 * closes, and the QP is released with the last one.
 */
void urxe_qp_tgt_publish(struct urxe_qp *qp, struct urxe_xrcd *xrcd);
void urxe_qp_tgt_event(struct urxe_qp *qp, enum ibv_event_type type);
void urxe_qp_tgt_close(struct urxe_qp *h);

/*
 * qp_post.c, for the ibv_wr_* batches of qp_ex.c: whether the QP's state
 * takes send work; check @wr and write it into send slot @prod (between
 * urxe_engine_sq_begin and _end, nothing published; -ENOMEM when the
 * queue is full).
 */
bool urxe_qp_send_ready(struct urxe_qp *qp);
int urxe_qp_send_fill(struct urxe_qp *qp, const struct ibv_send_wr *wr,
		      uint32_t prod);
/*
 * import.c: the PDs and MRs of this process that ibv_import_pd /
 * ibv_import_mr may name (pd.c and mr.c add them once built and remove
 * them before freeing).
 */
struct urxe_pd;
struct urxe_mr;
void urxe_import_add_pd(struct urxe_pd *pd);
void urxe_import_del_pd(struct urxe_pd *pd);
void urxe_import_add_mr(struct urxe_mr *mr);
void urxe_import_del_mr(struct urxe_mr *mr);
/* qp_ex.c: frees the batch state of a QP being destroyed. */
void urxe_qpx_fini(struct urxe_qp *qp);
/* Detaches @qp from every group (destroy, after the engine let it go). */
void urxe_qp_mcast_detach_all(struct urxe_qp *qp);

#endif
