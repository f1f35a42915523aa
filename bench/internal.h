/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_BENCH_INTERNAL_H
#define ZVMM_BENCH_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "../zeroing/backend.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/hugetlb.h"
#include "bench.h"
#include "plot.h"

/* Threads of one row at most: workers, or limit:write's writers. */
#define BENCH_MAX_THREADS 64

/* One run of `zvmm bench`, shared by its parts (bench.c, pool.c). */
struct bench {
	const struct bench_opts *o;
	struct bench_result res[BENCH_MAX_RESULTS];
	unsigned int nr;
	const struct zero_backend *sel[ZERO_PROFILE_MAX_BACKENDS];
	unsigned int nsel;
	unsigned int step, steps;
	bool progress;
	FILE *table; /* stdout, or stderr when the JSON takes stdout */
	FILE *json;
	struct zero_hugetlb_resv resv_2m, resv_1g;
	bool resv_ok_2m, resv_ok_1g; /* the kernel rows got their pages */
	char *region;
	uint64_t region_bytes, region_page;
	const char *backing;
};

/* Set by SIGINT/SIGTERM: every loop stops after its current pass. */
extern volatile sig_atomic_t bench_stop;

/* Progress line on a terminal: step, method, extent, repetition. */
void bench_progress(struct bench *bn, const char *what, uint64_t extent,
		    unsigned int rep);

/* Records the median and range of o->reps timings @t of @bytes each. */
void bench_record(struct bench *bn, const char *method, uint64_t page,
		  uint64_t extent, uint64_t bytes, double *t);

/* The same for a row of @threads threads, @backend (NULL: none) named. */
void bench_record_threads(struct bench *bn, const char *method, uint64_t page,
			  uint64_t extent, uint64_t bytes, double *t,
			  unsigned int threads, const char *backend);

/*
 * pool:prezero and pool:populate rows for @page: the engine scrubbing a
 * poisoned, warm DIRTY pool with 1..N workers at each chunk size, and
 * populating FRESH pages with 1..N workers. Returns 0, -EINTR or the
 * engine's error.
 */
int bench_pool(struct bench *bn, uint64_t page);

/* Progress steps bench_pool() takes for @page. */
unsigned int bench_pool_steps(uint64_t page);

/*
 * Thread counts of the pool and limit rows (1, 2, 4, ... and the number
 * of physical cores of the first node) in @w; returns how many. @cpus,
 * when not NULL, gets a CPU per physical core (-1: unknown).
 */
unsigned int bench_worker_counts(unsigned int *w, int *cpus);

/*
 * limit:write rows: the fastest backend of the backend rows, one thread
 * per physical core each clearing its own warm extent of the region,
 * at each thread count. Returns 0, -EINTR or a thread error.
 */
int bench_limit(struct bench *bn);

#endif
