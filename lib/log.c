// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

enum log_level log_level = LOG_INFO;

static log_sink_fn *log_sink;
static void *log_sink_arg;

static const char *const log_prefix[] = {
	[LOG_ERR] = "error: ",
	[LOG_WARN] = "warning: ",
	[LOG_INFO] = "",
	[LOG_DEBUG] = "debug: ",
};

void log_set_sink(log_sink_fn *fn, void *arg)
{
	log_sink = fn;
	log_sink_arg = arg;
}

static log_rewrite_fn *rewrite;

static void to_stderr(void *arg, enum log_level level, const char *msg)
{
	char out[1536];

	(void)arg;
	if (rewrite) {
		rewrite(msg, out, sizeof(out));
		msg = out;
	}
	fprintf(stderr, "zvmm: %s%s\n", log_prefix[level], msg);
}

void log_to_stderr(void)
{
	log_set_sink(to_stderr, NULL);
}

void log_to_stderr_rewritten(log_rewrite_fn *fn)
{
	rewrite = fn;
	log_set_sink(to_stderr, NULL);
}

static struct {
	const char *name;
	bool journal;
} service;

static void to_stderr_as(void *arg, enum log_level level, const char *msg)
{
	static const char *const names[] = {
		[LOG_ERR] = "error",
		[LOG_WARN] = "warning",
		[LOG_INFO] = "info",
		[LOG_DEBUG] = "debug",
	};
	/* syslog(3)'s LOG_ERR, LOG_WARNING, LOG_INFO and LOG_DEBUG. */
	static const int priority[] = {
		[LOG_ERR] = 3,
		[LOG_WARN] = 4,
		[LOG_INFO] = 6,
		[LOG_DEBUG] = 7,
	};

	(void)arg;
	if (service.journal)
		fprintf(stderr, "<%d>%s\n", priority[level], msg);
	else
		fprintf(stderr, "%s: %s: %s\n", service.name, names[level],
			msg);
}

void log_to_stderr_as(const char *name, bool journal)
{
	service.name = name;
	service.journal = journal;
	log_set_sink(to_stderr_as, NULL);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > log_level || !log_sink)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_sink(log_sink_arg, level, msg);
}
