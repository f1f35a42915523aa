/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_SYSFS_H
#define ZVMM_LIB_SYSFS_H

#include <stdint.h>

/*
 * Numbers the kernel publishes as text: one per file in sysfs
 * (/sys/kernel/mm/hugepages/.../free_hugepages, .../topology/core_id),
 * or one per "Key: value [kB]" line in procfs (/proc/meminfo).
 */

/*
 * Reads the decimal number a file starts with (after blanks). Returns 0;
 * -errno when the file cannot be opened or read; -EIO when it is empty
 * or starts with no number.
 */
int sysfs_read_long(const char *path, long *v)
	__attribute__((warn_unused_result));

/*
 * Reads the value of the line "@key: value" of a meminfo-style file, as
 * written (a "kB" after it is not applied). Returns 0; -errno when the
 * file cannot be opened; -ENODATA when no line has @key.
 */
int sysfs_read_field(const char *path, const char *key, uint64_t *v)
	__attribute__((warn_unused_result));

#endif
