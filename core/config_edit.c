// SPDX-License-Identifier: BSD-2-Clause
/*
 * Editing the configuration file for `urxe dev add` / `urxe dev del`, line
 * by line: the file is the user's text, with the user's comments, blank
 * lines and entries of other devices, and everything an edit does not
 * touch is written back byte for byte.  `add` appends one line; `del`
 * drops the entries of one device (a line holding several ';'-separated
 * entries keeps the others).  The new text replaces the file atomically
 * (a reader sees the old file or the new one) with the old file's mode; a
 * symbolic link is followed, so the file it points to is what changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

#define EDIT_MAX (1 << 20)	/* a configuration file is small */

/* A growable text. */
struct text {
	char *buf;
	size_t len, cap;
};

static int text_put(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		char *nb;

		while (cap < t->len + n + 1)
			cap *= 2;
		nb = realloc(t->buf, cap);
		if (!nb)
			return -ENOMEM;
		t->buf = nb;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
	return 0;
}

/* The whole file into @t; -ENOENT when there is none. @mode: its mode. */
static int slurp(const char *path, struct text *t, mode_t *mode)
{
	char chunk[4096];
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out;
	}
	*mode = st.st_mode & 07777;
	if (!S_ISREG(st.st_mode) || st.st_size > EDIT_MAX) {
		rc = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto out;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && !rc)
		rc = text_put(t, chunk, (size_t)n);
	if (n < 0)
		rc = -errno;
	/* A NUL would cut the text short when parsed: not a text file. */
	if (!rc && t->len && memchr(t->buf, '\0', t->len))
		rc = -EINVAL;
out:
	close(fd);
	return rc;
}

static int mkdir_parents(const char *path)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Writes @t to @path through a temporary file and rename(). */
static int replace(const char *path, const struct text *t, mode_t mode,
		   bool keep_mode)
{
	char tmp[PATH_MAX];
	int fd, rc = 0;

	rc = mkdir_parents(path);
	if (rc)
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path,
			     (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	if ((t->len && write(fd, t->buf, t->len) != (ssize_t)t->len) ||
	    (keep_mode && fchmod(fd, mode)))
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * A whole file listing @cfg's devices, as a new file would hold them (the
 * CLI edits an existing file line by line instead; the tests write fresh
 * ones with this).
 */
int urxe_config_write(const char *path, const struct urxe_config *cfg)
{
	static const char head[] =
		"# urxe devices: NAME netdev IF [backend udp|packet]\n"
		"# maintained by `urxe dev add` / `urxe dev del`\n";
	struct text t = { 0 };
	char line[160];
	unsigned int i;
	int rc = text_put(&t, head, sizeof(head) - 1);

	for (i = 0; !rc && i < cfg->ndevs; i++) {
		int n = snprintf(line, sizeof(line), "%s netdev %s backend %s\n",
				 cfg->devs[i].name, cfg->devs[i].netdev,
				 urxe_backend_names[cfg->devs[i].backend]);

		rc = n < 0 || (size_t)n >= sizeof(line) ? -ENAMETOOLONG :
			text_put(&t, line, (size_t)n);
	}
	if (!rc)
		rc = replace(path, &t, 0, false);
	free(t.buf);
	return rc;
}

/* The file an edit changes: @path, or where the link @path points. */
static void edit_target(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX];

	if (realpath(path, real) && strlen(real) < len)
		snprintf(buf, len, "%s", real);
	else
		snprintf(buf, len, "%s", path);
}

/* How many entries (valid or not) @text lists; quietly, unlike parsing. */
static unsigned int entries(const char *text)
{
	char seg[512], err[160];
	struct urxe_dev_desc d;
	unsigned int n = 0;
	size_t len;

	for (; *text; text += len + !!text[len]) {
		len = strcspn(text, "\n;");
		snprintf(seg, sizeof(seg), "%.*s", (int)len, text);
		n += urxe_config_parse_line(seg, &d, err, sizeof(err)) != 1;
	}
	return n;
}

int urxe_config_file_add(const char *path, const struct urxe_dev_desc *d,
			 unsigned int *had_entries)
{
	struct text t = { 0 };
	char target[PATH_MAX], line[160];
	mode_t mode = 0;
	bool exists;
	int rc;

	edit_target(path, target, sizeof(target));
	rc = slurp(target, &t, &mode);
	if (rc && rc != -ENOENT)
		goto out;
	exists = !rc;
	*had_entries = exists ? entries(t.buf ? t.buf : "") : 0;
	rc = 0;
	if (!exists)
		rc = text_put(&t, "# urxe devices: NAME netdev IF [backend udp|packet]\n", 52);
	else if (t.len && t.buf[t.len - 1] != '\n')
		rc = text_put(&t, "\n", 1);	/* the last line had no end */
	snprintf(line, sizeof(line), "%s netdev %s backend %s\n", d->name,
		 d->netdev, urxe_backend_names[d->backend]);
	if (!rc)
		rc = text_put(&t, line, strlen(line));
	if (!rc)
		rc = replace(target, &t, mode, exists);
out:
	free(t.buf);
	return rc;
}

/*
 * Copies the line [s, e) (its newline excluded) to @out without the
 * ';'-separated entries that define @name; *dropped counts them, *kept
 * the entries that stay.
 */
static int del_in_line(const char *s, const char *e, const char *name,
		       struct text *out, unsigned int *dropped,
		       unsigned int *kept)
{
	char seg[512], err[160];
	struct urxe_dev_desc d;
	const char *p = s, *q;
	bool first = true, any = false;
	size_t start = out->len;
	int r, rc = 0;

	while (p <= e && !rc) {
		q = memchr(p, ';', (size_t)(e - p));
		if (!q)
			q = e;
		snprintf(seg, sizeof(seg), "%.*s", (int)(q - p), p);
		r = urxe_config_parse_line(seg, &d, err, sizeof(err));
		if (r == 0 && !strcmp(d.name, name)) {
			(*dropped)++;
			any = true;
		} else {
			*kept += r != 1;
			if (!first)
				rc = text_put(out, ";", 1);
			if (!rc)
				rc = text_put(out, p, (size_t)(q - p));
			first = false;
		}
		p = q + 1;
	}
	/* A line that held only the device's entries goes whole. */
	if (!rc && any && first)
		out->len = start;
	return rc;
}

int urxe_config_file_del(const char *path, const char *name,
			 unsigned int *left)
{
	struct text in = { 0 }, out = { 0 };
	unsigned int dropped = 0, kept = 0;
	char target[PATH_MAX];
	const char *p, *nl;
	mode_t mode = 0;
	size_t before;
	int rc;

	edit_target(path, target, sizeof(target));
	rc = slurp(target, &in, &mode);
	for (p = in.buf; !rc && p && *p; p = nl + 1) {
		unsigned int was = dropped;

		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);	/* the last line, without an end */
		before = out.len;
		rc = del_in_line(p, nl, name, &out, &dropped, &kept);
		/* Kept lines keep their end; a dropped line leaves none. */
		if (!rc && *nl && (dropped == was || out.len != before))
			rc = text_put(&out, "\n", 1);
		if (!*nl)
			break;
	}
	if (!rc && !dropped)
		rc = -ENOENT;
	if (!rc)
		rc = replace(target, &out, mode, true);
	*left = kept;
	free(in.buf);
	free(out.buf);
	return rc;
}
