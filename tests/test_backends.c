// SPDX-License-Identifier: MIT
/*
 * Every backend that runs here clears exactly its range: at lengths from
 * 64 B to 64 MiB and 1 GiB in hugepage memory, at offsets that cross
 * page boundaries, the range reads back zero and the guards on both
 * sides keep their poison. And the fence contract: after clear()
 * returns, another CPU that is handed the buffer reads zeros.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/mman.h>

#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "helpers.h"

#define GUARD 4096

static const struct zero_backend *backend_or_skip(unsigned int i)
{
	const struct zero_backend *b = zero_backend_at(i);
	char feat[64];

	cr_assert_not_null(b);
	if (!zero_backend_runs_here(b)) {
		zero_features_format(b->needs & ~zero_cpu_features(), feat,
				     sizeof(feat));
		test_skip(TEST_NEED_CPU, "backend %s needs %s, absent here",
			  b->name, feat);
	}
	return b;
}

/* Poisons [p - GUARD, p + len + GUARD), clears [p, p + len), checks. */
static void clear_and_check(const struct zero_backend *b, char *p, size_t len)
{
	long bad;

	memset(p - GUARD, POISON, len + 2 * GUARD);
	b->clear(p, len);
	bad = test_find_not(p, len, 0);
	cr_assert_eq(bad, -1, "%s: byte %ld of %zu not zero", b->name, bad,
		     len);
	bad = test_find_not(p - GUARD, GUARD, POISON);
	cr_assert_eq(bad, -1, "%s: len %zu wrote %ld bytes before the range",
		     b->name, len, GUARD - bad);
	bad = test_find_not(p + len, GUARD, POISON);
	cr_assert_eq(bad, -1, "%s: len %zu wrote past the range at +%ld",
		     b->name, len, bad);
}

ParameterizedTestParameters(backends, range_and_guards)
{
	return test_backend_params();
}

ParameterizedTest(unsigned int *i, backends, range_and_guards, .timeout = 120)
{
	static const size_t lens[] = {
		64,	     128,	  192,	      4096 - 64,  4096,
		4096 + 64,   SZ_64K - 64, SZ_64K,     SZ_2M - 64, SZ_2M,
		SZ_2M + 192, SZ_8M,	  64 * SZ_1M,
	};
	static const size_t offs[] = { 0, 64, 4096 - 64, 4096, SZ_2M - 64 };
	const struct zero_backend *b = backend_or_skip(*i);
	size_t span = 64 * SZ_1M + SZ_2M + 2 * GUARD + SZ_2M;
	char *buf;

	buf = mmap(NULL, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(buf, MAP_FAILED);
	/* Align the base to 2 MiB so the offsets cross real page edges. */
	char *base = (char *)(((uintptr_t)buf + GUARD + SZ_2M - 1) &
			      ~(uintptr_t)(SZ_2M - 1));
	for (unsigned int o = 0; o < sizeof(offs) / sizeof(offs[0]); o++)
		for (unsigned int l = 0; l < sizeof(lens) / sizeof(lens[0]);
		     l++)
			clear_and_check(b, base + offs[o], lens[l]);
	munmap(buf, span);
}

/* 1 GiB in 2 MiB hugepage memory, with a hugepage of guard each side. */
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;

static void release(void)
{
	zero_hugetlb_release(&resv);
}

ParameterizedTestParameters(backends, one_gib_hugetlb)
{
	return test_backend_params();
}

ParameterizedTest(unsigned int *i, backends, one_gib_hugetlb, .fini = release,
		  .timeout = 120)
{
	const struct zero_backend *b = backend_or_skip(*i);
	size_t span = SZ_1G + 2 * SZ_2M;
	char *buf;
	long bad;

	test_reserve_or_skip(SZ_2M, (long)(span / SZ_2M), &resv);
	buf = mmap(NULL, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1,
		   0);
	if (buf == MAP_FAILED)
		test_skip(TEST_NEED_HUGEPAGES, "cannot map them: %s",
			  strerror(errno));
	memset(buf, POISON, span);
	b->clear(buf + SZ_2M, SZ_1G);
	bad = test_find_not(buf + SZ_2M, SZ_1G, 0);
	cr_assert_eq(bad, -1, "%s: byte %ld of 1 GiB not zero", b->name, bad);
	cr_assert_eq(test_find_not(buf, SZ_2M, POISON), -1,
		     "%s wrote before the range", b->name);
	cr_assert_eq(test_find_not(buf + SZ_2M + SZ_1G, SZ_2M, POISON), -1,
		     "%s wrote past the range", b->name);
	munmap(buf, span);
}

/*
 * The fence contract. The writer hands the buffer over with a relaxed
 * store, so only the fence inside clear() orders the zeros before it;
 * the reader checks the last lines first, as those are the ones most
 * likely still in write-combining buffers.
 */
/*
 * Many short rounds: a missing fence shows as a window of nanoseconds
 * after the handoff, so the chances add up per round, not per byte.
 */
#define FENCE_ROUNDS 20000

/*
 * ThreadSanitizer sees neither the backends' assembly nor fences, so a
 * relaxed handoff would be reported as the race it is meant to probe;
 * under TSan the handoff is a release store and the test checks the
 * threading only.
 */
#if defined(__SANITIZE_THREAD__)
#define HANDOFF_ORDER __ATOMIC_RELEASE
#else
#define HANDOFF_ORDER __ATOMIC_RELAXED
#endif

struct handoff {
	char *buf;
	size_t len;
	int round; /* written relaxed by the writer */
	int done; /* rounds the reader has checked */
	long bad;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *reader(void *arg)
{
	struct handoff *h = arg;
	long bad;

	pin(1 % (int)sysconf(_SC_NPROCESSORS_ONLN));
	for (int seen = 0; seen < FENCE_ROUNDS;) {
		int r = __atomic_load_n(&h->round, __ATOMIC_ACQUIRE);

		if (r == seen) {
			if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
				sched_yield();
			continue;
		}
		seen = r;
		bad = test_find_not(h->buf + h->len - 64, 64, 0);
		if (bad >= 0)
			bad += (long)h->len - 64;
		else
			bad = test_find_not(h->buf, h->len, 0);
		if (bad >= 0 && h->bad < 0)
			h->bad = bad;
		__atomic_store_n(&h->done, seen, __ATOMIC_RELEASE);
	}
	return NULL;
}

ParameterizedTestParameters(backends, visible_to_other_cpu)
{
	return test_backend_params();
}

ParameterizedTest(unsigned int *i, backends, visible_to_other_cpu,
		  .timeout = 120)
{
	const struct zero_backend *b = backend_or_skip(*i);
	struct handoff h = { .len = 4096, .bad = -1 };
	pthread_t t;

	h.buf = aligned_alloc(64, h.len);
	cr_assert_not_null(h.buf);
	pin(0);
	cr_assert_eq(pthread_create(&t, NULL, reader, &h), 0);
	for (int r = 1; r <= FENCE_ROUNDS; r++) {
		memset(h.buf, POISON, h.len);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		b->clear(h.buf, h.len);
		__atomic_store_n(&h.round, r, HANDOFF_ORDER);
		while (__atomic_load_n(&h.done, __ATOMIC_ACQUIRE) != r)
			if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
				sched_yield();
	}
	pthread_join(t, NULL);
	cr_assert_eq(h.bad, -1, "%s: other CPU read non-zero at byte %ld",
		     b->name, h.bad);
	free(h.buf);
}
