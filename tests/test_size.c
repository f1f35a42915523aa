// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "../lib/size.h"

Test(size, binary_units)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "1", 1 },
		{ "2048K", 2048ull << 10 },
		{ "512M", 512ull << 20 },
		{ "64G", 64ull << 30 },
		{ "64GiB", 64ull << 30 },
		{ "1T", 1ull << 40 },
		{ "4g", 4ull << 30 },
		{ "99999T", 99999ull << 40 },
		{ "16777215T", 16777215ull << 40 },
	};
	uint64_t v;

	for (unsigned int i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(size_parse(ok[i].s, &v), 0, "%s", ok[i].s);
		cr_assert_eq(v, ok[i].v, "%s", ok[i].s);
	}
}

Test(size, refuses_bad_input)
{
	static const struct {
		const char *s;
		int err;
	} bad[] = {
		{ "0", -EDOM },		  { "0G", -EDOM },
		{ "-1", -EINVAL },	  { "12Q", -EINVAL },
		{ "", -EINVAL },	  { "G", -EINVAL },
		{ "1.5G", -EINVAL },	  { "4GB", -EINVAL },
		{ " 4G", -EINVAL },	  { "4G ", -EINVAL },
		{ "+4G", -EINVAL },	  { "4Gi", -EINVAL },
		{ "16777216T", -ERANGE }, { "99999999999999999999", -ERANGE },
	};
	uint64_t v = 7;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(size_parse(bad[i].s, &v), bad[i].err, "'%s'",
			     bad[i].s);
		cr_assert_eq(v, 7, "'%s' wrote the output", bad[i].s);
	}
}

Test(size, malformed_before_too_large)
{
	uint64_t v = 7;

	/* Digits past 64 bits, then no unit: malformed, not too large. */
	cr_assert_eq(size_parse("99999999999999999999Q", &v), -EINVAL);
	cr_assert_eq(size_parse("444444549090524554909iB", &v), -EINVAL);
	cr_assert_eq(size_parse("99999999999999999999KiB", &v), -ERANGE);
	cr_assert_eq(v, 7);
}

Test(size, error_repeats_the_input)
{
	char buf[200];

	cr_assert(strstr(size_parse_error("12Q", -EINVAL, buf, sizeof(buf)),
			 "'12Q'"));
	cr_assert(
		strstr(size_parse_error("0", -EDOM, buf, sizeof(buf)), "zero"));
	cr_assert(
		strstr(size_parse_error("99999999T", -ERANGE, buf, sizeof(buf)),
		       "too large"));
}

Test(size, format_and_label)
{
	char buf[32];

	cr_assert_str_eq(size_format(4ull << 30, buf, sizeof(buf)), "4 GiB");
	cr_assert_str_eq(size_format(3 << 20 | 512, buf, sizeof(buf)),
			 "3146240 B");
	cr_assert_str_eq(size_label(2 << 20, buf, sizeof(buf)), "2M");
	cr_assert_str_eq(size_label(1ull << 30, buf, sizeof(buf)), "1G");
	cr_assert_str_eq(size_label(4096, buf, sizeof(buf)), "4K");
	cr_assert_str_eq(size_human(3ull << 29, buf, sizeof(buf)), "1.5 GiB");
	cr_assert_str_eq(size_human(3ull << 19, buf, sizeof(buf)), "1.5 MiB");
}
