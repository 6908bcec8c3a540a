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

	atomic_store(&qp->req.dst_absent, true);
	if (atomic_exchange(&qp->req.dst_absent_said, true) ||
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
	if (atomic_load(&qp->req.dst_absent))
		urxe_warn("%s: QP 0x%06x moved to ERR: retry exceeded (no ACK for PSN %u from QP 0x%06x, retry_cnt %u): no process on this host owns %s (it exited, or the GID is wrong)",
			  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn,
			  qp->attr.retry_cnt, a);
	else
		urxe_warn("%s: QP 0x%06x moved to ERR: retry exceeded (no ACK for PSN %u from QP 0x%06x at %s, retry_cnt %u, timeout %u): the peer exited, stopped, or cannot be reached; a longer timeout or more retries help only a slow peer",
			  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn, a,
			  qp->attr.retry_cnt, qp->attr.timeout);
}

void urxe_qp_err_requester(struct urxe_eqp *qp, enum urxe_verdict v,
			   uint32_t psn)
{
	const struct urxe_verdict_info *vi = &urxe_verdicts[v];

	if (qp->attr.state == IBV_QPS_ERR ||
	    !urxe_log_ratelimit(&err_rl, URXE_LOG_WARN))
		return;
	if (v == URXE_V_RETRY_EXC) {
		retry_exceeded(qp, psn);
		return;
	}
	if (!vi->req_why) {
		urxe_warn("%s: QP 0x%06x moved to ERR: work completion status %d at PSN %u",
			  qp->eng->name, qp->qpn, (int)vi->status, psn);
		return;
	}
	urxe_warn("%s: QP 0x%06x moved to ERR: %s at PSN %u, peer QP 0x%06x: %s",
		  qp->eng->name, qp->qpn, vi->req_why, psn,
		  qp->attr.dest_qpn, vi->req_hint);
}

void urxe_qp_err_responder(struct urxe_eqp *qp, enum urxe_verdict v,
			   uint32_t psn)
{
	const char *w = urxe_verdicts[v].resp_why ? urxe_verdicts[v].resp_why :
			"an error";

	if (qp->attr.state == IBV_QPS_ERR ||
	    !urxe_log_ratelimit(&err_rl, URXE_LOG_WARN))
		return;
	urxe_warn("%s: QP 0x%06x moved to ERR: it refused the request at PSN %u from QP 0x%06x, %s; NAK sent (the sender's WQE fails with it)",
		  qp->eng->name, qp->qpn, psn, qp->attr.dest_qpn, w);
}
