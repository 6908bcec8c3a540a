// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe_private_gsi(): QP1 for urxe's librdmacm.so.1 (include/urxe/gsi.h).
 * A port is an instance's engine ring, opened once per process; the
 * context it came from keeps the instance alive while it is open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <urxe/gsi.h>
#include <urxe/log.h>
#include <urxe/util.h>

#include "core.h"

struct urxe_gsi_port {
	struct urxe_dev *dev;
	int fd;
};

static struct urxe_gsi_port *gsi_open(struct ibv_context *ctx, int *notify_fd)
{
	struct urxe_dev *dev = ctx_dev(ctx);
	struct urxe_gsi_port *p;
	int rc;

	rc = urxe_dev_bind(dev);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->dev = dev;
	p->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->fd < 0) {
		free(p);
		return NULL;
	}
	rc = urxe_engine_gsi_open(dev->eng, p->fd);
	if (rc) {
		close(p->fd);
		free(p);
		errno = -rc;
		return NULL;
	}
	*notify_fd = p->fd;
	return p;
}

static void gsi_close(struct urxe_gsi_port *p)
{
	if (!p)
		return;
	urxe_engine_gsi_close(p->dev->eng);
	close(p->fd);
	free(p);
}

static int gsi_recv(struct urxe_gsi_port *p, struct urxe_gsi_mad *out)
{
	return urxe_engine_gsi_recv(p->dev->eng, out);
}

static int gsi_send(struct urxe_gsi_port *p, const union ibv_gid *sgid,
		    const union ibv_gid *dgid, uint8_t tclass,
		    const uint8_t *mad)
{
	if (p->dev->dead)
		return -EIO;
	return urxe_engine_gsi_send(p->dev->eng, sgid, dgid, tclass, mad);
}

static void gsi_info(struct ibv_context *ctx, struct urxe_gsi_info *out)
{
	struct urxe_dev *dev = ctx_dev(ctx);

	memset(out, 0, sizeof(*out));
	snprintf(out->netdev, sizeof(out->netdev), "%s", dev->desc.netdev);
	out->loopback = dev->iface.loopback;
	out->lo_addr = urxe_slot_loopback_addr(dev->slot.addr_index);
	out->slot = dev->slot.index;
	out->node_guid = dev->node_guid;
	snprintf(out->rundir, sizeof(out->rundir), "%s", dev->desc.rundir);
}

static const struct urxe_gsi_ops gsi_ops = {
	.abi = URXE_GSI_ABI,
	.open = gsi_open,
	.close = gsi_close,
	.recv = gsi_recv,
	.send = gsi_send,
	.info = gsi_info,
};

URXE_EXPORT const struct urxe_gsi_ops *urxe_private_gsi(unsigned int abi);
const struct urxe_gsi_ops *urxe_private_gsi(unsigned int abi)
{
	if (abi != URXE_GSI_ABI) {
		urxe_warn("librdmacm asked for QP1 interface %u, this libibverbs.so.1 has %u: use the librdmacm.so.1 built with it",
			  abi, URXE_GSI_ABI);
		return NULL;
	}
	return &gsi_ops;
}
