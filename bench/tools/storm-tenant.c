// SPDX-License-Identifier: MIT
/*
 * The launch storm's tenant where no guest boots (bench/storm.sh without
 * /dev/kvm): one launch's memory side. It opens guest memory through
 * libzvmm, leased from zvmmd (--service) or a warm pool file (--pool),
 * or, for the kernel's own way, maps private hugetlb memory with no
 * zvmm at all (--kernel: the kernel zeroes each page at its first
 * fault). Then it touches the memory as the touch guest does with
 * stride=2M verify=8: per 2 MiB, eight cache lines spread over it read
 * for zero, then one write.
 *
 *   storm-tenant --mem MIB --page 2M|1G (--service SOCKET | --pool FILE |
 *                --kernel) [--policy FILE] [--set KEY=VALUE]...
 *
 * Prints one line, "READY TOUCH EMPTY": READY the ms from the start of
 * the open (zvmm_guest_open(), or mmap()) to memory a vCPU may touch
 * (after zvmm_guest_prepare(), the serving thread and
 * zvmm_guest_start()), TOUCH the ms the touches then took, EMPTY the
 * bytes zvmmd leased as holes (it had too few zeroed chunks), all on
 * CLOCK_MONOTONIC. The exit (a pool's on_exit) and close come after,
 * untimed. Exit status: 0, 1 an error (logged), 2 usage, 11 a touch
 * read a non-zero byte.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <zvmm/zvmm.h>

#define STRIDE (2ULL << 20)
#define VERIFY 8

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The touch guest's walk: every stride checked at VERIFY lines, written
 * once. Returns the strides that did not read zero. */
static uint64_t touch(volatile unsigned char *mem, uint64_t bytes)
{
	uint64_t bad = 0;

	for (uint64_t a = 0; a < bytes; a += STRIDE) {
		unsigned char seen = 0;

		for (uint64_t k = 0; k < VERIFY; k++) {
			volatile uint64_t *line =
				(volatile uint64_t *)(mem + a +
						      (STRIDE / VERIFY * k &
						       ~63ULL));

			for (int w = 0; w < 8; w++)
				seen |= line[w] != 0;
		}
		bad += seen;
		mem[a] = 0x5a;
	}
	return bad;
}

static void log_line(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "libzvmm %s: %s\n",
		level == ZVMM_LOG_ERROR ? "error" : "note", msg);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: storm-tenant --mem MIB --page 2M|1G (--service SOCKET | --pool FILE | --kernel) [--policy FILE] [--set KEY=VALUE]...\n");
	exit(2);
}

/* The kernel's way: a private hugetlb mapping, zeroed at each fault. */
static int kernel_launch(uint64_t bytes, uint64_t page)
{
	int huge = page == ZVMM_PAGE_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB;
	double t0, t1, t2;
	uint64_t bad;
	void *mem;

	t0 = now_ms();
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | huge, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "storm-tenant: mmap: %s\n", strerror(errno));
		return 1;
	}
	t1 = now_ms();
	bad = touch(mem, bytes);
	t2 = now_ms();
	munmap(mem, bytes);
	printf("%.3f %.3f 0\n", t1 - t0, t2 - t1);
	return bad ? 11 : 0;
}

static int set_key(struct zvmm_policy *pol, char *kv)
{
	char *eq = strchr(kv, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	return zvmm_policy_set(pol, kv, eq + 1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "page", required_argument, NULL, 'g' },
		{ "service", required_argument, NULL, 's' },
		{ "pool", required_argument, NULL, 'p' },
		{ "kernel", no_argument, NULL, 'k' },
		{ "policy", required_argument, NULL, 'f' },
		{ "set", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct zvmm_mem mem = ZVMM_MEM_INIT(0, ZVMM_PAGE_2M);
	struct zvmm_policy *pol = NULL;
	struct zvmm_guest *g = NULL;
	struct zvmm_stats st;
	int o, ret, ways = 0, kernel = 0;
	double t0, t1, t2;
	uint64_t bytes, bad;
	void *addr;

	zvmm_set_log(log_line, NULL, ZVMM_LOG_WARNING);
	ret = zvmm_policy_new(&pol);
	if (ret) {
		fprintf(stderr, "storm-tenant: %s\n", strerror(-ret));
		return 1;
	}
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			mem.bytes = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'g':
			if (!strcmp(optarg, "1G"))
				mem.page_bytes = ZVMM_PAGE_1G;
			else if (strcmp(optarg, "2M"))
				usage();
			break;
		case 's':
			mem.source = ZVMM_SOURCE_SERVICE;
			mem.service_path = optarg;
			ways++;
			break;
		case 'p':
			mem.source = ZVMM_SOURCE_POOL;
			mem.pool_path = optarg;
			ways++;
			break;
		case 'k':
			kernel = 1;
			ways++;
			break;
		case 'f':
			ret = zvmm_policy_load(pol, optarg);
			break;
		case 'e':
			ret = set_key(pol, optarg);
			break;
		default:
			usage();
		}
		if (ret) {
			fprintf(stderr, "storm-tenant: %s: %s\n", optarg,
				strerror(-ret));
			return 2;
		}
	}
	if (ways != 1 || !mem.bytes || mem.bytes % mem.page_bytes ||
	    optind != argc)
		usage();
	if (kernel) {
		zvmm_policy_free(pol);
		return kernel_launch(mem.bytes, mem.page_bytes);
	}

	t0 = now_ms();
	ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	/* A VMM's loader would write its boot data into the first page. */
	if (!ret)
		ret = zvmm_guest_prepare(g, mem.page_bytes);
	if (!ret)
		ret = zvmm_guest_serve_thread(g, NULL, NULL);
	if (ret) {
		fprintf(stderr, "storm-tenant: %s\n", strerror(-ret));
		zvmm_guest_close(g);
		return 1;
	}
	zvmm_guest_memory(g, &addr, &bytes);
	zvmm_guest_start(g);
	t1 = now_ms();
	bad = touch(addr, bytes);
	t2 = now_ms();
	ret = zvmm_guest_stop(g);
	if (!ret)
		ret = zvmm_guest_exit(g);
	zvmm_guest_stats(g, &st);
	zvmm_guest_close(g); /* a lease ends */
	if (ret) {
		fprintf(stderr, "storm-tenant: %s\n", strerror(-ret));
		return 1;
	}
	printf("%.3f %.3f %" PRIu64 "\n", t1 - t0, t2 - t1,
	       st.service_empty_bytes);
	return bad ? 11 : 0;
}
