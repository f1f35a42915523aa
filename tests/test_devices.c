// SPDX-License-Identifier: MIT
/*
 * The guest boundary at COM1, without KVM: whatever a guest writes, the
 * line buffer stays within VMM_LINE_MAX, and the report is the first
 * "ZVMM-REPORT {...}" line that fits whole; an over-long one, one that
 * is not a JSON object and a second one are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
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

/* Only whole JSON objects are reports, as json-c's strict tokener reads. */
Test(devices, report_must_parse_as_one_object)
{
	static const char *const bad[] = {
		"{not json}",  "{\"a\":1,}",	   "{\"a\":1}{\"b\":2}",
		"{\"a\":1} }", "{\"a\":05}",	   "{\"a\":1 /* c */}",
		"[{\"a\":1}]", "{\"a\":\"\xff\"}", "{\"a\":1-2}",
	};
	char line[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "ZVMM-REPORT %s\n", bad[i]);
		puts_line(line);
		cr_assert(!d.have_report, "%s taken", bad[i]);
	}
	puts_line("ZVMM-REPORT { \"a\" : 1 , \"b\":[] }  \r\n");
	cr_assert(d.have_report);
	cr_assert_str_eq(d.report, "{ \"a\" : 1 , \"b\":[] }");
}

static void u64_is(const char *json, const char *key, int ret, uint64_t want)
{
	uint64_t v = 0;
	int got = vmm_report_u64(json, key, &v);

	cr_assert_eq(got, ret, "%s in %s: %d, want %d", key, json, got, ret);
	if (!ret)
		cr_assert_eq(v, want, "%s in %s: %llu, want %llu", key, json,
			     (unsigned long long)v, (unsigned long long)want);
}

/*
 * The old strstr() reading took 5 from the first two: the key's name
 * closing another member's name after an escaped quote.
 */
Test(devices, key_inside_a_string_is_no_member)
{
	u64_is("{\"x\\\"touched_bytes\":5,\"touched_bytes\":7}",
	       "touched_bytes", 0, 7);
	u64_is("{\"x\\\"touched_bytes\":5}", "touched_bytes", -ENOENT, 0);
	u64_is("{\"note\":\"\\\"touched_bytes\\\": 5\", \"touched_bytes\": 7}",
	       "touched_bytes", 0, 7);
	u64_is("{\"note\":\"touched_bytes\"}", "touched_bytes", -ENOENT, 0);
}

Test(devices, nested_members_are_not_top_level)
{
	u64_is("{\"a\":{\"vcpus\":5}}", "vcpus", -ENOENT, 0);
	u64_is("{\"a\":[{\"vcpus\":5}],\"vcpus\":7}", "vcpus", 0, 7);
	u64_is("{\"a\":{\"vcpus\":5},\"vcpus\":7,\"b\":{\"vcpus\":9}}", "vcpus",
	       0, 7);
	u64_is("{\"vcpus\":{\"vcpus\":5}}", "vcpus", -EINVAL, 0);
	u64_is("{\"vcpus\":[5]}", "vcpus", -EINVAL, 0);
}

/*
 * Of duplicate members the last one counts, on purpose: it is what json-c
 * keeps, and what Python and JavaScript read too (strstr() took the
 * first).
 */
Test(devices, duplicate_keys_the_last_counts)
{
	u64_is("{\"nonzero_bytes\":1,\"nonzero_bytes\":0}", "nonzero_bytes", 0,
	       0);
	u64_is("{\"nonzero_bytes\":0,\"nonzero_bytes\":\"x\"}", "nonzero_bytes",
	       -EINVAL, 0);
	u64_is("{\"nonzero_bytes\":-1,\"nonzero_bytes\":3}", "nonzero_bytes", 0,
	       3);
}

Test(devices, sixty_four_bits_and_no_more)
{
	u64_is("{\"k\":0}", "k", 0, 0);
	u64_is("{\"k\":9223372036854775807}", "k", 0, INT64_MAX);
	u64_is("{\"k\":9223372036854775808}", "k", 0, (uint64_t)INT64_MAX + 1);
	u64_is("{\"k\":18446744073709551615}", "k", 0, UINT64_MAX);
	u64_is("{\"k\":18446744073709551616}", "k", -ERANGE, 0);
	u64_is("{\"k\":99999999999999999999999999}", "k", -ERANGE, 0);
	/* json-c reads both as UINT64_MAX: which one is the key's? */
	u64_is("{\"k\":18446744073709551615,\"x\":18446744073709551616}", "k",
	       0, UINT64_MAX);
	u64_is("{\"x\":18446744073709551616,\"k\":18446744073709551615}", "k",
	       0, UINT64_MAX);
	u64_is("{\"k\":18446744073709551616,\"k\":18446744073709551615}", "k",
	       0, UINT64_MAX);
	u64_is("{\"k\":18446744073709551615,\"k\":18446744073709551616}", "k",
	       -ERANGE, 0);
	u64_is("{\"x\":[1e999,99999999999999999999],\"k\":18446744073709551615}",
	       "k", 0, UINT64_MAX);
	u64_is("{\"x\":\"\xc3\xa9\",\"k\":18446744073709551616}", "k", -ERANGE,
	       0);
}

Test(devices, negatives_fractions_and_others_are_no_counts)
{
	static const char *const bad[] = {
		"-1",	 "-9223372036854775809",
		"5.5",	 "5.0",
		"5e3",	 "5E3",
		"-5.5",	 "1e999",
		"\"5\"", "true",
		"null",	 "{}",
		"[]",
	};
	char json[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "{\"k\": %s}", bad[i]);
		u64_is(json, "k", -EINVAL, 0);
	}
	/* -0 is the integer 0 to json-c, as to JSON. */
	u64_is("{\"k\":-0}", "k", 0, 0);
}

Test(devices, only_one_bounded_object_is_read)
{
	static char big[VMM_LINE_MAX + 8];
	size_t n;

	u64_is("", "k", -EINVAL, 0);
	u64_is("{\"k\":1", "k", -EINVAL, 0);
	u64_is("{\"k\":1} x", "k", -EINVAL, 0);
	u64_is("[{\"k\":1}]", "k", -EINVAL, 0);
	u64_is("{\"k\":01}", "k", -EINVAL, 0);
	u64_is("{}", "k", -ENOENT, 0);
	n = (size_t)snprintf(big, sizeof(big), "{\"k\":1,\"pad\":\"");
	memset(big + n, 'x', VMM_LINE_MAX - 2 - n);
	memcpy(big + VMM_LINE_MAX - 2, "\"}", 3);
	cr_assert_eq(strlen(big), VMM_LINE_MAX);
	u64_is(big, "k", -EINVAL, 0);
	/* One byte shorter, it is a report that fits the line. */
	memmove(big + VMM_LINE_MAX - 3, "\"}", 3);
	u64_is(big, "k", 0, 1);
}
