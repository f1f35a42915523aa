/* SPDX-License-Identifier: MIT */
/*
 * What the guests built on entry.S share: port I/O, COM1 output, the
 * command line, and mapping RAM above the first GiB. Freestanding.
 */
#ifndef ZVMM_GUEST_IO_H
#define ZVMM_GUEST_IO_H

#include <stdint.h>

#define COM1 0x3f8
#define EXIT_PORT 0xf4
#define SZ_2M (2ull << 20)
#define SZ_1G (1ull << 30)

extern uint64_t guest_pml4[], guest_pdpt[], guest_pd[];

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint64_t rdtsc(void)
{
	uint32_t a, d;

	__asm__ volatile("rdtsc" : "=a"(a), "=d"(d));
	return (uint64_t)d << 32 | a;
}

static inline void puts_com1(const char *s)
{
	while (*s)
		outb(COM1, (uint8_t)*s++);
}

static inline void put_u64(uint64_t v)
{
	char buf[21];
	int i = 20;

	buf[i] = '\0';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	puts_com1(buf + i);
}

static inline void put_field(const char *name, uint64_t v, int last)
{
	puts_com1("\"");
	puts_com1(name);
	puts_com1("\":");
	put_u64(v);
	if (!last)
		puts_com1(",");
}

/* "name=" at the start of a word of the command line: its value. */
static inline const char *arg(const char *cmd, const char *name)
{
	for (const char *p = cmd; p && *p; p++) {
		const char *a = p, *b = name;

		if (p != cmd && p[-1] != ' ')
			continue;
		while (*b && *a == *b)
			a++, b++;
		if (!*b)
			return a;
	}
	return 0;
}

/* A number with an optional K, M or G suffix; 0x for hex. */
static inline uint64_t number(const char *s, uint64_t dflt)
{
	uint64_t v = 0, base = 10;
	int digits = 0;

	if (!s)
		return dflt;
	if (s[0] == '0' && s[1] == 'x') {
		base = 16;
		s += 2;
	}
	for (;; s++, digits++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else
			break;
		v = v * base + d;
	}
	if (!digits)
		return dflt;
	if (*s == 'K')
		v <<= 10;
	else if (*s == 'M')
		v <<= 20;
	else if (*s == 'G')
		v <<= 30;
	return v;
}

static inline void flush_tlb(void)
{
	__asm__ volatile("mov %%cr3, %%rax; mov %%rax, %%cr3" ::
				 : "rax", "memory");
}

/* Identity-maps GiB @g (below 64) with 2 MiB pages; no TLB flush. */
static inline void map_gib(uint64_t g)
{
	uint64_t *pd = guest_pd + g * 512;

	for (uint64_t i = 0; i < 512; i++)
		pd[i] = (g * SZ_1G + i * SZ_2M) | 0x83;
	guest_pdpt[g] = (uint64_t)(uintptr_t)pd | 3;
}

/* Identity-maps [1 GiB, top) with 2 MiB pages; entry.S did the first. */
static inline void map_ram(uint64_t top)
{
	uint64_t gib = (top + SZ_1G - 1) / SZ_1G;

	if (gib > 64)
		gib = 64;
	for (uint64_t g = 1; g < gib; g++)
		map_gib(g);
	flush_tlb();
}

/* A zero-limit IDT and a breakpoint: the CPU shuts down. */
static inline void triple_fault(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) idt = { 0, 0 };

	__asm__ volatile("lidt %0; int3" : : "m"(idt));
}

#endif
