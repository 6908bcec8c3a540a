// SPDX-License-Identifier: BSD-2-Clause
/*
 * Access to registered memory: scatter/gather through local keys and
 * checks of remote keys.  Every access names a key, the PD the QP belongs
 * to, a range in the key's address space (its iova) and the rights it
 * needs; the key table holds a reference for the duration.
 */
#include <errno.h>
#include <string.h>

#include "engine_int.h"

/* Is [va, va + len) inside @m, with @access allowed and the same PD? */
static bool mem_allows(const struct urxe_mem *m, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access)
{
	if (m->pd != pd || (m->access & access) != access)
		return false;
	if (va < m->iova || len > m->length || va - m->iova > m->length - len)
		return false;
	return true;
}

/*
 * A window grants access while bound (length 0: not bound), a type 2
 * one only to the QP it is bound to (IBA 10.6.7.2.2; kernel rxe's
 * rxe_lookup_mw).  Its range and rights are checked as a region's; the
 * region under it allowed them when it was bound and cannot go meanwhile.
 */
static bool mw_usable(const struct urxe_mem *m, uint32_t qpn)
{
	return m->length && (m->mw_type == 1 || m->qpn == qpn);
}

int urxe_mem_remote(const struct urxe_eqp *qp, uint32_t rkey,
		    uint64_t va, uint64_t len, unsigned int access,
		    struct urxe_mem **out, uint8_t **ptr)
{
	struct urxe_mem *m;

	m = urxe_mem_get(qp->eng, rkey, true);
	if (!m)
		return -EACCES;
	if ((m->mw_type && !mw_usable(m, qp->qpn)) ||
	    !mem_allows(m, qp->pd, va, len, access)) {
		urxe_mem_put(m);
		return -EACCES;
	}
	*out = m;
	*ptr = m->addr + (va - m->iova);
	return 0;
}

/*
 * Walks @len bytes of the SGE list from byte @off, calling @fn on each
 * contiguous piece (progress lock held: the regions are borrowed).
 * Returns 0 or -EACCES for a bad key, range or right.
 */
static int sge_walk(struct urxe_engine *eng, uint32_t pd,
		    const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		    uint32_t len, unsigned int access,
		    void (*fn)(uint8_t *mem, uint8_t *buf, uint32_t n),
		    uint8_t *buf)
{
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		struct urxe_mem *m;
		uint32_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len)
			n = len;
		if (!n)
			continue;
		m = urxe_mem_borrow(eng, sge[i].lkey);
		if (!m || !mem_allows(m, pd, sge[i].addr + off, n, access))
			return -EACCES;
		fn(m->addr + (sge[i].addr + off - m->iova), buf, n);
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -EINVAL : 0;
}

static void copy_from_mem(uint8_t *mem, uint8_t *buf, uint32_t n)
{
	memcpy(buf, mem, n);
}

static void copy_to_mem(uint8_t *mem, uint8_t *buf, uint32_t n)
{
	memcpy(mem, buf, n);
}

int urxe_sge_copy_out(struct urxe_engine *eng, uint32_t pd,
		      const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		      void *dst, uint32_t len)
{
	return sge_walk(eng, pd, sge, nsge, off, len, 0, copy_from_mem, dst);
}

int urxe_sge_pieces(struct urxe_engine *eng, uint32_t pd,
		    const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		    uint32_t len, struct urxe_tx_piece *p, unsigned int max)
{
	unsigned int n = 0, k;
	uint32_t i;
	int rc = 0;

	for (i = 0; i < nsge && len; i++) {
		struct urxe_mem *m;
		uint32_t c;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		c = sge[i].length - off < len ? sge[i].length - off : len;
		if (!c)
			continue;
		if (n == max) {
			rc = -E2BIG;
			break;
		}
		m = urxe_mem_get(eng, sge[i].lkey, false);
		if (!m) {
			rc = -EACCES;
			break;
		}
		if (!mem_allows(m, pd, sge[i].addr + off, c, 0)) {
			urxe_mem_put(m);
			rc = -EACCES;
			break;
		}
		p[n].addr = m->addr + (sge[i].addr + off - m->iova);
		p[n].len = c;
		p[n].mem = m;
		n++;
		len -= c;
		off = 0;
	}
	if (!rc && len)
		rc = -EACCES;		/* the SGEs are shorter than the message */
	if (rc) {
		for (k = 0; k < n; k++)
			urxe_mem_put(p[k].mem);
		return rc;
	}
	return (int)n;
}

int urxe_sge_copy_in(struct urxe_engine *eng, uint32_t pd,
		     const struct urxe_sge *sge, uint32_t nsge, uint32_t off,
		     const void *src, uint32_t len)
{
	return sge_walk(eng, pd, sge, nsge, off, len, IBV_ACCESS_LOCAL_WRITE,
			copy_to_mem, (uint8_t *)src);
}
