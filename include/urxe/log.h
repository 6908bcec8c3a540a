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

#define urxe_err(...) urxe_log(URXE_LOG_ERROR, __VA_ARGS__)
#define urxe_warn(...) urxe_log(URXE_LOG_WARN, __VA_ARGS__)
#define urxe_info(...) urxe_log(URXE_LOG_INFO, __VA_ARGS__)
#define urxe_dbg(...) urxe_log(URXE_LOG_DEBUG, __VA_ARGS__)

#endif
