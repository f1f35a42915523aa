// SPDX-License-Identifier: MIT
/*
 * The PVH/ELF loader with the input as the guest image: vmm_pvh_check()
 * at several RAM sizes (below 3 GiB and across the 3-4 GiB hole), then
 * vmm_pvh_load() into a plain 4 MiB buffer standing for guest RAM: no
 * /dev/kvm, only the fields of struct vmm_vm the loader reads. ASan sees
 * any read past the image or write past the RAM.
 */
#include <errno.h>

#include "../guest/pvh.h"
#include "../vmm/pvh.h"
#include "fuzz.h"

#define RAM_BYTES (4ull << 20)
#define CMDLINE "stride=2M verify=1"

static const uint64_t rams[] = { 2ull << 20, RAM_BYTES, 3ull << 30,
				 6ull << 30 };

static struct vmm_vm *vm;

static struct vmm_vm *make_vm(void)
{
	struct vmm_vm *v = calloc(1, sizeof(*v));

	if (!v)
		abort();
	v->mem.bytes = RAM_BYTES;
	v->mem.guest = malloc(RAM_BYTES);
	if (!v->mem.guest)
		abort();
	v->kvm_fd = v->vm_fd = -1;
	v->low_bytes = RAM_BYTES;
	return v;
}

static bool check(const uint8_t *data, size_t size, uint64_t ram,
		  struct vmm_elf_info *info)
{
	char err[512] = "";
	uint64_t top = ram < VMM_LOW_RAM_END ?
			       ram :
			       VMM_HIGH_RAM_START + ram - VMM_LOW_RAM_END;
	int ret = vmm_pvh_check(data, size, ram, info, err, sizeof(err));

	if (ret) {
		fuzz_assert(ret == -EINVAL && err[0], "check %d '%s'", ret,
			    err);
		return false;
	}
	fuzz_assert(info->nr_load, "no segment");
	fuzz_assert(info->lo >= VMM_BOOT_END && info->lo < info->hi &&
			    info->hi <= top,
		    "segments 0x%llx-0x%llx, RAM up to 0x%llx",
		    (unsigned long long)info->lo, (unsigned long long)info->hi,
		    (unsigned long long)top);
	fuzz_assert(info->entry >= info->lo && info->entry < info->hi,
		    "entry 0x%x", info->entry);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmm_elf_info info;
	struct hvm_start_info si;
	struct hvm_memmap_table_entry mm;
	bool ok = false, fits = false;
	char err[512] = "";
	int ret;

	if (!vm)
		vm = make_vm();
	for (unsigned int i = 0; i < sizeof(rams) / sizeof(rams[0]); i++) {
		bool now = check(data, size, rams[i], &info);

		/* More RAM never refuses an image that fits in less. */
		fuzz_assert(now || !ok, "fits in %llu bytes, not in %llu",
			    (unsigned long long)rams[i - 1],
			    (unsigned long long)rams[i]);
		ok = now;
		if (rams[i] == RAM_BYTES)
			fits = now;
	}

	ret = vmm_pvh_load(vm, data, size, CMDLINE, err, sizeof(err));
	fuzz_assert(ret == (fits ? 0 : -EINVAL), "load %d, check says %d: %s",
		    ret, fits, err);
	if (ret)
		return 0;
	memcpy(&si, vm->mem.guest + VMM_BOOT_START, sizeof(si));
	fuzz_assert(si.magic == HVM_START_MAGIC && si.version == 1 &&
			    si.memmap_entries == 1,
		    "start info");
	memcpy(&mm, vm->mem.guest + si.memmap_paddr, sizeof(mm));
	fuzz_assert(mm.addr == 0 && mm.size == RAM_BYTES &&
			    mm.type == HVM_MEMMAP_TYPE_RAM,
		    "memory map");
	fuzz_assert(!strcmp(vm->mem.guest + si.cmdline_paddr, CMDLINE),
		    "command line");
	return 0;
}
