/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC domains across processes (xrc_shared.c): the TGT QPs and XRC SRQs
 * of a file-backed domain, published in a file every process of the
 * domain maps.  All functions return 0 or a negative errno unless said
 * otherwise.
 */
#ifndef URXE_XRC_SHARED_H
#define URXE_XRC_SHARED_H

#include <stdbool.h>
#include <stdint.h>

#include <urxe/engine.h>

#include <sys/types.h>

struct urxe_dev;
struct urxe_xrc_dom;

/*
 * This process's view of domain @domain_id (a file-backed one) on @dev,
 * shared by its handles (reference-counted); mapping it marks this
 * process's slot as a user of the domain.
 */
int urxe_xrc_dom_get(struct urxe_dev *dev, uint64_t domain_id,
		     struct urxe_xrc_dom **out);
void urxe_xrc_dom_put(struct urxe_xrc_dom *d);
/* In a fork()ed child: the module's locks, whoever held them, are free. */
void urxe_xrc_after_fork_child(void);
/* Removes the domain's file (its registry entry is free, or reused). */
void urxe_xrc_dom_unlink(const char *rundir, uint64_t domain_id);
/* Whether the process of @slot uses the domain (ours always does). */
bool urxe_xrc_slot_live(struct urxe_xrc_dom *d, unsigned int slot);

/* A TGT QP this process hosts: its shared state, initialised (RESET). */
int urxe_xrc_tgt_publish(struct urxe_xrc_dom *d, uint32_t qpn,
			 struct urxe_tgt_shared **out);
void urxe_xrc_tgt_unpublish(struct urxe_xrc_dom *d,
			    struct urxe_tgt_shared *st);
/* The live TGT QP @qpn of the domain, hosted by any process, or NULL. */
struct urxe_tgt_shared *urxe_xrc_tgt_find(struct urxe_xrc_dom *d,
					  uint32_t qpn);
/* Whether @st still is TGT QP @qpn and its host lives. */
bool urxe_xrc_tgt_alive(struct urxe_xrc_dom *d, struct urxe_tgt_shared *st,
			uint32_t qpn);

/* An XRC SRQ of this process, reachable at @gid. */
int urxe_xrc_srq_publish(struct urxe_xrc_dom *d, uint32_t srqn,
			 const union ibv_gid *gid);
void urxe_xrc_srq_unpublish(struct urxe_xrc_dom *d, uint32_t srqn);
/*
 * SRQ @srqn of another live process of the domain: true, with the GID
 * its requests are relayed to.
 */
bool urxe_xrc_srq_route(struct urxe_xrc_dom *d, uint32_t srqn,
			union ibv_gid *gid);

/*
 * Views of TGT QPs hosted by other processes (ibv_open_qp across
 * processes): the engine finds them by QPN (urxe_xrc_view_find, its
 * ops->xrc_foreign); urxe_xrc_views_watch (its ops->xrc_watch, progress
 * lock held) fails, with IBV_EVENT_QP_FATAL, each view whose host is gone.
 * urxe_xrc_view_del() returns whether @qp was a view (then the caller
 * retires it with urxe_engine_qp_remove()).  The caller turns the
 * engine's watch on after adding; deleting the last view turns it off.
 */
int urxe_xrc_view_add(struct urxe_dev *dev, struct urxe_xrc_dom *d,
		      struct urxe_eqp *qp);
bool urxe_xrc_view_del(struct urxe_dev *dev, struct urxe_eqp *qp);
struct urxe_eqp *urxe_xrc_view_find(struct urxe_dev *dev, uint32_t qpn);
void urxe_xrc_views_watch(struct urxe_dev *dev);
/* The engine's ops->xrc_route, ->xrc_foreign, ->xrc_watch (priv: @dev). */
bool urxe_xrc_op_route(void *priv, const struct urxe_eqp *qp, uint32_t srqn,
		       union ibv_gid *gid);
struct urxe_eqp *urxe_xrc_op_foreign(void *priv, uint32_t qpn);
void urxe_xrc_op_watch(void *priv);
/* ops->xrc_route: the GID of the process owning SRQ @srqn of @qp's domain. */
bool urxe_xrc_route(struct urxe_dev *dev, const struct urxe_eqp *qp,
		    uint32_t srqn, union ibv_gid *gid);

#endif
