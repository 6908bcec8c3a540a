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
 *
 * The parser is strict — an unknown key, a bad number, an empty token, a
 * key given twice refuse the whole spec with a reason naming the token —
 * because a misspelt spec that injected nothing would let a "lossy" test
 * pass on a perfect wire.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
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

/* The keys, in the order the error message lists them. */
static const char *const keys[] = {
	"drop", "dup", "reorder", "corrupt", "seed", "limit",
};
#define KNOWN "known: drop, dup, reorder, corrupt (probabilities in [0, 1]), seed, limit (integers)"

/* Writes the reason a spec is refused into @why (if any); -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A probability: a plain decimal in [0, 1] (no NaN, no inf, no hex). */
static bool parse_prob(const char *v, double *out)
{
	char *end;
	double p;

	if (!*v || strspn(v, "0123456789.eE+-") != strlen(v))
		return false;
	p = strtod(v, &end);
	if (end == v || *end || !(p >= 0 && p <= 1))
		return false;
	*out = p;
	return true;
}

static bool parse_u64(const char *v, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 0);
	return *v >= '0' && *v <= '9' && !*end && !errno;
}

/* One "key=value" token into @conf; @seen: the keys given so far. */
static int parse_token(char *tok, struct urxe_faults_conf *conf,
		       unsigned int *seen, char *why, size_t len)
{
	double *probs[] = { &conf->drop, &conf->dup, &conf->reorder,
			    &conf->corrupt };
	uint64_t *ints[] = { &conf->seed, &conf->limit };
	char *eq = strchr(tok, '=');
	unsigned int k;

	if (!eq)
		return refuse(why, len, "token \"%s\" is not key=value (" KNOWN ")",
			      tok);
	*eq = '\0';
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (!strcmp(tok, keys[k]))
			break;
	if (k == sizeof(keys) / sizeof(keys[0]))
		return refuse(why, len, "unknown token \"%s=%s\" (" KNOWN ")",
			      tok, eq + 1);
	if (*seen & 1u << k)
		return refuse(why, len, "\"%s\" given twice", tok);
	*seen |= 1u << k;
	if (k < 4 && !parse_prob(eq + 1, probs[k]))
		return refuse(why, len, "bad token \"%s=%s\": %s is a probability in [0, 1]",
			      tok, eq + 1, tok);
	if (k >= 4 && !parse_u64(eq + 1, ints[k - 4]))
		return refuse(why, len, "bad token \"%s=%s\": %s is an integer in [0, 2^64)",
			      tok, eq + 1, tok);
	return 0;
}

int urxe_faults_parse(const char *spec, struct urxe_faults_conf *conf,
		      char *why, size_t len)
{
	char buf[256], *tok, *next;
	unsigned int seen = 0;
	int rc;

	memset(conf, 0, sizeof(*conf));
	if (why && len)
		why[0] = '\0';
	if (!spec || !*spec)
		return refuse(why, len, "empty (" KNOWN ")");
	if (strlen(spec) >= sizeof(buf))
		return refuse(why, len, "longer than %zu characters",
			      sizeof(buf) - 1);
	strcpy(buf, spec);
	/* Every token counts: an empty one (",,", a trailing comma) too. */
	for (tok = buf; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok)
			return refuse(why, len, "empty token in \"%s\"", spec);
		rc = parse_token(tok, conf, &seen, why, len);
		if (rc)
			return rc;
	}
	if (conf->drop + conf->dup + conf->reorder + conf->corrupt > 1)
		return refuse(why, len, "drop + dup + reorder + corrupt = %g, more than 1",
			      conf->drop + conf->dup + conf->reorder +
			      conf->corrupt);
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
