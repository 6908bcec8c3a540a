// SPDX-License-Identifier: BSD-2-Clause
/*
 * The query verbs: device, port, GID (plain, _ex, table, type), P_Key.
 * Each converts the provider's negative errno to its own man page's
 * convention (see retconv.c).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core.h"

URXE_EXPORT int ibv_query_device(struct ibv_context *context,
				 struct ibv_device_attr *device_attr)
{
	struct ibv_device_attr_ex ex;
	int rc;

	rc = urxe_dev_query_device(ctx_dev(context), &ex);
	if (!rc)
		*device_attr = ex.orig_attr;
	return urxe_ret_errno(rc);
}

int urxe_vctx_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	int rc;

	if (input && input->comp_mask)
		return urxe_ret_errno(-EINVAL);
	if (attr_size < sizeof(attr->orig_attr))
		return urxe_ret_errno(-EINVAL);
	rc = urxe_dev_query_device(ctx_dev(context), &ex);
	if (rc)
		return urxe_ret_errno(rc);
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	/* A newer caller's larger struct: what we do not know is zero. */
	if (attr_size > sizeof(ex))
		memset((char *)attr + sizeof(ex), 0, attr_size - sizeof(ex));
	return 0;
}

/*
 * ibv_query_rt_values_ex(3): the raw clock is CLOCK_MONOTONIC, the clock
 * the engine runs on.  Only the values asked for and known are marked.
 */
int urxe_vctx_query_rt_values(struct ibv_context *context,
			      struct ibv_values_ex *values)
{
	uint32_t asked;

	if (!context || !values)
		return urxe_ret_errno(-EINVAL);
	asked = values->comp_mask;
	values->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &values->raw_clock))
			return urxe_ret_errno(-errno);
		values->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}

int urxe_vctx_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *port_attr, size_t attr_len)
{
	struct ibv_port_attr pa;
	int rc;

	rc = urxe_dev_query_port(ctx_dev(context), port_num, &pa);
	if (!rc)
		memcpy(port_attr, &pa, attr_len < sizeof(pa) ? attr_len : sizeof(pa));
	return urxe_ret_errno(rc);
}

/*
 * The exported symbol takes the old layout: struct ibv_port_attr without
 * port_cap_flags2 and what follows; write no more than that.
 */
#undef ibv_query_port
URXE_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	return urxe_vctx_query_port(context, port_num,
				    (struct ibv_port_attr *)port_attr,
				    offsetof(struct ibv_port_attr, port_cap_flags2));
}

URXE_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			      int index, union ibv_gid *gid)
{
	int rc;

	if (index < 0)
		return urxe_ret_minus1(-EINVAL);
	rc = urxe_dev_query_gid_user(ctx_dev(context), port_num,
				     (uint32_t)index, gid, true);
	/* An empty entry reads as the zero GID; only _ex says ENODATA. */
	if (rc == -ENODATA)
		rc = 0;
	return urxe_ret_minus1(rc);
}

static void fill_entry(struct urxe_dev *dev, uint32_t port, uint32_t index,
		       const union ibv_gid *gid, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid = *gid;
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = (uint32_t)dev->iface.ifindex;
}

URXE_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
				  uint32_t port_num, uint32_t gid_index,
				  struct ibv_gid_entry *entry, uint32_t flags,
				  size_t entry_size)
{
	struct urxe_dev *dev = ctx_dev(context);
	union ibv_gid gid;
	int rc;

	if (flags || entry_size < sizeof(*entry))
		return urxe_ret_errno(-EINVAL);
	rc = urxe_dev_query_gid_user(dev, port_num, gid_index, &gid, false);
	if (!rc)
		fill_entry(dev, port_num, gid_index, &gid, entry);
	return urxe_ret_errno(rc);
}

URXE_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					 struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags,
					 size_t entry_size)
{
	struct urxe_dev *dev = ctx_dev(context);
	union ibv_gid gids[URXE_GID_TBL_LEN];
	size_t n = 0, i;

	if (flags || entry_size < sizeof(*entries))
		return urxe_ret_negerrno(-EINVAL);
	for (i = 0; i < URXE_GID_TBL_LEN; i++)
		if (!urxe_dev_query_gid(dev, 1, (uint32_t)i, &gids[n]))
			n++;
	if (n > max_entries)
		return urxe_ret_negerrno(-EINVAL);
	for (i = 0, n = 0; i < URXE_GID_TBL_LEN; i++) {
		union ibv_gid gid;

		if (urxe_dev_query_gid(dev, 1, (uint32_t)i, &gid))
			continue;
		fill_entry(dev, 1, (uint32_t)i, &gid,
			   (struct ibv_gid_entry *)((char *)entries + n * entry_size));
		n++;
	}
	return (ssize_t)n;
}

URXE_EXPORT int ibv_query_gid_type(struct ibv_context *context,
				   uint8_t port_num, unsigned int index,
				   enum ibv_gid_type_sysfs *type)
{
	union ibv_gid gid;
	int rc;

	rc = urxe_dev_query_gid_user(ctx_dev(context), port_num, index, &gid,
				     false);
	if (rc == -ENODATA) {
		/* An empty entry: what libibverbs has always answered. */
		*type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (!rc)
		*type = IBV_GID_TYPE_SYSFS_ROCE_V2;
	return urxe_ret_minus1(rc);
}

URXE_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			       int index, __be16 *pkey)
{
	if (index < 0 || index > UINT16_MAX)
		return urxe_ret_minus1(-EINVAL);
	return urxe_ret_minus1(urxe_dev_query_pkey(ctx_dev(context), port_num,
						   (uint16_t)index, pkey));
}

URXE_EXPORT int ibv_get_pkey_index(struct ibv_context *context,
				   uint8_t port_num, __be16 pkey)
{
	__be16 p;
	int i;

	for (i = 0; i < URXE_PKEY_TBL_LEN; i++) {
		if (ibv_query_pkey(context, port_num, i, &p))
			return -1;
		if (p == pkey)
			return i;
	}
	return urxe_ret_minus1(-ENOENT);
}
