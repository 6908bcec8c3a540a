// SPDX-License-Identifier: BSD-2-Clause
/*
 * Completion channels (ibv_create_comp_channel(3)).  The fd is the read end
 * of an event pipe carrying struct ibv_cq pointers: a CQ armed with
 * ibv_req_notify_cq posts itself when its next (solicited) completion
 * arrives, and ibv_get_cq_event takes one pointer.
 */
#include <errno.h>
#include <stdlib.h>

#include <urxe/provider.h>

static void channel_unlist(struct urxe_channel *ch)
{
	struct urxe_channel **pp;

	pthread_mutex_lock(&ch->dev->lock);
	for (pp = &ch->dev->channels; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	pthread_mutex_unlock(&ch->dev->lock);
}

int urxe_channel_create(struct urxe_dev *dev, struct ibv_context *ctx,
			struct ibv_comp_channel **out)
{
	struct urxe_channel *ch;
	int rc;

	if (!ctx)
		return -EINVAL;
	if (dev->dead)
		return -EIO;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	rc = urxe_evpipe_init(&ch->ev, sizeof(struct ibv_cq *));
	if (rc) {
		free(ch);
		return rc;
	}
	ch->dev = dev;
	atomic_init(&ch->users, 0);
	ch->ibv.context = ctx;
	ch->ibv.fd = ch->ev.rd;
	pthread_mutex_lock(&dev->lock);
	ch->next = dev->channels;
	dev->channels = ch;
	pthread_mutex_unlock(&dev->lock);
	*out = &ch->ibv;
	return 0;
}

int urxe_channel_destroy(struct ibv_comp_channel *ibch)
{
	struct urxe_channel *ch = to_uch(ibch);

	if (atomic_load(&ch->users) > 0)
		return -EBUSY;
	/* Every CQ that posted here is gone and purged its records. */
	urxe_channel_release(ch);
	return 0;
}

void urxe_channel_release(struct urxe_channel *ch)
{
	channel_unlist(ch);
	urxe_evpipe_fini(&ch->ev);
	free(ch);
}

int urxe_channel_get_event(struct ibv_comp_channel *ibch, struct ibv_cq **cq)
{
	struct urxe_channel *ch = to_uch(ibch);

	return urxe_evpipe_get(&ch->ev, ch->dev, cq);
}
