/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_STATS_H
#define ZVMM_LIB_STATS_H

#include <stddef.h>

/*
 * Order statistics of timings and latencies: sort the samples once, then
 * pick. A pick is always one of the samples, never an interpolation.
 */

/* Sorts @v[0..n) in place, ascending. */
void stats_sort(double *v, size_t n);

/*
 * The sample at quantile @q (0..1) of the sorted @v[0..n): index
 * q * (n - 1) rounded half up, at most n - 1; 0 when @n is 0.
 */
double stats_percentile_sorted(const double *v, size_t n, double q);

/*
 * The median of the sorted @v[0..n): v[n / 2], the upper one of the two
 * middle samples when @n is even (stats_percentile_sorted() at 0.5 picks
 * the same sample); 0 when @n is 0.
 */
double stats_median_sorted(const double *v, size_t n);

#endif
