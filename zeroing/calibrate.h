/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_CALIBRATE_H
#define ZVMM_ZEROING_CALIBRATE_H

#include <stdint.h>

#include "backend.h"

/*
 * Calibration: which backend clears fastest on this machine at the chunk
 * sizes the engine uses, measured on warm memory (DESIGN.md 6: measure,
 * never keep a list of CPU models). A profile written by `zvmm calibrate`
 * keeps the answer; `backend=auto` reads it, or measures quickly.
 */

#define ZERO_PROFILE_MAX_CHUNKS 8
#define ZERO_PROFILE_MAX_BACKENDS 16

struct zero_profile_entry {
	uint64_t chunk;
	int best; /* registry index, -1 if none */
	double gbps[ZERO_PROFILE_MAX_BACKENDS]; /* by registry index; 0 = n/a */
};

struct zero_profile {
	char arch[16];
	char cpu[64];
	uint32_t features;
	unsigned int nr;
	struct zero_profile_entry e[ZERO_PROFILE_MAX_CHUNKS];
};

/* The chunk sizes `zvmm calibrate` measures: 256K up to the 8 MiB cap. */
extern const uint64_t zero_calibrate_chunks[];
extern const unsigned int zero_calibrate_nr_chunks;

/* Seconds on CLOCK_MONOTONIC. */
double zero_now(void);

/*
 * Clears [base, base + bytes) with @b, one call per @extent bytes (the
 * last call may be shorter), and returns the seconds it took.
 */
double zero_time_pass(const struct zero_backend *b, void *base, uint64_t bytes,
		      uint64_t extent);

/*
 * Measures every backend that runs here at each of @chunks on a warm
 * buffer of @buf_bytes, @reps times, keeping the median. Returns 0 or a
 * negative errno (-ENOMEM when the buffer cannot be had).
 */
int zero_calibrate(const uint64_t *chunks, unsigned int nr, uint64_t buf_bytes,
		   unsigned int reps, struct zero_profile *p)
	__attribute__((warn_unused_result));

/* The same on the caller's @buf (its contents are overwritten). */
int zero_calibrate_on(const uint64_t *chunks, unsigned int nr, void *buf,
		      uint64_t buf_bytes, unsigned int reps,
		      struct zero_profile *p)
	__attribute__((warn_unused_result));

/* What backend=auto measures without a profile: 64 MiB, twice this
 * machine's L3 and small enough for ~50 ms per chunk size. */
#define ZERO_AUTO_BYTES (64ull << 20)

/* Writes @p to @path ("-" for stdout), atomically. */
int zero_profile_write(const struct zero_profile *p, const char *path)
	__attribute__((warn_unused_result));

/*
 * Reads a profile. Returns 0; -ENOENT when there is none; -EINVAL for a
 * malformed one, with *line set to the offending line (0 if the file as
 * a whole is wrong); -ESTALE when it was written on a CPU with other
 * features or architecture.
 */
int zero_profile_read(const char *path, struct zero_profile *p, int *line)
	__attribute__((warn_unused_result));

/* $XDG_CACHE_HOME/zvmm/calibration.ini, or ~/.cache/zvmm/... */
int zero_profile_default_path(char *buf, size_t len)
	__attribute__((warn_unused_result));

/*
 * backend=auto: the fastest backend at @chunk, from the profile at
 * @profile_path when it is there and fits this CPU, else from a quick
 * measurement over ZERO_AUTO_BYTES of @scratch (memory the caller will
 * clear anyway) or, when @scratch_bytes is smaller, of a buffer of its
 * own. *gbps gets the rate it was picked for.
 */
int zero_backend_auto(uint64_t chunk, const char *profile_path, void *scratch,
		      uint64_t scratch_bytes, const struct zero_backend **out,
		      double *gbps) __attribute__((warn_unused_result));

#endif
