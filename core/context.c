// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_open_device(3) / ibv_close_device(3) and the context object.  The
 * context is a struct verbs_context laid out exactly as verbs.h says (the
 * inline verbs find it through abi_compat and sz), wrapped in urxe_ctx.
 * cmd_fd and async_fd are real descriptors with inodes of their own: a
 * memfd naming the device, and the read end of a pipe that carries
 * struct ibv_async_event records.  ibv_import_device(3) finds a context
 * of this process by its cmd_fd's inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>

#include "core.h"

static void fill_ops(struct verbs_context *v)
{
	struct ibv_context_ops *ops = &v->context.ops;

	ops->poll_cq = urxe_ops_poll_cq;
	ops->req_notify_cq = urxe_ops_req_notify_cq;
	ops->post_send = urxe_ops_post_send;
	ops->post_recv = urxe_ops_post_recv;
	ops->post_srq_recv = urxe_ops_post_srq_recv;
	ops->alloc_mw = urxe_ops_alloc_mw;
	ops->bind_mw = urxe_ops_bind_mw;
	ops->dealloc_mw = urxe_ops_dealloc_mw;

	/* Extended verbs: a NULL slot makes the inline verb say EOPNOTSUPP. */
	v->query_port = urxe_vctx_query_port;
	v->query_device_ex = urxe_vctx_query_device_ex;
	v->open_xrcd = urxe_vctx_open_xrcd;
	v->close_xrcd = urxe_vctx_close_xrcd;
	v->create_qp_ex = urxe_vctx_create_qp_ex;
	v->open_qp = urxe_vctx_open_qp;
	v->create_srq_ex = urxe_vctx_create_srq_ex;
	v->get_srq_num = urxe_vctx_get_srq_num;
	v->create_cq_ex = urxe_vctx_create_cq_ex;
	v->query_rt_values = urxe_vctx_query_rt_values;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

static int make_cmd_fd(const struct urxe_dev_desc *desc)
{
	int fd = memfd_create("urxe-cmd", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* Names the device, for ibv_import_device() in another context. */
	if (dprintf(fd, "%s\n", desc->name) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* The process's contexts, for ibv_import_device(). */
static pthread_mutex_t ctxs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urxe_ctx *ctxs;

void urxe_ctx_after_fork_child(void)
{
	pthread_mutex_init(&ctxs_lock, NULL);
}

static void ctx_list_add(struct urxe_ctx *c)
{
	pthread_mutex_lock(&ctxs_lock);
	c->next = ctxs;
	ctxs = c;
	pthread_mutex_unlock(&ctxs_lock);
}

static void ctx_list_del(struct urxe_ctx *c)
{
	struct urxe_ctx **p;

	pthread_mutex_lock(&ctxs_lock);
	for (p = &ctxs; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&ctxs_lock);
}

/* A context on @ibdev; @cmd_fd is made when negative, else adopted. */
static int ctx_open(struct urxe_ibdev *ibdev, int cmd_fd, struct urxe_ctx **out)
{
	struct urxe_ctx *c;
	struct stat st;
	int rc;

	urxe_lib_used();
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ibdev = ibdev;
	rc = urxe_dev_get(&ibdev->desc, &c->dev);
	if (rc)
		goto err_free;
	rc = cmd_fd >= 0 ? cmd_fd : make_cmd_fd(&ibdev->desc);
	if (rc < 0)
		goto err_dev;
	c->vctx.context.cmd_fd = rc;
	if (fstat(rc, &st)) {
		rc = -errno;
		goto err_cmd;
	}
	c->cmd_dev = st.st_dev;
	c->cmd_ino = st.st_ino;
	rc = urxe_evpipe_init(&c->async, sizeof(struct ibv_async_event));
	if (rc)
		goto err_cmd;
	c->vctx.context.async_fd = c->async.rd;
	c->async_wr = c->async.wr;
	if (urxe_dev_async_add(c->dev, &c->async))
		urxe_warn("%s: out of memory: this context gets no port events",
			  ibdev->desc.name);
	c->vctx.context.device = &ibdev->ibv;
	c->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	fill_ops(&c->vctx);
	ctx_list_add(c);
	*out = c;
	return 0;

err_cmd:
	if (cmd_fd < 0)
		close(c->vctx.context.cmd_fd);
err_dev:
	urxe_dev_put(c->dev);
err_free:
	free(c);
	return rc;
}

URXE_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct urxe_ctx *c = NULL;
	int rc;

	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	rc = ctx_open(to_uibdev(device), -1, &c);
	if (rc)
		urxe_warn("cannot open %s: %s", device->name, strerror(-rc));
	return urxe_ret_null(rc, c ? &c->vctx.context : NULL);
}

/*
 * ibv_import_device(3): @cmd_fd is a dup of the cmd_fd of a context of
 * this process (same inode); the new context takes the descriptor and
 * closes it with itself.  Contexts of other processes cannot be shared
 * without a kernel: EOPNOTSUPP, said in the log.
 */
URXE_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct urxe_ibdev *ibdev = NULL;
	struct urxe_ctx *c;
	struct stat st;
	int rc;

	if (cmd_fd < 0 || fstat(cmd_fd, &st))
		return urxe_ret_null(-EBADF, NULL);
	pthread_mutex_lock(&ctxs_lock);
	for (c = ctxs; c; c = c->next)
		if (c->cmd_dev == st.st_dev && c->cmd_ino == st.st_ino) {
			ibdev = c->ibdev;
			break;
		}
	pthread_mutex_unlock(&ctxs_lock);
	if (!ibdev) {
		urxe_warn("ibv_import_device: fd %d is not the cmd_fd of a context of this process; urxe cannot share contexts between processes",
			  cmd_fd);
		return urxe_ret_null(-EOPNOTSUPP, NULL);
	}
	c = NULL;
	rc = ctx_open(ibdev, cmd_fd, &c);
	return urxe_ret_null(rc, c ? &c->vctx.context : NULL);
}

static void ctx_close(struct urxe_ctx *c)
{
	struct ibv_context *context = &c->vctx.context;

	urxe_pd_release_imports(context);
	close(context->cmd_fd);
	urxe_dev_async_del(c->dev, &c->async);
	urxe_evpipe_fini(&c->async);
	pthread_mutex_destroy(&context->mutex);
	urxe_dev_put(c->dev);
	free(c);
}

URXE_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct urxe_ctx *c;

	if (!context)
		return urxe_ret_minus1(-EINVAL);
	c = to_uctx(context);
	ctx_list_del(c);
	ctx_close(c);
	return 0;
}

/* Unloading: the contexts the application left open close. */
void urxe_ctx_unload(void)
{
	struct urxe_ctx *c;

	while ((c = ctxs)) {
		ctxs = c->next;
		ctx_close(c);
	}
}

URXE_EXPORT int ibv_get_async_event(struct ibv_context *context,
				    struct ibv_async_event *event)
{
	struct urxe_ctx *c;

	if (!context || !event)
		return urxe_ret_minus1(-EINVAL);
	c = to_uctx(context);
	/* Waits (making progress) unless async_fd was made non-blocking. */
	return urxe_ret_minus1(urxe_evpipe_get(&c->async, c->dev, event));
}

URXE_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Destroying the object waits for the acks of its events. */
	if (event->event_type == IBV_EVENT_CQ_ERR)
		urxe_cq_ack_async(event->element.cq);
	else if (urxe_event_is_qp(event->event_type))
		urxe_qp_ack_async(event->element.qp);
	else if (urxe_event_is_srq(event->event_type))
		urxe_srq_ack_async(event->element.srq);
}
