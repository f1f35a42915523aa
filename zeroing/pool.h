/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_POOL_H
#define ZVMM_ZEROING_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "../arch/arch.h"
#include "memory.h"

/*
 * A worker pool for the pages of one NUMA node (DESIGN.md 5). Work is
 * cut into chunks of at most `chunk` bytes inside one hugepage, taken in
 * ascending order within the page. Between chunks every worker yields:
 * demand work is served before background work, cancellation is seen,
 * and the background rate limit is kept. A demand request for a page
 * already being cleared joins its remaining chunks.
 */

struct zero_pool;

struct zero_pool_cfg {
	struct zero_mem *mem;
	arch_clear_fn clear;
	/* bytes, a multiple of 64 (zero_pool_create() refuses others; the
	 * policy allows multiples of 4 KiB); capped at the page */
	uint64_t chunk;
	uint64_t first_page; /* this pool's pages */
	uint64_t nr_pages;
	int node; /* NUMA node of the pages, -1 for no binding */
	unsigned int nr_workers;
	const int *cpus; /* a CPU per worker, -1 unpinned; NULL: none */
	bool scrub_fresh; /* fresh=scrub: clear FRESH pages too */
};

struct zero_pool_stats {
	uint64_t scrub_bytes; /* cleared with the backend */
	uint64_t populate_bytes; /* FRESH pages the kernel zeroed for us */
	uint64_t demand_bytes; /* of the above, done for demand requests */
	uint64_t demand_populate_bytes; /* of those, FRESH pages populated */
	uint64_t demand_pages;
	uint64_t pages_left; /* background pages not yet ZERO or MAPPED */
	double bg_seconds; /* background run time so far */
	bool bg_active; /* a background pass is running */
};

/*
 * Starts the workers (pinned, memory policy on the node). Returns 0 or a
 * negative errno; on failure no thread is left running.
 */
int zero_pool_create(const struct zero_pool_cfg *cfg, struct zero_pool **out)
	__attribute__((warn_unused_result));

/* Cancels what is running and joins the workers. Accepts NULL. */
void zero_pool_destroy(struct zero_pool *pool);

/*
 * Background pass: every page of the pool that is not ZERO or MAPPED is
 * made ZERO, in ascending order: DIRTY pages are scrubbed, FRESH pages
 * populated (the kernel zeroes them) or scrubbed with scrub_fresh.
 * @rate_limit is in bytes per second, 0 for none. With @skip_fresh the
 * pass leaves FRESH pages alone: while a guest runs they belong to the
 * kernel, which zeroes them on the guest's fault. Returns at once.
 */
void zero_pool_start(struct zero_pool *pool, uint64_t rate_limit,
		     bool skip_fresh);

/*
 * Waits for the background pass. @progress, if set, is called about
 * every 100 ms. Returns 0; -ECANCELED after zero_pool_cancel(); or the
 * first error a worker met (the pass is then cancelled).
 */
int zero_pool_wait(struct zero_pool *pool, void (*progress)(void *arg),
		   void *arg) __attribute__((warn_unused_result));

/*
 * Makes page @page (an index into the memory) ZERO before anything in
 * the background, and waits for it. Returns 0 when the page is ZERO (or
 * already MAPPED), -ECANCELED when cancelled first, or a worker's error.
 * @count: a demand page of the stats (false: one already counted when
 * zero_pool_demand_async() queued it, now only waited for).
 */
int zero_pool_demand(struct zero_pool *pool, uint64_t page, bool count)
	__attribute__((warn_unused_result));

/*
 * Where a demand page's time went, for the bench (docs/DESIGN.md 5):
 * asked -> a worker claims its first extent (hand-off), -> its last
 * extent is done (clear), -> the asker runs again (wake).
 */
struct zero_demand_time {
	double handoff_us;
	double clear_us;
	double wake_us;
	double settled; /* clock_now() when the page settled, 0: not seen */
};

/*
 * How long an idle worker polls for the next demand page after one, and
 * the asker for its page, before sleeping, in seconds.
 */
#define ZERO_POOL_SPIN 200e-6

/*
 * zero_pool_demand() that fills @t (all 0 when the page needed no work,
 * or was already being cleared for another asker).
 */
int zero_pool_demand_timed(struct zero_pool *pool, uint64_t page, bool count,
			   struct zero_demand_time *t)
	__attribute__((warn_unused_result));

/*
 * The asynchronous form for the event loop: returns 0 when the page is
 * already ZERO or MAPPED, 1 when it is queued (or joined) and will be
 * reported by zero_pool_pop_done() once it settles (ZERO, or DIRTY if
 * cancelled), or a negative errno (-ECANCELED after a cancel).
 */
int zero_pool_demand_async(struct zero_pool *pool, uint64_t page)
	__attribute__((warn_unused_result));

/*
 * Settled demand pages are queued and @fd (an eventfd) is written once
 * per page; with @ahead, so are background pages that became ZERO (best
 * effort: at most one queue of them, for zero_pool_pop_ahead()). Returns
 * 0 or -ENOMEM.
 */
int zero_pool_set_notify(struct zero_pool *pool, int fd, bool ahead)
	__attribute__((warn_unused_result));

/* Takes up to @max background pages that became ZERO off their queue. */
unsigned int zero_pool_pop_ahead(struct zero_pool *pool, uint64_t *pages,
				 unsigned int max);

/* Takes up to @max settled demand pages off the queue. */
unsigned int zero_pool_pop_done(struct zero_pool *pool, uint64_t *pages,
				unsigned int max);

/*
 * Stops all work within one chunk. Pages being cleared go back to DIRTY
 * (they may still hold data); finished ones stay ZERO. The pool can be
 * started again.
 */
void zero_pool_cancel(struct zero_pool *pool);

/* The first error a worker met since the last start, or 0. */
int zero_pool_error(struct zero_pool *pool);

void zero_pool_get_stats(struct zero_pool *pool, struct zero_pool_stats *s);

#endif
