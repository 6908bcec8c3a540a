// SPDX-License-Identifier: BSD-2-Clause
/*
 * The logger.  It lives in the bottom layer so that every layer above can
 * report without depending upward; core/ only decides the policy (the
 * URXE_LOG variable is read here because the logger must work before any
 * device is opened).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <urxe/log.h>

static atomic_int threshold = -1;

static int parse_level(const char *s)
{
	static const char *const names[] = {
		[URXE_LOG_ERROR] = "error",
		[URXE_LOG_WARN] = "warn",
		[URXE_LOG_INFO] = "info",
		[URXE_LOG_DEBUG] = "debug",
	};
	unsigned int i;

	if (!s || !*s)
		return URXE_LOG_WARN;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i]))
			return (int)i;
	if (s[0] >= '0' && s[0] <= '3' && !s[1])
		return s[0] - '0';
	return URXE_LOG_WARN;
}

void urxe_log_reset(void)
{
	atomic_store(&threshold, parse_level(getenv("URXE_LOG")));
}

int urxe_log_enabled(enum urxe_log_level level)
{
	int t = atomic_load_explicit(&threshold, memory_order_relaxed);

	if (t < 0) {
		int saved = errno;

		urxe_log_reset();
		errno = saved;
		t = atomic_load(&threshold);
	}
	return (int)level <= t;
}

void urxe_log(enum urxe_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };
	int saved = errno;
	char buf[512];
	va_list ap;

	if (!urxe_log_enabled(level)) {
		errno = saved;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "urxe: %s: %s\n", tags[level], buf);
	errno = saved;
}

int urxe_log_ratelimit(struct urxe_ratelimit *rl, enum urxe_log_level level)
{
	int saved = errno;
	unsigned long long now, start;
	unsigned int missed;
	struct timespec ts;

	if (!urxe_log_enabled(level))
		return 0;
	/* Whoever asked for debug output wants every line. */
	if (urxe_log_enabled(URXE_LOG_DEBUG))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (unsigned long long)ts.tv_sec;
	start = atomic_load(&rl->window);
	/* One thread opens the next window; the others count in it. */
	if ((!start || now - start >= URXE_LOG_WINDOW_S) &&
	    atomic_compare_exchange_strong(&rl->window, &start, now)) {
		atomic_store(&rl->printed, 0);
		missed = atomic_exchange(&rl->missed, 0);
		if (missed)
			urxe_log(level, "(%u more lines like the next were left out: at most %d every %d s)",
				 missed, URXE_LOG_BURST, URXE_LOG_WINDOW_S);
	}
	errno = saved;
	if (atomic_fetch_add(&rl->printed, 1) < URXE_LOG_BURST)
		return 1;
	atomic_fetch_add(&rl->missed, 1);
	return 0;
}
