// SPDX-License-Identifier: MIT
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../guest/pvh.h"
#include "pvh.h"

/* ELF32 and ELF64 program headers, read into one shape. */
struct phdr {
	uint32_t type;
	uint64_t offset, paddr, filesz, memsz;
};

static int get_phdr(const unsigned char *elf, size_t size, bool is64,
		    unsigned int i, struct phdr *p, char *err, size_t len)
{
	uint64_t off, entsize;

	if (is64) {
		const Elf64_Ehdr *eh = (const void *)elf;

		off = eh->e_phoff;
		entsize = eh->e_phentsize;
		if (entsize != sizeof(Elf64_Phdr))
			goto bad;
	} else {
		const Elf32_Ehdr *eh = (const void *)elf;

		off = eh->e_phoff;
		entsize = eh->e_phentsize;
		if (entsize != sizeof(Elf32_Phdr))
			goto bad;
	}
	/* No wrap: a huge e_phoff must not bring the headers back to 0. */
	if (off > size || size - off < (i + 1ull) * entsize) {
		snprintf(
			err, len,
			"truncated ELF: program header %u lies past the end of the file (%zu bytes)",
			i, size);
		return -EINVAL;
	}
	off += i * entsize;
	if (is64) {
		Elf64_Phdr ph;

		memcpy(&ph, elf + off, sizeof(ph));
		*p = (struct phdr){ ph.p_type, ph.p_offset, ph.p_paddr,
				    ph.p_filesz, ph.p_memsz };
	} else {
		Elf32_Phdr ph;

		memcpy(&ph, elf + off, sizeof(ph));
		*p = (struct phdr){ ph.p_type, ph.p_offset, ph.p_paddr,
				    ph.p_filesz, ph.p_memsz };
	}
	return 0;
bad:
	snprintf(err, len, "malformed ELF: program header size %llu",
		 (unsigned long long)entsize);
	return -EINVAL;
}

/* Looks for "Xen" note type 18 in a PT_NOTE segment. */
static bool find_pvh_note(const unsigned char *elf, const struct phdr *p,
			  uint32_t *entry)
{
	uint64_t off = p->offset, end = p->offset + p->filesz;

	while (off + 12 <= end) {
		uint32_t namesz, descsz, type;
		uint64_t name, desc;

		memcpy(&namesz, elf + off, 4);
		memcpy(&descsz, elf + off + 4, 4);
		memcpy(&type, elf + off + 8, 4);
		name = off + 12;
		desc = name + ((namesz + 3ull) & ~3ull);
		if (desc + descsz > end || desc < name)
			return false;
		if (type == XEN_ELFNOTE_PHYS32_ENTRY && namesz == 4 &&
		    !memcmp(elf + name, "Xen", 4) &&
		    (descsz == 4 || descsz == 8)) {
			memcpy(entry, elf + desc, 4);
			if (descsz == 8) {
				uint64_t e;

				memcpy(&e, elf + desc, 8);
				if (e >> 32)
					return false;
				*entry = (uint32_t)e;
			}
			return true;
		}
		off = desc + ((descsz + 3ull) & ~3ull);
	}
	return false;
}

static bool in_ram(uint64_t ram, uint64_t a, uint64_t len)
{
	uint64_t low = ram < VMM_LOW_RAM_END ? ram : VMM_LOW_RAM_END;

	if (a + len < a)
		return false;
	if (a + len <= low)
		return true;
	return a >= VMM_HIGH_RAM_START &&
	       a + len <= VMM_HIGH_RAM_START + (ram - low);
}

int vmm_pvh_check(const void *image, size_t size, uint64_t ram,
		  struct vmm_elf_info *info, char *err, size_t len)
{
	const unsigned char *elf = image;
	unsigned int phnum, machine;
	bool is64, have_note = false;
	struct phdr p;
	int ret;

	memset(info, 0, sizeof(*info));
	info->lo = UINT64_MAX;
	if (size < EI_NIDENT || memcmp(elf, ELFMAG, SELFMAG)) {
		snprintf(err, len, "not an ELF file (no \\177ELF magic)");
		return -EINVAL;
	}
	if (elf[EI_CLASS] != ELFCLASS32 && elf[EI_CLASS] != ELFCLASS64) {
		snprintf(err, len,
			 "unknown ELF class %u: expected 32- or 64-bit",
			 elf[EI_CLASS]);
		return -EINVAL;
	}
	is64 = elf[EI_CLASS] == ELFCLASS64;
	if (elf[EI_DATA] != ELFDATA2LSB) {
		snprintf(err, len,
			 "big-endian ELF: an x86 guest is little-endian");
		return -EINVAL;
	}
	if (size < (is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr))) {
		snprintf(err, len,
			 "truncated ELF: %zu bytes, shorter than its header",
			 size);
		return -EINVAL;
	}
	if (is64) {
		const Elf64_Ehdr *eh = image;

		machine = eh->e_machine;
		phnum = eh->e_phnum;
	} else {
		const Elf32_Ehdr *eh = image;

		machine = eh->e_machine;
		phnum = eh->e_phnum;
	}
	if (machine != (is64 ? EM_X86_64 : EM_386)) {
		snprintf(
			err, len,
			"ELF for machine %u, not x86 (%s): zvmm boots x86 PVH guests",
			machine, is64 ? "EM_X86_64 = 62" : "EM_386 = 3");
		return -EINVAL;
	}
	if (!phnum) {
		snprintf(err, len,
			 "ELF has no program headers: nothing to load");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < phnum; i++) {
		ret = get_phdr(elf, size, is64, i, &p, err, len);
		if (ret)
			return ret;
		if (p.type != PT_LOAD && p.type != PT_NOTE)
			continue;
		if (p.offset + p.filesz > size ||
		    p.offset + p.filesz < p.offset) {
			snprintf(
				err, len,
				"truncated ELF: segment %u needs bytes up to %llu, the file has %zu",
				i, (unsigned long long)(p.offset + p.filesz),
				size);
			return -EINVAL;
		}
		if (p.type == PT_NOTE) {
			have_note |= find_pvh_note(elf, &p, &info->entry);
			continue;
		}
		if (p.filesz > p.memsz) {
			snprintf(
				err, len,
				"malformed ELF: segment %u has more file bytes than memory bytes",
				i);
			return -EINVAL;
		}
		if (!p.memsz)
			continue;
		if (!in_ram(ram, p.paddr, p.memsz)) {
			snprintf(
				err, len,
				"ELF segment %u at 0x%llx-0x%llx lies outside guest RAM: give more --mem or link the guest lower",
				i, (unsigned long long)p.paddr,
				(unsigned long long)(p.paddr + p.memsz));
			return -EINVAL;
		}
		if (p.paddr < VMM_BOOT_END) {
			snprintf(
				err, len,
				"ELF segment %u at 0x%llx overlaps the boot structures at 0x%x-0x%x: link the guest at 1 MiB",
				i, (unsigned long long)p.paddr, VMM_BOOT_START,
				VMM_BOOT_END);
			return -EINVAL;
		}
		info->nr_load++;
		if (p.paddr < info->lo)
			info->lo = p.paddr;
		if (p.paddr + p.memsz > info->hi)
			info->hi = p.paddr + p.memsz;
	}
	if (!have_note) {
		snprintf(
			err, len,
			"ELF has no PVH entry note (Xen note type 18, XEN_ELFNOTE_PHYS32_ENTRY): it is not a PVH kernel");
		return -EINVAL;
	}
	if (!info->nr_load) {
		snprintf(err, len, "ELF has no loadable segment");
		return -EINVAL;
	}
	if (info->entry < info->lo || info->entry >= info->hi) {
		snprintf(
			err, len,
			"PVH entry 0x%x is outside the loaded segments (0x%llx-0x%llx)",
			info->entry, (unsigned long long)info->lo,
			(unsigned long long)info->hi);
		return -EINVAL;
	}
	return 0;
}

static char *gpa_ptr(struct vmm_vm *vm, uint64_t gpa, uint64_t len)
{
	int64_t off = vmm_gpa_to_offset(vm, gpa, len);

	return off < 0 ? NULL : vm->mem.guest + off;
}

int vmm_pvh_load(struct vmm_vm *vm, const void *image, size_t size,
		 const char *cmdline, char *err, size_t len)
{
	const unsigned char *elf = image;
	struct hvm_memmap_table_entry mm[2];
	struct hvm_start_info si = {
		.magic = HVM_START_MAGIC,
		.version = 1,
	};
	struct vmm_elf_info info;
	unsigned int phnum, n = 0;
	size_t clen = strlen(cmdline);
	struct phdr p;
	bool is64;
	int ret;

	ret = vmm_pvh_check(image, size, vm->mem.bytes, &info, err, len);
	if (ret)
		return ret;
	/* Only after the check: a short image has no class byte. */
	is64 = elf[EI_CLASS] == ELFCLASS64;
	if (clen > VMM_CMDLINE_MAX) {
		snprintf(err, len, "--cmdline is %zu bytes, more than %u", clen,
			 VMM_CMDLINE_MAX);
		return -EINVAL;
	}
	phnum = is64 ? ((const Elf64_Ehdr *)image)->e_phnum :
		       ((const Elf32_Ehdr *)image)->e_phnum;
	for (unsigned int i = 0; i < phnum; i++) {
		char *dst;

		if (get_phdr(elf, size, is64, i, &p, err, len))
			return -EINVAL;
		if (p.type != PT_LOAD || !p.memsz)
			continue;
		dst = gpa_ptr(vm, p.paddr, p.memsz);
		if (!dst)
			return -EINVAL;
		memcpy(dst, elf + p.offset, p.filesz);
		memset(dst + p.filesz, 0, p.memsz - p.filesz);
	}

	mm[n++] = (struct hvm_memmap_table_entry){
		.addr = 0, .size = vm->low_bytes, .type = HVM_MEMMAP_TYPE_RAM
	};
	if (vm->high_bytes)
		mm[n++] = (struct hvm_memmap_table_entry){
			.addr = VMM_HIGH_RAM_START,
			.size = vm->high_bytes,
			.type = HVM_MEMMAP_TYPE_RAM,
		};
	si.memmap_paddr = VMM_BOOT_START + sizeof(si);
	si.memmap_entries = n;
	si.cmdline_paddr = VMM_BOOT_START + 0x1000;
	memcpy(gpa_ptr(vm, VMM_BOOT_START, sizeof(si)), &si, sizeof(si));
	memcpy(gpa_ptr(vm, si.memmap_paddr, n * sizeof(mm[0])), mm,
	       n * sizeof(mm[0]));
	memcpy(gpa_ptr(vm, si.cmdline_paddr, clen + 1), cmdline, clen + 1);
	return 0;
}
