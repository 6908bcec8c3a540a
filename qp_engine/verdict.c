// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verdict table (verdict.h): per outcome, the NAK the responder sends
 * and what its QP reports, the status the requester's WQE ends with, the
 * counters either side bumps, and the words of the line a QP's move to
 * ERR leaves (qperr.c).  The one place that maps a class to all of them.
 */
#include <urxe/util.h>

#include "verdict.h"

#define NONE URXE_V_NO_COUNTER
#define ACK (URXE_AETH_ACK | URXE_AETH_CREDIT_INVALID)

/* The requester reads one code for both: the same words for both. */
static const char inv_why[] = "an invalid request (an operation this QP's access flags forbid, or a message longer than the receive buffer)";
static const char inv_req_why[] = "remote invalid request (NAK)";
static const char inv_req_hint[] = "the peer QP does not allow this operation, or the message is longer than its receive buffer";

const struct urxe_verdict_info urxe_verdicts[] = {
	[URXE_V_OK] = {
		.name = "OK", .aeth = ACK, .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_SUCCESS, .comp_cnt = NONE,
	},
	[URXE_V_DUP] = {
		.name = "DUP", .aeth = ACK, .resp_event = URXE_NO_EVENT,
		.resp_cnt = URXE_CNT_DUPLICATE_REQUEST,
		.status = IBV_WC_SUCCESS, .comp_cnt = NONE,
	},
	[URXE_V_DROP] = {
		.name = "DROP", .resp_event = URXE_NO_EVENT, .resp_cnt = NONE,
		.status = IBV_WC_SUCCESS, .comp_cnt = NONE,
	},
	[URXE_V_RNR] = {
		.name = "RNR", .aeth = URXE_AETH_RNR_NAK, .nak = true,
		.resp_event = URXE_NO_EVENT, .resp_cnt = URXE_CNT_SND_RNR_ERR,
		.status = IBV_WC_SUCCESS, .comp_cnt = URXE_CNT_RCV_RNR_ERR,
	},
	[URXE_V_NAK_SEQ] = {
		.name = "NAK_SEQ", .aeth = URXE_AETH_NAK | URXE_NAK_PSN_SEQ,
		.nak = true, .resp_event = URXE_NO_EVENT,
		.resp_cnt = URXE_CNT_OUT_OF_SEQ_REQUEST,
		.status = IBV_WC_SUCCESS, .comp_cnt = URXE_CNT_RCV_SEQ_ERR,
	},
	[URXE_V_NAK_INV] = {
		.name = "NAK_INV", .aeth = URXE_AETH_NAK | URXE_NAK_INVALID_REQ,
		.nak = true, .resp_event = IBV_EVENT_QP_REQ_ERR,
		.resp_cnt = NONE, .status = IBV_WC_REM_INV_REQ_ERR,
		.comp_cnt = NONE, .resp_why = inv_why,
		.req_why = inv_req_why, .req_hint = inv_req_hint,
	},
	[URXE_V_NAK_LEN] = {
		.name = "NAK_LEN", .aeth = URXE_AETH_NAK | URXE_NAK_INVALID_REQ,
		.nak = true, .resp_event = IBV_EVENT_QP_REQ_ERR,
		.resp_cnt = NONE, .status = IBV_WC_REM_INV_REQ_ERR,
		.comp_cnt = NONE, .resp_why = inv_why,
		.req_why = inv_req_why, .req_hint = inv_req_hint,
	},
	[URXE_V_NAK_ACCESS] = {
		.name = "NAK_ACCESS", .aeth = URXE_AETH_NAK | URXE_NAK_REM_ACCESS,
		.nak = true, .resp_event = IBV_EVENT_QP_ACCESS_ERR,
		.resp_cnt = NONE, .status = IBV_WC_REM_ACCESS_ERR,
		.comp_cnt = NONE,
		.resp_why = "a remote access error (the rkey, address or length does not fit an MR of this QP's PD with the rights needed)",
		.req_why = "remote access error (NAK)",
		.req_hint = "the rkey, remote address or length does not fit a remote MR with the rights the operation needs, or the peer QP's access flags forbid it",
	},
	[URXE_V_NAK_OP] = {
		.name = "NAK_OP", .aeth = URXE_AETH_NAK | URXE_NAK_REM_OP,
		.nak = true, .resp_event = IBV_EVENT_QP_FATAL,
		.resp_cnt = NONE, .status = IBV_WC_REM_OP_ERR, .comp_cnt = NONE,
		.resp_why = "an operation it could not complete (receive queue or CQ)",
		.req_why = "remote operation error (NAK)",
		.req_hint = "the peer could not complete the request (its receive queue or CQ)",
	},
	[URXE_V_NAK_INV_RD] = {
		.name = "NAK_INV_RD",
		.aeth = URXE_AETH_NAK | URXE_NAK_INVALID_RD_REQ, .nak = true,
		.resp_event = IBV_EVENT_QP_REQ_ERR, .resp_cnt = NONE,
		.status = IBV_WC_REM_INV_RD_REQ_ERR, .comp_cnt = NONE,
		.resp_why = "an invalid READ or atomic",
		.req_why = "remote invalid RD request (NAK)",
		.req_hint = "the peer refused a READ or atomic (max_dest_rd_atomic, access flags)",
	},
	[URXE_V_RNR_RETRY_EXC] = {
		.name = "RNR_RETRY_EXC", .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_RNR_RETRY_EXC_ERR,
		.comp_cnt = URXE_CNT_RETRY_RNR_EXCEEDED_ERR,
		.req_why = "RNR retry exceeded (the peer had no receive posted)",
		.req_hint = "post receives before the peer sends, or raise rnr_retry (7: forever)",
	},
	[URXE_V_RETRY_EXC] = {
		/* qperr.c words this one from what the host can tell. */
		.name = "RETRY_EXC", .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_RETRY_EXC_ERR,
		.comp_cnt = URXE_CNT_RETRY_EXCEEDED_ERR,
	},
	[URXE_V_LOC_PROT] = {
		.name = "LOC_PROT", .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_LOC_PROT_ERR,
		.comp_cnt = NONE,
		.req_why = "local protection error",
		.req_hint = "a local SGE's lkey, address or length is not in an MR of the QP's PD with the access needed (LOCAL_WRITE where data lands)",
	},
	[URXE_V_MW_BIND] = {
		.name = "MW_BIND", .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_MW_BIND_ERR,
		.comp_cnt = NONE,
		.req_why = "memory window bind failed",
		.req_hint = "check the MW, its MR (IBV_ACCESS_MW_BIND) and the range",
	},
	[URXE_V_LOC_INV] = {
		.name = "LOC_INV", .resp_event = URXE_NO_EVENT,
		.resp_cnt = NONE, .status = IBV_WC_LOC_QP_OP_ERR,
		.comp_cnt = NONE,
		.req_why = "local invalidate failed",
		.req_hint = "the rkey names no window or MR this QP may invalidate",
	},
};

_Static_assert(URXE_ARRAY_SIZE(urxe_verdicts) == URXE_V__COUNT,
	       "one table entry per verdict");
