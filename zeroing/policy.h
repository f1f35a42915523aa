/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_POLICY_H
#define ZVMM_ZEROING_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/inival.h"
#include "../lib/ranges.h"

/*
 * The zeroing policy a user writes (DESIGN.md 8): an INI file read with
 * libinih, plus `--set section.key=value` overrides. Every key has a
 * default, so an empty file is the hybrid policy.
 */

enum zero_mode { ZERO_MODE_PREZERO, ZERO_MODE_DEMAND, ZERO_MODE_HYBRID };
enum zero_fresh { ZERO_FRESH_TRUST, ZERO_FRESH_SCRUB };
enum zero_on_exit { ZERO_EXIT_RELEASE, ZERO_EXIT_KEEP, ZERO_EXIT_SCRUB };
/*
 * What a pool's state record may do: trust it (with random samples of
 * every page), verify every byte before trusting it, or never let it
 * skip the scrub (docs/DESIGN.md 3, "Threat model").
 */
enum zero_record_use {
	ZERO_RECORD_TRUST,
	ZERO_RECORD_VERIFY,
	ZERO_RECORD_NEVER
};
enum zero_numa { ZERO_NUMA_LOCAL, ZERO_NUMA_INTERLEAVE, ZERO_NUMA_BIND };

#define ZERO_MAX_NODES NODES_MAX
#define ZERO_MAX_WORKERS 1024
#define ZERO_CHUNK_MIN 4096ULL
#define ZERO_CHUNK_MAX (1ULL << 30)

/*
 * Paths in a policy, NUL included: `state_dir = PATH` must fit libinih's
 * line of INI_MAX_LINE (200) bytes, or the printed policy would not load.
 */
#define ZERO_POLICY_PATH_MAX INIVAL_PATH_MAX

/* Workers' CPU affinity: one CPU each (of their node), or none set. */
enum zero_pin { ZERO_PIN_CPU, ZERO_PIN_NONE };

struct zero_policy {
	enum zero_mode mode;
	char backend[32]; /* "auto" or a backend name */
	unsigned int workers; /* 0 = auto */
	uint64_t chunk; /* 0 = auto */
	uint64_t rate_limit; /* background bytes per second, 0 = unlimited */
	enum zero_fresh fresh;
	enum zero_on_exit on_exit;
	enum zero_record_use record;
	enum zero_numa numa;
	uint64_t nodes; /* bit per node; 0 = all */
	enum zero_pin pin;
	/* Directories of this guest's own, "" = the defaults (environment) */
	char state_dir[ZERO_POLICY_PATH_MAX]; /* [pool] state_dir */
	char profile[ZERO_POLICY_PATH_MAX]; /* [zeroing] profile: a file */
};

/* Hybrid, auto everything, no rate limit, trust fresh pages, release. */
void zero_policy_defaults(struct zero_policy *p);

/*
 * Reads @path over the values already in @p. Returns 0, -ENOENT (or
 * another -errno) when the file cannot be opened or read (-EFBIG past
 * 1 MiB), -EINVAL for any error in it; @err then holds "file:line: what
 * is wrong and what is allowed".
 */
int zero_policy_load(struct zero_policy *p, const char *path, char *err,
		     size_t err_len) __attribute__((warn_unused_result));

/*
 * The same for the @len bytes of policy text at @text (no NUL needed);
 * @name stands for the file in messages. A line too long for libinih's
 * line buffer is an error, not split in two.
 */
int zero_policy_load_string(struct zero_policy *p, const char *name,
			    const char *text, size_t len, char *err,
			    size_t err_len) __attribute__((warn_unused_result));

/*
 * Applies one "section.key=value" override, of any length. Returns 0, or
 * -EINVAL (-ENOMEM) with @err set ("--set ...: ...").
 */
int zero_policy_set(struct zero_policy *p, const char *assignment, char *err,
		    size_t err_len) __attribute__((warn_unused_result));

/* Writes the policy back as an INI file, every key explicit. */
void zero_policy_print(const struct zero_policy *p, FILE *f);

const char *zero_mode_name(enum zero_mode m);

#endif
