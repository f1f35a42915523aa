// SPDX-License-Identifier: MIT
/*
 * The warm-pool state record parser, zero_record_parse(), with the input
 * as the record's text. A record it takes must format back to text that
 * parses to the same identity; and every identity zvmm could write (the
 * input's first 88 bytes read as its numbers, the rest up to a NUL as a
 * path after a '/') must survive zero_record_format() and
 * zero_record_parse() unchanged: zvmm takes every record it writes.
 */
#include <errno.h>
#include <stddef.h>

#include "../zeroing/record.h"
#include "fuzz.h"

static char text[ZERO_RECORD_TEXT_MAX];

static void round_trip(const struct zero_record *r)
{
	static struct zero_record back;
	int n = zero_record_format(r, text, sizeof(text)), ret;

	fuzz_assert(n > 0 && n < (int)sizeof(text), "format %d", n);
	ret = zero_record_parse(text, (size_t)n, &back);
	fuzz_assert(!ret, "zvmm refuses its own record (%d):\n%s", ret, text);
	fuzz_assert(!memcmp(r, &back, sizeof(back)), "changed:\n%s", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t nums = offsetof(struct zero_record, path);
	static struct zero_record r;
	int ret;

	memset(&r, 0xa5, sizeof(r));
	ret = zero_record_parse((const char *)data, size, &r);
	fuzz_assert(!ret || ret == -EINVAL || ret == -EBADMSG, "parse %d", ret);
	if (!ret)
		round_trip(&r);
	if (size >= nums) {
		size_t n = size - nums;

		memset(&r, 0, sizeof(r));
		memcpy(&r, data, nums);
		if (n) {
			n = n < sizeof(r.path) - 2 ? n : sizeof(r.path) - 2;
			r.path[0] = '/';
			memcpy(r.path + 1, data + nums, n);
			n = strnlen(r.path, sizeof(r.path));
			memset(r.path + n, 0, sizeof(r.path) - n);
		}
		round_trip(&r);
	}
	return 0;
}
