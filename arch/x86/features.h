/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_X86_FEATURES_H
#define ZVMM_ARCH_X86_FEATURES_H

enum {
	ARCH_F_SSE2 = 1u << 0,
	ARCH_F_AVX = 1u << 1, /* CPUID.1:ECX.AVX and YMM state on in XCR0 */
	ARCH_F_AVX2 = 1u << 2, /* CPUID.7:EBX.AVX2, YMM state on */
	ARCH_F_AVX512F = 1u << 3, /* CPUID.7:EBX.AVX512F, ZMM state on */
	ARCH_F_ERMS = 1u << 4, /* fast REP STOSB/MOVSB */
	ARCH_F_FSRM = 1u << 5, /* fast short REP MOVSB */
	ARCH_F_CLZERO = 1u << 6, /* CPUID.80000008:EBX[0], 64-byte lines */
};

#define ARCH_NR_FEATURES 7

/* One step of a polling loop: lets the sibling hyperthread run. */
static inline void arch_relax(void)
{
	__builtin_ia32_pause();
}

#endif
