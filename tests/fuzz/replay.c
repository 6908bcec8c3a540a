// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_rx without libFuzzer: runs the files (or directories of files, in
 * name order) named on the command line, each once on the engine the
 * previous one left (rewound) and once on a new engine, and fails if the
 * two runs differ (digest of every packet sent and every completion).
 * Files ending in .hex are hex text: '#' starts a comment, spacing is
 * free.  Files named xrc-* must bring frames to both QPs of the XRC pair.
 * The normal build's ctest fuzz.regressions and fuzz.corpus.
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_world.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex text to bytes in place; '#' starts a comment. */
static size_t unhex(uint8_t *buf, size_t len)
{
	size_t i, n = 0;
	int hi = -1;

	for (i = 0; i < len; i++) {
		int v = hexval(buf[i]);

		if (buf[i] == '#') {
			while (i < len && buf[i] != '\n')
				i++;
			continue;
		}
		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			buf[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return n;
}

static int run_file(const char *path)
{
	size_t len, plen = strlen(path);
	const char *base;
	uint64_t d;
	uint8_t *buf;
	FILE *fp = fopen(path, "rb");
	long sz;

	if (!fp || fseek(fp, 0, SEEK_END) || (sz = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET)) {
		perror(path);
		if (fp)
			fclose(fp);
		return 1;
	}
	buf = malloc((size_t)sz + 1);
	check(buf);
	len = fread(buf, 1, (size_t)sz, fp);
	fclose(fp);
	if (plen > 4 && !strcmp(path + plen - 4, ".hex"))
		len = unhex(buf, len);
	LLVMFuzzerTestOneInput(buf, len);
	d = fz.digest;
	/* The XRC seeds are there to reach the XRC pair: they must. */
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!strncmp(base, "xrc-", 4) &&
	    (!fz.q[TGT].qp.cnt[URXE_CNT_RCVD_PKTS] ||
	     !fz.q[INI].qp.cnt[URXE_CNT_RCVD_PKTS]))
		fatal("%s: an XRC seed, yet %llu frames reached TGT, %llu INI",
		      path,
		      (unsigned long long)fz.q[TGT].qp.cnt[URXE_CNT_RCVD_PKTS],
		      (unsigned long long)fz.q[INI].qp.cnt[URXE_CNT_RCVD_PKTS]);
	/* Again on a new engine: a rewound one must behave the same. */
	fz_world_fini(false);
	fz_world_init(true);
	fz_run_input(buf, len);
	fprintf(stderr, "fuzz_rx: %s (%zu bytes): digest %016llx\n", path, len,
		(unsigned long long)d);
	if (fz.digest != d)
		fatal("%s: digest %016llx on a new engine", path,
		      (unsigned long long)fz.digest);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's files, in name order (dot files skipped). */
static int run_dir(const char *dir, unsigned int *nfiles)
{
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d) {
		perror(dir);
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		check(names);
		names[n] = strdup(de->d_name);
		check(names[n++]);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc |= run_file(path);
		(*nfiles)++;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned int nfiles = 0;
	struct stat st;
	int i, rc = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	fz_stats.print = true;
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) {
			rc |= run_dir(argv[i], &nfiles);
		} else {
			rc |= run_file(argv[i]);
			nfiles++;
		}
	}
	fprintf(stderr, "fuzz_rx: %u file(s) run%s\n", nfiles,
		rc ? ", some unreadable" : "");
	return rc;
}
