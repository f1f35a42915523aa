// SPDX-License-Identifier: MIT
/*
 * membw SECONDS BYTES: writes BYTES of anonymous memory (THP asked for)
 * once, prints "warm", then writes it with memset, pass after pass, for
 * SECONDS, and prints the median GB/s (1e9 bytes/s) of those passes: the memory traffic of a busy guest vCPU,
 * which a PVM guest cannot make itself (each instruction is emulated).
 * BYTES should be well past the last-level cache. For bench/storm.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_PASSES 4096

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static double rate[MAX_PASSES];
	unsigned int n = 0;
	double secs, t0, t;
	size_t bytes;
	char *p;

	if (argc != 3) {
		fprintf(stderr, "usage: membw SECONDS BYTES\n");
		return 2;
	}
	secs = strtod(argv[1], NULL);
	bytes = strtoull(argv[2], NULL, 0);
	if (secs <= 0 || !bytes) {
		fprintf(stderr, "membw: give SECONDS > 0 and BYTES > 0\n");
		return 2;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("membw: mmap");
		return 1;
	}
	madvise(p, bytes, MADV_HUGEPAGE);
	/* Warm: memory the host reclaimed is slow on first touch. */
	memset(p, 1, bytes);
	/* A caller may start what it measures against now. */
	printf("warm\n");
	fflush(stdout);
	t0 = now();
	do {
		t = now();
		memset(p, (int)(n & 0xff), bytes);
		rate[n] = (double)bytes / (now() - t) / 1e9;
	} while (++n < MAX_PASSES && now() - t0 < secs);
	qsort(rate, n, sizeof(rate[0]), cmp);
	printf("%.2f\n", rate[n / 2]);
	munmap(p, bytes);
	return 0;
}
