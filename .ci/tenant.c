// SPDX-License-Identifier: MIT
/*
 * CI's zvmmd tenant that needs no KVM: it leases guest memory from
 * zvmmd through libzvmm (ZVMM_MEM_SERVICE), prepares it under a policy
 * file, and touches every page from a thread the way a vCPU would. The
 * touch guest does the same under `zvmm run --pool-service`, which
 * needs /dev/kvm; this runs on every machine .ci/run runs on.
 *
 *   ci-tenant --socket PATH --policy FILE --mem MIB --profile PATH
 *             (--mark SEED | --probe SEED)
 *
 * --mark: every page must read zero, then every 8-byte word of it is
 * written with a value derived from SEED and its offset, and read back.
 * --probe: a later tenant looking for an earlier one's data: every word
 * must read zero; the words that hold what a --mark SEED tenant wrote
 * there are counted apart. --profile names the calibration profile
 * (backend = auto), so no run writes the machine's own.
 *
 * Exit status: 0 all zero (and, with --mark, every mark kept), 10 when
 * an earlier tenant's marks were found, 11 other non-zero words, 12 when
 * marks of its own were lost, 1 a library error (logged), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zvmm/zvmm.h>

struct vcpu {
	volatile uint64_t *mem;
	uint64_t words, page_words;
	uint64_t seed;
	int mark; /* 1: write marks; 0: probe for seed's */
	uint64_t nonzero, foreign, lost;
};

/* Non-zero, different per word and per seed (splitmix64's finaliser). */
static uint64_t mark_of(uint64_t seed, uint64_t word)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + word + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

/* A vCPU's first touch of each page: the whole page read, then written. */
static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;

	for (uint64_t p = 0; p < c->words; p += c->page_words) {
		for (uint64_t w = p; w < p + c->page_words; w++) {
			uint64_t v = c->mem[w];

			if (!v)
				continue;
			c->nonzero++;
			if (!c->mark && v == mark_of(c->seed, w))
				c->foreign++;
		}
		if (!c->mark)
			continue;
		for (uint64_t w = p; w < p + c->page_words; w++)
			c->mem[w] = mark_of(c->seed, w);
	}
	/* A mark lost before the lease ends would be the library's doing. */
	for (uint64_t w = 0; c->mark && w < c->words; w++)
		if (c->mem[w] != mark_of(c->seed, w))
			c->lost++;
	return NULL;
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
		"usage: ci-tenant --socket PATH --policy FILE --mem MIB --profile PATH (--mark SEED | --probe SEED)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "mem", required_argument, NULL, 'm' },
		{ "profile", required_argument, NULL, 'f' },
		{ "mark", required_argument, NULL, 'k' },
		{ "probe", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct zvmm_mem mem = ZVMM_MEM_INIT(0, ZVMM_PAGE_2M);
	const char *policy = NULL, *profile = NULL;
	struct vcpu c = { .mark = -1 };
	struct zvmm_policy *pol = NULL;
	struct zvmm_guest *g = NULL;
	struct zvmm_stats st;
	void *addr;
	uint64_t bytes;
	pthread_t t;
	int o, ret;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			mem.pool_path = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case 'm':
			mem.bytes = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'f':
			profile = optarg;
			break;
		case 'k':
		case 'r':
			if (c.mark != -1)
				usage();
			c.mark = o == 'k';
			c.seed = strtoull(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!mem.pool_path || !policy || !mem.bytes || !profile ||
	    c.mark == -1 || optind != argc)
		usage();
	mem.flags = ZVMM_MEM_SERVICE;
	zvmm_set_log(log_line, NULL, ZVMM_LOG_WARNING);

	ret = zvmm_policy_new(&pol);
	if (!ret)
		ret = zvmm_policy_load(pol, policy);
	if (!ret)
		ret = zvmm_policy_set(pol, "zeroing.profile", profile);
	if (!ret)
		ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	/* A VMM's loader would write its boot data into the first page. */
	if (!ret)
		ret = zvmm_guest_prepare(g, mem.page_bytes);
	if (!ret)
		ret = zvmm_guest_serve_thread(g, NULL, NULL);
	if (ret) {
		fprintf(stderr, "ci-tenant: %s\n", strerror(-ret));
		zvmm_guest_close(g);
		return 1;
	}
	zvmm_guest_memory(g, &addr, &bytes);
	c.mem = addr;
	c.words = bytes / 8;
	c.page_words = mem.page_bytes / 8;
	zvmm_guest_start(g);
	if ((ret = pthread_create(&t, NULL, vcpu_thread, &c))) {
		fprintf(stderr, "ci-tenant: pthread_create: %s\n",
			strerror(ret));
		zvmm_guest_close(g);
		return 1;
	}
	pthread_join(t, NULL);
	ret = zvmm_guest_stop(g);
	if (!ret)
		ret = zvmm_guest_exit(g);
	zvmm_guest_stats(g, &st);
	zvmm_guest_close(g); /* the lease ends */
	if (ret) {
		fprintf(stderr, "ci-tenant: %s\n", strerror(-ret));
		return 1;
	}
	printf("ci-tenant: %s, %" PRIu64 " MiB leased (%" PRIu64
	       " MiB zeroed ahead by zvmmd, %" PRIu64 " MiB as holes); %" PRIu64
	       " non-zero words",
	       st.mode, bytes >> 20, st.service_zero_bytes >> 20,
	       st.service_empty_bytes >> 20, c.nonzero);
	if (c.mark)
		printf(", %" PRIu64 " marks of seed %" PRIu64
		       " written, %" PRIu64 " lost\n",
		       c.words, c.seed, c.lost);
	else
		printf(", %" PRIu64 " of them seed %" PRIu64 "'s marks\n",
		       c.foreign, c.seed);
	if (st.service_zero_bytes + st.service_empty_bytes != bytes) {
		fprintf(stderr,
			"ci-tenant: the memory was not leased from zvmmd\n");
		return 1;
	}
	return c.foreign ? 10 : c.nonzero ? 11 : c.lost ? 12 : 0;
}
