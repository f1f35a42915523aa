// SPDX-License-Identifier: MIT
/*
 * The arm64 backends under qemu-aarch64: the same range and guard checks
 * as tests/test_backends.c, the DC ZVA fallback when DZP is set, and the
 * registry's view on arm64. A static program rather than a Criterion
 * suite so it needs no arm64 libraries on an x86 host. Prints
 * "arm64: N passed, N failed" and exits non-zero on any failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../../arch/arm64/clear.h"
#include "../../zeroing/backend.h"

#define POISON 0xa5
#define GUARD 4096
#define SZ_2M (2ul << 20)

static unsigned int passed, failed;

#define check(cond, ...)                                            \
	do {                                                        \
		if (cond) {                                         \
			passed++;                                   \
		} else {                                            \
			failed++;                                   \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			printf("\n");                               \
		}                                                   \
	} while (0)

static long find_not(const unsigned char *p, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

static size_t forced_block;

static void clear_forced(void *addr, size_t len)
{
	arm64_clear_dc_zva_block(addr, len, forced_block);
}

static void range_and_guards(const char *name, void (*clear)(void *, size_t),
			     char *base)
{
	static const size_t lens[] = { 64,	 128,	    192,
				       256,	 320,	    4096 - 64,
				       4096,	 4096 + 64, 65536 - 64,
				       65536,	 SZ_2M,	    SZ_2M + 192,
				       8ul << 20 };
	static const size_t offs[] = { 0, 64, 128, 192, 4096 - 64, SZ_2M - 64 };
	unsigned int bad = 0;

	for (unsigned int o = 0; o < sizeof(offs) / sizeof(offs[0]); o++)
		for (unsigned int l = 0; l < sizeof(lens) / sizeof(lens[0]);
		     l++) {
			char *p = base + offs[o];
			size_t len = lens[l];
			long z, g1, g2;

			memset(p - GUARD, POISON, len + 2 * GUARD);
			clear(p, len);
			z = find_not((unsigned char *)p, len, 0);
			g1 = find_not((unsigned char *)p - GUARD, GUARD,
				      POISON);
			g2 = find_not((unsigned char *)p + len, GUARD, POISON);
			if (z >= 0 || g1 >= 0 || g2 >= 0) {
				bad++;
				printf("FAIL %s off %zu len %zu: zero %ld guard %ld/%ld\n",
				       name, offs[o], len, z, g1, g2);
			}
		}
	check(!bad, "%s: %u range/guard cases failed", name, bad);
}

int main(void)
{
	size_t span = (8ul << 20) + 2 * SZ_2M + 2 * GUARD;
	size_t block = arm64_dc_zva_block();
	const struct zero_backend *b;
	char why[512], *buf, *base;
	unsigned int i;

	buf = mmap(NULL, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	base = (char *)(((unsigned long)buf + GUARD + SZ_2M - 1) &
			~(SZ_2M - 1));
	printf("arm64: DC ZVA block %zu bytes%s\n", block,
	       block ? "" : " (prohibited)");

	for_each_backend(i, b) {
		check(zero_backend_runs_here(b), "%s should run on arm64",
		      b->name);
		range_and_guards(b->name, b->clear, base);
	}
	/* DZP set: the same function must clear with stores instead. */
	forced_block = 0;
	range_and_guards("dc_zva(prohibited)", clear_forced, base);

	check((zero_cpu_features() & ARCH_F_DC_ZVA) ==
		      (block ? ARCH_F_DC_ZVA : 0),
	      "feature bit disagrees with DCZID_EL0");
	check(zero_backend_find("dc_zva", &b, why, sizeof(why)) == 0,
	      "dc_zva not found: %s", why);
	check(zero_backend_find("stnp", &b, why, sizeof(why)) == 0,
	      "stnp not found: %s", why);
	check(zero_backend_find("clzero", &b, why, sizeof(why)) ==
			      -EOPNOTSUPP &&
		      strstr(why, "is for x86-64"),
	      "clzero on arm64: %s", why);
	check(zero_backend_find("nope", &b, why, sizeof(why)) == -ENOENT,
	      "unknown name: %s", why);

	munmap(buf, span);
	printf("arm64 (DC ZVA block %zu): %u passed, %u failed\n", block,
	       passed, failed);
	return failed ? 1 : 0;
}
