/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_CALIBRATE_H
#define ZVMM_ZEROING_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/clock.h"
#include "backend.h"

/*
 * Calibration: which backend clears fastest on this machine at the chunk
 * sizes the engine uses, measured on warm memory out of the last-level
 * cache, as guest memory is (DESIGN.md 6: measure, never keep a list of
 * CPU models). A profile written by `zvmm calibrate` keeps the answer;
 * `backend=auto` reads it, or measures.
 */

#define ZERO_PROFILE_MAX_CHUNKS 8
#define ZERO_PROFILE_MAX_BACKENDS 16

/*
 * How a chunk size's best was picked: by a lead its spread could not hide
 * (`decided = lead`), or, when the best two stayed within the noise, as
 * when the best still led beside a thread clearing on another CPU
 * (`busy_sibling`); `noise` when that reordered them or there was no
 * other CPU to try (the best median kept, not trusted: measured again
 * at the next launch). A profile of an older
 * zvmm does not say (ZERO_DECIDED_UNKNOWN): its spread alone is looked at.
 */
enum zero_decided {
	ZERO_DECIDED_UNKNOWN,
	ZERO_DECIDED_LEAD,
	ZERO_DECIDED_BUSY,
	ZERO_DECIDED_NOISE,
};

const char *zero_decided_name(enum zero_decided d);

struct zero_profile_entry {
	uint64_t chunk;
	int best; /* registry index, -1 if none */
	double gbps[ZERO_PROFILE_MAX_BACKENDS]; /* by registry index; 0 = n/a */
	/*
	 * (max - min) / median of the best's and the runner-up's timings,
	 * the larger; -1 when not recorded (a profile of an older zvmm).
	 */
	double spread;
	enum zero_decided decided;
};

/*
 * What a profile is valid for: a profile measured on another CPU (even
 * another stepping or microcode), under another kernel, or with other
 * backends available is measured again, never trusted.
 */
struct zero_machine {
	char arch[16];
	char cpu[64]; /* model name, for people */
	char cpu_id[96]; /* vendor family model stepping, or MIDR fields */
	char microcode[32];
	char kernel[72];
	char backends[256]; /* the backends that run here, in registry order */
	uint32_t features;
};

/*
 * What a measurement was made on: @region bytes of memory, of which the
 * first @llc (the largest last-level cache, 0 unknown) were written
 * before any timing so that each timed window streams to memory, and
 * @reps timed windows for each backend still in the running.
 */
struct zero_profile {
	struct zero_machine id;
	uint64_t region;
	uint64_t llc;
	unsigned int reps;
	unsigned int nr;
	struct zero_profile_entry e[ZERO_PROFILE_MAX_CHUNKS];
};

/* The chunk sizes `zvmm calibrate` measures: 256K up to the 8 MiB cap. */
extern const uint64_t zero_calibrate_chunks[];
extern const unsigned int zero_calibrate_nr_chunks;

/*
 * Clears [base, base + bytes) with @b, one call per @extent bytes (the
 * last call may be shorter), and returns the seconds it took.
 */
double zero_time_pass(const struct zero_backend *b, void *base, uint64_t bytes,
		      uint64_t extent);

/*
 * The sysfs root the cache sizes are read under: "/sys"; tests point it
 * at a made-up tree. Not thread-safe to change.
 */
extern const char *zero_sysfs_root;

/*
 * The largest last-level cache of this machine in bytes (the highest
 * level of data or unified cache any CPU lists under
 * <root>/devices/system/cpu/cpuN/cache/indexM), 0 when sysfs says
 * nothing. Read once for "/sys", at every call for another root.
 */
uint64_t zero_llc_bytes(void);

/*
 * The rule every measurement follows: the region it needs on a machine
 * whose largest last-level cache is @llc bytes, with @reps timed windows
 * per backend in the running. A profile measured on less is not trusted.
 */
uint64_t zero_measure_bytes(uint64_t llc, unsigned int reps);

/* What backend=auto measures on this machine (3 windows a backend). */
uint64_t zero_auto_bytes(void);

/*
 * Measures the backends that run here at each of @chunks, out of cache
 * (zero_measure_bytes() of this machine, or @buf_bytes when larger), in
 * interleaved rounds of @reps (3 at least) timed windows of every
 * backend, each judged by its median: a backend leaves the running only
 * on its median, a window far under its backend's median is timed
 * again, and the best two, when their spread hides their order, are
 * timed more, then beside a busy CPU (zero_profile_entry::decided).
 * Keeps the medians, the spread and what was measured on.
 * Returns 0 or a negative errno (-ENOMEM when the buffer cannot be had).
 */
int zero_calibrate(const uint64_t *chunks, unsigned int nr, uint64_t buf_bytes,
		   unsigned int reps, struct zero_profile *p)
	__attribute__((warn_unused_result));

/*
 * The same on the caller's @buf (its contents are overwritten); with
 * @buf_bytes below what the rule needs, on a buffer of its own. @only,
 * when not 0, is the set of registry indexes worth measuring (bit i for
 * backend i): the rest lost a first pass on this machine before.
 */
int zero_calibrate_on(const uint64_t *chunks, unsigned int nr, void *buf,
		      uint64_t buf_bytes, unsigned int reps, uint32_t only,
		      struct zero_profile *p)
	__attribute__((warn_unused_result));

/*
 * Whether @p's entry @e can be trusted on this machine: measured on the
 * region the rule needs for this machine's last-level cache, with at
 * least 3 windows a backend, its best one that runs here, and the best
 * told apart from the runner-up (their spread could not hide a runner-up
 * more than 10% faster) or, within the noise of each other, decided by
 * how they held up beside a busy CPU. 0, -EAGAIN (in cache, too few windows, or too
 * noisy) or -ENOEXEC (a best this CPU cannot run).
 */
int zero_profile_entry_check(const struct zero_profile *p,
			     const struct zero_profile_entry *e)
	__attribute__((warn_unused_result));

/* Writes @p to @path, atomically. */
int zero_profile_write(const struct zero_profile *p, const char *path)
	__attribute__((warn_unused_result));

/* The profile's text, as zero_profile_write() writes it. */
void zero_profile_print(const struct zero_profile *p, FILE *f);

/* This machine, as a profile records it. */
void zero_machine_get(struct zero_machine *m);

/*
 * What a profile's [profile] section says beside struct zero_profile:
 * its format's version (1 or 2) and the CPU features as written, which
 * zero_profile_read() compares with this zvmm and this machine.
 */
struct zero_profile_head {
	unsigned int version;
	char features[128];
};

/*
 * Reads the @len bytes of profile text at @text (no NUL needed) into @p
 * (id.features left 0) and @h, the text alone: nothing of this machine
 * is looked at. Returns 0, or -EINVAL with *line the line at fault (a
 * line too long for libinih is one), 0 when the text as a whole is
 * (no version, no [chunk] section, one without best). A line is at
 * fault for an unknown section or key, a number that is not one whole
 * decimal number, a version other than 1 or 2, a rate that is not a
 * finite number from 0.01 to 1e6 GB/s or a spread not from 0 to 1e6, a
 * text longer than its field or that would not read back as
 * zero_profile_print() writes it (a ';' first or after a blank: a
 * comment there), a best that is no backend, a [chunk X] whose X is
 * not the size as zvmm writes it ("2M", not "2048K"), a `decided` other
 * than lead, busy_sibling or noise, a [chunk X]
 * header seen before (also with no key between) or a ninth. What
 * zero_profile_print() writes of a profile read reads back the same.
 */
int zero_profile_parse(const char *text, size_t len, struct zero_profile *p,
		       struct zero_profile_head *h, int *line)
	__attribute__((warn_unused_result));

/*
 * Reads a profile: zero_profile_parse() of its file. Returns 0; -ENOENT
 * when there is none (it cannot be opened); -EINVAL for a malformed
 * one, with *line set to the offending line, 0 if the file as a whole
 * is wrong (unreadable, over 1 MiB, incomplete); -ESTALE when it was
 * written for another machine (architecture, CPU identity, microcode,
 * kernel, features or backends), or by a zvmm that did not record them;
 * -ENOEXEC when one of its `best` is a backend this CPU cannot run (it is
 * never handed to a worker: that would be SIGILL); -EAGAIN when it is
 * this machine's but measured in cache or too noisy (see
 * zero_profile_entry_check(); older profiles, which do not say what they
 * measured on, are such). *p holds what was read in every case but
 * -ENOENT and -EINVAL.
 */
int zero_profile_read(const char *path, struct zero_profile *p, int *line)
	__attribute__((warn_unused_result));

/*
 * Where the profile of this machine is kept: the zvmm program's
 * $ZVMM_CACHE_DIR (program_getenv()), else /var/cache/zvmm for root, else $XDG_CACHE_HOME/zvmm or ~/.cache/zvmm;
 * the file is calibration.ini. `zvmm calibrate` writes it, and
 * backend=auto writes it after measuring when it had no valid one.
 */
int zero_profile_default_path(char *buf, size_t len)
	__attribute__((warn_unused_result));

/* Where backend=auto's choice came from. */
enum zero_backend_source {
	ZERO_FROM_POLICY, /* named in the policy */
	ZERO_FROM_PROFILE, /* a valid profile */
	ZERO_FROM_MEASURE, /* measured at this launch */
	ZERO_FROM_NONE, /* nothing to clear: not chosen */
};

const char *zero_backend_source_name(enum zero_backend_source s);

/*
 * backend=auto: the fastest backend at @chunk, from the profile at
 * @profile_path when it is there, fits this machine, is trusted and
 * holds @chunk, else from a measurement over zero_auto_bytes() of
 * @scratch (memory the caller will clear anyway) or, when @scratch_bytes
 * is smaller, of a buffer of its own; backends that lost the first pass
 * of a trusted profile's other chunk sizes are not measured again. With
 * @keep, a measurement is added to the profile
 * at @profile_path (created, or replaced when it was for another
 * machine), so the next launch reads it: the measurement is paid once
 * per machine; a profile that cannot be written is said once and the
 * launch goes on. *gbps gets the rate it was picked for, *from where the
 * answer came from.
 */
int zero_backend_auto(uint64_t chunk, const char *profile_path, bool keep,
		      void *scratch, uint64_t scratch_bytes,
		      const struct zero_backend **out, double *gbps,
		      enum zero_backend_source *from)
	__attribute__((warn_unused_result));

/*
 * zero_backend_auto() for a caller that has just read @profile_path with
 * zero_profile_read() and got 0 into @read: the profile is not read (and
 * the machine not probed) a second time.
 */
int zero_backend_auto_read(uint64_t chunk, const char *profile_path,
			   const struct zero_profile *read, bool keep,
			   void *scratch, uint64_t scratch_bytes,
			   const struct zero_backend **out, double *gbps,
			   enum zero_backend_source *from)
	__attribute__((warn_unused_result));

/*
 * For tests only: when set, each timed window of a measurement reads as
 * what it returns, given the backend's registry index, how many windows
 * of it this chunk size's measurement timed before (0 first), whether a
 * CPU beside it was kept busy, and the rate measured. NULL: as measured.
 */
extern double (*zero_calibrate_window_hook)(unsigned int backend,
					    unsigned int nth, bool busy,
					    double gbps);

/*
 * For tests only: when it returns true for the @nth window timed beside
 * the busy sibling in a measurement (0 first, tries again included), the
 * sibling stands still while that window is timed, as one whose CPU a
 * hog took. NULL: the sibling clears throughout.
 */
extern bool (*zero_calibrate_sibling_hook)(unsigned int nth);

#endif
