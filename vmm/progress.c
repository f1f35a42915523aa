// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/size.h"
#include "progress.h"

void vmm_progress_begin(struct vmm_progress *p, bool quiet)
{
	p->on = !quiet && isatty(STDERR_FILENO);
	p->t0 = clock_now();
	p->last = 0;
	p->drawn = false;
}

void vmm_progress_update(struct vmm_progress *p, const char *what,
			 uint64_t done, uint64_t total)
{
	double now = clock_now(), el = now - p->t0, rate, left;
	char a[32], b[32];

	if (!p->on || el < 1.0 || now - p->last < 0.1)
		return;
	p->last = now;
	rate = (double)done / el;
	left = rate > 0 && total > done ? (double)(total - done) / rate : 0;
	fprintf(stderr, "\r\033[Kzvmm: %s %s of %s, %.1f GB/s, %.0f s left",
		what, size_human(done, a, sizeof(a)),
		size_human(total, b, sizeof(b)), rate / 1e9, left);
	p->drawn = true;
}

void vmm_progress_end(struct vmm_progress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = false;
}
