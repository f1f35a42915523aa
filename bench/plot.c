// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/log.h"
#include "plot.h"

extern char **environ;

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX], *dirs, *d, *save;
	bool found = false;

	dirs = strdup(path ? path : "/usr/bin:/bin");
	if (!dirs)
		return false;
	for (d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/%s", d, prog);
		found = access(buf, X_OK) == 0;
	}
	free(dirs);
	return found;
}

int bench_plot_check(const char *dir)
{
	struct stat st;

	if (strpbrk(dir, "'\"\n")) {
		pr_err("--plot directory '%s' contains a quote or newline; choose a plain path",
		       dir);
		return -EINVAL;
	}
	if (!in_path("gnuplot")) {
		pr_err("--plot needs gnuplot, which is not installed: apt-get install gnuplot-nox (or run `make deps`)");
		return -ENOENT;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		pr_err("cannot create --plot directory %s: %s", dir,
		       strerror(errno));
		return -EINVAL;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("--plot %s is not a directory", dir);
		return -EINVAL;
	}
	return 0;
}

/* Distinct methods in first-seen order; rows of one method are adjacent
 * in the dat file as one gnuplot data block. */
static unsigned int methods(const struct bench_result *res, unsigned int nr,
			    const char **out)
{
	unsigned int n = 0, i, j;

	for (i = 0; i < nr; i++) {
		for (j = 0; j < n && strcmp(out[j], res[i].method); j++)
			;
		if (j == n)
			out[n++] = res[i].method;
	}
	return n;
}

int bench_plot(const char *dir, const struct bench_result *res, unsigned int nr)
{
	const char *m[BENCH_MAX_RESULTS];
	char dat[PATH_MAX], gp[PATH_MAX], svg[PATH_MAX];
	char *argv[] = { "gnuplot", gp, NULL };
	unsigned int n, i, j;
	FILE *f;
	pid_t pid;
	int st, ret;

	snprintf(dat, sizeof(dat), "%s/bench-gbps.dat", dir);
	snprintf(gp, sizeof(gp), "%s/bench-gbps.gp", dir);
	snprintf(svg, sizeof(svg), "%s/bench-gbps.svg", dir);
	n = methods(res, nr, m);

	f = fopen(dat, "we");
	if (!f)
		goto err_errno;
	for (i = 0; i < n; i++) {
		fprintf(f, "# %s: extent_bytes gbps_median gbps_min gbps_max\n",
			m[i]);
		for (j = 0; j < nr; j++)
			if (!strcmp(res[j].method, m[i]))
				fprintf(f, "%llu %.3f %.3f %.3f\n",
					(unsigned long long)res[j].extent_bytes,
					res[j].gbps, res[j].gbps_min,
					res[j].gbps_max);
		fprintf(f, "\n\n");
	}
	if (fclose(f))
		goto err_errno;

	f = fopen(gp, "we");
	if (!f)
		goto err_errno;
	fprintf(f,
		"set terminal svg size 1000,600 dynamic noenhanced background rgb 'white'\n"
		"set output '%s'\n"
		"set title 'zvmm bench: clearing rate against extent size (warm memory, median and min-max)'\n"
		"set logscale x 2\nset grid\nset key outside right\n"
		"set xlabel 'extent (kernel rows: page size)'\nset ylabel 'GB/s'\n"
		"set xtics ('4K' 4096, '64K' 65536, '2M' 2097152, '8M' 8388608, '32M' 33554432, '1G' 1073741824)\n"
		"set xrange [2048:2147483648]\nset yrange [0:*]\nplot \\\n",
		svg);
	for (i = 0; i < n; i++)
		fprintf(f,
			"  '%s' index %u using 1:2:3:4 with yerrorlines title '%s'%s\n",
			dat, i, m[i], i + 1 < n ? ", \\" : "");
	if (fclose(f))
		goto err_errno;

	ret = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	if (ret) {
		pr_err("cannot run gnuplot: %s", strerror(ret));
		return -ret;
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		pr_err("gnuplot failed on %s", gp);
		return -EIO;
	}
	pr_info("plot written to %s", svg);
	return 0;
err_errno:
	ret = -errno;
	pr_err("cannot write plot files in %s: %s", dir, strerror(errno));
	return ret;
}
