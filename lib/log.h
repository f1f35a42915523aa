/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_LOG_H
#define ZVMM_LIB_LOG_H

#include <stdbool.h>
#include <stddef.h>

/*
 * One logging front for every module. Messages go to a sink: none until
 * one is set, so the library prints nothing of its own. The zvmm binary
 * sets log_to_stderr(): a "zvmm: " prefix keeps them apart from guest
 * serial output and from a JSON report on stdout. libzvmm's
 * zvmm_set_log() sets the embedding VMM's callback; zvmmd sets
 * log_to_stderr_as().
 */

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_level;

/* @msg is one line without its newline, valid during the call. */
typedef void log_sink_fn(void *arg, enum log_level level, const char *msg);

/* Process-wide; NULL: messages go nowhere. */
void log_set_sink(log_sink_fn *fn, void *arg);

/* The zvmm binary's sink: "zvmm: error: ..." lines on stderr. */
void log_to_stderr(void);

/*
 * The same, each message passed through @fn first (@out holds @len
 * bytes): how the zvmm binary puts its flags where the library names
 * the fields of its API (vmm/cli.c).
 */
typedef void log_rewrite_fn(const char *msg, char *out, size_t len);
void log_to_stderr_rewritten(log_rewrite_fn *fn);

/*
 * A service's sink: "NAME: LEVEL: ..." lines on stderr, every level
 * named ("zvmmd: info: ..."); or, when @journal (stderr is journald's
 * stream: $JOURNAL_STREAM is set), each line led by its syslog priority
 * alone ("<6>..."), which journald takes as the message's level. @name
 * is kept, not copied.
 */
void log_to_stderr_as(const char *name, bool journal);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pr_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
