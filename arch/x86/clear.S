/* SPDX-License-Identifier: MIT */
/*
 * x86-64 clearing backends. Contract for all of them:
 *   %rdi: start address, a multiple of 64
 *   %rsi: length in bytes, a multiple of 64 (may be 0)
 * Clobbers %rax, %rcx, %rdi, %rsi and the vector register used.
 * Variants that issue non-temporal stores (MOVNTI, MOVNTDQ, CLZERO) end
 * with SFENCE: those stores are weakly ordered, and the engine publishes
 * a page to the guest right after the last chunk returns (DESIGN.md 5).
 */

#define FUNC(name)		\
	.globl name;		\
	.hidden name;		\
	.type name, @function;	\
	.p2align 5;		\
name:

#define ENDFUNC(name) .size name, . - name

	.text

/* Fast with ERMS/FSRM; on Zen it elides cache-line fills above ~L3 size. */
FUNC(x86_clear_rep_stosb)
	movq	%rsi, %rcx
	xorl	%eax, %eax
	rep stosb
	ret
ENDFUNC(x86_clear_rep_stosb)

FUNC(x86_clear_rep_stosq)
	movq	%rsi, %rcx
	shrq	$3, %rcx
	xorl	%eax, %eax
	rep stosq
	ret
ENDFUNC(x86_clear_rep_stosq)

/*
 * Eight 64-bit stores per cache line, as the kernel's
 * memzero_page_aligned_unrolled (seed 001).
 */
FUNC(x86_clear_movq)
	xorl	%eax, %eax
	shrq	$6, %rsi
	jz	2f
1:	movq	%rax, 0(%rdi)
	movq	%rax, 8(%rdi)
	movq	%rax, 16(%rdi)
	movq	%rax, 24(%rdi)
	movq	%rax, 32(%rdi)
	movq	%rax, 40(%rdi)
	movq	%rax, 48(%rdi)
	movq	%rax, 56(%rdi)
	addq	$64, %rdi
	decq	%rsi
	jnz	1b
2:	ret
ENDFUNC(x86_clear_movq)

FUNC(x86_clear_movnti)
	xorl	%eax, %eax
	shrq	$6, %rsi
	jz	2f
1:	movnti	%rax, 0(%rdi)
	movnti	%rax, 8(%rdi)
	movnti	%rax, 16(%rdi)
	movnti	%rax, 24(%rdi)
	movnti	%rax, 32(%rdi)
	movnti	%rax, 40(%rdi)
	movnti	%rax, 48(%rdi)
	movnti	%rax, 56(%rdi)
	addq	$64, %rdi
	decq	%rsi
	jnz	1b
2:	sfence
	ret
ENDFUNC(x86_clear_movnti)

FUNC(x86_clear_nt_sse2)
	pxor	%xmm0, %xmm0
	shrq	$6, %rsi
	jz	2f
1:	movntdq	%xmm0, 0(%rdi)
	movntdq	%xmm0, 16(%rdi)
	movntdq	%xmm0, 32(%rdi)
	movntdq	%xmm0, 48(%rdi)
	addq	$64, %rdi
	decq	%rsi
	jnz	1b
2:	sfence
	ret
ENDFUNC(x86_clear_nt_sse2)

FUNC(x86_clear_nt_avx2)
	vpxor	%ymm0, %ymm0, %ymm0
	shrq	$6, %rsi
	jz	2f
1:	vmovntdq %ymm0, 0(%rdi)
	vmovntdq %ymm0, 32(%rdi)
	addq	$64, %rdi
	decq	%rsi
	jnz	1b
2:	sfence
	vzeroupper
	ret
ENDFUNC(x86_clear_nt_avx2)

FUNC(x86_clear_nt_avx512)
	vpxord	%zmm0, %zmm0, %zmm0
	shrq	$6, %rsi
	jz	2f
1:	vmovntdq %zmm0, 0(%rdi)
	addq	$64, %rdi
	decq	%rsi
	jnz	1b
2:	sfence
	vzeroupper
	ret
ENDFUNC(x86_clear_nt_avx512)

/*
 * CLZERO zeroes the whole cache line holding %rax without reading it;
 * it is weakly ordered like a non-temporal store (AMD APM vol. 3), so it
 * needs the SFENCE too. Registered only where the line size is 64.
 */
FUNC(x86_clear_clzero)
	movq	%rdi, %rax
	shrq	$6, %rsi
	jz	2f
1:	clzero
	addq	$64, %rax
	decq	%rsi
	jnz	1b
2:	sfence
	ret
ENDFUNC(x86_clear_clzero)

	.section .note.GNU-stack, "", @progbits
