// SPDX-License-Identifier: MIT
/*
 * What the VMM targets need from modules they do not link: the clock from
 * zeroing/calibrate.c, whose backends and measurements have no place in a
 * parser's fuzzer.
 */
#include <time.h>

#include "../zeroing/calibrate.h"

double zero_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
