/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_X86_CLEAR_H
#define ZVMM_ARCH_X86_CLEAR_H

#include <stddef.h>

/* Implemented in clear.S; the contract is stated there. */
void x86_clear_rep_stosb(void *addr, size_t len);
void x86_clear_rep_stosq(void *addr, size_t len);
void x86_clear_movq(void *addr, size_t len);
void x86_clear_movnti(void *addr, size_t len);
void x86_clear_nt_sse2(void *addr, size_t len);
void x86_clear_nt_avx2(void *addr, size_t len);
void x86_clear_nt_avx512(void *addr, size_t len);
void x86_clear_clzero(void *addr, size_t len);

#endif
