// SPDX-License-Identifier: BSD-2-Clause
/*
 * netdev/faults.c: URXE_FAULTS parsing (every key; every bad spec refused
 * with a reason naming the bad token), the
 * decision's repeatability (same seed and packet, same fate; a
 * retransmission decided afresh), its rates, and limit=N: the injector
 * falls silent after its Nth fault.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/netdev.h>

#include "testutil.h"

START_TEST(parse_keys)
{
	struct urxe_faults_conf c;
	char why[256];

	ck_assert_int_eq(urxe_faults_parse("drop=0.05,dup=0.01,reorder=0.02,"
					   "corrupt=0.03,seed=7,limit=150", &c,
					   why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	ck_assert(c.drop == 0.05 && c.dup == 0.01 && c.reorder == 0.02 &&
		  c.corrupt == 0.03);
	ck_assert_uint_eq(c.seed, 7);
	ck_assert_uint_eq(c.limit, 150);
	ck_assert_int_eq(urxe_faults_parse("seed=0x10", &c, NULL, 0), 0);
	ck_assert_uint_eq(c.seed, 16);
	ck_assert_uint_eq(c.limit, 0);
	ck_assert(c.drop == 0);
	ck_assert_int_eq(urxe_faults_parse("drop=1", &c, NULL, 0), 0);
	ck_assert(c.drop == 1);
	ck_assert_int_eq(urxe_faults_parse("corrupt=5e-2,drop=.5", &c, NULL, 0), 0);
	ck_assert(c.corrupt == 0.05 && c.drop == 0.5);
}
END_TEST

/*
 * Every bad spec is refused whole, and the reason names what is wrong:
 * the offending token, or the sum.  (A spec the injector silently
 * ignored would let a "lossy" test pass on a perfect wire.)
 */
static const struct {
	const char *spec;
	const char *why;	/* a piece of the reason */
} bad[] = {
	{ "dorp=0.1", "unknown token \"dorp=0.1\" (known: drop, dup, reorder, corrupt" },
	{ "drop=0.1,dupe=0.01", "unknown token \"dupe=0.01\"" },
	{ "speed=1", "unknown token \"speed=1\"" },
	{ "DROP=0.1", "unknown token \"DROP=0.1\"" },
	{ " drop=0.1", "unknown token \" drop=0.1\"" },
	{ "=1", "unknown token \"=1\"" },
	{ "drop", "token \"drop\" is not key=value" },
	{ "drop=0.1,seed", "token \"seed\" is not key=value" },
	{ "drop=0.1;dup=0.1", "bad token \"drop=0.1;dup=0.1\"" },
	{ "drop=", "bad token \"drop=\": drop is a probability in [0, 1]" },
	{ "drop=x", "bad token \"drop=x\"" },
	{ "drop=-0.1", "bad token \"drop=-0.1\"" },
	{ "drop=1.5", "bad token \"drop=1.5\"" },
	{ "drop=5%", "bad token \"drop=5%\"" },
	{ "drop=nan", "bad token \"drop=nan\"" },
	{ "drop=inf", "bad token \"drop=inf\"" },
	{ "dup=0x0.1p0", "bad token \"dup=0x0.1p0\"" },
	{ "reorder=0.1 ", "bad token \"reorder=0.1 \"" },
	{ "corrupt=1e", "bad token \"corrupt=1e\"" },
	{ "limit=", "bad token \"limit=\": limit is an integer" },
	{ "limit=-1", "bad token \"limit=-1\"" },
	{ "limit=3x", "bad token \"limit=3x\"" },
	{ "limit=0.5", "bad token \"limit=0.5\"" },
	{ "limit=99999999999999999999", "bad token \"limit=99999999999999999999\"" },
	{ "seed=abc", "bad token \"seed=abc\": seed is an integer" },
	{ "drop=0.1,drop=0.2", "\"drop\" given twice" },
	{ "drop=0.1,", "empty token in \"drop=0.1,\"" },
	{ ",drop=0.1", "empty token" },
	{ "drop=0.1,,dup=0.1", "empty token" },
	{ "", "empty" },
	{ "drop=0.6,dup=0.6", "drop + dup + reorder + corrupt = 1.2, more than 1" },
};

START_TEST(parse_bad)
{
	struct urxe_faults_conf c;
	char why[256];

	ck_assert_msg(urxe_faults_parse(bad[_i].spec, &c, why, sizeof(why)) ==
		      -EINVAL, "\"%s\" accepted", bad[_i].spec);
	ck_assert_msg(strstr(why, bad[_i].why), "\"%s\": reason \"%s\", not \"%s\"",
		      bad[_i].spec, why, bad[_i].why);
	/* Without room for a reason, refused all the same. */
	ck_assert_int_eq(urxe_faults_parse(bad[_i].spec, &c, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(parse_null_long)
{
	struct urxe_faults_conf c;
	char why[256], spec[400];

	ck_assert_int_eq(urxe_faults_parse(NULL, &c, why, sizeof(why)), -EINVAL);
	memset(spec, 'd', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = '\0';
	ck_assert_int_eq(urxe_faults_parse(spec, &c, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "longer than"));
	/* A short reason buffer is cut, never overrun. */
	ck_assert_int_eq(urxe_faults_parse("dorp=1", &c, why, 8), -EINVAL);
	ck_assert_uint_eq(strlen(why), 7);
}
END_TEST

static struct urxe_faults *make(const char *spec)
{
	struct urxe_faults_conf c;
	struct urxe_faults *f;

	ck_assert_int_eq(urxe_faults_parse(spec, &c, NULL, 0), 0);
	ck_assert_int_eq(urxe_faults_create(&c, &f), 0);
	return f;
}

START_TEST(repeatable)
{
	struct urxe_faults *a = make("drop=0.3,seed=5");
	struct urxe_faults *b = make("drop=0.3,seed=5");
	struct urxe_faults *c = make("drop=0.3,seed=6");
	unsigned int psn, same = 0, differ = 0;

	for (psn = 0; psn < 2000; psn++) {
		enum urxe_fault fa = urxe_faults_decide(a, 0x4000, psn, 0x04, false);
		enum urxe_fault fb = urxe_faults_decide(b, 0x4000, psn, 0x04, false);
		enum urxe_fault fc = urxe_faults_decide(c, 0x4000, psn, 0x04, false);

		ck_assert_int_eq(fa, fb);
		same += fa == fc;
		differ += fa != fc;
	}
	ck_assert_msg(differ > 200, "seed 6 differs from seed 5 on %u of 2000",
		      differ);
	ck_assert_uint_gt(same, 0);
	urxe_faults_destroy(a);
	urxe_faults_destroy(b);
	urxe_faults_destroy(c);
	ck_assert_int_eq(urxe_faults_decide(NULL, 1, 2, 3, true), URXE_FAULT_NONE);
}
END_TEST

/* A packet dropped once is not dropped for ever: its retransmission is a
 * new occurrence, decided afresh. */
START_TEST(retransmission_fresh)
{
	struct urxe_faults *f = make("drop=0.5,seed=1");
	unsigned int psn, n;

	for (psn = 0; psn < 200; psn++) {
		for (n = 0; n < 64; n++)
			if (urxe_faults_decide(f, 0x4001, psn, 0x06, false) ==
			    URXE_FAULT_NONE)
				break;
		ck_assert_msg(n < 64, "psn %u dropped 64 times in a row", psn);
	}
	urxe_faults_destroy(f);
}
END_TEST

START_TEST(rates)
{
	struct urxe_faults *f = make("drop=0.1,dup=0.05,reorder=0.05,corrupt=0.02,seed=3");
	unsigned int psn, n[5] = { 0 };

	for (psn = 0; psn < 100000; psn++)
		n[urxe_faults_decide(f, 0x8000, psn, 0x0a, psn & 1)]++;
	ck_assert_msg(n[URXE_FAULT_DROP] > 9000 && n[URXE_FAULT_DROP] < 11000,
		      "drops %u", n[URXE_FAULT_DROP]);
	ck_assert_msg(n[URXE_FAULT_DUP] > 4300 && n[URXE_FAULT_DUP] < 5700,
		      "dups %u", n[URXE_FAULT_DUP]);
	ck_assert_msg(n[URXE_FAULT_REORDER] > 4300 && n[URXE_FAULT_REORDER] < 5700,
		      "reorders %u", n[URXE_FAULT_REORDER]);
	ck_assert_msg(n[URXE_FAULT_CORRUPT] > 1600 && n[URXE_FAULT_CORRUPT] < 2400,
		      "corruptions %u", n[URXE_FAULT_CORRUPT]);
	urxe_faults_destroy(f);
}
END_TEST

/* limit=N: exactly N faults, the first N the unlimited injector makes,
 * then none. */
START_TEST(limit_stops)
{
	struct urxe_faults *lim = make("drop=0.2,dup=0.1,seed=9,limit=25");
	struct urxe_faults *all = make("drop=0.2,dup=0.1,seed=9");
	unsigned int psn, faults = 0, after = 0;

	for (psn = 0; psn < 5000; psn++) {
		enum urxe_fault fl = urxe_faults_decide(lim, 0x4002, psn, 0x04, false);
		enum urxe_fault fa = urxe_faults_decide(all, 0x4002, psn, 0x04, false);

		if (faults < 25)
			ck_assert_int_eq(fl, fa);
		else
			ck_assert_int_eq(fl, URXE_FAULT_NONE);
		faults += fl != URXE_FAULT_NONE;
		after += faults == 25 && fa != URXE_FAULT_NONE;
	}
	ck_assert_uint_eq(faults, 25);
	ck_assert_msg(after > 1000, "the unlimited injector went on (%u)", after);
	urxe_faults_destroy(lim);
	urxe_faults_destroy(all);
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tu_tcase(s, "faults", NULL, NULL);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, parse_keys);
	tcase_add_loop_test(tc, parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, parse_null_long);
	tcase_add_test(tc, repeatable);
	tcase_add_test(tc, retransmission_fresh);
	tcase_add_test(tc, rates);
	tcase_add_test(tc, limit_stops);
	return s;
}

int main(void)
{
	return tu_run(faults_suite());
}
