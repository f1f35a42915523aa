// SPDX-License-Identifier: MIT
/*
 * The worker pool's demand path (docs/DESIGN.md 5, "The demand path"):
 * a demand page is cleared by every worker at once, the asker is told
 * where the time went, and an asker that stops waiting leaves the pool
 * nothing of its own. On shmem "pages", so it runs anywhere; the clear
 * function is the test's own, recording who cleared what.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "../lib/clock.h"
#include "../lib/size.h"
#include "../zeroing/pool.h"

#define MAX_CLAIMS 64

static struct {
	pthread_mutex_t lock;
	char *base;
	unsigned int n;
	struct {
		pthread_t who;
		uint64_t off, len;
	} c[MAX_CLAIMS];
	long sleep_ns; /* per claim, so every worker gets to take part */
} rec = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void recording_clear(void *addr, size_t len)
{
	struct timespec ts = { 0, rec.sleep_ns };

	pthread_mutex_lock(&rec.lock);
	if (rec.n < MAX_CLAIMS) {
		rec.c[rec.n].who = pthread_self();
		rec.c[rec.n].off = (uint64_t)((char *)addr - rec.base);
		rec.c[rec.n].len = len;
		rec.n++;
	}
	pthread_mutex_unlock(&rec.lock);
	nanosleep(&ts, NULL);
	memset(addr, 0, len);
}

/* One DIRTY 2 MiB shmem page, poisoned, and a pool of @workers on it. */
static void make_pool(unsigned int workers, struct zero_mem **m,
		      struct zero_pool **pool)
{
	struct zero_mem_opts o = { .bytes = SZ_2M,
				   .page_bytes = SZ_2M,
				   .shmem = true };
	struct zero_pool_cfg c = { 0 };
	char err[256];

	cr_assert_eq(zero_mem_create(&o, m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(zero_page_move((*m)->pages, 0, ZP_FRESH, ZP_MAPPED), 0);
	cr_assert_eq(zero_page_move((*m)->pages, 0, ZP_MAPPED, ZP_DIRTY), 0);
	memset(zero_mem_alias_page(*m, 0), 0xa5, SZ_2M);
	rec.base = zero_mem_alias_page(*m, 0);
	rec.n = 0;
	rec.sleep_ns = 2000000;
	c.mem = *m;
	c.clear = recording_clear;
	c.chunk = SZ_2M; /* the background would take the page whole */
	c.nr_pages = 1;
	c.node = -1;
	c.nr_workers = workers;
	cr_assert_eq(zero_pool_create(&c, pool), 0);
}

static bool all_zero(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

Test(pool, a_demand_page_is_cleared_by_every_worker)
{
	struct zero_demand_time t;
	struct zero_pool *pool;
	struct zero_mem *m;
	uint64_t covered = 0;
	bool two = false;
	double t0, wall_us;

	make_pool(2, &m, &pool);
	t0 = clock_now();
	cr_assert_eq(zero_pool_demand_timed(pool, 0, true, &t), 0);
	wall_us = (clock_now() - t0) * 1e6;
	cr_assert_eq(zero_page_get(m->pages, 0), ZP_ZERO);
	cr_assert(all_zero(zero_mem_guest_page(m, 0), SZ_2M));
	/*
	 * The page is cut into extents, each cleared once, and both workers
	 * cleared some of them. In offset order: two workers that claim
	 * extents one after the other may reach the recording the other way
	 * round (seen under TSan).
	 */
	cr_assert_geq(rec.n, 2, "one claim for the whole page");
	for (unsigned int i = 1; i < rec.n; i++)
		for (unsigned int k = i; k && rec.c[k - 1].off > rec.c[k].off;
		     k--) {
			typeof(rec.c[0]) x = rec.c[k];

			rec.c[k] = rec.c[k - 1];
			rec.c[k - 1] = x;
		}
	for (unsigned int i = 0; i < rec.n; i++) {
		cr_assert_eq(rec.c[i].off, covered, "extent %u at %llu", i,
			     (unsigned long long)rec.c[i].off);
		covered += rec.c[i].len;
		two |= !pthread_equal(rec.c[i].who, rec.c[0].who);
	}
	cr_assert_eq(covered, SZ_2M);
	cr_assert(two, "one worker cleared all %u extents", rec.n);
	/* The breakdown: the clear holds every extent's sleep but the
	 * parallel ones, and the parts fit in what the asker waited. */
	cr_assert_geq(t.clear_us, 1e-3 * (double)rec.sleep_ns * rec.n / 2 - 1,
		      "clear %.0f us", t.clear_us);
	cr_assert_geq(t.handoff_us, 0);
	cr_assert_geq(t.wake_us, 0);
	cr_assert_leq(t.handoff_us + t.clear_us + t.wake_us, wall_us + 1,
		      "%.0f + %.0f + %.0f us in %.0f", t.handoff_us, t.clear_us,
		      t.wake_us, wall_us);
	zero_pool_destroy(pool);
	zero_mem_destroy(m);
}

struct asker {
	struct zero_pool *pool;
	struct zero_demand_time t;
	int ret;
};

static void *ask(void *arg)
{
	struct asker *a = arg;

	a->ret = zero_pool_demand_timed(a->pool, 0, true, &a->t);
	/* Written over once it returned: the pool must not touch it. */
	memset(&a->t, 0x5a, sizeof(a->t));
	return NULL;
}

Test(pool, an_asker_that_stops_waiting_leaves_the_pool_no_pointer)
{
	struct timespec ts = { 0, 3000000 };
	struct asker a = { 0 };
	struct zero_demand_time canary;
	struct zero_pool *pool;
	struct zero_mem *m;
	pthread_t th;

	make_pool(1, &m, &pool);
	rec.sleep_ns = 20000000; /* 20 ms an extent: cancelled mid-page */
	a.pool = pool;
	cr_assert_eq(pthread_create(&th, NULL, ask, &a), 0);
	nanosleep(&ts, NULL);
	zero_pool_cancel(pool);
	pthread_join(th, NULL);
	cr_assert_eq(a.ret, -ECANCELED);
	/* The extent in hand finishes and settles the page after the
	 * asker left. */
	cr_assert_eq(zero_pool_wait(pool, NULL, NULL), -ECANCELED);
	memset(&canary, 0x5a, sizeof(canary));
	cr_assert_eq(memcmp(&a.t, &canary, sizeof(canary)), 0,
		     "the pool wrote to a returned asker's times");
	cr_assert_eq(zero_page_get(m->pages, 0), ZP_DIRTY);
	zero_pool_destroy(pool);
	zero_mem_destroy(m);
}
