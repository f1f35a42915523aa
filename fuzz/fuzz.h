/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_FUZZ_FUZZ_H
#define ZVMM_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libFuzzer's entry point; declared for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property that must hold: a failure is a crash libFuzzer keeps. */
#define fuzz_assert(cond, ...)                                             \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, \
				#cond);                                    \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			abort();                                           \
		}                                                          \
	} while (0)

/* The input as a C string (cut at its first NUL); free() it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
