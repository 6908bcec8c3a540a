// SPDX-License-Identifier: BSD-2-Clause
/*
 * Verdicts: the named outcomes of the transport's checks (IBA 9.7.5.2,
 * 9.9), one per class the IBA tells apart, and one table that says what
 * each means on the wire and to the application.  The responder's
 * handlers return one (a NAK it sends, with the responder QP's async
 * event and counter); the completer reads one from an AETH, or reaches
 * one when a WQE fails on its side (the WQE's status, its counter); the
 * requester's local failures have theirs.  qperr.c words the line a QP's
 * move to ERR leaves from the same table.  The handlers' straight-line
 * structure stays; only the value they return is named, so a class can be
 * grepped for and no stray errno turns into the wrong NAK.
 */
#ifndef URXE_QP_ENGINE_VERDICT_H
#define URXE_QP_ENGINE_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <urxe/engine.h>
#include <urxe/wire.h>

enum urxe_verdict {
	URXE_V_OK,		/* carried out (ACK), or an ACK received */
	URXE_V_DUP,		/* a duplicate: re-ACKed or replayed (9.7.5.1.2) */
	URXE_V_DROP,		/* silently dropped: a reserved AETH */
	URXE_V_RNR,		/* receiver not ready: RNR NAK (9.7.5.2.8) */
	URXE_V_NAK_SEQ,		/* PSN sequence error NAK: go back */
	URXE_V_NAK_INV,		/* invalid request: an opcode, a state, an
				 * alignment or an invalidation the QP refuses */
	URXE_V_NAK_LEN,		/* invalid request: a length that does not fit */
	URXE_V_NAK_ACCESS,	/* remote access error: rights, R_Key, range */
	URXE_V_NAK_OP,		/* remote operational error: the responder
				 * failed on its side (9.7.5.2.4) */
	URXE_V_NAK_INV_RD,	/* invalid RD request (received only) */
	URXE_V_RNR_RETRY_EXC,	/* completer: RNR NAKs beyond rnr_retry */
	URXE_V_RETRY_EXC,	/* completer: no answer within retry_cnt */
	URXE_V_LOC_PROT,	/* requester: a local SGE refused */
	URXE_V_MW_BIND,		/* requester: a memory window bind failed */
	URXE_V_LOC_INV,		/* requester: a local invalidate failed */
	URXE_V__COUNT
};

/* No async event: the QP does not move to ERR for this verdict. */
#define URXE_NO_EVENT ((enum ibv_event_type)-1)
/* No counter for this verdict on that side. */
#define URXE_V_NO_COUNTER URXE_CNT__COUNT

struct urxe_verdict_info {
	const char *name;		/* the enum's name without URXE_V_ */
	/*
	 * Responder: the AETH syndrome it sends (RNR: | its timer), the
	 * event its QP reports as it moves to ERR (URXE_NO_EVENT: it stays),
	 * and its counter.
	 */
	uint8_t aeth;
	bool nak;			/* aeth is a NAK's */
	enum ibv_event_type resp_event;
	enum urxe_counter resp_cnt;
	/*
	 * Requester: the status of the WQE this verdict fails
	 * (IBV_WC_SUCCESS: it fails none, the requester retries), and the
	 * completer's counter.
	 */
	enum ibv_wc_status status;
	enum urxe_counter comp_cnt;
	/* qperr.c: the responder's reason; the requester's reason and hint. */
	const char *resp_why;
	const char *req_why, *req_hint;
};

/* Indexed by enum urxe_verdict: URXE_V__COUNT entries (verdict.c). */
extern const struct urxe_verdict_info urxe_verdicts[];

/*
 * The verdict an AETH syndrome carries to the completer (IBA 9.7.5.1.1,
 * table 44).  Reserved NAK codes read as a remote operational error, the
 * failure whose cause the requester cannot know; reserved types are
 * dropped.
 */
static inline enum urxe_verdict urxe_aeth_verdict(uint8_t syn)
{
	static const uint8_t nak_code[] = {
		[URXE_NAK_PSN_SEQ] = URXE_V_NAK_SEQ,
		[URXE_NAK_INVALID_REQ] = URXE_V_NAK_INV,
		[URXE_NAK_REM_ACCESS] = URXE_V_NAK_ACCESS,
		[URXE_NAK_REM_OP] = URXE_V_NAK_OP,
		[URXE_NAK_INVALID_RD_REQ] = URXE_V_NAK_INV_RD,
	};
	unsigned int code = syn & 0x1f;

	switch (syn & URXE_AETH_TYPE_MASK) {
	case URXE_AETH_ACK:
		return URXE_V_OK;
	case URXE_AETH_RNR_NAK:
		return URXE_V_RNR;
	case URXE_AETH_NAK:
		return code < sizeof(nak_code) ? (enum urxe_verdict)nak_code[code]
					       : URXE_V_NAK_OP;
	default:
		return URXE_V_DROP;
	}
}

#endif
