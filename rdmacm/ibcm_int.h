/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the IB CM's files share (ibcm.c the thread and timers,
 * ibcm_send.c the messages this side starts, ibcm_listen.c the passive
 * side, ibcm_recv.c every other received MAD).  All with cm.lock held.
 */
#ifndef URXE_RDMACM_IBCM_INT_H
#define URXE_RDMACM_IBCM_INT_H

#include "cm_int.h"

/* A SIDR_REP's status (IBA 12.11.2). */
#define CM_SIDR_SUCCESS 0
#define CM_SIDR_UNSUPPORTED 1
#define CM_SIDR_REJECT 2

/* ms(t): 2^(t-8) ms, the kernel's approximation of 4.096 us * 2^t. */
static inline uint64_t cm_ms_ns(unsigned int t)
{
	return (1ull << (t > 8 ? t - 8 : 0)) * 1000000ull;
}

static inline uint32_t cm_our_qpn(struct cm_id *cid)
{
	/*
	 * Recorded when the QP was made, never read through id->qp here: a
	 * program may destroy the QP with ibv_destroy_qp() before the id
	 * (perftest does), and a DREQ or REJ still has to name it.
	 */
	return cid->qpn;
}

/* ibcm.c */
void cm_timer_stop(struct cm_id *cid);

/* ibcm_send.c */
uint32_t cm_psn(void);
uint32_t cm_new_local_id(void);
int cm_send_raw(struct cm_dev *d, uint8_t sgid_index,
		const union ibv_gid *dgid, uint8_t tclass, const uint8_t *mad);
void cm_resend(struct cm_id *cid);
void cm_enter_timewait(struct cm_id *cid);

/* ibcm_listen.c */
void cm_on_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
	       const struct urxe_cm_msg *m);
void cm_on_sidr_req(struct cm_dev *d, const struct urxe_gsi_mad *g,
		    const struct urxe_cm_msg *m);
void cm_parked_run(bool listening);
void cm_parked_free(void);
uint64_t cm_parked_due(void);

/* ibcm_recv.c */
void cm_handle_mad(struct cm_dev *d, const struct urxe_gsi_mad *g);
void cm_post(struct cm_id *cid, enum rdma_cm_event_type type, int status,
	     const uint8_t *priv, uint8_t len);
void cm_post_qp_err(struct cm_id *cid, enum rdma_cm_event_type type,
		    int status, const uint8_t *priv, uint8_t len);
void cm_disconnected(struct cm_id *c, int status);
struct cm_id *cm_by_local_id(uint32_t id);
struct cm_id *cm_by_remote(uint32_t remote_id, const union ibv_gid *gid);
void cm_reply_raw(struct cm_dev *d, const struct urxe_gsi_mad *g,
		  const struct urxe_cm_msg *m);

#endif
