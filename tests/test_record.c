// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../zeroing/record.h"

static const struct zero_record rec = {
	.version = 1,
	.device = 2049,
	.inode = 1234567,
	.size = 2ull << 30,
	.page_size = 2ull << 20,
	.pages = 1024,
};

static char text[ZERO_RECORD_TEXT_MAX];

static void setup(void)
{
	int n = zero_record_format(&rec, text, sizeof(text));

	cr_assert(n > 0 && n < (int)sizeof(text));
}

/* The record text with the first @from replaced by @to. */
static int parse_edited(const char *from, const char *to,
			struct zero_record *out)
{
	char buf[2 * ZERO_RECORD_TEXT_MAX];
	const char *at = strstr(text, from);

	cr_assert_not_null(at, "'%s' not in the record", from);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, to,
		 at + strlen(from));
	return zero_record_parse(buf, strlen(buf), out);
}

TestSuite(record, .init = setup);

Test(record, format_parses_back)
{
	struct zero_record r;

	cr_assert_eq(zero_record_parse(text, strlen(text), &r), 0, "%s", text);
	cr_assert_eq(memcmp(&r, &rec, sizeof(r)), 0);
	cr_assert(strstr(text, "[pool]\nversion = 1\ndevice = 2049\n"), "%s",
		  text);
}

Test(record, refuses_what_it_did_not_write)
{
	static const struct {
		const char *from, *to;
		int err;
	} bad[] = {
		{ "state = zero", "state = dirty", -EINVAL },
		{ "pages = 1024\n", "", -EINVAL },
		{ "[pool]", "[pol]", -EINVAL },
		{ "inode = ", "inode = -", -EINVAL },
		{ "inode = ", "inode = +", -EINVAL },
		{ "pages = 1024", "pages = 99999999999999999999999", -EINVAL },
		{ "pages = 1024", "pages = 1024x", -EINVAL },
		{ "checksum = ", "checksum = -", -EINVAL },
		{ "pages = 1024", "pages = 1025", -EBADMSG },
	};
	struct zero_record r;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse_edited(bad[i].from, bad[i].to, &r),
			     bad[i].err, "'%s' -> '%s'", bad[i].from,
			     bad[i].to);
}

Test(record, long_comment_hides_no_key)
{
	char buf[1024];
	struct zero_record r;

	/* libinih would read the tail of the comment as "state = zero". */
	snprintf(buf, sizeof(buf), "%s", text);
	*strstr(buf, "state = zero\n") = '\0';
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
		 "; %0200d state = zero\n%s", 0, strstr(text, "checksum = "));
	cr_assert_eq(zero_record_parse(buf, strlen(buf), &r), -EINVAL);
}

Test(record, stops_at_the_length)
{
	struct zero_record r;

	/* A cut checksum fails, a cut before it leaves the record short. */
	cr_assert_eq(zero_record_parse(text, strlen(text) - 10, &r), -EBADMSG);
	cr_assert_eq(zero_record_parse(text, strlen(text) - 40, &r), -EINVAL);
}
