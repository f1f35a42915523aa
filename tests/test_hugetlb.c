// SPDX-License-Identifier: MIT
/* Reservations raise the pool and always put the old count back. */
#include <criterion/criterion.h>
#include <errno.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("changing hugepage pools needs root");
	if (test_nr_hugepages(SZ_2M) < 0)
		cr_skip_test("kernel has no 2 MiB hugetlb pool");
}

Test(hugetlb, reserve_then_release_restores)
{
	struct zero_hugetlb_resv r = ZERO_HUGETLB_RESV_INIT;
	long before, nr, nfree;

	need_root();
	before = test_nr_hugepages(SZ_2M);
	cr_assert_eq(zero_hugetlb_reserve(SZ_2M, 8, &r), 0);
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &nfree), 0);
	cr_assert_geq(nfree, 8);
	zero_hugetlb_release(&r);
	cr_assert_eq(test_nr_hugepages(SZ_2M), before);
	/* A second release is harmless. */
	zero_hugetlb_release(&r);
	cr_assert_eq(test_nr_hugepages(SZ_2M), before);
}

Test(hugetlb, async_release_restores)
{
	struct zero_hugetlb_resv r = ZERO_HUGETLB_RESV_INIT;
	long before;

	need_root();
	before = test_nr_hugepages(SZ_2M);
	cr_assert_eq(zero_hugetlb_reserve(SZ_2M, before + 4, &r), 0);
	cr_assert_gt(test_nr_hugepages(SZ_2M), before);
	zero_hugetlb_release_all_async();
	cr_assert_eq(test_nr_hugepages(SZ_2M), before);
}

Test(hugetlb, impossible_request_fails_and_restores)
{
	struct zero_hugetlb_resv r = ZERO_HUGETLB_RESV_INIT;
	long before;

	need_root();
	before = test_nr_hugepages(SZ_2M);
	/* 64 TiB of 2 MiB pages: no machine of ours has that. */
	cr_assert_eq(zero_hugetlb_reserve(SZ_2M, 32l << 20, &r), -ENOMEM);
	cr_assert_eq(r.slot, -1);
	cr_assert_eq(test_nr_hugepages(SZ_2M), before);
}

Test(hugetlb, mem_available_is_plausible)
{
	uint64_t avail;

	cr_assert_eq(zero_mem_available(&avail), 0);
	cr_assert_gt(avail, 64 * SZ_1M);
	cr_assert_lt(avail, 1ull << 50);
}
