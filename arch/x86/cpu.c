// SPDX-License-Identifier: MIT
#include <cpuid.h>
#include <stdio.h>
#include <string.h>

#include "../arch.h"
#include "clear.h"

const char arch_name[] = "x86-64";

const char *const arch_feature_names[ARCH_NR_FEATURES] = {
	"sse2", "avx", "avx2", "avx512f", "erms", "fsrm", "clzero",
};

const struct arch_backend arch_backends[] = {
	{ "rep_stosb", x86_clear_rep_stosb, 0,
	  "REP STOSB (fast strings with ERMS/FSRM)" },
	{ "rep_stosq", x86_clear_rep_stosq, 0, "REP STOSQ" },
	{ "movq", x86_clear_movq, 0, "8 unrolled 64-bit MOVs per cache line" },
	{ "movnti", x86_clear_movnti, ARCH_F_SSE2,
	  "8 non-temporal MOVNTIs per cache line" },
	{ "nt_sse2", x86_clear_nt_sse2, ARCH_F_SSE2,
	  "16-byte non-temporal MOVNTDQ" },
	{ "nt_avx2", x86_clear_nt_avx2, ARCH_F_AVX2,
	  "32-byte non-temporal VMOVNTDQ" },
	{ "nt_avx512", x86_clear_nt_avx512, ARCH_F_AVX512F,
	  "64-byte non-temporal VMOVNTDQ" },
	{ "clzero", x86_clear_clzero, ARCH_F_CLZERO,
	  "AMD CLZERO, one cache line per instruction" },
};

const unsigned int arch_nr_backends =
	sizeof(arch_backends) / sizeof(arch_backends[0]);

/* XCR0 bits: SSE and AVX (YMM) state; opmask, ZMM_Hi256, Hi16_ZMM. */
#define XCR0_YMM 0x06u
#define XCR0_ZMM 0xe0u

static unsigned int xgetbv0(void)
{
	unsigned int lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return lo;
}

uint32_t arch_cpu_features(void)
{
	unsigned int a, b, c, d, max, xmax, line, xcr0 = 0;
	uint32_t f = 0;

	max = __get_cpuid_max(0, NULL);
	if (max < 1)
		return 0;
	__cpuid(1, a, b, c, d);
	if (d & bit_SSE2)
		f |= ARCH_F_SSE2;
	/* The OS must have turned the vector state on (OSXSAVE, XCR0). */
	if (c & bit_OSXSAVE)
		xcr0 = xgetbv0();
	if ((c & bit_AVX) && (xcr0 & XCR0_YMM) == XCR0_YMM)
		f |= ARCH_F_AVX;
	/* CLZERO clears a CLFLUSH-sized line; the backend steps by 64. */
	line = ((b >> 8) & 0xff) * 8;

	if (max >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		if ((b & bit_AVX2) && (f & ARCH_F_AVX))
			f |= ARCH_F_AVX2;
		if ((b & bit_AVX512F) &&
		    (xcr0 & (XCR0_YMM | XCR0_ZMM)) == (XCR0_YMM | XCR0_ZMM))
			f |= ARCH_F_AVX512F;
		if (b & (1u << 9))
			f |= ARCH_F_ERMS;
		if (d & (1u << 4))
			f |= ARCH_F_FSRM;
	}
	xmax = __get_cpuid_max(0x80000000, NULL);
	if (xmax >= 0x80000008) {
		__cpuid(0x80000008, a, b, c, d);
		if ((b & 1u) && line == 64)
			f |= ARCH_F_CLZERO;
	}
	return f;
}

void arch_cpu_model(char *buf, size_t len)
{
	unsigned int regs[12];
	char name[49];
	char *s, *e;

	if (__get_cpuid_max(0x80000000, NULL) < 0x80000004) {
		snprintf(buf, len, "unknown");
		return;
	}
	for (unsigned int i = 0; i < 3; i++)
		__cpuid(0x80000002 + i, regs[4 * i], regs[4 * i + 1],
			regs[4 * i + 2], regs[4 * i + 3]);
	memcpy(name, regs, 48);
	name[48] = '\0';
	for (s = name; *s == ' '; s++)
		;
	for (e = s + strlen(s); e > s && e[-1] == ' '; e--)
		;
	*e = '\0';
	snprintf(buf, len, "%s", *s ? s : "unknown");
}

void arch_cpu_id(char *buf, size_t len)
{
	unsigned int a, b, c, d, family, model;
	char vendor[13];

	if (__get_cpuid_max(0, NULL) < 1) {
		snprintf(buf, len, "unknown");
		return;
	}
	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	__cpuid(1, a, b, c, d);
	/* The extended fields, as the SDM and APM define them. */
	family = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	if (family >= 6)
		model |= ((a >> 16) & 0xf) << 4;
	snprintf(buf, len, "%s family 0x%x model 0x%x stepping %u", vendor,
		 family, model, a & 0xf);
}
