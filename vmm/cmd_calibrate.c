// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/file.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"

static const struct cli_verb calibrate_verb = {
	.name = "calibrate",
	.accepts = CLI_OUT | CLI_QUIET,
	.what = "Measures the backends that run here on warm memory out of the\n"
		"last-level cache (the cache filled with dirty lines, then a fresh\n"
		"16 MiB window a backend; 256 MiB assumed, and said, when sysfs lists\n"
		"no cache) at chunk sizes 256K, 1M, 2M, 4M and 8M and writes a profile\n"
		"that `backend = auto` reads; - in the table: not timed. Default FILE:\n"
		"calibration.ini in $ZVMM_CACHE_DIR, else /var/cache/zvmm for root,\n"
		"else $XDG_CACHE_HOME/zvmm or ~/.cache/zvmm; '-' prints it.",
};

/*
 * A directory this user may not write is said before the measuring (a
 * user's --out under root's /var/cache/zvmm), not after a second of it.
 */
static bool out_dir_refused(const char *out)
{
	char dir[PATH_MAX];
	const char *name;

	if (file_split_path(out, dir, sizeof(dir), &name))
		return false; /* the write says what is wrong */
	if (!faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS))
		return false;
	pr_err("cannot write %s: %s: %s", out, strerror(errno),
	       geteuid() ?
		       "its directory is not this user's: run as root to write there, or choose a directory of this user's (default: $XDG_CACHE_HOME/zvmm or ~/.cache/zvmm)" :
		       "choose another --out");
	return true;
}

/*
 * GB/s of each backend that runs here at each chunk size, and the best.
 * The columns are as wide as the widest best, one space apart, so that
 * no name runs into its neighbour; a backend out of the running after
 * the first chunk size was not timed, and says so rather than 0.0.
 */
static void print_table(const struct zvmm_calibration *c,
			const struct zvmm_backend_info *info, unsigned int nb)
{
	unsigned int nc = zvmm_calibration_chunks(c), k;
	int name_w = (int)strlen("best"), w = (int)strlen("100.0");
	bool untimed = false;
	char label[16];

	for (unsigned int i = 0; i < nb; i++)
		if (info[i].runs_here && (int)strlen(info[i].name) > name_w)
			name_w = (int)strlen(info[i].name);
	for (k = 0; k < nc; k++) {
		const char *best = zvmm_calibration_best(c, k);

		if (best && (int)strlen(best) > w)
			w = (int)strlen(best);
	}
	printf("%-*s", name_w, "GB/s");
	for (k = 0; k < nc; k++)
		printf(" %*s", w,
		       size_label(zvmm_calibration_chunk(c, k), label,
				  sizeof(label)));
	printf("\n");
	for (unsigned int i = 0; i < nb; i++) {
		if (!info[i].runs_here)
			continue;
		printf("%-*s", name_w, info[i].name);
		for (k = 0; k < nc; k++) {
			double g = zvmm_calibration_gbps(c, k, info[i].name);

			if (g > 0)
				printf(" %*.1f", w, g);
			else
				printf(" %*s", w, "-");
			untimed |= !(g > 0);
		}
		printf("\n");
	}
	printf("%-*s", name_w, "best");
	for (k = 0; k < nc; k++)
		printf(" %*s", w,
		       zvmm_calibration_best(c, k) ?
			       zvmm_calibration_best(c, k) :
			       "none");
	printf("\n");
	if (untimed)
		printf("-: not timed (out of the running after the first chunk size)\n");
}

int cmd_calibrate(int argc, char **argv)
{
	struct zvmm_backend_info info[32];
	struct zvmm_calibration *c;
	struct cli_args a = { 0 };
	char written[PATH_MAX], *text;
	unsigned int nb;
	int ret;

	ret = cli_parse(&calibrate_verb, argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	/* A path that cannot be written is found before the measuring. */
	if (a.out && strcmp(a.out, "-") &&
	    (ret = file_mkdir_parents(a.out, 0755))) {
		pr_err("cannot create the directory for %s: %s", a.out,
		       strerror(-ret));
		return EXIT_USAGE;
	}
	if (a.out && strcmp(a.out, "-") && out_dir_refused(a.out))
		return EXIT_USAGE;
	ret = zvmm_calibrate(&c);
	if (ret)
		return cli_exit_status(ret);
	nb = zvmm_backends(info, sizeof(info) / sizeof(info[0]));
	nb = nb < 32 ? nb : 32;
	if (!a.quiet && !(a.out && !strcmp(a.out, "-")))
		print_table(c, info, nb);
	if (a.out && !strcmp(a.out, "-")) {
		text = malloc(1 << 16);
		ret = text ? zvmm_calibration_format(c, text, 1 << 16) :
			     -ENOMEM;
		if (ret >= 0)
			fputs(text, stdout);
		free(text);
		zvmm_calibration_free(c);
		return ret < 0 ? EXIT_OTHER : 0;
	}
	ret = zvmm_calibration_write(c, a.out, written, sizeof(written));
	zvmm_calibration_free(c);
	/* Nowhere to keep it is the user's to fix (--out): usage. */
	if (ret)
		return EXIT_USAGE;
	pr_info("profile written to %s", written);
	return 0;
}
