// SPDX-License-Identifier: MIT
/*
 * Embedding libzvmm: guest memory prepared under each policy, then
 * touched from a thread the way a vCPU would touch it, one write per
 * page, checking that every page reads zero first. No KVM needed: a
 * VMM gives zvmm_guest_memory()'s mapping to KVM instead.
 *
 *   embed [--pool FILE] [--mem SIZE_MIB] [--hugepages 2M|1G]
 *
 * Without --pool the library makes an anonymous hugetlb memfd. The
 * hugepages must be reserved (echo 64 > /proc/sys/vm/nr_hugepages).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zvmm/zvmm.h>

struct vcpu {
	volatile unsigned char *mem;
	uint64_t bytes, page;
	uint64_t nonzero; /* pages that did not read zero */
};

/* A vCPU's first touch of every page: read, then write. */
static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;

	for (uint64_t off = 0; off < c->bytes; off += c->page) {
		if (c->mem[off] || c->mem[off + c->page - 1])
			c->nonzero++;
		c->mem[off] = 0xa5; /* the guest's data from now on */
	}
	return NULL;
}

static void log_line(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "libzvmm %s: %s\n",
		level == ZVMM_LOG_ERROR ? "error" : "note", msg);
}

static int launch(const struct zvmm_mem *mem, const char *mode)
{
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct vcpu c = { .page = mem->page_bytes };
	pthread_t t;
	char json[2048];
	void *addr;
	int ret;

	ret = zvmm_policy_new(&pol);
	if (!ret)
		ret = zvmm_policy_set(pol, "zeroing.mode", mode);
	if (!ret)
		ret = zvmm_guest_open(mem, pol, &g);
	zvmm_policy_free(pol);
	if (ret)
		return ret;
	/* A VMM's loader would write its boot data into the first page. */
	ret = zvmm_guest_prepare(g, mem->page_bytes);
	if (!ret)
		ret = zvmm_guest_serve_thread(g, NULL, NULL);
	if (ret) {
		zvmm_guest_close(g);
		return ret;
	}
	zvmm_guest_memory(g, &addr, &c.bytes);
	c.mem = addr;
	zvmm_guest_start(g);
	pthread_create(&t, NULL, vcpu_thread, &c);
	pthread_join(t, NULL);
	ret = zvmm_guest_stop(g);
	if (!ret)
		ret = zvmm_guest_exit(g);
	if (zvmm_guest_stats_json(g, json, sizeof(json)) >= 0)
		printf("%s: %llu of %llu pages read non-zero; %s\n", mode,
		       (unsigned long long)c.nonzero,
		       (unsigned long long)(c.bytes / c.page), json);
	zvmm_guest_close(g);
	return ret ? ret : c.nonzero ? -EIO : 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "prezero", "demand", "hybrid" };
	struct zvmm_mem mem = ZVMM_MEM_INIT(64ULL << 20, ZVMM_PAGE_2M);
	int ret = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--pool"))
			mem.pool_path = argv[i + 1];
		else if (!strcmp(argv[i], "--mem"))
			mem.bytes = strtoull(argv[i + 1], NULL, 0) << 20;
		else if (!strcmp(argv[i], "--hugepages"))
			mem.page_bytes = strcmp(argv[i + 1], "1G") ?
						 ZVMM_PAGE_2M :
						 ZVMM_PAGE_1G;
	}
	zvmm_set_log(log_line, NULL, ZVMM_LOG_WARNING);
	printf("libzvmm %s\n", zvmm_version());
	for (unsigned int i = 0; i < 3 && !ret; i++)
		ret = launch(&mem, modes[i]);
	if (ret)
		fprintf(stderr, "embed: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
