// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "size.h"

static int unit_shift(const char *u, unsigned int *shift)
{
	static const char units[] = "KMGT";
	const char *p;

	if (!*u) {
		*shift = 0;
		return 0;
	}
	p = strchr(units, toupper((unsigned char)u[0]));
	if (!p || !u[0])
		return -EINVAL;
	if (u[1] && strcmp(u + 1, "iB") != 0)
		return -EINVAL;
	*shift = 10 * (unsigned int)(p - units + 1);
	return 0;
}

int size_parse(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift;
	const char *p = s, *unit;

	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (unit = p; isdigit((unsigned char)*unit); unit++)
		;
	/* Malformed before too large: "99999999999999999999iB" is invalid. */
	if (unit_shift(unit, &shift))
		return -EINVAL;
	for (; p < unit; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v == 0)
		return -EDOM;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

const char *size_parse_error(const char *s, int err, char *buf, size_t len)
{
	if (err == -ERANGE)
		snprintf(buf, len, "size '%s' is too large (more than 16 EiB)",
			 s);
	else if (err == -EDOM)
		snprintf(buf, len, "size '%s' is zero; give a positive size",
			 s);
	else
		snprintf(
			buf, len,
			"invalid size '%s': expected a positive whole number with an optional binary unit K, M, G or T (e.g. 512M, 4G, 64GiB)",
			s ? s : "");
	return buf;
}

const char *size_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int i = 0;

	while (i < 4 && bytes && !(bytes & 1023)) {
		bytes >>= 10;
		i++;
	}
	snprintf(buf, len, "%llu %s", (unsigned long long)bytes, unit[i]);
	return buf;
}

const char *size_human(uint64_t bytes, char *buf, size_t len)
{
	if (!bytes)
		snprintf(buf, len, "0 B");
	else if (bytes >= SZ_1G)
		snprintf(buf, len, "%.1f GiB", (double)bytes / (double)SZ_1G);
	else
		snprintf(buf, len, "%.1f MiB", (double)bytes / (double)SZ_1M);
	return buf;
}

const char *size_label(uint64_t bytes, char *buf, size_t len)
{
	static const char unit[] = " KMGT";
	unsigned int i = 0;

	while (i < 4 && bytes && !(bytes & 1023)) {
		bytes >>= 10;
		i++;
	}
	if (i)
		snprintf(buf, len, "%llu%c", (unsigned long long)bytes,
			 unit[i]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	return buf;
}
