// SPDX-License-Identifier: MIT
/* Reservations raise the pool and always put the old count back; the
 * sysfs and procfs readers under them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

static void need_root(void)
{
	test_need_root("changing hugepage pools");
	if (test_nr_hugepages(SZ_2M) < 0)
		test_skip(TEST_NEED_HUGEPAGES, "the kernel has no 2 MiB pool");
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

Test(hugetlb, missing_pool_is_enoent)
{
	long nr, nfree;

	/* There are no 4 KiB hugepages: no such pool directory. */
	cr_assert_eq(zero_hugetlb_counts(SZ_4K, &nr, &nfree), -ENOENT);
	cr_assert_eq(zero_hugetlb_read(SZ_4K, "resv_hugepages", &nr), -ENOENT);
}

static char tmp[64];

static void make_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/zvmm-test-sysfs.%d", (int)getpid());
}

static void drop_tmp(void)
{
	unlink(tmp);
}

static void put(const char *text)
{
	test_write_text(tmp, text);
}

Test(sysfs, reads_the_number_a_file_starts_with, .init = make_tmp,
     .fini = drop_tmp)
{
	long v = 5;

	put("  42\n");
	cr_assert_eq(sysfs_read_long(tmp, &v), 0);
	cr_assert_eq(v, 42);
	put("-1\n");
	cr_assert_eq(sysfs_read_long(tmp, &v), 0);
	cr_assert_eq(v, -1);
	v = 5;
	put("");
	cr_assert_eq(sysfs_read_long(tmp, &v), -EIO);
	put("none\n");
	cr_assert_eq(sysfs_read_long(tmp, &v), -EIO);
	cr_assert_eq(v, 5, "a failed read changed the value");
	drop_tmp();
	cr_assert_eq(sysfs_read_long(tmp, &v), -ENOENT);
}

Test(sysfs, reads_one_field_of_a_meminfo_file, .init = make_tmp,
     .fini = drop_tmp)
{
	uint64_t v = 5;

	put("MemTotal:       16318412 kB\n"
	    "MemFree:         1000 kB\n"
	    "MemAvailable:    7 kB\n"
	    "HugePages_Total:       3\n");
	cr_assert_eq(sysfs_read_field(tmp, "MemTotal", &v), 0);
	cr_assert_eq(v, 16318412);
	cr_assert_eq(sysfs_read_field(tmp, "MemAvailable", &v), 0);
	cr_assert_eq(v, 7);
	cr_assert_eq(sysfs_read_field(tmp, "HugePages_Total", &v), 0);
	cr_assert_eq(v, 3);
	v = 5;
	/* A key is matched whole, never as the start of another. */
	cr_assert_eq(sysfs_read_field(tmp, "Mem", &v), -ENODATA);
	cr_assert_eq(sysfs_read_field(tmp, "SwapTotal", &v), -ENODATA);
	cr_assert_eq(v, 5);
	drop_tmp();
	cr_assert_eq(sysfs_read_field(tmp, "MemTotal", &v), -ENOENT);
}
