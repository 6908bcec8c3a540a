// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device configuration, in layers: URXE_DEVICES (environment), else the
 * file URXE_CONFIG names, else the user's file, else the system's; with
 * nothing configured, one device rxe0 on loopback.  Every layer uses the
 * syntax of `urxe dev add`: "NAME netdev IF [backend udp|packet]".
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urxe/log.h>

#include "core.h"

static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

int urxe_config_parse_line(const char *line, struct urxe_dev_desc *out,
			   char *err, size_t errlen)
{
	char buf[512], *tok[8], *save = NULL, *p;
	int ntok = 0, i;

	snprintf(buf, sizeof(buf), "%s", line);
	p = strchr(buf, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(buf, " \t\r\n", &save); p;
	     p = strtok_r(NULL, " \t\r\n", &save)) {
		if (ntok == (int)URXE_ARRAY_SIZE(tok)) {
			snprintf(err, errlen, "too many words");
			return -EINVAL;
		}
		tok[ntok++] = p;
	}
	if (!ntok)
		return 1;
	memset(out, 0, sizeof(*out));
	out->backend = URXE_BACKEND_UDP;
	if (!valid_name(tok[0], sizeof(out->name))) {
		snprintf(err, errlen, "bad device name '%s' (letters, digits, _ . -; at most %zu)",
			 tok[0], sizeof(out->name) - 1);
		return -EINVAL;
	}
	snprintf(out->name, sizeof(out->name), "%s", tok[0]);
	for (i = 1; i < ntok; i += 2) {
		if (i + 1 >= ntok) {
			snprintf(err, errlen, "'%s' needs a value", tok[i]);
			return -EINVAL;
		}
		if (!strcmp(tok[i], "netdev")) {
			if (!valid_name(tok[i + 1], sizeof(out->netdev))) {
				snprintf(err, errlen, "bad interface name '%s'", tok[i + 1]);
				return -EINVAL;
			}
			snprintf(out->netdev, sizeof(out->netdev), "%s", tok[i + 1]);
		} else if (!strcmp(tok[i], "backend")) {
			if (!strcmp(tok[i + 1], "udp")) {
				out->backend = URXE_BACKEND_UDP;
			} else if (!strcmp(tok[i + 1], "packet")) {
				out->backend = URXE_BACKEND_PACKET;
			} else {
				snprintf(err, errlen, "unknown backend '%s' (udp or packet)",
					 tok[i + 1]);
				return -EINVAL;
			}
		} else {
			snprintf(err, errlen, "unknown keyword '%s' (netdev or backend)",
				 tok[i]);
			return -EINVAL;
		}
	}
	if (!out->netdev[0]) {
		snprintf(err, errlen, "device %s names no interface (netdev IF)",
			 out->name);
		return -EINVAL;
	}
	return 0;
}

int urxe_config_find(const struct urxe_config *cfg, const char *name)
{
	unsigned int i;

	for (i = 0; i < cfg->ndevs; i++)
		if (!strcmp(cfg->devs[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* The loader's reporter: a warning a line, as the library logs them. */
static void warn_report(void *ctx, const char *origin, int line,
			const char *what)
{
	(void)ctx;
	if (line)
		urxe_warn("%s:%d: %s", origin, line, what);
	else
		urxe_warn("%s: %s", origin, what);
}

int urxe_config_parse_report(const char *text, const char *origin,
			     struct urxe_config *cfg,
			     urxe_config_report_fn *report, void *ctx)
{
	const char *p = text;
	int lineno = 1, rc = 0;

	while (*p) {
		size_t n = strcspn(p, "\n;");
		char line[512], err[160], what[256];
		struct urxe_dev_desc d;
		int r, at = lineno;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p += n;
		/* Numbers are the file's lines: ';' entries share theirs. */
		if (*p == '\n')
			lineno++;
		if (*p)
			p++;
		r = urxe_config_parse_line(line, &d, err, sizeof(err));
		if (r == 1)
			continue;
		cfg->nentries++;
		if (r < 0) {
			snprintf(what, sizeof(what), "%s; entry ignored", err);
			report(ctx, origin, at, what);
			rc = -EINVAL;
			continue;
		}
		if (urxe_config_find(cfg, d.name) >= 0) {
			snprintf(what, sizeof(what),
				 "device %s defined twice; the first one is used",
				 d.name);
			report(ctx, origin, at, what);
			rc = -EINVAL;
			continue;
		}
		if (cfg->ndevs == URXE_CONFIG_MAX_DEVS) {
			snprintf(what, sizeof(what),
				 "more than %d devices; the rest ignored",
				 URXE_CONFIG_MAX_DEVS);
			report(ctx, origin, 0, what);
			return -E2BIG;
		}
		snprintf(d.rundir, sizeof(d.rundir), "%s", cfg->rundir);
		cfg->devs[cfg->ndevs++] = d;
	}
	return rc;
}

int urxe_config_parse(const char *text, const char *origin,
		      struct urxe_config *cfg)
{
	return urxe_config_parse_report(text, origin, cfg, warn_report, NULL);
}

char *urxe_config_read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 1024 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 4096);

			if (!nb)
				break;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0 && len < (1 << 20));
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

static void init_cfg(struct urxe_config *cfg)
{
	const char *rd = getenv("URXE_RUNDIR");

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->rundir, sizeof(cfg->rundir), "%s",
		 rd && *rd ? rd : URXE_RUNDIR_DEFAULT);
}

int urxe_config_load_file(const char *path, struct urxe_config *cfg)
{
	char *text;
	int rc;

	init_cfg(cfg);
	text = urxe_config_read_text(path);
	if (!text)
		return errno == ENOENT ? -ENOENT : -errno;
	rc = urxe_config_parse(text, path, cfg);
	free(text);
	snprintf(cfg->source, sizeof(cfg->source), "%s", path);
	return rc;
}

static int user_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int n;

	if (xdg && *xdg)
		n = snprintf(buf, len, "%s/urxe/devices.conf", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.config/urxe/devices.conf", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int urxe_config_edit_path(char *buf, size_t len)
{
	const char *env = getenv("URXE_CONFIG");

	if (env && *env) {
		if ((size_t)snprintf(buf, len, "%s", env) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return user_path(buf, len);
}

void urxe_config_default_dev(struct urxe_config *cfg)
{
	struct urxe_dev_desc *d = &cfg->devs[0];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "rxe0");
	snprintf(d->netdev, sizeof(d->netdev), "lo");
	d->backend = URXE_BACKEND_UDP;
	snprintf(d->rundir, sizeof(d->rundir), "%s", cfg->rundir);
	cfg->ndevs = 1;
	snprintf(cfg->source, sizeof(cfg->source), "built-in default");
}

int urxe_config_load(struct urxe_config *cfg)
{
	const char *env = getenv("URXE_DEVICES");
	const char *cfgfile = getenv("URXE_CONFIG");
	char path[PATH_MAX];

	init_cfg(cfg);
	if (env && *env) {
		snprintf(cfg->source, sizeof(cfg->source), "URXE_DEVICES");
		urxe_config_parse(env, "URXE_DEVICES", cfg);
	} else if (cfgfile && *cfgfile) {
		if (urxe_config_load_file(cfgfile, cfg) == -ENOENT)
			urxe_dbg("URXE_CONFIG=%s does not exist yet", cfgfile);
	} else {
		if (user_path(path, sizeof(path)) ||
		    urxe_config_load_file(path, cfg) == -ENOENT)
			urxe_config_load_file(URXE_CONFIG_SYSTEM, cfg);
	}
	/*
	 * A layer that lists entries is the configuration, even when none of
	 * them is valid: falling back to rxe0 would hide the mistake behind a
	 * device the user never asked for.
	 */
	if (!cfg->ndevs && !cfg->nentries)
		urxe_config_default_dev(cfg);
	else if (!cfg->ndevs)
		urxe_warn("%s: no valid device entry (see the lines above): no devices; the built-in rxe0 is only used when nothing lists devices",
			  cfg->source);
	return 0;
}
