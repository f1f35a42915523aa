/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_BACKEND_H
#define ZVMM_ZEROING_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../arch/arch.h"

/*
 * The backend registry: every clearing backend built into this binary
 * (this architecture's and the generic ones), the CPU features each
 * needs, and which of them can run on this CPU.
 */

struct zero_backend {
	const char *name;
	arch_clear_fn clear;
	uint32_t needs; /* ARCH_F_* bits */
	const char *what;
	bool generic;
};

unsigned int zero_backend_count(void);
const struct zero_backend *zero_backend_at(unsigned int i);

/* Features of this CPU, detected once (thread-safe). */
uint32_t zero_cpu_features(void);

/* Whether @b can run given @features / on this CPU. */
bool zero_backend_runs_with(const struct zero_backend *b, uint32_t features);
bool zero_backend_runs_here(const struct zero_backend *b);

/*
 * Looks a backend up by name for use on a CPU with @features.
 * Returns 0 and sets *out; -ENOENT for a name zvmm does not know;
 * -EOPNOTSUPP for a backend of another architecture or one whose CPU
 * features are missing. In every error case @why (if not NULL) holds a
 * one-line explanation that lists the backends that can run.
 */
int zero_backend_lookup(const char *name, uint32_t features,
			const struct zero_backend **out, char *why,
			size_t why_len) __attribute__((warn_unused_result));

/* zero_backend_lookup() with this CPU's features. */
int zero_backend_find(const char *name, const struct zero_backend **out,
		      char *why, size_t why_len)
	__attribute__((warn_unused_result));

/*
 * Writes the names of the backends that run given @features, in registry
 * order, separated by @sep (cut short to fit @len).
 */
void zero_backend_list(uint32_t features, const char *sep, char *buf,
		       size_t len);

/* The registry index of the backend called @name, or -1. */
int zero_backend_index(const char *name);

/*
 * Every backend of every architecture, whether this binary builds it or
 * not: the values a policy's backend may take besides "auto" (DESIGN.md
 * 8), and what lets a lookup answer "that is an arm64 backend" rather
 * than "unknown". The registry holds the ones built here, from
 * arch/<arch>/cpu.c and arch/generic/clear.c; tests/test_registry.c
 * checks that the two agree. Inline, so that the policy parser (and its
 * fuzzer) check a name without linking the backends. NULL past the last.
 */
struct zero_backend_name {
	const char *name;
	const char *arch; /* arch_name of its architecture, or "generic" */
};

static inline const struct zero_backend_name *
zero_backend_name_at(unsigned int i)
{
	static const struct zero_backend_name names[] = {
		{ "rep_stosb", "x86-64" }, { "rep_stosq", "x86-64" },
		{ "movq", "x86-64" },	   { "movnti", "x86-64" },
		{ "nt_sse2", "x86-64" },   { "nt_avx2", "x86-64" },
		{ "nt_avx512", "x86-64" }, { "clzero", "x86-64" },
		{ "dc_zva", "arm64" },	   { "stnp", "arm64" },
		{ "memset", "generic" },   { "page_at_a_time", "generic" },
	};

	return i < sizeof(names) / sizeof(names[0]) ? &names[i] : NULL;
}

/* Writes the names of @features, space separated ("none" if empty). */
void zero_features_format(uint32_t features, char *buf, size_t len);

#define for_each_backend(i, b)                                            \
	for ((i) = 0;                                                     \
	     (i) < zero_backend_count() && ((b) = zero_backend_at(i), 1); \
	     (i)++)

#endif
