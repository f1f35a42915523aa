/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_INIVAL_H
#define ZVMM_LIB_INIVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Values of zvmm's INI files (policy files, zvmmd.conf), checked the same
 * way in each. Every function returns 0, or -EINVAL with @err saying what
 * was given and what is expected; nothing is printed.
 */

/*
 * A path value, NUL included: `key = PATH` fits libinih's line of
 * INI_MAX_LINE (200) bytes, so that a file written with the longest
 * paths reads back.
 */
#define INIVAL_PATH_MAX 160

/* A control character (below 0x20, or DEL) anywhere in @v. */
bool inival_has_control(const char *v);

/*
 * An absolute path shorter than @max bytes into @out (@size bytes, zero
 * filled), or @word (when not NULL) for none (""): a relative path would
 * depend on the reader's working directory, and what the file could not
 * say back the same way is refused (blanks, control characters, and
 * INI's comment characters ';' and '#').
 */
int inival_path(char *out, size_t size, size_t max, const char *v,
		const char *word, char *err, size_t len);

/*
 * A size (lib/size.h's units) from @min to @max into *out, or @word
 * (when not NULL) for 0.
 */
int inival_size(const char *v, const char *word, uint64_t *out, uint64_t min,
		uint64_t max, char *err, size_t len);

#endif
