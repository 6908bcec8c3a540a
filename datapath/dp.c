// SPDX-License-Identifier: BSD-2-Clause
/*
 * A device's data path: the backend the provider chose, opened with the
 * debugging knobs that act on its traffic — URXE_FAULTS (its injector;
 * the spec was checked when the device opened) and URXE_PCAP (its
 * capture) — and the few questions the layers above ask it (descriptors,
 * source ports, budget).  The pipelines are dp_tx.c and dp_rx.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>

#include "dp_int.h"

/*
 * URXE_FAULTS and URXE_PCAP.  A capture that cannot be written is
 * reported and left out: the program runs as it would without it.
 */
static void debug_knobs(struct urxe_dp *dp)
{
	const char *pcap = getenv("URXE_PCAP");

	if (dp_faults_start(dp, dp->faults_conf))
		urxe_err("%s: URXE_FAULTS: out of memory: injecting nothing",
			 dp->name);
	if (pcap && *pcap)
		urxe_capture_open(pcap, dp->ifc->mac, &dp->cap);
}

static void debug_knobs_undo(struct urxe_dp *dp)
{
	urxe_capture_close(dp->cap);
	dp->cap = NULL;
	dp_faults_stop(dp);
}

int urxe_dp_create(const struct urxe_dp_conf *conf, struct urxe_dp **out)
{
	struct urxe_dp *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return -ENOMEM;
	dp->ops = conf->backend;
	dp->name = conf->name;
	dp->rundir = conf->rundir;
	dp->ifc = conf->ifc;
	dp->slot = conf->slot;
	dp->addr_index = conf->addr_index;
	dp->faults_conf = conf->faults;
	dp->stats = conf->stats;
	dp->sink = conf->sink;
	*out = dp;
	return 0;
}

bool urxe_dp_bound(const struct urxe_dp *dp)
{
	return dp && dp->b;
}

int urxe_dp_bind(struct urxe_dp *dp)
{
	const char *gso = getenv("URXE_GSO");
	struct urxe_backend_conf bc = {
		.ifc = dp->ifc, .slot = dp->slot,
		.lo_addr = urxe_slot_loopback_addr(dp->addr_index),
	};
	int rc;

	debug_knobs(dp);
	/*
	 * URXE_GSO=0: one frame per packet both ways, as a packet capture
	 * on the interface wants.  Fault injection decides per packet,
	 * after any batching: no GSO with it either.
	 */
	bc.gso = !(gso && !strcmp(gso, "0")) && !dp->faults;
	/*
	 * Connected udp transmit sockets number their IPv4 IDs from a
	 * counter; a capture writes each packet's header with the ID the
	 * engine's ICRC assumed: with one, they stay unconnected.  So they
	 * do without GSO: a datagram with checksum 0 must carry an ID a
	 * receiver can predict (0), as it cannot tell a restart from a
	 * corruption there (docs/design.md, "Wire").
	 */
	bc.connect = !dp->cap && bc.gso;
	rc = dp->ops->open(&bc, &dp->b);
	if (rc) {
		dp->b = NULL;
		debug_knobs_undo(dp);
		return rc;
	}
	dp->gso = bc.gso && dp->ops->gso(dp->b);
	dp->lo_copies = dp->ifc->loopback && dp->ops->lo_mcast_copies;
	atomic_store_explicit(&dp->nrx_fds, dp->ops->rx_fds(dp->b, dp->rx_fds),
			      memory_order_release);
	/* A capture writes each packet's IP header: TOS and TTL included. */
	if (dp->cap)
		urxe_dp_want_ip_meta(dp);
	return 0;
}

void urxe_dp_unbind(struct urxe_dp *dp)
{
	atomic_store(&dp->nrx_fds, 0);
	if (dp->b)
		dp->ops->close(dp->b);
	dp->b = NULL;
	debug_knobs_undo(dp);
}

void urxe_dp_close(struct urxe_dp *dp)
{
	if (!dp)
		return;
	if (dp->b)
		dp->ops->close(dp->b);
	/* A fork()ed child's capture is its parent's file. */
	if (!dp->forked)
		urxe_capture_close(dp->cap);
	dp_faults_stop(dp);
	free(dp);
}

void urxe_dp_forget(struct urxe_dp *dp)
{
	if (!dp)
		return;
	atomic_store(&dp->nrx_fds, 0);
	if (dp->b)
		dp->ops->close(dp->b);
	dp->b = NULL;
	dp->forked = true;
}

unsigned int urxe_dp_rx_fds(struct urxe_dp *dp, int *fds)
{
	unsigned int n = dp ? atomic_load_explicit(&dp->nrx_fds,
						   memory_order_acquire) : 0;

	if (n)
		memcpy(fds, dp->rx_fds, n * sizeof(*fds));
	return n;
}

uint16_t urxe_dp_sport(void *priv, uint16_t sport)
{
	struct urxe_dp *dp = priv;

	return dp && dp->b ? dp->ops->sport(dp->b, sport) : sport;
}

unsigned int urxe_dp_budget(struct urxe_dp *dp)
{
	return dp->ops->budget(dp->b);
}

void urxe_dp_want_ip_meta(struct urxe_dp *dp)
{
	int rc;

	/* (the packet backend reads the IP header: always there) */
	if (!dp || !dp->b || !dp->ops->ip_meta ||
	    atomic_exchange(&dp->ip_meta, true))
		return;
	rc = dp->ops->ip_meta(dp->b, true);
	if (rc)
		urxe_warn("%s: UD receives will show TOS and TTL 0: %s",
			  dp->name, strerror(-rc));
}
