// SPDX-License-Identifier: MIT
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/size.h"
#include "calibrate.h"
#include "engine.h"

struct zero_engine {
	struct zero_mem *mem;
	struct zero_policy pol;
	const struct zero_backend *backend;
	double backend_gbps; /* calibrated rate at the chunk size, 0 unknown */
	bool backend_unused; /* auto, and nothing to scrub: not measured */
	enum zero_backend_source backend_from;
	int cancel; /* sticky until zero_engine_resume() (atomic) */
	uint64_t chunk;
	struct zero_plan plan;
	unsigned int nr_pools;
	struct zero_pool *pool[ZERO_MAX_NODES];
	double t0;
	/* told how a prezero pass goes, from the waiting thread */
	zero_progress_fn *progress;
	void *progress_arg;
	uint64_t progress_total;
};

static void start_pools(struct zero_engine *e, uint64_t rate_limit,
			bool skip_fresh);

uint64_t zero_chunk_auto(double gbps, uint64_t page_bytes)
{
	/* 100 us at the rate; the kernel bounded ~1 ms at ~10 GB/s. */
	double budget = (gbps > 0 ? gbps : 10) * 1e9 * 100e-6;
	uint64_t c = 256 << 10;

	while (c * 2 <= (uint64_t)budget && c * 2 <= SZ_8M)
		c *= 2;
	return c < page_bytes ? c : page_bytes;
}

/*
 * The first run of DIRTY pages of at least zero_auto_bytes() (this
 * machine's last-level cache and the timed windows: 636 MiB on a Xeon
 * with a 300 MiB L3), or the longest one when none is that long (then
 * measured in place and not kept), through the alias mapping: measuring
 * backends there costs no memory of zvmm's own (such a buffer would be
 * far more than its RSS) and clears pages that are scrubbed again
 * anyway. They stay DIRTY: nothing is promised for them.
 */
static void *dirty_run(struct zero_mem *m, uint64_t *bytes)
{
	uint64_t first = 0, n = 0, need = zero_auto_bytes();
	uint64_t best = 0, best_n = 0;

	/* The first run long enough, else the longest there is. */
	for (uint64_t p = 0; p < m->nr_pages; p++) {
		if (zero_page_get(m->pages, p) != ZP_DIRTY) {
			n = 0;
			continue;
		}
		if (!n++)
			first = p;
		if (n > best_n) {
			best = first;
			best_n = n;
		}
		if (n * m->page_bytes >= need)
			break;
	}
	*bytes = best_n * m->page_bytes;
	return best_n ? zero_mem_alias_page(m, best) : NULL;
}

static int pick_backend(struct zero_engine *e, const char *profile, char *err,
			size_t len)
{
	uint64_t scratch_bytes, chunk;
	struct zero_profile p;
	char path[4096];
	void *scratch;
	bool keep = false, have = false;
	int ret, line;

	if (strcmp(e->pol.backend, "auto")) {
		e->backend_from = ZERO_FROM_POLICY;
		ret = zero_backend_find(e->pol.backend, &e->backend, err, len);
		return ret == -ENOENT ? -EINVAL : ret;
	}
	/* This machine's own profile: a measurement is kept there. */
	if (!profile && !zero_profile_default_path(path, sizeof(path))) {
		profile = path;
		keep = true;
	}
	/*
	 * Memory with no stale page never calls the backend: the kernel
	 * zeroes fresh pages (on prezero's populate, or on the guest's own
	 * fault). Do not spend ~0.25 s measuring backends at start-up for
	 * nothing when no profile has the answer.
	 */
	if ((e->pol.mode != ZERO_MODE_PREZERO ||
	     e->pol.fresh == ZERO_FRESH_TRUST) &&
	    !zero_pages_count(e->mem->pages, ZP_DIRTY) &&
	    !(e->mem->pool && e->pol.on_exit == ZERO_EXIT_SCRUB)) {
		if (!profile || zero_profile_read(profile, &p, &line)) {
			e->backend_unused = true;
			e->backend_from = ZERO_FROM_NONE;
			return zero_backend_find("memset", &e->backend, err,
						 len);
		}
		have = true;
	}
	/* Choose at the chunk in use, or at 2 MiB before it is known. */
	chunk = e->pol.chunk ? e->pol.chunk : SZ_2M;
	scratch = dirty_run(e->mem, &scratch_bytes);
	/* Read once: each read probes the machine (~0.1 ms, Xeon 207). */
	ret = have ? zero_backend_auto_read(chunk, profile, &p, keep, scratch,
					    scratch_bytes, &e->backend,
					    &e->backend_gbps,
					    &e->backend_from) :
		     zero_backend_auto(chunk, profile, keep, scratch,
				       scratch_bytes, &e->backend,
				       &e->backend_gbps, &e->backend_from);
	if (ret)
		snprintf(err, len,
			 "cannot measure the backends for backend = auto: %s",
			 strerror(-ret));
	return ret;
}

static void bind_range(struct zero_mem *m, const struct zero_plan_range *r)
{
	size_t off = r->first_page * m->page_bytes;
	size_t len = r->nr_pages * m->page_bytes;

	if (numa_available() < 0)
		return;
	/* Before anything is populated: pages follow the range's node. */
	numa_tonode_memory(m->guest + off, len, r->node);
	numa_tonode_memory(m->alias + off, len, r->node);
}

int zero_engine_create(const struct zero_engine_cfg *cfg,
		       struct zero_engine **out, char *err, size_t len)
{
	struct zero_topo *topo = NULL;
	struct zero_engine *e;
	int cpus[ZERO_MAX_WORKERS];
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->mem = cfg->mem;
	e->pol = *cfg->pol;
	ret = pick_backend(e, cfg->profile_path, err, len);
	if (ret)
		goto fail;
	e->chunk = e->pol.chunk ?
			   e->pol.chunk :
			   zero_chunk_auto(e->backend_gbps, e->mem->page_bytes);
	if (e->chunk > e->mem->page_bytes)
		e->chunk = e->mem->page_bytes;
	if (!cfg->topo) {
		topo = malloc(sizeof(*topo));
		ret = topo ? zero_topo_detect(topo) : -ENOMEM;
		if (ret) {
			snprintf(err, len, "cannot read the NUMA topology: %s",
				 strerror(-ret));
			goto fail;
		}
	}
	ret = zero_plan_make(cfg->topo ? cfg->topo : topo, &e->pol,
			     e->mem->nr_pages, e->mem->page_bytes, &e->plan,
			     err, len);
	if (ret)
		goto fail;
	for (unsigned int r = 0; r < e->plan.nr_ranges; r++) {
		const struct zero_plan_range *rg = &e->plan.range[r];
		struct zero_pool_cfg pc = {
			.mem = e->mem,
			.clear = e->backend->clear,
			.chunk = e->chunk,
			.first_page = rg->first_page,
			.nr_pages = rg->nr_pages,
			.node = rg->node,
			/* pin = none: the embedder's scheduler places them. */
			.cpus = e->pol.pin == ZERO_PIN_CPU ? cpus : NULL,
			.scrub_fresh = e->pol.fresh == ZERO_FRESH_SCRUB,
		};

		for (unsigned int w = 0; w < e->plan.nr_workers; w++)
			if (e->plan.worker[w].node == rg->node)
				cpus[pc.nr_workers++] = e->plan.worker[w].cpu;
		bind_range(e->mem, rg);
		ret = zero_pool_create(&pc, &e->pool[e->nr_pools]);
		if (ret) {
			snprintf(err, len, "cannot start %u workers: %s",
				 pc.nr_workers, strerror(-ret));
			goto fail;
		}
		e->nr_pools++;
	}
	free(topo);
	*out = e;
	return 0;
fail:
	free(topo);
	zero_engine_destroy(e);
	return ret;
}

const char *zero_engine_backend_name(const struct zero_engine *e)
{
	return e->backend_unused ? "none" : e->backend->name;
}

void zero_engine_destroy(struct zero_engine *e)
{
	if (!e)
		return;
	for (unsigned int i = 0; i < e->nr_pools; i++)
		zero_pool_destroy(e->pool[i]);
	free(e);
}

void zero_engine_stats(struct zero_engine *e, struct zero_pool_stats *t)
{
	struct zero_pool_stats s;

	memset(t, 0, sizeof(*t));
	for (unsigned int i = 0; i < e->nr_pools; i++) {
		zero_pool_get_stats(e->pool[i], &s);
		t->scrub_bytes += s.scrub_bytes;
		t->populate_bytes += s.populate_bytes;
		t->demand_bytes += s.demand_bytes;
		t->demand_populate_bytes += s.demand_populate_bytes;
		t->demand_pages += s.demand_pages;
		t->pages_left += s.pages_left;
		if (s.bg_seconds > t->bg_seconds)
			t->bg_seconds = s.bg_seconds;
		t->bg_active |= s.bg_active;
	}
}

void zero_engine_set_progress(struct zero_engine *e, zero_progress_fn *fn,
			      void *arg)
{
	e->progress = fn;
	e->progress_arg = arg;
}

/* zero_pool_wait()'s timer: bytes done of the pass so far. */
static void report_progress(void *arg)
{
	struct zero_engine *e = arg;
	struct zero_pool_stats s;
	uint64_t left, done;

	if (!e->progress)
		return;
	zero_engine_stats(e, &s);
	left = s.pages_left * e->mem->page_bytes;
	done = e->progress_total > left ? e->progress_total - left : 0;
	e->progress(e->progress_arg, done, e->progress_total);
}

int zero_engine_prezero(struct zero_engine *e, struct zero_prezero_report *r)
{
	struct zero_pool_stats s0, s1;
	int ret = 0, err;

	zero_engine_stats(e, &s0);
	e->t0 = clock_now();
	e->progress_total = s0.pages_left * e->mem->page_bytes;
	start_pools(e, 0, false);
	for (unsigned int i = 0; i < e->nr_pools; i++) {
		err = zero_pool_wait(e->pool[i], report_progress, e);
		if (err && !ret)
			ret = err;
	}
	zero_engine_stats(e, &s1);
	memset(r, 0, sizeof(*r));
	r->seconds = clock_now() - e->t0;
	r->scrub_bytes = s1.scrub_bytes - s0.scrub_bytes;
	r->populate_bytes = s1.populate_bytes - s0.populate_bytes;
	if (r->seconds > 0)
		r->gbps = (double)(r->scrub_bytes + r->populate_bytes) /
			  r->seconds / 1e9;
	return ret;
}

static int pool_of(const struct zero_engine *e, uint64_t page);

int zero_engine_demand(struct zero_engine *e, uint64_t page)
{
	int i = pool_of(e, page);

	return i < 0 ? -EINVAL : zero_pool_demand(e->pool[i], page, true);
}

int zero_engine_demand_timed(struct zero_engine *e, uint64_t page,
			     struct zero_demand_time *t)
{
	int i = pool_of(e, page);

	return i < 0 ? -EINVAL :
		       zero_pool_demand_timed(e->pool[i], page, true, t);
}

int zero_engine_demand_wait(struct zero_engine *e, uint64_t page)
{
	int i = pool_of(e, page);

	return i < 0 ? -EINVAL : zero_pool_demand(e->pool[i], page, false);
}

void zero_engine_cancel(struct zero_engine *e)
{
	__atomic_store_n(&e->cancel, 1, __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < e->nr_pools; i++)
		zero_pool_cancel(e->pool[i]);
}

void zero_engine_resume(struct zero_engine *e)
{
	__atomic_store_n(&e->cancel, 0, __ATOMIC_SEQ_CST);
}

/*
 * Starts every pool; a cancel from before (a signal while the launch was
 * getting there) or from during the start wins: the flag is set before
 * the pools are cancelled and read after they are started, so no cancel
 * falls between the two.
 */
static void start_pools(struct zero_engine *e, uint64_t rate_limit,
			bool skip_fresh)
{
	/* Cancelled before: nothing starts, not even one chunk. */
	if (!__atomic_load_n(&e->cancel, __ATOMIC_SEQ_CST))
		for (unsigned int i = 0; i < e->nr_pools; i++)
			zero_pool_start(e->pool[i], rate_limit, skip_fresh);
	if (__atomic_load_n(&e->cancel, __ATOMIC_SEQ_CST))
		for (unsigned int i = 0; i < e->nr_pools; i++)
			zero_pool_cancel(e->pool[i]);
}

void zero_engine_start_background(struct zero_engine *e, uint64_t rate_limit)
{
	e->t0 = clock_now();
	start_pools(e, rate_limit, true);
}

static int pool_of(const struct zero_engine *e, uint64_t page)
{
	for (unsigned int i = 0; i < e->plan.nr_ranges; i++) {
		const struct zero_plan_range *rg = &e->plan.range[i];

		if (page >= rg->first_page &&
		    page < rg->first_page + rg->nr_pages)
			return (int)i;
	}
	return -1;
}

int zero_engine_demand_async(struct zero_engine *e, uint64_t page)
{
	int i = pool_of(e, page);

	return i < 0 ? -EINVAL : zero_pool_demand_async(e->pool[i], page);
}

int zero_engine_set_notify(struct zero_engine *e, int fd, bool ahead)
{
	for (unsigned int i = 0; i < e->nr_pools; i++) {
		int ret = zero_pool_set_notify(e->pool[i], fd, ahead);

		if (ret)
			return ret;
	}
	return 0;
}

/* Up to @max pages from @pop of every pool, in pool order. */
static unsigned int
pop_all(struct zero_engine *e, uint64_t *pages, unsigned int max,
	unsigned int (*pop)(struct zero_pool *, uint64_t *, unsigned int))
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < e->nr_pools && n < max; i++)
		n += pop(e->pool[i], pages + n, max - n);
	return n;
}

unsigned int zero_engine_pop_done(struct zero_engine *e, uint64_t *pages,
				  unsigned int max)
{
	return pop_all(e, pages, max, zero_pool_pop_done);
}

int zero_engine_error(struct zero_engine *e)
{
	for (unsigned int i = 0; i < e->nr_pools; i++) {
		int ret = zero_pool_error(e->pool[i]);

		if (ret)
			return ret;
	}
	return 0;
}

void zero_engine_quiesce(struct zero_engine *e)
{
	/* The pools only: stopping is not a cancel that outlives the stop. */
	for (unsigned int i = 0; i < e->nr_pools; i++)
		zero_pool_cancel(e->pool[i]);
	for (unsigned int i = 0; i < e->nr_pools; i++)
		(void)!zero_pool_wait(e->pool[i], NULL, NULL);
}

unsigned int zero_engine_workers(const struct zero_engine *e)
{
	return e->plan.nr_workers;
}

uint64_t zero_engine_chunk(const struct zero_engine *e)
{
	return e->chunk;
}

arch_clear_fn zero_engine_clear_fn(const struct zero_engine *e)
{
	return e->backend->clear;
}

void zero_engine_start(struct zero_engine *e, uint64_t rate_limit,
		       bool skip_fresh)
{
	start_pools(e, rate_limit, skip_fresh);
}

int zero_engine_wait(struct zero_engine *e)
{
	int ret = 0;

	for (unsigned int i = 0; i < e->nr_pools; i++) {
		int err = zero_pool_wait(e->pool[i], NULL, NULL);

		if (err && !ret)
			ret = err;
	}
	return ret;
}

const char *zero_engine_backend_from(const struct zero_engine *e)
{
	return zero_backend_source_name(e->backend_from);
}

unsigned int zero_engine_pop_ahead(struct zero_engine *e, uint64_t *pages,
				   unsigned int max)
{
	return pop_all(e, pages, max, zero_pool_pop_ahead);
}
