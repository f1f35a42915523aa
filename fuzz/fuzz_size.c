// SPDX-License-Identifier: MIT
/*
 * size_parse() against a reference reading of the grammar in lib/size.h,
 * then the formatters on every size it accepts: what size_label() and
 * size_format() (less its space and a bare "B") write must parse back to
 * the same number.
 */
#include <ctype.h>
#include <errno.h>

#include "../lib/size.h"
#include "fuzz.h"

/* Malformed first, then zero, then too large, as size.h orders them. */
static int reference(const char *s, uint64_t *out)
{
	unsigned __int128 v = 0;
	unsigned int shift = 0;
	const char *p = s, *u;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned int)(*p - '0');
		if (v > UINT64_MAX)
			v = (unsigned __int128)UINT64_MAX + 1; /* sticks */
	}
	if (*p) {
		/* The unit letter is taken in either case, "iB" exactly. */
		u = strchr("KMGT", toupper((unsigned char)*p));
		if (!u)
			return -EINVAL;
		if (p[1] && strcmp(p + 1, "iB"))
			return -EINVAL;
		shift = 10 * (unsigned int)(u - "KMGT" + 1);
	}
	if (!v)
		return -EDOM;
	if (v > UINT64_MAX || (v << shift) > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)(v << shift);
	return 0;
}

static void reparse(const char *what, const char *text, uint64_t want)
{
	uint64_t v = 0;
	int ret = size_parse(text, &v);

	fuzz_assert(!ret && v == want,
		    "%s wrote '%s' for %llu, which parses to %d/%llu", what,
		    text, (unsigned long long)want, ret, (unsigned long long)v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size), buf[64], flat[64], msg[256];
	uint64_t v = 0, want = 0;
	int ret, ref;
	size_t j = 0;

	ret = size_parse(s, &v);
	ref = reference(s, &want);
	fuzz_assert(ret == ref, "'%s': size_parse %d, grammar says %d", s, ret,
		    ref);
	size_parse_error(s, ret, msg, sizeof(msg));
	if (ret) {
		free(s);
		return 0;
	}
	fuzz_assert(v == want, "'%s': %llu, grammar says %llu", s,
		    (unsigned long long)v, (unsigned long long)want);

	reparse("size_label", size_label(v, buf, sizeof(buf)), v);

	size_format(v, buf, sizeof(buf));
	for (size_t i = 0; buf[i]; i++)
		if (buf[i] != ' ')
			flat[j++] = buf[i];
	flat[j] = '\0';
	if (j && flat[j - 1] == 'B' && (j < 2 || flat[j - 2] != 'i'))
		flat[j - 1] = '\0';
	reparse("size_format", flat, v);

	size_human(v, buf, sizeof(buf));
	fuzz_assert(strstr(buf, "iB") || !strcmp(buf, "0 B"), "size_human '%s'",
		    buf);
	free(s);
	return 0;
}
