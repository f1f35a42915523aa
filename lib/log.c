// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

enum log_level log_level = LOG_INFO;

static const char *const log_prefix[] = {
	[LOG_ERR] = "error: ",
	[LOG_WARN] = "warning: ",
	[LOG_INFO] = "",
	[LOG_DEBUG] = "debug: ",
};

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fprintf(stderr, "zvmm: %s", log_prefix[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
