// SPDX-License-Identifier: MIT
/*
 * limit:write rows of `zvmm bench`: the machine's write ceiling in the
 * same run. Each of N threads, pinned to its own physical core, clears
 * its own warm extent of up to 1 GiB; no engine, no page table, no lock
 * in the way. The backends timed are the leaders of the run's backend
 * rows (LIMIT_BAND of the fastest, LIMIT_MAX at most), in turn, and each
 * thread count keeps the one with the best median: the fastest backend
 * of one thread is not the fastest of two everywhere (Xeon model 207:
 * nt_avx512 led one thread at 22.6 GB/s, and two threads clearing with it
 * made 22.9 GB/s, median of 5, while the engine's two workers scrubbed
 * at 43.7 with nt_avx2). The engine's rows are read as fractions of this
 * row at the same thread count.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/stats.h"
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

#define LIMIT_BAND 0.9
#define LIMIT_MAX 3

/*
 * The backend rows at the largest extent measured within LIMIT_BAND of
 * the best, best first, LIMIT_MAX at most, into @b. Returns how many.
 */
static unsigned int leaders(const struct bench *bn,
			    const struct zero_backend **b)
{
	const struct bench_result *top[LIMIT_MAX] = { NULL };
	uint64_t ext = 0;
	unsigned int n = 0, i, k;
	char why[256];

	for (i = 0; i < bn->nr; i++)
		if (!strncmp(bn->res[i].method, "backend:", 8) &&
		    bn->res[i].extent_bytes > ext)
			ext = bn->res[i].extent_bytes;
	for (i = 0; i < bn->nr; i++) {
		const struct bench_result *r = &bn->res[i];

		if (strncmp(r->method, "backend:", 8) || r->extent_bytes != ext)
			continue;
		/* Insertion into the best LIMIT_MAX, best first. */
		for (k = 0; k < LIMIT_MAX && top[k] && top[k]->gbps >= r->gbps;
		     k++)
			;
		if (k == LIMIT_MAX)
			continue;
		memmove(&top[k + 1], &top[k],
			(LIMIT_MAX - k - 1) * sizeof(*top));
		top[k] = r;
	}
	for (k = 0; k < LIMIT_MAX && top[k]; k++) {
		if (top[k]->gbps < LIMIT_BAND * top[0]->gbps)
			break;
		if (zero_backend_find(top[k]->method + 8, &b[n], why,
				      sizeof(why)))
			pr_err("%s", why);
		else
			n++;
	}
	return n;
}

static double median_secs(const double *t, unsigned int n)
{
	double s[64];

	memcpy(s, t, n * sizeof(*t));
	stats_sort(s, n);
	return stats_median_sorted(s, n);
}

int bench_limit(struct bench *bn)
{
	const struct zero_backend *b[LIMIT_MAX];
	unsigned int w[BENCH_MAX_THREADS], nw, nb, best;
	int cpus[BENCH_MAX_THREADS];
	double t[LIMIT_MAX][64];
	int ret;

	nb = leaders(bn, b);
	if (!nb)
		return 0;
	nw = bench_worker_counts(w, cpus);
	for (unsigned int k = 0; k < nw; k++) {
		uint64_t extent = bn->region_bytes / w[k];

		/* Whole 2 MiB pages, at most 1 GiB a thread. */
		extent = extent > SZ_1G ? SZ_1G : extent / SZ_2M * SZ_2M;
		bn->step++;
		if (!extent)
			continue;
		/* The leaders in turn, each rep: the host's drift is shared. */
		for (unsigned int r = 0; r < bn->o->reps; r++) {
			bench_progress(bn, "limit:write", extent, r + 1);
			for (unsigned int j = 0; j < nb; j++) {
				if (bench_stop)
					return -EINTR;
				ret = limit_pass(b[j], bn->region, extent, w[k],
						 cpus, &t[j][r]);
				if (ret) {
					pr_err("limit:write with %u threads: %s",
					       w[k], strerror(-ret));
					return ret;
				}
			}
		}
		best = 0;
		for (unsigned int j = 1; j < nb; j++)
			if (median_secs(t[j], bn->o->reps) <
			    median_secs(t[best], bn->o->reps))
				best = j;
		bench_record_threads(bn, "limit:write", bn->region_page, extent,
				     extent * w[k], t[best], w[k],
				     b[best]->name);
	}
	return 0;
}
