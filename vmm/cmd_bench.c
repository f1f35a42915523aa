// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "../bench/bench.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"

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
		"1 GiB pages, the engine (pool:prezero, pool:demand, pool:populate) with\n"
		"1..N workers, and the machine's write ceiling (limit:write: one thread\n"
		"per core, the fastest backend, its own warm extent). Prints median GB/s,\n"
		"min-max, the ratio to kernel:demand of 2 MiB pages and to limit:write\n"
		"with as many threads, and the engine's targets with their verdicts.\n"
		"As root it reserves the hugepages it needs and puts the old counts\n"
		"back, also on error and on SIGINT.\n"
		"\n"
		"  --size SIZE       region size, a multiple of 2M (default 4G)\n"
		"  --reps N          timed repetitions per point (default 5)\n"
		"  --backends LIST   comma-separated backends (default: all that run here)\n"
		"  --json FILE|-     write the JSON report; with '-' the table goes to stderr\n"
		"  --plot DIR        write DIR/bench-gbps.svg (needs gnuplot)\n"
		"  --quiet           no progress line\n");
}

int cmd_bench(int argc, char **argv)
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
			if (cli_parse_size("--size", optarg, &o.size))
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
	return cli_exit_status(bench_run(&o));
}
