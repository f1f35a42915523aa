// SPDX-License-Identifier: MIT
/* Feature detection (CPUID, XGETBV) agrees with the kernel's view. */
#include <criterion/criterion.h>
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

Test(features, model_name_is_set)
{
	char cpu[64];

	arch_cpu_model(cpu, sizeof(cpu));
	cr_assert(cpu[0] != '\0');
}
