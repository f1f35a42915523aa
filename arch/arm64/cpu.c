// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "../arch.h"
#include "clear.h"

const char arch_name[] = "arm64";

const char *const arch_feature_names[ARCH_NR_FEATURES] = {
	"dc_zva",
};

/*
 * dc_zva needs no feature: where DCZID_EL0 prohibits DC ZVA it clears
 * with STP stores, so asking for it never faults.
 */
const struct arch_backend arch_backends[] = {
	{ "dc_zva", arm64_clear_dc_zva, 0,
	  "DC ZVA by DCZID_EL0 block (STP where prohibited)" },
	{ "stnp", arm64_clear_stnp, 0, "non-temporal STNP pairs" },
};

const unsigned int arch_nr_backends =
	sizeof(arch_backends) / sizeof(arch_backends[0]);

uint32_t arch_cpu_features(void)
{
	return arm64_dc_zva_block() ? ARCH_F_DC_ZVA : 0;
}

void arch_cpu_model(char *buf, size_t len)
{
	char line[256];
	unsigned int impl = 0, part = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "CPU implementer : %x", &impl);
			sscanf(line, "CPU part : %x", &part);
		}
		fclose(f);
	}
	if (impl)
		snprintf(buf, len, "arm64 implementer 0x%02x part 0x%03x", impl,
			 part);
	else
		snprintf(buf, len, "unknown");
}

void arch_cpu_id(char *buf, size_t len)
{
	unsigned int impl = 0, var = 0, part = 0, rev = 0;
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "CPU implementer : %x", &impl);
			sscanf(line, "CPU variant : %x", &var);
			sscanf(line, "CPU part : %x", &part);
			sscanf(line, "CPU revision : %u", &rev);
		}
		fclose(f);
	}
	if (impl)
		snprintf(
			buf, len,
			"implementer 0x%02x variant 0x%x part 0x%03x revision %u",
			impl, var, part, rev);
	else
		snprintf(buf, len, "unknown");
}
