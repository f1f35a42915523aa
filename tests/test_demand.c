// SPDX-License-Identifier: MIT
/*
 * Demand and hybrid zeroing end to end, on warm pools poisoned first: for
 * every mode, page size and vCPU count the guest sees only zeros and the
 * fault counts fit the mode; a pool scrubbed at exit relaunches without
 * faults or work, unless its state record was altered, cut or belongs to
 * another file, or the pool was written since; SIGINT and SIGTERM end a
 * run within a second at any stage and leave no record that is not true.
 *
 * The records and a signal during prezero are checked through
 * `zvmm prezero`, which opens a pool, takes its record and writes one as
 * `zvmm run` does, without a guest: only the tests that boot one need
 * /dev/kvm.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/record.h"
#include "helpers.h"

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static uint64_t page_sz;
static char mnt[64], pool[96], state[64];
static bool mounted;

static void teardown(void);

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-demand.%d", (int)getpid());
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-state.%d",
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
	test_pool_cleanup(mnt, pool, state, mounted);
	zero_hugetlb_release(&resv);
}

TestSuite(demand, .init = setup, .fini = teardown, .timeout = 180);

/* Root, a hugetlbfs mount of @page and @count free pages. */
static void need_pool(uint64_t page, long count)
{
	test_need_root("hugetlbfs mount, userfaultfd");
	page_sz = page;
	test_reserve_or_skip(page, count, &resv);
	test_mount_pool(mnt, page, &mounted);
}

static void poison(uint64_t bytes)
{
	test_poison_file(pool, bytes);
}

static long pool_find_not_zero(uint64_t bytes)
{
	return test_file_find_not_zero(pool, bytes);
}

static uint64_t field(const char *key)
{
	return test_json_u64(r.out, NULL, key);
}

static uint64_t section_field(const char *section, const char *key)
{
	return test_json_u64(r.out, section, key);
}

static void boot(const char *mem, const char *pages, const char *policy,
		 const char *vcpus, const char *on_exit)
{
	char pol[64], ex[64];

	snprintf(pol, sizeof(pol), "configs/%s.conf", policy);
	snprintf(ex, sizeof(ex), "pool.on_exit=%s", on_exit);
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){ "run", "--mem", mem,
					       "--hugepages", pages, "--pool",
					       pool, "--policy", pol, "--set",
					       ex, "--vcpus", vcpus,
					       "--cmdline", "verify=4",
					       "--json", "-", "--quiet", NULL },
			     false, &r),
		     0);
}

/* Indices, not pointers: Criterion runs each test in a new process. */
struct mode_case {
	unsigned int policy; /* index in policies[] */
	bool one_gib;
	unsigned int vcpus;
};

static const char *const policies[] = { "prezero", "demand", "hybrid" };

ParameterizedTestParameters(demand, poisoned_pool_every_mode)
{
	static struct mode_case cases[12];
	unsigned int n = 0;

	for (unsigned int p = 0; p < 3; p++)
		for (unsigned int g = 0; g < 2; g++)
			for (unsigned int v = 1; v <= 2; v++)
				cases[n++] = (struct mode_case){ p, g, v };
	return cr_make_param_array(struct mode_case, cases, n);
}

ParameterizedTest(struct mode_case *c, demand, poisoned_pool_every_mode,
		  .init = setup_kvm)
{
	uint64_t page = c->one_gib ? SZ_1G : SZ_2M;
	uint64_t bytes = c->one_gib ? 2 * SZ_1G : 256 * SZ_1M;
	uint64_t nr = bytes / page, faults, pages, scrubbed;
	const char *policy = policies[c->policy];

	need_pool(page, (long)nr);
	poison(bytes);
	boot(c->one_gib ? "2G" : "256M", c->one_gib ? "1G" : "2M", policy,
	     c->vcpus == 2 ? "2" : "1", "keep");
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("touched_bytes") + field("reserved_bytes"), bytes);
	faults = section_field("demand", "faults");
	pages = section_field("demand", "pages");
	scrubbed = section_field("demand", "scrubbed_pages");
	cr_assert_eq(field("vcpus"), c->vcpus);
	if (!strcmp(policy, "prezero")) {
		cr_assert_eq(faults, 0, "%s", r.out);
		cr_assert_eq(section_field("prezero", "scrub_bytes"), bytes);
	} else if (!strcmp(policy, "demand")) {
		/* One fault per touched DIRTY page: all but the boot page,
		 * which zvmm scrubs and maps before the guest starts. */
		cr_assert_eq(pages, nr - 1, "%s", r.out);
		cr_assert_eq(scrubbed, nr - 1, "%s", r.out);
		cr_assert_geq(faults, pages);
		cr_assert_eq(section_field("demand", "bytes"), (nr - 1) * page);
	} else {
		/* Background and faults share the work; no page twice. */
		cr_assert_leq(pages, nr - 1, "%s", r.out);
		cr_assert_eq(section_field("demand", "bytes") +
				     section_field("background", "bytes"),
			     (nr - 1) * page, "%s", r.out);
	}
}

/*
 * The chunk benchmark's run: the guest touches top down while hybrid
 * background clears bottom up. The guest still sees only zeros; faults
 * that queued behind background work are counted apart; and measuring
 * the backends without a profile happens on the pool's own dirty pages,
 * so zvmm's RSS stays small (a 64 MiB buffer of its own would not).
 */
static uint64_t hybrid_top_down(uint64_t bytes, const char *backend)
{
	char set[64];

	snprintf(set, sizeof(set), "zeroing.backend=%s", backend);
	poison(bytes);
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){
				     "run", "--mem", "256M", "--pool", pool,
				     "--policy", "configs/hybrid.conf", "--set",
				     "pool.on_exit=keep", "--set", set,
				     "--cmdline", "verify=4 order=down",
				     "--json", "-", "--quiet", NULL },
			     false, &r),
		     0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("touched_bytes") + field("reserved_bytes"), bytes);
	cr_assert_leq(section_field("busy_latency_us", "faults"),
		      section_field("demand", "scrubbed_pages"), "%s", r.out);
	cr_assert_gt(section_field("process", "max_rss_kib"), 0, "%s", r.out);
	return section_field("process", "max_rss_kib");
}

Test(demand, hybrid_top_down_meets_background, .init = setup_kvm)
{
	char cache[] = "/tmp/zvmm-test-cache.XXXXXX", profile[96];
	uint64_t bytes = 256 * SZ_1M, nr = bytes / SZ_2M, fixed, measured;

	need_pool(SZ_2M, (long)nr);
	cr_assert_not_null(mkdtemp(cache));
	setenv("ZVMM_CACHE_DIR", cache, 1);
	/*
	 * Against a run that measures nothing (a fixed backend), so that
	 * sanitizer builds, whose runtimes have RSS of their own, compare
	 * like with like: a 64 MiB buffer would show.
	 */
	fixed = hybrid_top_down(bytes, "memset");
	measured = hybrid_top_down(bytes, "auto");
	cr_assert(strstr(r.out, "\"backend_from\": \"measured\""), "%s", r.out);
	snprintf(profile, sizeof(profile), "%s/calibration.ini", cache);
	/*
	 * 256 MiB of dirty memory is less than an out-of-cache measurement
	 * needs on any machine with a cache of 128 MiB or more: measured in
	 * place, used, and not kept for launches of guest-sized memory.
	 */
	if (bytes < zero_auto_bytes())
		cr_assert_neq(access(profile, F_OK), 0,
			      "an in-cache measurement was kept");
	unlink(profile);
	rmdir(cache);
	cr_assert_lt(measured, fixed + (16 << 10),
		     "RSS %llu KiB with auto, %llu with memset",
		     (unsigned long long)measured, (unsigned long long)fixed);
}

/*
 * on_exit=scrub, then a relaunch maps everything with no work at all,
 * and takes no fault. 4 GiB as well: a mapping that spans whole aligned
 * GiBs shares hugetlb page tables with the alias until userfaultfd
 * registration unshares them, which drops whatever was mapped before
 * (7,680 of 8,192 pages faulted at 16 GiB when pages were populated
 * first, and the loader then faulted with no one to serve it).
 */
ParameterizedTestParameters(demand, scrubbed_pool_relaunches_without_work)
{
	static uint64_t sizes[] = { 256 * SZ_1M, 4 * SZ_1G };

	return cr_make_param_array(uint64_t, sizes, 2);
}

ParameterizedTest(uint64_t *bytes, demand,
		  scrubbed_pool_relaunches_without_work, .init = setup_kvm)
{
	const char *mem = *bytes == SZ_1G * 4 ? "4G" : "256M";

	need_pool(SZ_2M, (long)(*bytes / SZ_2M));
	poison(*bytes);
	boot(mem, "2M", "demand", "1", "scrub");
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "\"record_written\": true"), "%s", r.out);
	cr_assert_eq(pool_find_not_zero(*bytes), -1);
	boot(mem, "2M", "demand", "1", "keep");
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "\"record_clean\": true"), "%s", r.out);
	cr_assert_eq(section_field("demand", "faults"), 0, "%s", r.out);
	cr_assert_eq(section_field("demand", "bytes"), 0, "%s", r.out);
	cr_assert_eq(section_field("prezero", "bytes"), 0, "%s", r.out);
	cr_assert_eq(field("nonzero_bytes"), 0);
	cr_assert_gt(field("touched_bytes"), 0);
}

static char *record_path(void)
{
	static char path[256];
	struct stat st;

	cr_assert_eq(stat(pool, &st), 0);
	snprintf(path, sizeof(path), "%s/pool-%llu-%llu.state", state,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	return path;
}

static size_t read_record(char *buf, size_t len)
{
	char *path = record_path();
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "no record at %s", path);
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n;
}

static void write_record(const char *text)
{
	test_write_text(record_path(), text);
}

/* Sets @key of the record to @value, its checksum left as it was. */
static void edit_record(const char *key, uint64_t value)
{
	char buf[2048], out[2048], at[64];
	const char *p, *eol;

	read_record(buf, sizeof(buf));
	snprintf(at, sizeof(at), "\n%s = ", key);
	p = strstr(buf, at);
	cr_assert_not_null(p, "no %s in the record: %s", key, buf);
	eol = strchr(p + 1, '\n');
	cr_assert_not_null(eol);
	snprintf(out, sizeof(out), "%.*s%s%llu%s", (int)(p - buf), buf, at,
		 (unsigned long long)value, eol);
	write_record(out);
}

/* `zvmm prezero` of the 256 MiB pool; its JSON report in r. */
static void prezero_pool(void)
{
	cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem", "256M",
						     "--pool", pool, "--json",
						     "-", "--quiet", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
}

/*
 * A poisoned pool made zero by `zvmm prezero`, which writes its record;
 * then @spoil; then the next launch. It scrubs the whole pool when the
 * record is refused, nothing when it is trusted (@trusted); the pool is
 * zero after it either way. The pool stays zero up to the relaunch
 * unless @spoil writes it, so a spoiled record is refused by the record
 * check alone: the sampled pages would pass.
 */
static void relaunch_after(void (*spoil)(void), bool trusted)
{
	uint64_t bytes = 256 * SZ_1M;

	need_pool(SZ_2M, (long)(bytes / SZ_2M));
	poison(bytes);
	prezero_pool();
	cr_assert_eq(section_field("prezero", "scrub_bytes"), bytes, "%s",
		     r.out);
	cr_assert_eq(access(record_path(), F_OK), 0, "no record written: %s",
		     r.out);
	spoil();
	prezero_pool();
	cr_assert_eq(section_field("prezero", "scrub_bytes"),
		     trusted ? 0 : bytes, "the record was %s: %s",
		     trusted ? "refused" : "trusted", r.out);
	cr_assert_eq(pool_find_not_zero(bytes), -1);
}

/*
 * The pool's times moved since its clean exit (touched, its bytes still
 * zero) and the record was edited to match them, its checksum left as it
 * was: every field describes the file as it is, only the checksum can
 * tell.
 */
static void alter(void)
{
	const struct timespec now[2] = { { .tv_nsec = UTIME_NOW },
					 { .tv_nsec = UTIME_NOW } };
	struct stat st;

	cr_assert_eq(utimensat(AT_FDCWD, pool, now, 0), 0);
	cr_assert_eq(stat(pool, &st), 0);
	edit_record("mtime_ns", (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
					(uint64_t)st.st_mtim.tv_nsec);
	edit_record("ctime_ns", (uint64_t)st.st_ctim.tv_sec * 1000000000ull +
					(uint64_t)st.st_ctim.tv_nsec);
	edit_record("atime_ns", (uint64_t)st.st_atim.tv_sec * 1000000000ull +
					(uint64_t)st.st_atim.tv_nsec);
}

static void truncate_record(void)
{
	cr_assert_eq(truncate(record_path(), 60), 0);
}

/*
 * A whole record, checksum and all, of another file under this file's
 * name: this pool's times and boot, another inode.
 */
static void other_file(void)
{
	char buf[2048], text[ZERO_RECORD_TEXT_MAX];
	struct zero_record rec;
	size_t n = read_record(buf, sizeof(buf));

	cr_assert_eq(zero_record_parse(buf, n, &rec), 0, "%s", buf);
	rec.inode++;
	cr_assert_lt(zero_record_format(&rec, text, sizeof(text)),
		     (int)sizeof(text));
	write_record(text);
}

/* Someone wrote the pool since zvmm's clean exit; the record is valid. */
static void written(void)
{
	poison(256 * SZ_1M);
}

static void untouched(void)
{
}

Test(demand, altered_record_means_dirty)
{
	relaunch_after(alter, false);
}

Test(demand, truncated_record_means_dirty)
{
	relaunch_after(truncate_record, false);
}

Test(demand, record_of_another_file_means_dirty)
{
	relaunch_after(other_file, false);
}

Test(demand, pool_written_after_a_clean_exit_means_dirty)
{
	relaunch_after(written, false);
}

/* The others' control: the same launches, the record left alone. */
Test(demand, untouched_record_means_clean)
{
	relaunch_after(untouched, true);
}

/*
 * A signal once zvmm's output holds @when (a launch step it reached, not
 * a time it might have): zvmm (@argv) ends with 130 within a second, no
 * hugepage is left, and a state record exists only if the pool of @bytes
 * is zero.
 */
static void interrupt(int sig, const char *const *argv, uint64_t bytes,
		      const char *when)
{
	long nr, free_before, nfree;
	struct timespec t0, t1;
	struct test_proc p;
	double secs;

	cr_assert_eq(zero_hugetlb_counts(page_sz, &nr, &free_before), 0);
	r.out_len = 0;
	r.out[0] = '\0';
	cr_assert_eq(test_spawn_zvmm(argv, false, &p), 0);
	cr_assert(test_wait_output(&p, &r, when, 60000),
		  "zvmm never said '%s': %s", when, r.out);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(p.pid, sig);
	cr_assert_eq(test_finish_zvmm(&p, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	cr_assert_eq(r.status, 130, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "interrupted"), "%s", r.out);
	cr_assert_lt(secs, 1.0, "took %.2f s after the signal", secs);
	cr_assert_eq(zero_hugetlb_counts(page_sz, &nr, &nfree), 0);
	/* More free with on_exit=release (the pool's pages punched out),
	 * never fewer: nothing of zvmm's own is left. */
	cr_assert_geq(nfree, free_before, "hugepages left in use");
	if (access(record_path(), F_OK) == 0)
		cr_assert_eq(pool_find_not_zero(bytes), -1,
			     "a state record claims a pool that is not zero");
}

/* zvmm run on the pool, one worker, @backend, until @when, then @sig. */
static void interrupt_run(int sig, const char *policy, const char *mem,
			  const char *cmdline, const char *backend,
			  const char *when)
{
	char pol[64], set[64];

	snprintf(pol, sizeof(pol), "configs/%s.conf", policy);
	snprintf(set, sizeof(set), "zeroing.backend=%s", backend);
	interrupt(sig,
		  (const char *[]){ "run", "--mem", mem, "--pool", pool,
				    "--policy", pol, "--set", set, "--set",
				    "zeroing.workers=1", "--cmdline", cmdline,
				    "--quiet", "--verbose", NULL },
		  strtoull(mem, NULL, 10) << 30, when);
}

Test(demand, sigint_during_prezero, .init = setup_kvm)
{
	need_pool(SZ_2M, 1024);
	poison(2048 * SZ_1M);
	/*
	 * 2 GiB at ~15 GB/s on one worker with page_at_a_time: ~140 ms of
	 * scrubbing after zvmm says it is preparing the memory.
	 */
	interrupt_run(SIGINT, "prezero", "2G", "verify=1", "page_at_a_time",
		      "preparing it for the prezero policy");
	cr_assert(strstr(r.out, "before the guest started"), "%s", r.out);
}

/* The same scrub, in `zvmm prezero`: no guest, the same promise. */
Test(demand, sigint_during_zvmm_prezero)
{
	need_pool(SZ_2M, 1024);
	poison(2048 * SZ_1M);
	interrupt(SIGINT,
		  (const char *[]){ "prezero", "--mem", "2G", "--pool", pool,
				    "--set", "zeroing.backend=page_at_a_time",
				    "--set", "zeroing.workers=1", "--quiet",
				    NULL },
		  2048 * SZ_1M, "zvmm: prezero of ");
	cr_assert(strstr(r.out, "the rest stay dirty"), "%s", r.out);
}

Test(demand, sigterm_with_outstanding_faults, .init = setup_kvm)
{
	need_pool(SZ_2M, 512);
	poison(1024 * SZ_1M);
	/*
	 * 4K stride: the guest runs for seconds, faulting page after page.
	 * rep_stosb: the sanitizer builds intercept memset, which would
	 * make on_exit = scrub of the pool slow there.
	 */
	interrupt_run(SIGTERM, "demand", "1G", "stride=4K", "rep_stosb",
		      "ZVMM-TOUCH-START");
}

Test(demand, sigint_while_the_guest_runs, .init = setup_kvm)
{
	need_pool(SZ_2M, 512);
	poison(1024 * SZ_1M);
	interrupt_run(SIGINT, "hybrid", "1G", "stride=4K", "rep_stosb",
		      "ZVMM-TOUCH-START");
}

/*
 * hybrid maps ahead: pages the background has made zero go into the
 * guest mapping as it finishes them, so a guest touching every page of a
 * poisoned pool takes fewer faults than it has pages, and still reads
 * nothing but zeros.
 */
Test(demand, hybrid_maps_ahead_of_the_guest, .init = setup_kvm)
{
	uint64_t bytes = SZ_1G, nr = bytes / SZ_2M;

	need_pool(SZ_2M, (long)nr);
	poison(bytes);
	boot("1G", "2M", "hybrid", "1", "keep");
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("touched_bytes") + field("reserved_bytes"), bytes);
	cr_assert_gt(section_field("demand", "ahead_pages"), 0, "%s", r.out);
	cr_assert_lt(section_field("demand", "faults"), nr - 1,
		     "every page faulted: %s", r.out);
}
