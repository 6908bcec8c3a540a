// SPDX-License-Identifier: BSD-2-Clause
/*
 * Outgoing packets.  Each is assembled in one of the engine's batch
 * buffers (BTH, extension headers, payload, pad, ICRC) and handed to the
 * netdev in batches: one xmit per URXE_TX_BATCH packets or per progress
 * pass.  Request payload is not copied there: the packet's iovec points
 * into the registered memory (holding its key until the batch has left),
 * with the pad and ICRC after the headers in the buffer.  Progress lock
 * held throughout.
 */
#include <string.h>

#include <urxe/icrc.h>

#include "engine_int.h"

uint8_t *urxe_tx_begin(struct urxe_engine *eng, const struct urxe_bth *bth)
{
	uint8_t *buf;

	if (eng->txb.ntx == URXE_TX_BATCH)
		urxe_tx_flush(eng);
	buf = eng->txb.tx_buf[eng->txb.ntx];
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

/*
 * Addresses the batch's next packet and puts the pad count in its BTH
 * (written with pad 0); the caller fills in the bytes and commits.
 */
static struct urxe_pkt *pkt_start(struct urxe_engine *eng,
				  const struct urxe_tx_path *path, uint32_t pad)
{
	struct urxe_pkt *pkt = &eng->txb.tx[eng->txb.ntx];
	uint8_t *buf = eng->txb.tx_buf[eng->txb.ntx];

	pkt->dgid = *path->dgid;
	pkt->sgid = *path->sgid;
	pkt->sport = eng->ops->sport ?
		     eng->ops->sport(eng->io_priv, path->sport) : path->sport;
	pkt->tclass = path->tclass;
	pkt->hop_limit = path->hop_limit;
	buf[1] = (uint8_t)((buf[1] & ~0x30) | pad << 4);
	return pkt;
}

static void pkt_commit(struct urxe_engine *eng)
{
	eng->txb.ntx++;
	if (eng->ctr.acct)
		eng->ctr.acct->cnt[URXE_CNT_SENT_PKTS]++;
}

void urxe_tx_commit(struct urxe_engine *eng, const struct urxe_tx_path *path,
		    const struct urxe_opinfo *oi, uint32_t paylen)
{
	uint8_t *buf = eng->txb.tx_buf[eng->txb.ntx];
	uint32_t len = oi->hdr_len + paylen, pad = (4 - paylen % 4) % 4;
	struct urxe_pkt *pkt = pkt_start(eng, path, pad);

	memset(buf + len, 0, pad);
	len += pad;
	urxe_icrc_store(buf + len, urxe_icrc_tx(&eng->icrc_ids, pkt->sgid.raw,
						pkt->dgid.raw, pkt->sport, buf,
						len));
	pkt->len = len + URXE_ICRC_LEN;
	pkt->iov[0].iov_base = buf;
	pkt->iov[0].iov_len = pkt->len;
	pkt->niov = 1;
	pkt_commit(eng);
}

void urxe_tx_commit_pieces(struct urxe_engine *eng,
			   const struct urxe_tx_path *path,
			   const struct urxe_opinfo *oi,
			   const struct urxe_tx_piece *p, unsigned int n)
{
	uint8_t *buf = eng->txb.tx_buf[eng->txb.ntx], *tail = buf + oi->hdr_len;
	uint8_t ph[68];			/* urxe_icrc_pseudo_hdr()'s room */
	uint32_t paylen = 0, pad, len;
	struct urxe_pkt *pkt;
	struct urxe_icrc c;
	size_t ip_len;
	unsigned int i;

	for (i = 0; i < n; i++)
		paylen += p[i].len;
	pad = (4 - paylen % 4) % 4;
	len = oi->hdr_len + paylen + pad;
	pkt = pkt_start(eng, path, pad);
	memset(tail, 0, pad);
	ip_len = urxe_icrc_pseudo_hdr(ph, pkt->sgid.raw, pkt->dgid.raw,
				      pkt->sport, URXE_ROCE_UDP_PORT,
				      len + URXE_ICRC_LEN, 0, true);
	urxe_icrc_begin(&c, ph, ip_len, ph + ip_len, buf);
	urxe_icrc_update(&c, buf + URXE_BTH_LEN, oi->hdr_len - URXE_BTH_LEN);
	pkt->iov[0].iov_base = buf;
	pkt->iov[0].iov_len = oi->hdr_len;
	for (i = 0; i < n; i++) {
		urxe_icrc_update(&c, p[i].addr, p[i].len);
		/* sendmsg() only reads it; iovec just lacks the const. */
		pkt->iov[1 + i].iov_base = (void *)(uintptr_t)p[i].addr;
		pkt->iov[1 + i].iov_len = p[i].len;
		eng->txb.tx_mem[eng->txb.ntx][i] = p[i].mem;
	}
	urxe_icrc_update(&c, tail, pad);
	urxe_icrc_store(tail + pad, urxe_icrc_end(&c));
	pkt->iov[1 + n].iov_base = tail;
	pkt->iov[1 + n].iov_len = pad + URXE_ICRC_LEN;
	pkt->niov = 2 + n;
	pkt->len = len + URXE_ICRC_LEN;
	pkt_commit(eng);
}

void urxe_tx_flush(struct urxe_engine *eng)
{
	unsigned int done = 0, i, k;
	int n;

	if (!eng->txb.ntx)
		return;		/* an idle poll's */
	while (done < eng->txb.ntx) {
		n = eng->ops->xmit(eng->io_priv, eng->txb.tx + done,
				   eng->txb.ntx - done);
		if (n <= 0) {
			/* Full socket buffers: what is lost is retransmitted. */
			urxe_count(eng, URXE_CNT_SEND_ERR, eng->txb.ntx - done);
			break;
		}
		done += (unsigned int)n;
	}
	urxe_count(eng, URXE_CNT_SENT_PKTS, done);
	/* Sent (or dropped): the memory they pointed into is free to go. */
	for (i = 0; i < eng->txb.ntx; i++) {
		for (k = 0; k < URXE_TX_PIECES; k++) {
			if (eng->txb.tx_mem[i][k]) {
				urxe_mem_put(eng->txb.tx_mem[i][k]);
				eng->txb.tx_mem[i][k] = NULL;
			}
		}
	}
	eng->txb.ntx = 0;
}
