/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_PROGRESS_H
#define ZVMM_VMM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A progress line on stderr for long work: drawn only on a terminal,
 * only once the work has lasted a second, and redrawn at most ten times
 * a second however often it is told (a prezero of 8 GiB of 2 MiB pages
 * finishes 4,096 pages; the line changes 10 times a second, not 4,096).
 */
struct vmm_progress {
	bool on; /* stderr is a terminal and the verb is not --quiet */
	double t0, last;
	bool drawn;
};

void vmm_progress_begin(struct vmm_progress *p, bool quiet);

/* @what: "prezero", "background scrub"; @done of @total bytes. */
void vmm_progress_update(struct vmm_progress *p, const char *what,
			 uint64_t done, uint64_t total);

/* Clears the line when one was drawn. */
void vmm_progress_end(struct vmm_progress *p);

#endif
