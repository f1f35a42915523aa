// SPDX-License-Identifier: MIT
/*
 * The engine on real hugepages: a poisoned pool is scrubbed to zero by
 * every backend, cancellation never leaves a ZERO page holding poison,
 * the rate limit holds, and a demand request joins a page in progress.
 * Each test gives back the hugepages it reserved.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/engine.h"
#include "helpers.h"

/*
 * Waits (up to 10 s) until page @page is in @state, or with @any set
 * until some page is: the tests follow the workers by what they did, not
 * by how long they might take.
 */
static bool wait_for(const struct zero_mem *m, uint64_t page,
		     enum zero_page_state state, bool any)
{
	double end = clock_now() + 10;

	while (clock_now() < end) {
		if (any ? zero_pages_count(m->pages, state) > 0 :
			  zero_page_get(m->pages, page) == state)
			return true;
		sched_yield();
	}
	return false;
}

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static long free_before = -1;
static uint64_t resv_page;

static void reserve_or_skip(uint64_t page, long count)
{
	long nr;

	resv_page = page;
	test_reserve_or_skip(page, count, &resv);
	cr_assert_eq(zero_hugetlb_counts(page, &nr, &free_before), 0);
}

/* At the end of every test: the free count is what it was. */
static void assert_free_restored(void)
{
	long nr, nfree;

	cr_assert_eq(zero_hugetlb_counts(resv_page, &nr, &nfree), 0);
	cr_assert_eq(nfree, free_before, "free hugepages %ld, were %ld", nfree,
		     free_before);
}

static void give_back(void)
{
	zero_hugetlb_release(&resv);
}

static struct zero_mem *mem_or_fail(uint64_t bytes, uint64_t page)
{
	struct zero_mem_opts o = { .bytes = bytes, .page_bytes = page };
	struct zero_mem *m;
	char err[256];

	cr_assert_eq(zero_mem_preflight(&o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(zero_mem_create(&o, &m, err, sizeof(err)), 0, "%s", err);
	return m;
}

/*
 * A used pool: the guest faulted every page in (FRESH -> MAPPED, the
 * kernel zeroed it), wrote poison over all of it, and is gone (DIRTY).
 */
static void poison(struct zero_mem *m)
{
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		cr_assert_eq(zero_page_move(m->pages, i, ZP_FRESH, ZP_MAPPED),
			     0);
		memset(zero_mem_guest_page(m, i), POISON, m->page_bytes);
		cr_assert_eq(zero_page_move(m->pages, i, ZP_MAPPED, ZP_DIRTY),
			     0);
	}
}

static struct zero_engine *engine_or_fail(struct zero_mem *m,
					  const char *backend, uint64_t chunk,
					  uint64_t rate)
{
	struct zero_policy pol;
	struct zero_engine_cfg cfg = { .pol = &pol, .mem = m };
	struct zero_engine *e;
	char err[512];

	zero_policy_defaults(&pol);
	pol.mode = ZERO_MODE_PREZERO;
	snprintf(pol.backend, sizeof(pol.backend), "%s", backend);
	pol.chunk = chunk;
	pol.rate_limit = rate;
	cr_assert_eq(zero_engine_create(&cfg, &e, err, sizeof(err)), 0, "%s",
		     err);
	return e;
}

static void assert_all_zero(struct zero_mem *m)
{
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		long bad = test_find_not(zero_mem_guest_page(m, i),
					 m->page_bytes, 0);

		cr_assert_eq(zero_page_get(m->pages, i), ZP_ZERO,
			     "page %llu %s", (unsigned long long)i,
			     zero_page_state_name(zero_page_get(m->pages, i)));
		cr_assert_eq(bad, -1, "page %llu byte %ld not zero",
			     (unsigned long long)i, bad);
	}
}

static void prezero_with(unsigned int i, uint64_t page, uint64_t bytes,
			 uint64_t chunk)
{
	const struct zero_backend *b = zero_backend_at(i);
	struct zero_prezero_report r;
	struct zero_engine *e;
	struct zero_mem *m;

	if (!zero_backend_runs_here(b))
		test_skip(TEST_NEED_CPU, "backend %s cannot run here", b->name);
	reserve_or_skip(page, (long)(bytes / page));
	m = mem_or_fail(bytes, page);
	poison(m);
	e = engine_or_fail(m, b->name, chunk, 0);
	cr_assert_eq(zero_engine_prezero(e, &r), 0);
	cr_assert_eq(r.scrub_bytes, bytes, "scrubbed %llu of %llu",
		     (unsigned long long)r.scrub_bytes,
		     (unsigned long long)bytes);
	assert_all_zero(m);
	zero_engine_destroy(e);
	zero_mem_destroy(m);
	assert_free_restored();
}

ParameterizedTestParameters(engine, prezero_2m_every_backend)
{
	return test_backend_params();
}

ParameterizedTest(unsigned int *i, engine, prezero_2m_every_backend,
		  .fini = give_back, .timeout = 120)
{
	/* 256 KiB chunks: eight per page, several workers per page. */
	prezero_with(*i, SZ_2M, 64 * SZ_2M, 256 << 10);
}

ParameterizedTestParameters(engine, prezero_1g_every_backend)
{
	return test_backend_params();
}

ParameterizedTest(unsigned int *i, engine, prezero_1g_every_backend,
		  .fini = give_back, .timeout = 120)
{
	prezero_with(*i, SZ_1G, 2 * SZ_1G, SZ_8M);
}

Test(engine, prezero_populates_fresh_pages, .fini = give_back, .timeout = 60)
{
	struct zero_prezero_report r;
	struct zero_engine *e;
	struct zero_mem *m;

	reserve_or_skip(SZ_2M, 32);
	m = mem_or_fail(32 * SZ_2M, SZ_2M);
	e = engine_or_fail(m, "memset", SZ_2M, 0);
	cr_assert_eq(zero_engine_prezero(e, &r), 0);
	cr_assert_eq(r.populate_bytes, 32 * SZ_2M);
	cr_assert_eq(r.scrub_bytes, 0, "fresh=trust scrubbed fresh pages");
	assert_all_zero(m);
	zero_engine_destroy(e);
	zero_mem_destroy(m);
	assert_free_restored();
}

Test(engine, cancel_leaves_no_zero_page_with_poison, .fini = give_back,
     .timeout = 60)
{
	struct zero_prezero_report r;
	struct zero_engine *e;
	struct zero_mem *m;
	uint64_t n[ZP_NR_STATES] = { 0 };
	double t0;

	reserve_or_skip(SZ_2M, 256);
	m = mem_or_fail(256 * SZ_2M, SZ_2M);
	poison(m);
	/* 128 MiB/s and 64 KiB chunks: pages are caught half-cleared. */
	e = engine_or_fail(m, "memset", 64 << 10, 128 * SZ_1M);
	zero_engine_start(e, 128 * SZ_1M, false);
	/* Cancel once a page is done and the next is under way. */
	cr_assert(wait_for(m, 1, ZP_ZERO, 1) && wait_for(m, 1, ZP_ZEROING, 1),
		  "the workers did not get going");
	t0 = clock_now();
	zero_engine_cancel(e);
	cr_assert_eq(zero_engine_wait(e), -ECANCELED);
	/* Within one chunk: a 64 KiB chunk takes microseconds. */
	cr_assert_lt(clock_now() - t0, 0.05, "cancel took %.3f s",
		     clock_now() - t0);
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		enum zero_page_state s = zero_page_get(m->pages, i);
		char *p = zero_mem_guest_page(m, i);

		n[s]++;
		cr_assert(s == ZP_ZERO || s == ZP_DIRTY, "page %llu is %s",
			  (unsigned long long)i, zero_page_state_name(s));
		if (s == ZP_ZERO)
			cr_assert_eq(test_find_not(p, m->page_bytes, 0), -1,
				     "ZERO page %llu holds poison",
				     (unsigned long long)i);
	}
	cr_assert_gt(n[ZP_ZERO], 0, "nothing was done before the cancel");
	cr_assert_gt(n[ZP_DIRTY], 0, "the cancel came too late to test");
	/* A cancel is sticky: the next pass stops at once, until resumed. */
	cr_assert_eq(zero_engine_prezero(e, &r), -ECANCELED);
	zero_engine_resume(e);
	/* Started again, it finishes the job. */
	cr_assert_eq(zero_engine_prezero(e, &r), 0);
	cr_assert_eq(r.scrub_bytes, n[ZP_DIRTY] * SZ_2M);
	assert_all_zero(m);
	zero_engine_destroy(e);
	zero_mem_destroy(m);
	assert_free_restored();
}

Test(engine, rate_limit_holds_within_10_percent, .fini = give_back,
     .timeout = 60)
{
	const uint64_t rate = 512 * SZ_1M, bytes = 768 * SZ_2M;
	struct zero_pool_stats s;
	struct zero_engine *e;
	struct zero_mem *m;
	double t0, secs, got;

	reserve_or_skip(SZ_2M, 768);
	m = mem_or_fail(bytes, SZ_2M);
	poison(m);
	e = engine_or_fail(m, "memset", 256 << 10, rate);
	t0 = clock_now();
	zero_engine_start(e, rate, false);
	cr_assert_eq(zero_engine_wait(e), 0);
	secs = clock_now() - t0;
	zero_engine_stats(e, &s);
	got = (double)s.scrub_bytes / secs;
	cr_assert_eq(s.scrub_bytes, bytes);
	cr_assert(got > 0.9 * (double)rate && got < 1.1 * (double)rate,
		  "%.0f MiB/s against a limit of %llu MiB/s over %.2f s",
		  got / SZ_1M, (unsigned long long)(rate >> 20), secs);
	assert_all_zero(m);
	zero_engine_destroy(e);
	zero_mem_destroy(m);
	assert_free_restored();
}

/*
 * A demand request for the 1 GiB page the rate-limited background is in
 * the middle of joins its remaining chunks, which then go at full speed.
 */
Test(engine, demand_joins_page_in_progress, .fini = give_back, .timeout = 60)
{
	struct zero_pool_stats s;
	struct zero_engine *e;
	struct zero_mem *m;
	double t0, waited;

	reserve_or_skip(SZ_1G, 2);
	m = mem_or_fail(2 * SZ_1G, SZ_1G);
	poison(m);
	/* 256 MiB/s: the first page alone would take 4 s. */
	e = engine_or_fail(m, "memset", 2 * SZ_1M, 256 * SZ_1M);
	zero_engine_start(e, 256 * SZ_1M, false);
	/* Its first chunks are done, most are not. */
	cr_assert(wait_for(m, 0, ZP_ZEROING, 0), "page 0 never started");
	while (zero_engine_stats(e, &s), !s.scrub_bytes)
		sched_yield();
	cr_assert_eq(zero_page_get(m->pages, 0), ZP_ZEROING);
	t0 = clock_now();
	cr_assert_eq(zero_engine_demand(e, 0), 0);
	waited = clock_now() - t0;
	cr_assert_eq(zero_page_get(m->pages, 0), ZP_ZERO);
	cr_assert_eq(test_find_not(zero_mem_guest_page(m, 0), SZ_1G, 0), -1);
	cr_assert_lt(waited, 1.5, "demand waited %.2f s behind the limit",
		     waited);
	zero_engine_stats(e, &s);
	cr_assert_gt(s.demand_bytes, 0);
	cr_assert_lt(s.demand_bytes, SZ_1G, "the page was not joined");
	/* Page 1 is demanded while still DIRTY: it jumps the queue. */
	cr_assert_eq(zero_engine_demand(e, 1), 0);
	cr_assert_eq(test_find_not(zero_mem_guest_page(m, 1), SZ_1G, 0), -1);
	zero_engine_cancel(e);
	zero_engine_destroy(e);
	zero_mem_destroy(m);
	assert_free_restored();
}

Test(engine, invariant_refuses_dirty_to_mapped, .signal = SIGABRT)
{
	struct zero_pages *p;

	cr_assert_eq(zero_pages_create(4, ZP_DIRTY, &p), 0);
	/* The expected assertion's message is not the reader's. */
	cr_assert_neq(freopen("/dev/null", "w", stderr), NULL);
	/* zvmm is built without NDEBUG: the invariant asserts. */
	cr_assert_eq(zero_page_move(p, 0, ZP_DIRTY, ZP_MAPPED), -EINVAL);
	zero_pages_destroy(p);
}

Test(engine, chunk_auto)
{
	cr_assert_eq(zero_chunk_auto(50, SZ_1G), 4 * SZ_1M);
	cr_assert_eq(zero_chunk_auto(90, SZ_1G), 8 * SZ_1M);
	cr_assert_eq(zero_chunk_auto(400, SZ_1G), 8 * SZ_1M, "8 MiB cap");
	cr_assert_eq(zero_chunk_auto(11, SZ_1G), SZ_1M);
	cr_assert_eq(zero_chunk_auto(10, SZ_1G), 512 << 10);
	cr_assert_eq(zero_chunk_auto(90, SZ_2M), SZ_2M, "page cap");
	cr_assert_eq(zero_chunk_auto(0.1, SZ_1G), 256 << 10);
}
