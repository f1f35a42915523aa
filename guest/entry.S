/* SPDX-License-Identifier: MIT */
/*
 * PVH entry of the touch guest. Every vCPU enters here in 32-bit protected
 * mode, paging off, with %ebx pointing at hvm_start_info (DESIGN.md 8).
 * The vCPU's index is its initial APIC ID (CPUID.1:EBX[31:24]), which
 * zvmm sets to the vCPU number; the boot vCPU is 0. vCPU 0 identity-maps
 * the first GiB with 2 MiB pages (the guest CPUID here has no 1 GiB
 * pages), enters long mode and maps the rest of RAM from C; the others
 * wait for it (guest_ap_go) and then share its page tables.
 *
 * Every guest instruction is emulated on PVM hosts (~1.2 us each), so the
 * loops here are as short as they can be: 512 entries for the first GiB.
 */

#define STACK_SIZE 8192
#define MAX_CPUS 64

	.section .note.Xen, "a"
	.p2align 2
	.long 4			/* name size: "Xen\0" */
	.long 4			/* descriptor size */
	.long 18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.long pvh_start

	.section .text.entry, "ax"
	.code32
	.globl pvh_start
pvh_start:
	cli
	cld
	movl	%ebx, %esi		/* start_info, kept for C */
	movl	$1, %eax
	cpuid
	shrl	$24, %ebx		/* initial APIC ID = vCPU index */
	cmpl	$MAX_CPUS, %ebx
	jae	halt32
	movl	%ebx, %edi

	/* Stack: one per vCPU. */
	movl	%edi, %eax
	incl	%eax
	shll	$13, %eax
	leal	guest_stacks(%eax), %esp

	testl	%edi, %edi
	jnz	wait_go

	/*
	 * vCPU 0 says it runs, before any other work: "ZVMM-BOOT" on COM1
	 * is how a host (zvmm or QEMU alike) times launch to the guest's
	 * first instruction from outside (bench/suite.sh).
	 */
	movl	$boot_msg, %ecx
	movw	$0x3f8, %dx
boot_putc:
	movb	(%ecx), %al
	testb	%al, %al
	jz	boot_said
	outb	%al, %dx
	incl	%ecx
	jmp	boot_putc
boot_said:

	/* vCPU 0: PML4[0] -> PDPT, PDPT[0] -> PD0, PD0: 512 x 2 MiB. */
	leal	guest_pdpt + 3, %eax
	movl	%eax, guest_pml4
	leal	guest_pd + 3, %eax
	movl	%eax, guest_pdpt
	xorl	%ecx, %ecx
	movl	$0x83, %eax		/* present, writable, 2 MiB page */
1:	movl	%eax, guest_pd(,%ecx,8)
	addl	$0x200000, %eax
	incl	%ecx
	cmpl	$512, %ecx
	jne	1b
	jmp	long_mode

wait_go:
	/* APs: until vCPU 0 has mapped all of RAM. */
	pause
	cmpl	$0, guest_ap_go
	je	wait_go

long_mode:
	lgdt	gdt_ptr
	movl	%cr4, %eax
	orl	$0x20, %eax		/* PAE */
	movl	%eax, %cr4
	leal	guest_pml4, %eax
	movl	%eax, %cr3
	movl	$0xc0000080, %ecx	/* EFER */
	rdmsr
	orl	$0x100, %eax		/* LME */
	wrmsr
	movl	%cr0, %eax
	orl	$0x80000001, %eax	/* PG, PE */
	movl	%eax, %cr0
	ljmp	$0x08, $entry64

halt32:
	hlt
	jmp	halt32

	.code64
entry64:
	movl	$0x10, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movl	%eax, %fs
	movl	%eax, %gs
	/* guest_main(start_info, cpu): %rdi, %rsi. */
	movl	%esi, %eax
	movl	%edi, %esi
	movl	%eax, %edi
	call	guest_main
2:	cli
	hlt
	jmp	2b

	.section .rodata
boot_msg:
	.asciz	"ZVMM-BOOT\n"
	.p2align 3
gdt:
	.quad	0
	.quad	0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad	0x00cf92000000ffff	/* 0x10: data */
gdt_end:
gdt_ptr:
	.word	gdt_end - gdt - 1
	.long	gdt

	.section .bss
	.p2align 12
	.globl guest_pml4, guest_pdpt, guest_pd
guest_pml4:
	.skip	4096
guest_pdpt:
	.skip	4096
	/* Up to 64 GiB: one PD per GiB. */
guest_pd:
	.skip	4096 * 64
guest_stacks:
	.skip	STACK_SIZE * MAX_CPUS

	.section .note.GNU-stack, "", @progbits
