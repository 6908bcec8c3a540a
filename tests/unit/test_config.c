// SPDX-License-Identifier: BSD-2-Clause
/*
 * core/config.c: the device line grammar ("NAME netdev IF [backend
 * udp|packet]", # comments), whole texts separated by ';' or newlines, the
 * configuration layers of urxe_config_load (URXE_DEVICES, URXE_CONFIG,
 * $XDG_CONFIG_HOME or ~/.config, built-in rxe0 on lo), the runtime
 * directory, the file `urxe dev add/del` edit and its atomic rewrite.
 *
 * /etc/urxe/devices.conf is never written; where the machine has one, the
 * default-device test expects it instead of the built-in device.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "testutil.h"

static struct tu_sandbox sb;
static struct urxe_config *cfg;

static void setup(void)
{
	ck_assert_int_eq(tu_sandbox_init(&sb), 0);
	cfg = calloc(1, sizeof(*cfg));
	ck_assert_ptr_nonnull(cfg);
}

static void teardown(void)
{
	free(cfg);
	cfg = NULL;
	tu_sandbox_fini(&sb);
}

/* A string of @n copies of @c (static buffer per call site is enough). */
static char *repeat(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* --- urxe_config_parse_line --- */

struct line_case {
	const char *line;
	int rc;			/* 0, 1 (blank/comment) or -EINVAL */
	const char *name;	/* when rc == 0 */
	const char *netdev;
	enum urxe_backend backend;
	const char *err;	/* substring of the message when rc < 0 */
};

static const struct line_case line_cases[] = {
	{ "rxe0 netdev lo", 0, "rxe0", "lo", URXE_BACKEND_UDP, NULL },
	{ "rxe1 netdev eth0 backend udp", 0, "rxe1", "eth0", URXE_BACKEND_UDP, NULL },
	{ "rxe2 netdev veth0 backend packet", 0, "rxe2", "veth0",
	  URXE_BACKEND_PACKET, NULL },
	{ "rxe3 backend packet netdev eth1", 0, "rxe3", "eth1",
	  URXE_BACKEND_PACKET, NULL },
	{ "  a_b.c-9\tnetdev\tlo  # trailing comment\r\n", 0, "a_b.c-9", "lo",
	  URXE_BACKEND_UDP, NULL },
	{ "rxe0 netdev lo#comment glued to a word", 0, "rxe0", "lo",
	  URXE_BACKEND_UDP, NULL },
	{ "", 1, NULL, NULL, 0, NULL },
	{ "   \t  ", 1, NULL, NULL, 0, NULL },
	{ "\n", 1, NULL, NULL, 0, NULL },
	{ "# rxe0 netdev lo", 1, NULL, NULL, 0, NULL },
	{ "   # indented comment", 1, NULL, NULL, 0, NULL },
	{ "bad/name netdev lo", -EINVAL, NULL, NULL, 0, "bad device name" },
	{ "rx\xc3\xa9 netdev lo", -EINVAL, NULL, NULL, 0, "bad device name" },
	{ "rxe0", -EINVAL, NULL, NULL, 0, "names no interface" },
	{ "rxe0 backend udp", -EINVAL, NULL, NULL, 0, "names no interface" },
	{ "rxe0 netdev", -EINVAL, NULL, NULL, 0, "needs a value" },
	{ "rxe0 netdev lo backend", -EINVAL, NULL, NULL, 0, "needs a value" },
	{ "rxe0 netdev lo speed 10", -EINVAL, NULL, NULL, 0, "unknown keyword" },
	{ "rxe0 netdev lo backend tcp", -EINVAL, NULL, NULL, 0, "unknown backend" },
	{ "rxe0 netdev lo backend UDP", -EINVAL, NULL, NULL, 0, "unknown backend" },
	{ "rxe0 netdev bad/if", -EINVAL, NULL, NULL, 0, "bad interface name" },
	{ "rxe0 netdev lo backend udp netdev lo x y", -EINVAL, NULL, NULL, 0,
	  "too many words" },
};

START_TEST(parse_line_table)
{
	const struct line_case *c = &line_cases[_i];
	struct urxe_dev_desc d;
	char err[160] = "";
	int rc;

	memset(&d, 0xa5, sizeof(d));
	rc = urxe_config_parse_line(c->line, &d, err, sizeof(err));
	ck_assert_msg(rc == c->rc, "'%s': rc %d, expected %d (%s)", c->line, rc,
		      c->rc, err);
	if (c->rc == 0) {
		ck_assert_str_eq(d.name, c->name);
		ck_assert_str_eq(d.netdev, c->netdev);
		ck_assert_int_eq(d.backend, c->backend);
	} else if (c->rc < 0) {
		ck_assert_msg(strstr(err, c->err), "'%s': message '%s' lacks '%s'",
			      c->line, err, c->err);
	}
}
END_TEST

/* Name limits: 63 characters for devices, IF_NAMESIZE - 1 for interfaces. */
START_TEST(parse_line_lengths)
{
	char name[URXE_DEV_NAME_MAX + 2], ifn[IF_NAMESIZE + 2];
	char line[256], err[160];
	struct urxe_dev_desc d;

	repeat(name, 'n', URXE_DEV_NAME_MAX - 1);
	snprintf(line, sizeof(line), "%s netdev lo", name);
	ck_assert_int_eq(urxe_config_parse_line(line, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d.name, name);

	repeat(name, 'n', URXE_DEV_NAME_MAX);
	snprintf(line, sizeof(line), "%s netdev lo", name);
	ck_assert_int_eq(urxe_config_parse_line(line, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad device name"));

	repeat(ifn, 'i', IF_NAMESIZE - 1);
	snprintf(line, sizeof(line), "rxe0 netdev %s", ifn);
	ck_assert_int_eq(urxe_config_parse_line(line, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d.netdev, ifn);

	repeat(ifn, 'i', IF_NAMESIZE);
	snprintf(line, sizeof(line), "rxe0 netdev %s", ifn);
	ck_assert_int_eq(urxe_config_parse_line(line, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad interface name"));
}
END_TEST

/* A line longer than any buffer inside the parser is refused, not overrun. */
START_TEST(parse_line_huge)
{
	static char line[4096];
	struct urxe_dev_desc d;
	char err[160];

	repeat(line, 'x', sizeof(line) - 1);
	ck_assert_int_eq(urxe_config_parse_line(line, &d, err, sizeof(err)), -EINVAL);
}
END_TEST

/* --- urxe_config_parse --- */

static void cfg_reset(const char *rundir)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->rundir, sizeof(cfg->rundir), "%s", rundir);
}

START_TEST(parse_separators)
{
	int rc;

	cfg_reset("/r");
	rc = urxe_config_parse("a netdev lo;b netdev eth0 backend packet\n"
			       "# comment\n\n c netdev lo ;;", "test", cfg);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(cfg->ndevs, 3);
	ck_assert_str_eq(cfg->devs[0].name, "a");
	ck_assert_str_eq(cfg->devs[1].name, "b");
	ck_assert_str_eq(cfg->devs[1].netdev, "eth0");
	ck_assert_int_eq(cfg->devs[1].backend, URXE_BACKEND_PACKET);
	ck_assert_str_eq(cfg->devs[2].name, "c");
	/* Every device carries the configuration's runtime directory. */
	ck_assert_str_eq(cfg->devs[0].rundir, "/r");
	ck_assert_str_eq(cfg->devs[2].rundir, "/r");

	/* Nothing but separators: no device, no error. */
	cfg_reset("/r");
	ck_assert_int_eq(urxe_config_parse(";;\n;\n", "test", cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 0);
}
END_TEST

START_TEST(parse_bad_entry_skipped)
{
	cfg_reset("/r");
	ck_assert_int_eq(urxe_config_parse("a netdev lo;zzz;b netdev lo", "test", cfg),
			 -EINVAL);
	ck_assert_uint_eq(cfg->ndevs, 2);
	ck_assert_str_eq(cfg->devs[0].name, "a");
	ck_assert_str_eq(cfg->devs[1].name, "b");
}
END_TEST

START_TEST(parse_duplicates_first_kept)
{
	cfg_reset("/r");
	ck_assert_int_eq(urxe_config_parse("a netdev lo\na netdev eth0 backend packet",
					   "test", cfg), -EINVAL);
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].netdev, "lo");
	ck_assert_int_eq(cfg->devs[0].backend, URXE_BACKEND_UDP);

	/* Parsing appends: a second text cannot redefine a known device. */
	ck_assert_int_eq(urxe_config_parse("a netdev eth1;b netdev eth1", "more", cfg),
			 -EINVAL);
	ck_assert_uint_eq(cfg->ndevs, 2);
	ck_assert_str_eq(cfg->devs[0].netdev, "lo");
	ck_assert_str_eq(cfg->devs[1].name, "b");
}
END_TEST

static char *many_devices(unsigned int n)
{
	char *text = malloc(n * 32 + 1), *p = text;
	unsigned int i;

	ck_assert_ptr_nonnull(text);
	*p = '\0';
	for (i = 0; i < n; i++)
		p += sprintf(p, "d%u netdev lo;", i);
	return text;
}

START_TEST(parse_device_limit)
{
	char *text;

	cfg_reset("/r");
	text = many_devices(URXE_CONFIG_MAX_DEVS);
	ck_assert_int_eq(urxe_config_parse(text, "test", cfg), 0);
	free(text);
	ck_assert_uint_eq(cfg->ndevs, URXE_CONFIG_MAX_DEVS);

	cfg_reset("/r");
	text = many_devices(URXE_CONFIG_MAX_DEVS + 5);
	ck_assert_int_eq(urxe_config_parse(text, "test", cfg), -E2BIG);
	free(text);
	ck_assert_uint_eq(cfg->ndevs, URXE_CONFIG_MAX_DEVS);
	ck_assert_str_eq(cfg->devs[0].name, "d0");
	ck_assert_str_eq(cfg->devs[URXE_CONFIG_MAX_DEVS - 1].name, "d63");
}
END_TEST

/* --- urxe_config_load: the layers --- */

/* Writes @text as the configuration file below directory @base. */
static char *write_conf(const char *base, const char *rel, const char *text)
{
	char *path = tu_path(base, rel);

	ck_assert_ptr_nonnull(path);
	ck_assert_int_eq(tu_mkdir_parents(path), 0);
	ck_assert_int_eq(tu_write_file(path, text), 0);
	return path;
}

static bool system_config_exists(void)
{
	return access(URXE_CONFIG_SYSTEM, F_OK) == 0;
}

START_TEST(load_builtin_default)
{
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	if (system_config_exists()) {
		/* This machine has a system file: that layer comes before the default. */
		ck_assert_str_eq(cfg->source, URXE_CONFIG_SYSTEM);
		return;
	}
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].name, "rxe0");
	ck_assert_str_eq(cfg->devs[0].netdev, "lo");
	ck_assert_int_eq(cfg->devs[0].backend, URXE_BACKEND_UDP);
	ck_assert_str_eq(cfg->devs[0].rundir, sb.rundir);
	ck_assert_str_eq(cfg->source, "built-in default");
}
END_TEST

START_TEST(load_xdg_file)
{
	char *path = write_conf(sb.home, "urxe/devices.conf", "x1 netdev lo\n");

	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].name, "x1");
	ck_assert_str_eq(cfg->source, path);
	free(path);
}
END_TEST

/* Without XDG_CONFIG_HOME the user's file is ~/.config/urxe/devices.conf. */
START_TEST(load_home_file)
{
	char *xdg = tu_path(sb.dir, "xdg"), *path;

	path = write_conf(sb.home, ".config/urxe/devices.conf", "h1 netdev lo\n");
	unsetenv("XDG_CONFIG_HOME");
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].name, "h1");
	ck_assert_str_eq(cfg->source, path);

	/* With XDG_CONFIG_HOME set, ~/.config is not looked at. */
	ck_assert_int_eq(mkdir(xdg, 0700), 0);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_int_lt(urxe_config_find(cfg, "h1"), 0);
	free(path);
	free(xdg);
}
END_TEST

START_TEST(load_urxe_config_beats_xdg)
{
	char *xdg = write_conf(sb.home, "urxe/devices.conf", "x1 netdev lo\n");
	char *file = write_conf(sb.dir, "explicit.conf", "c1 netdev lo\nc2 netdev lo\n");

	setenv("URXE_CONFIG", file, 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 2);
	ck_assert_str_eq(cfg->devs[0].name, "c1");
	ck_assert_str_eq(cfg->devs[1].name, "c2");
	ck_assert_str_eq(cfg->source, file);
	free(xdg);
	free(file);
}
END_TEST

START_TEST(load_urxe_devices_beats_all)
{
	char *xdg = write_conf(sb.home, "urxe/devices.conf", "x1 netdev lo\n");
	char *file = write_conf(sb.dir, "explicit.conf", "c1 netdev lo\n");

	setenv("URXE_CONFIG", file, 1);
	setenv("URXE_DEVICES", "e1 netdev lo; e2 netdev lo backend packet", 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 2);
	ck_assert_str_eq(cfg->devs[0].name, "e1");
	ck_assert_str_eq(cfg->devs[1].name, "e2");
	ck_assert_int_eq(cfg->devs[1].backend, URXE_BACKEND_PACKET);
	ck_assert_str_eq(cfg->source, "URXE_DEVICES");

	/* Set but empty means unset: the next layer answers. */
	setenv("URXE_DEVICES", "", 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_str_eq(cfg->devs[0].name, "c1");
	free(xdg);
	free(file);
}
END_TEST

/*
 * A layer that exists is used whole (docs/design.md), even when it lists
 * nothing: then the built-in device, not the next layer.  URXE_CONFIG names
 * the file to read *and edit*, so a missing one is an empty configuration
 * (docs/urxe.md), not a reason to read the user's file.
 */
START_TEST(load_existing_layer_shadows)
{
	char *xdg = write_conf(sb.home, "urxe/devices.conf", "x1 netdev lo\n");
	char *missing = tu_path(sb.dir, "no-such.conf");
	char *empty = write_conf(sb.dir, "empty.conf", "# nothing yet\n");

	setenv("URXE_CONFIG", missing, 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].name, "rxe0");

	setenv("URXE_CONFIG", empty, 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 1);
	ck_assert_str_eq(cfg->devs[0].name, "rxe0");
	free(xdg);
	free(missing);
	free(empty);
}
END_TEST

START_TEST(load_rundir)
{
	setenv("URXE_DEVICES", "a netdev lo;b netdev lo", 1);
	setenv("URXE_RUNDIR", "/some/where/else", 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_str_eq(cfg->rundir, "/some/where/else");
	ck_assert_str_eq(cfg->devs[0].rundir, "/some/where/else");
	ck_assert_str_eq(cfg->devs[1].rundir, "/some/where/else");

	setenv("URXE_RUNDIR", "", 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_str_eq(cfg->rundir, URXE_RUNDIR_DEFAULT);

	unsetenv("URXE_RUNDIR");
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_str_eq(cfg->rundir, URXE_RUNDIR_DEFAULT);
	ck_assert_str_eq(cfg->devs[0].rundir, URXE_RUNDIR_DEFAULT);
}
END_TEST

/* --- urxe_config_write / urxe_config_load_file --- */

START_TEST(write_load_round_trip)
{
	struct urxe_config *back = calloc(1, sizeof(*back));
	char *path = tu_path(sb.dir, "deep/er/devices.conf");
	char *dirpath = tu_path(sb.dir, "deep/er");
	unsigned int i;
	int nfiles = 0;
	struct dirent *de;
	DIR *dir;

	ck_assert_ptr_nonnull(back);
	cfg_reset(sb.rundir);
	ck_assert_int_eq(urxe_config_parse("a netdev lo;b netdev eth0 backend packet;"
					   "c_1.x netdev veth-9 backend udp",
					   "test", cfg), 0);
	ck_assert_int_eq(urxe_config_write(path, cfg), 0);
	ck_assert_int_eq(urxe_config_load_file(path, back), 0);
	ck_assert_uint_eq(back->ndevs, cfg->ndevs);
	for (i = 0; i < cfg->ndevs; i++) {
		ck_assert_str_eq(back->devs[i].name, cfg->devs[i].name);
		ck_assert_str_eq(back->devs[i].netdev, cfg->devs[i].netdev);
		ck_assert_int_eq(back->devs[i].backend, cfg->devs[i].backend);
		ck_assert_str_eq(back->devs[i].rundir, sb.rundir);
	}
	ck_assert_str_eq(back->source, path);

	/* Rewriting replaces the file whole and leaves no temporary behind. */
	cfg->ndevs = 1;
	ck_assert_int_eq(urxe_config_write(path, cfg), 0);
	ck_assert_int_eq(urxe_config_load_file(path, back), 0);
	ck_assert_uint_eq(back->ndevs, 1);
	dir = opendir(dirpath);
	ck_assert_ptr_nonnull(dir);
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			nfiles++;
	closedir(dir);
	ck_assert_int_eq(nfiles, 1);

	free(dirpath);
	free(path);
	free(back);
}
END_TEST

/* Entries all invalid: no devices, not the built-in one (docs/urxe.md). */
START_TEST(load_all_invalid_no_devices)
{
	char *bad = write_conf(sb.dir, "bad.conf", "# c\nbad/x netdev lo\nr2 netdev\n");

	setenv("URXE_CONFIG", bad, 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 0);
	ck_assert_uint_eq(cfg->nentries, 2);
	ck_assert_str_eq(cfg->source, bad);
	setenv("URXE_DEVICES", "zzz", 1);
	ck_assert_int_eq(urxe_config_load(cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 0);
	free(bad);
}
END_TEST

static char *slurp_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 4096);

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_lt(fread(buf, 1, 4095, f), 4095);
	fclose(f);
	return buf;
}

/* Line-wise edits keep everything else byte for byte. */
START_TEST(edit_keeps_the_rest)
{
	static const char orig[] = "# mine\n\n  # note  \na netdev lo # A\r\n"
				   "b netdev lo; c netdev lo\nlast netdev lo";
	char *path = write_conf(sb.dir, "e.conf", orig), *got;
	struct urxe_dev_desc d = { .name = "n", .netdev = "eth0",
				   .backend = URXE_BACKEND_PACKET };
	unsigned int had, left;

	ck_assert_int_eq(urxe_config_file_add(path, &d, &had), 0);
	ck_assert_uint_eq(had, 4);
	got = slurp_text(path);
	ck_assert_str_eq(got, "# mine\n\n  # note  \na netdev lo # A\r\n"
			 "b netdev lo; c netdev lo\nlast netdev lo\n"
			 "n netdev eth0 backend packet\n");
	free(got);
	ck_assert_int_eq(urxe_config_file_del(path, "c", &left), 0);
	ck_assert_uint_eq(left, 4);
	ck_assert_int_eq(urxe_config_file_del(path, "n", &left), 0);
	ck_assert_int_eq(urxe_config_file_del(path, "a", &left), 0);
	ck_assert_uint_eq(left, 2);
	got = slurp_text(path);
	ck_assert_str_eq(got, "# mine\n\n  # note  \nb netdev lo\nlast netdev lo\n");
	free(got);
	ck_assert_int_eq(urxe_config_file_del(path, "zz", &left), -ENOENT);
	free(path);
	path = tu_path(sb.dir, "new/dir/f.conf");
	ck_assert_int_eq(urxe_config_file_add(path, &d, &had), 0);
	ck_assert_uint_eq(had, 0);
	ck_assert_int_eq(urxe_config_load_file(path, cfg), 0);
	ck_assert_uint_eq(cfg->ndevs, 1);
	free(path);
}
END_TEST

START_TEST(load_file_missing)
{
	char *path = tu_path(sb.dir, "absent.conf");

	ck_assert_int_eq(urxe_config_load_file(path, cfg), -ENOENT);
	ck_assert_uint_eq(cfg->ndevs, 0);
	free(path);
}
END_TEST

/* --- urxe_config_edit_path --- */

START_TEST(edit_path_layers)
{
	char buf[PATH_MAX], want[PATH_MAX], tiny[8];

	setenv("URXE_CONFIG", "/x/explicit.conf", 1);
	ck_assert_int_eq(urxe_config_edit_path(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/x/explicit.conf");
	ck_assert_int_eq(urxe_config_edit_path(tiny, sizeof(tiny)), -ENAMETOOLONG);

	/* URXE_DEVICES does not change which file is edited. */
	setenv("URXE_DEVICES", "a netdev lo", 1);
	unsetenv("URXE_CONFIG");
	ck_assert_int_eq(urxe_config_edit_path(buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/urxe/devices.conf", sb.home);
	ck_assert_str_eq(buf, want);

	setenv("XDG_CONFIG_HOME", "", 1);
	ck_assert_int_eq(urxe_config_edit_path(buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/.config/urxe/devices.conf", sb.home);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(urxe_config_edit_path(tiny, sizeof(tiny)), -ENAMETOOLONG);

	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	ck_assert_int_eq(urxe_config_edit_path(buf, sizeof(buf)), -ENOENT);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tu_tcase(s, "parse", setup, teardown);
	tcase_add_loop_test(tc, parse_line_table, 0,
			    (int)URXE_ARRAY_SIZE(line_cases));
	tcase_add_test(tc, parse_line_lengths);
	tcase_add_test(tc, parse_line_huge);
	tcase_add_test(tc, parse_separators);
	tcase_add_test(tc, parse_bad_entry_skipped);
	tcase_add_test(tc, parse_duplicates_first_kept);
	tcase_add_test(tc, parse_device_limit);

	tc = tu_tcase(s, "load", setup, teardown);
	tcase_add_test(tc, load_builtin_default);
	tcase_add_test(tc, load_xdg_file);
	tcase_add_test(tc, load_home_file);
	tcase_add_test(tc, load_urxe_config_beats_xdg);
	tcase_add_test(tc, load_urxe_devices_beats_all);
	tcase_add_test(tc, load_existing_layer_shadows);
	tcase_add_test(tc, load_rundir);

	tc = tu_tcase(s, "file", setup, teardown);
	tcase_add_test(tc, write_load_round_trip);
	tcase_add_test(tc, load_file_missing);
	tcase_add_test(tc, load_all_invalid_no_devices);
	tcase_add_test(tc, edit_keeps_the_rest);
	tcase_add_test(tc, edit_path_layers);
	return s;
}

int main(void)
{
	return tu_run(config_suite());
}
