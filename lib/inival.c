// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "inival.h"
#include "size.h"

bool inival_has_control(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return true;
	return false;
}

int inival_path(char *out, size_t size, size_t max, const char *v,
		const char *word, char *err, size_t len)
{
	char alt[48] = "";

	if (max > size)
		max = size;
	if (word) {
		/* Whole: a file compares equal to the one its text reloads. */
		if (!strcmp(v, word)) {
			memset(out, 0, size);
			return 0;
		}
		snprintf(alt, sizeof(alt), "'%s' or ", word);
	}
	if (v[0] != '/' || strlen(v) >= max || strpbrk(v, " \t;#") ||
	    inival_has_control(v)) {
		snprintf(
			err, len,
			"bad value '%s': expected %san absolute path shorter than %zu bytes, without blanks, ';' or '#'",
			v, alt, max);
		return -EINVAL;
	}
	memset(out, 0, size);
	memcpy(out, v, strlen(v));
	return 0;
}

int inival_size(const char *v, const char *word, uint64_t *out, uint64_t min,
		uint64_t max, char *err, size_t len)
{
	char a[32], b[32], why[200], alt[48] = "";
	int ret;

	if (word) {
		if (!strcmp(v, word)) {
			*out = 0;
			return 0;
		}
		snprintf(alt, sizeof(alt), ", or '%s'", word);
	}
	ret = size_parse(v, out);
	if (ret) {
		snprintf(err, len, "%s%s",
			 size_parse_error(v, ret, why, sizeof(why)), alt);
		return -EINVAL;
	}
	if (*out < min || *out > max) {
		snprintf(err, len, "'%s' is out of range: give %s to %s%s", v,
			 size_format(min, a, sizeof(a)),
			 size_format(max, b, sizeof(b)), alt);
		return -EINVAL;
	}
	return 0;
}
