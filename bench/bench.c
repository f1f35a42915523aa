// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mman.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/stats.h"
#include "../zeroing/backend.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/hugetlb.h"
#include "bench.h"
#include "internal.h"
#include "plot.h"

#define BENCH_MAX_REPS 64

/* Extent sizes of the table; the kernel bounds its extents at 8 MiB. */
static const uint64_t bench_extents[] = {
	SZ_4K, SZ_64K, SZ_2M, SZ_8M, 32 * SZ_1M, SZ_1G,
};
#define BENCH_NR_EXTENTS (sizeof(bench_extents) / sizeof(bench_extents[0]))

volatile sig_atomic_t bench_stop;

/*
 * The first SIGINT/SIGTERM asks the loops to stop after the current pass
 * (a pass over the region takes well under a second); a second one puts
 * the hugepage counts back from here and leaves at once.
 */
static void bench_on_signal(int sig)
{
	if (bench_stop) {
		zero_hugetlb_release_all_async();
		_exit(128 + sig);
	}
	bench_stop = sig;
}

void bench_progress(struct bench *bn, const char *what, uint64_t extent,
		    unsigned int rep)
{
	char label[16];

	if (!bn->progress)
		return;
	fprintf(stderr, "\r\033[K[%3u/%3u] %-22s %4s  rep %u/%u", bn->step,
		bn->steps, what, size_label(extent, label, sizeof(label)), rep,
		bn->o->reps);
	fflush(stderr);
}

static void progress_done(struct bench *bn)
{
	if (bn->progress)
		fprintf(stderr, "\r\033[K");
}

/* Records the median and range of @reps timings of @bytes each. */
void bench_record(struct bench *bn, const char *method, uint64_t page,
		  uint64_t extent, uint64_t bytes, double *t)
{
	struct bench_result *r;
	unsigned int n = bn->o->reps;

	if (bn->nr == BENCH_MAX_RESULTS)
		return;
	r = &bn->res[bn->nr++];
	memset(r, 0, sizeof(*r));
	stats_sort(t, n);
	snprintf(r->method, sizeof(r->method), "%s", method);
	r->page_bytes = page;
	r->extent_bytes = extent;
	r->threads = 1;
	r->backend[0] = '\0';
	r->reps = n;
	r->gbps = (double)bytes / stats_median_sorted(t, n) / 1e9;
	r->gbps_min = (double)bytes / t[n - 1] / 1e9;
	r->gbps_max = (double)bytes / t[0] / 1e9;
}

void bench_record_threads(struct bench *bn, const char *method, uint64_t page,
			  uint64_t extent, uint64_t bytes, double *t,
			  unsigned int threads, const char *backend)
{
	struct bench_result *r;

	if (bn->nr == BENCH_MAX_RESULTS)
		return;
	bench_record(bn, method, page, extent, bytes, t);
	r = &bn->res[bn->nr - 1];
	r->threads = threads;
	snprintf(r->backend, sizeof(r->backend), "%s", backend ? backend : "");
}

/*
 * One `perf bench mem map` pass: map @bytes of anonymous hugetlb memory
 * and either touch one byte per page (demand) or let MAP_POPULATE fault
 * it all in; either way the kernel zeroes every page. munmap is not
 * timed.
 */
static int kernel_fault(uint64_t bytes, uint64_t page, bool populate,
			double *secs)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
		    (page == SZ_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB) |
		    (populate ? MAP_POPULATE : 0);
	volatile char *p;
	double t0 = clock_now();

	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (!populate)
		for (uint64_t off = 0; off < bytes; off += page)
			p[off] = 1;
	*secs = clock_now() - t0;
	munmap((void *)p, bytes);
	return 0;
}

static int bench_kernel(struct bench *bn, uint64_t page,
			struct zero_hugetlb_resv *resv)
{
	static const char *const methods[] = { "kernel:demand",
					       "kernel:populate" };
	uint64_t count = (bn->o->size + page - 1) / page;
	uint64_t bytes = count * page;
	double t[BENCH_MAX_REPS], warm;
	char sz[32];
	int ret;

	ret = zero_hugetlb_reserve(page, (long)count, resv);
	if (page == SZ_1G)
		bn->resv_ok_1g = !ret;
	else
		bn->resv_ok_2m = !ret;
	if (ret) {
		pr_warn("cannot reserve %llu hugepages of %s (%s): kernel rows for that page size are skipped",
			(unsigned long long)count,
			size_format(page, sz, sizeof(sz)), strerror(-ret));
		bn->step += 2;
		return 0;
	}
	/* An untimed pass first: the pool's pages may be cold (section 7). */
	ret = kernel_fault(bytes, page, false, &warm);
	for (unsigned int m = 0; m < 2 && !ret; m++) {
		bn->step++;
		for (unsigned int r = 0; r < bn->o->reps && !ret; r++) {
			bench_progress(bn, methods[m], page, r + 1);
			ret = bench_stop ? -EINTR :
					   kernel_fault(bytes, page, m, &t[r]);
		}
		if (!ret)
			bench_record(bn, methods[m], page, page, bytes, t);
	}
	if (ret && ret != -EINTR)
		pr_err("mapping %s of %s hugepages failed: %s",
		       size_format(bytes, sz, sizeof(sz)),
		       size_format(page, sz + 16, sizeof(sz) - 16),
		       strerror(-ret));
	return ret;
}

/*
 * The region the backends clear: 1 GiB hugepages when they can be had,
 * else 2 MiB ones, else transparent hugepages. Written once before any
 * timing so no pass pays for first touch.
 */
static int region_map(struct bench *bn)
{
	uint64_t size = bn->o->size;
	int hflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE;
	void *p = MAP_FAILED;

	if (size % SZ_1G == 0 &&
	    (bn->resv_1g.slot >= 0 ||
	     !zero_hugetlb_reserve(SZ_1G, (long)(size / SZ_1G),
				   &bn->resv_1g))) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 hflags | MAP_HUGE_1GB, -1, 0);
		bn->region_page = SZ_1G;
		bn->backing = "1 GiB hugetlb pages";
	}
	if (p == MAP_FAILED &&
	    !zero_hugetlb_reserve(SZ_2M, (long)(size / SZ_2M), &bn->resv_2m)) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 hflags | MAP_HUGE_2MB, -1, 0);
		bn->region_page = SZ_2M;
		bn->backing = "2 MiB hugetlb pages";
	}
	if (p == MAP_FAILED) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		madvise(p, size, MADV_HUGEPAGE);
		bn->region_page = SZ_2M;
		bn->backing =
			"transparent hugepages (no hugetlb pages could be reserved)";
	}
	bn->region = p;
	bn->region_bytes = size;
	memset(bn->region, 0x5a, size);
	return 0;
}

static int bench_backends(struct bench *bn)
{
	double t[BENCH_MAX_REPS];
	char method[48];

	for (unsigned int i = 0; i < bn->nsel; i++) {
		const struct zero_backend *b = bn->sel[i];

		snprintf(method, sizeof(method), "backend:%s", b->name);
		for (unsigned int e = 0; e < BENCH_NR_EXTENTS; e++) {
			uint64_t ext = bench_extents[e];

			if (ext > bn->region_bytes)
				continue;
			bn->step++;
			for (unsigned int r = 0; r < bn->o->reps; r++) {
				if (bench_stop)
					return -EINTR;
				bench_progress(bn, method, ext, r + 1);
				t[r] = zero_time_pass(b, bn->region,
						      bn->region_bytes, ext);
			}
			bench_record(bn, method, bn->region_page, ext,
				     bn->region_bytes, t);
		}
	}
	return 0;
}

static const struct bench_result *
find(const struct bench *bn, const char *method, uint64_t page, uint64_t extent)
{
	for (unsigned int i = 0; i < bn->nr; i++) {
		const struct bench_result *r = &bn->res[i];

		if (!strcmp(r->method, method) &&
		    (!page || r->page_bytes == page) &&
		    (!extent || r->extent_bytes == extent))
			return r;
	}
	return NULL;
}

/* The reference every ratio is taken against: kernel 2 MiB faults. */
static double kernel_ref(const struct bench *bn)
{
	const struct bench_result *k = find(bn, "kernel:demand", SZ_2M, 0);

	return k ? k->gbps : 0;
}

static const struct bench_result *find_w(const struct bench *bn,
					 const char *method, uint64_t page,
					 uint64_t extent, unsigned int threads)
{
	for (unsigned int i = 0; i < bn->nr; i++) {
		const struct bench_result *r = &bn->res[i];

		if (!strcmp(r->method, method) && r->page_bytes == page &&
		    (!extent || r->extent_bytes == extent) &&
		    r->threads == threads)
			return r;
	}
	return NULL;
}

/* limit:write at @threads, 0 when not measured. */
static double limit_of(const struct bench *bn, unsigned int threads)
{
	for (unsigned int i = 0; i < bn->nr; i++)
		if (!strcmp(bn->res[i].method, "limit:write") &&
		    bn->res[i].threads == threads)
			return bn->res[i].gbps;
	return 0;
}

static const char *verdict(bool met)
{
	return met ? "met" : "MISSED";
}

/* The kernel's release, for the rows it is compared with. */
static const char *kernel_release(void)
{
	static struct zero_machine m;

	if (!m.kernel[0])
		zero_machine_get(&m);
	return m.kernel;
}

/*
 * Where a demand page's time goes in row @a: the parts the engine timed
 * (median / mean: the row's rate is the mean page's), what is left
 * between pages (the asker's own loop: the mean page less the parts'
 * means) and the slowest 1% of pages; beside it, the time to clear the
 * page at limit:write with as many threads.
 */
static void print_demand_split(struct bench *bn, FILE *f,
			       const struct bench_result *a)
{
	double page_us = (double)a->page_bytes / (a->gbps * 1e3);
	double lim = limit_of(bn, a->threads);
	double rest = page_us - a->handoff_mean_us - a->clear_mean_us -
		      a->wake_mean_us;

	fprintf(f,
		"pool:demand %s pages, %u worker%s, a page (median / mean): hand-off %.1f / %.1f us, clear %.1f / %.1f us, wake %.1f / %.1f us, between pages %.1f us; %.1f us in all, the slowest 1%% %.1f us or more",
		a->page_bytes == SZ_1G ? "1G" : "2M", a->threads,
		a->threads == 1 ? "" : "s", a->handoff_us, a->handoff_mean_us,
		a->clear_us, a->clear_mean_us, a->wake_us, a->wake_mean_us,
		rest > 0 ? rest : 0, page_us, a->page_p99_us);
	if (lim > 0)
		fprintf(f, ", %.1f us at limit:write with %u thread%s",
			(double)a->page_bytes / (lim * 1e3), a->threads,
			a->threads == 1 ? "" : "s");
	fprintf(f, "\n");
}

/*
 * A missed demand target names the part of a fault that holds it back:
 * the clear against the ceiling's time for the page, or the hand-off,
 * wake or gap between pages, whichever costs the most on the mean page
 * (the row's rate), and says how much of it is its slow pages (mean
 * over median).
 */
static void print_held_back(struct bench *bn, FILE *f,
			    const struct bench_result *a)
{
	double lim = limit_of(bn, a->threads);
	double page_us = (double)a->page_bytes / (a->gbps * 1e3);
	double ideal = lim > 0 ? (double)a->page_bytes / (lim * 1e3) : 0;
	double part[4] = { a->clear_mean_us - ideal, a->handoff_mean_us,
			   a->wake_mean_us,
			   page_us - a->handoff_mean_us - a->clear_mean_us -
				   a->wake_mean_us };
	double median[4] = { a->clear_us - ideal, a->handoff_us, a->wake_us,
			     0 };
	static const char *const name[4] = {
		"the clear itself (over the ceiling's time)", "the hand-off",
		"the wake", "the time between pages"
	};
	unsigned int worst = 0;

	for (unsigned int k = 1; k < 4; k++)
		if (part[k] > part[worst])
			worst = k;
	fprintf(f, "  held back by %s: %.1f us of a %.1f us page", name[worst],
		part[worst], page_us);
	if (worst < 3 && part[worst] - median[worst] > 0)
		fprintf(f,
			" (%.1f us of it slow pages: its mean over its median)",
			part[worst] - median[worst]);
	fprintf(f, "\n");
}

/*
 * The demand targets (issue 30): one worker >= 0.85x limit:write with
 * one thread; every worker >= 0.7x limit:write with as many threads and
 * >= 1.3x one worker; each with its breakdown, and the kernel's own
 * fault zeroing of this run beside it.
 */
static void print_demand_targets(struct bench *bn, FILE *f, uint64_t page,
				 unsigned int w)
{
	const char *pg = page == SZ_1G ? "1G" : "2M";
	const struct bench_result *d1, *dw, *k;
	double l1 = limit_of(bn, 1), lw = limit_of(bn, w), r;

	d1 = find_w(bn, "pool:demand", page, 0, 1);
	dw = w > 1 ? find_w(bn, "pool:demand", page, 0, w) : NULL;
	if (!d1)
		return;
	if (l1 > 0) {
		r = d1->gbps / l1;
		fprintf(f,
			"target: pool:demand %s pages, 1 worker / limit:write, 1 thread: %.1f / %.1f GB/s = %.2f (>= 0.85: %s)\n",
			pg, d1->gbps, l1, r, verdict(r >= 0.85));
		if (r < 0.85)
			print_held_back(bn, f, d1);
	}
	if (dw && lw > 0) {
		r = dw->gbps / lw;
		fprintf(f,
			"target: pool:demand %s pages, %u workers / limit:write, %u threads: %.1f / %.1f GB/s = %.2f (>= 0.7: %s)\n",
			pg, w, w, dw->gbps, lw, r, verdict(r >= 0.7));
		if (r < 0.7)
			print_held_back(bn, f, dw);
	}
	if (dw) {
		r = dw->gbps / d1->gbps;
		fprintf(f,
			"target: pool:demand %s pages, %u workers / 1 worker: %.1f / %.1f GB/s = %.2f (>= 1.3: %s)\n",
			pg, w, dw->gbps, d1->gbps, r, verdict(r >= 1.3));
		/* One thread may already write at the memory's ceiling. */
		if (r < 1.3 && l1 > 0 && lw / l1 < 1.3)
			fprintf(f,
				"  not reachable here: limit:write itself scales %.2fx from 1 to %u threads (%.1f -> %.1f GB/s)\n",
				lw / l1, w, l1, lw);
		else if (r < 1.3)
			print_held_back(bn, f, dw);
	}
	print_demand_split(bn, f, d1);
	if (dw)
		print_demand_split(bn, f, dw);
	k = find(bn, "kernel:demand", page, 0);
	if (k)
		fprintf(f,
			"pool:demand %s pages, 1 worker / kernel:demand %s (Linux %s): %.1f / %.1f GB/s = %.2fx\n",
			pg, pg, kernel_release(), d1->gbps, k->gbps,
			d1->gbps / k->gbps);
}

/*
 * The targets the engine is held to, each a ratio of this run: 2 MiB
 * pages scrub as fast as 1 GiB pages (>= 0.95, both at 2M chunks, every
 * worker), and the engine's scrub against the write ceiling (>= 0.9);
 * its demand rate against the ceiling beside them.
 */
static void print_targets(struct bench *bn, FILE *f)
{
	static const uint64_t pages[] = { SZ_2M, SZ_1G };
	const struct bench_result *a, *b;
	unsigned int w = 0;
	double lim;

	for (unsigned int i = 0; i < bn->nr; i++)
		if (!strcmp(bn->res[i].method, "pool:prezero") &&
		    bn->res[i].threads > w)
			w = bn->res[i].threads;
	if (!w)
		return;
	a = find_w(bn, "pool:prezero", SZ_2M, SZ_2M, w);
	b = find_w(bn, "pool:prezero", SZ_1G, SZ_2M, w);
	if (a && b)
		fprintf(f,
			"target: pool:prezero 2M pages / 1G pages, 2M chunks, %u workers: %.1f / %.1f GB/s = %.2f (>= 0.95: %s)\n",
			w, a->gbps, b->gbps, a->gbps / b->gbps,
			verdict(a->gbps / b->gbps >= 0.95));
	/*
	 * pool.record = verify reads a pool instead of scrubbing it: worth
	 * it only where reading is faster (docs/DESIGN.md 3).
	 */
	for (unsigned int p = 0; p < 2; p++) {
		a = find_w(bn, "pool:verify", pages[p], pages[p], w);
		b = find_w(bn, "pool:prezero", pages[p], SZ_2M, w);
		if (a && b)
			fprintf(f,
				"pool:verify / pool:prezero %s pages, %u threads: %.1f / %.1f GB/s = %.2f (reading %s scrubbing)\n",
				pages[p] == SZ_1G ? "1G" : "2M", w, a->gbps,
				b->gbps, a->gbps / b->gbps,
				a->gbps > b->gbps ? "beats" : "does not beat");
	}
	lim = limit_of(bn, w);
	if (lim <= 0)
		return;
	for (unsigned int p = 0; p < 2; p++) {
		a = find_w(bn, "pool:prezero", pages[p], SZ_2M, w);
		if (a)
			fprintf(f,
				"target: pool:prezero %s pages / limit:write, %u workers: %.1f / %.1f GB/s = %.2f (>= 0.9: %s)\n",
				pages[p] == SZ_1G ? "1G" : "2M", w, a->gbps,
				lim, a->gbps / lim,
				verdict(a->gbps / lim >= 0.9));
	}
	for (unsigned int p = 0; p < 2; p++)
		print_demand_targets(bn, f, pages[p], w);
}

/* The engine's targets: bounded chunks cost nothing, scrubbing a warm
 * pool beats the kernel populating fresh pages, and how workers scale. */
static void print_pool_summary(struct bench *bn, FILE *f)
{
	static const uint64_t pages[] = { SZ_2M, SZ_1G };
	const struct bench_result *a, *b, *g;
	unsigned int wmax = 0;

	for (unsigned int i = 0; i < bn->nr; i++)
		if (!strncmp(bn->res[i].method, "pool:", 5) &&
		    bn->res[i].threads > wmax)
			wmax = bn->res[i].threads;
	if (!wmax)
		return;
	for (unsigned int w = 1; w <= wmax; w++) {
		g = find_w(bn, "pool:prezero", SZ_1G, SZ_1G, w);
		a = find_w(bn, "pool:prezero", SZ_1G, 256 << 10, w);
		b = find_w(bn, "pool:prezero", SZ_1G, SZ_2M, w);
		if (g && a && b)
			fprintf(f,
				"pool:prezero 1G pages, %u worker%s: 256K chunks %.1f, 2M chunks %.1f GB/s = %.2fx, %.2fx the rate with 1G chunks (%.1f)\n",
				w, w == 1 ? "" : "s", a->gbps, b->gbps,
				a->gbps / g->gbps, b->gbps / g->gbps, g->gbps);
	}
	for (unsigned int p = 0; p < 2; p++)
		for (unsigned int w = 1; w <= wmax; w++) {
			a = find_w(bn, "pool:prezero", pages[p], SZ_2M, w);
			b = find_w(bn, "pool:populate", pages[p], pages[p], w);
			if (a && b)
				fprintf(f,
					"scrub of a warm dirty pool vs kernel populate, %s pages, %u worker%s: %.1f / %.1f GB/s = %.2fx\n",
					pages[p] == SZ_1G ? "1G" : "2M", w,
					w == 1 ? "" : "s", a->gbps, b->gbps,
					a->gbps / b->gbps);
		}
	for (unsigned int p = 0; p < 2; p++) {
		a = find_w(bn, "pool:prezero", pages[p], SZ_2M, 1);
		b = find_w(bn, "pool:prezero", pages[p], SZ_2M, wmax);
		if (a && b && wmax > 1)
			fprintf(f,
				"workers 1 -> %u, pool:prezero %s pages 2M chunks: %.1f -> %.1f GB/s (%.2fx)\n",
				wmax, pages[p] == SZ_1G ? "1G" : "2M", a->gbps,
				b->gbps, b->gbps / a->gbps);
		a = find_w(bn, "pool:populate", pages[p], pages[p], 1);
		b = find_w(bn, "pool:populate", pages[p], pages[p], wmax);
		if (a && b && wmax > 1)
			fprintf(f,
				"workers 1 -> %u, pool:populate %s pages: %.1f -> %.1f GB/s (%.2fx)\n",
				wmax, pages[p] == SZ_1G ? "1G" : "2M", a->gbps,
				b->gbps, b->gbps / a->gbps);
	}
}

static void print_table(struct bench *bn)
{
	const struct bench_result *best = NULL, *r, *b1g;
	double ref = kernel_ref(bn), top = 0;
	char cpu[64], feat[128], sz[32], page[16], ext[16];
	FILE *f = bn->table;

	arch_cpu_model(cpu, sizeof(cpu));
	zero_features_format(zero_cpu_features(), feat, sizeof(feat));
	fprintf(f, "zvmm bench: %s, %s (%s), Linux %s\n", cpu, arch_name, feat,
		kernel_release());
	fprintf(f,
		"region: %s on %s, written once before timing (warm); %u repetitions; median GB/s (1 GB = 1e9 bytes)\n\n",
		size_format(bn->region_bytes, sz, sizeof(sz)), bn->backing,
		bn->o->reps);
	fprintf(f, "%-20s %5s %6s %3s %8s  %-17s %-9s %-7s %s\n", "method",
		"page", "extent", "thr", "GB/s", "(min - max)", "x kernel",
		"x limit", "backend");
	fprintf(f, "%-20s %5s %6s %3s %8s  %-17s %-9s %-7s\n", "", "", "", "",
		"", "", "demand 2M", "write");
	for (unsigned int i = 0; i < bn->nr; i++) {
		char range[32], ratio[16] = "n/a", of_limit[16] = "n/a";
		double lim;

		r = &bn->res[i];
		lim = limit_of(bn, r->threads);
		snprintf(range, sizeof(range), "(%.1f - %.1f)", r->gbps_min,
			 r->gbps_max);
		if (ref > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", r->gbps / ref);
		if (lim > 0)
			snprintf(of_limit, sizeof(of_limit), "%.2f",
				 r->gbps / lim);
		fprintf(f, "%-20s %5s %6s %3u %8.1f  %-17s %9s %7s %s\n",
			r->method,
			size_label(r->page_bytes, page, sizeof(page)),
			size_label(r->extent_bytes, ext, sizeof(ext)),
			r->threads, r->gbps, range, ratio, of_limit,
			r->backend);
		if (!strncmp(r->method, "backend:", 8) &&
		    r->extent_bytes == SZ_2M && (!best || r->gbps > best->gbps))
			best = r;
	}
	fprintf(f, "\n");
	if (best) {
		fprintf(f, "best at 2M extents: %s %.1f GB/s", best->method,
			best->gbps);
		if (ref > 0)
			fprintf(f, " = %.2fx kernel:demand 2M (%.1f GB/s)",
				best->gbps / ref, ref);
		fprintf(f, "\n");
		for (unsigned int i = 0; i < bn->nr; i++)
			if (!strcmp(bn->res[i].method, best->method) &&
			    bn->res[i].gbps > top)
				top = bn->res[i].gbps;
		b1g = find(bn, best->method, 0, SZ_1G);
		if (b1g)
			fprintf(f,
				"%s at 1G extents: %.1f GB/s = %.2fx its best extent rate (%.1f GB/s)\n",
				best->method, b1g->gbps, b1g->gbps / top, top);
	}
	print_pool_summary(bn, f);
	print_targets(bn, f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static int write_json(struct bench *bn)
{
	double ref = kernel_ref(bn);
	char cpu[64], feat[128];
	FILE *f = bn->json;

	arch_cpu_model(cpu, sizeof(cpu));
	zero_features_format(zero_cpu_features(), feat, sizeof(feat));
	fprintf(f, "{ \"version\": 1, \"cpu\": ");
	json_str(f, cpu);
	fprintf(f, ", \"arch\": \"%s\", \"features\": ", arch_name);
	json_str(f, feat);
	fprintf(f, ", \"kernel\": ");
	json_str(f, kernel_release());
	fprintf(f, ", \"warm\": true, \"reps\": %u,\n", bn->o->reps);
	fprintf(f,
		"  \"region\": { \"bytes\": %llu, \"page_bytes\": %llu, \"backing\": ",
		(unsigned long long)bn->region_bytes,
		(unsigned long long)bn->region_page);
	json_str(f, bn->backing);
	fprintf(f, " },\n  \"results\": [");
	for (unsigned int i = 0; i < bn->nr; i++) {
		const struct bench_result *r = &bn->res[i];

		fprintf(f,
			"%s\n    { \"method\": \"%s\", \"page_bytes\": %llu, \"extent_bytes\": %llu, \"threads\": %u, \"gbps\": %.3f, \"gbps_min\": %.3f, \"gbps_max\": %.3f",
			i ? "," : "", r->method,
			(unsigned long long)r->page_bytes,
			(unsigned long long)r->extent_bytes, r->threads,
			r->gbps, r->gbps_min, r->gbps_max);
		if (r->backend[0])
			fprintf(f, ", \"backend\": \"%s\"", r->backend);
		if (!strcmp(r->method, "pool:demand"))
			fprintf(f,
				", \"handoff_us\": %.2f, \"clear_us\": %.2f, \"wake_us\": %.2f, \"handoff_mean_us\": %.2f, \"clear_mean_us\": %.2f, \"wake_mean_us\": %.2f, \"page_p99_us\": %.2f",
				r->handoff_us, r->clear_us, r->wake_us,
				r->handoff_mean_us, r->clear_mean_us,
				r->wake_mean_us, r->page_p99_us);
		if (ref > 0)
			fprintf(f, ", \"ratio_kernel_demand_2m\": %.3f",
				r->gbps / ref);
		if (limit_of(bn, r->threads) > 0)
			fprintf(f, ", \"ratio_limit_write\": %.3f",
				r->gbps / limit_of(bn, r->threads));
		fprintf(f, " }");
	}
	fprintf(f, "\n  ] }\n");
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* Resolves --backends (or every backend that runs here). */
static int select_backends(struct bench *bn)
{
	const struct zero_backend *b;
	char why[512], *list, *tok, *save;
	unsigned int i;
	int ret = 0;

	if (!bn->o->backends) {
		for_each_backend(i, b)
			if (zero_backend_runs_here(b))
				bn->sel[bn->nsel++] = b;
		return 0;
	}
	list = strdup(bn->o->backends);
	if (!list)
		return -ENOMEM;
	for (tok = strtok_r(list, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		ret = zero_backend_find(tok, &b, why, sizeof(why));
		if (ret)
			pr_err("%s", why);
		else if (bn->nsel < ZERO_PROFILE_MAX_BACKENDS)
			bn->sel[bn->nsel++] = b;
	}
	free(list);
	if (!ret && !bn->nsel) {
		pr_err("--backends names no backend");
		ret = -EINVAL;
	}
	/* An unknown name is a usage error; a known one that cannot run
	 * here is a missing resource (the CPU feature). */
	return ret == -ENOENT ? -EINVAL : ret;
}

/*
 * Everything that can be known before memory is touched: the options,
 * the memory this machine has, and whether this process may reserve
 * the hugepages the kernel rows need.
 */
static int preflight(struct bench *bn)
{
	const struct bench_opts *o = bn->o;
	uint64_t avail, need, n2m, n1g;
	char a[32], b[32], path[96];
	long nr, nfree;
	int ret;

	if (o->reps < 1 || o->reps > BENCH_MAX_REPS) {
		pr_err("--reps %u is out of range: give 1 to %d", o->reps,
		       BENCH_MAX_REPS);
		return -EINVAL;
	}
	if (o->size % SZ_2M) {
		pr_err("--size %s is not a multiple of 2 MiB: round it to whole hugepages, e.g. --size 4G",
		       size_format(o->size, a, sizeof(a)));
		return -EINVAL;
	}
	ret = select_backends(bn);
	if (ret)
		return ret;
	if (o->plot_dir) {
		ret = bench_plot_check(o->plot_dir);
		if (ret)
			return ret;
	}
	ret = zero_mem_available(&avail);
	if (ret) {
		pr_err("cannot read /proc/meminfo: %s", strerror(-ret));
		return ret;
	}
	/* The kernel's 1 GiB rows round the region up to whole pages. */
	need = (o->size + SZ_1G - 1) / SZ_1G * SZ_1G;
	if (need > avail) {
		pr_err("--size %s needs %s of memory but only %s is free (MemAvailable plus free hugepages): choose a smaller --size",
		       size_format(o->size, a, sizeof(a)),
		       size_format(need, b, sizeof(b)),
		       size_human(avail, path, sizeof(path)));
		return -ENOMEM;
	}
	if (geteuid() == 0)
		return 0;
	n2m = o->size / SZ_2M;
	n1g = need / SZ_1G;
	if (!zero_hugetlb_counts(SZ_2M, &nr, &nfree) && (uint64_t)nfree < n2m) {
		pr_err("bench needs %llu free 2 MiB hugepages (%ld free) and only root may reserve them: run as root, or: echo %llu | sudo tee %s",
		       (unsigned long long)n2m, nfree,
		       (unsigned long long)(nr + (long)n2m - nfree),
		       zero_hugetlb_path(SZ_2M, "nr_hugepages", path,
					 sizeof(path)));
		return -EACCES;
	}
	if (!zero_hugetlb_counts(SZ_1G, &nr, &nfree) && (uint64_t)nfree < n1g) {
		pr_err("bench needs %llu free 1 GiB hugepages (%ld free) and only root may reserve them: run as root, or: echo %llu | sudo tee %s",
		       (unsigned long long)n1g, nfree,
		       (unsigned long long)(nr + (long)n1g - nfree),
		       zero_hugetlb_path(SZ_1G, "nr_hugepages", path,
					 sizeof(path)));
		return -EACCES;
	}
	return 0;
}

static int open_json(struct bench *bn)
{
	const char *path = bn->o->json;

	bn->table = stdout;
	if (!path)
		return 0;
	if (!strcmp(path, "-")) {
		bn->json = stdout;
		bn->table = stderr;
		return 0;
	}
	bn->json = fopen(path, "we");
	if (!bn->json) {
		pr_err("cannot write --json %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

int bench_run(const struct bench_opts *o)
{
	struct sigaction sa = { .sa_handler = bench_on_signal }, old_int,
			 old_term;
	unsigned int w[BENCH_MAX_THREADS];
	struct bench *bn;
	int ret;

	bn = calloc(1, sizeof(*bn));
	if (!bn)
		return -ENOMEM;
	bn->o = o;
	bn->resv_2m = (struct zero_hugetlb_resv)ZERO_HUGETLB_RESV_INIT;
	bn->resv_1g = (struct zero_hugetlb_resv)ZERO_HUGETLB_RESV_INIT;
	ret = preflight(bn);
	if (!ret)
		ret = open_json(bn);
	if (ret)
		goto out_free;

	bench_stop = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	bn->progress = !o->quiet && isatty(STDERR_FILENO);
	bn->steps = 4 + bn->nsel * BENCH_NR_EXTENTS +
		    bench_worker_counts(w, NULL) + bench_pool_steps(SZ_2M) +
		    (o->size % SZ_1G ? 0 : bench_pool_steps(SZ_1G));

	/* Each page size's pool rows use the pages its kernel rows hold. */
	ret = bench_kernel(bn, SZ_2M, &bn->resv_2m);
	if (!ret && bn->resv_ok_2m && !bench_stop)
		ret = bench_pool(bn, SZ_2M);
	zero_hugetlb_release(&bn->resv_2m);
	if (!ret)
		ret = bench_kernel(bn, SZ_1G, &bn->resv_1g);
	if (!ret && bn->resv_ok_1g && !bench_stop && o->size % SZ_1G == 0)
		ret = bench_pool(bn, SZ_1G);
	if (!ret && !bench_stop) {
		ret = region_map(bn);
		if (ret)
			pr_err("cannot map a %llu-byte region: %s",
			       (unsigned long long)o->size, strerror(-ret));
	}
	if (!ret)
		ret = bench_backends(bn);
	if (!ret)
		ret = bench_limit(bn);
	if (bench_stop)
		ret = -EINTR;
	progress_done(bn);
	if (bn->region)
		munmap(bn->region, bn->region_bytes);
	zero_hugetlb_release(&bn->resv_2m);
	zero_hugetlb_release(&bn->resv_1g);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);

	if (ret == -EINTR)
		pr_err("interrupted by %s; hugepage counts restored",
		       strsignal(bench_stop));
	if (ret)
		goto out_close;
	print_table(bn);
	fflush(bn->table);
	if (bn->json)
		ret = write_json(bn);
	if (!ret && o->plot_dir)
		ret = bench_plot(o->plot_dir, bn->res, bn->nr);
out_close:
	if (bn->json && bn->json != stdout) {
		fclose(bn->json);
		/* No half-written report is left behind. */
		if (ret)
			unlink(o->json);
	}
out_free:
	free(bn);
	return ret;
}
