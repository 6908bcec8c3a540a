/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For suites that drive the library through the public verbs.
 */
#ifndef URXE_TEST_VERBS_UTIL_H
#define URXE_TEST_VERBS_UTIL_H

#include <infiniband/verbs.h>
#include <string.h>

/* Opens the device called @name (NULL if there is none or it fails). */
static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *c = NULL;
	int i;

	list = ibv_get_device_list(NULL);
	if (!list)
		return NULL;
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return c;
}

#endif
