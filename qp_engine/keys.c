// SPDX-License-Identifier: BSD-2-Clause
/*
 * The key table: memory regions and windows by key (add, remove, get,
 * put, borrow), and how keys are made from table indexes.
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine_int.h"

/*
 * A key's low byte is free: a region's is random, a window's is the
 * consumer's once bound (ibv_inc_rkey(3)).  Its upper 24 bits name the
 * table entry: the entry's index (18 bits) and a count of the keys handed
 * out so far (6 bits, so that a reused entry gets another key), put
 * through a permutation of the 24-bit values: a Feistel network whose
 * round keys come from getrandom() when the engine starts.  Nobody who
 * does not know them -- another process, another user of this host,
 * another host -- can tell one key from the next or guess a live one
 * better than by chance (24 bits of a window's key, 32 of a region's),
 * yet the index comes back with one inverse, no search.  Kernel rxe's
 * keys are a counted index and 8 random bits.
 */
static uint64_t key_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void urxe_keys_seed(struct urxe_engine *eng, uint64_t seed)
{
	uint64_t r[URXE_KEY_ROUNDS / 2 + 1];
	unsigned int i;

	if (!seed) {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
			struct timespec ts;

			/* No getrandom (seccomp): what differs from run to run. */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
			       (uint64_t)getpid() << 16 ^ (uintptr_t)eng;
			for (i = 0; i < URXE_KEY_ROUNDS / 2 + 1; i++)
				r[i] = key_mix(seed + i);
		}
	} else {
		for (i = 0; i < URXE_KEY_ROUNDS / 2 + 1; i++)
			r[i] = key_mix(seed + i);
	}
	for (i = 0; i < URXE_KEY_ROUNDS; i++)
		eng->keyt.key_secret[i] = (uint32_t)(r[i / 2] >> (i % 2 * 32));
	eng->keyt.key_rng = r[URXE_KEY_ROUNDS / 2] | 1;
	eng->keyt.key_count = (uint32_t)(r[0] ^ r[1] >> 7);
}

static uint32_t key_round(uint32_t x, uint32_t k)
{
	x = (x ^ k) * 0x9e3779b1u;
	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return x & 0xfff;
}

/* The permutation of 24-bit values, and its inverse. */
static uint32_t key_permute(const struct urxe_engine *eng, uint32_t v)
{
	uint32_t l = v >> 12, r = v & 0xfff, t;
	unsigned int i;

	for (i = 0; i < URXE_KEY_ROUNDS; i++) {
		t = r;
		r = l ^ key_round(r, eng->keyt.key_secret[i]);
		l = t;
	}
	return l << 12 | r;
}

static uint32_t key_unpermute(const struct urxe_engine *eng, uint32_t v)
{
	uint32_t l = v >> 12, r = v & 0xfff, t;
	unsigned int i;

	for (i = URXE_KEY_ROUNDS; i-- > 0;) {
		t = l;
		l = r ^ key_round(l, eng->keyt.key_secret[i]);
		r = t;
	}
	return l << 12 | r;
}

/* The table index key @key names: 0 (none) or below URXE_KEY_SLOTS. */
static uint32_t key_index(const struct urxe_engine *eng, uint32_t key)
{
	return key_unpermute(eng, key >> 8) >> 6;
}

int urxe_engine_mem_add(struct urxe_engine *eng, struct urxe_mem *mem)
{
	uint32_t i, idx;

	pthread_spin_lock(&eng->keyt.key_lock);
	for (i = 0; i < URXE_KEY_SLOTS - 1; i++) {
		idx = eng->keyt.key_next;
		eng->keyt.key_next = eng->keyt.key_next + 1 < URXE_KEY_SLOTS ?
				eng->keyt.key_next + 1 : 1;
		if (!eng->keyt.keys[idx])
			break;
	}
	if (i == URXE_KEY_SLOTS - 1) {
		pthread_spin_unlock(&eng->keyt.key_lock);
		return -ENOMEM;
	}
	eng->keyt.key_count++;
	eng->keyt.key_rng ^= eng->keyt.key_rng << 13;	/* xorshift64 */
	eng->keyt.key_rng ^= eng->keyt.key_rng >> 7;
	eng->keyt.key_rng ^= eng->keyt.key_rng << 17;
	mem->lkey = key_permute(eng,
				idx << 6 | (eng->keyt.key_count & 63)) << 8 |
		    (uint32_t)(key_mix(eng->keyt.key_rng) & 0xff);
	mem->rkey = mem->lkey;
	atomic_store(&mem->refs, 1);
	/* Published whole: urxe_mem_borrow() reads without the lock. */
	__atomic_store_n(&eng->keyt.keys[idx], mem, __ATOMIC_RELEASE);
	pthread_spin_unlock(&eng->keyt.key_lock);
	return (int)idx;
}

uint32_t urxe_engine_key_index(const struct urxe_engine *eng, uint32_t key)
{
	return key_index(eng, key);
}

/*
 * Under the progress lock as well: its holder may be using the region
 * through urxe_mem_borrow(), which takes no reference.
 */
int urxe_engine_mem_remove(struct urxe_engine *eng, struct urxe_mem *mem)
{
	uint32_t idx = key_index(eng, mem->lkey);
	int rc = 0;

	pthread_mutex_lock(&eng->lock);
	pthread_spin_lock(&eng->keyt.key_lock);
	if (atomic_load(&mem->refs) > 1)
		rc = -EBUSY;
	else if (idx < URXE_KEY_SLOTS && eng->keyt.keys[idx] == mem)
		__atomic_store_n(&eng->keyt.keys[idx], NULL, __ATOMIC_RELAXED);
	pthread_spin_unlock(&eng->keyt.key_lock);
	pthread_mutex_unlock(&eng->lock);
	return rc;
}

struct urxe_mem *urxe_mem_borrow(struct urxe_engine *eng, uint32_t lkey)
{
	uint32_t idx = key_index(eng, lkey);
	struct urxe_mem *m;

	if (idx == 0)
		return NULL;
	m = __atomic_load_n(&eng->keyt.keys[idx], __ATOMIC_ACQUIRE);
	/* A memory window has no local key (IBA 10.6.7). */
	return m && m->lkey == lkey && !m->mw_type ? m : NULL;
}

struct urxe_mem *urxe_mem_get(struct urxe_engine *eng, uint32_t key,
			      bool remote)
{
	uint32_t idx = key_index(eng, key);
	struct urxe_mem *m = NULL;

	if (idx == 0)
		return NULL;
	pthread_spin_lock(&eng->keyt.key_lock);
	m = eng->keyt.keys[idx];
	/* A memory window has no local key (IBA 10.6.7). */
	if (m && (remote ? m->rkey == key : m->lkey == key && !m->mw_type))
		atomic_fetch_add(&m->refs, 1);
	else
		m = NULL;
	pthread_spin_unlock(&eng->keyt.key_lock);
	return m;
}

void urxe_mem_put(struct urxe_mem *mem)
{
	atomic_fetch_sub(&mem->refs, 1);
}
