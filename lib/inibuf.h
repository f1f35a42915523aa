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

#endif
