/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_REQUEST_H
#define ZVMM_ZEROING_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What a launch asks of guest memory, and what making it zero cost: the
 * types zeroing/guest.h shares with its callers, apart from the page
 * state table they never see.
 */

struct zero_mem_opts {
	uint64_t bytes;
	uint64_t page_bytes; /* 2 MiB or 1 GiB */
	const char *pool_path; /* NULL: anonymous memfd */
	/*
	 * A hugetlb file the caller opened (has_fd): treated as a pool,
	 * through a duplicate of @fd; pool_path is then NULL.
	 */
	bool has_fd;
	int fd;
	/*
	 * Leased from zvmmd (service/, docs/zvmmd-protocol.md) at
	 * @service_path (NULL: its default socket): chunks mapped side by
	 * side; pool_path is then NULL.
	 */
	bool service;
	const char *service_path;
	/*
	 * Tests only: a shmem memfd with "pages" of any multiple of 4 KiB,
	 * so the pool's threading can be exercised without hugepages.
	 */
	bool shmem;
};

/* How a pass goes: @done of @total bytes. zeroing/ draws nothing. */
typedef void zero_progress_fn(void *arg, uint64_t done, uint64_t total);

struct zero_prezero_report {
	uint64_t scrub_bytes;
	uint64_t populate_bytes;
	double seconds;
	double gbps; /* (scrubbed + populated) / seconds */
};

#endif
