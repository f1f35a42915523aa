// SPDX-License-Identifier: MIT
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "calibrate.h"

/*
 * The engine's chunks are capped at 8 MiB (DESIGN.md 5, after the
 * kernel's bound in seed 000); smaller ones serve tighter latency budgets.
 */
const uint64_t zero_calibrate_chunks[] = {
	256 << 10, SZ_1M, SZ_2M, 4 * SZ_1M, SZ_8M,
};
const unsigned int zero_calibrate_nr_chunks =
	sizeof(zero_calibrate_chunks) / sizeof(zero_calibrate_chunks[0]);

double zero_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double zero_time_pass(const struct zero_backend *b, void *base, uint64_t bytes,
		      uint64_t extent)
{
	char *p = base;
	uint64_t off, n;
	double t0 = zero_now();

	for (off = 0; off < bytes; off += n) {
		n = bytes - off < extent ? bytes - off : extent;
		b->clear(p + off, n);
	}
	return zero_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Anonymous memory asked to be THP-backed, written once so it is warm. */
static int warm_buffer(uint64_t bytes, void **out)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	madvise(p, bytes, MADV_HUGEPAGE);
	memset(p, 0xa5, bytes);
	*out = p;
	return 0;
}

int zero_calibrate(const uint64_t *chunks, unsigned int nr, uint64_t buf_bytes,
		   unsigned int reps, struct zero_profile *p)
{
	void *buf = NULL;
	int ret;

	if (nr > ZERO_PROFILE_MAX_CHUNKS || reps == 0 || reps > 16)
		return -EINVAL;
	ret = warm_buffer(buf_bytes, &buf);
	if (ret)
		return ret;
	ret = zero_calibrate_on(chunks, nr, buf, buf_bytes, reps, p);
	munmap(buf, buf_bytes);
	return ret;
}

int zero_calibrate_on(const uint64_t *chunks, unsigned int nr, void *buf,
		      uint64_t buf_bytes, unsigned int reps,
		      struct zero_profile *p)
{
	const struct zero_backend *b;
	double t[16], best;
	unsigned int i, c, r;

	if (nr > ZERO_PROFILE_MAX_CHUNKS || reps == 0 || reps > 16)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	snprintf(p->arch, sizeof(p->arch), "%s", arch_name);
	arch_cpu_model(p->cpu, sizeof(p->cpu));
	p->features = zero_cpu_features();
	p->nr = nr;
	for (c = 0; c < nr; c++) {
		struct zero_profile_entry *e = &p->e[c];

		e->chunk = chunks[c];
		e->best = -1;
		best = 0;
		for_each_backend(i, b) {
			if (!zero_backend_runs_here(b))
				continue;
			for (r = 0; r < reps; r++)
				t[r] = zero_time_pass(b, buf, buf_bytes,
						      chunks[c]);
			qsort(t, reps, sizeof(t[0]), cmp_double);
			e->gbps[i] = (double)buf_bytes / t[reps / 2] / 1e9;
			if (e->gbps[i] > best) {
				best = e->gbps[i];
				e->best = (int)i;
			}
		}
	}
	return 0;
}

static void profile_print(const struct zero_profile *p, FILE *f)
{
	const struct zero_backend *b;
	char feat[128], label[16];
	unsigned int i, c;

	zero_features_format(p->features, feat, sizeof(feat));
	fprintf(f,
		"; zvmm calibration profile, written by `zvmm calibrate`.\n"
		"; GB/s (1e9 bytes/s) of each backend clearing warm memory in\n"
		"; chunks of the size in the section name; `backend = auto`\n"
		"; takes `best` of the chunk size the engine uses.\n"
		"[profile]\nversion = 1\narch = %s\ncpu = %s\nfeatures = %s\n",
		p->arch, p->cpu, feat);
	for (c = 0; c < p->nr; c++) {
		const struct zero_profile_entry *e = &p->e[c];

		fprintf(f, "\n[chunk %s]\n",
			size_label(e->chunk, label, sizeof(label)));
		if (e->best >= 0)
			fprintf(f, "best = %s\n",
				zero_backend_at((unsigned int)e->best)->name);
		for_each_backend(i, b)
			if (e->gbps[i] > 0)
				fprintf(f, "%s = %.2f\n", b->name, e->gbps[i]);
	}
}

int zero_profile_write(const struct zero_profile *p, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!strcmp(path, "-")) {
		profile_print(p, stdout);
		return fflush(stdout) ? -errno : 0;
	}
	f = file_replace_open(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	profile_print(p, f);
	return file_replace_commit(f, tmp, path);
}

struct profile_parse {
	struct zero_profile *p;
	int cur; /* entry being read, -1 in [profile] */
	int version;
	char features[128];
};

static int find_index(const char *name)
{
	const struct zero_backend *b;
	unsigned int i;

	for_each_backend(i, b)
		if (!strcmp(b->name, name))
			return (int)i;
	return -1;
}

static int profile_key(void *user, const char *section, const char *name,
		       const char *value)
{
	struct profile_parse *pp = user;
	struct zero_profile *p = pp->p;
	struct zero_profile_entry *e;
	uint64_t chunk;
	char *end;
	int idx;

	if (!strcmp(section, "profile")) {
		if (!strcmp(name, "version"))
			pp->version = atoi(value);
		else if (!strcmp(name, "arch"))
			snprintf(p->arch, sizeof(p->arch), "%s", value);
		else if (!strcmp(name, "cpu"))
			snprintf(p->cpu, sizeof(p->cpu), "%s", value);
		else if (!strcmp(name, "features"))
			snprintf(pp->features, sizeof(pp->features), "%s",
				 value);
		else
			return 0;
		return 1;
	}
	if (strncmp(section, "chunk ", 6) || size_parse(section + 6, &chunk))
		return 0;
	if (pp->cur < 0 || p->e[pp->cur].chunk != chunk) {
		if (p->nr == ZERO_PROFILE_MAX_CHUNKS)
			return 0;
		pp->cur = (int)p->nr++;
		p->e[pp->cur].chunk = chunk;
		p->e[pp->cur].best = -1;
	}
	e = &p->e[pp->cur];
	if (!strcmp(name, "best")) {
		e->best = find_index(value);
		return e->best >= 0;
	}
	idx = find_index(name);
	if (idx < 0 || idx >= ZERO_PROFILE_MAX_BACKENDS)
		return 0;
	e->gbps[idx] = strtod(value, &end);
	return *end == '\0' && e->gbps[idx] > 0;
}

int zero_profile_read(const char *path, struct zero_profile *p, int *line)
{
	struct profile_parse pp = { .p = p, .cur = -1 };
	char feat[128];
	int ret;

	memset(p, 0, sizeof(*p));
	*line = 0;
	ret = ini_parse(path, profile_key, &pp);
	if (ret == -1)
		return -ENOENT;
	if (ret) {
		*line = ret > 0 ? ret : 0;
		return -EINVAL;
	}
	if (pp.version != 1 || !p->nr)
		return -EINVAL;
	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].best < 0)
			return -EINVAL;
	zero_features_format(zero_cpu_features(), feat, sizeof(feat));
	if (strcmp(p->arch, arch_name) || strcmp(pp.features, feat))
		return -ESTALE;
	p->features = zero_cpu_features();
	return 0;
}

int zero_profile_default_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (xdg && *xdg)
		n = snprintf(buf, len, "%s/zvmm/calibration.ini", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/zvmm/calibration.ini", home);
	else
		return -ENOENT;
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

/* The entry for the largest calibrated chunk not above @chunk. */
static const struct zero_profile_entry *
profile_entry(const struct zero_profile *p, uint64_t chunk)
{
	const struct zero_profile_entry *pick = &p->e[0];

	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].chunk <= chunk &&
		    (pick->chunk > chunk || p->e[c].chunk > pick->chunk))
			pick = &p->e[c];
	return pick;
}

int zero_backend_auto(uint64_t chunk, const char *profile_path, void *scratch,
		      uint64_t scratch_bytes, const struct zero_backend **out,
		      double *gbps)
{
	struct zero_profile p;
	const struct zero_profile_entry *e;
	int ret, line;

	ret = profile_path ? zero_profile_read(profile_path, &p, &line) :
			     -ENOENT;
	if (ret == -EINVAL)
		pr_warn("%s:%d: malformed calibration profile; measuring instead (rewrite it with `zvmm calibrate`)",
			profile_path, line);
	else if (ret == -ESTALE)
		pr_warn("%s: calibration profile is for another CPU; measuring instead (rewrite it with `zvmm calibrate`)",
			profile_path);
	if (ret) {
		/* 64 MiB: twice this machine's L3, small enough for ~50 ms. */
		if (scratch && scratch_bytes >= ZERO_AUTO_BYTES)
			ret = zero_calibrate_on(&chunk, 1, scratch,
						ZERO_AUTO_BYTES, 3, &p);
		else
			ret = zero_calibrate(&chunk, 1, ZERO_AUTO_BYTES, 3, &p);
		if (ret)
			return ret;
	}
	e = profile_entry(&p, chunk);
	if (e->best < 0)
		return -ENODEV;
	*out = zero_backend_at((unsigned int)e->best);
	*gbps = e->gbps[e->best];
	return 0;
}
