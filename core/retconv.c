// SPDX-License-Identifier: BSD-2-Clause
/*
 * The return convention of every exported verb that can fail, from the
 * libibverbs man pages (and rdma-core where a page is silent).  The unit
 * tests walk this table and provoke each convention through the real
 * library.
 */
#include <string.h>

#include "retconv.h"

const char *const urxe_retconv_names[URXE_RET__COUNT] = {
	[URXE_RET_ERRNO] = "errno value",
	[URXE_RET_NULL] = "NULL + errno",
	[URXE_RET_MINUS1] = "-1 + errno",
	[URXE_RET_NEGERRNO] = "negative errno",
	[URXE_RET_POLL] = "negative on error",
	[URXE_RET_NEGCODE] = "negative code + errno",
	[URXE_RET_VOID] = "void",
};

const struct urxe_verb_conv urxe_verb_convs[] = {
	/* devices and contexts */
	{ "ibv_get_device_list", URXE_RET_NULL },
	{ "ibv_open_device", URXE_RET_NULL },
	{ "ibv_close_device", URXE_RET_MINUS1 },
	{ "ibv_get_device_index", URXE_RET_MINUS1 },
	{ "ibv_query_device", URXE_RET_ERRNO },
	{ "ibv_query_device_ex", URXE_RET_ERRNO },
	{ "ibv_query_rt_values_ex", URXE_RET_ERRNO },
	{ "ibv_query_port", URXE_RET_ERRNO },
	{ "ibv_query_gid", URXE_RET_MINUS1 },
	{ "ibv_query_gid_ex", URXE_RET_ERRNO },
	{ "_ibv_query_gid_table", URXE_RET_NEGERRNO },
	{ "ibv_query_gid_type", URXE_RET_MINUS1 },
	{ "ibv_query_pkey", URXE_RET_MINUS1 },
	{ "ibv_get_pkey_index", URXE_RET_MINUS1 },
	{ "ibv_get_async_event", URXE_RET_MINUS1 },
	{ "ibv_ack_async_event", URXE_RET_VOID },
	{ "ibv_read_sysfs_file", URXE_RET_MINUS1 },
	{ "ibv_fork_init", URXE_RET_ERRNO },
	/* protection and XRC domains */
	{ "ibv_alloc_pd", URXE_RET_NULL },
	{ "ibv_dealloc_pd", URXE_RET_ERRNO },
	{ "ibv_open_xrcd", URXE_RET_NULL },
	{ "ibv_close_xrcd", URXE_RET_ERRNO },
	/* memory */
	{ "ibv_reg_mr", URXE_RET_NULL },
	{ "ibv_reg_mr_iova", URXE_RET_NULL },
	{ "ibv_reg_mr_iova2", URXE_RET_NULL },
	{ "ibv_reg_dmabuf_mr", URXE_RET_NULL },
	{ "ibv_rereg_mr", URXE_RET_NEGCODE },
	{ "ibv_dereg_mr", URXE_RET_ERRNO },
	{ "ibv_alloc_mw", URXE_RET_NULL },
	{ "ibv_dealloc_mw", URXE_RET_ERRNO },
	{ "ibv_bind_mw", URXE_RET_ERRNO },
	/* completion queues and channels */
	{ "ibv_create_comp_channel", URXE_RET_NULL },
	{ "ibv_destroy_comp_channel", URXE_RET_ERRNO },
	{ "ibv_create_cq", URXE_RET_NULL },
	{ "ibv_create_cq_ex", URXE_RET_NULL },
	{ "ibv_resize_cq", URXE_RET_ERRNO },
	{ "ibv_destroy_cq", URXE_RET_ERRNO },
	{ "ibv_poll_cq", URXE_RET_POLL },
	{ "ibv_req_notify_cq", URXE_RET_ERRNO },
	{ "ibv_get_cq_event", URXE_RET_MINUS1 },
	{ "ibv_ack_cq_events", URXE_RET_VOID },
	{ "ibv_modify_cq", URXE_RET_ERRNO },
	{ "ibv_start_poll", URXE_RET_ERRNO },
	{ "ibv_next_poll", URXE_RET_ERRNO },
	/* queue pairs and shared receive queues */
	{ "ibv_create_qp", URXE_RET_NULL },
	{ "ibv_create_qp_ex", URXE_RET_NULL },
	{ "ibv_open_qp", URXE_RET_NULL },
	{ "ibv_modify_qp", URXE_RET_ERRNO },
	{ "ibv_query_qp", URXE_RET_ERRNO },
	{ "ibv_destroy_qp", URXE_RET_ERRNO },
	{ "ibv_post_send", URXE_RET_ERRNO },
	{ "ibv_post_recv", URXE_RET_ERRNO },
	{ "ibv_qp_to_qp_ex", URXE_RET_NULL },
	{ "ibv_wr_complete", URXE_RET_ERRNO },
	{ "ibv_create_srq", URXE_RET_NULL },
	{ "ibv_create_srq_ex", URXE_RET_NULL },
	{ "ibv_modify_srq", URXE_RET_ERRNO },
	{ "ibv_query_srq", URXE_RET_ERRNO },
	{ "ibv_destroy_srq", URXE_RET_ERRNO },
	{ "ibv_post_srq_recv", URXE_RET_ERRNO },
	{ "ibv_get_srq_num", URXE_RET_ERRNO },
	/* address handles and multicast */
	{ "ibv_create_ah", URXE_RET_NULL },
	{ "ibv_create_ah_from_wc", URXE_RET_NULL },
	{ "ibv_init_ah_from_wc", URXE_RET_MINUS1 },
	{ "ibv_destroy_ah", URXE_RET_ERRNO },
	{ "ibv_attach_mcast", URXE_RET_ERRNO },
	{ "ibv_detach_mcast", URXE_RET_ERRNO },
	/* import and ECE */
	{ "ibv_import_device", URXE_RET_NULL },
	{ "ibv_import_pd", URXE_RET_NULL },
	{ "ibv_import_mr", URXE_RET_NULL },
	{ "ibv_import_dm", URXE_RET_NULL },
	{ "ibv_read_ibdev_sysfs_file", URXE_RET_MINUS1 },
	{ "ibv_query_ece", URXE_RET_ERRNO },
	{ "ibv_set_ece", URXE_RET_ERRNO },
};

const size_t urxe_verb_convs_len =
	sizeof(urxe_verb_convs) / sizeof(urxe_verb_convs[0]);

int urxe_retconv_of(const char *verb)
{
	size_t i;

	for (i = 0; i < urxe_verb_convs_len; i++)
		if (!strcmp(urxe_verb_convs[i].verb, verb))
			return (int)urxe_verb_convs[i].conv;
	return -ENOENT;
}
