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
#include <stdio.h>
#include <string.h>

#include <urxe/provider.h>
#include <urxe/util.h>

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

/* ---- for people: what a refused mask lacks or has too many of ---- */

static const struct {
	int bit;
	const char *name;
	const char *range;	/* what a value must be (NULL: any) */
} attr_names[] = {
	{ IBV_QP_STATE, "IBV_QP_STATE", "qp_state RESET..ERR" },
	{ IBV_QP_CUR_STATE, "IBV_QP_CUR_STATE", NULL },
	{ IBV_QP_EN_SQD_ASYNC_NOTIFY, "IBV_QP_EN_SQD_ASYNC_NOTIFY", NULL },
	{ IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS",
	  "qp_access_flags of LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, MW_BIND, ON_DEMAND, OPTIONAL_RANGE" },
	{ IBV_QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX", "pkey_index 0 (one P_Key)" },
	{ IBV_QP_PORT, "IBV_QP_PORT", "port_num 1" },
	{ IBV_QP_QKEY, "IBV_QP_QKEY", NULL },
	{ IBV_QP_AV, "IBV_QP_AV", NULL },
	{ IBV_QP_PATH_MTU, "IBV_QP_PATH_MTU", "path_mtu IBV_MTU_256..IBV_MTU_4096" },
	{ IBV_QP_TIMEOUT, "IBV_QP_TIMEOUT", "timeout 0..31" },
	{ IBV_QP_RETRY_CNT, "IBV_QP_RETRY_CNT", "retry_cnt 0..7" },
	{ IBV_QP_RNR_RETRY, "IBV_QP_RNR_RETRY", "rnr_retry 0..7" },
	{ IBV_QP_RQ_PSN, "IBV_QP_RQ_PSN", NULL },
	{ IBV_QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC", "max_rd_atomic 0..128" },
	{ IBV_QP_ALT_PATH, "IBV_QP_ALT_PATH",
	  "alt_port_num 1, alt_ah_attr.port_num 1, alt_timeout 0..31, alt_pkey_index 0" },
	{ IBV_QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER", "min_rnr_timer 0..31" },
	{ IBV_QP_SQ_PSN, "IBV_QP_SQ_PSN", NULL },
	{ IBV_QP_MAX_DEST_RD_ATOMIC, "IBV_QP_MAX_DEST_RD_ATOMIC",
	  "max_dest_rd_atomic 0..128" },
	{ IBV_QP_PATH_MIG_STATE, "IBV_QP_PATH_MIG_STATE",
	  "path_mig_state MIGRATED, REARM or ARMED" },
	{ IBV_QP_CAP, "IBV_QP_CAP", NULL },
	{ IBV_QP_DEST_QPN, "IBV_QP_DEST_QPN", "dest_qp_num of 24 bits" },
	{ IBV_QP_RATE_LIMIT, "IBV_QP_RATE_LIMIT", NULL },
};

_Static_assert(URXE_MAX_RD_ATOM == 128, "the ranges above say 128");

/* Appends @s to @buf (NUL-terminated, @len bytes); never overflows. */
static void put(char *buf, size_t len, const char *s)
{
	size_t off = strnlen(buf, len);

	if (off + 1 < len)
		snprintf(buf + off, len - off, "%s", s);
}

void urxe_qp_mask_names(int mask, char *buf, size_t len)
{
	unsigned int i;
	int rest = mask;

	buf[0] = '\0';
	for (i = 0; i < URXE_ARRAY_SIZE(attr_names); i++) {
		if (!(mask & attr_names[i].bit))
			continue;
		if (buf[0])
			put(buf, len, ", ");
		put(buf, len, attr_names[i].name);
		rest &= ~attr_names[i].bit;
	}
	if (rest) {
		char hex[24];

		snprintf(hex, sizeof(hex), "%s0x%x", buf[0] ? ", " : "",
			 (unsigned int)rest);
		put(buf, len, hex);
	}
}

const char *urxe_qp_attr_range(int bit)
{
	unsigned int i;

	for (i = 0; i < URXE_ARRAY_SIZE(attr_names); i++)
		if (attr_names[i].bit == bit)
			return attr_names[i].range ? attr_names[i].range : "";
	return "";
}

/* "missing A, B; not allowed: C" */
static void explain_mask(int mask, int req, int opt, char *buf, size_t len)
{
	char names[384];
	int missing = req & ~mask, extra = mask & ~(req | opt | IBV_QP_STATE);

	buf[0] = '\0';
	if (missing) {
		urxe_qp_mask_names(missing, names, sizeof(names));
		put(buf, len, "missing ");
		put(buf, len, names);
	}
	if (extra) {
		urxe_qp_mask_names(extra, names, sizeof(names));
		put(buf, len, missing ? "; not allowed: " : "not allowed: ");
		put(buf, len, names);
	}
}

void urxe_qp_mask_explain(enum ibv_qp_state cur, enum ibv_qp_state next,
			  enum ibv_qp_type type, int mask, char *buf,
			  size_t len)
{
	int ti = type_index(type);
	const struct qp_trans *t;

	if (ti < 0 || (unsigned int)cur > IBV_QPS_ERR ||
	    (unsigned int)next > IBV_QPS_ERR) {
		snprintf(buf, len, "no transitions for this QP type");
		return;
	}
	t = &trans[cur][next];
	if (!t->valid) {
		snprintf(buf, len, "%s->%s is no transition (IBA 10.3.1)",
			 urxe_qp_state_names[cur], urxe_qp_state_names[next]);
		return;
	}
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR &&
	    cur != IBV_QPS_RTS && cur != IBV_QPS_SQD && cur != IBV_QPS_SQE) {
		snprintf(buf, len, "not allowed: IBV_QP_CUR_STATE (only from RTR, RTS, SQD or SQE)");
		return;
	}
	explain_mask(mask, t->req[ti], t->opt[ti], buf, len);
}
