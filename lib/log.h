/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_LOG_H
#define ZVMM_LIB_LOG_H

/*
 * One logging front for every module. Messages go to stderr with a
 * "zvmm: " prefix so they stay apart from guest serial output and from a
 * JSON report on stdout.
 */

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_level;

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pr_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
