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

/* Writes the names of the backends that run here, comma separated. */
void zero_backend_list_available(char *buf, size_t len);

/* Writes the names of @features, space separated ("none" if empty). */
void zero_features_format(uint32_t features, char *buf, size_t len);

#define for_each_backend(i, b)                                            \
	for ((i) = 0;                                                     \
	     (i) < zero_backend_count() && ((b) = zero_backend_at(i), 1); \
	     (i)++)

#endif
