/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_ENGINE_H
#define ZVMM_ZEROING_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "memory.h"
#include "policy.h"
#include "pool.h"
#include "topo.h"

/*
 * The zeroing engine: the policy applied to one guest memory. It picks
 * the backend and chunk size, plans workers and page ranges over the NUMA
 * nodes, binds each range to its node and runs one worker pool per node.
 */

struct zero_engine; /* opaque outside engine.c */

struct zero_engine_cfg {
	const struct zero_policy *pol;
	struct zero_mem *mem;
	const char *profile_path; /* for backend=auto; NULL: the default */
	const struct zero_topo *topo; /* NULL: this machine's */
};

/*
 * Returns 0, -EINVAL for a policy that does not fit this machine, or
 * another negative errno (-EOPNOTSUPP: the backend cannot run here);
 * @err says what to do.
 */
int zero_engine_create(const struct zero_engine_cfg *cfg,
		       struct zero_engine **out, char *err, size_t err_len)
	__attribute__((warn_unused_result));

void zero_engine_destroy(struct zero_engine *e);

/* Worker threads, over every node. */
unsigned int zero_engine_workers(const struct zero_engine *e);

/* Bytes a worker clears between two yields. */
uint64_t zero_engine_chunk(const struct zero_engine *e);

/* The backend's clearing function. */
arch_clear_fn zero_engine_clear_fn(const struct zero_engine *e);

/*
 * A background pass over every pool, as zero_pool_start(): @skip_fresh
 * leaves FRESH pages alone.
 */
void zero_engine_start(struct zero_engine *e, uint64_t rate_limit,
		       bool skip_fresh);

/* Waits for the pass zero_engine_start() began (zero_pool_wait()). */
int zero_engine_wait(struct zero_engine *e) __attribute__((warn_unused_result));

/* Where the backend came from: "policy", "profile", "measured", "none". */
const char *zero_engine_backend_from(const struct zero_engine *e);

/* The backend's name for reports: "none" when no page needs it. */
const char *zero_engine_backend_name(const struct zero_engine *e);

/*
 * prezero (DESIGN.md 4): every page not ZERO or MAPPED becomes ZERO, the
 * workers of each node in parallel. Returns 0, -ECANCELED after
 * zero_engine_cancel(), or a worker's error.
 */
int zero_engine_prezero(struct zero_engine *e, struct zero_prezero_report *r)
	__attribute__((warn_unused_result));

/* Makes page @page ZERO ahead of all background work. */
int zero_engine_demand(struct zero_engine *e, uint64_t page)
	__attribute__((warn_unused_result));

/* zero_engine_demand() telling where the time went (zero_pool_demand_timed). */
int zero_engine_demand_timed(struct zero_engine *e, uint64_t page,
			     struct zero_demand_time *t)
	__attribute__((warn_unused_result));

/* The same for a page zero_engine_demand_async() queued: not counted again. */
int zero_engine_demand_wait(struct zero_engine *e, uint64_t page)
	__attribute__((warn_unused_result));

/*
 * Stops every pool within one chunk; callable from any thread. Sticky:
 * work started later is cancelled too, until zero_engine_resume().
 */
void zero_engine_cancel(struct zero_engine *e);

/* Lets work start again after zero_engine_cancel() (one thread). */
void zero_engine_resume(struct zero_engine *e);

/*
 * hybrid: background workers scrub DIRTY pages ascending, node by node,
 * at most @rate_limit bytes per second, while the guest runs. FRESH pages
 * are left to the kernel.
 */
void zero_engine_start_background(struct zero_engine *e, uint64_t rate_limit);

/* zero_pool_demand_async() on the pool holding @page. */
int zero_engine_demand_async(struct zero_engine *e, uint64_t page)
	__attribute__((warn_unused_result));

/*
 * Settled demand pages are announced on eventfd @fd (every pool); with
 * @ahead, background pages that became ZERO too.
 */
int zero_engine_set_notify(struct zero_engine *e, int fd, bool ahead)
	__attribute__((warn_unused_result));

/* Takes up to @max background pages that became ZERO from all pools. */
unsigned int zero_engine_pop_ahead(struct zero_engine *e, uint64_t *pages,
				   unsigned int max);

/* Takes up to @max settled demand pages from all pools. */
unsigned int zero_engine_pop_done(struct zero_engine *e, uint64_t *pages,
				  unsigned int max);

/*
 * @fn is told, from the thread in zero_engine_prezero(), how the pass
 * goes: about ten times a second (zero_pool_wait()'s timer) and once a
 * pool is done. NULL: not told.
 */
void zero_engine_set_progress(struct zero_engine *e, zero_progress_fn *fn,
			      void *arg);

/* The first error a worker met since the last start, or 0. */
int zero_engine_error(struct zero_engine *e);

/*
 * Stops the work in hand and waits until no page is ZEROING; later work
 * may start again (unlike zero_engine_cancel()).
 */
void zero_engine_quiesce(struct zero_engine *e);

/* Sums the pools' statistics. */
void zero_engine_stats(struct zero_engine *e, struct zero_pool_stats *s);

/*
 * chunk = auto: about 100 us of clearing at @gbps, a power of two from
 * 256 KiB to the 8 MiB cap (DESIGN.md 5), never above the page size.
 */
uint64_t zero_chunk_auto(double gbps, uint64_t page_bytes);

#endif
