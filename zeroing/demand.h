/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_DEMAND_H
#define ZVMM_ZEROING_DEMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/*
 * Demand faults (docs/DESIGN.md 3, 4): userfaultfd in MISSING and MINOR
 * mode on the guest mapping, so the first touch of every page not mapped
 * comes here: a MINOR fault for a page the file holds (DIRTY or ZERO), a
 * MISSING fault for a hole (FRESH). A DIRTY page is scrubbed and a FRESH
 * one populated through the worker pool ahead of background work, then
 * UFFDIO_CONTINUE maps it and wakes the vCPU; a ZERO page is only mapped.
 */

struct zero_demand {
	int uffd;
	int done_fd; /* eventfd: pages the workers finished for us */
	struct zero_mem *mem;
	struct zero_engine *engine;
	double *pending; /* per page: when its first fault was read, 0: none */
	uint64_t faults; /* fault messages read */
	uint64_t pages; /* pages mapped on a fault */
	uint64_t scrubbed_pages; /* of those, scrubbed first (DIRTY) */
	uint64_t populated_pages; /* of those, holes populated first */
	uint64_t ahead_pages; /* mapped as the background finished them */
	/* MINOR faults on pages the table called FRESH: allocated by
	 * another process behind zvmm's back, scrubbed before mapping. */
	uint64_t foreign_pages;
	double *lat_us; /* fault read -> UFFDIO_CONTINUE, per page */
	size_t nr_lat;
	/*
	 * Of those, faults that needed a scrub while a background pass was
	 * running: they wait for a worker to finish its chunk, so their
	 * latency is the one the chunk size trades against background
	 * throughput (seed 000's 8 MiB bound).
	 */
	uint8_t *busy; /* per page: its scrub was queued behind background */
	double *busy_us;
	size_t nr_busy;
};

/*
 * Opens userfaultfd, checks for the features and UFFDIO_CONTINUE, and
 * registers the guest mapping in MINOR mode, and with @holes in MISSING
 * mode too, so that holes fault to zvmm as well. With @ahead (hybrid),
 * pages the background makes ZERO are mapped as it finishes them. Pages
 * mapped with zero_demand_map_ahead() never fault. Returns 0 or a negative errno with
 * @err saying what to do.
 */
int zero_demand_open(struct zero_demand *f, struct zero_mem *mem,
		     struct zero_engine *engine, bool holes, bool ahead,
		     char *err, size_t err_len)
	__attribute__((warn_unused_result));

void zero_demand_close(struct zero_demand *f);

/*
 * Maps every ZERO page of [@first, @end) into the guest mapping now, one
 * UFFDIO_CONTINUE per run of them: no fault will come for them. Before
 * the guest starts this is how pages are mapped at all: registering the
 * mapping unshares hugetlb's shared page tables (a 1 GiB-aligned shared
 * mapping shares them with the alias), dropping whatever was populated
 * before. Returns the number of pages mapped, or a negative errno.
 */
int zero_demand_map_ahead(struct zero_demand *f, uint64_t first, uint64_t end)
	__attribute__((warn_unused_result));

/*
 * Makes pages [@first, @end) ZERO where they are not yet the guest's, and
 * maps them, waiting for the workers: after it no access to them, from
 * any thread, faults to zvmm. The caller serialises it with the serving
 * calls. 0, or a negative errno (-ECANCELED once the run is cancelled).
 */
int zero_demand_access(struct zero_demand *f, uint64_t first, uint64_t end)
	__attribute__((warn_unused_result));

/* Reads every queued fault and serves it or hands it to the workers. */
int zero_demand_read(struct zero_demand *f) __attribute__((warn_unused_result));

/* Maps the pages the workers have finished (after done_fd fired). */
int zero_demand_complete(struct zero_demand *f)
	__attribute__((warn_unused_result));

/*
 * After the run has stopped and the workers are quiesced: serves every
 * fault still pending or queued by making the page zero here, with
 * @clear, and mapping it, so no vCPU stays stuck in a fault. The guest
 * never runs again, but it still never gets a stale page.
 */
void zero_demand_drain(struct zero_demand *f, arch_clear_fn clear);

/*
 * With the workers quiesced: makes page @page ZERO here with @clear (a
 * hole populated) if it is DIRTY or FRESH; left as it was on failure.
 */
int zero_demand_make_zero(struct zero_demand *f, uint64_t page,
			  arch_clear_fn clear);

/* Latency percentile @q (0..1) in microseconds, 0 without faults. */
double zero_demand_latency(struct zero_demand *f, double q);

/* The same for the faults scrubbed while background work ran. */
double zero_demand_busy_latency(struct zero_demand *f, double q);

#endif
