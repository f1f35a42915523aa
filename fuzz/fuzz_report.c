// SPDX-License-Identifier: MIT
/*
 * The guest's report as the VMM reads it. The input is what the guest
 * writes to COM1, sent byte by byte through vmm_devices_pio(): the first
 * line that starts with "ZVMM-REPORT " is kept (capped at VMM_LINE_MAX),
 * then every key cmd_run.c asks for goes through vmm_report_u64(), as
 * does the input itself. A number it returns must be the whole unsigned
 * JSON number after the key; one that does not fit is -ERANGE.
 */
#include <errno.h>

#include "../vmm/devices.h"
#include "fuzz.h"

static const char *const keys[] = { "vcpus",	      "stride",
				    "reserved_bytes", "touched_bytes",
				    "verified_bytes", "nonzero_bytes",
				    "tsc_cycles" };

static void check_key(const char *json, const char *key)
{
	char pat[64];
	const char *p;
	unsigned __int128 want = 0;
	uint64_t v = 0;
	int ret = vmm_report_u64(json, key, &v);

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (!p) {
		fuzz_assert(ret == -ENOENT, "%s: absent, got %d", key, ret);
		return;
	}
	for (p += strlen(pat); *p == ' '; p++)
		;
	if (*p < '0' || *p > '9') {
		fuzz_assert(ret == -EINVAL, "%s: no number, got %d", key, ret);
		return;
	}
	for (; *p >= '0' && *p <= '9'; p++)
		if (want <= UINT64_MAX)
			want = want * 10 + (unsigned int)(*p - '0');
	if (*p && !strchr(",}] \t\r\n", *p)) {
		fuzz_assert(
			ret,
			"%s: %llu taken from a number that goes on with '%c'",
			key, (unsigned long long)v, *p);
		return;
	}
	if (want > UINT64_MAX) {
		fuzz_assert(ret == -ERANGE, "%s: too large, got %d", key, ret);
		return;
	}
	fuzz_assert(!ret && v == want, "%s: got %d/%llu, want %llu", key, ret,
		    (unsigned long long)v, (unsigned long long)want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vmm_vm vm;
	static FILE *null;
	struct vmm_vcpu cpu = { .vm = &vm, .fd = -1 };
	struct vmm_devices *d = malloc(sizeof(*d));
	char *s = fuzz_cstr(data, size);

	if (!null)
		null = fopen("/dev/null", "w");
	if (!d || !null)
		abort();
	vmm_devices_init(d, &vm, null);
	for (size_t i = 0; i < size; i++) {
		uint8_t b = data[i];

		vmm_devices_pio(&cpu, VMM_COM1, true, &b, 1);
	}
	fuzz_assert(d->line_len < VMM_LINE_MAX, "line_len %zu", d->line_len);
	if (d->have_report) {
		fuzz_assert(memchr(d->report, '\0', sizeof(d->report)),
			    "report not terminated");
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			check_key(d->report, keys[i]);
	}
	vmm_devices_fini(d);
	free(d);

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		check_key(s, keys[i]);
	free(s);
	return 0;
}
