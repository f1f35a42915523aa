// SPDX-License-Identifier: MIT
/*
 * The touch guest: each vCPU touches its share of RAM at a stride (one
 * write of `pattern` per stride), first checking `verify` sampled cache
 * lines of the stride for zero, and vCPU 0 reports one line on COM1:
 *
 *   ZVMM-REPORT {"vcpus":N,"stride":S,"reserved_bytes":R,
 *                "touched_bytes":T,"verified_bytes":V,"nonzero_bytes":Z,
 *                "tsc_cycles":C}
 *
 * then writes its exit code to port 0xf4 (0, or GUEST_EXIT_STALE when it
 * saw a non-zero byte). Command line: stride=4K|2M|1G (default 2M),
 * verify=N (default 1), pattern=BYTE (default 0x5a), vcpus=N (added by
 * zvmm; 1 when absent, as under QEMU), order=down (touch from the top of
 * RAM down), fault=triple (a test: triple-fault on purpose), exit=N (a
 * test: exit with N when nothing was wrong). Work is kept small: every
 * instruction may be emulated.
 *
 * Marks, for the zeroing promise (tests/test_tenants.c): mark=N writes N
 * 8-byte marks per stride at pseudo-random offsets instead of the pattern
 * byte (one in each Nth of the block, so they never overlap and never
 * sit only on the lines a host would sample), derived from seed=S;
 * recheck re-reads a vCPU's own marks after its walk and counts the ones
 * lost (marks_lost); probe=S first reads, in every block, the words where
 * a writer with seed S (and this guest's mark=N) put its marks, and
 * counts the non-zero ones
 * (foreign_words): a later tenant that finds an earlier one's marks. Exit
 * code 10 for stale data or foreign words, 12 for lost marks.
 */
#include <stdint.h>

#include "io.h"
#include "pvh.h"

#define GUEST_EXIT_STALE 10
#define GUEST_EXIT_LOST 12
#define MAX_MARKS 64
#define MAX_CPUS 64

extern char guest_end[];

volatile uint32_t guest_ap_go;
static volatile uint32_t cpus_done;

struct result {
	uint64_t touched, verified, nonzero, marks, lost, foreign;
} __attribute__((aligned(64)));

static struct result results[MAX_CPUS];
static uint64_t stride = SZ_2M, verify = 1, nr_cpus = 1;
static uint8_t pattern = 0x5a;
static int down; /* order=down: from the top of RAM to the bottom */
static uint64_t marks, seed = 1, probe; /* mark=N seed=S probe=S */
static int recheck;
static uint64_t exit_code; /* exit=N: a test asks for this exit code */
static uint64_t lo, hi; /* the range the vCPUs share */
static const struct hvm_start_info *info;

/* splitmix64: marks and their offsets from (seed, block, k). */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Mark @k of block @a for seed @s: its address, and its value (never 0). */
static volatile uint64_t *mark_at(uint64_t s, uint64_t a, uint64_t k,
				  uint64_t n, uint64_t *value)
{
	uint64_t h = mix(s * 0x100000001b3ull ^ mix(a + k)), part = stride / n;

	*value = mix(h) | 1;
	return (volatile uint64_t *)(uintptr_t)(a + k * part +
						(h % (part / 8)) * 8);
}

/* Marks of @s in the block at @a: write them, or count those not there. */
static uint64_t marks_do(uint64_t s, uint64_t a, uint64_t n, int write)
{
	uint64_t v, bad = 0;

	for (uint64_t k = 0; k < n; k++) {
		volatile uint64_t *w = mark_at(s, a, k, n, &v);

		if (write)
			*w = v;
		else
			bad += *w != v;
	}
	return bad;
}

/*
 * Non-zero words where seed @probe put its marks: with mark=N, where a
 * writer with mark=N put them; else at the 64 places of MAX_MARKS.
 */
static uint64_t probe_block(uint64_t a)
{
	uint64_t v, n = 0, per = marks ? marks : MAX_MARKS;

	for (uint64_t k = 0; k < per; k++)
		n += *mark_at(probe, a, k, per, &v) != 0;
	return n;
}

/* Checks `verify` lines spread over the block at @a. */
static inline __attribute__((always_inline)) void verify_block(uint64_t a,
							       struct result *r)
{
	for (uint64_t k = 0; k < verify; k++) {
		const volatile uint64_t *l =
			(const volatile uint64_t
				 *)(uintptr_t)(a +
					       (stride / verify * k & ~63ull));

		for (int w = 0; w < 8; w++) {
			uint64_t x = l[w];

			for (; x; x >>= 8)
				r->nonzero += (x & 0xff) != 0;
		}
	}
	r->verified += verify * 64;
}

/*
 * The measured path: checks the block at @a, then writes it. Marks have
 * a block function of their own so that this one costs no instruction
 * more for them (every instruction is emulated here, DESIGN.md 7).
 */
static void touch_block(uint64_t a, struct result *r)
{
	verify_block(a, r);
	*(volatile uint8_t *)(uintptr_t)a = pattern;
	r->touched += stride;
}

/* With marks, the marks are the block's only writes: none of them need
 * land on a line a host samples. */
static void mark_block(uint64_t a, struct result *r)
{
	if (probe)
		r->foreign += probe_block(a);
	verify_block(a, r);
	if (marks) {
		marks_do(seed, a, marks, 1);
		r->marks += marks;
	} else {
		*(volatile uint8_t *)(uintptr_t)a = pattern;
	}
	r->touched += stride;
}

/* Blocks [a, b) in the order asked for, @blk inlined for each. */
static inline __attribute__((always_inline)) void
walk(uint64_t a, uint64_t b, struct result *r,
     void (*blk)(uint64_t, struct result *))
{
	if (down)
		for (uint64_t x = b; x > a; x -= stride)
			blk(x - stride, r);
	else
		for (uint64_t x = a; x < b; x += stride)
			blk(x, r);
}

/*
 * One vCPU's share: each stride-aligned block in [from, to) that is RAM,
 * bottom up, or top down with order=down (so that a host clearing
 * bottom up meets the guest only half way: every fault before that
 * needs a scrub).
 */
static void touch(uint64_t from, uint64_t to, struct result *r, int check)
{
	const struct hvm_memmap_table_entry *mm =
		(const void *)(uintptr_t)info->memmap_paddr;

	for (uint32_t i = 0; i < info->memmap_entries; i++) {
		uint32_t e = down ? info->memmap_entries - 1 - i : i;
		uint64_t a, b;

		if (mm[e].type != HVM_MEMMAP_TYPE_RAM)
			continue;
		a = mm[e].addr > from ? mm[e].addr : from;
		b = mm[e].addr + mm[e].size < to ? mm[e].addr + mm[e].size : to;
		a = (a + stride - 1) & ~(stride - 1);
		b &= ~(stride - 1);
		if (a >= b)
			continue;
		if (check)
			for (uint64_t x = a; x < b; x += stride)
				r->lost += marks_do(seed, x, marks, 0);
		else if (marks || probe)
			walk(a, b, r, mark_block);
		else
			walk(a, b, r, touch_block);
	}
}

void guest_main(const struct hvm_start_info *si, uint32_t cpu);

void guest_main(const struct hvm_start_info *si, uint32_t cpu)
{
	uint64_t t0, share, top = 0, sum[6] = { 0 };
	struct result *me = &results[cpu];

	if (cpu == 0) {
		const struct hvm_memmap_table_entry *mm;
		const char *cmd;

		info = si;
		if (si->magic != HVM_START_MAGIC)
			outl(EXIT_PORT, 11);
		cmd = (const char *)(uintptr_t)si->cmdline_paddr;
		if (arg(cmd, "fault=triple"))
			triple_fault();
		stride = number(arg(cmd, "stride="), SZ_2M);
		if (stride < 4096 || (stride & (stride - 1)))
			stride = SZ_2M;
		verify = number(arg(cmd, "verify="), 1);
		if (verify > stride / 64)
			verify = stride / 64;
		pattern = (uint8_t)number(arg(cmd, "pattern="), 0x5a);
		down = arg(cmd, "order=down") != 0;
		nr_cpus = number(arg(cmd, "vcpus="), 1);
		marks = number(arg(cmd, "mark="), 0);
		if (marks > MAX_MARKS || marks > stride / 64)
			marks = MAX_MARKS < stride / 64 ? MAX_MARKS :
							  stride / 64;
		seed = number(arg(cmd, "seed="), 1);
		probe = number(arg(cmd, "probe="), 0);
		recheck = arg(cmd, "recheck") != 0;
		exit_code = number(arg(cmd, "exit="), 0);
		if (!nr_cpus || nr_cpus > MAX_CPUS)
			nr_cpus = 1;
		mm = (const void *)(uintptr_t)si->memmap_paddr;
		for (uint32_t e = 0; e < si->memmap_entries; e++)
			if (mm[e].type == HVM_MEMMAP_TYPE_RAM &&
			    mm[e].addr + mm[e].size > top)
				top = mm[e].addr + mm[e].size;
		map_ram(top);
		/* Below the image's end: boot structures and this image. */
		lo = ((uint64_t)(uintptr_t)guest_end + stride - 1) &
		     ~(stride - 1);
		hi = top;
		puts_com1("ZVMM-TOUCH-START\n");
		t0 = rdtsc();
		__atomic_store_n(&guest_ap_go, 1, __ATOMIC_RELEASE);
	} else if (cpu >= nr_cpus) {
		return;
	}
	/* Contiguous shares in stride units; the last takes the rest. */
	share = ((hi - lo) / stride / nr_cpus) * stride;
	touch(lo + cpu * share,
	      cpu + 1 == nr_cpus ? hi : lo + (cpu + 1) * share, me, 0);
	/* After the walk: whatever a host did meanwhile, the marks stay. */
	if (recheck && marks)
		touch(lo + cpu * share,
		      cpu + 1 == nr_cpus ? hi : lo + (cpu + 1) * share, me, 1);
	__atomic_fetch_add(&cpus_done, 1, __ATOMIC_ACQ_REL);
	if (cpu != 0)
		return;
	while (__atomic_load_n(&cpus_done, __ATOMIC_ACQUIRE) < nr_cpus)
		__asm__ volatile("pause");
	t0 = rdtsc() - t0;
	for (uint64_t c = 0; c < nr_cpus; c++) {
		sum[0] += results[c].touched;
		sum[1] += results[c].verified;
		sum[2] += results[c].nonzero;
		sum[3] += results[c].marks;
		sum[4] += results[c].lost;
		sum[5] += results[c].foreign;
	}
	puts_com1("ZVMM-REPORT {");
	put_field("vcpus", nr_cpus, 0);
	put_field("stride", stride, 0);
	put_field("reserved_bytes", lo, 0);
	put_field("touched_bytes", sum[0], 0);
	put_field("verified_bytes", sum[1], 0);
	put_field("nonzero_bytes", sum[2], 0);
	if (marks) {
		put_field("marks_written", sum[3], 0);
		if (recheck)
			put_field("marks_lost", sum[4], 0);
	}
	if (probe)
		put_field("foreign_words", sum[5], 0);
	put_field("tsc_cycles", t0, 1);
	puts_com1("}\n");
	outl(EXIT_PORT, sum[2] || sum[5] ? GUEST_EXIT_STALE :
			sum[4]		 ? GUEST_EXIT_LOST :
					   (uint32_t)exit_code);
}
