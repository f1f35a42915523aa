// SPDX-License-Identifier: MIT
/*
 * zvmm: one binary with verbs, in the manner of kvmtool's `lkvm run`.
 * Only this file decides exit statuses (DESIGN.md 8): 0 success, 1 other
 * failures, 2 usage or configuration errors, 3 missing resources, 130 an
 * interrupted run.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../bench/bench.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "../zeroing/calibrate.h"

#ifndef ZVMM_VERSION
#define ZVMM_VERSION "0.1.0"
#endif

enum {
	EXIT_OTHER = 1,
	EXIT_USAGE = 2,
	EXIT_RESOURCE = 3,
	EXIT_INTERRUPTED = 130,
};

static int exit_status(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -EINVAL:
		return EXIT_USAGE;
	case -EINTR:
		return EXIT_INTERRUPTED;
	case -EIO:
		return EXIT_OTHER;
	default:
		return EXIT_RESOURCE;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm <verb> [options]\n"
		"\n"
		"Zeroes hugepage-backed guest memory fast, safely and with bounded latency.\n"
		"\n"
		"verbs:\n"
		"  bench       measure every clearing backend against the kernel's hugetlb zeroing\n"
		"  calibrate   find the fastest backend at the engine's chunk sizes; write a profile\n"
		"  backends    list the clearing backends and whether this CPU can run them\n"
		"\n"
		"  zvmm <verb> --help   options of one verb\n"
		"  zvmm --version       print the version\n");
}

static int parse_size_arg(const char *opt, const char *arg, uint64_t *out)
{
	char why[160];
	int ret = size_parse(arg, out);

	if (ret) {
		pr_err("%s: %s", opt,
		       size_parse_error(arg, ret, why, sizeof(why)));
		return -EINVAL;
	}
	return 0;
}

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm bench [--size SIZE] [--reps N] [--backends LIST]\n"
		"                  [--json FILE|-] [--plot DIR] [--quiet]\n"
		"\n"
		"Clears a warm region (1 GiB hugepages when they can be reserved, else\n"
		"2 MiB, else THP) with every backend that runs here at extents of\n"
		"4K, 64K, 2M, 8M, 32M and 1G, and measures in the same run the kernel's\n"
		"hugetlb zeroing at fault (kernel:demand, kernel:populate) for 2 MiB and\n"
		"1 GiB pages. Prints median GB/s, min-max and the ratio to kernel:demand\n"
		"of 2 MiB pages. As root it reserves the hugepages it needs and puts the\n"
		"old counts back, also on error and on SIGINT.\n"
		"\n"
		"  --size SIZE       region size, a multiple of 2M (default 4G)\n"
		"  --reps N          timed repetitions per point (default 5)\n"
		"  --backends LIST   comma-separated backends (default: all that run here)\n"
		"  --json FILE|-     write the JSON report; with '-' the table goes to stderr\n"
		"  --plot DIR        write DIR/bench-gbps.svg (needs gnuplot)\n"
		"  --quiet           no progress line\n");
}

static int cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "backends", required_argument, NULL, 'b' },
		{ "json", required_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct bench_opts o = { .size = 4 * SZ_1G, .reps = 5 };
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size_arg("--size", optarg, &o.size))
				return EXIT_USAGE;
			break;
		case 'r':
			errno = 0;
			o.reps = (unsigned int)strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-') {
				pr_err("--reps: invalid count '%s': give a whole number from 1 to 64",
				       optarg);
				return EXIT_USAGE;
			}
			break;
		case 'b':
			o.backends = optarg;
			break;
		case 'j':
			o.json = optarg;
			break;
		case 'p':
			o.plot_dir = optarg;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			bench_usage(stdout);
			return 0;
		default:
			bench_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		pr_err("bench: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	return exit_status(bench_run(&o));
}

static void calibrate_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm calibrate [--out FILE|-] [--quiet]\n"
		"\n"
		"Measures every backend that runs here on warm memory at chunk sizes\n"
		"256K, 1M, 2M, 4M and 8M and writes a profile that `backend = auto`\n"
		"reads. Default FILE: $XDG_CACHE_HOME/zvmm/calibration.ini\n"
		"(~/.cache/zvmm/calibration.ini); '-' prints it.\n");
}

static int mkdir_parent(const char *path)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int cmd_calibrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const struct zero_backend *b;
	struct zero_profile *p;
	char path[PATH_MAX], label[16];
	const char *out = NULL;
	bool quiet = false;
	unsigned int i, k;
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			calibrate_usage(stdout);
			return 0;
		default:
			calibrate_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		pr_err("calibrate: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!out) {
		if (zero_profile_default_path(path, sizeof(path))) {
			pr_err("no $XDG_CACHE_HOME or $HOME to keep the profile in: give --out FILE");
			return EXIT_USAGE;
		}
		out = path;
	}
	if (strcmp(out, "-") && (ret = mkdir_parent(out))) {
		pr_err("cannot create the directory for %s: %s", out,
		       strerror(-ret));
		return EXIT_USAGE;
	}
	p = malloc(sizeof(*p));
	if (!p)
		return EXIT_OTHER;
	/* 256 MiB: eight times the L3, so every chunk size streams. */
	ret = zero_calibrate(zero_calibrate_chunks, zero_calibrate_nr_chunks,
			     256 * SZ_1M, 5, p);
	if (ret) {
		pr_err("calibration needs 256 MiB of memory: %s",
		       strerror(-ret));
		free(p);
		return EXIT_RESOURCE;
	}
	if (!quiet && strcmp(out, "-")) {
		printf("%-16s", "GB/s");
		for (k = 0; k < p->nr; k++)
			printf("%8s",
			       size_label(p->e[k].chunk, label, sizeof(label)));
		printf("\n");
		for_each_backend(i, b) {
			if (!zero_backend_runs_here(b))
				continue;
			printf("%-16s", b->name);
			for (k = 0; k < p->nr; k++)
				printf("%8.1f", p->e[k].gbps[i]);
			printf("\n");
		}
		printf("%-16s", "best");
		for (k = 0; k < p->nr; k++)
			printf("%8s",
			       zero_backend_at((unsigned)p->e[k].best)->name);
		printf("\n");
	}
	ret = zero_profile_write(p, out);
	free(p);
	if (ret) {
		pr_err("cannot write %s: %s", out, strerror(-ret));
		return EXIT_USAGE;
	}
	if (strcmp(out, "-"))
		pr_info("profile written to %s", out);
	return 0;
}

static int cmd_backends(int argc, char **argv)
{
	const struct zero_backend *b;
	char feat[128];
	unsigned int i;

	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		printf("usage: zvmm backends\n\nLists the clearing backends, the CPU features each needs and whether\nthis CPU has them.\n");
		return 0;
	}
	if (argc > 1) {
		pr_err("backends: unexpected argument '%s'", argv[1]);
		return EXIT_USAGE;
	}
	zero_features_format(zero_cpu_features(), feat, sizeof(feat));
	printf("arch %s, CPU features: %s\n\n", arch_name, feat);
	printf("%-16s %-10s %-10s %s\n", "backend", "runs here", "needs",
	       "what");
	for_each_backend(i, b) {
		zero_features_format(b->needs, feat, sizeof(feat));
		printf("%-16s %-10s %-10s %s\n", b->name,
		       zero_backend_runs_here(b) ? "yes" : "no", feat, b->what);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : NULL;

	if (!verb) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "--help") || !strcmp(verb, "-h") ||
	    !strcmp(verb, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(verb, "--version")) {
		printf("zvmm %s\n", ZVMM_VERSION);
		return 0;
	}
	/* Each verb parses its own options from its own argv[0]. */
	if (!strcmp(verb, "bench"))
		return cmd_bench(argc - 1, argv + 1);
	if (!strcmp(verb, "calibrate"))
		return cmd_calibrate(argc - 1, argv + 1);
	if (!strcmp(verb, "backends"))
		return cmd_backends(argc - 1, argv + 1);
	if (!strcmp(verb, "run")) {
		pr_err("`zvmm run` is not part of this build yet; `zvmm bench` measures the zeroing backends");
		return EXIT_USAGE;
	}
	pr_err("unknown verb '%s'; see zvmm --help", verb);
	return EXIT_USAGE;
}
