// SPDX-License-Identifier: MIT
/*
 * limit:write rows of `zvmm bench`: the machine's write ceiling in the
 * same run. Each of N threads, pinned to its own physical core, clears
 * its own warm extent of up to 1 GiB with the fastest backend of the
 * run's backend rows; no engine, no page table, no lock in the way. The
 * engine's rows are read as fractions of this row at the same thread
 * count.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/topo.h"
#include "internal.h"

/* Holds the threads until all exist: 1 go, -1 give up. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t open;
	int state;
};

struct limit_thread {
	const struct zero_backend *b;
	char *p;
	uint64_t bytes;
	int cpu;
	struct gate *gate;
	double t0, t1;
};

static void gate_set(struct gate *g, int state)
{
	pthread_mutex_lock(&g->lock);
	g->state = state;
	pthread_cond_broadcast(&g->open);
	pthread_mutex_unlock(&g->lock);
}

static void *limit_worker(void *arg)
{
	struct limit_thread *lt = arg;
	struct gate *g = lt->gate;
	cpu_set_t set;
	int state;

	if (lt->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(lt->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_mutex_lock(&g->lock);
	while (!g->state)
		pthread_cond_wait(&g->open, &g->lock);
	state = g->state;
	pthread_mutex_unlock(&g->lock);
	if (state < 0)
		return NULL;
	lt->t0 = clock_now();
	lt->b->clear(lt->p, lt->bytes);
	lt->t1 = clock_now();
	return NULL;
}

/* One pass: @n threads each clear their own extent; the wall time. */
static int limit_pass(const struct zero_backend *b, char *base, uint64_t extent,
		      unsigned int n, const int *cpus, double *secs)
{
	struct limit_thread lt[BENCH_MAX_THREADS];
	pthread_t th[BENCH_MAX_THREADS];
	struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			  0 };
	double t0 = 0, t1 = 0;
	unsigned int k, started = 0;
	int ret = 0;

	/* Dirty, as the pool rows leave their pages before a pass. */
	memset(base, 0xa5, extent * n);
	for (k = 0; k < n && !ret; k++) {
		lt[k] = (struct limit_thread){ .b = b,
					       .p = base + k * extent,
					       .bytes = extent,
					       .cpu = cpus[k],
					       .gate = &g };
		ret = -pthread_create(&th[k], NULL, limit_worker, &lt[k]);
		started += !ret;
	}
	gate_set(&g, ret ? -1 : 1);
	for (k = 0; k < started; k++) {
		pthread_join(th[k], NULL);
		if (!k || lt[k].t0 < t0)
			t0 = lt[k].t0;
		if (lt[k].t1 > t1)
			t1 = lt[k].t1;
	}
	*secs = t1 - t0;
	return ret;
}

/* The backend row with the best rate at the largest extent measured. */
static const struct bench_result *fastest(const struct bench *bn)
{
	const struct bench_result *best = NULL;
	uint64_t ext = 0;

	for (unsigned int i = 0; i < bn->nr; i++)
		if (!strncmp(bn->res[i].method, "backend:", 8) &&
		    bn->res[i].extent_bytes > ext)
			ext = bn->res[i].extent_bytes;
	for (unsigned int i = 0; i < bn->nr; i++) {
		const struct bench_result *r = &bn->res[i];

		if (!strncmp(r->method, "backend:", 8) &&
		    r->extent_bytes == ext && (!best || r->gbps > best->gbps))
			best = r;
	}
	return best;
}

int bench_limit(struct bench *bn)
{
	const struct bench_result *best = fastest(bn);
	const struct zero_backend *b;
	unsigned int w[BENCH_MAX_THREADS], nw;
	int cpus[BENCH_MAX_THREADS];
	double t[64];
	char why[256];
	int ret;

	if (!best)
		return 0;
	ret = zero_backend_find(best->method + 8, &b, why, sizeof(why));
	if (ret) {
		pr_err("%s", why);
		return ret;
	}
	nw = bench_worker_counts(w, cpus);
	for (unsigned int k = 0; k < nw; k++) {
		uint64_t extent = bn->region_bytes / w[k];

		/* Whole 2 MiB pages, at most 1 GiB a thread. */
		extent = extent > SZ_1G ? SZ_1G : extent / SZ_2M * SZ_2M;
		bn->step++;
		if (!extent)
			continue;
		for (unsigned int r = 0; r < bn->o->reps; r++) {
			if (bench_stop)
				return -EINTR;
			bench_progress(bn, "limit:write", extent, r + 1);
			ret = limit_pass(b, bn->region, extent, w[k], cpus,
					 &t[r]);
			if (ret) {
				pr_err("limit:write with %u threads: %s", w[k],
				       strerror(-ret));
				return ret;
			}
		}
		bench_record_threads(bn, "limit:write", bn->region_page, extent,
				     extent * w[k], t, w[k], b->name);
	}
	return 0;
}
