// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "ranges.h"

int range_list_parse(const char *v, unsigned long limit, uint64_t *bits)
{
	const char *p = v;
	char *end;

	while (*p) {
		unsigned long a, b;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		/* Past @limit, strtoul's ULONG_MAX for too many digits too. */
		if (b < a || b >= limit)
			return -ERANGE;
		for (unsigned long n = a; bits && n <= b; n++)
			bits[n / 64] |= 1ull << (n % 64);
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return -EINVAL;
		p = end;
	}
	return 0;
}
