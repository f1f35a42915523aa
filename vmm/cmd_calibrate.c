// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/file.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/calibrate.h"
#include "cli.h"

static void calibrate_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm calibrate [--out FILE|-] [--quiet]\n"
		"\n"
		"Measures every backend that runs here on warm memory at chunk sizes\n"
		"256K, 1M, 2M, 4M and 8M and writes a profile that `backend = auto`\n"
		"reads. Default FILE: calibration.ini in $ZVMM_CACHE_DIR, else\n"
		"/var/cache/zvmm for root, else $XDG_CACHE_HOME/zvmm or ~/.cache/zvmm;\n"
		"'-' prints it.\n");
}

int cmd_calibrate(int argc, char **argv)
{
	struct cli_args a = { 0 };
	const struct zero_backend *b;
	struct zero_profile *p;
	char path[PATH_MAX], label[16];
	const char *out;
	unsigned int i, k;
	int ret;

	ret = cli_parse("calibrate", argc, argv, CLI_OUT | CLI_QUIET,
			calibrate_usage, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	out = a.out;
	if (!out) {
		if (zero_profile_default_path(path, sizeof(path))) {
			pr_err("no $XDG_CACHE_HOME or $HOME to keep the profile in: give --out FILE");
			return EXIT_USAGE;
		}
		out = path;
	}
	if (strcmp(out, "-") && (ret = file_mkdir_parents(out, 0755))) {
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
	if (!a.quiet && strcmp(out, "-")) {
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
