// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lesson 1: find the RDMA devices and ask one what it is.
 *
 * An RDMA device (an HCA in InfiniBand words, a RoCE NIC, or a software
 * device such as rxe) has one or more ports; each port has a state, an
 * MTU and a GID table.  A GID (global identifier, 128 bits) is a port's
 * address: on RoCE v2, the transport this device speaks, a GID is an IP
 * address (IPv4 ones written as ::ffff:a.b.c.d) and every RDMA packet
 * travels in a UDP datagram to port 4791.
 *
 *   01_devices [-d DEV] [-g GIDX]
 *
 * Lists every device, then queries DEV (default: the first): its limits,
 * port 1, and GID entry GIDX (default 0).
 */
#include "common.h"

#include <arpa/inet.h>

/* IBV_MTU_1024 is an enum (3), not a number of bytes. */
static int mtu_bytes(enum ibv_mtu mtu)
{
	return 128 << mtu;	/* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
}

static const char *link_layer_name(uint8_t ll)
{
	return ll == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
	       ll == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "unspecified";
}

static const char *gid_type_name(enum ibv_gid_type t)
{
	return t == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
	       t == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB";
}

/* Step 1: the list of devices.  It only names them; nothing is open. */
static void list_devices(void)
{
	int n, i;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (!list)
		die("ibv_get_device_list");
	printf("%d RDMA device(s):", n);
	for (i = 0; i < n; i++)
		printf(" %s", ibv_get_device_name(list[i]));
	printf("\n");
	ibv_free_device_list(list);	/* the list is ours to free */
}

/*
 * Step 2: the device's limits.  ibv_query_device() fills struct
 * ibv_device_attr: how many QPs, CQs, MRs it can hold, how large each
 * may be.  A portable program asks instead of assuming.
 */
static void query_device(struct ibv_context *ctx)
{
	struct ibv_device_attr da;

	check(ibv_query_device(ctx, &da), "ibv_query_device");
	printf("device %s: %u port(s)\n", ibv_get_device_name(ctx->device),
	       da.phys_port_cnt);
	/* These numbers differ from one device (and driver) to another. */
	printf("  limits: max_qp %d, max_cqe %d, max_mr_size %llu, max_sge %d\n",
	       da.max_qp, da.max_cqe, (unsigned long long)da.max_mr_size,
	       da.max_sge);
	printf("  atomics: %s\n", da.atomic_cap == IBV_ATOMIC_NONE ?
	       "not supported" : "supported");
}

/*
 * Step 3: a port.  Ports are numbered from 1.  A QP can only be used on
 * an ACTIVE port; active_mtu is the largest payload one packet may carry
 * on its path (on RoCE: the Ethernet MTU less the headers, rounded down
 * to one of the IBA sizes 256...4096).
 */
static int query_port(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	check(ibv_query_port(ctx, port, &pa), "ibv_query_port");
	printf("  port %u: state %s, MTU %d (max %d), link layer %s\n", port,
	       ibv_port_state_str(pa.state), mtu_bytes(pa.active_mtu),
	       mtu_bytes(pa.max_mtu), link_layer_name(pa.link_layer));
	return pa.gid_tbl_len;
}

/*
 * Step 4: one GID.  ibv_query_gid_ex() also says which RoCE version the
 * entry is for: with RoCE v2, each IP address of the port's interface has
 * an entry.  The index (-g) is what a QP names as its source address.
 */
static void query_gid(struct ibv_context *ctx, uint8_t port, int gidx)
{
	struct ibv_gid_entry e;
	char text[INET6_ADDRSTRLEN];

	check(ibv_query_gid_ex(ctx, port, (uint32_t)gidx, &e, 0),
	      "ibv_query_gid_ex");
	if (!inet_ntop(AF_INET6, e.gid.raw, text, sizeof(text)))
		die("inet_ntop");
	/* The address itself differs from machine to machine. */
	printf("  GID[%d]: %s, %s\n", gidx, text, gid_type_name(e.gid_type));
}

int main(int argc, char **argv)
{
	struct options o = parse_options(argc, argv, "d:g:");
	struct ibv_context *ctx;
	int gids;

	list_devices();
	ctx = open_device(o.dev);
	query_device(ctx);
	gids = query_port(ctx, PORT_NUM);
	printf("  port %d: %d GID table entries\n", PORT_NUM, gids);
	query_gid(ctx, PORT_NUM, o.gidx);
	/* Closing the context releases everything made through it. */
	check(ibv_close_device(ctx), "ibv_close_device");
	return 0;
}
