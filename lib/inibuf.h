/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_INIBUF_H
#define ZVMM_LIB_INIBUF_H

#include <ini.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * libinih over text in memory: the policy file, the pool's state record
 * and the calibration profile are read whole, then parsed here, so the
 * parsers can be driven from a buffer (fuzz/). Unlike
 * ini_parse_string(), @text needs no NUL and may hold NUL bytes (a line
 * ends at its first NUL, as with a file).
 *
 * libinih reads a line into a fixed buffer and treats whatever does not
 * fit as the next line, so the tail of a long comment could become a
 * key. Such a line is an error here instead: *too_long says so.
 *
 * Returns 0, the number of the first line in error (libinih's syntax or
 * handler errors, or a line too long), or -2 when libinih runs out of
 * memory.
 */
int inibuf_parse(const char *text, size_t len, ini_handler handler, void *user,
		 bool *too_long) __attribute__((warn_unused_result));

/*
 * A handler told what libinih tells none as distributions build it
 * (INI_HANDLER_LINENO and INI_CALL_HANDLER_ON_NEW_SECTION off): the
 * @line of the call, and each section header, as a call with @name and
 * @value NULL before the section's keys, whether it has any or not.
 * @section is then the name as written between '[' and ']'. Returns
 * nonzero to go on, 0 for an error at @line.
 */
typedef int inibuf_handler(void *user, int line, const char *section,
			   const char *name, const char *value);

/*
 * inibuf_parse() with such a handler, from the same one pass over the
 * text (the lines are counted as the reader hands them to libinih), and
 * *@lines the number of lines read: all of them when the text parsed.
 */
int inibuf_parse_lines(const char *text, size_t len, inibuf_handler *handler,
		       void *user, bool *too_long, int *lines)
	__attribute__((warn_unused_result));

#endif
