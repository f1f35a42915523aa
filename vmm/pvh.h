/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_PVH_H
#define ZVMM_VMM_PVH_H

#include <stddef.h>
#include <stdint.h>

#include "kvm.h"

/*
 * The PVH loader (DESIGN.md 8): any ELF, 32- or 64-bit, that carries the
 * XEN_ELFNOTE_PHYS32_ENTRY note. Boot structures live in guest RAM at
 * [VMM_BOOT_START, VMM_BOOT_END): hvm_start_info and the memory map, then
 * the command line. Segments may not overlap them.
 */

#define VMM_BOOT_START 0x1000u
#define VMM_BOOT_END 0x3000u
#define VMM_CMDLINE_MAX 4095u

struct vmm_elf_info {
	uint32_t entry; /* 32-bit PVH entry */
	uint64_t lo, hi; /* guest-physical span of the PT_LOAD segments */
	unsigned int nr_load;
};

/*
 * Checks an ELF image without loading it: ELF magic, class, byte order,
 * machine, program headers inside the file, a PVH note, segments inside
 * RAM of @ram_bytes (with the x86 hole) and clear of the boot structures.
 * Returns 0 or -EINVAL with @err naming the problem.
 */
int vmm_pvh_check(const void *elf, size_t size, uint64_t ram_bytes,
		  struct vmm_elf_info *info, char *err, size_t err_len)
	__attribute__((warn_unused_result));

/*
 * Loads a checked image into the VM's RAM and writes hvm_start_info
 * (magic 0x336ec578, version 1, @cmdline, a memory map of guest RAM).
 * Returns 0 or -EINVAL (command line too long).
 */
int vmm_pvh_load(struct vmm_vm *vm, const void *elf, size_t size,
		 const char *cmdline, char *err, size_t err_len)
	__attribute__((warn_unused_result));

#endif
