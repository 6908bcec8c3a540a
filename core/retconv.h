/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Return conventions of libibverbs, per verb.  Inside the project every
 * function returns 0 or a negative errno; the exported verbs convert here,
 * and nowhere else, with the helper their row in retconv.c names.
 *
 *   URXE_RET_ERRNO     int: 0, or the positive errno value (errno set too)
 *   URXE_RET_NULL      pointer: the object, or NULL with errno set
 *   URXE_RET_MINUS1    int: 0 (or a count), or -1 with errno set
 *   URXE_RET_NEGERRNO  int/ssize_t: a count, or a negative errno value
 *   URXE_RET_POLL      ibv_poll_cq: a count, or a negative value
 *   URXE_RET_NEGCODE   ibv_rereg_mr: 0, or a negative enum code, errno set
 *   URXE_RET_VOID      nothing to report
 */
#ifndef URXE_CORE_RETCONV_H
#define URXE_CORE_RETCONV_H

#include <errno.h>
#include <stddef.h>

enum urxe_retconv {
	URXE_RET_ERRNO,
	URXE_RET_NULL,
	URXE_RET_MINUS1,
	URXE_RET_NEGERRNO,
	URXE_RET_POLL,
	URXE_RET_NEGCODE,
	URXE_RET_VOID,
	URXE_RET__COUNT,
};

struct urxe_verb_conv {
	const char *verb;
	enum urxe_retconv conv;
};

/* The table: every exported verb that reports failure. */
extern const struct urxe_verb_conv urxe_verb_convs[];
extern const size_t urxe_verb_convs_len;
extern const char *const urxe_retconv_names[URXE_RET__COUNT];

/* Convention of @verb, or -ENOENT when the table lacks it. */
int urxe_retconv_of(const char *verb);

/* @rc is 0 (or a count) or a negative errno. */
static inline int urxe_ret_errno(int rc)
{
	if (rc < 0) {
		errno = -rc;
		return -rc;
	}
	return 0;
}

static inline void *urxe_ret_null(int rc, void *obj)
{
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	return obj;
}

static inline int urxe_ret_minus1(int rc)
{
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return rc;
}

/* ibv_rereg_mr: @code (a negative enum ibv_rereg_mr_err_code) on failure. */
static inline int urxe_ret_negcode(int rc, int code)
{
	if (rc < 0) {
		errno = -rc;
		return code;
	}
	return 0;
}

static inline long urxe_ret_negerrno(long rc)
{
	if (rc < 0)
		errno = (int)-rc;
	return rc;
}

#endif
