// SPDX-License-Identifier: MIT
/*
 * libzvmm through its public header alone, as an embedding VMM uses it:
 * the promise checked from the guest's side (a thread touching the
 * guest mapping as a vCPU would), tenant after tenant on one pool, a
 * caller's own memfd full of someone's data, marks the guest wrote
 * while hybrid's background ran, both ways of serving; and what the
 * library promises about itself: only zvmm_* exported, nothing printed,
 * errors as -errno with the reason logged.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/memfd.h>

#include "../include/zvmm/zvmm.h"
#include "helpers.h"

#define MIB (1ULL << 20)
#define POOL_BYTES (32 * MIB)
#define MNT "/tmp/zvmm-test-api"
#define POOL MNT "/pool"
#define STATE MNT ".state"
#define MARKS 8 /* per page, at offsets zvmm does not sample */

static struct zvmm_reservation *resv;
static bool mounted;
static char logged[4096]; /* the last messages the library logged */

static void log_cb(void *arg, enum zvmm_log_level level, const char *msg)
{
	size_t n = strlen(logged);

	(void)arg;
	(void)level;
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static void setup(void)
{
	logged[0] = '\0';
	zvmm_set_log(log_cb, NULL, ZVMM_LOG_INFO);
	setenv("ZVMM_STATE_DIR", STATE, 1);
}

static void teardown(void);

/* Root, hugepages for two pools' worth, a hugetlbfs mount of 2M pages. */
static void need_pool(void)
{
	int ret;

	test_on_skip(teardown);
	test_need_root("hugetlbfs mount, hugepages");
	ret = zvmm_hugepages_reserve(ZVMM_PAGE_2M, 2 * POOL_BYTES / MIB / 2,
				     &resv);
	if (ret)
		test_skip(TEST_NEED_HUGEPAGES, "cannot reserve 32: %s",
			  strerror(-ret));
	mkdir(MNT, 0700);
	if (mount("none", MNT, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount at %s: %s", MNT,
			  strerror(errno));
	mounted = true;
}

static void teardown(void)
{
	unlink(POOL);
	if (mounted)
		umount2(MNT, MNT_DETACH);
	mounted = false;
	rmdir(MNT);
	(void)!system("rm -rf " STATE);
	zvmm_hugepages_release(resv);
	resv = NULL;
	zvmm_set_log(NULL, NULL, ZVMM_LOG_ERROR);
}

TestSuite(api, .init = setup, .fini = teardown, .timeout = 120);

/* Offset of mark @k in page @p for tenant @seed: never a fixed sample. */
static uint64_t mark_off(uint64_t p, unsigned int k, unsigned int seed)
{
	uint64_t x = (p * 0x9e3779b97f4a7c15ull) ^ (k * 0xbf58476d1ce4e5b9ull) ^
		     (seed * 0x94d049bb133111ebull);

	x ^= x >> 31;
	return (x % (ZVMM_PAGE_2M / 8)) * 8;
}

struct toucher {
	volatile uint64_t *mem;
	uint64_t bytes;
	unsigned int seed; /* writes marks when not 0 */
	uint64_t skip_every; /* leaves page p alone when p % skip_every == 1 */
	uint64_t foreign; /* words read that were not zero */
};

/* The vCPU: reads every word of every page it touches, then writes. */
static void *touch(void *arg)
{
	struct toucher *t = arg;

	for (uint64_t p = 0; p < t->bytes / ZVMM_PAGE_2M; p++) {
		volatile uint64_t *w = t->mem + p * ZVMM_PAGE_2M / 8;

		if (t->skip_every && p % t->skip_every == 1)
			continue; /* a hole: never touched */
		for (uint64_t i = 0; i < ZVMM_PAGE_2M / 8; i++)
			t->foreign += w[i] != 0;
		for (unsigned int k = 0; t->seed && k < MARKS; k++)
			w[mark_off(p, k, t->seed) / 8] = 0x5a5a0000 + k + 1;
	}
	return NULL;
}

/* Arrays, not pointers: Criterion copies parameters into another
 * process, where a pointer to a literal points nowhere. */
struct launch {
	char mode[12], on_exit[12];
	bool event_loop; /* serve from our poll loop, not the library's */
};

/* One tenant: open, prepare, serve, touch from a thread, stop, exit. */
static uint64_t tenant(const struct zvmm_mem *mem, const struct launch *l,
		       unsigned int seed, uint64_t skip_every)
{
	struct toucher t = { .seed = seed, .skip_every = skip_every };
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	pthread_t th;
	void *addr;
	int ret;

	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", l->mode), 0, "%s",
		     logged);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", l->on_exit), 0);
	ret = zvmm_guest_open(mem, pol, &g);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s: %s", strerror(-ret), logged);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	if (!l->event_loop && zvmm_guest_fd(g) >= 0)
		cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_memory(g, &addr, &t.bytes);
	t.mem = addr;
	zvmm_guest_start(g);
	pthread_create(&th, NULL, touch, &t);
	if (l->event_loop && zvmm_guest_fd(g) >= 0) {
		struct pollfd p = { .fd = zvmm_guest_fd(g), .events = POLLIN };

		/* Until the vCPU is done: pthread_tryjoin_np is 0 then. */
		while (pthread_tryjoin_np(th, NULL)) {
			if (poll(&p, 1, 10) > 0)
				cr_assert_eq(zvmm_guest_process(g), 0);
		}
	} else {
		pthread_join(th, NULL);
	}
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0, "on_exit: %s", logged);
	zvmm_guest_close(g);
	return t.foreign;
}

static struct launch launches[] = {
	{ "prezero", "keep", false },	{ "demand", "keep", false },
	{ "hybrid", "keep", false },	{ "demand", "scrub", false },
	{ "hybrid", "scrub", true },	{ "demand", "release", true },
	{ "hybrid", "release", false }, { "prezero", "scrub", true },
};

ParameterizedTestParameters(api, tenant_after_tenant)
{
	return cr_make_param_array(struct launch, launches,
				   sizeof(launches) / sizeof(launches[0]));
}

/*
 * Tenant A writes marks where zvmm never samples and leaves every third
 * page a hole; tenants B and C, under every policy, read every word of
 * every page: not one is A's.
 */
ParameterizedTest(struct launch *l, api, tenant_after_tenant)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct launch a = { "demand", "keep", false };

	need_pool();
	mem.pool_path = POOL;
	cr_assert_eq(tenant(&mem, &a, 7, 3), 0, "a new pool held data");
	cr_assert_eq(tenant(&mem, l, 9, 0), 0,
		     "%s/%s: the second tenant read the first's words", l->mode,
		     l->on_exit);
	cr_assert_eq(tenant(&mem, l, 0, 0), 0,
		     "%s/%s: the third tenant read the second's words", l->mode,
		     l->on_exit);
}

/*
 * A caller's own memfd, written by the caller before the library saw it:
 * someone else's data, which no guest may read.
 */
Test(api, callers_memfd_is_someone_elses_data)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	static const char *const modes[] = { "prezero", "demand", "hybrid" };
	int fd;
	char *p;

	need_pool();
	fd = memfd_create("caller", MFD_HUGETLB | MFD_HUGE_2MB);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, POOL_BYTES), 0);
	mem.fd = fd;
	for (unsigned int i = 0; i < 3; i++) {
		struct launch l = { .on_exit = "keep", .event_loop = i == 2 };

		snprintf(l.mode, sizeof(l.mode), "%s", modes[i]);
		p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		cr_assert_neq(p, MAP_FAILED);
		for (uint64_t off = 0; off < POOL_BYTES; off += 4096)
			p[off + (off / 4096) % 4000] = (char)0xa5;
		munmap(p, POOL_BYTES);
		cr_assert_eq(tenant(&mem, &l, 0, 0), 0,
			     "%s: the guest read the caller's bytes", modes[i]);
	}
	/* The caller's fd is still the caller's. */
	cr_assert_eq(fcntl(fd, F_GETFD) >= 0, true);
	close(fd);
}

/*
 * The guest writes while hybrid's background scrubs the poisoned rest
 * at a crawl: after the run, every mark is where the guest put it.
 */
Test(api, hybrid_never_changes_what_the_guest_wrote)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct toucher t = { .seed = 5, .skip_every = 2 };
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct zvmm_stats st;
	void *addr;
	char *p;
	int fd;

	need_pool();
	fd = open(POOL, O_RDWR | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, POOL_BYTES), 0);
	p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	memset(p, 0xa5, POOL_BYTES);
	munmap(p, POOL_BYTES);
	close(fd);
	mem.pool_path = POOL;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "hybrid"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.rate_limit", "16M"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.chunk", "256K"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0, "%s", logged);
	zvmm_policy_free(pol);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_memory(g, &addr, &t.bytes);
	t.mem = addr;
	zvmm_guest_start(g);
	touch(&t);
	zvmm_guest_stats(g, &st);
	cr_assert(st.background_active,
		  "the background ended before the guest wrote: no overlap");
	cr_assert_eq(t.foreign, 0, "the guest read the poison");
	cr_assert_eq(zvmm_guest_stop(g), 0);
	for (uint64_t pg = 0; pg < t.bytes / ZVMM_PAGE_2M; pg++) {
		volatile uint64_t *w = t.mem + pg * ZVMM_PAGE_2M / 8;

		if (pg % 2 == 1)
			continue;
		for (unsigned int k = 0; k < MARKS; k++)
			cr_assert_eq(w[mark_off(pg, k, 5) / 8],
				     0x5a5a0000 + k + 1,
				     "page %llu mark %u changed",
				     (unsigned long long)pg, k);
	}
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_close(g);
}

Test(api, a_pool_in_use_is_refused)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_guest *a, *b;

	need_pool();
	mem.pool_path = POOL;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &a), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &b), -EBUSY);
	cr_assert(strstr(logged, "in use"), "log: %s", logged);
	zvmm_guest_close(a);
}

Test(api, stats_are_json)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_guest *g;
	char buf[4096], small[8];
	int n;

	need_pool();
	mem.pool_path = POOL;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), 0, "%s", logged);
	n = zvmm_guest_stats_json(g, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(buf));
	cr_assert(buf[0] == '{' && buf[n - 1] == '}', "%s", buf);
	cr_assert(strstr(buf, "\"policy\":{\"mode\":\"hybrid\""), "%s", buf);
	cr_assert(strstr(buf, "\"pages\":16"), "%s", buf);
	cr_assert_eq(zvmm_guest_stats_json(g, small, sizeof(small)), -ENOSPC);
	zvmm_guest_close(g);
}

Test(api, policy_errors_are_errno_and_logged)
{
	struct zvmm_policy *p;
	char a[2048], b[2048];
	FILE *f;

	cr_assert_eq(zvmm_policy_new(&p), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.mode", "warp"), -EINVAL);
	cr_assert(strstr(logged, "warp"), "log: %s", logged);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.nonsense", "1"), -EINVAL);
	cr_assert_lt(zvmm_policy_load(p, "/nonexistent/zvmm.conf"), 0);
	/* A failed load or set changes nothing; format and load agree. */
	cr_assert_eq(zvmm_policy_set(p, "pool.on_exit", "scrub"), 0);
	cr_assert_gt(zvmm_policy_format(p, a, sizeof(a)), 0);
	cr_assert(strstr(a, "on_exit = scrub"), "%s", a);
	cr_assert(strstr(a, "mode = hybrid"), "%s", a);
	f = fopen("/tmp/zvmm-test-api.conf", "w");
	cr_assert_not_null(f);
	fputs("[zeroing]\nmode = demand\n\n[zeroing]\nmode = warp\n", f);
	fclose(f);
	logged[0] = '\0';
	cr_assert_eq(zvmm_policy_load(p, "/tmp/zvmm-test-api.conf"), -EINVAL);
	cr_assert(strstr(logged, "zvmm-test-api.conf:5"), "log: %s", logged);
	cr_assert_gt(zvmm_policy_format(p, b, sizeof(b)), 0);
	cr_assert_str_eq(a, b, "a failed load changed the policy");
	cr_assert_eq(zvmm_policy_format(p, b, 4), -ENOSPC);
	unlink("/tmp/zvmm-test-api.conf");
	zvmm_policy_free(p);
}

Test(api, nothing_printed_without_a_log_callback, .init = cr_redirect_stderr)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *p;
	struct zvmm_guest *g;

	zvmm_set_log(NULL, NULL, ZVMM_LOG_DEBUG);
	mem.pool_path = "/nonexistent-dir/pool";
	cr_assert_lt(zvmm_guest_open(&mem, NULL, &g), 0);
	cr_assert_eq(zvmm_policy_new(&p), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.mode", "warp"), -EINVAL);
	zvmm_policy_free(p);
	fflush(stderr);
	cr_assert_stderr_eq_str("");
}

Test(api, bad_memory_requests_are_einval)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(3 * MIB, ZVMM_PAGE_2M);
	struct zvmm_guest *g;

	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	cr_assert(strstr(logged, "multiple"), "log: %s", logged);
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL);
	mem = ZVMM_MEM_INIT(4 * MIB, 4096);
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	mem = ZVMM_MEM_INIT(4 * MIB, ZVMM_PAGE_2M);
	mem.pool_path = "/tmp/x";
	mem.fd = 0;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL);
	/* No page size at all: refused, not a division by zero. */
	mem = ZVMM_MEM_INIT(4 * MIB, 0);
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL);
}

/* The shared library exports the API and nothing of the engine. */
Test(api, only_the_api_is_exported)
{
	const char *path = getenv("ZVMM_LIB");
	const char *(*version)(void);
	void *h;

	if (!path)
		test_skip(TEST_NEED_TOOL,
			  "ZVMM_LIB (the built libzvmm.so) not set");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	version = (const char *(*)(void))dlsym(h, "zvmm_version");
	cr_assert_not_null(version);
	cr_assert_str_eq(version(), ZVMM_VERSION);
	cr_assert_not_null(dlsym(h, "zvmm_guest_open"));
	cr_assert_null(dlsym(h, "zero_guest_open"), "engine symbol exported");
	cr_assert_null(dlsym(h, "zero_pool_create"), "engine symbol exported");
	cr_assert_null(dlsym(h, "log_msg"), "engine symbol exported");
	cr_assert_null(dlsym(h, "x86_clear_nt_sse2"), "backend exported");
	dlclose(h);
}

/*
 * A program built against 0.1 binds zvmm_guest_open, zvmm_mem_check and
 * zvmm_backends at version ZVMM_0 and passes the structs as 0.1 had them,
 * without the reserved space 0.2 added. Called here through dlvsym()
 * with such structs followed by poison: the library must neither read
 * nor write past them, and must do what the 0.2 calls do.
 */
struct mem_0_1 {
	uint64_t bytes, page_bytes;
	const char *pool_path;
	int fd;
};

struct backend_info_0_1 {
	char name[24], needs[64], what[96];
	bool runs_here;
};

Test(api, programs_built_against_0_1_keep_working, .init = setup,
     .fini = teardown)
{
	const char *path = getenv("ZVMM_LIB");
	struct {
		struct mem_0_1 m;
		unsigned char poison[64];
	} old = { .m = { .bytes = POOL_BYTES,
			 .page_bytes = ZVMM_PAGE_2M,
			 .fd = -1 } };
	struct backend_info_0_1 oinfo[64 + 1];
	struct zvmm_backend_info info[64];
	int (*open01)(const void *, const struct zvmm_policy *,
		      struct zvmm_guest **);
	int (*check01)(const void *);
	unsigned int (*backends01)(void *, unsigned int), n;
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_guest *g;
	void *h;

	if (!path)
		test_skip(TEST_NEED_TOOL,
			  "ZVMM_LIB (the built libzvmm.so) not set");
	need_pool();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	open01 = (int (*)(const void *, const struct zvmm_policy *,
			  struct zvmm_guest **))dlvsym(h, "zvmm_guest_open",
						       "ZVMM_0");
	check01 = (int (*)(const void *))dlvsym(h, "zvmm_mem_check", "ZVMM_0");
	backends01 = (unsigned int (*)(void *, unsigned int))dlvsym(
		h, "zvmm_backends", "ZVMM_0");
	cr_assert(open01 && check01 && backends01, "0.1 entry points: %s",
		  dlerror());
	cr_assert_neq((void *)open01, dlvsym(h, "zvmm_guest_open", "ZVMM_0.2"),
		      "ZVMM_0 and ZVMM_0.2 are one function");

	/* Poison after the 0.1 struct would be flags and reserved words. */
	memset(old.poison, 0xa5, sizeof(old.poison));
	cr_assert_eq(check01(&old.m), 0, "%s", logged);
	old.m.pool_path = POOL;
	cr_assert_eq(open01(&old.m, NULL, &g), 0, "%s", logged);
	((void (*)(struct zvmm_guest *))dlsym(h, "zvmm_guest_close"))(g);

	/* 0.1's array strides by its own element size, and stops at max. */
	memset(oinfo, 0xa5, sizeof(oinfo));
	n = backends01(oinfo, 64);
	cr_assert_eq(n, zvmm_backends(info, 64));
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_str_eq(oinfo[i].name, info[i].name);
		cr_assert_str_eq(oinfo[i].what, info[i].what);
		cr_assert_eq(oinfo[i].runs_here, info[i].runs_here);
	}
	for (size_t b = 0; b < sizeof(oinfo[n]); b++)
		cr_assert_eq(((unsigned char *)&oinfo[n])[b], 0xa5,
			     "written past the 0.1 array");
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int k = 0; k < 4; k++)
			cr_assert_eq(info[i].reserved[k], 0);
	dlclose(h);

	/* 0.2's struct with flags or reserved words it does not know. */
	mem.flags = 1u << 31; /* no flag this library knows */
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	cr_assert(strstr(logged, "zvmm_mem_init()"), "log: %s", logged);
	mem.flags = 0;
	mem.reserved[3] = 1;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL);
}

/*
 * 0.3's memory source: one kind, each field meaning one thing. A kind
 * whose fields say another, two fields set, a kind this library does not
 * know: -EINVAL before anything is taken. A lease from a socket no zvmmd
 * listens on is tried, 0.3's way (service_path) and 0.2's (pool_path
 * with ZVMM_MEM_SERVICE), and says so (-ENOENT); 0.2's call keeps 0.2's
 * reading and refuses the words 0.2 reserved.
 */
Test(api, one_memory_source_each_field_one_meaning, .init = setup,
     .fini = teardown)
{
	const char *path = getenv("ZVMM_LIB");
	int (*check02)(const struct zvmm_mem *);
	struct zvmm_mem mem;
	struct zvmm_guest *g = NULL;
	void *h;

	zvmm_mem_init(&mem, POOL_BYTES, ZVMM_PAGE_2M);
	cr_assert_eq(mem.source, ZVMM_SOURCE_AUTO);
	cr_assert_null(mem.service_path);
	mem.source = ZVMM_SOURCE_POOL; /* and no pool_path */
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	cr_assert(strstr(logged, "mem.source = pool"), "log: %s", logged);
	mem.source = ZVMM_SOURCE_FD;
	mem.pool_path = "/nonexistent/pool";
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL);
	cr_assert_null(g);
	mem.source = ZVMM_SOURCE_AUTO;
	mem.service_path = "/nonexistent/zvmmd.sock";
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	cr_assert(strstr(logged, "more than one"), "log: %s", logged);
	mem.pool_path = NULL;
	mem.source = 99;
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL);
	/* A lease, 0.3's way: tried, and no zvmmd listens there. */
	mem.source = ZVMM_SOURCE_SERVICE;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -ENOENT);
	cr_assert(strstr(logged, "/nonexistent/zvmmd.sock"), "log: %s", logged);
	/* 0.2's way, kept: ZVMM_MEM_SERVICE reads pool_path as the socket. */
	zvmm_mem_init(&mem, POOL_BYTES, ZVMM_PAGE_2M);
	mem.flags = ZVMM_MEM_SERVICE;
	mem.pool_path = "/nonexistent/old.sock";
	logged[0] = '\0';
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -ENOENT);
	cr_assert(strstr(logged, "/nonexistent/old.sock"), "log: %s", logged);
	if (!path)
		test_skip(TEST_NEED_TOOL,
			  "ZVMM_LIB (the built libzvmm.so) not set");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	check02 = (int (*)(const struct zvmm_mem *))dlvsym(h, "zvmm_mem_check",
							   "ZVMM_0.2");
	cr_assert_not_null(check02);
	cr_assert_neq((void *)check02, dlvsym(h, "zvmm_mem_check", "ZVMM_0.3"));
	/* What 0.2 reserved, set through its call: refused. */
	zvmm_mem_init(&mem, POOL_BYTES, ZVMM_PAGE_2M);
	mem.service_path = "/nonexistent/zvmmd.sock";
	cr_assert_eq(check02(&mem), -EINVAL);
	dlclose(h);
}

Test(api, backends_are_listed_with_what_runs_here)
{
	struct zvmm_backend_info info[64];
	unsigned int n = zvmm_backends(info, 64);
	bool memset_seen = false;

	cr_assert_gt(n, 1);
	cr_assert_lt(n, 64);
	cr_assert_gt(strlen(zvmm_arch()), 0);
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_gt(strlen(info[i].name), 0);
		for (unsigned int k = 0; k < i; k++)
			cr_assert_str_neq(info[i].name, info[k].name);
		if (!strcmp(info[i].name, "memset")) {
			memset_seen = true;
			cr_assert(info[i].runs_here, "memset runs anywhere");
		}
	}
	cr_assert(memset_seen);
	/* A short array is filled as far as it goes; the count is all. */
	cr_assert_eq(zvmm_backends(info, 1), n);
}

Test(api, calibration_is_kept_where_backend_auto_reads_it, .timeout = 120)
{
	struct zvmm_calibration *c;
	char dir[] = "/tmp/zvmm-test-api-cache.XXXXXX", written[4096];
	char text[1 << 16], want[4200];
	const char *best;
	struct stat st;

	cr_assert_not_null(mkdtemp(dir));
	setenv("ZVMM_CACHE_DIR", dir, 1);
	cr_assert_eq(zvmm_calibrate(&c), 0, "%s", logged);
	cr_assert_geq(zvmm_calibration_chunks(c), 1);
	for (unsigned int i = 0; i < zvmm_calibration_chunks(c); i++) {
		best = zvmm_calibration_best(c, i);
		cr_assert_not_null(best);
		cr_assert_gt(zvmm_calibration_gbps(c, i, best), 0);
		cr_assert_geq(zvmm_calibration_gbps(c, i, best),
			      zvmm_calibration_gbps(c, i, "memset"));
		cr_assert_eq(zvmm_calibration_gbps(c, i, "no_such_backend"), 0);
	}
	cr_assert_eq(zvmm_calibration_write(c, NULL, written, sizeof(written)),
		     0, "%s", logged);
	snprintf(want, sizeof(want), "%s/calibration.ini", dir);
	cr_assert_str_eq(written, want);
	cr_assert_eq(stat(want, &st), 0);
	cr_assert_gt(zvmm_calibration_format(c, text, sizeof(text)), 0);
	cr_assert_eq((size_t)st.st_size, strlen(text),
		     "the file is not the formatted profile");
	cr_assert(strstr(text, zvmm_calibration_best(c, 0)), "%s", text);
	cr_assert_eq(zvmm_calibration_format(c, text, 8), -ENOSPC);
	zvmm_calibration_free(c);
	unlink(want);
	rmdir(dir);
}

/*
 * The caller keeps its fd between launches and may write the file
 * through its own mapping, where no record or stamp sees it: a scrub at
 * exit must not make the next launch trust the file.
 */
Test(api, callers_writes_between_launches_are_not_trusted_away)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct launch scrub = { .mode = "demand", .on_exit = "scrub" };
	static const char *const modes[] = { "prezero", "demand", "hybrid" };
	uint64_t *p;
	int fd;

	need_pool();
	fd = memfd_create("caller", MFD_HUGETLB | MFD_HUGE_2MB);
	cr_assert_geq(fd, 0);
	mem.fd = fd;
	for (unsigned int i = 0; i < 3; i++) {
		struct launch l = { .on_exit = "keep" };

		snprintf(l.mode, sizeof(l.mode), "%s", modes[i]);
		cr_assert_eq(tenant(&mem, &scrub, 3, 0), 0);
		p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		cr_assert_neq(p, MAP_FAILED);
		for (uint64_t pg = 0; pg < POOL_BYTES / ZVMM_PAGE_2M; pg++)
			p[(pg * ZVMM_PAGE_2M + mark_off(pg, 0, 11)) / 8] =
				0xbad0000000000000ull | pg;
		munmap(p, POOL_BYTES);
		cr_assert_eq(
			tenant(&mem, &l, 0, 0), 0,
			"%s: the guest read what the caller wrote after a scrub",
			modes[i]);
	}
	close(fd);
}

/*
 * A caller's fd is locked through an open file description of the
 * library's own: a second open of the same fd is refused, the caller's
 * LOCK_UN does not drop the library's lock, and close releases it.
 */
Test(api, callers_fd_is_locked_on_its_own)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_mem named = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_guest *a, *b;
	int fd;

	need_pool();
	fd = open(POOL, O_RDWR | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	mem.fd = fd;
	named.pool_path = POOL;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &a), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &b), -EBUSY,
		     "the same fd opened twice");
	cr_assert_eq(flock(fd, LOCK_UN), 0);
	cr_assert_eq(zvmm_guest_open(&named, NULL, &b), -EBUSY,
		     "the caller's LOCK_UN dropped the library's lock");
	zvmm_guest_close(a);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0,
		     "the lock outlived zvmm_guest_close()");
	flock(fd, LOCK_UN);
	close(fd);
}

Test(api, a_failed_open_leaves_the_callers_file_as_it_was)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct stat st;
	int fd;

	need_pool();
	fd = memfd_create("caller", MFD_HUGETLB | MFD_HUGE_2MB);
	cr_assert_geq(fd, 0);
	mem.fd = fd;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "numa.policy", "bind"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "numa.nodes", "63"), 0);
	cr_assert_lt(zvmm_guest_open(&mem, pol, &g), 0,
		     "a bind to node 63 opened");
	zvmm_policy_free(pol);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, 0, "the failed open left the file resized");
	close(fd);
}

Test(api, prepare_is_one_call_and_serving_follows_it)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;

	need_pool();
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "demand"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0, "%s", logged);
	zvmm_policy_free(pol);
	cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), -EINVAL,
		     "a serve thread before prepare would serve nothing");
	zvmm_guest_cancel(g);
	cr_assert_eq(zvmm_guest_prepare(g, ZVMM_PAGE_2M), -ECANCELED);
	zvmm_guest_rearm(g);
	cr_assert_eq(zvmm_guest_prepare(g, ZVMM_PAGE_2M), -EALREADY);
	zvmm_guest_close(g);
}

/* What a program built against this header asks of the library. */
Test(api, version_check_and_mem_init)
{
	struct zvmm_mem m;

	cr_assert_eq(zvmm_check_version(ZVMM_VERSION_MAJOR, ZVMM_VERSION_MINOR),
		     0);
	cr_assert_eq(zvmm_check_version(0, 1), 0, "0.2 has 0.1's API");
	cr_assert_eq(zvmm_check_version(ZVMM_VERSION_MAJOR,
					ZVMM_VERSION_MINOR + 1),
		     -ENOTSUP);
	cr_assert(strstr(logged, "install libzvmm"), "%s", logged);
	cr_assert_eq(zvmm_check_version(ZVMM_VERSION_MAJOR + 1, 0), -ENOTSUP);
	memset(&m, 0xa5, sizeof(m));
	zvmm_mem_init(&m, 64ULL << 20, ZVMM_PAGE_1G);
	cr_assert_eq(m.fd, -1, "fd 0 would be standard input");
	cr_assert_null(m.pool_path);
	cr_assert_eq(m.bytes, 64ULL << 20);
	cr_assert_eq(m.page_bytes, ZVMM_PAGE_1G);
}

/*
 * An embedder's users have no zvmm flags: the library's messages name the
 * API's fields and keys (mem.pool_path, mem.page_bytes, policy key ...),
 * never --pool, --hugepages, --mem or --set.
 */
Test(api, messages_speak_the_api_not_the_cli)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g, *g2;

	need_pool();
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "fast"), -EINVAL);
	cr_assert(strstr(logged, "policy key zeroing.mode=fast: bad value"),
		  "%s", logged);
	zvmm_policy_free(pol);
	/* Not on hugetlbfs. */
	mem.pool_path = STATE "-not-hugetlbfs";
	cr_assert_neq(zvmm_guest_open(&mem, NULL, &g), 0);
	cr_assert(strstr(logged, "mem.pool_path " STATE "-not-hugetlbfs"), "%s",
		  logged);
	/*
	 * A 2M mount asked for 1G pages; on a machine with no 1 GiB pool,
	 * that is what is said, in the API's words too.
	 */
	mem.pool_path = POOL;
	mem.page_bytes = ZVMM_PAGE_1G;
	mem.bytes = ZVMM_PAGE_1G;
	cr_assert_neq(zvmm_guest_open(&mem, NULL, &g), 0);
	if (test_nr_hugepages(ZVMM_PAGE_1G) >= 0)
		cr_assert(strstr(logged, "use mem.page_bytes"), "%s", logged);
	else
		cr_assert(strstr(logged, "no 1 GiB hugepage pool") &&
				  strstr(logged, "use another mem.page_bytes"),
			  "%s", logged);
	/* A pool of another size, and a busy one. */
	mem.page_bytes = ZVMM_PAGE_2M;
	mem.bytes = POOL_BYTES;
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g2), -EBUSY);
	cr_assert(strstr(logged, "another mem.pool_path"), "%s", logged);
	zvmm_guest_close(g);
	mem.bytes = POOL_BYTES / 2;
	cr_assert_neq(zvmm_guest_open(&mem, NULL, &g), 0);
	cr_assert(strstr(logged, "use mem.bytes"), "%s", logged);
	cr_assert_null(strstr(logged, "--"), "a zvmm flag in: %s", logged);
}

struct guest_log {
	struct zvmm_guest *g; /* as the callback was told */
	char text[1024];
};

static void guest_log_cb(void *arg, struct zvmm_guest *g,
			 enum zvmm_log_level level, const char *msg)
{
	struct guest_log *l = arg;
	size_t n = strlen(l->text);

	(void)level;
	l->g = g;
	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", msg);
}

/*
 * Two guests in one process, each with its own log: a message of one
 * guest's call reaches that guest's callback, with its argument and the
 * guest, and neither the other's nor the process's.
 */
Test(api, each_guest_has_its_own_log)
{
	struct zvmm_mem a = ZVMM_MEM_INIT(POOL_BYTES / 2, ZVMM_PAGE_2M);
	struct zvmm_mem b = ZVMM_MEM_INIT(POOL_BYTES / 2, ZVMM_PAGE_2M);
	struct guest_log la = { 0 }, lb = { 0 };
	struct zvmm_guest *ga, *gb;

	need_pool();
	cr_assert_eq(zvmm_guest_open(&a, NULL, &ga), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_open(&b, NULL, &gb), 0, "%s", logged);
	zvmm_guest_set_log(ga, guest_log_cb, &la, ZVMM_LOG_INFO);
	zvmm_guest_set_log(gb, guest_log_cb, &lb, ZVMM_LOG_INFO);
	logged[0] = '\0';
	/* Before prepare: an error each guest logs for itself. */
	cr_assert_eq(zvmm_guest_access(ga, 0, 4096), -EINVAL);
	cr_assert(strstr(la.text, "zvmm_guest_access()"), "%s", la.text);
	cr_assert_eq(la.g, ga);
	cr_assert_eq(lb.text[0], '\0', "b got a's message: %s", lb.text);
	cr_assert_eq(logged[0], '\0', "the process log got it: %s", logged);
	cr_assert_eq(zvmm_guest_prepare(gb, 0), 0);
	cr_assert_eq(zvmm_guest_access(gb, POOL_BYTES, 4096), -EINVAL);
	cr_assert(strstr(lb.text, "outside the guest"), "%s", lb.text);
	cr_assert_eq(lb.g, gb);
	cr_assert_null(strstr(la.text, "outside the guest"), "%s", la.text);
	/* Back to the process's log. */
	zvmm_guest_set_log(ga, NULL, NULL, ZVMM_LOG_ERROR);
	cr_assert_eq(zvmm_guest_access(ga, 0, 4096), -EINVAL);
	cr_assert(strstr(logged, "zvmm_guest_access()"), "%s", logged);
	zvmm_guest_close(ga);
	zvmm_guest_close(gb);
}

/*
 * A guest's state directory is its policy's ([pool] state_dir), not the
 * process's environment: the record of a scrubbing exit lands there, not
 * in $ZVMM_STATE_DIR, and the next guest with the same key trusts it.
 */
Test(api, state_dir_is_the_guests_own)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct zvmm_stats st;
	char own[] = "/tmp/zvmm-test-api-own.XXXXXX", cmd[96];

	need_pool();
	cr_assert_not_null(mkdtemp(own));
	mem.pool_path = POOL;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.state_dir", own), 0, "%s",
		     logged);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "scrub"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_stats(g, &st);
	cr_assert(st.record_written, "%s", logged);
	zvmm_guest_close(g);
	snprintf(cmd, sizeof(cmd), "ls %s | grep -q '^pool-.*\\.state$'", own);
	cr_assert_eq(system(cmd), 0, "no record in %s", own);
	/* The environment's directory knows nothing of it. */
	cr_assert_neq(system("ls " STATE " 2>/dev/null | grep -q state"), 0,
		      "a record went to $ZVMM_STATE_DIR");
	/* The same key again: that record, trusted. */
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "keep"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0, "%s", logged);
	zvmm_guest_stats(g, &st);
	zvmm_guest_close(g);
	zvmm_policy_free(pol);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", own);
	(void)!system(cmd);
	cr_assert(st.record_clean, "the guest's own record was not read: %s",
		  logged);
}

/* A launch of the zvmm program's: scrubbed at exit, recorded. */
static void program_launch(const struct zvmm_mem *mem)
{
	struct zvmm_policy *pol;
	struct zvmm_guest *g;

	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "scrub"), 0);
	cr_assert_eq(zvmm_guest_open(mem, pol, &g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_close(g);
	zvmm_policy_free(pol);
}

/*
 * ZVMM_STATE_DIR is the zvmm program's variable, not libzvmm's: a record
 * the program left there (this runner's engine reads the environment as
 * the program does) is found by libzvmm.so only through the policy key,
 * never through the environment of the process that embeds it.
 */
Test(api, library_reads_no_environment, .init = setup, .fini = teardown)
{
	const char *path = getenv("ZVMM_LIB");
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	int (*pnew)(struct zvmm_policy **);
	int (*pset)(struct zvmm_policy *, const char *, const char *);
	void (*pfree)(struct zvmm_policy *);
	int (*open)(const struct zvmm_mem *, const struct zvmm_policy *,
		    struct zvmm_guest **);
	void (*stats)(struct zvmm_guest *, struct zvmm_stats *);
	void (*close_)(struct zvmm_guest *);
	struct zvmm_policy *lpol;
	struct zvmm_guest *g;
	struct zvmm_stats st;
	char env[] = "/tmp/zvmm-test-api-env.XXXXXX", cmd[128];
	bool by_key, by_env;
	void *h;

	if (!path)
		test_skip(TEST_NEED_TOOL,
			  "ZVMM_LIB (the built libzvmm.so) not set");
	need_pool();
	cr_assert_not_null(mkdtemp(env));
	setenv("ZVMM_STATE_DIR", env, 1);
	mem.pool_path = POOL;
	program_launch(&mem);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	pnew = (int (*)(struct zvmm_policy **))dlsym(h, "zvmm_policy_new");
	pset = (int (*)(struct zvmm_policy *, const char *,
			const char *))dlsym(h, "zvmm_policy_set");
	pfree = (void (*)(struct zvmm_policy *))dlsym(h, "zvmm_policy_free");
	open = (int (*)(const struct zvmm_mem *, const struct zvmm_policy *,
			struct zvmm_guest **))dlvsym(h, "zvmm_guest_open",
						     "ZVMM_0.2");
	stats = (void (*)(struct zvmm_guest *,
			  struct zvmm_stats *))dlsym(h, "zvmm_guest_stats");
	close_ = (void (*)(struct zvmm_guest *))dlsym(h, "zvmm_guest_close");
	cr_assert(pnew && pset && pfree && open && stats && close_);
	/* keep: nothing is written anywhere by these two opens. */
	cr_assert_eq(pnew(&lpol), 0);
	cr_assert_eq(pset(lpol, "pool.on_exit", "keep"), 0);
	cr_assert_eq(pset(lpol, "pool.state_dir", env), 0);
	cr_assert_eq(open(&mem, lpol, &g), 0);
	stats(g, &st);
	by_key = st.record_clean;
	close_(g);
	pfree(lpol);
	/* An open takes the record: the program's next launch leaves one. */
	program_launch(&mem);
	cr_assert_eq(pnew(&lpol), 0);
	cr_assert_eq(pset(lpol, "pool.on_exit", "keep"), 0);
	cr_assert_eq(open(&mem, lpol, &g), 0);
	stats(g, &st);
	by_env = st.record_clean;
	close_(g);
	pfree(lpol);
	dlclose(h);
	unsetenv("ZVMM_STATE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", env);
	(void)!system(cmd);
	cr_assert(by_key, "the record named by pool.state_dir was not read");
	cr_assert_not(by_env, "libzvmm read $ZVMM_STATE_DIR");
}
