// SPDX-License-Identifier: BSD-2-Clause
/*
 * Sharing objects between contexts: ibv_import_pd(3) and ibv_import_mr(3)
 * (core/import.c has ibv_import_device).  Without a kernel only contexts
 * of one process can share, and they already share the device instance,
 * its engine and key table: an imported PD is a second handle object
 * with the same PD handle (the number key checks compare), an imported
 * MR a second ibv_mr with the original's keys.  The registry below lists
 * the PDs and MRs an import may name; it is consulted only by imports,
 * so its lock is never on the data path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <urxe/log.h>
#include <urxe/provider.h>

#include "provider_int.h"

struct reg {
	void **v;
	size_t n, cap;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

/* In a fork()ed child: whoever held it did not come along. */
void urxe_import_after_fork_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
}
static struct reg pds, mrs;
/* Imported PDs unimported while objects still used them. */
static struct reg parked;

/* reg_lock held.  A failed allocation only makes the object unimportable. */
static void reg_add(struct reg *r, void *p)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		void **v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			urxe_warn("import registry: out of memory");
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = p;
}

static void reg_del(struct reg *r, void *p)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->v[i] == p) {
			r->v[i] = r->v[--r->n];
			return;
		}
}

void urxe_import_add_pd(struct urxe_pd *pd)
{
	pthread_mutex_lock(&reg_lock);
	reg_add(&pds, pd);
	pthread_mutex_unlock(&reg_lock);
}

void urxe_import_del_pd(struct urxe_pd *pd)
{
	pthread_mutex_lock(&reg_lock);
	reg_del(&pds, pd);
	pthread_mutex_unlock(&reg_lock);
}

void urxe_import_add_mr(struct urxe_mr *mr)
{
	pthread_mutex_lock(&reg_lock);
	reg_add(&mrs, mr);
	pthread_mutex_unlock(&reg_lock);
}

void urxe_import_del_mr(struct urxe_mr *mr)
{
	pthread_mutex_lock(&reg_lock);
	reg_del(&mrs, mr);
	pthread_mutex_unlock(&reg_lock);
}

int urxe_pd_import(struct urxe_dev *dev, struct ibv_context *ctx,
		   uint32_t handle, struct ibv_pd **out)
{
	struct urxe_pd *pd = NULL, *orig;
	size_t i;
	int rc = -ENOENT;

	if (dev->dead)
		return -EIO;
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < pds.n; i++) {
		orig = pds.v[i];
		if (orig->ibv.handle != handle || orig->dev != dev)
			continue;
		pd = calloc(1, sizeof(*pd));
		rc = pd ? 0 : -ENOMEM;
		break;
	}
	pthread_mutex_unlock(&reg_lock);
	if (rc) {
		if (rc == -ENOENT)
			urxe_dbg("ibv_import_pd: no PD %u on %s", handle,
				 dev->desc.name);
		return rc;
	}
	pd->ibv.context = ctx;
	pd->ibv.handle = handle;
	pd->dev = dev;
	pd->imported = true;
	atomic_init(&pd->users, 0);
	*out = &pd->ibv;
	return 0;
}

/*
 * The handle object goes; objects made on it keep a pointer to it
 * (pyverbs closes them right after unimporting): those park it until
 * its context closes.
 */
void urxe_pd_unimport(struct ibv_pd *ibpd)
{
	struct urxe_pd *pd = to_upd(ibpd);

	if (atomic_load(&pd->users) == 0) {
		free(pd);
		return;
	}
	pthread_mutex_lock(&reg_lock);
	reg_add(&parked, pd);
	pthread_mutex_unlock(&reg_lock);
}

void urxe_pd_release_imports(struct ibv_context *ctx)
{
	struct urxe_pd *pd;
	size_t i = 0;

	pthread_mutex_lock(&reg_lock);
	while (i < parked.n) {
		pd = parked.v[i];
		if (pd->ibv.context != ctx) {
			i++;
			continue;
		}
		if (atomic_load(&pd->users))
			urxe_warn("closing a context whose unimported PD %u is still used",
				  pd->ibv.handle);
		parked.v[i] = parked.v[--parked.n];
		free(pd);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* reg_lock held: the live MR @handle names on @dev, or NULL. */
static struct urxe_mr *find_mr(struct urxe_dev *dev, uint32_t handle)
{
	struct urxe_mr *mr;
	size_t i;

	for (i = 0; i < mrs.n; i++) {
		mr = mrs.v[i];
		if (mr->ibv.handle == handle && mr->dev == dev && mr->published)
			return mr;
	}
	return NULL;
}

int urxe_mr_import(struct ibv_pd *ibpd, uint32_t handle, struct ibv_mr **out)
{
	struct urxe_pd *pd = to_upd(ibpd);
	struct urxe_mr *mr, *orig;
	int rc = 0;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	pthread_mutex_lock(&reg_lock);
	orig = find_mr(pd->dev, handle);
	if (!orig)
		rc = -ENOENT;
	else if (orig->ibv.pd->handle != ibpd->handle)
		rc = -EINVAL;		/* the MR belongs to another PD */
	else
		mr->ibv = orig->ibv;	/* keys, address, length */
	pthread_mutex_unlock(&reg_lock);
	if (rc) {
		urxe_dbg("ibv_import_mr: MR %u: %s", handle,
			 rc == -ENOENT ? "no such MR" : "not of this PD");
		free(mr);
		return rc;
	}
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->dev = pd->dev;
	mr->pd = pd;
	mr->imported = true;
	atomic_fetch_add(&pd->users, 1);
	*out = &mr->ibv;
	return 0;
}

void urxe_mr_unimport(struct ibv_mr *ibmr)
{
	struct urxe_mr *mr = to_umr(ibmr);

	atomic_fetch_sub(&mr->pd->users, 1);
	free(mr);
}
