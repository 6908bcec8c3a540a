// SPDX-License-Identifier: BSD-2-Clause
/*
 * Packet input: validation, ICRC, and dispatch to the responder or the
 * completer of the QP a packet is for (or to multicast, or QP1).
 */
#include <urxe/icrc.h>
#include <urxe/wire.h>

#include "engine_int.h"

static bool transport_ok(const struct urxe_eqp *qp, uint8_t opcode,
			 const struct urxe_opinfo *oi)
{
	switch (urxe_opcode_transport(opcode)) {
	case URXE_TR_RC:
		return qp->type == IBV_QPT_RC;
	case URXE_TR_UC:
		return qp->type == IBV_QPT_UC;
	case URXE_TR_UD:
		return qp->type == IBV_QPT_UD;
	case URXE_TR_XRC:
		/* XRC annex A14: requests to TGT QPs, answers to INI QPs. */
		return qp->type == (oi->flags & URXE_F_REQ ? IBV_QPT_XRC_RECV
							   : IBV_QPT_XRC_SEND);
	default:
		return false;
	}
}

void urxe_engine_input(struct urxe_engine *eng, const uint8_t *roce,
		       uint32_t len, const struct urxe_rx_meta *meta)
{
	const struct urxe_opinfo *oi;
	struct urxe_bth bth;
	struct urxe_eqp *qp;
	uint32_t paylen;

	urxe_count(eng, URXE_CNT_RCVD_PKTS, 1);
	if (len < URXE_BTH_LEN + URXE_ICRC_LEN)
		goto drop;
	urxe_bth_get(roce, &bth);
	oi = urxe_opinfo(bth.opcode);
	if (!(oi->flags & URXE_F_VALID) || bth.tver != 0)
		goto drop;
	if (len < (uint32_t)oi->hdr_len + bth.pad + URXE_ICRC_LEN)
		goto drop;
	paylen = len - oi->hdr_len - bth.pad - URXE_ICRC_LEN;
	if (!(oi->flags & URXE_F_PAYLOAD) && paylen)
		goto drop;
	if (bth.dqpn == URXE_MCAST_QPN) {
		urxe_mcast_input(eng, &bth, oi, roce, len, paylen, meta);
		return;
	}
	if (!urxe_icrc_check_rx(roce, len, meta, &eng->icrc_ids)) {
		urxe_count(eng, URXE_CNT_DROPPED_ICRC, 1);
		return;
	}
	if (bth.dqpn == URXE_GSI_QPN) {
		urxe_gsi_input(eng, &bth, roce, paylen, meta);
		return;
	}
	qp = urxe_qp_lookup(eng, bth.dqpn);
	if (!qp && eng->ops->xrc_foreign &&
	    bth.dqpn >> URXE_QPN_INDEX_BITS != eng->slot)
		qp = eng->ops->xrc_foreign(eng->priv, bth.dqpn);
	if (!qp || !transport_ok(qp, bth.opcode, oi)) {
		urxe_count(eng, URXE_CNT_DROPPED_NO_QP, 1);
		return;
	}
	qp->cnt[URXE_CNT_RCVD_PKTS]++;
	eng->ctr.acct = qp;
	if (oi->flags & URXE_F_REQ)
		urxe_resp_input(qp, &bth, oi, roce, paylen, meta);
	else
		urxe_comp_input(qp, &bth, oi, roce, paylen);
	urxe_streaming_update(qp);
	eng->ctr.acct = NULL;
	return;
drop:
	urxe_count(eng, URXE_CNT_DROPPED, 1);
}
