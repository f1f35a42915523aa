/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_BENCH_PLOT_H
#define ZVMM_BENCH_PLOT_H

#include <stdint.h>

#define BENCH_MAX_RESULTS 256

/* One row of the table: a method at one page and extent size. */
struct bench_result {
	char method[48]; /* "backend:clzero", "kernel:demand", ... */
	uint64_t page_bytes;
	uint64_t extent_bytes;
	unsigned int threads;
	unsigned int reps;
	char backend[24]; /* pool:prezero rows: the backend auto chose */
	double gbps; /* median */
	double gbps_min;
	double gbps_max;
	/* pool:demand rows: a page's median hand-off, clear and wake (us),
	 * all 0 elsewhere (zero_demand_time); their means, and the 99th
	 * percentile of the three together */
	double handoff_us, clear_us, wake_us;
	double handoff_mean_us, clear_mean_us, wake_mean_us, page_p99_us;
};

/*
 * Checks that a plot can be made into @dir: gnuplot is installed and
 * the directory exists or can be created. Prints the remedy and returns
 * a negative errno otherwise.
 */
int bench_plot_check(const char *dir) __attribute__((warn_unused_result));

/*
 * Writes @dir/bench-gbps.{dat,gp} and has gnuplot draw
 * @dir/bench-gbps.svg: GB/s against extent size, one line per method,
 * min-max as error bars.
 */
int bench_plot(const char *dir, const struct bench_result *res, unsigned int nr)
	__attribute__((warn_unused_result));

#endif
