/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Logging shared by every layer.  Messages go to stderr prefixed with
 * "urxe:"; the threshold comes from URXE_LOG (error, warn, info, debug;
 * default warn).  Logging never changes errno.
 */
#ifndef URXE_LOG_H
#define URXE_LOG_H

enum urxe_log_level {
	URXE_LOG_ERROR,
	URXE_LOG_WARN,
	URXE_LOG_INFO,
	URXE_LOG_DEBUG,
};

void urxe_log(enum urxe_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int urxe_log_enabled(enum urxe_log_level level);
/* Re-reads URXE_LOG; tests use it after setenv(). */
void urxe_log_reset(void);

/*
 * Rate limiting for messages that could repeat (one per QP, per packet
 * error...): at most URXE_LOG_BURST lines per URXE_LOG_WINDOW_S seconds
 * from one call site; the next window's first line is preceded by how
 * many were left out.  urxe_log_ratelimit() is true when the line is to be
 * printed: the level is enabled and the site has room (always at debug
 * level).  Check it before
 * any costly formatting (the _rl macros do).
 */
#define URXE_LOG_BURST 5
#define URXE_LOG_WINDOW_S 5

struct urxe_ratelimit {
	_Atomic unsigned long long window;	/* its start, in seconds */
	_Atomic unsigned int printed;		/* ... lines in it */
	_Atomic unsigned int missed;		/* lines left out */
};

int urxe_log_ratelimit(struct urxe_ratelimit *rl, enum urxe_log_level level);

#define urxe_log_rl(level, ...)                                           \
	do {                                                              \
		static struct urxe_ratelimit urxe_rl_;                    \
		if (urxe_log_ratelimit(&urxe_rl_, level))                 \
			urxe_log(level, __VA_ARGS__);                     \
	} while (0)
#define urxe_warn_rl(...) urxe_log_rl(URXE_LOG_WARN, __VA_ARGS__)

#define urxe_err(...) urxe_log(URXE_LOG_ERROR, __VA_ARGS__)
#define urxe_warn(...) urxe_log(URXE_LOG_WARN, __VA_ARGS__)
#define urxe_info(...) urxe_log(URXE_LOG_INFO, __VA_ARGS__)
#define urxe_dbg(...) urxe_log(URXE_LOG_DEBUG, __VA_ARGS__)

#endif
