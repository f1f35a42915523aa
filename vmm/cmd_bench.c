// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../bench/bench.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"

static const struct cli_text bench_texts[] = {
	{ CLI_JSON,
	  "write the JSON report; with '-' the table goes to stderr" },
	{ 0 }
};

static const struct cli_verb bench_verb = {
	.name = "bench",
	.accepts = CLI_SIZE | CLI_REPS | CLI_BACKENDS | CLI_JSON | CLI_PLOT |
		   CLI_QUIET,
	.what = "Clears a warm region (1 GiB hugepages when they can be reserved, else\n"
		"2 MiB, else THP) with every backend that runs here at extents of\n"
		"4K, 64K, 2M, 8M, 32M and 1G, and measures in the same run the kernel's\n"
		"hugetlb zeroing at fault (kernel:demand, kernel:populate) for 2 MiB and\n"
		"1 GiB pages, the engine (pool:prezero, pool:demand, pool:populate) with\n"
		"1..N workers, and the machine's write ceiling (limit:write: one thread\n"
		"per core, each its own warm extent, with the fastest of the leading\n"
		"backends at that thread count). Prints median GB/s,\n"
		"min-max, the ratio to kernel:demand of 2 MiB pages and to limit:write\n"
		"with as many threads, and the engine's targets with their verdicts.\n"
		"As root it reserves the hugepages it needs and puts the old counts\n"
		"back, also on error and on SIGINT.",
	.texts = bench_texts,
};

int cmd_bench(int argc, char **argv)
{
	struct cli_args a = { .size = 4 * SZ_1G, .reps = 5 };
	struct bench_opts o;
	int ret = cli_parse(&bench_verb, argc, argv, &a);

	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	o = (struct bench_opts){ .size = a.size,
				 .reps = a.reps,
				 .backends = a.backends,
				 .json = a.json,
				 .plot_dir = a.plot,
				 .quiet = a.quiet };
	return cli_exit_status(bench_run(&o));
}
