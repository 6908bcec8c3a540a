// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a person reads when the transport moves a QP to ERR: one line at
 * the default log level with the QP, the reason and what to do about it.
 * A work completion status alone ("retry counter exceeded") names no
 * cause; the engine knows more at the moment it fails the QP.  These run
 * once per QP visit to ERR (urxe_qp_error() does nothing for a QP already
 * there), never on the packet path, and are rate-limited for programs
 * that lose many QPs at once.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include <urxe/log.h>
#include <urxe/wire.h>

#include "engine_int.h"

static struct urxe_ratelimit err_rl, absent_rl;

static const char *gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	/* IPv4-mapped GIDs print as ::ffff:a.b.c.d, as ibv_devinfo does. */
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

void urxe_engine_qp_dst_absent(struct urxe_eqp *qp, const union ibv_gid *dgid)
{
	char a[INET6_ADDRSTRLEN];

	atomic_store(&qp->dst_absent, true);
	if (atomic_exchange(&qp->dst_absent_said, true) ||
	    !urxe_log_ratelimit(&absent_rl, URXE_LOG_WARN))
		return;
	urxe_warn("%s: QP 0x%06x sends to %s, which no process on this host owns (it exited, or the GID is wrong: `ss -uln 'sport = :4791'` lists the addresses in use); the QP will exhaust its retries",
		  qp->eng->name, qp->qpn, gid_str(dgid, a, sizeof(a)));
}

/* Retry exceeded: no answer at all.  Why, as far as this host can tell. */
static void retry_exceeded(struct urxe_eqp *qp, uint32_t psn)
{
	char a[INET6_ADDRSTRLEN];

	gid_str(&qp->attr.dgid, a, sizeof(a));
	if (atomic_load(&qp->dst_absent))
		urxe_warn("%s: QP 0x%06x moved to ERR: retry exceeded (no ACK for PSN %u from QP 0x%06x, retry_cnt %u): no process on this host owns %s (it exited, or the GID is wrong)",
			  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn,
			  qp->attr.retry_cnt, a);
	else
		urxe_warn("%s: QP 0x%06x moved to ERR: retry exceeded (no ACK for PSN %u from QP 0x%06x at %s, retry_cnt %u, timeout %u): the peer exited, stopped, or cannot be reached; a longer timeout or more retries help only a slow peer",
			  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn, a,
			  qp->attr.retry_cnt, qp->attr.timeout);
}

static const struct {
	enum ibv_wc_status st;
	const char *why;
	const char *hint;
} req_reasons[] = {
	{ IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry exceeded (the peer had no receive posted)",
	  "post receives before the peer sends, or raise rnr_retry (7: forever)" },
	{ IBV_WC_REM_ACCESS_ERR, "remote access error (NAK)",
	  "the rkey, remote address or length does not fit a remote MR with the rights the operation needs, or the peer QP's access flags forbid it" },
	{ IBV_WC_REM_INV_REQ_ERR, "remote invalid request (NAK)",
	  "the peer QP does not allow this operation, or the message is longer than its receive buffer" },
	{ IBV_WC_REM_OP_ERR, "remote operation error (NAK)",
	  "the peer could not complete the request (its receive queue or CQ)" },
	{ IBV_WC_REM_INV_RD_REQ_ERR, "remote invalid RD request (NAK)",
	  "the peer refused a READ or atomic (max_dest_rd_atomic, access flags)" },
	{ IBV_WC_LOC_PROT_ERR, "local protection error",
	  "a local SGE's lkey, address or length is not in an MR of the QP's PD with the access needed (LOCAL_WRITE where data lands)" },
	{ IBV_WC_MW_BIND_ERR, "memory window bind failed",
	  "check the MW, its MR (IBV_ACCESS_MW_BIND) and the range" },
	{ IBV_WC_LOC_QP_OP_ERR, "local invalidate failed",
	  "the rkey names no window or MR this QP may invalidate" },
};

void urxe_qp_err_requester(struct urxe_eqp *qp, enum ibv_wc_status st,
			   uint32_t psn)
{
	unsigned int i;

	if (qp->attr.state == IBV_QPS_ERR ||
	    !urxe_log_ratelimit(&err_rl, URXE_LOG_WARN))
		return;
	if (st == IBV_WC_RETRY_EXC_ERR) {
		retry_exceeded(qp, psn);
		return;
	}
	for (i = 0; i < sizeof(req_reasons) / sizeof(req_reasons[0]); i++)
		if (req_reasons[i].st == st)
			break;
	if (i == sizeof(req_reasons) / sizeof(req_reasons[0])) {
		urxe_warn("%s: QP 0x%06x moved to ERR: work completion status %d at PSN %u",
			  qp->eng->name, qp->qpn, (int)st, psn);
		return;
	}
	urxe_warn("%s: QP 0x%06x moved to ERR: %s at PSN %u, peer QP 0x%06x: %s",
		  qp->eng->name, qp->qpn, req_reasons[i].why, psn,
		  qp->attr.dest_qpn, req_reasons[i].hint);
}

void urxe_qp_err_responder(struct urxe_eqp *qp, uint8_t nak_code,
			   uint32_t psn)
{
	static const char *const why[] = {
		[URXE_NAK_INVALID_REQ] = "an invalid request (an operation this QP's access flags forbid, or a message longer than the receive buffer)",
		[URXE_NAK_REM_ACCESS] = "a remote access error (the rkey, address or length does not fit an MR of this QP's PD with the rights needed)",
		[URXE_NAK_REM_OP] = "an operation it could not complete (receive queue or CQ)",
		[URXE_NAK_INVALID_RD_REQ] = "an invalid READ or atomic",
	};
	const char *w = nak_code < sizeof(why) / sizeof(why[0]) && why[nak_code] ?
			why[nak_code] : "an error";

	if (qp->attr.state == IBV_QPS_ERR ||
	    !urxe_log_ratelimit(&err_rl, URXE_LOG_WARN))
		return;
	urxe_warn("%s: QP 0x%06x moved to ERR: it refused the request at PSN %u from QP 0x%06x, %s; NAK sent (the sender's WQE fails with it)",
		  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn, w);
}
