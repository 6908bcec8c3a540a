// SPDX-License-Identifier: BSD-2-Clause
/*
 * URXE_FAULTS=drop=P,dup=P,reorder=P,corrupt=P,seed=N,limit=N: fault
 * injection on RoCE packets.  Each decision is a hash of (seed, QPN, PSN,
 * opcode, direction, occurrence) — occurrence counts how often that very
 * packet was seen, so a retransmission gets a fresh decision — and so a
 * run is reproducible whichever thread sends.  With limit=N the injector
 * falls silent after its Nth fault: a program that exits as soon as its
 * own work is done (ibv_rc_pingpong) cannot answer a retransmission of its
 * peer's last message, so a test of it wants a clean tail.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/log.h>
#include <urxe/netdev.h>

#define OCC_SLOTS 65536
#define OCC_PROBES 16

struct occ {
	uint64_t key;
	uint32_t count;
};

struct urxe_faults {
	struct urxe_faults_conf conf;
	pthread_mutex_t lock;
	unsigned int evict;
	uint64_t injected;	/* faults so far, under lock */
	struct occ occ[OCC_SLOTS];
};

static int parse_prob(const char *v, double *out)
{
	char *end;
	double p = strtod(v, &end);

	if (end == v || *end || p < 0 || p > 1)
		return -EINVAL;
	*out = p;
	return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 0);
	return *v && *v != '-' && !*end && !errno ? 0 : -EINVAL;
}

int urxe_faults_parse(const char *spec, struct urxe_faults_conf *conf)
{
	char buf[256], *tok, *save = NULL;

	memset(conf, 0, sizeof(*conf));
	if (!spec || strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int rc = 0;

		if (!eq)
			return -EINVAL;
		*eq++ = '\0';
		if (!strcmp(tok, "drop"))
			rc = parse_prob(eq, &conf->drop);
		else if (!strcmp(tok, "dup"))
			rc = parse_prob(eq, &conf->dup);
		else if (!strcmp(tok, "reorder"))
			rc = parse_prob(eq, &conf->reorder);
		else if (!strcmp(tok, "corrupt"))
			rc = parse_prob(eq, &conf->corrupt);
		else if (!strcmp(tok, "seed"))
			rc = parse_u64(eq, &conf->seed);
		else if (!strcmp(tok, "limit"))
			rc = parse_u64(eq, &conf->limit);
		else
			rc = -EINVAL;
		if (rc)
			return rc;
	}
	if (conf->drop + conf->dup + conf->reorder + conf->corrupt > 1)
		return -EINVAL;
	return 0;
}

int urxe_faults_create(const struct urxe_faults_conf *conf,
		       struct urxe_faults **out)
{
	struct urxe_faults *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->conf = *conf;
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

void urxe_faults_destroy(struct urxe_faults *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* splitmix64: a good 64-bit mix for a hash of a few fields. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint32_t occurrence(struct urxe_faults *f, uint64_t key)
{
	struct occ *o;
	uint32_t n;

	uint64_t h = mix(key);
	unsigned int i;

	/*
	 * Two packets sharing a slot must not reset each other's count: a
	 * packet whose count kept restarting would meet the same fate on
	 * every retransmission, for ever.  So probe; evict only when the
	 * whole neighbourhood is taken (a stale entry, long retired).
	 */
	pthread_mutex_lock(&f->lock);
	for (i = 0; i < OCC_PROBES; i++) {
		o = &f->occ[(h + i) % OCC_SLOTS];
		if (o->key == key || !o->count)
			break;
	}
	if (i == OCC_PROBES) {
		o = &f->occ[(h + f->evict++ % OCC_PROBES) % OCC_SLOTS];
		o->count = 0;
	}
	if (o->key != key) {
		o->key = key;
		o->count = 0;
	}
	n = o->count++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* FAULT, unless the limit is spent: then none, for good. */
static enum urxe_fault spend(struct urxe_faults *f, enum urxe_fault fault)
{
	bool ok;

	if (!f->conf.limit)
		return fault;
	pthread_mutex_lock(&f->lock);
	ok = f->injected < f->conf.limit;
	f->injected += ok;
	pthread_mutex_unlock(&f->lock);
	return ok ? fault : URXE_FAULT_NONE;
}

enum urxe_fault urxe_faults_decide(struct urxe_faults *f, uint32_t qpn,
				   uint32_t psn, uint8_t opcode, bool rx)
{
	uint64_t key, h;
	double r;

	if (!f)
		return URXE_FAULT_NONE;
	key = (uint64_t)qpn << 40 ^ (uint64_t)psn << 16 ^ (uint64_t)opcode << 1 ^
	      (rx ? 1 : 0);
	h = mix(f->conf.seed ^ mix(key) ^ mix(occurrence(f, key) + 0x51ed27u));
	r = (double)(h >> 11) / (double)(1ull << 53);
	if (r < f->conf.drop)
		return spend(f, URXE_FAULT_DROP);
	r -= f->conf.drop;
	if (r < f->conf.dup)
		return spend(f, URXE_FAULT_DUP);
	r -= f->conf.dup;
	if (r < f->conf.reorder)
		return spend(f, URXE_FAULT_REORDER);
	r -= f->conf.reorder;
	if (r < f->conf.corrupt)
		return spend(f, URXE_FAULT_CORRUPT);
	return URXE_FAULT_NONE;
}
