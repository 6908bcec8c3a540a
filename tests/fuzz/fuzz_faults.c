// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_faults: arbitrary bytes as URXE_FAULTS (netdev/faults.c's parser).
 * Whatever the input, the parser must not crash or overrun; a spec it
 * accepts holds probabilities in [0, 1] summing to at most 1; a spec it
 * refuses comes with -EINVAL and a reason: a non-empty NUL-terminated
 * string within the room given.  The ctest fuzz.faults (a URXE_FUZZ
 * build, clang) fuzzes it from the seeds in faults_corpus/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <urxe/netdev.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct urxe_faults_conf c;
	char *spec = malloc(size + 1), why[64];
	double sum;
	int rc;

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	memset(why, 'x', sizeof(why));
	rc = urxe_faults_parse(spec, &c, why, sizeof(why));
	if (rc == 0) {
		sum = c.drop + c.dup + c.reorder + c.corrupt;
		if (!(c.drop >= 0 && c.drop <= 1 && c.dup >= 0 && c.dup <= 1 &&
		      c.reorder >= 0 && c.reorder <= 1 && c.corrupt >= 0 &&
		      c.corrupt <= 1 && sum <= 1))
			abort();
	} else if (rc != -EINVAL || !memchr(why, '\0', sizeof(why)) ||
		   !why[0]) {
		abort();
	}
	free(spec);
	return 0;
}
