// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "../lib/thread.h"
#include "../lib/stats.h"
#include "../lib/sysfs.h"
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

const char *zero_sysfs_root = "/sys";

/* "307200K" (sysfs cache size), in bytes; 0 when unreadable. */
static uint64_t read_cache_size(const char *path)
{
	char buf[32], *end;
	uint64_t v = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		v = strtoull(buf, &end, 10);
		if (*end == 'K')
			v <<= 10;
		else if (*end == 'M')
			v <<= 20;
		else if (*end == 'G')
			v <<= 30;
	}
	fclose(f);
	return v;
}

/* One CPU's caches: the highest level's largest data or unified size. */
static void llc_of_cpu(const char *root, const char *cpu, long *best_level,
		       uint64_t *best)
{
	char path[PATH_MAX], type[32];
	uint64_t size;
	long level;

	for (int idx = 0; idx < 16; idx++) {
		FILE *f;

		snprintf(path, sizeof(path),
			 "%s/devices/system/cpu/%s/cache/index%d/level", root,
			 cpu, idx);
		if (sysfs_read_long(path, &level))
			break;
		snprintf(path, sizeof(path),
			 "%s/devices/system/cpu/%s/cache/index%d/type", root,
			 cpu, idx);
		f = fopen(path, "re");
		type[0] = '\0';
		if (f) {
			if (!fgets(type, sizeof(type), f))
				type[0] = '\0';
			fclose(f);
		}
		if (!strncmp(type, "Instruction", 11) || level < *best_level)
			continue;
		snprintf(path, sizeof(path),
			 "%s/devices/system/cpu/%s/cache/index%d/size", root,
			 cpu, idx);
		size = read_cache_size(path);
		if (level > *best_level) {
			*best_level = level;
			*best = size;
		} else if (size > *best) {
			*best = size;
		}
	}
}

/*
 * Only the CPUs sysfs lists (an offline one has no cache directory and is
 * passed over): probing 64 numbers past the last CPU made the scan, paid
 * once by every process, 0.30 ms instead of 0.19 (Xeon model 207).
 */
static uint64_t llc_under(const char *root)
{
	char path[PATH_MAX];
	struct dirent *d;
	long best_level = 0;
	uint64_t best = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		const char *n = d->d_name;

		if (strncmp(n, "cpu", 3) || n[3] < '0' || n[3] > '9' ||
		    strspn(n + 3, "0123456789") != strlen(n + 3))
			continue;
		llc_of_cpu(root, n, &best_level, &best);
	}
	closedir(dir);
	return best;
}

uint64_t zero_llc_bytes(void)
{
	static uint64_t once; /* +1, so that 0 is "not read yet" */
	uint64_t v;

	if (strcmp(zero_sysfs_root, "/sys"))
		return llc_under(zero_sysfs_root);
	v = __atomic_load_n(&once, __ATOMIC_RELAXED);
	if (!v) {
		v = llc_under("/sys") + 1;
		__atomic_store_n(&once, v, __ATOMIC_RELAXED);
	}
	return v - 1;
}

/*
 * Each backend is timed on a window of its own that nothing wrote since
 * the cache was filled with dirty lines: a store there misses, and a
 * store that allocates evicts a dirty line, so the window costs what
 * clearing guest memory costs (a write to DRAM per line), whatever the
 * cache size. 8 MiB is 0.35 ms at 23 GB/s (an NT store on Xeon model
 * 207, one thread), long enough to time: a median of 3 or more, and the
 * outliers timed again, stand for the noise one window has. 16 MiB
 * windows made a launch's measurement 36-45 ms on AMD EPYC Zen 5 (2
 * vCPUs) quiet and 54-87 ms with a CPU hog on the other vCPU, which
 * halves what a cached store gets; 8 MiB, within LAUNCH_BUDGET.
 */
#define MEASURE_WINDOW (8 * SZ_1M)
/* The least a window clears (window_bytes()). */
#define SHORT_WINDOW SZ_2M
/*
 * A launch's measurement (zero_calibrate_on()) of one chunk size times
 * outliers again, extra rounds and the busy sibling only while this much
 * of it has gone (the fill included); the rounds of every backend, never
 * cut, come first. `zvmm calibrate` has no such bound.
 */
#define LAUNCH_BUDGET 0.040
/* What is assumed of a machine whose sysfs lists no cache. */
#define LLC_UNKNOWN (256 * SZ_1M)
/*
 * A backend whose median, over at least MIN_WINDOWS windows, is under
 * 0.6x the leader's leaves the running. Never on one window: with a CPU
 * hog on the other core (AMD EPYC Zen 5, 2 vCPUs) one window the
 * scheduler interrupted read about 3.5 GB/s for a backend that clears
 * 23.8, and a first pass that dropped on it picked memset or
 * page_at_a_time in 2 launches of 10 (7.5 and 11.6 GB/s, issue 30).
 */
#define KEEP 0.6
#define MIN_WINDOWS 3
/*
 * A window under 0.75x its backend's median is an outlier (an interrupt,
 * a neighbour): left out, and timed again, at most MAX_RETIMES windows a
 * measurement. A whole round read slow (every backend's window) is
 * timed again the same way, one window at a time, within that bound.
 */
#define OUTLIER 0.75
#define MAX_RETIMES 12
/* Extra rounds for the best two when their spread hides the order. */
#define EXTRA_ROUNDS 2
/*
 * The backends within BUSY_BAND of the best, BUSY_MAX at most, are timed
 * BUSY_ROUNDS windows each beside a busy sibling (busy_pick()): those
 * within the noise of the best (TIE). With 0.75, page_at_a_time won
 * there 3 times in 10 and scrubbed at 0.72-0.83x the best.
 */
#define BUSY_BAND TIE
#define BUSY_MAX 3
#define BUSY_ROUNDS 3
/*
 * A window counts as beside a busy core only when the sibling cleared at
 * least BUSY_SHARE of the window's bytes while it was timed. Its CPU may
 * be shared with a hog, which the scheduler runs in turns of a few ms
 * against a window of a fraction of one: a window the sibling slept
 * through is one thread's, which is what the busy rounds must not be.
 * Such a window is timed again, after waiting BUSY_WAIT at most for the
 * sibling to run, BUSY_TRIES times at most; a close call with a window
 * still unconfirmed is not decided beside the sibling.
 */
#define BUSY_SHARE 0.5
#define SIBLING_PIECE (4 * SZ_64K)
#define BUSY_WAIT 0.004
#define BUSY_TRIES 4
/* Within 0.9x of the best is as good as the best (the issue-20 target). */
#define TIE 0.9
/* The windows one backend may be timed in one measurement, at most. */
#define MAX_SAMPLES (16 + EXTRA_ROUNDS + MAX_RETIMES)

/*
 * A cache size sysfs does not give is said, not silently assumed: with a
 * larger real cache the windows would be measured in it, and the rates
 * read too high for guest memory.
 */
static void say_llc_assumed(enum log_level level)
{
	log_msg(level,
		"sysfs lists no cache sizes (%s/devices/system/cpu/cpu*/cache): the backends are measured as if the last-level cache were %llu MiB (llc_assumed in the profile)",
		zero_sysfs_root, (unsigned long long)(LLC_UNKNOWN >> 20));
}

static unsigned int backends_here(void)
{
	const struct zero_backend *b;
	unsigned int i, n = 0;

	for_each_backend(i, b)
		n += zero_backend_runs_here(b) && i < ZERO_PROFILE_MAX_BACKENDS;
	return n;
}

static uint64_t fill_bytes(uint64_t llc)
{
	uint64_t f = llc ? llc : LLC_UNKNOWN;

	return (f + SZ_2M - 1) & ~(uint64_t)(SZ_2M - 1);
}

/*
 * Every backend @reps times (MIN_WINDOWS at least), the re-timed
 * outliers, the extra rounds and the busy rounds of the best two: each
 * on a window nothing wrote since the cache was filled.
 */
static unsigned int nr_windows(unsigned int reps)
{
	unsigned int r = reps > MIN_WINDOWS ? reps : MIN_WINDOWS;

	return backends_here() * r + MAX_RETIMES + EXTRA_ROUNDS * 2 +
	       BUSY_ROUNDS * BUSY_MAX;
}

uint64_t zero_measure_bytes(uint64_t llc, unsigned int reps)
{
	return fill_bytes(llc) + (uint64_t)nr_windows(reps) * MEASURE_WINDOW;
}

uint64_t zero_auto_bytes(void)
{
	return zero_measure_bytes(zero_llc_bytes(), 3);
}

struct region {
	char *buf;
	uint64_t fill; /* bytes written before timing */
	unsigned int nwin, next; /* room for nwin windows; next: timed */
	/*
	 * The windows are at base (fill: after the fill; 0: in the fill's
	 * room, before it), room bytes of them; at: the next one's offset.
	 */
	uint64_t base, room, at;
	uint64_t last; /* the last window's bytes */
	bool budget; /* a launch's: LAUNCH_BUDGET */
	double deadline; /* of this chunk size's retimes and extra rounds */
};

double (*zero_calibrate_window_hook)(unsigned int backend, unsigned int nth,
				     bool busy, double gbps);

/*
 * GB/s of @b on the next fresh window of @bytes, in calls of @chunk
 * bytes. The windows follow each other and wrap at the room for nwin.
 */
static double time_window(struct region *r, const struct zero_backend *b,
			  uint64_t chunk, uint64_t bytes)
{
	char *w;

	if (r->at + bytes > r->room)
		r->at = 0;
	w = r->buf + r->base + r->at;
	r->at += bytes;
	r->last = bytes;
	r->next++;
	return (double)bytes / zero_time_pass(b, w, bytes, chunk) / 1e9;
}

struct samples {
	double g[ZERO_PROFILE_MAX_BACKENDS][MAX_SAMPLES];
	unsigned int n[ZERO_PROFILE_MAX_BACKENDS];
	/* Windows timed of each backend, outliers left out included. */
	unsigned int timed[ZERO_PROFILE_MAX_BACKENDS];
	unsigned int retimes;
};

static unsigned int nr_backends(void)
{
	unsigned int nb = zero_backend_count();

	return nb > ZERO_PROFILE_MAX_BACKENDS ? ZERO_PROFILE_MAX_BACKENDS : nb;
}

/*
 * How many bytes backend @i's next window clears: MEASURE_WINDOW for its
 * first, then about as long a time as the fastest backend's window lasts
 * (its bytes halved while at least 3/4 of that), @chunk and SHORT_WINDOW
 * at least. A temporal store clears about 7 GB/s against an NT store's
 * 22 on Xeon model 207: five such backends timed on 8 MiB windows were
 * 18 ms of a launch's measurement there, for backends it drops.
 */
static double median_of(const double *g, unsigned int n);

static uint64_t window_bytes(const struct samples *s, unsigned int i,
			     uint64_t chunk)
{
	uint64_t w = MEASURE_WINDOW, least = SHORT_WINDOW;
	double mine, lead = 0;

	if (!s->n[i])
		return w;
	least = chunk > least ? chunk : least;
	mine = median_of(s->g[i], s->n[i]);
	for (unsigned int j = 0; j < ZERO_PROFILE_MAX_BACKENDS; j++) {
		double m = median_of(s->g[j], s->n[j]);

		lead = m > lead ? m : lead;
	}
	while (lead > 0 && w / 2 >= least &&
	       (double)(w / 2) >= 0.75 * (double)MEASURE_WINDOW * mine / lead)
		w /= 2;
	return w;
}

/* A window of backend @i, as the test hook would have it read. */
static double window_of(struct region *r, unsigned int i, uint64_t chunk,
			bool busy, struct samples *s)
{
	double g = time_window(r, zero_backend_at(i), chunk,
			       window_bytes(s, i, chunk));
	double (*hook)(unsigned int, unsigned int, bool, double) =
		zero_calibrate_window_hook;

	if (hook)
		g = hook(i, s->timed[i], busy, g);
	s->timed[i]++;
	return g;
}

static void add_window(struct region *r, unsigned int i, uint64_t chunk,
		       struct samples *s)
{
	if (s->n[i] < MAX_SAMPLES)
		s->g[i][s->n[i]++] = window_of(r, i, chunk, false, s);
}

/* Whether a window beyond the rounds of every backend may be timed. */
static bool more(const struct region *r)
{
	return !r->budget || clock_now() < r->deadline;
}

/* One window for each backend in @set, starting at a rotating place. */
static void round_of(struct region *r, uint32_t set, uint64_t chunk,
		     unsigned int turn, struct samples *s)
{
	unsigned int nb = nr_backends(), k, i;

	for (k = 0; k < nb; k++) {
		i = (k + turn) % nb;
		if (set & (1u << i))
			add_window(r, i, chunk, s);
	}
}

/*
 * The median; of an even number, the mean of the middle two: the upper
 * one (stats_median_sorted()) of 4 windows two fast and two slow would
 * make both slow ones outliers.
 */
static double median_of(const double *g, unsigned int n)
{
	double t[MAX_SAMPLES];

	if (!n)
		return 0;
	memcpy(t, g, n * sizeof(*t));
	stats_sort(t, n);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/*
 * Leaves out the windows of @set under OUTLIER of their backend's median
 * (once it has MIN_WINDOWS) and times each again, while the bound lets
 * it; the new window is judged in turn. Interleaved rounds spread a
 * stretch the scheduler took from the measurement over all backends, one
 * window each: a whole slow round is re-timed window by window. Returns
 * whether a window was left out.
 */
static bool retime_outliers(struct region *r, uint32_t set, uint64_t chunk,
			    struct samples *s)
{
	unsigned int nb = nr_backends(), i, k;
	bool any = false;

	for (i = 0; i < nb; i++) {
		if (!(set & (1u << i)))
			continue;
		for (k = 0; s->n[i] >= MIN_WINDOWS && k < s->n[i];) {
			double m = median_of(s->g[i], s->n[i]);

			if (s->g[i][k] >= OUTLIER * m) {
				k++;
				continue;
			}
			if (s->retimes == MAX_RETIMES || !more(r))
				return any;
			s->retimes++;
			any = true;
			s->g[i][k] = s->g[i][--s->n[i]];
			add_window(r, i, chunk, s);
			k = 0;
		}
	}
	return any;
}

/*
 * (max - min) / median of a backend's windows; from 4 windows on without
 * the fastest and the slowest: one window of 8 MiB that a neighbour on
 * the host slowed down (seen: 0.9 of the median, once in 6 runs, on Xeon
 * model 207 under KVM) says nothing of the backends' order.
 */
static double spread_of(const double *g, unsigned int n, double median)
{
	double t[MAX_SAMPLES];
	unsigned int lo = 0, hi = n - 1;

	if (!n)
		return 0;
	memcpy(t, g, n * sizeof(*t));
	stats_sort(t, n);
	if (n >= 4) {
		lo++;
		hi--;
	}
	return median > 0 ? (t[hi] - t[lo]) / median : 0;
}

/* The best and the runner-up of @e by rate; -1 when there is none. */
static void leaders(const struct zero_profile_entry *e, int *best, int *second)
{
	*best = *second = -1;
	for (int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++) {
		if (e->gbps[i] <= 0)
			continue;
		if (*best < 0 || e->gbps[i] > e->gbps[*best]) {
			*second = *best;
			*best = i;
		} else if (*second < 0 || e->gbps[i] > e->gbps[*second]) {
			*second = i;
		}
	}
}

/*
 * Could the runner-up be more than 1/TIE faster than the best? Its
 * median is taken as off by half the spread (the range of the best two
 * windows over their median): on Xeon model 207 the NT backends clear
 * within 5% of each other with spreads of 0.03-0.15, a tie either way.
 */
static bool told_apart(const struct zero_profile_entry *e)
{
	int b, r;
	double s = e->spread;

	leaders(e, &b, &r);
	if (b < 0 || s < 0)
		return false;
	if (r < 0)
		return true;
	return e->gbps[r] / e->gbps[b] * (1 + s / 2) <= 1 / TIE + 1e-9;
}

/* Every backend timed is kept with its median: none is ever dropped. */
static void summarize(const struct samples *s, struct zero_profile_entry *e)
{
	int b, r;

	e->best = -1;
	for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++)
		e->gbps[i] = s->n[i] ? median_of(s->g[i], s->n[i]) : 0;
	leaders(e, &b, &r);
	e->best = b;
	e->spread = 0;
	if (b >= 0)
		e->spread = spread_of(s->g[b], s->n[b], e->gbps[b]);
	if (r >= 0) {
		double sr = spread_of(s->g[r], s->n[r], e->gbps[r]);

		e->spread = sr > e->spread ? sr : e->spread;
	}
}

/* The backends of @set whose median is at or above KEEP of the best's. */
static uint32_t still_in_running(const struct samples *s, uint32_t set)
{
	double m[ZERO_PROFILE_MAX_BACKENDS] = { 0 }, best = 0;
	uint32_t keep = 0;

	for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++) {
		if (!(set & (1u << i)))
			continue;
		m[i] = median_of(s->g[i], s->n[i]);
		best = m[i] > best ? m[i] : best;
	}
	for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++)
		if ((set & (1u << i)) &&
		    (s->n[i] < MIN_WINDOWS || m[i] >= KEEP * best))
			keep |= 1u << i;
	return keep;
}

/*
 * A sibling: a thread on another CPU of this thread's set that clears
 * memory as a second worker would, with the backend being timed, over
 * the filled part of the region (out of cache, and no window), while
 * this thread times its window.
 */
struct sibling {
	pthread_t t;
	int cpu;
	const struct region *r;
	uint64_t chunk;
	int backend; /* to clear with; -1 idle */
	int seen; /* the backend it clears with now */
	int stop;
	uint64_t cleared; /* bytes it cleared, read while it runs */
	/* Filling: with this, from this offset on (fill_pieces()). */
	bool filling;
	const struct zero_backend *filler;
	uint64_t fill_at; /* atomic */
};

static void fill_pieces(struct sibling *sb);

/*
 * For tests only: when it returns true for the @nth busy window of a
 * measurement (0 first), the sibling stands still while that window is
 * timed, as one a hog took its CPU from.
 */
bool (*zero_calibrate_sibling_hook)(unsigned int nth);

static void *sibling_run(void *arg)
{
	struct sibling *sb = arg;
	uint64_t off = 0, span = sb->r->fill / sb->chunk * sb->chunk;
	/*
	 * In pieces of SIBLING_PIECE at most, so that its count shows it ran
	 * through a window: at 2 MiB a piece, it finished no more than two
	 * in a window of 8 MiB while both cleared, and 4 of 9 windows read
	 * as slept through on a quiet Xeon model 207.
	 */
	uint64_t piece = sb->chunk < SIBLING_PIECE ? sb->chunk : SIBLING_PIECE;
	int b;

	/* It clears as a worker does, and makes a worker's system calls
	 * (include/zvmm/syscalls.list lists threads by name). */
	thread_name("zvmm-worker");
	if (sb->filling) {
		fill_pieces(sb);
		return NULL;
	}
	while (!__atomic_load_n(&sb->stop, __ATOMIC_RELAXED)) {
		b = __atomic_load_n(&sb->backend, __ATOMIC_ACQUIRE);
		__atomic_store_n(&sb->seen, b, __ATOMIC_RELEASE);
		if (b < 0 || !span)
			continue;
		zero_backend_at((unsigned int)b)->clear(sb->r->buf + off, piece);
		__atomic_fetch_add(&sb->cleared, piece, __ATOMIC_RELAXED);
		off = off + piece < span ? off + piece : 0;
	}
	return NULL;
}

/*
 * The sibling started on a CPU of this thread's set other than the one
 * it runs on, this thread pinned where it is (*old: its set before);
 * with @filling, it fills pieces of the region from sb->fill_at with
 * sb->filler and ends. -ENODEV when there is no other CPU; the thread's
 * error otherwise.
 */
static int sibling_start(struct sibling *sb, const struct region *r,
			 uint64_t chunk, cpu_set_t *old, bool filling)
{
	pthread_attr_t attr;
	cpu_set_t one, other;
	sigset_t all, mask;
	int self = sched_getcpu(), ret;

	/* sched_getaffinity(0): this thread's (tools/syscalls.py knows it). */
	if (self < 0 || sched_getaffinity(0, sizeof(*old), old))
		return -ENODEV;
	sb->cpu = -1;
	for (int c = 0; c < CPU_SETSIZE && sb->cpu < 0; c++)
		if (c != self && CPU_ISSET(c, old))
			sb->cpu = c;
	if (sb->cpu < 0)
		return -ENODEV;
	CPU_ZERO(&one);
	CPU_SET(self, &one);
	CPU_ZERO(&other);
	CPU_SET(sb->cpu, &other);
	sb->r = r;
	sb->chunk = chunk;
	sb->backend = sb->seen = -1;
	sb->stop = 0;
	sb->cleared = 0;
	sb->filling = filling;
	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	ret = pthread_attr_setaffinity_np(&attr, sizeof(other), &other);
	/* No signal of the embedding process goes to it (as the pool's
	 * workers, zeroing/pool.c). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &mask);
	if (!ret)
		ret = pthread_create(&sb->t, &attr, sibling_run, sb);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	pthread_attr_destroy(&attr);
	if (ret)
		return -ret;
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	return 0;
}

/*
 * Sets the sibling clearing with @b and waits until it does, @wait s at
 * most: its CPU may be busy already, and a hog there leaves it a share
 * only every few ms (waiting 20 ms at each of the 9 switches made a
 * launch's measurement 73 ms under a hog; the sibling clears on with
 * the last backend meanwhile).
 */
static void sibling_clear_with(struct sibling *sb, int b, double wait)
{
	double t0 = clock_now();

	__atomic_store_n(&sb->backend, b, __ATOMIC_RELEASE);
	while (__atomic_load_n(&sb->seen, __ATOMIC_ACQUIRE) != b &&
	       clock_now() - t0 < wait)
		;
}

static void sibling_stop(struct sibling *sb, const cpu_set_t *old)
{
	__atomic_store_n(&sb->stop, 1, __ATOMIC_RELAXED);
	pthread_join(sb->t, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(*old), old);
}

/*
 * The backends that may fill: temporal stores, which leave the lines
 * they write in the cache, dirty. One thread filled 260 MiB in 33-47 ms
 * on Xeon model 207 whichever it used (movq, rep_stosq, memset: about 7
 * GB/s, what one core's outstanding misses allow), the bulk of a
 * launch's measurement there; on AMD EPYC Zen 5 movq filled 256 MiB in
 * 9.7-10.8 ms against memset's 13.2-15.4. No one store is fastest
 * everywhere: the first FILL_PROBE bytes of the fill time each, and the
 * fastest writes the rest, with a sibling on another CPU taking pieces
 * of FILL_PIECE as well (the last-level cache is shared by the cores
 * that fill it).
 */
static const char *const fillers[] = { "movq", "rep_stosb", "rep_stosq",
				       "dc_zva", "memset" };
#define FILL_PROBE (4 * SZ_1M)
#define FILL_PIECE SZ_2M

/* Clears [@off, @end) of @buf with @b (memset: NULL) in 64 KiB calls. */
static void fill_with(char *buf, const struct zero_backend *b, uint64_t off,
		      uint64_t end)
{
	for (uint64_t n; off < end; off += n) {
		n = end - off < SZ_64K ? end - off : SZ_64K;
		if (b)
			b->clear(buf + off, n);
		else
			memset(buf + off, 0, n);
	}
}

/* Fills pieces of @sb's region from its cursor until none is left. */
static void fill_pieces(struct sibling *sb)
{
	uint64_t off, end, fill = sb->r->fill;

	while ((off = __atomic_fetch_add(&sb->fill_at, FILL_PIECE,
					 __ATOMIC_RELAXED)) < fill) {
		end = off + FILL_PIECE < fill ? off + FILL_PIECE : fill;
		fill_with(sb->r->buf, sb->filler, off, end);
	}
}

/*
 * Fills the cache with dirty lines, in 64 KiB calls, below any size
 * where glibc's memset switches to non-temporal stores (which would
 * leave the cache empty and let the next window's stores land in it
 * free), with the fastest of the fillers that run here (*@by: its name),
 * on two CPUs where there are two (*@cpus).
 */
static void fill_cache(struct region *r, const char **by, unsigned int *cpus)
{
	struct sibling sb = { .r = r };
	double t, best_t = 0;
	uint64_t off = 0;
	cpu_set_t old;
	int i;

	*by = "memset";
	for (unsigned int k = 0; k < sizeof(fillers) / sizeof(*fillers); k++) {
		const struct zero_backend *b;

		i = zero_backend_index(fillers[k]);
		b = i >= 0 ? zero_backend_at((unsigned int)i) : NULL;
		if (!b || !zero_backend_runs_here(b) ||
		    off + FILL_PROBE > r->fill)
			continue;
		t = clock_now();
		fill_with(r->buf, b, off, off + FILL_PROBE);
		t = clock_now() - t;
		off += FILL_PROBE;
		if (!sb.filler || t < best_t) {
			sb.filler = b;
			best_t = t;
			*by = b->name;
		}
	}
	sb.fill_at = off;
	*cpus = 1;
	if (!sibling_start(&sb, r, FILL_PIECE, &old, true)) {
		fill_pieces(&sb);
		sibling_stop(&sb, &old);
		*cpus = 2;
	} else {
		fill_pieces(&sb);
	}
}

/*
 * The stores known to write past the cache: x86's MOVNT family, which
 * write-combines whole lines to memory and allocates none, so a window
 * of it clears at the same rate whatever the cache holds. Every other
 * backend may leave its lines there: the temporal stores do, and CLZERO
 * (AMD) and STNP (arm64, a hint a core may ignore) are not known not to,
 * so neither is ever the yardstick of early_rounds().
 */
static const char *const write_past[] = { "movnti", "nt_sse2", "nt_avx2",
					  "nt_avx512" };

static bool leaves_lines(unsigned int i)
{
	const char *name = zero_backend_at(i)->name;

	for (unsigned int k = 0; k < sizeof(write_past) / sizeof(*write_past);
	     k++)
		if (!strcmp(name, write_past[k]))
			return false;
	return true;
}

static uint32_t cached_of(uint32_t set)
{
	uint32_t c = 0;

	for (unsigned int i = 0; i < nr_backends(); i++)
		if ((set & (1u << i)) && leaves_lines(i))
			c |= 1u << i;
	return c;
}

/*
 * Before the fill, EARLY_ROUNDS interleaved rounds of every backend of
 * @set on windows in the fill's room. A store that writes past the cache
 * reads there what it clears guest memory at; one that may leave its
 * lines in the cache reads as fast or faster than after the fill (the
 * lines it evicts may be clean: no write-back), so one whose best window
 * is under KEEP of the best median of those that write past it trails
 * them for certain, on two windows, and leaves the running. When none that
 * leaves lines is left, the fill is not written: on Xeon model 207 (260
 * MiB L3) it was 17-47 ms of a launch's measurement, to rank five
 * stores at about 7 GB/s against NT stores at 22 (issue 30). Returns
 * the set left; the windows of the backends that write past the cache
 * stay samples when there is no fill, and those of the set left start
 * again when there is one.
 */
#define EARLY_ROUNDS 2
static uint32_t early_rounds(struct region *r, uint32_t set, uint64_t chunk,
			     unsigned int *turn, struct samples *s)
{
	uint32_t cached = cached_of(set), past = set & ~cached, keep = set;
	unsigned int n = (unsigned int)__builtin_popcount(set), i;
	double lead = 0;

	if (!cached || !past ||
	    (uint64_t)n * EARLY_ROUNDS * MEASURE_WINDOW > r->fill)
		return set;
	r->base = 0;
	r->room = r->fill;
	r->at = 0;
	for (unsigned int k = 0; k < EARLY_ROUNDS; k++)
		round_of(r, set, chunk, (*turn)++, s);
	for (i = 0; i < nr_backends(); i++)
		if (past & (1u << i)) {
			double m = median_of(s->g[i], s->n[i]);

			lead = m > lead ? m : lead;
		}
	for (i = 0; i < nr_backends(); i++) {
		double best = 0;

		if (!(cached & (1u << i)))
			continue;
		for (unsigned int k = 0; k < s->n[i]; k++)
			best = s->g[i][k] > best ? s->g[i][k] : best;
		if (best < KEEP * lead)
			keep &= ~(1u << i);
		else if (r->budget)
			pr_debug(
				"calibrate: %s read %.1f GB/s at best before a fill, against %.1f for the best of those that write past the cache: the cache is filled",
				zero_backend_at(i)->name, best, lead);
	}
	r->base = r->fill;
	r->room = (uint64_t)r->nwin * MEASURE_WINDOW;
	r->at = 0;
	/*
	 * A fill: the windows so far were in its room and are gone; those
	 * left in the running start again, the others keep what they read.
	 */
	for (i = 0; cached_of(keep) && i < nr_backends(); i++)
		if (keep & (1u << i))
			s->n[i] = s->timed[i] = 0;
	return keep;
}

static uint64_t sibling_cleared(struct sibling *sb)
{
	return __atomic_load_n(&sb->cleared, __ATOMIC_RELAXED);
}

/*
 * A window of @b while the sibling clears beside it, timed again while
 * the sibling cleared less than BUSY_SHARE of it meanwhile (its CPU was
 * another's); each try first waits BUSY_WAIT at most for the sibling to
 * be seen clearing. A launch's measurement waits and tries again only
 * within LAUNCH_BUDGET: under a hog the waits made it 80 ms on Xeon model
 * 207. *@confirmed: whether the window returned was busy.
 */
static double busy_window(struct region *r, struct sibling *sb, int b,
			  uint64_t chunk, struct samples *s, unsigned int *nth,
			  bool *confirmed)
{
	double g = 0, t0;
	uint64_t c0;

	*confirmed = false;
	/* Within a launch's budget: past it, one try with no wait. */
	for (unsigned int k = 0;
	     k < BUSY_TRIES && !*confirmed && (!k || more(r)); k++) {
		bool held = zero_calibrate_sibling_hook &&
			    zero_calibrate_sibling_hook((*nth)++);

		if (held)
			__atomic_store_n(&sb->backend, -1, __ATOMIC_RELEASE);
		c0 = sibling_cleared(sb);
		for (t0 = clock_now(); !held && more(r) &&
				       sibling_cleared(sb) == c0 &&
				       clock_now() - t0 < BUSY_WAIT;)
			arch_relax();
		c0 = sibling_cleared(sb);
		g = window_of(r, (unsigned int)b, chunk, true, s);
		*confirmed = sibling_cleared(sb) - c0 >=
			     (uint64_t)(BUSY_SHARE * (double)r->last);
		if (held)
			sibling_clear_with(sb, b, 0.02);
	}
	return g;
}

/*
 * The candidates @cand, timed in interleaved rounds while the sibling
 * clears with the same backend, as the engine's workers all do at once:
 * the pick between backends within the noise of each other is the one
 * that holds up beside a busy core. Returns the candidate with the best
 * median there, -1 when there is no other CPU or no thread. What it
 * does not see: on AMD EPYC Zen 5 (2 vCPUs) with a hog on the other
 * vCPU, movq led clzero in 8 MiB windows, alone (20-25 GB/s against
 * 19-20) and beside the sibling, while `zvmm prezero` of a 4 GiB pool on
 * both vCPUs, quiet, ran clzero at 38-44 and movq at 34-35.
 */
static int busy_pick(struct region *r, uint64_t chunk, const int *cand,
		     unsigned int nc, struct samples *s)
{
	double g[BUSY_MAX][BUSY_ROUNDS], m, best = 0;
	unsigned int nth = 0, unconfirmed = 0;
	struct sibling sb;
	cpu_set_t old;
	bool ok;
	int pick = -1;

	if (sibling_start(&sb, r, chunk, &old, false))
		return -1;
	for (unsigned int k = 0; k < BUSY_ROUNDS; k++)
		for (unsigned int j = 0; j < nc; j++) {
			unsigned int w = (j + k) % nc;

			sibling_clear_with(&sb, cand[w], k || j ? 0.001 : 0.02);
			g[w][k] = busy_window(r, &sb, cand[w], chunk, s, &nth,
					      &ok);
			unconfirmed += !ok;
		}
	sibling_stop(&sb, &old);
	if (unconfirmed) {
		if (r->budget)
			pr_debug(
				"calibrate: the sibling on CPU %d did not run through %u of %u windows (its CPU is busy): the close call is not decided beside it",
				sb.cpu, unconfirmed, nc * BUSY_ROUNDS);
		return -1;
	}
	for (unsigned int j = 0; j < nc; j++) {
		m = median_of(g[j], BUSY_ROUNDS);
		if (r->budget)
			pr_debug(
				"calibrate: %s %.1f GB/s beside a sibling on CPU %d clearing with it",
				zero_backend_at((unsigned int)cand[j])->name, m,
				sb.cpu);
		if (m > best) {
			best = m;
			pick = cand[j];
		}
	}
	return pick;
}

/*
 * The backends of @e within BUSY_BAND of the best, best first, at most
 * BUSY_MAX: those a busy sibling may reorder.
 */
static unsigned int candidates(const struct zero_profile_entry *e, int *cand)
{
	unsigned int nc = 0;
	int b, sec;

	leaders(e, &b, &sec);
	if (b < 0)
		return 0;
	while (nc < BUSY_MAX) {
		int pick = -1;

		for (int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++) {
			bool taken = false;

			for (unsigned int j = 0; j < nc; j++)
				taken |= cand[j] == i;
			if (!taken && e->gbps[i] >= BUSY_BAND * e->gbps[b] &&
			    (pick < 0 || e->gbps[i] > e->gbps[pick]))
				pick = i;
		}
		if (pick < 0)
			break;
		cand[nc++] = pick;
	}
	return nc;
}

/*
 * Interleaved rounds of every backend of @set, each judged by its
 * median: MIN_WINDOWS rounds (or @reps) of all, a backend leaving the
 * running only when its median over them is under KEEP of the best's,
 * outliers re-timed after each round; then, while the best two's spread
 * hides their order, extra rounds of those two, and last the busy
 * sibling. *decided says how the pick was taken.
 */
static void measure_chunk(struct region *r, uint64_t chunk, unsigned int reps,
			  uint32_t set, struct zero_profile_entry *e)
{
	struct samples s;
	unsigned int k, turn = 0, rounds, nc, early;
	int b, sec, pick, cand[BUSY_MAX];
	double t0 = clock_now(), t1, tf = 0;
	const char *filler = NULL;
	unsigned int fill_cpus = 0;
	uint32_t all = set;

	memset(&s, 0, sizeof(s));
	r->deadline = t0 + LAUNCH_BUDGET;
	r->base = r->fill;
	r->room = (uint64_t)r->nwin * MEASURE_WINDOW;
	r->at = 0;
	r->next = 0;
	set = early_rounds(r, set, chunk, &turn, &s);
	early = r->next;
	if (cached_of(set)) {
		tf = clock_now();
		fill_cache(r, &filler, &fill_cpus);
		tf = clock_now() - tf;
	}
	t1 = clock_now();
	rounds = reps > MIN_WINDOWS ? reps : MIN_WINDOWS;
	for (k = 0;; k++) {
		uint32_t short_of = 0;

		for (unsigned int i = 0; i < nr_backends(); i++)
			if ((set & (1u << i)) && s.n[i] < rounds)
				short_of |= 1u << i;
		if (!short_of)
			break;
		round_of(r, short_of, chunk, turn++, &s);
		retime_outliers(r, set, chunk, &s);
		set = still_in_running(&s, set);
	}
	summarize(&s, e);
	e->decided = ZERO_DECIDED_LEAD;
	/*
	 * Backends close to the best are ranked beside a busy sibling, as
	 * the engine's workers clear; without another CPU, by more rounds of
	 * the best two while their spread hides the order.
	 */
	nc = candidates(e, cand);
	pick = nc > 1 ? busy_pick(r, chunk, cand, nc, &s) : -1;
	for (k = 0; pick < 0 && k < EXTRA_ROUNDS && !told_apart(e) && more(r);
	     k++) {
		leaders(e, &b, &sec);
		if (sec < 0)
			break;
		round_of(r, (1u << b) | (1u << sec), chunk, turn++, &s);
		retime_outliers(r, (1u << b) | (1u << sec), chunk, &s);
		summarize(&s, e);
	}
	/* A launch's, under --verbose; `zvmm calibrate` prints its table. */
	if (r->budget && filler)
		pr_debug(
			"calibrate: %u windows before a fill, %llu MiB of cache filled in %.1f ms (%s, %u CPUs), %u windows of %u MiB or less in %.1f ms (%u timed again)",
			early, (unsigned long long)(r->fill >> 20), tf * 1e3,
			filler, fill_cpus, r->next - early,
			(unsigned int)(MEASURE_WINDOW >> 20),
			(clock_now() - t1) * 1e3, s.retimes);
	else if (r->budget)
		pr_debug(
			"calibrate: no fill: %d stores that may leave lines in the cache measured, each under %.1fx the others at its best in %u windows (%.1f ms); %u windows of %u MiB or less in %.1f ms (%u timed again)",
			__builtin_popcount(cached_of(all)), KEEP, early,
			(t1 - t0) * 1e3, r->next - early,
			(unsigned int)(MEASURE_WINDOW >> 20),
			(clock_now() - t1) * 1e3, s.retimes);
	/*
	 * The sibling confirms the best median, or the close call is noise:
	 * the best median stays the best (its rate is the highest the
	 * profile gives, as zvmm_calibration_best() and _gbps() promise) and
	 * the next launch measures again.
	 */
	if (pick >= 0 && pick == e->best) {
		e->decided = ZERO_DECIDED_BUSY;
	} else if (pick >= 0 || !told_apart(e)) {
		e->decided = ZERO_DECIDED_NOISE;
	}
}

/*
 * A new measurement in @p: this machine, the region and how it was
 * measured. Returns the backends to time: those that run here, of
 * @only when it is not 0.
 */
static uint32_t profile_begin(struct zero_profile *p, uint64_t bytes,
			      uint64_t llc, unsigned int reps, unsigned int nr,
			      uint32_t only)
{
	const struct zero_backend *b;
	uint32_t set = 0;
	unsigned int i;

	memset(p, 0, sizeof(*p));
	zero_machine_get(&p->id);
	p->region = bytes;
	p->llc = llc;
	p->reps = reps;
	p->nr = nr;
	for_each_backend(i, b)
		if (i < ZERO_PROFILE_MAX_BACKENDS &&
		    zero_backend_runs_here(b) && (!only || (only & (1u << i))))
			set |= 1u << i;
	return set;
}

static int calibrate_region(const uint64_t *chunks, unsigned int nr, char *buf,
			    uint64_t bytes, uint64_t llc, unsigned int reps,
			    uint32_t only, bool budget, struct zero_profile *p)
{
	struct region r = { .buf = buf,
			    .nwin = nr_windows(reps),
			    .budget = budget };
	uint32_t set;
	unsigned int i;

	r.fill = bytes - (uint64_t)r.nwin * MEASURE_WINDOW;
	set = profile_begin(p, bytes, llc, reps, nr, only);
	if (!set)
		return -ENODEV;
	for (unsigned int c = 0; c < nr; c++) {
		p->e[c].chunk = chunks[c];
		measure_chunk(&r, chunks[c], reps, set, &p->e[c]);
		/*
		 * A backend whose median left the running at one chunk size
		 * stays out: a median of 3 windows or more, never one.
		 */
		if (c == 0)
			set = 0;
		for (i = 0; c == 0 && i < ZERO_PROFILE_MAX_BACKENDS; i++)
			if (p->e[0].gbps[i] >=
			    KEEP * p->e[0].gbps[p->e[0].best])
				set |= 1u << i;
	}
	return 0;
}

int zero_calibrate(const uint64_t *chunks, unsigned int nr, uint64_t buf_bytes,
		   unsigned int reps, struct zero_profile *p)
{
	uint64_t need, llc = zero_llc_bytes();
	void *buf = NULL;
	int ret;

	if (nr > ZERO_PROFILE_MAX_CHUNKS || reps == 0 || reps > 16)
		return -EINVAL;
	need = zero_measure_bytes(llc, reps);
	if (buf_bytes < need)
		buf_bytes = need;
	buf_bytes = (buf_bytes + SZ_2M - 1) & ~(uint64_t)(SZ_2M - 1);
	ret = warm_buffer(buf_bytes, &buf);
	if (ret)
		return ret;
	/* Said to whoever calibrates; a launch's measurement (below) says
	 * it at debug level, which zvmm's --verbose shows. */
	if (!llc)
		say_llc_assumed(LOG_INFO);
	ret = calibrate_region(chunks, nr, buf, buf_bytes, llc, reps, 0, false,
			       p);
	munmap(buf, buf_bytes);
	return ret;
}

/* The least dirty memory measured in place; at most this much of it. */
#define SMALL_MIN (16 * SZ_1M)
#define SMALL_MAX (64 * SZ_1M)

static int calibrate_small(const uint64_t *chunks, unsigned int nr, char *buf,
			   uint64_t bytes, uint64_t llc, unsigned int reps,
			   uint32_t only, struct zero_profile *p)
{
	const struct zero_backend *b;
	unsigned int i, c, k;
	uint32_t set;
	double t[16];

	if (bytes > SMALL_MAX)
		bytes = SMALL_MAX;
	set = profile_begin(p, bytes, llc, reps, nr, only);
	for (c = 0; c < nr; c++) {
		struct zero_profile_entry *e = &p->e[c];

		e->chunk = chunks[c];
		e->best = -1;
		for_each_backend(i, b) {
			if (i >= ZERO_PROFILE_MAX_BACKENDS ||
			    !(set & (1u << i)))
				continue;
			for (k = 0; k < reps; k++)
				t[k] = zero_time_pass(b, buf, bytes, chunks[c]);
			stats_sort(t, reps);
			e->gbps[i] = (double)bytes /
				     stats_median_sorted(t, reps) / 1e9;
			if (e->best < 0 || e->gbps[i] > e->gbps[e->best])
				e->best = (int)i;
		}
	}
	return p->e[0].best < 0 ? -ENODEV : 0;
}

int zero_calibrate_on(const uint64_t *chunks, unsigned int nr, void *buf,
		      uint64_t buf_bytes, unsigned int reps, uint32_t only,
		      struct zero_profile *p)
{
	uint64_t llc = zero_llc_bytes(), need;
	void *own;
	int ret;

	if (!nr || nr > ZERO_PROFILE_MAX_CHUNKS || reps == 0 || reps > 16)
		return -EINVAL;
	need = zero_measure_bytes(llc, reps);
	/* In place on a small scrub (below), the cache size plays no part. */
	if (!llc && !(buf && buf_bytes < need && buf_bytes >= SMALL_MIN))
		say_llc_assumed(LOG_DEBUG);
	if (buf && buf_bytes >= need)
		return calibrate_region(chunks, nr, buf, need, llc, reps, only,
					true, p);
	/*
	 * Less dirty memory than an out-of-cache measurement needs: the
	 * whole scrub is small, and a buffer of zvmm's own as big as the
	 * cache would cost more memory than the guest (and more time than
	 * the scrub). Measured on the memory itself, as the scrub will run;
	 * the answer is used for this launch, never kept in the profile.
	 */
	if (buf && buf_bytes >= SMALL_MIN)
		return calibrate_small(chunks, nr, buf, buf_bytes, llc, reps,
				       only, p);
	ret = warm_buffer(need, &own);
	if (ret)
		return ret;
	ret = calibrate_region(chunks, nr, own, need, llc, reps, only, true, p);
	munmap(own, need);
	return ret;
}

int zero_profile_entry_check(const struct zero_profile *p,
			     const struct zero_profile_entry *e)
{
	if (e->best < 0 || e->best >= (int)zero_backend_count() ||
	    !zero_backend_runs_here(zero_backend_at((unsigned int)e->best)))
		return -ENOEXEC;
	if (p->reps < 3 || p->reps > 16 ||
	    p->region < zero_measure_bytes(zero_llc_bytes(), p->reps) ||
	    (!told_apart(e) && e->decided != ZERO_DECIDED_BUSY))
		return -EAGAIN;
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

static const char *const decided_names[] = { "", "lead", "busy_sibling",
					     "noise" };

const char *zero_decided_name(enum zero_decided d)
{
	return d <= ZERO_DECIDED_NOISE ? decided_names[d] : "?";
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
		"; Measured on `region` bytes, the first `llc` of them (the\n"
		"; last-level cache) written before timing, `reps` windows per\n"
		"; backend; `spread` is (max - min) / median of the best two,\n"
		"; `decided` how the best was picked: `lead` (its lead over\n"
		"; the runner-up survives the spread), `busy_sibling` (the two\n"
		"; within the noise, and the best still the faster beside a\n"
		"; busy CPU) or `noise` (not told apart; measured again).\n"
		"; `llc = 0`: sysfs listed no cache, and `llc_assumed` bytes\n"
		"; were written instead.\n"
		"[profile]\nversion = 2\narch = %s\ncpu = %s\ncpu_id = %s\n"
		"microcode = %s\nkernel = %s\nbackends = %s\nfeatures = %s\n"
		"region = %llu\nllc = %llu\n",
		p->id.arch, p->id.cpu, p->id.cpu_id, p->id.microcode,
		p->id.kernel, p->id.backends, feat,
		(unsigned long long)p->region, (unsigned long long)p->llc);
	if (!p->llc)
		fprintf(f, "llc_assumed = %llu\n",
			(unsigned long long)LLC_UNKNOWN);
	fprintf(f, "reps = %u\n", p->reps);
	for (c = 0; c < p->nr; c++) {
		const struct zero_profile_entry *e = &p->e[c];

		fprintf(f, "\n[chunk %s]\n",
			size_label(e->chunk, label, sizeof(label)));
		if (e->best >= 0)
			fprintf(f, "best = %s\n",
				zero_backend_at((unsigned int)e->best)->name);
		if (e->spread >= 0)
			fprintf(f, "spread = %.3f\n", e->spread);
		if (e->decided != ZERO_DECIDED_UNKNOWN)
			fprintf(f, "decided = %s\n",
				zero_decided_name(e->decided));
		for_each_backend(i, b)
			if (e->gbps[i] > 0)
				fprintf(f, "%s = %.2f\n", b->name, e->gbps[i]);
	}
}

/* Whether @path is this machine's own profile, in the cache directory. */
static bool is_default_path(const char *path)
{
	char def[PATH_MAX];

	return !zero_profile_default_path(def, sizeof(def)) &&
	       !strcmp(def, path);
}

/*
 * The directory of the profile at @path, opened; *name is its last
 * component. The cache directory of the machine's own profile is checked
 * as zvmm's own (docs/DESIGN.md 3, "Threat model"): one that another
 * user owns or may write is said once and neither read nor written.
 */
static int profile_dir(const char *path, bool create, const char **name)
{
	static int warned;
	char dir[PATH_MAX], why[PATH_MAX + 160];
	int fd;

	fd = file_split_path(path, dir, sizeof(dir), name);
	if (fd)
		return fd;
	if (is_default_path(path)) {
		fd = safe_dir_open(dir, create, why, sizeof(why));
		if (fd == -EPERM &&
		    !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			pr_warn("profile cache %s; no profile is read or written there, so backend = auto measures at every launch",
				why);
		return fd;
	}
	if (create) {
		int ret = file_mkdir_parents(path, 0755);

		if (ret)
			return ret;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int zero_profile_write(const struct zero_profile *p, const char *path)
{
	const char *name;
	char *text = NULL;
	size_t len = 0;
	int dfd, ret;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return -errno;
	zero_profile_print(p, f);
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	dfd = profile_dir(path, true, &name);
	if (dfd < 0) {
		free(text);
		return dfd;
	}
	/* A random temporary name, O_EXCL | O_NOFOLLOW, then renamed. */
	ret = safe_write_at(dfd, name, text, len);
	close(dfd);
	free(text);
	return ret;
}

/* Far more than a profile of ZERO_PROFILE_MAX_CHUNKS sizes holds. */
#define PROFILE_MAX_BYTES (1u << 20)

/*
 * The rates and spreads a profile may hold: finite, and written back
 * with two or three decimals by zero_profile_print(), so a rate below
 * 0.01 GB/s would come back as 0 (no rate) and one past a petabyte a
 * second is no measurement of memory.
 */
#define PROFILE_GBPS_MIN 0.01
#define PROFILE_GBPS_MAX 1e6
#define PROFILE_SPREAD_MAX 1e6

struct profile_parse {
	struct zero_profile *p;
	struct zero_profile_head *h;
	int cur; /* entry being read, -1 before any */
	char last[64]; /* its section's name, "" after a [profile] key */
};

/* A decimal number of the whole value: 1, or 0 for anything else. */
static int parse_u64(const char *value, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(value, &end, 10);
	return *value >= '0' && *value <= '9' && *end == '\0' && !errno;
}

/* A number from @lo to @hi, finite (strtod takes "inf" and "nan"). */
static int parse_double(const char *value, double lo, double hi, double *v)
{
	char *end;
	double d = strtod(value, &end);

	if (end == value || *end || !isfinite(d) || d < lo || d > hi)
		return 0;
	*v = d;
	return 1;
}

static bool ini_blank(char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/*
 * The whole value or nothing: a value cut to fit reads as another. A
 * ';' after a blank starts a comment, and zero_profile_print() writes
 * "key = value": a value that starts with ';' (key =;x), or keeps a
 * " ;" (a continuation line's does), would read back as less. And that
 * line, its newline included, fits the INI_MAX_LINE - 1 bytes libinih
 * reads of a line: "key =value" read from a line that just fit would
 * print one byte too long to read back.
 */
static int parse_str(const char *name, const char *value, char *out,
		     size_t size)
{
	size_t n = strlen(value);

	if (n >= size || strlen(name) + 3 + n + 1 > INI_MAX_LINE - 1)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (value[i] == ';' && (!i || ini_blank(value[i - 1])))
			return 0;
	memcpy(out, value, n + 1);
	return 1;
}

static int profile_head_key(struct profile_parse *pp, const char *name,
			    const char *value)
{
	struct zero_profile *p = pp->p;
	uint64_t v;

	if (!strcmp(name, "version")) {
		/* The versions this reader knows; a newer zvmm's is not one. */
		if (!parse_u64(value, &v) || v < 1 || v > 2)
			return 0;
		pp->h->version = (unsigned int)v;
		return 1;
	}
	if (!strcmp(name, "arch"))
		return parse_str(name, value, p->id.arch, sizeof(p->id.arch));
	if (!strcmp(name, "cpu"))
		return parse_str(name, value, p->id.cpu, sizeof(p->id.cpu));
	if (!strcmp(name, "cpu_id"))
		return parse_str(name, value, p->id.cpu_id,
				 sizeof(p->id.cpu_id));
	if (!strcmp(name, "microcode"))
		return parse_str(name, value, p->id.microcode,
				 sizeof(p->id.microcode));
	if (!strcmp(name, "kernel"))
		return parse_str(name, value, p->id.kernel,
				 sizeof(p->id.kernel));
	if (!strcmp(name, "backends"))
		return parse_str(name, value, p->id.backends,
				 sizeof(p->id.backends));
	if (!strcmp(name, "features"))
		return parse_str(name, value, pp->h->features,
				 sizeof(pp->h->features));
	if (!strcmp(name, "region"))
		return parse_u64(value, &p->region);
	if (!strcmp(name, "llc"))
		return parse_u64(value, &p->llc);
	/* What was assumed for llc = 0; older profiles lack it. */
	if (!strcmp(name, "llc_assumed"))
		return parse_u64(value, &v);
	if (!strcmp(name, "reps")) {
		if (!parse_u64(value, &v) || v > 1000)
			return 0;
		p->reps = (unsigned int)v;
		return 1;
	}
	return 0;
}

/*
 * The entry of a [chunk X] section, named as zvmm writes it
 * (size_label(): "2M", not "2048K" or "02M"), so that each size has one
 * name; a new one for a new section. -1 for another section, a name
 * that is not the size's own, or a size with an entry already: a
 * repeated section would split or overwrite an entry.
 */
static int chunk_entry(struct profile_parse *pp, const char *section)
{
	struct zero_profile *p = pp->p;
	char label[32];
	uint64_t chunk;

	if (pp->cur >= 0 && !strcmp(pp->last, section))
		return pp->cur;
	if (strncmp(section, "chunk ", 6) || size_parse(section + 6, &chunk) ||
	    strcmp(section + 6, size_label(chunk, label, sizeof(label))) ||
	    p->nr == ZERO_PROFILE_MAX_CHUNKS)
		return -1;
	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].chunk == chunk)
			return -1;
	pp->cur = (int)p->nr++;
	p->e[pp->cur].chunk = chunk;
	p->e[pp->cur].best = -1;
	p->e[pp->cur].spread = -1;
	snprintf(pp->last, sizeof(pp->last), "%s", section);
	return pp->cur;
}

static int profile_key(void *user, const char *section, const char *name,
		       const char *value)
{
	struct profile_parse *pp = user;
	struct zero_profile_entry *e;
	int idx;

	if (!strcmp(section, "profile")) {
		/* A [chunk X] after [profile] is a new section, even X again. */
		pp->last[0] = '\0';
		return profile_head_key(pp, name, value);
	}
	idx = chunk_entry(pp, section);
	if (idx < 0)
		return 0;
	e = &pp->p->e[idx];
	if (!strcmp(name, "best")) {
		idx = zero_backend_index(value);
		if (idx < 0 || idx >= ZERO_PROFILE_MAX_BACKENDS)
			return 0;
		e->best = idx;
		return 1;
	}
	if (!strcmp(name, "spread"))
		return parse_double(value, 0, PROFILE_SPREAD_MAX, &e->spread);
	/* Not in a profile of an older zvmm: ZERO_DECIDED_UNKNOWN. */
	if (!strcmp(name, "decided")) {
		for (unsigned int d = ZERO_DECIDED_LEAD;
		     d <= ZERO_DECIDED_NOISE; d++)
			if (!strcmp(value, decided_names[d])) {
				e->decided = (enum zero_decided)d;
				return 1;
			}
		return 0;
	}
	idx = zero_backend_index(name);
	if (idx < 0 || idx >= ZERO_PROFILE_MAX_BACKENDS)
		return 0;
	return parse_double(value, PROFILE_GBPS_MIN, PROFILE_GBPS_MAX,
			    &e->gbps[idx]);
}

/*
 * The line of the second [chunk X] header of one X, or of a ninth
 * [chunk] header, or 0. libinih tells its handler no header, so two
 * [chunk 2M] in a row would read as one: the lines are walked for them
 * as libinih reads lines (cut at a NUL, blanks around, ';' and '#'
 * comments, a BOM on the first), where an indented line after a key
 * continues the key. Up to libinih's first error every other line is a
 * key, so a line found before that one is right; names are compared
 * whole, as chunk_entry() takes only one name for each size.
 */
static int repeated_chunk(const char *text, size_t len)
{
	const char *pos = text, *end = text + len;
	char seen[ZERO_PROFILE_MAX_CHUNKS][64];
	unsigned int nr = 0;
	bool after_key = false;
	int line = 0;

	while (pos < end) {
		const char *s = pos, *start = pos, *e, *close;
		char name[64];

		e = memchr(pos, '\n', (size_t)(end - pos));
		e = e ? e : end;
		pos = e < end ? e + 1 : end;
		line++;
		e = memchr(s, '\0', (size_t)(e - s)) ?: e;
		if (line == 1 && e - s >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
			start += 3;
		while (start < e && ini_blank(*start))
			start++;
		while (e > start && ini_blank(e[-1]))
			e--;
		if (start == e || *start == ';' || *start == '#')
			continue;
		if (*start != '[' || (after_key && start > s)) {
			after_key = true;
			continue;
		}
		after_key = false;
		close = memchr(start, ']', (size_t)(e - start));
		if (!close || strncmp(start + 1, "chunk ", 6))
			continue;
		/* No size's name is that long, and a profile has no more. */
		if (close - start - 1 >= (long)sizeof(name) ||
		    nr == ZERO_PROFILE_MAX_CHUNKS)
			return line;
		snprintf(name, sizeof(name), "%.*s", (int)(close - start - 1),
			 start + 1);
		for (unsigned int i = 0; i < nr; i++)
			if (!strcmp(seen[i], name))
				return line;
		memcpy(seen[nr++], name, sizeof(name));
	}
	return 0;
}

int zero_profile_parse(const char *text, size_t len, struct zero_profile *p,
		       struct zero_profile_head *h, int *line)
{
	struct profile_parse pp = { .p = p, .h = h, .cur = -1 };
	bool too_long;
	int ret, again;

	memset(p, 0, sizeof(*p));
	memset(h, 0, sizeof(*h));
	*line = 0;
	ret = inibuf_parse(text, len, profile_key, &pp, &too_long);
	again = repeated_chunk(text, len);
	/* The header, before libinih's error at its first key, if sooner. */
	if (ret >= 0 && again && (!ret || again < ret))
		ret = again;
	if (ret) {
		*line = ret > 0 ? ret : 0;
		return -EINVAL;
	}
	if (!h->version || !p->nr)
		return -EINVAL;
	for (unsigned int c = 0; c < p->nr; c++)
		if (p->e[c].best < 0)
			return -EINVAL;
	return 0;
}

int zero_profile_read(const char *path, struct zero_profile *p, int *line)
{
	struct zero_profile_head h;
	struct zero_machine here;
	const char *name;
	char feat[128], *text;
	size_t len;
	int fd, ret;

	memset(p, 0, sizeof(*p));
	*line = 0;
	/* One that cannot be reached, for whatever reason, is none. */
	fd = profile_dir(path, false, &name);
	if (fd < 0)
		return -ENOENT;
	/* Not through a symbolic link, not another user's, not writable by
	 * others: an edited profile could name any backend. */
	ret = safe_read_at(fd, name, PROFILE_MAX_BYTES, &text, &len);
	close(fd);
	if (ret == -ENOENT || ret == -EPERM)
		return ret;
	if (ret)
		return -EINVAL;
	ret = zero_profile_parse(text, len, p, &h, line);
	free(text);
	if (ret)
		return ret;
	zero_machine_get(&here);
	zero_features_format(here.features, feat, sizeof(feat));
	/* Version 1 recorded no more than arch and features: not enough. */
	if (h.version < 2 || strcmp(p->id.arch, here.arch) ||
	    strcmp(h.features, feat) || strcmp(p->id.cpu_id, here.cpu_id) ||
	    strcmp(p->id.microcode, here.microcode) ||
	    strcmp(p->id.kernel, here.kernel) ||
	    strcmp(p->id.backends, here.backends))
		return -ESTALE;
	p->id.features = here.features;
	/*
	 * Only an edited profile names a backend its own list says does not
	 * run; a worker given it would die of SIGILL.
	 */
	for (unsigned int c = 0; c < p->nr; c++)
		if (zero_profile_entry_check(p, &p->e[c]) == -ENOEXEC)
			return -ENOEXEC;
	for (unsigned int c = 0; c < p->nr; c++)
		if (zero_profile_entry_check(p, &p->e[c]))
			return -EAGAIN;
	return 0;
}

int zero_profile_default_path(char *buf, size_t len)
{
	/*
	 * secure_getenv: a set-user-ID embedder must not be made to read or
	 * write its profile where the invoking user says.
	 */
	const char *xdg = safe_getenv("XDG_CACHE_HOME");
	const char *home = safe_getenv("HOME");
	const char *dir = program_getenv("ZVMM_CACHE_DIR");
	int n;

	if (dir)
		n = snprintf(buf, len, "%s/calibration.ini", dir);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/zvmm/calibration.ini");
	else if (xdg)
		n = snprintf(buf, len, "%s/zvmm/calibration.ini", xdg);
	else if (home)
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

	/* Measured in cache (a small launch's own memory): not kept. */
	if (m->region < zero_measure_bytes(m->llc, m->reps))
		return;
	if (!valid)
		*p = *m;
	else if (p->nr < ZERO_PROFILE_MAX_CHUNKS)
		p->e[p->nr++] = m->e[0];
	else
		return;
	ret = zero_profile_write(p, path);
	if (ret && ret != -EPERM &&
	    !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		pr_warn("cannot keep the backend measurement in %s: %s; the next launch measures again",
			path, strerror(-ret));
}

/*
 * The backends worth measuring at another chunk size: those a trusted
 * profile of this machine did not drop at its first pass (0: all).
 */
static uint32_t still_running(const struct zero_profile *p)
{
	uint32_t set = 0;

	for (unsigned int c = 0; c < p->nr; c++) {
		const struct zero_profile_entry *e = &p->e[c];

		for (unsigned int i = 0; i < ZERO_PROFILE_MAX_BACKENDS; i++)
			if (e->best >= 0 && e->gbps[i] > 0 &&
			    e->gbps[i] >= KEEP * e->gbps[e->best])
				set |= 1u << i;
	}
	return set;
}

static int backend_auto(uint64_t chunk, const char *profile_path,
			struct zero_profile *p, int ret, int ret_line,
			bool keep, void *scratch, uint64_t scratch_bytes,
			const struct zero_backend **out, double *gbps,
			enum zero_backend_source *from)
{
	static int warned_noexec;
	struct zero_profile m;
	const struct zero_profile_entry *e;

	if (ret == -EINVAL)
		pr_warn("%s:%d: malformed calibration profile; measuring instead (rewrite it with `zvmm calibrate`)",
			profile_path, ret_line);
	else if (ret == -ESTALE)
		pr_warn("%s: calibration profile is for another machine (CPU, microcode, kernel or backends); measuring instead",
			profile_path);
	else if (ret == -ENOEXEC &&
		 !__atomic_exchange_n(&warned_noexec, 1, __ATOMIC_RELAXED))
		pr_warn("%s: calibration profile names a backend this CPU cannot run; measuring instead",
			profile_path);
	else if (ret == -EPERM)
		pr_warn("%s: calibration profile is a symbolic link, another user's, or writable by others; not trusted, measuring instead",
			profile_path);
	else if (ret == -EAGAIN)
		pr_info("%s: calibration profile was measured in cache or too noisy to tell the backends apart; measuring again",
			profile_path);
	/* A profile kept by an earlier launch holds the chunks it needed. */
	if (!ret && (has_chunk(p, chunk) || !keep)) {
		e = profile_entry(p, chunk);
		*from = ZERO_FROM_PROFILE;
	} else {
		/*
		 * Out of cache, on the launch's own dirty memory when it has
		 * enough (DESIGN.md 6): 50-70 ms on Xeon model 207 with a
		 * 300 MiB L3, most of it filling that cache.
		 */
		double t0 = clock_now();
		int err = zero_calibrate_on(&chunk, 1, scratch, scratch_bytes,
					    3, ret ? 0 : still_running(p), &m);

		if (err)
			return err;
		/* bench/newuser.sh reads this line. */
		pr_debug(
			"backend = auto: measured in %.1f ms on %llu MiB, best %s at %llu, decided by %s",
			(clock_now() - t0) * 1e3,
			(unsigned long long)(m.region >> 20),
			m.e[0].best >= 0 ?
				zero_backend_at((unsigned int)m.e[0].best)->name :
				"none",
			(unsigned long long)chunk,
			m.e[0].decided ? zero_decided_name(m.e[0].decided) :
					 "median");
		if (keep && profile_path)
			keep_measurement(p, !ret, &m, profile_path);
		e = &m.e[0];
		*from = ZERO_FROM_MEASURE;
	}
	if (e->best < 0)
		return -ENODEV;
	*out = zero_backend_at((unsigned int)e->best);
	*gbps = e->gbps[e->best];
	return 0;
}

int zero_backend_auto(uint64_t chunk, const char *profile_path, bool keep,
		      void *scratch, uint64_t scratch_bytes,
		      const struct zero_backend **out, double *gbps,
		      enum zero_backend_source *from)
{
	struct zero_profile p;
	int ret, line = 0;

	ret = profile_path ? zero_profile_read(profile_path, &p, &line) :
			     -ENOENT;
	return backend_auto(chunk, profile_path, &p, ret, line, keep, scratch,
			    scratch_bytes, out, gbps, from);
}

int zero_backend_auto_read(uint64_t chunk, const char *profile_path,
			   const struct zero_profile *read, bool keep,
			   void *scratch, uint64_t scratch_bytes,
			   const struct zero_backend **out, double *gbps,
			   enum zero_backend_source *from)
{
	struct zero_profile p = *read;

	return backend_auto(chunk, profile_path, &p, 0, 0, keep, scratch,
			    scratch_bytes, out, gbps, from);
}
