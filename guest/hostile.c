// SPDX-License-Identifier: MIT
/*
 * The hostile guest: what a broken or malicious guest may do to zvmm at
 * the guest boundary, one behaviour per run, chosen on the command line
 * (tests/test_hostile.c runs each and checks how zvmm ends it):
 *
 *   mode=ports          every I/O port but the exit port, written and
 *                       read with 1, 2 and 4 bytes, values 0, all ones
 *                       and a pattern; then exit 0
 *   mode=line len=N     N bytes on COM1 without a newline; then exit 0
 *   mode=flood len=N    N bytes of short lines on COM1; then exit 0
 *   mode=report-long len=N   a report line of N bytes; exit 0
 *   mode=report-junk    a report line that is not JSON; exit 0
 *   mode=report-repeat  two reports (nonzero_bytes 0, then 1); exit 0
 *   mode=mmio           loads and stores of every width outside RAM: in
 *                       the first GiB above RAM, the 3-4 GiB hole (LAPIC
 *                       and IOAPIC pages too) and above 4 GiB; exit 0 if
 *                       every load read all ones, else 12
 *   mode=triple         vCPUs 1.. write RAM top down (demand faults) while
 *                       vCPU 0 triple-faults once they are under way
 *   mode=spin           spins forever, interrupts off (--timeout ends it)
 *
 * Built like the touch guest (entry.S, touch.ld); N takes K/M/G.
 */
#include <stdint.h>

#include "io.h"
#include "pvh.h"

#define MAX_CPUS 64
#define GUEST_EXIT_MMIO 12

volatile uint32_t guest_ap_go;
static volatile uint64_t touched; /* pages written in mode=triple */
static const struct hvm_start_info *info;
static uint64_t ram_top;

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void done(uint32_t code)
{
	outl(EXIT_PORT, code);
	for (;;)
		__asm__ volatile("cli; hlt");
}

static void ports(void)
{
	static const uint32_t vals[] = { 0, 0xffffffff, 0x5aa5c33c };

	for (uint32_t p = 0; p < 0x10000; p++) {
		uint32_t v = vals[p % 3];

		if (p >= EXIT_PORT && p < EXIT_PORT + 4)
			continue;
		outb((uint16_t)p, (uint8_t)v);
		outw((uint16_t)p, (uint16_t)v);
		outl((uint16_t)p, v);
		(void)inb((uint16_t)p);
		(void)inw((uint16_t)p);
		(void)inl((uint16_t)p);
	}
	done(0);
}

static void serial(uint64_t len, int lines)
{
	for (uint64_t i = 0; i < len; i++)
		outb(COM1, lines && i % 64 == 63 ? '\n' : 'A' + i % 26);
	if (lines)
		outb(COM1, '\n');
	done(0);
}

static void report_long(uint64_t len)
{
	puts_com1("ZVMM-REPORT {\"nonzero_bytes\":0,\"pad\":\"");
	for (uint64_t i = 0; i < len; i++)
		outb(COM1, 'x');
	puts_com1("\"}\n");
	done(0);
}

/* Loads of every width at @a must read all ones; stores are dropped. */
static int probe(uint64_t a)
{
	volatile uint8_t *b = (volatile uint8_t *)(uintptr_t)a;
	volatile uint16_t *w = (volatile uint16_t *)(uintptr_t)(a + 8);
	volatile uint32_t *l = (volatile uint32_t *)(uintptr_t)(a + 16);
	volatile uint64_t *q = (volatile uint64_t *)(uintptr_t)(a + 24);
	int bad = 0;

	*b = 0x5a;
	*w = 0x5a5a;
	*l = 0x5a5a5a5a;
	*q = 0x5a5a5a5a5a5a5a5aull;
	bad |= *b != 0xff;
	bad |= *w != 0xffff;
	bad |= *l != 0xffffffff;
	bad |= *q != ~0ull;
	return bad;
}

static void mmio(void)
{
	int bad = 0;

	/* Above RAM in the first GiB, when RAM ends below 1 GiB. */
	if (ram_top + SZ_2M <= SZ_1G)
		bad |= probe(ram_top + 4096);
	map_gib(3); /* the 3-4 GiB hole, not RAM */
	flush_tlb();
	bad |= probe(0xc0000000);
	bad |= probe(0xfec00000); /* IOAPIC */
	bad |= probe(0xfee00000); /* LAPIC */
	bad |= probe(0xffffffc0); /* the last bytes below 4 GiB */
	if (ram_top <= 62 * SZ_1G) {
		uint64_t g = ram_top <= 4 * SZ_1G ? 4 : ram_top / SZ_1G + 1;

		map_gib(g);
		flush_tlb();
		bad |= probe(g * SZ_1G + 4096);
	}
	done(bad ? GUEST_EXIT_MMIO : 0);
}

/* The APs of mode=triple: write every 2 MiB of RAM, top down, forever. */
static void writer(void)
{
	for (;;)
		for (uint64_t a = ram_top - SZ_2M; a >= 2 * SZ_2M; a -= SZ_2M) {
			*(volatile uint8_t *)(uintptr_t)a = 0x5a;
			__atomic_fetch_add(&touched, 1, __ATOMIC_RELAXED);
		}
}

void guest_main(const struct hvm_start_info *si, uint32_t cpu);

void guest_main(const struct hvm_start_info *si, uint32_t cpu)
{
	const struct hvm_memmap_table_entry *mm;
	const char *cmd;
	uint64_t len;

	if (cpu != 0) {
		writer();
		return;
	}
	info = si;
	cmd = (const char *)(uintptr_t)si->cmdline_paddr;
	mm = (const void *)(uintptr_t)si->memmap_paddr;
	for (uint32_t e = 0; e < si->memmap_entries; e++)
		if (mm[e].type == HVM_MEMMAP_TYPE_RAM &&
		    mm[e].addr + mm[e].size > ram_top)
			ram_top = mm[e].addr + mm[e].size;
	map_ram(ram_top);
	len = number(arg(cmd, "len="), 1 << 20);
	if (arg(cmd, "mode=ports"))
		ports();
	if (arg(cmd, "mode=line"))
		serial(len, 0);
	if (arg(cmd, "mode=flood"))
		serial(len, 1);
	if (arg(cmd, "mode=report-long"))
		report_long(len);
	if (arg(cmd, "mode=report-junk")) {
		puts_com1("ZVMM-REPORT this is not json\n");
		done(0);
	}
	if (arg(cmd, "mode=report-repeat")) {
		puts_com1("ZVMM-REPORT {\"nonzero_bytes\":0}\n");
		puts_com1("ZVMM-REPORT {\"nonzero_bytes\":1}\n");
		done(0);
	}
	if (arg(cmd, "mode=mmio"))
		mmio();
	if (arg(cmd, "mode=triple")) {
		__atomic_store_n(&guest_ap_go, 1, __ATOMIC_RELEASE);
		/* Fault only once the writers wait on zvmm. */
		while (__atomic_load_n(&touched, __ATOMIC_RELAXED) < 8)
			__asm__ volatile("pause");
		triple_fault();
	}
	if (arg(cmd, "mode=spin"))
		for (;;)
			__asm__ volatile("pause");
	puts_com1("hostile: no mode= on the command line\n");
	done(2);
}
