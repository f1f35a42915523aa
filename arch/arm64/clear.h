/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_ARM64_CLEAR_H
#define ZVMM_ARCH_ARM64_CLEAR_H

#include <stddef.h>

void arm64_clear_dc_zva(void *addr, size_t len);
void arm64_clear_stnp(void *addr, size_t len);

/*
 * DC ZVA with an explicit block size in bytes; 0 means DC ZVA is
 * prohibited and the range is cleared with STP stores. The block size
 * must be the CPU's own (DCZID_EL0); the parameter exists so tests can
 * drive the fallback on a CPU that permits DC ZVA.
 */
void arm64_clear_dc_zva_block(void *addr, size_t len, size_t block);

/* DC ZVA block size in bytes from DCZID_EL0, or 0 when prohibited. */
size_t arm64_dc_zva_block(void);

#endif
