// SPDX-License-Identifier: MIT
/* Feature detection (CPUID, XGETBV) agrees with the kernel's view. */
#include <criterion/criterion.h>
#include <ctype.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdio.h>
#include <string.h>

#include "../arch/arch.h"
#include "../zeroing/backend.h"
#include "helpers.h"

static bool cpuinfo_has(const char *flags, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = flags; (p = strstr(p, name)); p += n)
		if ((p == flags || p[-1] == ' ') &&
		    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

Test(features, agree_with_proc_cpuinfo)
{
	static char line[8192];
	char *flags = NULL;
	uint32_t f = zero_cpu_features();
	FILE *fp = fopen("/proc/cpuinfo", "r");

	if (!fp)
		test_skip(TEST_NEED_TOOL, "no /proc/cpuinfo");
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "flags", 5) ||
		    !strncmp(line, "Features", 8)) {
			flags = strchr(line, ':');
			break;
		}
	fclose(fp);
	if (!flags)
		test_skip(TEST_NEED_TOOL, "/proc/cpuinfo has no flags line");
	for (unsigned int i = 0; i < ARCH_NR_FEATURES; i++) {
		const char *name = arch_feature_names[i];
		bool ours = f & (1u << i);

		/* DC ZVA is not a cpuinfo flag; it is tested on arm64. */
		if (!strcmp(name, "dc_zva"))
			continue;
		cr_expect_eq(ours, cpuinfo_has(flags, name),
			     "feature %s: zvmm says %d, /proc/cpuinfo says %d",
			     name, ours, !ours);
	}
}

/*
 * The name every report gives the CPU: where the CPU has one (x86's
 * CPUID brand string), that name, trimmed and printable, never the
 * "unknown" written for a CPU without one. (Not /proc/cpuinfo's "model
 * name": a paravirtualized kernel may show another, as PVM guests do.)
 */
Test(features, model_name_is_the_cpus)
{
	char cpu[128];
	size_t n;

#if defined(__x86_64__)
	if (__get_cpuid_max(0x80000000, NULL) < 0x80000004)
		test_skip(TEST_NEED_CPU, "CPUID has no brand string");
#else
	test_skip(TEST_NEED_CPU, "the brand string is x86's");
#endif
	arch_cpu_model(cpu, sizeof(cpu));
	n = strlen(cpu);
	cr_assert_gt(n, 0);
	cr_assert_str_neq(cpu, "unknown");
	cr_assert(!isspace((unsigned char)cpu[0]) &&
			  !isspace((unsigned char)cpu[n - 1]),
		  "'%s' is not trimmed", cpu);
	for (size_t i = 0; i < n; i++)
		cr_assert(isprint((unsigned char)cpu[i]), "'%s'", cpu);
}
