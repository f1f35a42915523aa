/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_H
#define ZVMM_ARCH_H

/*
 * The interface every architecture folder implements with the same file
 * names (arch/<arch>/clear.*, arch/<arch>/cpu.c). Generic code includes
 * only this header; the architecture is picked here and nowhere else.
 */

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#include "x86/features.h"
#elif defined(__aarch64__)
#include "arm64/features.h"
#else
#error "zvmm supports x86-64 and arm64"
#endif

/*
 * A clearing backend: writes zeros to [addr, addr + len). addr and len
 * are multiples of 64. On return every store is visible to other CPUs
 * (backends using non-temporal stores end with a store fence).
 */
typedef void (*arch_clear_fn)(void *addr, size_t len);

struct arch_backend {
	const char *name;
	arch_clear_fn clear;
	uint32_t needs; /* ARCH_F_* bits that must all be present */
	const char *what; /* one line for listings */
};

/* The architecture's name as users see it: "x86-64" or "arm64". */
extern const char arch_name[];

/* This architecture's backends, generic ones not included. */
extern const struct arch_backend arch_backends[];
extern const unsigned int arch_nr_backends;

/* Feature names indexed by bit number, as /proc/cpuinfo spells them. */
extern const char *const arch_feature_names[ARCH_NR_FEATURES];

/*
 * Detects the CPU features the backends care about (CPUID and XGETBV on
 * x86, DCZID_EL0 on arm64). Never faults: it only asks the CPU.
 */
uint32_t arch_cpu_features(void);

/* The CPU's model name, or "unknown". */
void arch_cpu_model(char *buf, size_t len);

/*
 * The CPU's identity, finer than its name: vendor, family, model and
 * stepping from CPUID (x86), implementer, variant, part and revision from
 * MIDR (arm64); "unknown" when it cannot be read. A calibration profile
 * is trusted only on the CPU whose identity it records.
 */
void arch_cpu_id(char *buf, size_t len);

#endif
