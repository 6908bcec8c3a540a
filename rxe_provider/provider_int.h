/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the provider: the limits the device advertises.  They are
 * sized for a 2-core CI machine; queues are allocated lazily, so large
 * limits cost nothing until used.
 */
#ifndef URXE_PROVIDER_INT_H
#define URXE_PROVIDER_INT_H

#include <endian.h>
#include <stdio.h>

#define URXE_FW_VERSION "urxe 0.1.0"
#define URXE_MAX_QP_WR 16384
#define URXE_MAX_SGE 32
#define URXE_MAX_CQ 16384
#define URXE_MAX_CQE 32767
#define URXE_MAX_MR 262144
#define URXE_MAX_PD 65536
#define URXE_MAX_RD_ATOM 128
#define URXE_MAX_MCAST_GRP 8192
#define URXE_MAX_MCAST_QP_ATTACH 56
#define URXE_MAX_AH 32768
#define URXE_MAX_MSG_SZ 0x80000000u	/* 2 GiB, the IBA maximum message */

/* xrcd.c: the host-wide registry of XRC domains (file "xrcd"). */
#define URXE_XRCD_ENTRIES 4096

#endif
