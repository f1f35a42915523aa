/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_FILE_H
#define ZVMM_LIB_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Splits @path into its directory (into @dir: "." for a bare name, "/"
 * at the root) and its last component (*name, pointing into @path).
 * Returns 0, -EISDIR when @path names no file (empty last component,
 * "." or ".."), or -ENAMETOOLONG.
 */
int file_split_path(const char *path, char *dir, size_t dir_len,
		    const char **name) __attribute__((warn_unused_result));

/* Creates the directories above @path (not @path itself). 0 or -errno. */
int file_mkdir_parents(const char *path, mode_t mode)
	__attribute__((warn_unused_result));

/*
 * Replacing a file atomically: file_replace_open() opens a temporary file
 * next to @path (its name in @tmp), file_replace_commit() flushes, syncs
 * and renames it over @path, or removes it on any error. A reader sees
 * the old file or the whole new one, never half of it.
 */
FILE *file_replace_open(const char *path, char *tmp, size_t tmp_len);
int file_replace_commit(FILE *f, const char *tmp, const char *path)
	__attribute__((warn_unused_result));

/*
 * Reads @fd to its end (a file, a pipe) into a malloc'd buffer with a NUL
 * after the @len bytes read; the caller frees *buf. Returns 0, -EFBIG for
 * more than @max bytes, or another -errno.
 */
int file_read_fd(int fd, size_t max, char **buf, size_t *len)
	__attribute__((warn_unused_result));

#endif
