/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_HUGETLB_H
#define ZVMM_ZEROING_HUGETLB_H

#include <stddef.h>
#include <stdint.h>

/*
 * The kernel's hugetlb pools, one per page size, seen through
 * /sys/kernel/mm/hugepages/hugepages-<N>kB/. A reservation raises
 * nr_hugepages until enough pages are free and remembers the old count
 * so it can be put back, also from a signal handler.
 */

struct zero_hugetlb_resv {
	uint64_t page_bytes;
	long old_nr; /* nr_hugepages before; meaningful if slot >= 0 */
	int slot; /* -1: nothing was changed */
};

#define ZERO_HUGETLB_RESV_INIT \
	{                      \
		.slot = -1     \
	}

/* The sysfs nr_hugepages path for @page_bytes. */
const char *zero_hugetlb_path(uint64_t page_bytes, const char *file, char *buf,
			      size_t len);

/*
 * Reads one counter of the pool of @page_bytes pages (nr_hugepages,
 * free_hugepages, resv_hugepages, ...). Returns 0, or -ENOENT when the
 * kernel has no pool of that page size (another -errno, or -EIO, when the
 * file cannot be read).
 */
int zero_hugetlb_read(uint64_t page_bytes, const char *file, long *v)
	__attribute__((warn_unused_result));

/*
 * Reads nr_hugepages and free_hugepages. Returns 0, or -ENOENT when the
 * kernel has no pool of that page size.
 */
int zero_hugetlb_counts(uint64_t page_bytes, long *nr, long *free_pages)
	__attribute__((warn_unused_result));

/*
 * Makes at least @want pages of @page_bytes free, raising nr_hugepages
 * if needed. Returns 0; -EACCES when the count must be raised and this
 * process may not; -ENOMEM when the kernel could not find the memory
 * (the old count is then already back). Prints nothing.
 */
int zero_hugetlb_reserve(uint64_t page_bytes, long want,
			 struct zero_hugetlb_resv *r)
	__attribute__((warn_unused_result));

/* Puts the old count back; safe on a reservation that changed nothing. */
void zero_hugetlb_release(struct zero_hugetlb_resv *r);

/*
 * Puts back every count still raised; async-signal-safe, for a handler
 * that must leave the machine as it found it.
 */
void zero_hugetlb_release_all_async(void);

/* MemAvailable plus free hugepages of both sizes, in bytes. */
int zero_mem_available(uint64_t *bytes) __attribute__((warn_unused_result));

#endif
