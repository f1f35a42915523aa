/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_ARM64_FEATURES_H
#define ZVMM_ARCH_ARM64_FEATURES_H

enum {
	ARCH_F_DC_ZVA = 1u << 0, /* DCZID_EL0.DZP clear: DC ZVA permitted */
};

#define ARCH_NR_FEATURES 1

/* One step of a polling loop: lets the sibling hyperthread run. */
static inline void arch_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

#endif
