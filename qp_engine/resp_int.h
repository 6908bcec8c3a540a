/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the responder's files: resp.c (requests) and resp_recv.c
 * (receive WQEs, their completions, UD receives).  Progress lock held.
 */
#ifndef URXE_RESP_INT_H
#define URXE_RESP_INT_H

#include "engine_int.h"

/*
 * The receive WQE of the message in progress, or of the next one: the
 * head of the receive queue, or the WQE held from the SRQ (taking one if
 * none is held).  NULL: no receive posted (RNR).
 */
struct urxe_recv_wqe *urxe_recv_head(struct urxe_eqp *qp);
/* Receive WQEs' keys belong to the SRQ's PD when there is one. */
uint32_t urxe_recv_pd(const struct urxe_eqp *qp);
/*
 * Completes receive WQE @rwqe (its slot, or the QP's hold, is free
 * again); @bth, @oi and @pkt (or NULL) are the last packet's, for the
 * immediate data, invalidated key, source QP and solicited event.
 */
void urxe_recv_complete(struct urxe_eqp *qp, struct urxe_recv_wqe *rwqe,
			enum ibv_wc_status status, enum ibv_wc_opcode op,
			uint32_t len, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt);
/* A UD SEND (IBA 10.2.5: its Q_Key checked), delivered or dropped. */
void urxe_resp_ud_input(struct urxe_eqp *qp, const struct urxe_bth *bth,
			const struct urxe_opinfo *oi, const uint8_t *pkt,
			uint32_t paylen, const struct urxe_rx_meta *meta);

#endif
