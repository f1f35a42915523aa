// SPDX-License-Identifier: MIT
#include <stdlib.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void stats_sort(double *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), cmp_double);
}

double stats_percentile_sorted(const double *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

double stats_median_sorted(const double *v, size_t n)
{
	return n ? v[n / 2] : 0;
}
