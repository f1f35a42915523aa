// SPDX-License-Identifier: MIT
/*
 * `zvmm prezero` end to end: a warm pool file on a hugetlbfs mount made
 * by the test, poisoned, is scrubbed by the zvmm binary under test (the
 * TSan build under SANITIZE=thread) and read back zero; bad requests get
 * their exit status and leave no hugepage or file behind.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/size.h"
#include "helpers.h"

static char mnt[64], pool[96], conf[96], state[96];
static bool mounted;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static long free_before = -1;
static struct test_run r;

static void teardown(void);

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-hugetlbfs.%d",
		 (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(conf, sizeof(conf), "/tmp/zvmm-test-prezero.%d.conf",
		 (int)getpid());
	/* Records go with the test's files, never to /var/lib/zvmm. */
	snprintf(state, sizeof(state), "/tmp/zvmm-test-prezero.%d.state",
		 (int)getpid());
	setenv("ZVMM_STATE_DIR", state, 1);
	test_on_skip(teardown);
}

static void teardown(void)
{
	long nr, nfree;
	char cmd[128];

	unlink(pool);
	unlink(conf);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
	(void)!system(cmd);
	if (mounted)
		umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	if (free_before >= 0 && !zero_hugetlb_counts(SZ_2M, &nr, &nfree))
		test_fini_expect(nfree == free_before,
				 "free 2 MiB pages %ld, were %ld", nfree,
				 free_before);
	zero_hugetlb_release(&resv);
}

TestSuite(prezero, .init = setup, .fini = teardown, .timeout = 120);

static void reserve_or_skip(long pages)
{
	long nr;

	test_reserve_or_skip(SZ_2M, pages, &resv);
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &free_before), 0);
}

static void mount_or_skip(void)
{
	test_need_root("mounting hugetlbfs");
	cr_assert_eq(mkdir(mnt, 0700), 0, "%s", strerror(errno));
	if (mount("none", mnt, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount: %s",
			  strerror(errno));
	mounted = true;
}

/* A pool file that held a guest's data: every page written with poison. */
static void make_dirty_pool(uint64_t bytes)
{
	test_poison_file(pool, bytes);
}

static long pool_find_not_zero(uint64_t bytes)
{
	return test_file_find_not_zero(pool, bytes);
}

static void run(const char *const *argv)
{
	cr_assert_eq(test_run_zvmm(argv, false, &r), 0);
}

Test(prezero, scrubs_a_poisoned_pool_file)
{
	const uint64_t bytes = 64 * SZ_2M;

	mount_or_skip();
	reserve_or_skip(64);
	make_dirty_pool(bytes);
	run((const char *[]){ "prezero", "--mem", "128M", "--pool", pool,
			      "--set", "zeroing.chunk=256K", "--json", "-",
			      "--quiet", NULL });
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "\"scrub_bytes\": 134217728"), "%s", r.out);
	cr_assert(strstr(r.out, "\"populate_bytes\": 0"), "%s", r.out);
	cr_assert(strstr(r.out, "\"zero\": 64, \"dirty\": 0"), "%s", r.out);
	cr_assert_eq(pool_find_not_zero(bytes), -1, "poison left in the pool");
	/* The pool stays for the next launch, with its pages. */
	cr_assert_eq(access(pool, F_OK), 0);
}

Test(prezero, populates_fresh_memory_every_mode)
{
	static const char *const modes[] = { "prezero", "demand", "hybrid" };

	reserve_or_skip(32);
	for (unsigned int i = 0; i < 3; i++) {
		char set[64];

		snprintf(set, sizeof(set), "zeroing.mode=%s", modes[i]);
		run((const char *[]){ "prezero", "--mem", "64M", "--set", set,
				      "--json", "-", NULL });
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_assert(strstr(r.out, "\"populate_bytes\": 67108864"), "%s",
			  r.out);
	}
}

Test(prezero, pool_with_another_size_is_refused)
{
	mount_or_skip();
	reserve_or_skip(8);
	make_dirty_pool(4 * SZ_2M);
	run((const char *[]){ "prezero", "--mem", "16M", "--pool", pool,
			      NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "holds 8 MiB, but 16 MiB was asked for"), "%s",
		  r.out);
}

Test(prezero, pool_off_hugetlbfs_is_refused)
{
	run((const char *[]){ "prezero", "--mem", "16M", "--pool",
			      "/tmp/zvmm-not-hugetlbfs", NULL });
	cr_assert_eq(r.status, 3, "%s", r.out);
	cr_assert(strstr(r.out, "mount -t hugetlbfs"), "%s", r.out);
	cr_assert_neq(access("/tmp/zvmm-not-hugetlbfs", F_OK), 0);
}

Test(prezero, bad_requests)
{
	FILE *f;

	run((const char *[]){ "prezero", "--mem", "3M", NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "not a multiple of the 2 MiB page size"), "%s",
		  r.out);
	run((const char *[]){ "prezero", "--mem", "4G", "--hugepages", "4M",
			      NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	run((const char *[]){ "prezero", NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "--mem"), "%s", r.out);
	run((const char *[]){ "prezero", "--mem", "64M", "--set",
			      "zeroing.mode=fast", NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "--set zeroing.mode=fast: bad value 'fast'"),
		  "%s", r.out);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs("[zeroing]\nmode = demand\n\n[pool]\nfresh = maybe\n", f);
	fclose(f);
	run((const char *[]){ "prezero", "--mem", "64M", "--policy", conf,
			      NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, ":5: bad value 'maybe'"), "%s", r.out);
}

/* With the largest page size the machine has: the size is what is wrong. */
Test(prezero, machine_too_small_says_so)
{
	const char *page = test_nr_hugepages(SZ_1G) >= 0 ? "1G" : "2M";

	run((const char *[]){ "prezero", "--mem", "64T", "--hugepages", page,
			      NULL });
	cr_assert_eq(r.status, 3, "%s", r.out);
	cr_assert(strstr(r.out, "more than this machine's"), "%s", r.out);
}

Test(prezero, policy_verb_applies_sets_in_order)
{
	run((const char *[]){ "policy", "--policy", "configs/demand.conf",
			      "--set", "zeroing.chunk=2M", "--set",
			      "numa.nodes=0", NULL });
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "mode = demand\n"), "%s", r.out);
	cr_assert(strstr(r.out, "chunk = 2M\n"), "%s", r.out);
	cr_assert(strstr(r.out, "on_exit = scrub\n"), "%s", r.out);
	cr_assert(strstr(r.out, "nodes = 0\n"), "%s", r.out);
}
