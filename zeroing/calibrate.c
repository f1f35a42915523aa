// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/inibuf.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/stats.h"
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

double zero_time_pass(const struct zero_backend *b, void *base, uint64_t bytes,
		      uint64_t extent)
{
	char *p = base;
	uint64_t off, n;
	double t0 = clock_now();

	for (off = 0; off < bytes; off += n) {
		n = bytes - off < extent ? bytes - off : extent;
		b->clear(p + off, n);
	}
	return clock_now() - t0;
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
	zero_machine_get(&p->id);
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
			stats_sort(t, reps);
			e->gbps[i] = (double)buf_bytes /
				     stats_median_sorted(t, reps) / 1e9;
			if (e->gbps[i] > best) {
				best = e->gbps[i];
				e->best = (int)i;
			}
		}
	}
	return 0;
}

/* The first "microcode : V" of /proc/cpuinfo (x86), or "none". */
static void microcode(char *buf, size_t len)
{
	char line[256], v[32];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, len, "none");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "microcode : %31s", v) == 1) {
			snprintf(buf, len, "%s", v);
			break;
		}
	fclose(f);
}

void zero_machine_get(struct zero_machine *m)
{
	struct utsname u;

	memset(m, 0, sizeof(*m));
	snprintf(m->arch, sizeof(m->arch), "%s", arch_name);
	arch_cpu_model(m->cpu, sizeof(m->cpu));
	arch_cpu_id(m->cpu_id, sizeof(m->cpu_id));
	microcode(m->microcode, sizeof(m->microcode));
	snprintf(m->kernel, sizeof(m->kernel), "%s",
		 uname(&u) ? "unknown" : u.release);
	m->features = zero_cpu_features();
	zero_backend_list(m->features, " ", m->backends, sizeof(m->backends));
}

const char *zero_backend_source_name(enum zero_backend_source s)
{
	static const char *const names[] = { "policy", "profile", "measured",
					     "none" };

	return s <= ZERO_FROM_NONE ? names[s] : "?";
}

void zero_profile_print(const struct zero_profile *p, FILE *f)
{
	const struct zero_backend *b;
	char feat[128], label[16];
	unsigned int i, c;

	zero_features_format(p->id.features, feat, sizeof(feat));
	fprintf(f,
		"; zvmm calibration profile, written by `zvmm calibrate` or by\n"
		"; `backend = auto` after it measured. GB/s (1e9 bytes/s) of\n"
		"; each backend clearing warm memory in chunks of the size in\n"
		"; the section name; `backend = auto` takes `best` of the chunk\n"
		"; size the engine uses, on the machine described here only.\n"
		"[profile]\nversion = 2\narch = %s\ncpu = %s\ncpu_id = %s\n"
		"microcode = %s\nkernel = %s\nbackends = %s\nfeatures = %s\n",
		p->id.arch, p->id.cpu, p->id.cpu_id, p->id.microcode,
		p->id.kernel, p->id.backends, feat);
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

	f = file_replace_open(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	zero_profile_print(p, f);
	return file_replace_commit(f, tmp, path);
}

/* Far more than a profile of ZERO_PROFILE_MAX_CHUNKS sizes holds. */
#define PROFILE_MAX_BYTES (1u << 20)

struct profile_parse {
	struct zero_profile *p;
	int cur; /* entry being read, -1 in [profile] */
	int version;
	char features[128];
};

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
			snprintf(p->id.arch, sizeof(p->id.arch), "%s", value);
		else if (!strcmp(name, "cpu"))
			snprintf(p->id.cpu, sizeof(p->id.cpu), "%s", value);
		else if (!strcmp(name, "cpu_id"))
			snprintf(p->id.cpu_id, sizeof(p->id.cpu_id), "%s",
				 value);
		else if (!strcmp(name, "microcode"))
			snprintf(p->id.microcode, sizeof(p->id.microcode), "%s",
				 value);
		else if (!strcmp(name, "kernel"))
			snprintf(p->id.kernel, sizeof(p->id.kernel), "%s",
				 value);
		else if (!strcmp(name, "backends"))
			snprintf(p->id.backends, sizeof(p->id.backends), "%s",
				 value);
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
		e->best = zero_backend_index(value);
		return e->best >= 0;
	}
	idx = zero_backend_index(name);
	if (idx < 0 || idx >= ZERO_PROFILE_MAX_BACKENDS)
		return 0;
	e->gbps[idx] = strtod(value, &end);
	return *end == '\0' && e->gbps[idx] > 0;
}

int zero_profile_read(const char *path, struct zero_profile *p, int *line)
{
	struct profile_parse pp = { .p = p, .cur = -1 };
	struct zero_machine here;
	char feat[128], *text;
	bool too_long;
	size_t len;
	int fd, ret;

	memset(p, 0, sizeof(*p));
	*line = 0;
	/* One that cannot be opened, for whatever reason, is none. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	ret = file_read_fd(fd, PROFILE_MAX_BYTES, &text, &len);
	close(fd);
	if (ret)
		return -EINVAL;
	ret = inibuf_parse(text, len, profile_key, &pp, &too_long);
	free(text);
	if (ret) {
		*line = ret > 0 ? ret : 0;
		return -EINVAL;
	}
	if (pp.version < 1 || pp.version > 2 || !p->nr)
		return -EINVAL;
	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].best < 0)
			return -EINVAL;
	zero_machine_get(&here);
	zero_features_format(here.features, feat, sizeof(feat));
	/* Version 1 recorded no more than arch and features: not enough. */
	if (pp.version < 2 || strcmp(p->id.arch, here.arch) ||
	    strcmp(pp.features, feat) || strcmp(p->id.cpu_id, here.cpu_id) ||
	    strcmp(p->id.microcode, here.microcode) ||
	    strcmp(p->id.kernel, here.kernel) ||
	    strcmp(p->id.backends, here.backends))
		return -ESTALE;
	p->id.features = here.features;
	return 0;
}

int zero_profile_default_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *dir = getenv("ZVMM_CACHE_DIR");
	int n;

	if (dir && *dir)
		n = snprintf(buf, len, "%s/calibration.ini", dir);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/zvmm/calibration.ini");
	else if (xdg && *xdg)
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

static bool has_chunk(const struct zero_profile *p, uint64_t chunk)
{
	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].chunk == chunk)
			return true;
	return false;
}

/*
 * Adds the one entry of @m to @p (a valid profile of this machine, or
 * nothing) and writes it to @path. Said once per process when it fails.
 */
static void keep_measurement(struct zero_profile *p, bool valid,
			     const struct zero_profile *m, const char *path)
{
	static int warned;
	int ret;

	if (!valid)
		*p = *m;
	else if (p->nr < ZERO_PROFILE_MAX_CHUNKS)
		p->e[p->nr++] = m->e[0];
	else
		return;
	ret = file_mkdir_parents(path, 0755);
	if (!ret)
		ret = zero_profile_write(p, path);
	if (ret && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		pr_warn("cannot keep the backend measurement in %s: %s; the next launch measures again",
			path, strerror(-ret));
}

int zero_backend_auto(uint64_t chunk, const char *profile_path, bool keep,
		      void *scratch, uint64_t scratch_bytes,
		      const struct zero_backend **out, double *gbps,
		      enum zero_backend_source *from)
{
	struct zero_profile p, m;
	const struct zero_profile_entry *e;
	int ret, line;

	ret = profile_path ? zero_profile_read(profile_path, &p, &line) :
			     -ENOENT;
	if (ret == -EINVAL)
		pr_warn("%s:%d: malformed calibration profile; measuring instead (rewrite it with `zvmm calibrate`)",
			profile_path, line);
	else if (ret == -ESTALE)
		pr_warn("%s: calibration profile is for another machine (CPU, microcode, kernel or backends); measuring instead",
			profile_path);
	/* A profile kept by an earlier launch holds the chunks it needed. */
	if (!ret && (has_chunk(&p, chunk) || !keep)) {
		e = profile_entry(&p, chunk);
		*from = ZERO_FROM_PROFILE;
	} else {
		/* 64 MiB: twice this machine's L3, small enough for ~50 ms. */
		int err = scratch && scratch_bytes >= ZERO_AUTO_BYTES ?
				  zero_calibrate_on(&chunk, 1, scratch,
						    ZERO_AUTO_BYTES, 3, &m) :
				  zero_calibrate(&chunk, 1, ZERO_AUTO_BYTES, 3,
						 &m);

		if (err)
			return err;
		if (keep && profile_path)
			keep_measurement(&p, !ret, &m, profile_path);
		e = &m.e[0];
		*from = ZERO_FROM_MEASURE;
	}
	if (e->best < 0)
		return -ENODEV;
	*out = zero_backend_at((unsigned int)e->best);
	*gbps = e->gbps[e->best];
	return 0;
}
