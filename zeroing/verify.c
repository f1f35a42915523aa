// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/thread.h"
#include "verify.h"

#define VERIFY_MAX_THREADS 64

bool zero_verify_range(const void *p, uint64_t bytes)
{
	const uint64_t *w = p;

	/*
	 * 4 KiB at a time with no branch inside, so the compiler can keep
	 * the OR in vector registers; the test between blocks stops at the
	 * first block that is not zero.
	 */
	for (uint64_t i = 0; i < bytes / 8; i += 512) {
		uint64_t acc = 0;

		for (unsigned int j = 0; j < 512; j++)
			acc |= w[i + j];
		if (acc)
			return false;
	}
	return true;
}

struct verify_arg {
	struct zero_mem *m;
	uint64_t first, end, dirty;
	pthread_t tid;
	bool started;
};

static void *verify_thread(void *p)
{
	struct verify_arg *a = p;
	struct zero_mem *m = a->m;

	for (uint64_t i = a->first; i < a->end; i++) {
		bool zero;

		/* Read as a scrub would write: the page is ZEROING. */
		if (zero_page_move(m->pages, i, ZP_DIRTY, ZP_ZEROING)) {
			a->dirty += zero_page_get(m->pages, i) != ZP_ZERO;
			continue;
		}
		zero = zero_verify_range(zero_mem_alias_page(m, i),
					 m->page_bytes);
		a->dirty += !zero;
		(void)!zero_page_move(m->pages, i, ZP_ZEROING,
				      zero ? ZP_ZERO : ZP_DIRTY);
	}
	return NULL;
}

/* A thread of its own: named (the caller's share runs unnamed). */
static void *verify_start(void *p)
{
	thread_name("zvmm-verify");
	return verify_thread(p);
}

uint64_t zero_verify_pages(struct zero_mem *m, unsigned int threads,
			   double *seconds)
{
	struct verify_arg a[VERIFY_MAX_THREADS];
	double t0 = clock_now();
	uint64_t dirty = 0, per;
	sigset_t all, old;
	unsigned int n, i;

	if (!threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		threads = cpus > 0 ? (unsigned int)cpus : 1;
	}
	n = threads < VERIFY_MAX_THREADS ? threads : VERIFY_MAX_THREADS;
	if (n > m->nr_pages)
		n = m->nr_pages ? (unsigned int)m->nr_pages : 1;
	per = (m->nr_pages + n - 1) / n;
	/* Its threads take no signal of the embedding process. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < n; i++) {
		a[i] = (struct verify_arg){
			.m = m,
			.first = i * per < m->nr_pages ? i * per : m->nr_pages,
		};
		a[i].end = a[i].first + per < m->nr_pages ? a[i].first + per :
							    m->nr_pages;
		/* The caller's own thread takes the first share, and any
		 * share whose thread cannot start. */
		a[i].started = i && !pthread_create(&a[i].tid, NULL,
						    verify_start, &a[i]);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (i = 1; i < n; i++)
		if (!a[i].started)
			verify_thread(&a[i]);
	verify_thread(&a[0]);
	for (i = 0; i < n; i++) {
		if (a[i].started)
			pthread_join(a[i].tid, NULL);
		dirty += a[i].dirty;
	}
	if (seconds)
		*seconds = clock_now() - t0;
	return dirty;
}
