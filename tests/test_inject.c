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
 *
 * What fails before a guest could run goes through `zvmm prezero` (the
 * same open and prezero pass as `zvmm run`, which repeats them where
 * there is /dev/kvm); what fails under a running guest through the
 * library in this process as well (zvmm_inject_arm(), a thread touching
 * the memory as a vCPU would), so only the tests that boot a guest need
 * /dev/kvm.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/inject.h"
#include "../lib/size.h"
#include "helpers.h"

#define MEM "256M"
#define MEM_BYTES (256 * SZ_1M)

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char mnt[64], pool[96], state[64];
static bool mounted;
static long free_before;
static char logged[8192]; /* what the library logged, in this process */

static void teardown(void);

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-inject.%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-inject-state.%d",
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
	zvmm_inject_arm(NULL, 0);
	test_pool_cleanup(mnt, pool, state, mounted);
	zero_hugetlb_release(&resv);
}

TestSuite(inject, .init = setup, .fini = teardown, .timeout = 120);

/* 256 MiB of free 2 MiB pages; a pool mount if @pooled. */
static void need(bool pooled)
{
	long nr;

	test_reserve_or_skip(SZ_2M, MEM_BYTES / SZ_2M, &resv);
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &free_before), 0);
	if (pooled)
		test_mount_pool(mnt, SZ_2M, &mounted);
}

/* zvmm @verb on 256 MiB with @policy and @extra args, ZVMM_INJECT=@inject. */
static void zvmm(const char *verb, const char *inject, const char *policy,
		 const char *pool_path, const char *const *extra)
{
	const char *argv[32] = { verb, "--mem", MEM, "--json", "-" };
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

static void run(const char *inject, const char *policy, const char *pool_path,
		const char *const *extra)
{
	zvmm("run", inject, policy, pool_path, extra);
}

/* `zvmm prezero`: guest memory opened and made zero, no guest. */
static void prezero(const char *inject, const char *pool_path)
{
	zvmm("prezero", inject, "prezero", pool_path,
	     (const char *[]){ "--quiet", NULL });
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

/* ------------------------------------------- before any guest runs */

/* Each fails the open or the prezero pass, before a guest could run. */
static const struct {
	const char *inject, *msg;
} early[] = {
	{ "memfd", "Cannot allocate memory" },
	{ "mmap", "cannot map" },
	{ "populate:40", "Cannot allocate memory" },
	{ "worker:2",
	  "cannot start 2 workers: Resource temporarily unavailable" },
};

static void fails_early(unsigned int i)
{
	need(false);
	prezero(early[i].inject, NULL);
	failed_with(3, early[i].msg);
	nothing_leaked();
}

Test(inject, memfd_fails)
{
	fails_early(0);
}

Test(inject, mmap_fails)
{
	fails_early(1);
}

Test(inject, hugepages_run_dry_in_the_middle_of_prezero)
{
	fails_early(2);
}

Test(inject, worker_thread_cannot_start)
{
	fails_early(3);
}

/* `zvmm run` unwinds each of them as well, and says the same. */
Test(inject, run_unwinds_what_fails_before_the_guest, .init = setup_kvm)
{
	need(false);
	for (unsigned int i = 0; i < sizeof(early) / sizeof(early[0]); i++) {
		run(early[i].inject, "prezero", NULL, NULL);
		failed_with(3, early[i].msg);
		nothing_leaked();
	}
}

Test(inject, unknown_point_is_ignored_with_a_warning)
{
	need(false);
	prezero("nosuchpoint", NULL);
	failed_with(0, "names no injection point");
	nothing_leaked();
}

/* --------------------------------------------- the library, in process */

/* Any of the library's threads may log. */
static void log_cb(void *arg, enum zvmm_log_level level, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t n;

	(void)arg;
	(void)level;
	pthread_mutex_lock(&lock);
	n = strlen(logged);
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
	pthread_mutex_unlock(&lock);
}

struct toucher {
	volatile uint64_t *mem;
	uint64_t bytes, foreign;
	uint64_t mark; /* left in every page read, when not 0 */
	bool stop; /* the VMM told this vCPU to stop */
};

/*
 * A vCPU: reads every word of guest memory, faulting page after page,
 * and leaves its mark in each page it read.
 */
static void *touch(void *arg)
{
	struct toucher *t = arg;

	for (uint64_t p = 0; p < t->bytes / SZ_2M; p++) {
		volatile uint64_t *w = t->mem + p * SZ_2M / 8;

		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
			break;
		for (uint64_t i = 0; i < SZ_2M / 8; i++)
			t->foreign += w[i] != 0;
		if (t->mark)
			w[(p * 4096 + 2056) % SZ_2M / 8] = t->mark;
	}
	return NULL;
}

static int serve_err;

static void on_serve_error(void *arg, int err)
{
	(void)arg;
	__atomic_store_n(&serve_err, err, __ATOMIC_RELEASE);
}

/* A launch of the library on the pool, @mode and @on_exit: open. */
static int lib_open(const char *mode, const char *on_exit,
		    struct zvmm_guest **g)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(MEM_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	int ret;

	logged[0] = '\0';
	zvmm_set_log(log_cb, NULL, ZVMM_LOG_INFO);
	mem.pool_path = pool;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", mode), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", on_exit), 0);
	ret = zvmm_guest_open(&mem, pol, g);
	zvmm_policy_free(pol);
	return ret;
}

/*
 * The rest of a launch after a successful open, as a VMM does it:
 * prepare, serve from the library's thread, a vCPU thread reading every
 * word and leaving @mark; when serving fails (on_error), the vCPU is
 * told to stop and zvmm_guest_stop() drains what it still waits on; then
 * exit. The words the vCPU read that were not zero; what stop and exit
 * returned in @stop_ret and @exit_ret. The guest is closed.
 */
static uint64_t lib_run(struct zvmm_guest *g, uint64_t mark, int *stop_ret,
			int *exit_ret)
{
	struct toucher t = { .mark = mark };
	bool stopped = false;
	pthread_t th;
	void *addr;

	serve_err = 0;
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_serve_thread(g, on_serve_error, NULL), 0);
	zvmm_guest_memory(g, &addr, &t.bytes);
	t.mem = addr;
	zvmm_guest_start(g);
	cr_assert_eq(pthread_create(&th, NULL, touch, &t), 0);
	while (pthread_tryjoin_np(th, NULL)) {
		if (!stopped && __atomic_load_n(&serve_err, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&t.stop, true, __ATOMIC_RELEASE);
			*stop_ret = zvmm_guest_stop(g);
			stopped = true;
		}
		usleep(1000);
	}
	if (!stopped)
		*stop_ret = zvmm_guest_stop(g);
	*exit_ret = zvmm_guest_exit(g);
	zvmm_guest_close(g);
	return t.foreign;
}

/* The next tenant on the pool, through the library: only zeros. */
static void next_tenant_reads_zeros(void)
{
	struct zvmm_guest *g;
	int stop_ret, exit_ret;
	uint64_t foreign;

	cr_assert_eq(lib_open("demand", "keep", &g), 0, "%s", logged);
	foreign = lib_run(g, 0, &stop_ret, &exit_ret);
	cr_assert_eq(stop_ret, 0, "%s", logged);
	cr_assert_eq(exit_ret, 0, "%s", logged);
	cr_assert_eq(foreign, 0, "the next tenant read %llu words not zero",
		     (unsigned long long)foreign);
}

Test(inject, hugepages_run_dry_in_the_middle_of_a_pool_prezero)
{
	need(true);
	prezero("populate:40", pool);
	failed_with(3, "Cannot allocate memory");
	no_false_record();
	next_tenant_reads_zeros();
	nothing_leaked();
}

/* The library refuses demand without a userfaultfd, and unwinds. */
Test(inject, no_userfaultfd_for_the_library)
{
	struct zvmm_guest *g;

	need(true);
	test_poison_file(pool, MEM_BYTES);
	zvmm_inject_arm("uffd", 1);
	cr_assert_eq(lib_open("demand", "scrub", &g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_prepare(g, 0), -EPERM, "%s", logged);
	cr_assert(strstr(logged, "userfaultfd refused"), "%s", logged);
	zvmm_guest_close(g);
	zvmm_inject_arm(NULL, 0);
	no_false_record();
	next_tenant_reads_zeros();
	nothing_leaked();
}

/*
 * The tenth UFFDIO_CONTINUE fails while a thread faults page after page:
 * serving stops with the error (on_error, then zvmm_guest_stop()), the
 * thread is not left caught and read only zeros, and no record vouches
 * for the pool.
 */
Test(inject, uffdio_continue_fails_under_a_faulting_thread)
{
	struct zvmm_guest *g;
	int stop_ret, exit_ret;
	uint64_t foreign;

	need(true);
	test_poison_file(pool, MEM_BYTES);
	zvmm_inject_arm("continue", 10);
	cr_assert_eq(lib_open("demand", "scrub", &g), 0, "%s", logged);
	foreign = lib_run(g, 0x5a5a0001, &stop_ret, &exit_ret);
	zvmm_inject_arm(NULL, 0);
	cr_assert_eq(serve_err, -EFAULT, "on_error: %d: %s", serve_err, logged);
	cr_assert_eq(stop_ret, -EFAULT, "stop: %d: %s", stop_ret, logged);
	cr_assert(strstr(logged, "Bad address"), "%s", logged);
	cr_assert_eq(foreign, 0, "the thread read %llu words not zero",
		     (unsigned long long)foreign);
	no_false_record();
	next_tenant_reads_zeros();
	nothing_leaked();
}

/*
 * on_exit = release cannot punch: an error, and the tenant's marks, still
 * in the pool, are no one else's to read.
 */
Test(inject, punching_the_pool_out_fails_for_the_library)
{
	struct zvmm_guest *g;
	int stop_ret, exit_ret;

	need(true);
	zvmm_inject_arm("fallocate", 1);
	cr_assert_eq(lib_open("hybrid", "release", &g), 0, "%s", logged);
	cr_assert_eq(lib_run(g, 0x5a5a0001, &stop_ret, &exit_ret), 0);
	zvmm_inject_arm(NULL, 0);
	cr_assert_eq(stop_ret, 0, "%s", logged);
	cr_assert_eq(exit_ret, -ENOSPC, "exit: %d: %s", exit_ret, logged);
	cr_assert(strstr(logged, "cannot punch the pool's pages out"), "%s",
		  logged);
	cr_assert_neq(test_file_find_not_zero(pool, MEM_BYTES), -1,
		      "the pool was punched out after all");
	no_false_record();
	next_tenant_reads_zeros();
	nothing_leaked();
}

/* ------------------------------------------------- under a booted guest */

Test(inject, no_userfaultfd, .init = setup_kvm)
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

Test(inject, vcpu_thread_cannot_start, .init = setup_kvm)
{
	need(false);
	run("vcpu:2", "hybrid", NULL, (const char *[]){ "--vcpus", "2", NULL });
	failed_with(1, "cannot start a vCPU thread");
	nothing_leaked();
}

Test(inject, uffdio_continue_fails_under_a_faulting_guest, .init = setup_kvm)
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

Test(inject, punching_the_pool_out_fails, .init = setup_kvm)
{
	need(true);
	run("fallocate", "hybrid", pool,
	    (const char *[]){ "--set", "pool.on_exit=release", NULL });
	failed_with(0, "cannot punch the pool's pages out");
	no_false_record();
	relaunch_sees_zeros();
	nothing_leaked();
}

/*
 * A worker fails while a vCPU waits on the page it was making zero (a
 * hole of a pool the guest touched, populated for it): the run ends at once with
 * an error naming the page, not when --timeout runs out, and the JSON
 * report is still written.
 */
Test(inject, worker_error_under_a_waiting_vcpu_ends_the_run, .init = setup_kvm)
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
