/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_GUEST_PVH_H
#define ZVMM_GUEST_PVH_H

/*
 * The PVH boot ABI (Xen's arch-x86/hvm/start_info.h), shared by the guest
 * and the VMM's loader: at the 32-bit entry, %ebx holds the physical
 * address of a struct hvm_start_info.
 */

#include <stdint.h>

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC 0x336ec578u
#define HVM_MEMMAP_TYPE_RAM 1

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr; /* version 1 */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

#endif
