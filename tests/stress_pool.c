// SPDX-License-Identifier: MIT
/*
 * Randomized interleavings of background scrubbing, guest faults from
 * other threads (demand, then mapping the page and writing it) and
 * cancellation, over many seeds, on shmem "pages" so
 * it runs anywhere (no hugepages, no root). After every round: no page
 * is ZEROING, every ZERO page reads zero, and a restarted pass finishes
 * the rest. Built with each sanitizer, it is the pool's ThreadSanitizer
 * test (Criterion's runner cannot be built with TSan; see Makefile).
 *
 * Usage: stress-pool [SEEDS]   Prints "stress-pool: N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../zeroing/backend.h"
#include "../zeroing/pool.h"

#define POISON 0xa5

struct demander {
	struct zero_pool *pool;
	struct zero_mem *mem;
	unsigned int seed;
	bool scrub_fresh; /* the pool clears FRESH pages too */
	int bad;
};

static long find_not_zero(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return (long)i;
	return -1;
}

/*
 * A faulting guest: each fault maps its page the only two ways the
 * invariant allows, from ZERO after the pool made it so (as
 * UFFDIO_CONTINUE does) or, for a FRESH page the pool leaves alone, from
 * FRESH through the kernel's own zeroing; what it maps must read zero,
 * and then the guest writes it. zero_page_move() asserts on any other
 * transition.
 */
static void *demand_thread(void *arg)
{
	struct demander *d = arg;

	for (int k = 0; k < 12; k++) {
		uint64_t page = (uint64_t)rand_r(&d->seed) % d->mem->nr_pages;
		char *p = zero_mem_guest_page(d->mem, page);
		int ret;

		if (!d->scrub_fresh &&
		    !zero_page_move(d->mem->pages, page, ZP_FRESH, ZP_MAPPED))
			goto mapped; /* the kernel zeroed it (shmem: zeros) */
		/* Every other ask is timed: a cancelled one must leave no
		 * pointer to this stack frame in the pool (TSan, ASan). */
		if (k % 2) {
			struct zero_demand_time t;

			ret = zero_pool_demand_timed(d->pool, page, true, &t);
			if (t.handoff_us < 0 || t.clear_us < 0 ||
			    t.wake_us < 0) {
				printf("demand of page %llu: negative time\n",
				       (unsigned long long)page);
				d->bad++;
			}
		} else {
			ret = zero_pool_demand(d->pool, page, true);
		}
		if (ret == -ECANCELED)
			break;
		if (ret) {
			printf("demand of page %llu: %s\n",
			       (unsigned long long)page, strerror(-ret));
			d->bad++;
			break;
		}
		ret = zero_page_move(d->mem->pages, page, ZP_ZERO, ZP_MAPPED);
		if (ret && zero_page_get(d->mem->pages, page) != ZP_MAPPED) {
			printf("page %llu is %s after its demand\n",
			       (unsigned long long)page,
			       zero_page_state_name(
				       zero_page_get(d->mem->pages, page)));
			d->bad++;
			continue;
		}
		if (ret)
			continue; /* mapped by the other guest thread */
mapped:
		if (find_not_zero(p, d->mem->page_bytes) >= 0) {
			printf("page %llu not zero when mapped\n",
			       (unsigned long long)page);
			d->bad++;
		}
		memset(p, POISON, d->mem->page_bytes);
	}
	return NULL;
}

/* Checks the invariant; with @all, that every page is ZERO. */
static int check(struct zero_mem *m, bool all)
{
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		enum zero_page_state s = zero_page_get(m->pages, i);

		if (s == ZP_ZEROING || (all && s != ZP_ZERO)) {
			printf("page %llu is %s\n", (unsigned long long)i,
			       zero_page_state_name(s));
			return 1;
		}
		if (s == ZP_ZERO && find_not_zero(zero_mem_guest_page(m, i),
						  m->page_bytes) >= 0) {
			printf("ZERO page %llu holds data\n",
			       (unsigned long long)i);
			return 1;
		}
	}
	return 0;
}

static int round_once(unsigned int seed0)
{
	unsigned int seed = seed0;
	const struct zero_backend *b;
	struct zero_mem_opts o = { .page_bytes = 256 << 10, .shmem = true };
	struct zero_pool_cfg c = { 0 };
	struct demander d[2];
	struct zero_pool *pool;
	struct zero_mem *m;
	pthread_t t[2];
	char err[256];
	int bad = 0, ret;

	o.bytes = o.page_bytes * (16 + (uint64_t)(rand_r(&seed) % 48));
	if (zero_mem_create(&o, &m, err, sizeof(err))) {
		printf("seed %u: %s\n", seed0, err);
		return 1;
	}
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		if (rand_r(&seed) % 4 == 0)
			continue; /* stays FRESH */
		if (zero_page_move(m->pages, i, ZP_FRESH, ZP_MAPPED) ||
		    zero_page_move(m->pages, i, ZP_MAPPED, ZP_DIRTY))
			return 1;
		memset(zero_mem_guest_page(m, i), POISON, m->page_bytes);
	}
	if (zero_backend_find(rand_r(&seed) % 2 ? "memset" : "page_at_a_time",
			      &b, err, sizeof(err)))
		return 1;
	c.mem = m;
	c.clear = b->clear;
	c.chunk = (16 << 10) << (rand_r(&seed) % 4);
	c.nr_pages = m->nr_pages;
	c.node = -1;
	c.nr_workers = 1 + (unsigned int)(rand_r(&seed) % 4);
	c.scrub_fresh = rand_r(&seed) % 2;
	ret = zero_pool_create(&c, &pool);
	if (ret) {
		printf("seed %u: pool: %s\n", seed0, strerror(-ret));
		zero_mem_destroy(m);
		return 1;
	}
	zero_pool_start(pool, rand_r(&seed) % 2 ? 0 : 256ull << 20,
			rand_r(&seed) % 2);
	for (int i = 0; i < 2; i++) {
		d[i] = (struct demander){ .pool = pool,
					  .mem = m,
					  .seed = seed * 7 + (unsigned)i,
					  .scrub_fresh = c.scrub_fresh };
		pthread_create(&t[i], NULL, demand_thread, &d[i]);
	}
	usleep((useconds_t)(rand_r(&seed) % 4000));
	if (rand_r(&seed) % 2)
		zero_pool_cancel(pool);
	ret = zero_pool_wait(pool, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		bad += d[i].bad;
	}
	if (ret && ret != -ECANCELED) {
		printf("seed %u: wait: %s\n", seed0, strerror(-ret));
		bad++;
	}
	bad += check(m, false);
	/* The guest exits: what it had is stale (on_exit = keep). */
	for (uint64_t i = 0; i < m->nr_pages; i++)
		if (zero_page_get(m->pages, i) == ZP_MAPPED &&
		    zero_page_move(m->pages, i, ZP_MAPPED, ZP_DIRTY))
			bad++;
	/* Whatever happened, a new pass finishes every page. */
	zero_pool_start(pool, 0, false);
	if (zero_pool_wait(pool, NULL, NULL))
		bad++;
	bad += check(m, true);
	zero_pool_destroy(pool);
	zero_mem_destroy(m);
	if (bad)
		printf("seed %u failed\n", seed0);
	return bad != 0;
}

int main(int argc, char **argv)
{
	unsigned int seeds = argc > 1 ? (unsigned int)atoi(argv[1]) : 200;
	unsigned int failed = 0;

	log_to_stderr();
	for (unsigned int s = 1; s <= seeds; s++)
		failed += (unsigned int)round_once(s);
	printf("stress-pool: %u passed, %u failed\n", seeds - failed, failed);
	return failed ? 1 : 0;
}
