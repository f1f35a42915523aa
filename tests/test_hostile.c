// SPDX-License-Identifier: MIT
/*
 * The guest boundary: guest/hostile.c does what a broken or malicious
 * guest may do (every I/O port, endless and flooding serial output,
 * malformed reports, loads and stores outside RAM, a triple fault while
 * demand faults are outstanding, spinning forever) and each run must
 * end with its defined exit status and message, zvmm's memory bounded,
 * no hugepage left reserved, and no stale byte for the next guest.
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

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char mnt[64], pool[96], state[64], serial[96], elf[4096];
static bool mounted;

static void teardown(void);

static void setup(void)
{
	const char *bin = test_zvmm_bin(), *slash = strrchr(bin, '/');

	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-hostile.%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-hostile-state.%d",
		 (int)getpid());
	snprintf(serial, sizeof(serial), "/tmp/zvmm-test-hostile-serial.%d",
		 (int)getpid());
	setenv("ZVMM_STATE_DIR", state, 1);
	/* The hostile guest is built next to the zvmm under test. */
	snprintf(elf, sizeof(elf), "%.*sguest/hostile.elf",
		 slash ? (int)(slash - bin + 1) : 0, bin);
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
	test_pool_cleanup(mnt, pool, state, mounted);
	unlink(serial);
	zero_hugetlb_release(&resv);
}

TestSuite(hostile, .init = setup, .fini = teardown, .timeout = 120);

/* The hostile guest and @count free 2 MiB pages. */
static void need(long count)
{
	cr_assert_eq(access(elf, R_OK), 0,
		     "%s is missing: build it with make (guest/hostile.c)",
		     elf);
	test_reserve_or_skip(SZ_2M, count, &resv);
}

static uint64_t field(const char *section, const char *key)
{
	return test_json_u64(r.out, section, key);
}

/* Boots the hostile guest on 256 MiB with @cmdline and @extra args. */
static void hostile(const char *cmdline, const char *const *extra)
{
	const char *argv[32] = { "run",	 "--mem",     "256M",  "--guest",
				 elf,	 "--cmdline", cmdline, "--serial",
				 serial, "--json",    "-",     "--quiet" };
	unsigned int n = 12;

	while (extra && *extra && n < 31)
		argv[n++] = *extra++;
	argv[n] = NULL;
	cr_assert_eq(test_run_zvmm(argv, false, &r), 0);
}

static long serial_bytes(void)
{
	struct stat st;

	cr_assert_eq(stat(serial, &st), 0);
	return (long)st.st_size;
}

/*
 * zvmm's own RSS does not grow with what the guest sends: within 4 MiB
 * of a run whose guest sends one byte (so sanitizer builds, whose
 * runtimes have RSS of their own, compare like with like).
 */
static void bounded_memory(void)
{
	uint64_t rss = field("process", "max_rss_kib"), base;

	hostile("mode=flood len=1", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	base = field("process", "max_rss_kib");
	cr_assert_lt(rss, base + (4 << 10), "RSS %llu KiB, %llu for one byte",
		     (unsigned long long)rss, (unsigned long long)base);
}

Test(hostile, every_port_every_width, .init = setup_kvm)
{
	need(128);
	hostile("mode=ports", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	/* One write and one read of every port but COM1's 8 and exit's 4. */
	cr_assert_geq(field("io", "other_pio"), (65536 - 12) * 6ull, "%s",
		      r.out);
	cr_assert(strstr(r.out, "which has no device"), "%s", r.out);
	bounded_memory();
}

Test(hostile, endless_line_without_newline, .init = setup_kvm)
{
	need(128);
	hostile("mode=line len=64K", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	/* "ZVMM-BOOT\n" from entry.S, then the line. */
	cr_assert_eq(serial_bytes(), 10 + (64 << 10));
	cr_assert(strstr(r.out, "\"report\": false"), "%s", r.out);
	bounded_memory();
}

Test(hostile, serial_flood, .init = setup_kvm)
{
	need(128);
	hostile("mode=flood len=64K", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(serial_bytes(), 10 + (64 << 10) + 1);
	bounded_memory();
}

Test(hostile, report_too_long_is_refused, .init = setup_kvm)
{
	need(128);
	hostile("mode=report-long len=16K", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"report\": false"), "%s", r.out);
	cr_assert(strstr(r.out, "report line is longer than"), "%s", r.out);
	bounded_memory();
}

Test(hostile, report_not_json_is_refused, .init = setup_kvm)
{
	need(128);
	hostile("mode=report-junk", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"report\": false"), "%s", r.out);
	cr_assert(strstr(r.out, "not a JSON object"), "%s", r.out);
}

Test(hostile, repeated_report_keeps_the_first, .init = setup_kvm)
{
	need(128);
	hostile("mode=report-repeat", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"report\": true"), "%s", r.out);
	cr_assert_eq(field("guest", "nonzero_bytes"), 0, "%s", r.out);
	cr_assert(strstr(r.out, "another report"), "%s", r.out);
}

Test(hostile, loads_and_stores_outside_ram, .init = setup_kvm)
{
	need(128);
	hostile("mode=mmio", NULL);
	/* 12: some load outside RAM did not read all ones. */
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_geq(field("io", "mmio"), 6 * 8, "%s", r.out);
}

Test(hostile, spin_ends_at_timeout, .init = setup_kvm)
{
	struct timespec a, b;
	double s;

	need(128);
	clock_gettime(CLOCK_MONOTONIC, &a);
	hostile("mode=spin", (const char *[]){ "--timeout", "1", NULL });
	clock_gettime(CLOCK_MONOTONIC, &b);
	s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	cr_assert_eq(r.status, 124, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "ran past --timeout"), "%s", r.out);
	cr_assert_lt(s, 10.0, "took %.1f s", s);
}

Test(hostile, bad_timeout_is_a_usage_error)
{
	static const char *const bad[] = { "0", "-1", "x", "1s", "" };

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem",
							     "256M",
							     "--timeout",
							     bad[i], NULL },
					   false, &r),
			     0);
		cr_assert_eq(r.status, 2, "'%s': %d: %s", bad[i], r.status,
			     r.out);
		cr_assert(strstr(r.out, "--timeout"), "%s", r.out);
	}
}

/*
 * vCPU 1 writes dirty pool pages (each a demand fault zvmm serves) while
 * vCPU 0 triple-faults: the run ends as a crash, writes no record, and
 * the next guest on the same pool still sees only zeros.
 */
Test(hostile, triple_fault_with_demand_faults_outstanding, .init = setup_kvm)
{
	uint64_t bytes = 256 * SZ_1M;

	need((long)(bytes / SZ_2M));
	test_mount_pool(mnt, SZ_2M, &mounted);
	test_poison_file(pool, bytes);
	hostile("mode=triple",
		(const char *[]){ "--vcpus", "2", "--pool", pool, "--policy",
				  "configs/demand.conf", "--set",
				  "pool.on_exit=keep", "--timeout", "30",
				  NULL });
	cr_assert_eq(r.status, 4, "status %d: %s", r.status, r.out);
	cr_assert_geq(field("demand", "faults"), 8, "%s", r.out);
	cr_assert(strstr(r.out, "\"record_written\": false"), "%s", r.out);
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){ "run", "--mem", "256M", "--pool",
					       pool, "--policy",
					       "configs/demand.conf", "--set",
					       "pool.on_exit=keep", "--cmdline",
					       "verify=8", "--json", "-",
					       "--quiet", NULL },
			     false, &r),
		     0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("guest", "nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("guest", "touched_bytes") +
			     field("guest", "reserved_bytes"),
		     bytes);
}
