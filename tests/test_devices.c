// SPDX-License-Identifier: MIT
/*
 * The guest boundary at COM1, without KVM: whatever a guest writes, the
 * line buffer stays within VMM_LINE_MAX, and the report is the first
 * "ZVMM-REPORT {...}" line that fits whole; an over-long one, one that
 * is not a JSON object and a second one are refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../vmm/devices.h"

static struct vmm_vm vm;
static struct vmm_vcpu cpu = { .vm = &vm, .fd = -1 };
static struct vmm_devices d;
static FILE *out;

static void setup(void)
{
	out = fopen("/dev/null", "w");
	cr_assert_not_null(out);
	vmm_devices_init(&d, &vm, out);
}

static void teardown(void)
{
	vmm_devices_fini(&d);
	fclose(out);
}

TestSuite(devices, .init = setup, .fini = teardown);

static void put(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)s[i];

		vmm_devices_pio(&cpu, VMM_COM1, true, &b, 1);
	}
}

static void puts_line(const char *s)
{
	put(s, strlen(s));
}

Test(devices, endless_line_stays_capped)
{
	for (int i = 0; i < (1 << 20); i++)
		put("x", 1);
	cr_assert_eq(d.line_len, VMM_LINE_MAX - 1);
	cr_assert(d.line_over);
	puts_line("\n");
	cr_assert_eq(d.line_len, 0);
	cr_assert(!d.line_over);
	cr_assert(!d.have_report);
}

Test(devices, report_that_fits_is_kept)
{
	uint64_t v;

	puts_line("ZVMM-REPORT {\"nonzero_bytes\":0,\"vcpus\":2}\r\n");
	cr_assert(d.have_report);
	cr_assert_str_eq(d.report, "{\"nonzero_bytes\":0,\"vcpus\":2}");
	cr_assert_eq(vmm_report_u64(d.report, "vcpus", &v), 0);
	cr_assert_eq(v, 2);
}

/*
 * Cut at the cap, this line would still look whole: it is the dropped
 * tail that makes it wrong, so the cap itself must refuse it.
 */
Test(devices, report_longer_than_the_line_is_refused)
{
	static const char head[] =
		"ZVMM-REPORT {\"nonzero_bytes\":0,\"pad\":\"";
	size_t pad = VMM_LINE_MAX - 1 - (sizeof(head) - 1) - 2;

	puts_line(head);
	for (size_t i = 0; i < pad; i++)
		put("x", 1);
	puts_line("\"}");
	cr_assert_eq(d.line_len, VMM_LINE_MAX - 1);
	puts_line(",\"nonzero_bytes\":9}\n");
	cr_assert(!d.have_report);
	/* A good one afterwards is still taken. */
	puts_line("ZVMM-REPORT {\"nonzero_bytes\":0}\n");
	cr_assert(d.have_report);
}

Test(devices, report_not_json_is_refused)
{
	puts_line("ZVMM-REPORT not json\n");
	cr_assert(!d.have_report);
	puts_line("ZVMM-REPORT {\"nonzero_bytes\":0\n");
	cr_assert(!d.have_report);
}

Test(devices, second_report_does_not_replace_the_first)
{
	uint64_t v;

	puts_line("ZVMM-REPORT {\"nonzero_bytes\":0}\n");
	puts_line("ZVMM-REPORT {\"nonzero_bytes\":1}\n");
	cr_assert(d.have_report);
	cr_assert_eq(d.extra_reports, 1);
	cr_assert_eq(vmm_report_u64(d.report, "nonzero_bytes", &v), 0);
	cr_assert_eq(v, 0);
}
