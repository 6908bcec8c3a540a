// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device instances and their attributes.  One instance per (process,
 * device): created at the first open, shared by later contexts, destroyed
 * with the last.  Its slot is claimed when it is created because the GID
 * (on loopback) is the slot's address; sockets come later, lazily.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urxe/engine.h>
#include <urxe/log.h>
#include <urxe/provider.h>
#include <urxe/util.h>

#include "provider_int.h"
#include "xrc_shared.h"

const char *const urxe_backend_names[URXE_BACKEND__COUNT] = {
	[URXE_BACKEND_UDP] = "udp",
	[URXE_BACKEND_PACKET] = "packet",
};

static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urxe_dev *instances;

static bool same_desc(const struct urxe_dev_desc *a,
		      const struct urxe_dev_desc *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->netdev, b->netdev) &&
	       a->backend == b->backend && !strcmp(a->rundir, b->rundir);
}

/* Rebuilds iface-derived state; dev->lock held. */
static int refresh_locked(struct urxe_dev *dev)
{
	struct urxe_iface ifc;
	int rc;

	rc = urxe_iface_query(dev->desc.netdev, &ifc);
	if (rc) {
		urxe_err("%s: interface %s: %s", dev->desc.name, dev->desc.netdev,
			 rc == -ENODEV ? "no such interface in this network namespace"
				       : strerror(-rc));
		return rc;
	}
	dev->iface = ifc;
	dev->node_guid = urxe_guid_from_mac(ifc.mac);
	urxe_gid_table_build(&ifc, dev->slot.addr_index, dev->gids,
			     URXE_GID_TBL_LEN);
	return 0;
}

int urxe_dev_refresh(struct urxe_dev *dev)
{
	int rc;

	pthread_mutex_lock(&dev->lock);
	rc = refresh_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/*
 * Claims a slot.  On loopback the slot's address must also be free: a
 * process using another runtime directory may hold the same slot number
 * (and address); such slots are skipped (held until we are done looking,
 * so the next claim moves on).
 */
static int claim_slot(const struct urxe_dev_desc *desc, struct urxe_slot *slot)
{
	struct urxe_slot busy[8];
	struct urxe_iface ifc;
	int n = 0, rc, i;

	rc = urxe_slot_claim(desc->rundir, slot);
	if (rc || urxe_iface_query(desc->netdev, &ifc) || !ifc.loopback)
		return rc;
	while (urxe_udp_addr_free(urxe_slot_loopback_addr(slot->addr_index)) == 0 &&
	       n < (int)URXE_ARRAY_SIZE(busy)) {
		busy[n++] = *slot;
		rc = urxe_slot_claim(desc->rundir, slot);
		if (rc)
			break;
	}
	for (i = 0; i < n; i++)
		urxe_slot_release(&busy[i]);
	return rc;
}

static int dev_create(const struct urxe_dev_desc *desc, struct urxe_dev **out)
{
	struct urxe_dev *dev;
	int rc;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->desc = *desc;
	dev->slot.fd = -1;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->xrc_lock, NULL);
	rc = urxe_dev_faults_read(dev);
	if (rc)
		goto err_free;
	rc = claim_slot(desc, &dev->slot);
	if (rc)
		goto err_free;
	rc = refresh_locked(dev);
	if (rc)
		goto err_slot;
	if (!dev->iface.up)
		urxe_warn("%s: interface %s is down: nothing can be sent or received until `ip link set %s up`%s",
			  desc->name, desc->netdev, desc->netdev,
			  dev->iface.loopback ?
			  " (a new network namespace starts with lo down)" : "");
	/* Statistics are for people: without them the device still works. */
	rc = urxe_stats_attach(desc->rundir, &dev->slot, desc->name,
			       desc->netdev, &dev->stats);
	if (rc)
		urxe_warn("%s: no shared counters (%s/%s: %s); `urxe stats` will not see this instance",
			  desc->name, desc->rundir, URXE_STATS_FILE,
			  strerror(-rc));
	rc = urxe_dev_transport_init(dev);
	if (rc)
		goto err_stats;
	/* Port events are a courtesy: without a watch the device works. */
	dev->port_active = dev->iface.up && dev->iface.running;
	if (urxe_iface_watch_open(&dev->link))
		dev->link = NULL;
	dev->refcnt = 1;
	urxe_dbg("%s: instance on %s, slot %u", desc->name, desc->netdev,
		 dev->slot.index);
	*out = dev;
	return 0;

err_stats:
	urxe_stats_detach(dev->stats);
err_slot:
	urxe_slot_release(&dev->slot);
err_free:
	pthread_mutex_destroy(&dev->xrc_lock);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
	return rc;
}

int urxe_dev_async_add(struct urxe_dev *dev, struct urxe_evpipe *p)
{
	struct urxe_evpipe **a;

	pthread_mutex_lock(&dev->lock);
	a = realloc(dev->asyncs, (dev->nasyncs + 1) * sizeof(*a));
	if (a) {
		a[dev->nasyncs++] = p;
		dev->asyncs = a;
	}
	pthread_mutex_unlock(&dev->lock);
	return a ? 0 : -ENOMEM;
}

void urxe_dev_async_del(struct urxe_dev *dev, struct urxe_evpipe *p)
{
	unsigned int i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < dev->nasyncs; i++) {
		if (dev->asyncs[i] == p) {
			dev->asyncs[i] = dev->asyncs[--dev->nasyncs];
			break;
		}
	}
	pthread_mutex_unlock(&dev->lock);
}

/*
 * The port follows the interface: ACTIVE while it is up and running (as
 * ibv_query_port says), and each change is an event to every context, as
 * kernel rxe raises them when its netdev goes up or down.
 */
void urxe_dev_link_check(struct urxe_dev *dev)
{
	struct ibv_async_event ev = { .element.port_num = 1 };
	unsigned int i;
	bool active;

	if (dev->dead || !dev->link || !urxe_iface_watch_drain(dev->link))
		return;
	pthread_mutex_lock(&dev->lock);
	if (refresh_locked(dev) && dev->iface.up) {
		/* Gone from the namespace: as down. */
		dev->iface.up = false;
		dev->iface.running = false;
	}
	active = dev->iface.up && dev->iface.running;
	if (active != dev->port_active) {
		dev->port_active = active;
		ev.event_type = active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
		urxe_info("%s: port 1 %s (%s)", dev->desc.name,
			  active ? "active" : "down", dev->desc.netdev);
		for (i = 0; i < dev->nasyncs; i++)
			urxe_evpipe_post(dev->asyncs[i], &ev);
	}
	pthread_mutex_unlock(&dev->lock);
}

int urxe_dev_get(const struct urxe_dev_desc *desc, struct urxe_dev **out)
{
	struct urxe_dev *dev;
	int rc = 0;

	pthread_mutex_lock(&instances_lock);
	for (dev = instances; dev; dev = dev->next)
		if (!dev->dead && same_desc(&dev->desc, desc))
			break;
	if (dev) {
		dev->refcnt++;
	} else {
		rc = dev_create(desc, &dev);
		if (!rc) {
			dev->next = instances;
			instances = dev;
		}
	}
	pthread_mutex_unlock(&instances_lock);
	if (!rc)
		*out = dev;
	return rc;
}

void urxe_dev_put(struct urxe_dev *dev)
{
	struct urxe_dev **pp;

	pthread_mutex_lock(&instances_lock);
	if (--dev->refcnt > 0) {
		pthread_mutex_unlock(&instances_lock);
		return;
	}
	for (pp = &instances; *pp; pp = &(*pp)->next) {
		if (*pp == dev) {
			*pp = dev->next;
			break;
		}
	}
	pthread_mutex_unlock(&instances_lock);
	urxe_dev_transport_fini(dev);
	urxe_iface_watch_close(dev->link);
	free(dev->asyncs);
	/* Detached before the slot goes: the next claimant zeroes the record. */
	urxe_stats_detach(dev->stats);
	urxe_slot_release(&dev->slot);
	pthread_mutex_destroy(&dev->xrc_lock);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

/*
 * Unloading.  Nothing else runs in the library now (the caller is
 * dlclose(): an application thread still in a verb would crash anyway
 * when the code goes), so the lists are walked without their locks: the
 * engine threads being stopped may take them.
 */
void urxe_dev_unload_begin(void)
{
	struct urxe_dev *dev;

	for (dev = instances; dev; dev = dev->next)
		if (!dev->dead)	/* a fork child's: the thread is the parent's */
			urxe_engine_thread_stop(dev->eng);
	for (dev = instances; dev; dev = dev->next) {
		while (dev->channels)
			urxe_channel_release(dev->channels);
		while (dev->xrcds)
			urxe_xrcd_release(dev->xrcds);
	}
	urxe_xrc_unload();
}

void urxe_dev_exit_acks(void)
{
	struct urxe_dev *dev;

	pthread_mutex_lock(&instances_lock);
	for (dev = instances; dev; dev = dev->next)
		if (!dev->dead && dev->eng)
			urxe_engine_exit_acks(dev->eng);
	pthread_mutex_unlock(&instances_lock);
}

/* Instances the contexts' closing left: none, unless refcounts leaked. */
void urxe_dev_unload_end(void)
{
	while (instances) {
		instances->refcnt = 1;
		urxe_dev_put(instances);
	}
}

void urxe_dev_after_fork_child(void)
{
	struct urxe_dev *dev;

	/*
	 * Only the forking thread survives: locks may be held by threads that
	 * no longer exist, so re-initialise rather than take them.  The slot
	 * lock stays with the parent (the description is shared); the child
	 * just forgets its copy of the descriptor.
	 */
	pthread_mutex_init(&instances_lock, NULL);
	urxe_xrc_after_fork_child();
	urxe_mcast_after_fork_child();
	urxe_import_after_fork_child();
	for (dev = instances; dev; dev = dev->next) {
		pthread_mutex_init(&dev->lock, NULL);
		pthread_mutex_init(&dev->bind_lock, NULL);
		pthread_mutex_init(&dev->xrc_lock, NULL);
		/* Our copies only: the parent's claim stays. */
		urxe_slot_release(&dev->slot);
		/* The counters are the parent's: nothing here may add to them. */
		urxe_stats_forget(dev->stats);
		/* The parent owns the sockets; the engine thread stayed there. */
		urxe_dp_forget(dev->dp);
		/* Our copies of its netlink sockets (flow.c): nothing asks. */
		urxe_dev_flow_free(dev);
		dev->dead = true;
	}
}

int urxe_dev_query_device(struct urxe_dev *dev, struct ibv_device_attr_ex *attr)
{
	struct ibv_device_attr *a = &attr->orig_attr;
	long page = sysconf(_SC_PAGESIZE);

	memset(attr, 0, sizeof(*attr));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", URXE_FW_VERSION);
	pthread_mutex_lock(&dev->lock);
	a->node_guid = dev->node_guid;
	pthread_mutex_unlock(&dev->lock);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	/* Any multiple of the system page size up to 2 GiB, as kernel rxe. */
	a->page_size_cap = 0xfffff000u & ~((uint64_t)page - 1);
	a->vendor_id = URXE_VENDOR_ID;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = 1 << URXE_QPN_INDEX_BITS;
	a->max_qp_wr = URXE_MAX_QP_WR;
	/*
	 * Only what works: the responder sends RNR NAKs (IBA 9.7.5.2.8),
	 * SRQs resize (ibv_modify_srq(3)), memory windows of types 1 and 2B
	 * (as kernel rxe), port events, XRC (IBA annex A14: XRC domains,
	 * SRQs, INI and TGT QPs).  Not AUTO_PATH_MIG: bits come as the
	 * features land.
	 */
	a->device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SRQ_RESIZE |
			      IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_XRC;
	/* The kernel's 64-bit flags: the same bits, none above 31 yet. */
	attr->device_cap_flags_ex = a->device_cap_flags;
	a->max_sge = URXE_MAX_SGE;
	a->max_sge_rd = URXE_MAX_SGE;
	a->max_cq = URXE_MAX_CQ;
	a->max_cqe = URXE_MAX_CQE;
	a->max_mr = URXE_MAX_MR;
	a->max_mw = URXE_MAX_MR;	/* windows share the key table */
	a->max_pd = URXE_MAX_PD;
	a->max_qp_rd_atom = URXE_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = URXE_MAX_RD_ATOM;
	a->max_res_rd_atom = URXE_MAX_RD_ATOM * a->max_qp;
	/*
	 * The responder executes atomics with the CPU's atomic instructions
	 * under the engine's progress lock: atomic against every atomic
	 * through this device.  Only HCA is promised, as by kernel rxe.
	 */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mcast_grp = URXE_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = URXE_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = URXE_MAX_MCAST_GRP * URXE_MAX_MCAST_QP_ATTACH;
	a->max_ah = URXE_MAX_AH;
	a->max_srq = 1 << URXE_QPN_INDEX_BITS;
	a->max_srq_wr = URXE_MAX_QP_WR;
	a->max_srq_sge = URXE_MAX_SGE;
	a->max_pkeys = URXE_PKEY_TBL_LEN;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	attr->phys_port_cnt_ex = 1;
	return 0;
}

static int check_port(uint32_t port)
{
	return port == 1 ? 0 : -EINVAL;
}

int urxe_dev_query_port(struct urxe_dev *dev, uint32_t port,
			struct ibv_port_attr *attr)
{
	unsigned int ib_mtu;
	bool active;
	int rc;

	rc = check_port(port);
	if (rc)
		return rc;
	pthread_mutex_lock(&dev->lock);
	if (!dev->dead)
		refresh_locked(dev);	/* on failure: the last known state */
	active = !dev->dead && dev->iface.up && dev->iface.running;
	ib_mtu = urxe_mtu_for_link(dev->iface.mtu);
	pthread_mutex_unlock(&dev->lock);

	memset(attr, 0, sizeof(*attr));
	attr->state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->phys_state = active ? 5 /* LinkUp */ : 3 /* Disabled */;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = ib_mtu ? (enum ibv_mtu)urxe_mtu_to_enum(ib_mtu)
				  : IBV_MTU_256;
	attr->gid_tbl_len = URXE_GID_TBL_LEN;
	attr->port_cap_flags = IBV_PORT_CM_SUP;
	attr->max_msg_sz = URXE_MAX_MSG_SZ;
	attr->pkey_tbl_len = URXE_PKEY_TBL_LEN;
	attr->max_vl_num = 1;
	attr->active_width = 2;	/* 4X (IBA 14.2.5.6 PortInfo) */
	attr->active_speed = 32;	/* EDR: 4X EDR = 100 Gb/s */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	attr->flags = IBV_QPF_GRH_REQUIRED;	/* RoCE: every path needs a GRH */
	return 0;
}

int urxe_dev_query_gid(struct urxe_dev *dev, uint32_t port, uint32_t index,
		       union ibv_gid *gid)
{
	static const union ibv_gid zero;
	int rc;

	rc = check_port(port);
	if (rc)
		return rc;
	if (index >= URXE_GID_TBL_LEN)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	*gid = dev->gids[index];
	pthread_mutex_unlock(&dev->lock);
	return memcmp(gid, &zero, sizeof(zero)) ? 0 : -ENODATA;
}

size_t urxe_dev_gid_hint(struct urxe_dev *dev, char *buf, size_t buflen)
{
	union ibv_gid tbl[URXE_GID_TBL_LEN];

	pthread_mutex_lock(&dev->lock);
	memcpy(tbl, dev->gids, sizeof(tbl));
	pthread_mutex_unlock(&dev->lock);
	return urxe_gid_hint(tbl, URXE_GID_TBL_LEN, buf, buflen);
}

int urxe_dev_query_gid_user(struct urxe_dev *dev, uint32_t port,
			    uint32_t index, union ibv_gid *gid, bool remember)
{
	int rc = urxe_dev_query_gid(dev, port, index, gid);
	char hint[256];

	/*
	 * Empty entries inside the table are read by every program that
	 * scans it (perftest picks its GID so): only remembered.  Past the
	 * table is a mistake, said at once.
	 */
	if (rc == -ENODATA && remember)
		atomic_store(&dev->gid_empty_read, index + 1);
	if (rc == -EINVAL && port == 1 && urxe_log_enabled(URXE_LOG_WARN)) {
		urxe_dev_gid_hint(dev, hint, sizeof(hint));
		urxe_warn_rl("%s: GID index %u does not exist %s", dev->desc.name,
			     index, hint);
	}
	return rc;
}

int urxe_dev_query_pkey(struct urxe_dev *dev, uint32_t port, uint16_t index,
			uint16_t *pkey)
{
	int rc;

	(void)dev;	/* one P_Key, the default, on every device */
	rc = check_port(port);
	if (rc)
		return rc;
	if (index >= URXE_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = htobe16(URXE_DEFAULT_PKEY);
	return 0;
}
