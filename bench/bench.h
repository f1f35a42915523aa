/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_BENCH_BENCH_H
#define ZVMM_BENCH_BENCH_H

#include <stdbool.h>
#include <stdint.h>

/*
 * `zvmm bench`: every clearing backend at extent sizes 4K to 1G over a
 * warm hugepage region, side by side with the kernel's own hugetlb
 * zeroing at fault (as `perf bench mem map -f demand|populate`) in the
 * same run.
 */

struct bench_opts {
	uint64_t size; /* region bytes, a multiple of 2 MiB */
	unsigned int reps; /* timed repetitions per point, >= 1 */
	const char *backends; /* comma-separated names, NULL for all */
	const char *json; /* NULL, "-" (stdout) or a file */
	const char *plot_dir; /* NULL or a directory for gnuplot output */
	bool quiet; /* no progress line */
};

/*
 * Runs the benchmark and prints its table. Errors are printed here, with
 * what to do; the return value tells the class: -EINVAL for bad options,
 * -EINTR when interrupted by SIGINT/SIGTERM, another negative errno for
 * a missing resource (memory, hugepages, privilege, gnuplot, CPU
 * feature). Every hugepage count raised is put back in all cases.
 */
int bench_run(const struct bench_opts *o) __attribute__((warn_unused_result));

#endif
