// SPDX-License-Identifier: BSD-2-Clause
/*
 * The device's counters, as kernel rxe names its hardware counters: the
 * engine and the data path bump them, the slot's shared statistics record
 * (host.h) holds them, `urxe stats` reads them there.  A header of its
 * own, with no other, so that every floor that counts can include it.
 */
#ifndef URXE_COUNTERS_H
#define URXE_COUNTERS_H

enum urxe_counter {
	URXE_CNT_SENT_PKTS,
	URXE_CNT_RCVD_PKTS,
	URXE_CNT_DUPLICATE_REQUEST,
	URXE_CNT_OUT_OF_SEQ_REQUEST,
	URXE_CNT_RCV_RNR_ERR,
	URXE_CNT_SND_RNR_ERR,
	URXE_CNT_RCV_SEQ_ERR,
	URXE_CNT_COMPLETER_RETRY_ERR,
	URXE_CNT_RETRY_EXCEEDED_ERR,
	URXE_CNT_RETRY_RNR_EXCEEDED_ERR,
	URXE_CNT_SEND_ERR,
	URXE_CNT_DROPPED,		/* malformed */
	URXE_CNT_DROPPED_ICRC,		/* bad ICRC */
	URXE_CNT_DROPPED_NO_QP,		/* no such QP, or another transport */
	/*
	 * What URXE_FAULTS did to the packets sent (the data path counts
	 * them): the device's only, never a QP's.
	 */
	URXE_CNT_FAULT_DROP,
	URXE_CNT_FAULT_DUP,
	URXE_CNT_FAULT_REORDER,
	URXE_CNT_FAULT_CORRUPT,
	URXE_CNT__COUNT,
};

/* The counters a QP has too (its row of `urxe stats --qp`): those before. */
#define URXE_CNT__QP URXE_CNT_FAULT_DROP

#endif
