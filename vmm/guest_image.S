/* SPDX-License-Identifier: MIT */
/* The touch guest (build/guest/touch.elf), built into zvmm. */
	.section .rodata
	.globl zvmm_guest_image, zvmm_guest_image_end
	.p2align 4
zvmm_guest_image:
	.incbin GUEST_IMAGE
zvmm_guest_image_end:
	.section .note.GNU-stack, "", @progbits
