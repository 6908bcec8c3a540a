// SPDX-License-Identifier: BSD-2-Clause
/*
 * The QP state machine of ibv_modify_qp(3): which transitions exist and,
 * per transport, which attributes each one requires and which it allows.
 * IBA 10.3 (QP states) and 11.2.5.2 (Modify QP); the table is Linux's
 * qp_state_table (drivers/infiniband/core/verbs.c, ib_modify_qp_is_ok())
 * restricted to RC, UC, UD and the XRC INI and TGT QPs (IBA annex A14:
 * an INI QP is modified as an RC requester, a TGT QP as an RC
 * responder), so urxe refuses what a kernel device refuses.  Value
 * checks of the attributes live in qp.c.
 */
#include <urxe/provider.h>

#include "provider_int.h"

const char *const urxe_qp_state_names[IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = "RESET",
	[IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",
	[IBV_QPS_SQD] = "SQD",
	[IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

_Static_assert(IBV_QPS_ERR + 1 == 7, "one name per QP state");

enum { T_RC, T_UC, T_UD, T_XRC_INI, T_XRC_TGT, T__COUNT };

struct qp_trans {
	bool valid;
	int req[T__COUNT];
	int opt[T__COUNT];
};

/* Optional attributes of RTS->RTS and SQD->RTS, per transport. */
#define RC_RTS_OPT (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | \
		    IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER)
#define UC_RTS_OPT (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | \
		    IBV_QP_PATH_MIG_STATE)
#define UD_RTS_OPT (IBV_QP_CUR_STATE | IBV_QP_QKEY)
/* An XRC INI QP takes the UC set (no RNR timer: it never receives). */
#define INI_RTS_OPT UC_RTS_OPT
#define TGT_RTS_OPT RC_RTS_OPT
#define RC_INIT (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RTR_OPT (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)

static const struct qp_trans trans[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = RC_INIT,
				[T_UC] = RC_INIT,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY,
				[T_XRC_INI] = RC_INIT,
				[T_XRC_TGT] = RC_INIT,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = RC_INIT,
				[T_UC] = RC_INIT,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY,
				[T_XRC_INI] = RC_INIT,
				[T_XRC_TGT] = RC_INIT,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER,
				[T_UC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
				[T_XRC_INI] = IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
				[T_XRC_TGT] = IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER,
			},
			.opt = {
				[T_RC] = RTR_OPT,
				[T_UC] = RTR_OPT,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XRC_INI] = RTR_OPT,
				[T_XRC_TGT] = RTR_OPT,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC,
				[T_UC] = IBV_QP_SQ_PSN,
				[T_UD] = IBV_QP_SQ_PSN,
				[T_XRC_INI] = IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC,
				[T_XRC_TGT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
			},
			.opt = {
				[T_RC] = RC_RTS_OPT,
				[T_UC] = UC_RTS_OPT,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_XRC_INI] = INI_RTS_OPT,
				[T_XRC_TGT] = TGT_RTS_OPT,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = { RC_RTS_OPT, UC_RTS_OPT, UD_RTS_OPT,
				 INI_RTS_OPT, TGT_RTS_OPT },
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XRC_INI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XRC_TGT] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = { RC_RTS_OPT, UC_RTS_OPT, UD_RTS_OPT,
				 INI_RTS_OPT, TGT_RTS_OPT },
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PORT | IBV_QP_AV |
					 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX |
					 IBV_QP_MIN_RNR_TIMER |
					 IBV_QP_PATH_MIG_STATE,
				[T_UC] = IBV_QP_AV | IBV_QP_ALT_PATH |
					 IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX |
					 IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XRC_INI] = IBV_QP_PORT | IBV_QP_AV |
					      IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC |
					      IBV_QP_ALT_PATH |
					      IBV_QP_ACCESS_FLAGS |
					      IBV_QP_PKEY_INDEX |
					      IBV_QP_PATH_MIG_STATE,
				[T_XRC_TGT] = IBV_QP_PORT | IBV_QP_AV |
					      IBV_QP_TIMEOUT |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_ALT_PATH |
					      IBV_QP_ACCESS_FLAGS |
					      IBV_QP_PKEY_INDEX |
					      IBV_QP_MIN_RNR_TIMER |
					      IBV_QP_PATH_MIG_STATE,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		/* RC and XRC have no SQE state: a send error takes them to ERR. */
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static int type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_UD:
		return T_UD;
	case IBV_QPT_XRC_SEND:
		return T_XRC_INI;
	case IBV_QPT_XRC_RECV:
		return T_XRC_TGT;
	default:
		return -1;
	}
}

bool urxe_qp_mask_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
		     enum ibv_qp_type type, int mask)
{
	const struct qp_trans *t;
	int ti = type_index(type), req, opt;

	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR ||
	    (unsigned int)next > IBV_QPS_ERR)
		return false;
	/* IBA 11.2.5.2: the current state may be asserted only from these. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR &&
	    cur != IBV_QPS_RTS && cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return false;
	t = &trans[cur][next];
	if (!t->valid)
		return false;
	req = t->req[ti];
	opt = t->opt[ti];
	if ((mask & req) != req)
		return false;
	return !(mask & ~(req | opt | IBV_QP_STATE));
}

int urxe_qp_mask_required(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type)
{
	int ti = type_index(type);

	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR ||
	    (unsigned int)next > IBV_QPS_ERR || !trans[cur][next].valid)
		return -1;
	return trans[cur][next].req[ti];
}

int urxe_qp_mask_optional(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type)
{
	int ti = type_index(type);

	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR ||
	    (unsigned int)next > IBV_QPS_ERR || !trans[cur][next].valid)
		return -1;
	return trans[cur][next].opt[ti];
}

int urxe_qp_mask_ignored(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_XRC_SEND:
		return IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	case IBV_QPT_XRC_RECV:
		return IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY;
	default:
		return 0;
	}
}
