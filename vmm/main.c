// SPDX-License-Identifier: MIT
/* zvmm: one binary with verbs, in the manner of kvmtool's `lkvm run`. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/clock.h"
#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm <verb> [options]\n"
		"\n"
		"Zeroes hugepage-backed guest memory fast, safely and with bounded latency.\n"
		"\n"
		"verbs:\n"
		"  run         boot a guest on zeroed hugepage memory and report the launch\n"
		"  bench       measure every clearing backend against the kernel's hugetlb zeroing\n"
		"  calibrate   find the fastest backend at the engine's chunk sizes; write a profile\n"
		"  backends    list the clearing backends and whether this CPU can run them\n"
		"  exec        run another VMM (QEMU) on hugepage memory zvmm prepared\n"
		"  prezero     make hugepage memory (or a warm pool file) zero with the workers\n"
		"  policy      check a zeroing policy file and print it with --set applied\n"
		"  pool        what zvmmd, the zeroing service, holds: zvmm pool status\n"
		"\n"
		"  zvmm <verb> --help   options of one verb\n"
		"  zvmm --version       print the version\n");
}

static const struct cli_verb backends_verb = {
	.name = "backends",
	.what = "Lists the clearing backends, the CPU features each needs and whether\n"
		"this CPU has them.",
};

static int cmd_backends(int argc, char **argv)
{
	struct zvmm_backend_info info[32];
	struct cli_args a = { 0 };
	unsigned int n;
	char feat[128];
	int ret = cli_parse(&backends_verb, argc, argv, &a);

	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	zvmm_cpu_features(feat, sizeof(feat));
	printf("arch %s, CPU features: %s\n\n", zvmm_arch(), feat);
	printf("%-16s %-10s %-10s %s\n", "backend", "runs here", "needs",
	       "what");
	n = zvmm_backends(info, sizeof(info) / sizeof(info[0]));
	for (unsigned int i = 0; i < n && i < 32; i++)
		printf("%-16s %-10s %-10s %s\n", info[i].name,
		       info[i].runs_here ? "yes" : "no", info[i].needs,
		       info[i].what);
	return 0;
}

double zvmm_start_time;

int main(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : NULL;

	zvmm_start_time = clock_now();
	cli_log_to_stderr();
	zvmm_inject_from_env();
	/* ZVMM_STATE_DIR and ZVMM_CACHE_DIR are the program's, not libzvmm's. */
	program_env_enable();

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
		printf("zvmm %s\n", zvmm_version());
		return 0;
	}
	/* Each verb parses its own options from its own argv[0]. */
	if (!strcmp(verb, "bench"))
		return cmd_bench(argc - 1, argv + 1);
	if (!strcmp(verb, "calibrate"))
		return cmd_calibrate(argc - 1, argv + 1);
	if (!strcmp(verb, "backends"))
		return cmd_backends(argc - 1, argv + 1);
	if (!strcmp(verb, "exec"))
		return cmd_exec(argc - 1, argv + 1);
	if (!strcmp(verb, "prezero"))
		return cmd_prezero(argc - 1, argv + 1);
	if (!strcmp(verb, "policy"))
		return cmd_policy(argc - 1, argv + 1);
	if (!strcmp(verb, "pool"))
		return cmd_pool(argc - 1, argv + 1);
	if (!strcmp(verb, "run"))
		return cmd_run(argc - 1, argv + 1);
	pr_err("unknown verb '%s'; see zvmm --help", verb);
	return EXIT_USAGE;
}
