// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/calibrate.h"
#include "helpers.h"

static char path[64];

static void make_path(void)
{
	snprintf(path, sizeof(path), "/tmp/zvmm-test-profile.%d.ini",
		 (int)getpid());
}

/* The stale-profile warning is expected there; keep the log quiet. */
static void make_path_quiet(void)
{
	make_path();
	log_level = LOG_ERR;
}

static void drop_path(void)
{
	unlink(path);
}

Test(calibrate, picks_the_fastest_runnable_backend)
{
	static const uint64_t chunks[] = { 256 << 10, SZ_2M };
	struct zero_profile p;

	cr_assert_eq(zero_calibrate(chunks, 2, 16 * SZ_1M, 1, &p), 0);
	cr_assert_eq(p.nr, 2);
	for (unsigned int c = 0; c < p.nr; c++) {
		const struct zero_profile_entry *e = &p.e[c];

		cr_assert_geq(e->best, 0);
		cr_assert(zero_backend_runs_here(
			zero_backend_at((unsigned int)e->best)));
		for (unsigned int i = 0; i < zero_backend_count(); i++) {
			cr_assert_leq(e->gbps[i], e->gbps[e->best]);
			cr_assert_eq(
				e->gbps[i] > 0,
				zero_backend_runs_here(zero_backend_at(i)));
		}
	}
}

Test(calibrate, profile_round_trip, .init = make_path, .fini = drop_path)
{
	static const uint64_t chunks[] = { SZ_1M, SZ_8M };
	struct zero_profile p, q;
	const struct zero_backend *b;
	enum zero_backend_source from;
	double gbps;
	int line;

	cr_assert_eq(zero_calibrate(chunks, 2, 16 * SZ_1M, 1, &p), 0);
	cr_assert_eq(zero_profile_write(&p, path), 0);
	cr_assert_eq(zero_profile_read(path, &q, &line), 0);
	cr_assert_eq(q.nr, 2);
	for (unsigned int c = 0; c < 2; c++) {
		cr_assert_eq(q.e[c].chunk, p.e[c].chunk);
		cr_assert_eq(q.e[c].best, p.e[c].best);
	}
	/* 4M falls back to the largest calibrated chunk below it: 1M. */
	cr_assert_eq(zero_backend_auto(4 * SZ_1M, path, false, NULL, 0, &b,
				       &gbps, &from),
		     0);
	cr_assert_str_eq(b->name, zero_backend_at((unsigned)p.e[0].best)->name);
	cr_assert_float_eq(gbps, q.e[0].gbps[q.e[0].best], 0.01);
}

static void write_file(const char *text)
{
	test_write_text(path, text);
}

Test(calibrate, malformed_profile_names_the_line, .init = make_path,
     .fini = drop_path)
{
	struct zero_profile p;
	int line;

	write_file(
		"[profile]\nversion = 1\narch = x\n\n[chunk 2M]\nbest = memset\nwarp = 3\n");
	cr_assert_eq(zero_profile_read(path, &p, &line), -EINVAL);
	cr_assert_eq(line, 7);
	write_file("[profile]\nversion = 1\n[chunk 12Q]\nbest = memset\n");
	cr_assert_eq(zero_profile_read(path, &p, &line), -EINVAL);
	cr_assert_eq(line, 4);
}

Test(calibrate, unreadable_profile, .init = make_path, .fini = drop_path)
{
	struct zero_profile p;
	char text[1024];
	int line = -1;

	cr_assert_eq(zero_profile_read("/nonexistent/calibration.ini", &p,
				       &line),
		     -ENOENT);
	cr_assert_eq(line, 0);
	/* A directory opens but does not read: wrong as a whole. */
	cr_assert_eq(zero_profile_read("/tmp", &p, &line), -EINVAL);
	cr_assert_eq(line, 0);
	/* A line libinih would split is an error, not two lines. */
	snprintf(text, sizeof(text), "[profile]\nversion = 2\n; %0900d\n", 0);
	write_file(text);
	cr_assert_eq(zero_profile_read(path, &p, &line), -EINVAL);
	cr_assert_eq(line, 3);
}

Test(calibrate, profile_of_other_cpu_is_stale, .init = make_path_quiet,
     .fini = drop_path)
{
	struct zero_profile p;
	const struct zero_backend *b;
	enum zero_backend_source from;
	double gbps;
	int line;

	write_file(
		"[profile]\nversion = 1\narch = pdp11\ncpu = x\nfeatures = none\n[chunk 2M]\nbest = memset\nmemset = 1.0\n");
	cr_assert_eq(zero_profile_read(path, &p, &line), -ESTALE);
	/* auto measures instead of trusting it. */
	cr_assert_eq(zero_backend_auto(SZ_2M, path, false, NULL, 0, &b, &gbps,
				       &from),
		     0);
	cr_assert(zero_backend_runs_here(b));
	cr_assert_gt(gbps, 0);
}

Test(calibrate, auto_without_profile_measures)
{
	const struct zero_backend *b;
	enum zero_backend_source from;
	double gbps;

	cr_assert_eq(zero_backend_auto(SZ_2M, "/nonexistent/zvmm.ini", false,
				       NULL, 0, &b, &gbps, &from),
		     0);
	cr_assert_eq(from, ZERO_FROM_MEASURE);
	cr_assert(zero_backend_runs_here(b));
	cr_assert_gt(gbps, 0);
}

/* Reads @path, replaces the value of @key with @value, writes it back. */
static void edit_key(const char *key, const char *value)
{
	char buf[8192], out[8192], *line, *save;
	size_t n, o = 0;
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		o += (size_t)snprintf(
			out + o, sizeof(out) - o, "%s%s%s\n",
			strncmp(line, key, strlen(key)) ? line : key,
			strncmp(line, key, strlen(key)) ? "" : " = ",
			strncmp(line, key, strlen(key)) ? "" : value);
	write_file(out);
}

/*
 * backend=auto pays its measurement once per machine: the first call
 * measures and keeps the answer, the second reads it; a profile whose
 * CPU, microcode, kernel or backends are another machine's is measured
 * again and replaced, never trusted.
 */
Test(calibrate, auto_keeps_its_measurement_for_this_machine_only,
     .init = make_path_quiet, .fini = drop_path)
{
	static const char *const keys[] = { "cpu_id", "microcode", "kernel",
					    "backends" };
	enum zero_backend_source from;
	const struct zero_backend *b, *b2;
	struct zero_profile p;
	double gbps, gbps2;
	int line;

	unlink(path);
	cr_assert_eq(zero_backend_auto(SZ_2M, path, true, NULL, 0, &b, &gbps,
				       &from),
		     0);
	cr_assert_eq(from, ZERO_FROM_MEASURE);
	cr_assert_eq(zero_profile_read(path, &p, &line), 0,
		     "the measurement was not kept");
	cr_assert_eq(zero_backend_auto(SZ_2M, path, true, NULL, 0, &b2, &gbps2,
				       &from),
		     0);
	cr_assert_eq(from, ZERO_FROM_PROFILE);
	cr_assert_eq(b2, b);
	cr_assert_float_eq(gbps2, gbps, 0.01); /* kept as %.2f */
	/* Another chunk size is measured once and added. */
	cr_assert_eq(zero_backend_auto(SZ_1M, path, true, NULL, 0, &b2, &gbps2,
				       &from),
		     0);
	cr_assert_eq(from, ZERO_FROM_MEASURE);
	cr_assert_eq(zero_profile_read(path, &p, &line), 0);
	cr_assert_eq(p.nr, 2);
	for (unsigned int k = 0; k < 4; k++) {
		edit_key(keys[k], "another-machine");
		cr_assert_eq(zero_profile_read(path, &p, &line), -ESTALE,
			     "a profile with another %s was trusted", keys[k]);
		cr_assert_eq(zero_backend_auto(SZ_2M, path, true, NULL, 0, &b2,
					       &gbps2, &from),
			     0);
		cr_assert_eq(from, ZERO_FROM_MEASURE, "%s", keys[k]);
		/* Replaced with this machine's. */
		cr_assert_eq(zero_profile_read(path, &p, &line), 0);
	}
}
