// SPDX-License-Identifier: BSD-2-Clause
/*
 * Outgoing packets.  Each is assembled in one of the engine's batch
 * buffers (BTH, extension headers, payload, pad, ICRC) and handed to the
 * netdev in batches: one xmit per URXE_TX_BATCH packets or per progress
 * pass.  Progress lock held throughout.
 */
#include <string.h>

#include "engine_int.h"
#include "icrc.h"

uint8_t *urxe_tx_begin(struct urxe_engine *eng, const struct urxe_bth *bth)
{
	uint8_t *buf;

	if (eng->ntx == URXE_TX_BATCH)
		urxe_tx_flush(eng);
	buf = eng->tx_buf[eng->ntx];
	urxe_bth_put(buf, bth);
	return buf;
}

void urxe_qp_path(const struct urxe_eqp *qp, struct urxe_tx_path *p)
{
	p->dgid = &qp->attr.dgid;
	p->sgid = &qp->attr.sgid;
	p->sport = qp->sport;
	p->tclass = qp->attr.tclass;
	p->hop_limit = qp->attr.hop_limit;
}

void urxe_tx_commit(struct urxe_engine *eng, const struct urxe_tx_path *path,
		    const struct urxe_opinfo *oi, uint32_t paylen)
{
	struct urxe_pkt *pkt = &eng->tx[eng->ntx];
	uint8_t *buf = eng->tx_buf[eng->ntx];
	uint32_t len = oi->hdr_len + paylen, pad = (4 - paylen % 4) % 4;

	memset(buf + len, 0, pad);
	len += pad;
	pkt->dgid = *path->dgid;
	pkt->sgid = *path->sgid;
	pkt->sport = eng->ops->sport ? eng->ops->sport(eng->priv, path->sport)
				     : path->sport;
	pkt->tclass = path->tclass;
	pkt->hop_limit = path->hop_limit;
	/* The BTH was written with pad 0; the pad count goes in now. */
	buf[1] = (uint8_t)((buf[1] & ~0x30) | pad << 4);
	urxe_icrc_store(buf + len, urxe_icrc_tx(pkt->sgid.raw, pkt->dgid.raw,
						pkt->sport, buf, len));
	pkt->len = len + URXE_ICRC_LEN;
	pkt->iov[0].iov_base = buf;
	pkt->iov[0].iov_len = pkt->len;
	pkt->niov = 1;
	eng->ntx++;
	if (eng->acct)
		eng->acct->cnt[URXE_CNT_SENT_PKTS]++;
}

void urxe_tx_flush(struct urxe_engine *eng)
{
	unsigned int done = 0;
	int n;

	while (done < eng->ntx) {
		n = eng->ops->xmit(eng->priv, eng->tx + done, eng->ntx - done);
		if (n <= 0) {
			/* Full socket buffers: what is lost is retransmitted. */
			urxe_count(eng, URXE_CNT_SEND_ERR, eng->ntx - done);
			break;
		}
		done += (unsigned int)n;
	}
	urxe_count(eng, URXE_CNT_SENT_PKTS, done);
	eng->ntx = 0;
}
