// SPDX-License-Identifier: MIT
/*
 * The zeroing promise over a pool's life, checked from the guest's side
 * with marks at pseudo-random offsets inside every page (guest/touch.c:
 * mark=, probe=, recheck), never only at the lines zvmm samples:
 *
 * - tenant after tenant: launch A writes marks, launch B on the same
 *   pool looks for them, for every policy, on_exit, page size and 1-2
 *   vCPUs: B finds none;
 * - holes: a pool an earlier launch left half allocated, then hybrid:
 *   every mark the guest wrote is still there when it reads them back;
 * - a busy pool: a second launch is refused with exit 3 while the first
 *   runs, and the first guest ends as it would have alone.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/size.h"
#include "helpers.h"

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char mnt[64], pool[96], state[64];
static bool mounted;
static pid_t tenant_a; /* a zvmm still running when a test fails */

static void teardown(void);

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-tenants.%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-tstate.%d",
		 (int)getpid());
	setenv("ZVMM_STATE_DIR", state, 1);
	test_on_skip(teardown);
}

/*
 * The tests that boot a guest: Criterion runs the suite's .init (setup())
 * first and then this, so a skip here undoes what setup() made
 * (test_on_skip()); it does not call setup() again.
 */
static void setup_kvm(void)
{
	test_need_kvm();
}

static void teardown(void)
{
	if (tenant_a > 0) {
		kill(tenant_a, SIGKILL);
		waitpid(tenant_a, NULL, 0);
	}
	test_pool_cleanup(mnt, pool, state, mounted);
	zero_hugetlb_release(&resv);
}

TestSuite(tenants, .init = setup, .fini = teardown, .timeout = 240);

static void need_pool(uint64_t page, long count)
{
	test_need_root("hugetlbfs mount, userfaultfd");
	test_reserve_or_skip(page, count, &resv);
	test_mount_pool(mnt, page, &mounted);
}

/* One launch on the pool; its JSON report and output in r. */
static void launch(const char *mem, const char *pages, const char *policy,
		   const char *on_exit, const char *vcpus, const char *cmdline)
{
	char pol[64], ex[64];

	snprintf(pol, sizeof(pol), "configs/%s.conf", policy);
	snprintf(ex, sizeof(ex), "pool.on_exit=%s", on_exit);
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){
				     "run", "--mem", mem, "--hugepages", pages,
				     "--pool", pool, "--policy", pol, "--set",
				     ex, "--vcpus", vcpus, "--cmdline", cmdline,
				     "--json", "-", "--quiet", NULL },
			     false, &r),
		     0);
}

static uint64_t field(const char *key)
{
	return test_json_u64(r.out, NULL, key);
}

struct tenant_case {
	unsigned int policy, on_exit;
	bool one_gib;
	unsigned int vcpus;
};

static const char *const policies[] = { "prezero", "demand", "hybrid" };
static const char *const exits[] = { "scrub", "keep", "release" };

ParameterizedTestParameters(tenants, second_reads_only_zeros)
{
	static struct tenant_case cases[36];
	unsigned int n = 0;

	for (unsigned int p = 0; p < 3; p++)
		for (unsigned int e = 0; e < 3; e++)
			for (unsigned int g = 0; g < 2; g++)
				for (unsigned int v = 1; v <= 2; v++)
					cases[n++] = (struct tenant_case){ p, e,
									   g,
									   v };
	return cr_make_param_array(struct tenant_case, cases, n);
}

/*
 * A fresh pool; tenant A writes 8 marks in every 2 MiB of its RAM and
 * exits; tenant B, same policy and on_exit, reads where A's marks were
 * before it touches anything: it must find zeros only.
 */
ParameterizedTest(struct tenant_case *c, tenants, second_reads_only_zeros,
		  .init = setup_kvm)
{
	uint64_t page = c->one_gib ? SZ_1G : SZ_2M;
	const char *mem = c->one_gib ? "2G" : "256M";
	const char *pages = c->one_gib ? "1G" : "2M";
	const char *vcpus = c->vcpus == 2 ? "2" : "1";
	const char *policy = policies[c->policy], *ex = exits[c->on_exit];

	need_pool(page, c->one_gib ? 2 : 128);
	launch(mem, pages, policy, ex, vcpus, "mark=8 seed=7");
	cr_assert_eq(r.status, 0, "tenant A: status %d: %s", r.status, r.out);
	cr_assert_gt(field("marks_written"), 0, "%s", r.out);
	/* B reads where A wrote (mark=8 seed=7), then writes its own. */
	launch(mem, pages, policy, ex, vcpus, "probe=7 mark=8 seed=9 verify=4");
	cr_assert_eq(field("foreign_words"), 0,
		     "%s/%s: tenant B read tenant A's data: %s", policy, ex,
		     r.out);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(r.status, 0, "tenant B: status %d: %s", r.status, r.out);
}

struct holes_case {
	unsigned int vcpus;
	bool down;
};

ParameterizedTestParameters(tenants, hybrid_keeps_marks_over_holes)
{
	static struct holes_case cases[] = {
		{ 1, true }, { 2, true }, { 1, false }, { 2, false }
	};

	return cr_make_param_array(struct holes_case, cases,
				   sizeof(cases) / sizeof(cases[0]));
}

/*
 * A pool with holes: launch A touches every other 2 MiB page and keeps
 * them, so half of the file is allocated and half is not. Launch B,
 * hybrid, writes marks in every page while the background scrub runs,
 * then reads them all back: the pages the kernel gave it for the holes
 * are its own, and no worker may clear them under it.
 */
ParameterizedTest(struct holes_case *c, tenants, hybrid_keeps_marks_over_holes,
		  .init = setup_kvm)
{
	const char *vcpus = c->vcpus == 2 ? "2" : "1";
	struct stat st;

	need_pool(SZ_2M, 512);
	launch("1G", "2M", "demand", "keep", "1", "stride=4M");
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(stat(pool, &st), 0);
	cr_assert_lt((uint64_t)st.st_blocks * 512, SZ_1G * 3 / 4,
		     "the first launch should leave holes");
	cr_assert_gt((uint64_t)st.st_blocks * 512, SZ_1G / 4);
	launch("1G", "2M", "hybrid", "keep", vcpus,
	       c->down ? "mark=8 seed=3 recheck order=down" :
			 "mark=8 seed=3 recheck");
	cr_assert_eq(field("marks_lost"), 0,
		     "zvmm cleared the guest's own marks: %s", r.out);
	cr_assert_gt(field("marks_written"), 0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
}

/*
 * While tenant A runs on the pool (it has printed ZVMM-TOUCH-START and
 * reads a lot before it exits), tenant B on the same pool is refused at
 * once with exit 3, naming A's pid; A then ends as it would alone.
 */
Test(tenants, busy_pool_is_refused, .init = setup_kvm)
{
	struct test_run a = { 0 };
	struct test_proc pa;
	char want[64];
	int st;

	need_pool(SZ_2M, 512);
	cr_assert_eq(
		test_spawn_zvmm(
			(const char *[]){ "run", "--mem", "1G", "--pool", pool,
					  "--policy", "configs/hybrid.conf",
					  "--cmdline",
					  "mark=8 seed=5 recheck verify=64",
					  "--json", "-", "--quiet", NULL },
			false, &pa),
		0);
	tenant_a = pa.pid;
	cr_assert(test_wait_output(&pa, &a, "ZVMM-TOUCH-START", 60000),
		  "tenant A never started: %s", a.out);
	launch("1G", "2M", "hybrid", "keep", "1", "verify=1");
	/* A must still be running for the refusal to mean anything. */
	cr_assert_eq(waitpid(pa.pid, &st, WNOHANG), 0,
		     "tenant A ended before B tried: make A slower");
	cr_assert_eq(r.status, 3, "B: status %d: %s", r.status, r.out);
	snprintf(want, sizeof(want), "is in use by zvmm pid %d", (int)pa.pid);
	cr_assert_not_null(strstr(r.out, want), "B said: %s", r.out);
	cr_assert_eq(test_finish_zvmm(&pa, &a), 0);
	tenant_a = 0;
	cr_assert_eq(a.status, 0, "A: status %d: %s", a.status, a.out);
	cr_assert_eq(test_json_u64(a.out, NULL, "marks_lost"), 0, "%s", a.out);
	cr_assert_eq(test_json_u64(a.out, NULL, "nonzero_bytes"), 0);
}
