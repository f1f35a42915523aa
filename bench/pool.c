// SPDX-License-Identifier: MIT
/*
 * pool:prezero, pool:verify, pool:demand and pool:populate rows of
 * `zvmm bench`: the engine itself, with its worker pool, bounded chunks
 * and backend choice, against the kernel populating fresh pages with the
 * same number of threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/stats.h"
#include "../zeroing/engine.h"
#include "../zeroing/topo.h"
#include "../zeroing/verify.h"
#include "internal.h"

static const uint64_t pool_chunks[] = {
	256 << 10, SZ_2M, SZ_8M, 64 * SZ_1M, SZ_1G,
};
#define NR_CHUNKS (sizeof(pool_chunks) / sizeof(pool_chunks[0]))

/*
 * 1, 2, 4, ... up to the number of physical cores of the first node, and
 * that number, in @w; @cpus, when given, gets one CPU per physical core
 * (or -1: not pinned) for threads of the bench's own.
 */
unsigned int bench_worker_counts(unsigned int *w, int *cpus)
{
	struct zero_topo t;
	unsigned int n = 0, max = 1;
	bool known = !zero_topo_detect(&t) && t.node[0].nr_cores;

	if (known)
		max = t.node[0].nr_cores;
	if (max > BENCH_MAX_THREADS)
		max = BENCH_MAX_THREADS;
	for (unsigned int k = 0; cpus && k < max; k++)
		cpus[k] = known ? t.node[0].cores[k] : -1;
	for (unsigned int k = 1; k < max; k *= 2)
		w[n++] = k;
	w[n++] = max;
	return n;
}

unsigned int bench_pool_steps(uint64_t page)
{
	unsigned int w[BENCH_MAX_THREADS], nw = bench_worker_counts(w, NULL),
					   nc = 0;

	for (unsigned int c = 0; c < NR_CHUNKS; c++)
		nc += pool_chunks[c] <= page;
	/* prezero at each chunk, demand, verify, populate */
	return nw * (nc + 3);
}

/*
 * backend=auto at @chunk, as the engine picks it (DESIGN.md 6): this
 * machine's profile when it is trusted, else measured out of cache on
 * @m's memory (warm, rewritten before each pass anyway) and kept, so
 * that a row never runs a backend picked at cache speed.
 */
static int engine_backend(struct zero_mem *m, uint64_t chunk,
			  const struct zero_backend **b, double *gbps)
{
	enum zero_backend_source from;
	char path[4096];
	bool keep = !zero_profile_default_path(path, sizeof(path));

	return zero_backend_auto(chunk, keep ? path : NULL, keep,
				 zero_mem_alias_page(m, 0), m->bytes, b, gbps,
				 &from);
}

static int make_engine(struct zero_mem *m, const char *backend,
		       unsigned int workers, uint64_t chunk,
		       struct zero_engine **e)
{
	struct zero_policy pol;
	struct zero_engine_cfg cfg = { .pol = &pol, .mem = m };
	char err[512];
	int ret;

	zero_policy_defaults(&pol);
	pol.mode = ZERO_MODE_PREZERO;
	snprintf(pol.backend, sizeof(pol.backend), "%s", backend);
	pol.workers = workers;
	pol.chunk = chunk;
	ret = zero_engine_create(&cfg, e, err, sizeof(err));
	if (ret)
		pr_err("%s", err);
	return ret;
}

static int new_mem(struct bench *bn, uint64_t page, struct zero_mem **m)
{
	struct zero_mem_opts o = { .bytes = bn->o->size, .page_bytes = page };
	char err[512];
	int ret = zero_mem_create(&o, m, err, sizeof(err));

	if (ret)
		pr_err("%s", err);
	return ret;
}

/* A pool that held a guest: every page written with a pattern, DIRTY. */
static int make_dirty(struct zero_mem *m)
{
	for (uint64_t i = 0; i < m->nr_pages; i++)
		memset(zero_mem_alias_page(m, i), 0xa5, m->page_bytes);
	return zero_mem_written(m);
}

static int populate_rows(struct bench *bn, uint64_t page, const unsigned int *w,
			 unsigned int nw)
{
	double t[64];
	int ret = 0;

	for (unsigned int k = 0; k < nw && !ret; k++) {
		bn->step++;
		for (unsigned int r = 0; r < bn->o->reps && !ret; r++) {
			struct zero_prezero_report rep;
			struct zero_engine *e = NULL;
			struct zero_mem *m = NULL;

			if (bench_stop)
				return -EINTR;
			bench_progress(bn, "pool:populate", page, r + 1);
			/* Fresh memory each time: a new memfd, untimed. */
			ret = new_mem(bn, page, &m);
			if (!ret)
				ret = make_engine(m, "memset", w[k], page, &e);
			if (!ret)
				ret = zero_engine_prezero(e, &rep);
			t[r] = rep.seconds;
			zero_engine_destroy(e);
			zero_mem_destroy(m);
		}
		if (!ret) {
			bench_record_threads(bn, "pool:populate", page, page,
					     bn->o->size, t, w[k], NULL);
		}
	}
	return ret;
}

/*
 * The median and the mean of each part of @n demand pages' times, and
 * the 99th percentile of the three together, in @r: a row's rate is its
 * pages' mean, so a few slow pages show in the means and not in the
 * medians.
 */
static void demand_split(struct bench_result *r, struct zero_demand_time *dt,
			 size_t n)
{
	double *v = malloc(n * sizeof(*v));
	double *out[] = { &r->handoff_us, &r->clear_us, &r->wake_us };
	double *mean[] = { &r->handoff_mean_us, &r->clear_mean_us,
			   &r->wake_mean_us };

	for (unsigned int k = 0; v && n && k < 4; k++) {
		double sum = 0;

		for (size_t i = 0; i < n; i++) {
			v[i] = !k     ? dt[i].handoff_us :
			       k == 1 ? dt[i].clear_us :
			       k == 2 ? dt[i].wake_us :
					dt[i].handoff_us + dt[i].clear_us +
						dt[i].wake_us;
			sum += v[i];
		}
		stats_sort(v, n);
		if (k < 3) {
			*out[k] = stats_median_sorted(v, n);
			*mean[k] = sum / (double)n;
		} else {
			r->page_p99_us = v[(size_t)((double)(n - 1) * 0.99)];
		}
	}
	free(v);
}

/*
 * pool:demand: one thread asks for every page of a poisoned pool in
 * turn and waits for it, as a vCPU faulting through the pages would;
 * the workers clear each page in the extents the engine cuts a demand
 * page into. No userfaultfd in the way: this is the engine's part of a
 * demand fault (`make bench-demand` measures the whole fault). Each
 * page's hand-off, clear and wake are kept for the row's breakdown.
 */
static int demand_rows(struct bench *bn, struct zero_mem *m,
		       const unsigned int *w, unsigned int nw)
{
	size_t per = m->nr_pages, n = per * bn->o->reps;
	struct zero_demand_time *dt = calloc(n ? n : 1, sizeof(*dt));
	const struct zero_backend *b;
	struct zero_engine *e;
	uint64_t chunk;
	double t[64], gbps, t0;
	int ret;

	if (!dt)
		return -ENOMEM;
	ret = engine_backend(m, SZ_2M, &b, &gbps);
	chunk = ret ? 0 : zero_chunk_auto(gbps, m->page_bytes);
	for (unsigned int k = 0; k < nw && !ret; k++) {
		bn->step++;
		ret = make_engine(m, b->name, w[k], chunk, &e);
		for (unsigned int r = 0; r < bn->o->reps && !ret; r++) {
			if (bench_stop) {
				ret = -EINTR;
				break;
			}
			bench_progress(bn, "pool:demand", m->page_bytes, r + 1);
			ret = make_dirty(m);
			t0 = clock_now();
			for (uint64_t p = 0; p < per && !ret; p++)
				ret = zero_engine_demand_timed(
					e, p, &dt[r * per + p]);
			t[r] = clock_now() - t0;
			if (!ret &&
			    zero_pages_count(m->pages, ZP_ZERO) != m->nr_pages)
				ret = -EIO;
		}
		zero_engine_destroy(e);
		if (!ret) {
			bench_record_threads(bn, "pool:demand", m->page_bytes,
					     chunk, m->bytes, t, w[k], b->name);
			if (!strcmp(bn->res[bn->nr - 1].method, "pool:demand"))
				demand_split(&bn->res[bn->nr - 1], dt, n);
		}
	}
	free(dt);
	return ret;
}

/*
 * pool:verify: what `pool.record = verify` costs at open, against
 * pool:prezero on the same memory: every byte of a zero pool read by
 * 1..N threads (docs/DESIGN.md 3, "Threat model"). Verifying a record
 * is worth offering only where reading beats scrubbing.
 */
static int verify_rows(struct bench *bn, struct zero_mem *m,
		       const unsigned int *w, unsigned int nw)
{
	double t[64];
	int ret = 0;

	for (unsigned int k = 0; k < nw && !ret; k++) {
		bn->step++;
		for (unsigned int r = 0; r < bn->o->reps && !ret; r++) {
			if (bench_stop)
				return -EINTR;
			bench_progress(bn, "pool:verify", m->page_bytes, r + 1);
			/* Zero memory the table no longer vouches for. */
			ret = zero_mem_written(m);
			if (!ret && zero_verify_pages(m, w[k], &t[r]))
				ret = -EIO;
		}
		if (!ret)
			bench_record_threads(bn, "pool:verify", m->page_bytes,
					     m->page_bytes, m->bytes, t, w[k],
					     "read");
	}
	return ret;
}

static int prezero_rows(struct bench *bn, uint64_t page, const unsigned int *w,
			unsigned int nw)
{
	struct zero_prezero_report rep;
	struct zero_engine *e;
	struct zero_mem *m;
	double t[64], gbps;
	int ret;

	/* Populated once (and so warm); poisoned again before each pass. */
	ret = new_mem(bn, page, &m);
	if (ret)
		return ret;
	ret = make_engine(m, "memset", 1, page, &e);
	if (!ret)
		ret = zero_engine_prezero(e, &rep);
	zero_engine_destroy(e);
	for (unsigned int c = 0; c < NR_CHUNKS && !ret; c++) {
		const struct zero_backend *b;
		uint64_t chunk = pool_chunks[c];

		if (chunk > page)
			continue;
		ret = engine_backend(m, chunk, &b, &gbps);
		for (unsigned int k = 0; k < nw && !ret; k++) {
			bn->step++;
			ret = make_engine(m, b->name, w[k], chunk, &e);
			for (unsigned int r = 0; r < bn->o->reps && !ret; r++) {
				if (bench_stop) {
					ret = -EINTR;
					break;
				}
				bench_progress(bn, "pool:prezero", chunk,
					       r + 1);
				ret = make_dirty(m);
				if (!ret)
					ret = zero_engine_prezero(e, &rep);
				if (!ret && rep.scrub_bytes != bn->o->size)
					ret = -EIO;
				t[r] = rep.seconds;
			}
			zero_engine_destroy(e);
			if (!ret) {
				bench_record_threads(bn, "pool:prezero", page,
						     chunk, bn->o->size, t,
						     w[k], b->name);
			}
		}
	}
	/* The last prezero pass left every page zero: read it back. */
	if (!ret)
		ret = verify_rows(bn, m, w, nw);
	if (!ret)
		ret = demand_rows(bn, m, w, nw);
	zero_mem_destroy(m);
	return ret;
}

int bench_pool(struct bench *bn, uint64_t page)
{
	unsigned int w[BENCH_MAX_THREADS], nw = bench_worker_counts(w, NULL);
	int ret;

	ret = prezero_rows(bn, page, w, nw);
	if (!ret)
		ret = populate_rows(bn, page, w, nw);
	if (ret && ret != -EINTR)
		pr_err("pool rows for %s pages failed: %s",
		       page == SZ_1G ? "1 GiB" : "2 MiB", strerror(-ret));
	return ret;
}
