// SPDX-License-Identifier: MIT
/*
 * Host-side failures, injected with ZVMM_INJECT=POINT[:N] (lib/inject.h):
 * guest memory that cannot be created or mapped, the hugetlb pool
 * running dry in the middle of prezero, no userfaultfd, a worker or vCPU
 * thread that cannot start, UFFDIO_CONTINUE failing under a faulting
 * guest, and punching a pool's pages out failing. After each, zvmm has
 * ended with its exit status and a message naming the failure, every
 * hugepage it took is free again, no vCPU is left stuck (the run
 * returned), and no state record claims a pool clean that is not.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/size.h"
#include "helpers.h"

#define MEM "256M"
#define MEM_BYTES (256 * SZ_1M)

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char mnt[64], pool[96], state[64];
static bool mounted;
static long free_before;

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-inject.%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-inject-state.%d",
		 (int)getpid());
	setenv("ZVMM_STATE_DIR", state, 1);
}

static void teardown(void)
{
	test_pool_cleanup(mnt, pool, state, mounted);
	zero_hugetlb_release(&resv);
}

TestSuite(inject, .init = setup, .fini = teardown, .timeout = 120);

/* /dev/kvm and 256 MiB of free 2 MiB pages; a pool mount if @pooled. */
static void need(bool pooled)
{
	long nr;

	test_need_kvm();
	test_reserve_or_skip(SZ_2M, MEM_BYTES / SZ_2M, &resv);
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &free_before), 0);
	if (pooled)
		test_mount_pool(mnt, SZ_2M, &mounted);
}

/* zvmm run on 256 MiB with @policy and @extra args, ZVMM_INJECT=@inject. */
static void run(const char *inject, const char *policy, const char *pool_path,
		const char *const *extra)
{
	const char *argv[32] = { "run", "--mem", MEM, "--json", "-" };
	char pol[64];
	unsigned int n = 5;

	snprintf(pol, sizeof(pol), "configs/%s.conf", policy);
	argv[n++] = "--policy";
	argv[n++] = pol;
	if (pool_path) {
		argv[n++] = "--pool";
		argv[n++] = pool_path;
	}
	while (extra && *extra && n < 31)
		argv[n++] = *extra++;
	argv[n] = NULL;
	setenv("ZVMM_INJECT", inject, 1);
	cr_assert_eq(test_run_zvmm(argv, false, &r), 0);
	unsetenv("ZVMM_INJECT");
}

static void failed_with(int status, const char *msg)
{
	cr_assert_eq(r.status, status, "status %d, want %d: %s", r.status,
		     status, r.out);
	cr_assert(strstr(r.out, msg), "no '%s' in: %s", msg, r.out);
}

/* Every hugepage zvmm took is free again (the pool file removed first). */
static void nothing_leaked(void)
{
	long nr, nfree;

	if (mounted)
		unlink(pool);
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &nfree), 0);
	cr_assert_eq(nfree, free_before, "free hugepages %ld, were %ld", nfree,
		     free_before);
}

/* A record, if any, must be true: the whole pool zero. */
static void no_false_record(void)
{
	char cmd[256];
	struct stat st;

	if (!mounted || stat(pool, &st))
		return;
	snprintf(cmd, sizeof(cmd), "ls %s/*.state >/dev/null 2>&1", state);
	if (system(cmd) == 0)
		cr_assert_eq(test_file_find_not_zero(pool, MEM_BYTES), -1,
			     "a state record claims a pool that is not zero");
}

/* The next guest on the pool sees only zeros. */
static void relaunch_sees_zeros(void)
{
	run("", "demand", pool,
	    (const char *[]){ "--set", "pool.on_exit=keep", "--cmdline",
			      "verify=8", "--quiet", NULL });
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(test_json_u64(r.out, "guest", "nonzero_bytes"), 0, "%s",
		     r.out);
	cr_assert_eq(test_json_u64(r.out, "guest", "touched_bytes") +
			     test_json_u64(r.out, "guest", "reserved_bytes"),
		     MEM_BYTES);
}

Test(inject, memfd_fails)
{
	need(false);
	run("memfd", "prezero", NULL, NULL);
	failed_with(3, "Cannot allocate memory");
	nothing_leaked();
}

Test(inject, mmap_fails)
{
	need(false);
	run("mmap", "prezero", NULL, NULL);
	failed_with(3, "cannot map");
	nothing_leaked();
}

Test(inject, hugepages_run_dry_in_the_middle_of_prezero)
{
	need(false);
	run("populate:40", "prezero", NULL, NULL);
	failed_with(3, "Cannot allocate memory");
	nothing_leaked();
}

Test(inject, hugepages_run_dry_in_the_middle_of_a_pool_prezero)
{
	need(true);
	run("populate:40", "prezero", pool,
	    (const char *[]){ "--set", "pool.on_exit=scrub", NULL });
	failed_with(3, "Cannot allocate memory");
	no_false_record();
	relaunch_sees_zeros();
	nothing_leaked();
}

Test(inject, no_userfaultfd)
{
	need(true);
	test_poison_file(pool, MEM_BYTES);
	run("uffd", "demand", pool,
	    (const char *[]){ "--set", "pool.on_exit=scrub", NULL });
	failed_with(3, "userfaultfd");
	no_false_record();
	relaunch_sees_zeros();
	nothing_leaked();
}

Test(inject, worker_thread_cannot_start)
{
	need(false);
	run("worker:2", "prezero", NULL, NULL);
	failed_with(3,
		    "cannot start 2 workers: Resource temporarily unavailable");
	nothing_leaked();
}

Test(inject, vcpu_thread_cannot_start)
{
	need(false);
	run("vcpu:2", "hybrid", NULL, (const char *[]){ "--vcpus", "2", NULL });
	failed_with(1, "cannot start a vCPU thread");
	nothing_leaked();
}

Test(inject, uffdio_continue_fails_under_a_faulting_guest)
{
	need(true);
	test_poison_file(pool, MEM_BYTES);
	run("continue:10", "demand", pool,
	    (const char *[]){ "--vcpus", "2", "--set", "pool.on_exit=scrub",
			      NULL });
	failed_with(1, "Bad address");
	no_false_record();
	relaunch_sees_zeros();
	nothing_leaked();
}

Test(inject, punching_the_pool_out_fails)
{
	need(true);
	run("fallocate", "hybrid", pool,
	    (const char *[]){ "--set", "pool.on_exit=release", NULL });
	failed_with(0, "cannot punch the pool's pages out");
	no_false_record();
	relaunch_sees_zeros();
	nothing_leaked();
}

Test(inject, unknown_point_is_ignored_with_a_warning)
{
	need(false);
	run("nosuchpoint", "prezero", NULL, NULL);
	failed_with(0, "names no injection point");
	nothing_leaked();
}

/*
 * A worker fails while a vCPU waits on the page it was making zero (a
 * hole of a pool the guest touched, populated for it): the run ends at once with
 * an error naming the page, not when --timeout runs out, and the JSON
 * report is still written.
 */
Test(inject, worker_error_under_a_waiting_vcpu_ends_the_run)
{
	struct timespec t0, t1;
	double secs;

	/* A new pool: its holes fault to zvmm, which populates them. */
	need(true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run("populate:5", "demand", pool,
	    (const char *[]){ "--timeout", "60", NULL });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	failed_with(1, "for a vCPU failed: Cannot allocate memory");
	cr_assert_lt(secs, 20, "the run took %.1f s: a vCPU waited", secs);
	cr_assert(strstr(r.out, "\"report\": false"), "%s", r.out);
	nothing_leaked();
}
