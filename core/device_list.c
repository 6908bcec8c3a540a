// SPDX-License-Identifier: BSD-2-Clause
/*
 * ibv_get_device_list(3) and friends.  The ibv_device objects live as
 * long as the process: a list only holds pointers to them, so a device
 * opened from a list stays usable after ibv_free_device_list(), and the
 * same device keeps the same object (and index) across calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>

#include "core.h"

static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;

void urxe_devlist_after_fork_child(void)
{
	pthread_mutex_init(&known_lock, NULL);
}
static struct urxe_ibdev *known;
static int nknown;

static bool same_desc(const struct urxe_dev_desc *a,
		      const struct urxe_dev_desc *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->netdev, b->netdev) &&
	       a->backend == b->backend && !strcmp(a->rundir, b->rundir);
}

static struct urxe_ibdev *ibdev_new(const struct urxe_dev_desc *desc,
				    const struct urxe_iface *ifc)
{
	struct urxe_ibdev *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->desc = *desc;
	d->index = nknown;
	d->guid = urxe_guid_from_mac(ifc->mac);
	d->ibv.node_type = IBV_NODE_CA;
	d->ibv.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", desc->name);
	snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "uverbs%d", d->index);
	snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path),
		 "/sys/class/infiniband_verbs/uverbs%d", d->index);
	snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path),
		 "/sys/class/infiniband/%s", desc->name);
	d->next = known;
	known = d;
	nknown++;
	return d;
}

/* The object for @desc, made on first sight; known_lock held. */
static struct urxe_ibdev *ibdev_lookup(const struct urxe_dev_desc *desc)
{
	struct urxe_iface ifc;
	struct urxe_ibdev *d;
	int rc;

	/* A device exists only where its interface does (this namespace). */
	rc = urxe_iface_query(desc->netdev, &ifc);
	if (rc) {
		urxe_info("device %s skipped: interface %s: %s", desc->name,
			  desc->netdev, strerror(-rc));
		return NULL;
	}
	for (d = known; d; d = d->next)
		if (same_desc(&d->desc, desc))
			return d;
	return ibdev_new(desc, &ifc);
}

URXE_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct urxe_config *cfg;
	struct ibv_device **list;
	unsigned int i, n = 0;

	urxe_lib_used();
	cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		errno = ENOMEM;
		return NULL;
	}
	urxe_config_load(cfg);
	list = calloc(cfg->ndevs + 1, sizeof(*list));
	if (!list) {
		free(cfg);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&known_lock);
	for (i = 0; i < cfg->ndevs; i++) {
		struct urxe_ibdev *d = ibdev_lookup(&cfg->devs[i]);

		if (d)
			list[n++] = &d->ibv;
	}
	pthread_mutex_unlock(&known_lock);
	free(cfg);
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

/* Unloading: the device objects go (nothing refers to them any more). */
void urxe_devlist_unload(void)
{
	struct urxe_ibdev *d;

	while ((d = known)) {
		known = d->next;
		free(d);
	}
	nknown = 0;
}

URXE_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

URXE_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

URXE_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return to_uibdev(device)->guid;
}

URXE_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return to_uibdev(device)->index;
}
