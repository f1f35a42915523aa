/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_MEMORY_H
#define ZVMM_ZEROING_MEMORY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../lib/zvmmd_client.h"
#include "pages.h"
#include "request.h"

/*
 * Guest memory on hugetlbfs (DESIGN.md 3): an anonymous MFD_HUGETLB memfd,
 * or a named pool file on a hugetlbfs mount that outlives the process,
 * mapped twice: the guest mapping (for KVM and userfaultfd) and the VMM's
 * alias (where workers write zeros). Every hugepage has a state.
 */

struct zero_mem {
	int fd;
	char *guest;
	char *alias;
	uint64_t bytes;
	uint64_t page_bytes;
	uint64_t nr_pages;
	struct zero_pages *pages;
	bool pool; /* a named pool file */
	bool created; /* created by this launch (O_EXCL): it may unlink it */
	bool sized; /* empty until this launch sized it: undone by truncation */
	bool caller_fd; /* opened by the caller: never unlinked here */
	int dirfd; /* a named pool's directory (O_PATH), -1 otherwise */
	struct stat st_open; /* the file when locked, before it was mapped */
	char path[PATH_MAX];
	char name[NAME_MAX + 1]; /* a named pool's name in dirfd */
	/* the state records' directory, "" = the default (record.c) */
	char state_dir[256];
	/* leased from zvmmd: its chunks, and the two reserved ranges the
	 * guest and alias mappings are made of (res_len bytes each) */
	struct zvmmd_lease *lease;
	char *guest_res, *alias_res;
	uint64_t res_len;
	/* its chunks' length: no range operation that must stay inside one
	 * VMA (UFFDIO_CONTINUE) crosses a multiple of it; 0: one VMA */
	uint64_t split_bytes;
};

/*
 * Checks, before anything is allocated, that the request can be met:
 * a page size the kernel has, a size that is a whole number of pages, a
 * hugetlbfs mount of that page size for a pool file (and a compatible
 * existing file, a regular one), and enough free hugepages (counting
 * pages the pool file already holds). Returns 0, -EINVAL for a request
 * that is wrong (said before any missing resource), or
 * -ENOMEM/-ENODEV/-ENOENT for missing resources; @err says what to do.
 */
int zero_mem_preflight(const struct zero_mem_opts *o, char *err, size_t err_len)
	__attribute__((warn_unused_result));

/*
 * Creates (or reopens) the backing file and maps it twice, both mappings
 * MADV_DONTFORK (a child of fork(2) has no way around userfaultfd). A
 * named pool must be inside the trust boundary (docs/DESIGN.md 3): its
 * path holds no symbolic link, its directory is the euid's or root's and
 * no one else may write it (unless sticky), an existing file is a
 * regular file (else -EINVAL) of the euid that no one else may write,
 * and no other process has it open or mapped: else -EPERM (or -EBUSY,
 * naming the process) with @err saying what fixes it. Pages of a new file are FRESH;
 * pages a reused pool file already holds are DIRTY. On failure nothing
 * is left: mappings undone, a file this call created removed, an empty
 * file it sized emptied again. Returns 0 or a negative errno with @err
 * set.
 */
int zero_mem_create(const struct zero_mem_opts *o, struct zero_mem **out,
		    char *err, size_t err_len)
	__attribute__((warn_unused_result));

/*
 * After a failed open: removes the pool file this launch created, or
 * empties again the empty file it sized; nothing else is ever removed.
 */
void zero_mem_undo(struct zero_mem *m);

/* Unmaps and closes; a pool file stays for the next launch. */
void zero_mem_destroy(struct zero_mem *m);

/* Start of page @i in the alias / guest mapping. */
static inline char *zero_mem_alias_page(const struct zero_mem *m, uint64_t i)
{
	return m->alias + i * m->page_bytes;
}

static inline char *zero_mem_guest_page(const struct zero_mem *m, uint64_t i)
{
	return m->guest + i * m->page_bytes;
}

/* Hugepages the file holds now (allocated in the kernel's page cache). */
uint64_t zero_mem_allocated_pages(const struct zero_mem *m);

/*
 * Whether a process other than this one has the file of @m open or
 * mapped now (a write lease is refused while any other open file
 * description exists, a mapping's included: exact, and microseconds).
 * Returns 0 when none has, -EBUSY with @err naming the process (found in
 * /proc, as fuser(1) does) when one has, or another negative errno.
 */
int zero_mem_check_alone(const struct zero_mem *m, char *err, size_t len)
	__attribute__((warn_unused_result));

/*
 * Makes the kernel agree with the table: every FRESH page of a named pool
 * is punched out, so one that a process other than the guest allocated
 * behind zvmm's back (hugetlbfs has no SEEK_DATA to tell) is a hole
 * again and the kernel zeroes it when it is next allocated. *found gets
 * how many such pages there were. Returns 0 or a negative errno.
 */
int zero_mem_punch_fresh(struct zero_mem *m, uint64_t *found)
	__attribute__((warn_unused_result));

/*
 * After a guest has run (no worker and no vCPU left): every page it had
 * is DIRTY, and every FRESH page of a named pool is a hole again
 * (zero_mem_punch_fresh(); *foreign, may be NULL, gets how many were
 * not). Returns 0 or a negative errno.
 */
int zero_mem_guest_exited(struct zero_mem *m, uint64_t *foreign)
	__attribute__((warn_unused_result));

/*
 * Someone other than zvmm wrote the memory (a benchmark's poison, a
 * foreign writer): every page is DIRTY. Only while no worker runs.
 */
int zero_mem_written(struct zero_mem *m) __attribute__((warn_unused_result));

/* Hugepages the pool file at @path holds (0 if it does not exist). */
int zero_mem_pool_pages(const char *path, uint64_t page_bytes, uint64_t *pages,
			uint64_t *file_bytes)
	__attribute__((warn_unused_result));

#endif
