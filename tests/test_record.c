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

/* @src with the first @from replaced by @to, parsed. */
static int parse_edited_in(const char *src, const char *from, const char *to,
			   struct zero_record *out)
{
	static char buf[2 * ZERO_RECORD_TEXT_MAX];
	const char *at = strstr(src, from);

	cr_assert_not_null(at, "'%s' not in the record", from);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - src), src, to,
		 at + strlen(from));
	return zero_record_parse(buf, strlen(buf), out);
}

/* The record text with the first @from replaced by @to. */
static int parse_edited(const char *from, const char *to,
			struct zero_record *out)
{
	return parse_edited_in(text, from, to, out);
}

/* @rec with @path, formatted into @buf; fails the test if cut. */
static struct zero_record with_path(const char *path, char *buf, size_t len)
{
	struct zero_record r = rec;
	int n;

	r.version = ZERO_RECORD_VERSION;
	snprintf(r.path, sizeof(r.path), "%s", path);
	n = zero_record_format(&r, buf, len);
	cr_assert(n > 0 && n < (int)len, "format: %d", n);
	return r;
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
	char buf[ZERO_RECORD_TEXT_MAX];
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

/*
 * A record as zvmm wrote it before version 4, without a path: it still
 * parses, with the checksum it had (the path adds to the sum only when
 * there is one), so the pruning can tell it for what it is.
 */
Test(record, record_without_path_parses)
{
	static const char old[] =
		"; zvmm warm-pool state record: every page of the pool file\n"
		"; below was zero when zvmm exited. Edit nothing: any change\n"
		"; makes the next launch scrub the pool again.\n"
		"[pool]\nversion = 3\ndevice = 2049\ninode = 1234567\n"
		"size = 2147483648\npage_size = 2097152\npages = 1024\n"
		"mtime_ns = 1700000000000000001\n"
		"ctime_ns = 1700000000000000002\n"
		"atime_ns = 1700000000000000000\n"
		"boot_id = 0123456789abcdeffedcba9876543210\n"
		"state = zero\nchecksum = 25febd158993231b\n";
	struct zero_record r;

	cr_assert_eq(zero_record_parse(old, strlen(old), &r), 0);
	cr_expect_eq(r.version, 3);
	cr_expect_eq(r.inode, 1234567);
	cr_expect_eq(r.ctime_ns, 1700000000000000002ull);
	cr_expect_eq(r.boot_lo, 0xfedcba9876543210ull);
	cr_expect_str_eq(r.path, "");
	/* Written again, it is the same text: no path line. */
	cr_assert_lt(zero_record_format(&r, text, sizeof(text)),
		     (int)sizeof(text));
	cr_expect_str_eq(text, old);
}

Test(record, path_round_trips)
{
	char buf[ZERO_RECORD_TEXT_MAX];
	struct zero_record w = with_path("/dev/hugepages/zvmm/pool-1", buf,
					 sizeof(buf)),
			   r;

	cr_assert(strstr(buf, "\npath = /dev/hugepages/zvmm/pool-1\n"), "%s",
		  buf);
	cr_assert_eq(zero_record_parse(buf, strlen(buf), &r), 0, "%s", buf);
	cr_expect_eq(memcmp(&r, &w, sizeof(r)), 0);
	cr_expect_str_eq(r.path, "/dev/hugepages/zvmm/pool-1");
}

/*
 * Bytes that would end a line, start a comment, be trimmed or read as
 * an escape are escaped: the record keeps its lines, and reads back.
 */
Test(record, odd_path_bytes_are_escaped)
{
	static const char odd[] = "/mnt/a b\n[pool]\nstate = zero ;x#\t\r"
				  "%41=\xff\x01/\xc3\xa9 ";
	char buf[ZERO_RECORD_TEXT_MAX], plain[ZERO_RECORD_TEXT_MAX];
	struct zero_record w = with_path(odd, buf, sizeof(buf)), r;
	unsigned int lines = 0, plain_lines = 0;

	with_path("/x", plain, sizeof(plain));
	for (const char *c = buf; *c; c++)
		lines += *c == '\n';
	for (const char *c = plain; *c; c++)
		plain_lines += *c == '\n';
	cr_expect_eq(lines, plain_lines, "the path added lines:\n%s", buf);
	cr_expect(strstr(buf, "path = /mnt/a%20b%0A%5Bpool%5D%0Astate%20"),
		  "%s", buf);
	cr_expect(strstr(buf, "%2541%3D%FF%01/%C3%A9%20\n"), "%s", buf);
	cr_assert_eq(zero_record_parse(buf, strlen(buf), &r), 0, "%s", buf);
	cr_expect_eq(memcmp(&r, &w, sizeof(r)), 0);
	cr_expect_str_eq(r.path, odd);
}

/*
 * The longest path, every byte escaped, fits ZERO_RECORD_TEXT_MAX over
 * lines libinih reads whole (199 bytes), and reads back.
 */
Test(record, longest_path_fits)
{
	static char path[PATH_MAX], buf[ZERO_RECORD_TEXT_MAX];
	static struct zero_record w, r;
	size_t longest = 0, line = 0;

	memset(path, '\n', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	w = with_path(path, buf, sizeof(buf));
	cr_assert_eq(strlen(w.path), PATH_MAX - 1);
	for (const char *c = buf; *c; c++) {
		line = *c == '\n' ? 0 : line + 1;
		longest = line > longest ? line : longest;
	}
	cr_expect_lt(longest, 199, "a line of %zu bytes", longest);
	cr_assert_eq(zero_record_parse(buf, strlen(buf), &r), 0);
	cr_expect_eq(memcmp(&r, &w, sizeof(r)), 0);
}

/* Paths zvmm does not write, and a path edited after the checksum. */
Test(record, refuses_a_path_it_did_not_write)
{
	static const struct {
		const char *from, *to;
		int err;
	} bad[] = {
		{ "path = /dev/pool", "path = dev/pool", -EINVAL },
		{ "path = /dev/pool", "path = /dev/po%6Fl", -EINVAL },
		{ "path = /dev/pool", "path = /dev/po%2aol", -EINVAL },
		{ "path = /dev/pool", "path = /dev/po%2", -EINVAL },
		{ "path = /dev/pool", "path = /dev/po%", -EINVAL },
		{ "path = /dev/pool", "path = /dev/po%00ol", -EINVAL },
		{ "path = /dev/pool", "path = /dev/p ool", -EINVAL },
		{ "path = /dev/pool", "path = /dev/p\"ool", -EINVAL },
		{ "path = /dev/pool", "path = ", -EINVAL },
		{ "path = /dev/pool", "path = /dev/poom", -EBADMSG },
		{ "path = /dev/pool\n", "", -EBADMSG },
		{ "path = /dev/pool", "path = /dev/po\npath = ol", 0 },
	};
	char buf[ZERO_RECORD_TEXT_MAX];
	struct zero_record r;

	with_path("/dev/pool", buf, sizeof(buf));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(parse_edited_in(buf, bad[i].from, bad[i].to, &r),
			     bad[i].err, "'%s' -> '%s'", bad[i].from,
			     bad[i].to);
}
