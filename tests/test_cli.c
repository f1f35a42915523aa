// SPDX-License-Identifier: MIT
/*
 * `zvmm` as a user runs it: bad input gets one clear line and the right
 * exit status with nothing left reserved; SIGINT restores the hugepage
 * pools; a real run reports every backend, extent and kernel method.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "helpers.h"

/* How long a test waits for zvmm to get somewhere: far past what it takes. */
#define WAIT_S 60

static long before_2m, before_1g;

static void snapshot(void)
{
	before_2m = test_nr_hugepages(SZ_2M);
	before_1g = test_nr_hugepages(SZ_1G);
}

static void assert_pools_restored(void)
{
	cr_assert_eq(test_nr_hugepages(SZ_2M), before_2m,
		     "2 MiB pool left at %ld (was %ld)",
		     test_nr_hugepages(SZ_2M), before_2m);
	cr_assert_eq(test_nr_hugepages(SZ_1G), before_1g,
		     "1 GiB pool left at %ld (was %ld)",
		     test_nr_hugepages(SZ_1G), before_1g);
}

static void run(const char *const *argv, struct test_run *r)
{
	cr_assert_eq(test_run_zvmm(argv, false, r), 0);
}

static struct test_run r;

Test(cli, help_and_version)
{
	run((const char *[]){ "--help", NULL }, &r);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "bench"), "%s", r.out);
	run((const char *[]){ "bench", "--help", NULL }, &r);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "--size"), "%s", r.out);
	run((const char *[]){ "--version", NULL }, &r);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "zvmm "), "%s", r.out);
	run((const char *[]){ "frobnicate", NULL }, &r);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.out, "unknown verb 'frobnicate'"), "%s", r.out);
}

Test(cli, bad_sizes_are_usage_errors, .init = snapshot)
{
	static const char *const bad[] = { "0", "-1", "12Q", "1.5G", "" };

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run((const char *[]){ "bench", "--size", bad[i], NULL }, &r);
		cr_assert_eq(r.status, 2, "--size '%s': status %d: %s", bad[i],
			     r.status, r.out);
		cr_assert(strstr(r.out, "--size"), "%s", r.out);
		cr_assert_eq(strchr(r.out, '\n'), r.out + r.out_len - 1,
			     "not one line: %s", r.out);
	}
	run((const char *[]){ "bench", "--size", "3M", NULL }, &r);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "multiple of 2 MiB"), "%s", r.out);
	assert_pools_restored();
}

Test(cli, size_beyond_memory_is_a_resource_error, .init = snapshot)
{
	run((const char *[]){ "bench", "--size", "99999T", NULL }, &r);
	cr_assert_eq(r.status, 3, "%s", r.out);
	cr_assert(strstr(r.out, "smaller --size"), "%s", r.out);
	assert_pools_restored();
}

Test(cli, unknown_backend_is_a_usage_error)
{
	run((const char *[]){ "bench", "--backends", "memset,warp", NULL }, &r);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "unknown backend 'warp'"), "%s", r.out);
}

Test(cli, backend_this_cpu_cannot_run_is_refused_not_sigill)
{
	const struct zero_backend *b;
	unsigned int i;
	const char *name = NULL;

	for_each_backend(i, b)
		if (!zero_backend_runs_here(b))
			name = b->name;
	if (!name)
		test_skip(TEST_NEED_CPU, "this CPU runs every backend of %s",
			  arch_name);
	run((const char *[]){ "bench", "--backends", name, NULL }, &r);
	cr_assert_eq(r.status, 3, "%s: status %d: %s", name, r.status, r.out);
	cr_assert(strstr(r.out, "needs the CPU feature"), "%s", r.out);
}

Test(cli, no_permission_to_reserve, .init = snapshot)
{
	long nr, nfree = 0;
	char size[32];

	test_need_root("to drop to an unprivileged user");
	/* More than is free, so that the user would have to reserve. */
	if (zero_hugetlb_counts(SZ_2M, &nr, &nfree))
		nfree = 0;
	snprintf(size, sizeof(size), "%ldM", 2 * (nfree + 32));
	cr_assert_eq(
		test_run_zvmm((const char *[]){ "bench", "--size", size, NULL },
			      true, &r),
		0);
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "only root may reserve them"), "%s", r.out);
	cr_assert(strstr(r.out, "nr_hugepages"), "%s", r.out);
	assert_pools_restored();
}

/* Whether @pid has a handler for @sig (SigCgt in /proc/PID/status). */
static bool catches(pid_t pid, int sig)
{
	unsigned long long mask = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask >> (sig - 1) & 1;
}

/*
 * Waits until @p takes SIGINT and has raised the 2 MiB pool: past the
 * reservation, inside the measurements. However long a busy machine
 * takes to get there, up to WAIT_S; false if @p ended or WAIT_S passed
 * first.
 */
static bool wait_pool_raised(struct test_proc *p)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (catches(p->pid, SIGINT) &&
		    test_nr_hugepages(SZ_2M) > before_2m)
			return true;
		if (!test_proc_running(p))
			return false;
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < WAIT_S);
	return false;
}

Test(cli, sigint_restores_pools, .init = snapshot, .timeout = 120)
{
	struct test_proc p;
	char json[64];
	bool raised, left;

	test_need_root("to reserve hugepages");
	snprintf(json, sizeof(json), "/tmp/zvmm-test-bench.%d.json",
		 (int)getpid());
	r.out_len = 0;
	r.out[0] = '\0';
	cr_assert_eq(test_spawn_zvmm((const char *[]){ "bench", "--size", "1G",
						       "--quiet", "--json",
						       json, NULL },
				     false, &p),
		     0);
	raised = wait_pool_raised(&p);
	kill(p.pid, SIGINT);
	cr_assert_eq(test_finish_zvmm(&p, &r), 0);
	left = !access(json, F_OK);
	unlink(json);
	cr_assert(raised, "zvmm did not raise the 2 MiB pool: status %d: %s",
		  r.status, r.out);
	cr_assert_eq(r.status, 130, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "interrupted"), "%s", r.out);
	cr_assert_not(left, "half-written %s left", json);
	assert_pools_restored();
}

/*
 * The acceptance run, with one repetition to keep CI short:
 * every backend that runs here at every extent, the kernel's fault
 * zeroing for both page sizes, MAP_POPULATE and glibc memset.
 */
Test(cli, bench_json_has_every_method, .init = snapshot, .timeout = 300)
{
	static const char *const ext[] = {
		"4096", "65536", "2097152", "8388608", "33554432", "1073741824"
	};
	static const char *const kern[] = {
		"\"method\": \"kernel:demand\", \"page_bytes\": 2097152,",
		"\"method\": \"kernel:demand\", \"page_bytes\": 1073741824,",
		"\"method\": \"kernel:populate\", \"page_bytes\": 2097152,",
		"\"method\": \"kernel:populate\", \"page_bytes\": 1073741824,",
	};
	const struct zero_backend *b;
	char want[160];
	unsigned int i, e;

	test_need_root("to reserve hugepages");
	run((const char *[]){ "bench", "--size", "2G", "--reps", "1", "--json",
			      "-", "--quiet", NULL },
	    &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "{ \"version\": 1, \"cpu\": "), "%s", r.out);
	cr_assert(strstr(r.out, "\"warm\": true"));
	/* The 1 GiB rows where the machine has a 1 GiB pool. */
	for (i = 0; i < 4; i++)
		if (!strstr(kern[i], "1073741824") ||
		    test_nr_hugepages(SZ_1G) >= 0)
			cr_assert(strstr(r.out, kern[i]), "missing %s",
				  kern[i]);
	for_each_backend(i, b) {
		if (!zero_backend_runs_here(b))
			continue;
		for (e = 0; e < 6; e++) {
			snprintf(want, sizeof(want),
				 "\"method\": \"backend:%s\", \"page_bytes\": ",
				 b->name);
			const char *p = r.out;
			bool found = false;

			while ((p = strstr(p, want)) && !found) {
				const char *x = strstr(p, "\"extent_bytes\": ");

				found = x &&
					!strncmp(x + 16, ext[e],
						 strlen(ext[e])) &&
					x[16 + strlen(ext[e])] == ',';
				p++;
			}
			cr_assert(found, "no row for backend:%s extent %s",
				  b->name, ext[e]);
		}
	}
	/*
	 * A demand row's breakdown: the median and mean of each part, and
	 * the slowest 1% of its pages, at least as slow as the median
	 * page's clear.
	 */
	{
		const char *d = strstr(r.out, "\"method\": \"pool:demand\"");
		const char *c = d ? strstr(d, "\"clear_us\": ") : NULL;
		const char *cm = d ? strstr(d, "\"clear_mean_us\": ") : NULL;
		const char *p99 = d ? strstr(d, "\"page_p99_us\": ") : NULL;

		cr_assert(c && cm && p99, "no breakdown in %s", r.out);
		cr_assert_gt(strtod(cm + 17, NULL), 0);
		cr_assert_geq(strtod(p99 + 15, NULL), strtod(c + 12, NULL));
		cr_assert(strstr(r.out, "a page (median / mean): hand-off"));
	}
	assert_pools_restored();
}

/* The count the usage text gives is the count the parser takes. */
Test(cli, reps_outside_what_usage_says_is_refused)
{
	static const char *const bad[] = { "0", "65", "4294967296", "-1" };

	for (unsigned int i = 0; i < 4; i++) {
		cr_assert_eq(test_run_zvmm((const char *[]){ "bench", "--reps",
							     bad[i], NULL },
					   false, &r),
			     0);
		cr_assert_eq(r.status, 2, "--reps %s: status %d: %s", bad[i],
			     r.status, r.out);
		cr_assert(strstr(r.out, "from 1 to 64"), "%s", r.out);
	}
	cr_assert_eq(test_run_zvmm((const char *[]){ "bench", "--help", NULL },
				   false, &r),
		     0);
	cr_assert(strstr(r.out, "1 to 64"), "%s", r.out);
}

/*
 * Each verb's usage text and its parser come from one table of rows: every
 * option --help lists is taken, and a whole-number option takes exactly
 * the range its line states (checked at both ends and one past each).
 */
Test(cli, usage_and_parser_are_one_table)
{
	static const char *const verbs[] = { "run",   "prezero",   "policy",
					     "bench", "calibrate", "backends" };
	struct test_run help;

	for (unsigned int v = 0; v < 6; v++) {
		const char *p;
		unsigned int listed = 0;

		run((const char *[]){ verbs[v], "--help", NULL }, &help);
		cr_assert_eq(help.status, 0, "%s --help: %s", verbs[v],
			     help.out);
		/* The option lines: "  --name [ARG]  text". */
		for (p = strstr(help.out, "\n  --"); p;
		     p = strstr(p + 1, "\n  --")) {
			char name[32], arg[32] = "";
			unsigned long lo, hi;
			const char *range;
			char val[32];

			cr_assert_eq(sscanf(p + 3, "%31s %31[A-Z0-9|=.-]", name,
					    arg) >= 1,
				     1);
			listed++;
			/* Given with a value, then --help: parsed or refused. */
			run((const char *[]){ verbs[v], name, "x", "--help",
					      NULL },
			    &r);
			cr_assert_not(strstr(r.out, "unrecognized option"),
				      "%s %s: listed but not parsed: %s",
				      verbs[v], name, r.out);
			range = strstr(p, " to ");
			if (!range || range > strchr(p + 1, '\n') ||
			    sscanf(range - 2, "%lu to %lu", &lo, &hi) != 2)
				continue;
			for (unsigned int k = 0; k < 4; k++) {
				unsigned long x =
					(unsigned long[]){ lo - 1, lo, hi,
							   hi + 1 }[k];

				snprintf(val, sizeof(val), "%lu", x);
				run((const char *[]){ verbs[v], name, val,
						      "--help", NULL },
				    &r);
				cr_assert_eq(r.status, k == 1 || k == 2 ? 0 : 2,
					     "%s %s %s: status %d: %s",
					     verbs[v], name, val, r.status,
					     r.out);
			}
		}
		cr_assert_eq(!!listed, strcmp(verbs[v], "backends") != 0,
			     "%s: %u options listed", verbs[v], listed);
	}
}
