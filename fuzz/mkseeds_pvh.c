// SPDX-License-Identifier: MIT
/*
 * Seeds for fuzz_pvh from a real PVH guest (build/guest/touch.elf):
 *
 *   mkseeds-pvh GUEST.elf DIR
 *
 * writes compact copies (headers, then each segment's bytes, no section
 * headers or page padding: a few KB) as ELF64 and ELF32, with the PVH
 * note as it is, with an 8-byte entry after another note, with the wrong
 * type or owner, and cut short in the program headers or the segments.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../guest/pvh.h"

#define MAX_SEGS 16

struct seg {
	uint32_t type, flags;
	uint64_t vaddr, paddr, memsz, align;
	const unsigned char *data;
	size_t filesz;
};

struct variant {
	const char *name;
	bool is64;
	bool note8; /* 8-byte entry, after a GNU note */
	uint32_t note_type;
	const char *owner;
	size_t cut; /* 0: whole; else keep this many bytes */
	bool cut_in_phdrs;
};

static struct seg segs[MAX_SEGS];
static unsigned int nr_segs;
static uint32_t entry;

static void put_note(unsigned char **p, const char *owner, uint32_t type,
		     const void *desc, uint32_t descsz)
{
	uint32_t hdr[3] = { 4, descsz, type };

	memcpy(*p, hdr, sizeof(hdr));
	memcpy(*p + 12, owner, 4);
	memcpy(*p + 16, desc, descsz);
	*p += 16 + ((descsz + 3) & ~3u);
}

/* The PT_NOTE bytes of a variant: a PVH note, maybe after another. */
static size_t make_notes(const struct variant *v, unsigned char *buf)
{
	unsigned char *p = buf;
	uint64_t e64 = entry;

	if (v->note8) {
		put_note(&p, "GNU", NT_GNU_BUILD_ID, "zvmm-seed-id", 12);
		put_note(&p, v->owner, v->note_type, &e64, 8);
	} else {
		put_note(&p, v->owner, v->note_type, &entry, 4);
	}
	return (size_t)(p - buf);
}

static int write_variant(const char *dir, const struct variant *v)
{
	size_t eh = v->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t ph = v->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t off = eh + nr_segs * ph, size = off, notes_len;
	unsigned char notes[64], *img;
	char path[4096];
	FILE *f;

	notes_len = make_notes(v, notes);
	for (unsigned int i = 0; i < nr_segs; i++)
		size += segs[i].type == PT_NOTE ? notes_len : segs[i].filesz;
	img = calloc(1, size);
	if (!img)
		return -ENOMEM;
	memcpy(img, ELFMAG, SELFMAG);
	img[EI_CLASS] = v->is64 ? ELFCLASS64 : ELFCLASS32;
	img[EI_DATA] = ELFDATA2LSB;
	img[EI_VERSION] = EV_CURRENT;
	if (v->is64) {
		Elf64_Ehdr h = { .e_type = ET_EXEC,
				 .e_machine = EM_X86_64,
				 .e_version = EV_CURRENT,
				 .e_entry = entry,
				 .e_phoff = eh,
				 .e_ehsize = (uint16_t)eh,
				 .e_phentsize = (uint16_t)ph,
				 .e_phnum = (uint16_t)nr_segs };

		memcpy(h.e_ident, img, EI_NIDENT);
		memcpy(img, &h, sizeof(h));
	} else {
		Elf32_Ehdr h = { .e_type = ET_EXEC,
				 .e_machine = EM_386,
				 .e_version = EV_CURRENT,
				 .e_entry = entry,
				 .e_phoff = (uint32_t)eh,
				 .e_ehsize = (uint16_t)eh,
				 .e_phentsize = (uint16_t)ph,
				 .e_phnum = (uint16_t)nr_segs };

		memcpy(h.e_ident, img, EI_NIDENT);
		memcpy(img, &h, sizeof(h));
	}
	for (unsigned int i = 0; i < nr_segs; i++) {
		const struct seg *s = &segs[i];
		bool note = s->type == PT_NOTE;
		size_t filesz = note ? notes_len : s->filesz;
		unsigned char *at = img + eh + i * ph;

		if (v->is64) {
			Elf64_Phdr p = { s->type,
					 s->flags,
					 off,
					 s->vaddr,
					 s->paddr,
					 filesz,
					 note ? filesz : s->memsz,
					 s->align };

			memcpy(at, &p, sizeof(p));
		} else {
			Elf32_Phdr p = { s->type,
					 (uint32_t)off,
					 (uint32_t)s->vaddr,
					 (uint32_t)s->paddr,
					 (uint32_t)filesz,
					 (uint32_t)(note ? filesz : s->memsz),
					 s->flags,
					 (uint32_t)s->align };

			memcpy(at, &p, sizeof(p));
		}
		memcpy(img + off, note ? notes : s->data, filesz);
		off += filesz;
	}
	if (v->cut_in_phdrs)
		size = eh + ph + ph / 2;
	else if (v->cut && v->cut < size)
		size = v->cut;
	snprintf(path, sizeof(path), "%s/%s", dir, v->name);
	f = fopen(path, "wb");
	if (!f || fwrite(img, 1, size, f) != size || fclose(f)) {
		fprintf(stderr, "mkseeds-pvh: cannot write %s\n", path);
		free(img);
		return -EIO;
	}
	free(img);
	return 0;
}

/* Reads the ELF64 guest's segments and its PVH entry. */
static int read_guest(const unsigned char *elf, size_t size)
{
	Elf64_Ehdr h;

	if (size < sizeof(h) || memcmp(elf, ELFMAG, SELFMAG) ||
	    elf[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	memcpy(&h, elf, sizeof(h));
	if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phnum > MAX_SEGS ||
	    h.e_phoff > size ||
	    size - h.e_phoff < h.e_phnum * sizeof(Elf64_Phdr))
		return -EINVAL;
	entry = (uint32_t)h.e_entry;
	for (unsigned int i = 0; i < h.e_phnum; i++) {
		Elf64_Phdr p;

		memcpy(&p, elf + h.e_phoff + i * sizeof(p), sizeof(p));
		if (p.p_type != PT_LOAD && p.p_type != PT_NOTE)
			continue;
		if (p.p_offset > size || size - p.p_offset < p.p_filesz)
			return -EINVAL;
		segs[nr_segs++] = (struct seg){
			.type = p.p_type,
			.flags = p.p_flags,
			.vaddr = p.p_vaddr,
			.paddr = p.p_paddr,
			.memsz = p.p_memsz,
			.align = p.p_align,
			.data = elf + p.p_offset,
			.filesz = p.p_filesz,
		};
		if (p.p_type == PT_NOTE && p.p_filesz >= 20)
			memcpy(&entry, elf + p.p_offset + 16, 4);
	}
	return nr_segs ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
#define PVH .note_type = XEN_ELFNOTE_PHYS32_ENTRY, .owner = "Xen"
	static const struct variant variants[] = {
		{ "touch64.elf", .is64 = true, PVH },
		{ "touch32.elf", PVH },
		{ "touch64-note8.elf", .is64 = true, .note8 = true, PVH },
		{ "touch32-note8.elf", .note8 = true, PVH },
		{ "touch64-note-type17.elf", .is64 = true, .note_type = 17,
		  .owner = "Xen" },
		{ "touch64-note-owner.elf", .is64 = true,
		  .note_type = XEN_ELFNOTE_PHYS32_ENTRY, .owner = "Xem" },
		{ "touch64-cut-phdrs.elf", .is64 = true, .cut_in_phdrs = true,
		  PVH },
		{ "touch64-cut-data.elf", .is64 = true, .cut = 1024, PVH },
		{ "touch32-cut-data.elf", .cut = 700, PVH },
	};
#undef PVH
	unsigned char *elf;
	long size;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: mkseeds-pvh GUEST.elf DIR\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "mkseeds-pvh: cannot read %s\n", argv[1]);
		return 1;
	}
	elf = malloc((size_t)size);
	if (!elf || fread(elf, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "mkseeds-pvh: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	if (read_guest(elf, (size_t)size)) {
		fprintf(stderr,
			"mkseeds-pvh: %s is not an x86-64 ELF with segments\n",
			argv[1]);
		return 1;
	}
	for (unsigned int i = 0; i < sizeof(variants) / sizeof(variants[0]);
	     i++)
		if (write_variant(argv[2], &variants[i]))
			return 1;
	free(elf);
	return 0;
}
