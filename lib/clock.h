/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_CLOCK_H
#define ZVMM_LIB_CLOCK_H

/*
 * The one clock every module times with: CLOCK_MONOTONIC in seconds. A
 * double keeps nanoseconds exact for 2^53 ns (104 days of uptime) and
 * sub-microsecond beyond, which is all a launch or a pass needs.
 */
double clock_now(void);

#endif
