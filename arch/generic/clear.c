// SPDX-License-Identifier: MIT
#include <string.h>

#include "clear.h"

#define GENERIC_PAGE 4096

/*
 * glibc's memset. On AMD since glibc 2.40 it takes neither its REP STOSB
 * nor its non-temporal path (DESIGN.md 6), so it is a reference, not a
 * bulk-zeroing choice there.
 */
void generic_clear_memset(void *addr, size_t len)
{
	memset(addr, 0, len);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * One call per 4 KiB, as the kernel cleared hugepages before extent
 * clearing (seed 000): kept as the baseline the extent backends beat.
 * The call goes through a volatile pointer so the compiler cannot merge
 * the calls into one memset of the extent.
 */
static void *(*volatile page_clear)(void *, int, size_t) = memset;

void generic_clear_page_at_a_time(void *addr, size_t len)
{
	char *p = addr, *end = p + len;

	for (; end - p >= GENERIC_PAGE; p += GENERIC_PAGE)
		page_clear(p, 0, GENERIC_PAGE);
	if (p < end)
		page_clear(p, 0, (size_t)(end - p));
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

const struct arch_backend generic_backends[] = {
	{ "memset", generic_clear_memset, 0, "glibc memset" },
	{ "page_at_a_time", generic_clear_page_at_a_time, 0,
	  "memset 4 KiB per call (the kernel's old clear_page loop)" },
};

const unsigned int generic_nr_backends =
	sizeof(generic_backends) / sizeof(generic_backends[0]);
