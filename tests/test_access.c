// SPDX-License-Identifier: MIT
/*
 * The VMM's own threads and guest memory (zvmm_guest_access()), through
 * the public header alone: the serving thread reading and writing guest
 * RAM itself (a device model in the event loop), another thread doing
 * so while the library serves, and an "initrd" written at the top of RAM
 * before start. Each on a pool full of someone else's data, under every
 * policy, checked word by word from a vCPU's side: nothing the VMM did
 * not write is other than zero, and what it wrote is still there.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "helpers.h"

#define MIB (1ULL << 20)
#define POOL_BYTES (32 * MIB)
#define MNT "/tmp/zvmm-test-access"
#define POOL MNT "/pool"
#define STATE MNT ".state"
#define MARK 0x7e57ab1e00000000ull

static struct zvmm_reservation *resv;
static bool mounted;
static char logged[4096];

/* Called from the library's threads too, and two launches' at once. */
static void log_cb(void *arg, enum zvmm_log_level level, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t n;

	(void)arg;
	(void)level;
	pthread_mutex_lock(&lock);
	n = strlen(logged);
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
	pthread_mutex_unlock(&lock);
}

static void teardown(void);

static void setup(void)
{
	int ret;

	logged[0] = '\0';
	zvmm_set_log(log_cb, NULL, ZVMM_LOG_INFO);
	setenv("ZVMM_STATE_DIR", STATE, 1);
	test_on_skip(teardown);
	test_need_root("hugetlbfs mount, hugepages");
	ret = zvmm_hugepages_reserve(ZVMM_PAGE_2M, POOL_BYTES / ZVMM_PAGE_2M,
				     &resv);
	if (ret)
		test_skip(TEST_NEED_HUGEPAGES, "cannot reserve 16: %s",
			  strerror(-ret));
	mkdir(MNT, 0700);
	if (mount("none", MNT, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount at %s: %s", MNT,
			  strerror(errno));
	mounted = true;
	test_poison_file(POOL, POOL_BYTES);
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

TestSuite(access, .init = setup, .fini = teardown, .timeout = 120);

struct launch {
	char mode[12];
	bool poll; /* serve from the test's loop, not the library's thread */
};

static struct launch launches[] = {
	{ "prezero", true },  { "demand", true },  { "hybrid", true },
	{ "prezero", false }, { "demand", false }, { "hybrid", false },
};

/* The VMM's writes: @n words at @off, each MARK + its index. */
struct vmm_write {
	uint64_t off, n;
};

struct vcpu {
	volatile uint64_t *mem;
	uint64_t bytes;
	const struct vmm_write *w;
	unsigned int nw;
	uint64_t foreign, lost; /* words not zero that the VMM did not write;
				   VMM words that changed */
	volatile bool done;
};

static bool vmm_word(const struct vcpu *c, uint64_t i, uint64_t *want)
{
	for (unsigned int k = 0; k < c->nw; k++)
		if (i * 8 >= c->w[k].off &&
		    i * 8 < c->w[k].off + c->w[k].n * 8) {
			*want = MARK + (i * 8 - c->w[k].off) / 8;
			return true;
		}
	return false;
}

/* A vCPU: reads every word of guest memory, top down. */
static void *vcpu(void *arg)
{
	struct vcpu *c = arg;

	for (uint64_t i = c->bytes / 8; i-- > 0;) {
		uint64_t v = c->mem[i], want;

		if (vmm_word(c, i, &want))
			c->lost += v != want;
		else
			c->foreign += v != 0;
	}
	c->done = true;
	return NULL;
}

/* The VMM's write of @w, after making the range ready; reads it first. */
static void vmm_writes(struct zvmm_guest *g, volatile uint64_t *mem,
		       const struct vmm_write *w)
{
	int ret = zvmm_guest_access(g, w->off, w->n * 8);

	cr_assert_eq(ret, 0, "access: %s: %s", strerror(-ret), logged);
	for (uint64_t i = 0; i < w->n; i++)
		cr_assert_eq(mem[w->off / 8 + i], 0,
			     "the VMM read someone's data at %llu",
			     (unsigned long long)(w->off + i * 8));
	for (uint64_t i = 0; i < w->n; i++)
		mem[w->off / 8 + i] = MARK + i;
}

static struct zvmm_guest *open_guest(const char *mode)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	int ret;

	mem.pool_path = POOL;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", mode), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "keep"), 0);
	ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s: %s", strerror(-ret), logged);
	return g;
}

/* Serves from this thread until the vCPU is done. */
static void serve_until(struct zvmm_guest *g, struct vcpu *c, pthread_t th)
{
	struct pollfd p = { .fd = zvmm_guest_fd(g), .events = POLLIN };

	while (pthread_tryjoin_np(th, NULL)) {
		if (p.fd >= 0 && poll(&p, 1, 10) > 0)
			cr_assert_eq(zvmm_guest_process(g), 0, "%s", logged);
		else if (p.fd < 0)
			usleep(1000);
	}
	(void)c;
}

ParameterizedTestParameters(access, the_serving_thread_touches_guest_ram)
{
	return cr_make_param_array(struct launch, launches,
				   sizeof(launches) / sizeof(launches[0]));
}

/*
 * The thread that serves (the test's loop, polling the library's fd, or
 * with the library's own serve thread the test thread as a device model)
 * reads and writes the last pages of RAM and a page in the middle while
 * a vCPU faults its way down from the top: no hang, no stranger's byte,
 * and the VMM's words intact.
 */
ParameterizedTest(struct launch *l, access,
		  the_serving_thread_touches_guest_ram)
{
	const struct vmm_write w[] = {
		{ POOL_BYTES - 64, 8 }, /* the last words of RAM */
		{ POOL_BYTES / 2 + 4096 + 8, 512 }, /* unaligned, mid-RAM */
	};
	struct vcpu c = { .w = w, .nw = 2 };
	struct zvmm_guest *g = open_guest(l->mode);
	pthread_t th;
	void *addr;

	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	if (!l->poll)
		cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_memory(g, &addr, &c.bytes);
	c.mem = addr;
	zvmm_guest_start(g);
	/* The serving thread is this one: it never reaches process() while
	 * it waits for a page, so without access() it would hang here. */
	vmm_writes(g, c.mem, &w[0]);
	pthread_create(&th, NULL, vcpu, &c);
	vmm_writes(g, c.mem, &w[1]);
	if (l->poll)
		serve_until(g, &c, th);
	else
		pthread_join(th, NULL);
	cr_assert_eq(zvmm_guest_stop(g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_close(g);
	cr_assert(c.done);
	/* The vCPU may have read a page before the VMM wrote it. */
	cr_assert_eq(c.foreign, 0, "%s: %llu words of someone else's", l->mode,
		     (unsigned long long)c.foreign);
}

ParameterizedTestParameters(access, an_initrd_at_the_top_of_ram)
{
	return cr_make_param_array(struct launch, launches,
				   sizeof(launches) / sizeof(launches[0]));
}

/*
 * A loader's ranges beyond prepare's boot bytes, named before start: an
 * "initrd" ending 8 bytes short of the top of RAM, and a "device tree"
 * one page below it. The vCPU then finds them whole, and nothing else.
 */
ParameterizedTest(struct launch *l, access, an_initrd_at_the_top_of_ram)
{
	const struct vmm_write w[] = {
		{ POOL_BYTES - 5 * MIB - 8, 5 * MIB / 8 }, /* the initrd */
		{ POOL_BYTES - 8 * MIB + 72, 64 }, /* the device tree */
	};
	struct vcpu c = { .w = w, .nw = 2 };
	struct zvmm_guest *g = open_guest(l->mode);
	pthread_t th;
	void *addr;

	cr_assert_eq(zvmm_guest_prepare(g, 4096), 0, "%s", logged);
	zvmm_guest_memory(g, &addr, &c.bytes);
	c.mem = addr;
	vmm_writes(g, c.mem, &w[0]);
	vmm_writes(g, c.mem, &w[1]);
	if (!l->poll)
		cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_start(g);
	pthread_create(&th, NULL, vcpu, &c);
	if (l->poll)
		serve_until(g, &c, th);
	else
		pthread_join(th, NULL);
	cr_assert_eq(zvmm_guest_stop(g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_close(g);
	cr_assert_eq(c.lost, 0, "%s: %llu of the VMM's words changed", l->mode,
		     (unsigned long long)c.lost);
	cr_assert_eq(c.foreign, 0, "%s: %llu words of someone else's", l->mode,
		     (unsigned long long)c.foreign);
}

Test(access, bad_ranges_are_einval)
{
	struct zvmm_guest *g = open_guest("demand");

	cr_assert_eq(zvmm_guest_access(g, 0, 4096), -EINVAL,
		     "access before prepare");
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_access(g, POOL_BYTES - 8, 16), -EINVAL);
	cr_assert_eq(zvmm_guest_access(g, UINT64_MAX, 2), -EINVAL);
	cr_assert_eq(zvmm_guest_access(g, 8, UINT64_MAX), -EINVAL);
	cr_assert_eq(zvmm_guest_access(g, POOL_BYTES, 0), 0);
	cr_assert_eq(zvmm_guest_access(g, 0, POOL_BYTES), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_close(g);
}

struct leaver {
	volatile uint64_t *mem;
	uint64_t first, pages, foreign;
	volatile int *stop;
	bool done;
};

/* A vCPU that reads page after page until told to stop. */
static void *leaver(void *arg)
{
	struct leaver *t = arg;

	for (uint64_t p = t->first; p < t->first + t->pages; p++) {
		if (__atomic_load_n(t->stop, __ATOMIC_ACQUIRE))
			break;
		for (uint64_t i = 0; i < ZVMM_PAGE_2M / 8; i++)
			t->foreign += t->mem[p * ZVMM_PAGE_2M / 8 + i] != 0;
	}
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
	return NULL;
}

ParameterizedTestParameters(access, one_stop_then_join)
{
	return cr_make_param_array(struct launch, launches,
				   sizeof(launches) / sizeof(launches[0]));
}

/*
 * Four vCPUs fault through a poisoned pool; the VMM tells them to stop,
 * calls zvmm_guest_stop() once and joins them, serving nothing itself
 * (a poller stops polling): every vCPU caught in a fault is served by
 * the library, none hangs, none read a stranger's word.
 */
ParameterizedTest(struct launch *l, access, one_stop_then_join)
{
	struct zvmm_guest *g = open_guest(l->mode);
	struct pollfd p = { .events = POLLIN };
	struct leaver t[4];
	volatile int stop = 0;
	pthread_t th[4];
	uint64_t bytes;
	void *addr;

	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	if (!l->poll)
		cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_memory(g, &addr, &bytes);
	zvmm_guest_start(g);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct leaver){ .mem = addr,
					.first = (uint64_t)i * 4,
					.pages = 4,
					.stop = &stop };
		pthread_create(&th[i], NULL, leaver, &t[i]);
	}
	/* A few faults served, then the stop, with some still in flight. */
	p.fd = zvmm_guest_fd(g);
	for (int k = 0; l->poll && p.fd >= 0 && k < 3; k++)
		if (poll(&p, 1, 100) > 0)
			cr_assert_eq(zvmm_guest_process(g), 0, "%s", logged);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	cr_assert_eq(zvmm_guest_stop(g), 0, "%s", logged);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(t[i].foreign, 0, "%s: vCPU %d read another's data",
			     l->mode, i);
	}
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_close(g);
}

/*
 * The documented way to map the memory a second time: the layout's fd at
 * its offset, touched only where zvmm_guest_access() made the range
 * ready. What one mapping writes the other reads, in both directions,
 * and a vCPU then finds exactly that, and zero elsewhere.
 */
Test(access, a_second_mapping_the_documented_way)
{
	struct zvmm_guest *g = open_guest("demand");
	const struct vmm_write w[] = { { 3 * MIB + 24, 1000 } };
	struct vcpu c = { .w = w, .nw = 1 };
	struct zvmm_layout lay;
	volatile uint64_t *two;
	pthread_t th;

	zvmm_guest_layout(g, &lay);
	cr_assert_geq(lay.fd, 0);
	cr_assert_eq(lay.bytes, POOL_BYTES);
	cr_assert_eq(lay.page_bytes, ZVMM_PAGE_2M);
	cr_assert_eq(lay.offset, 0);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_access(g, w[0].off, w[0].n * 8), 0, "%s",
		     logged);
	two = mmap(NULL, lay.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, lay.fd,
		   (off_t)lay.offset);
	cr_assert_neq(two, MAP_FAILED, "%s", strerror(errno));
	c.mem = lay.addr;
	c.bytes = lay.bytes;
	/* Written through the second mapping, read through the guest's. */
	for (uint64_t i = 0; i < w[0].n; i++)
		two[w[0].off / 8 + i] = MARK + i;
	for (uint64_t i = 0; i < w[0].n; i++)
		cr_assert_eq(c.mem[w[0].off / 8 + i], MARK + i);
	/* And back: the guest mapping's write is the file's. */
	c.mem[w[0].off / 8] = MARK;
	cr_assert_eq(two[w[0].off / 8], MARK);
	two[w[0].off / 8] = MARK + 0;
	cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_start(g);
	pthread_create(&th, NULL, vcpu, &c);
	pthread_join(th, NULL);
	munmap((void *)two, lay.bytes);
	cr_assert_eq(zvmm_guest_stop(g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_close(g);
	cr_assert_eq(c.lost, 0, "%llu written words changed",
		     (unsigned long long)c.lost);
	cr_assert_eq(c.foreign, 0, "%llu words of someone else's",
		     (unsigned long long)c.foreign);
}

/* One of two launches at once, run by its own thread (no asserts there). */
struct twin {
	const char *mode, *path;
	bool poll;
	struct vmm_write w;
	struct vcpu c;
	int err; /* the first failure, -errno */
	const char *where;
};

static void twin_fail(struct twin *t, int err, const char *where)
{
	if (!t->err) {
		t->err = err ? err : -EIO;
		t->where = where;
	}
}

static void *twin_run(void *arg)
{
	struct twin *t = arg;
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES / 2, ZVMM_PAGE_2M);
	struct pollfd p = { .events = POLLIN };
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	pthread_t th;
	void *addr;
	int ret;

	mem.pool_path = t->path;
	if (zvmm_policy_new(&pol) ||
	    zvmm_policy_set(pol, "zeroing.mode", t->mode) ||
	    zvmm_policy_set(pol, "pool.on_exit", "keep")) {
		twin_fail(t, -EINVAL, "policy");
		return NULL;
	}
	ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	if (ret) {
		twin_fail(t, ret, "open");
		return NULL;
	}
	ret = zvmm_guest_prepare(g, 0);
	if (!ret && !t->poll)
		ret = zvmm_guest_serve_thread(g, NULL, NULL);
	if (ret) {
		twin_fail(t, ret, "prepare");
		zvmm_guest_close(g);
		return NULL;
	}
	zvmm_guest_memory(g, &addr, &t->c.bytes);
	t->c.mem = addr;
	zvmm_guest_start(g);
	pthread_create(&th, NULL, vcpu, &t->c);
	/* The device model: this thread, which in poll mode also serves. */
	ret = zvmm_guest_access(g, t->w.off, t->w.n * 8);
	if (ret)
		twin_fail(t, ret, "access");
	for (uint64_t i = 0; !ret && i < t->w.n; i++)
		if (t->c.mem[t->w.off / 8 + i])
			twin_fail(t, -EIO, "the VMM read someone's data");
	for (uint64_t i = 0; !ret && i < t->w.n; i++)
		t->c.mem[t->w.off / 8 + i] = MARK + i;
	p.fd = zvmm_guest_fd(g);
	while (t->poll && pthread_tryjoin_np(th, NULL)) {
		if (p.fd >= 0 && poll(&p, 1, 10) > 0 &&
		    (ret = zvmm_guest_process(g)))
			twin_fail(t, ret, "process");
		else if (p.fd < 0)
			usleep(1000);
	}
	if (!t->poll)
		pthread_join(th, NULL);
	if ((ret = zvmm_guest_stop(g)))
		twin_fail(t, ret, "stop");
	if ((ret = zvmm_guest_exit(g)))
		twin_fail(t, ret, "exit");
	zvmm_guest_close(g);
	return NULL;
}

/*
 * Two launches at once in one process, each on its own pool full of
 * someone's data, one served from its VMM's loop and one by the library's
 * thread, each VMM writing where the other does not: neither vCPU reads a
 * word that is not zero or its own VMM's, neither VMM hangs.
 */
Test(access, two_launches_at_once)
{
	static const char *const modes[][2] = { { "demand", "hybrid" },
						{ "hybrid", "demand" },
						{ "prezero", "demand" } };
	const char *pool2 = MNT "/pool2";

	for (unsigned int m = 0; m < 3; m++) {
		struct twin t[2] = {
			{ .mode = modes[m][0],
			  .path = POOL,
			  .poll = true,
			  .w = { POOL_BYTES / 2 - 8192 - 8, 700 } },
			{ .mode = modes[m][1],
			  .path = pool2,
			  .poll = false,
			  .w = { 3 * MIB + 8, 300 } },
		};
		pthread_t th[2];

		test_poison_file(POOL, POOL_BYTES / 2);
		test_poison_file(pool2, POOL_BYTES / 2);
		for (int i = 0; i < 2; i++) {
			t[i].c.w = &t[i].w;
			t[i].c.nw = 1;
			pthread_create(&th[i], NULL, twin_run, &t[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		unlink(POOL);
		unlink(pool2);
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(t[i].err, 0, "%s: %s: %s: %s", t[i].mode,
				     t[i].where, strerror(-t[i].err), logged);
			cr_assert(t[i].c.done);
			cr_assert_eq(
				t[i].c.foreign, 0,
				"%s beside %s: %llu words of someone else's",
				t[i].mode, t[!i].mode,
				(unsigned long long)t[i].c.foreign);
		}
	}
}

static sigjmp_buf after_fault;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(after_fault, 1);
}

/*
 * After zvmm_guest_exit() the guest mapping is no one's: a VMM thread
 * that outlived the guest neither writes into a pool on_exit recorded as
 * zero nor waits on a fault no one serves. Its write faults; access() is
 * refused.
 */
Test(access, nothing_touches_guest_memory_after_exit)
{
	struct zvmm_guest *g = open_guest("demand");
	struct sigaction sa = { .sa_handler = on_segv }, old;
	volatile uint64_t *mem;
	volatile bool faulted = false;
	uint64_t bytes;
	void *addr;

	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	zvmm_guest_memory(g, &addr, &bytes);
	mem = addr;
	cr_assert_eq(zvmm_guest_access(g, 0, 4096), 0, "%s", logged);
	mem[0] = MARK;
	cr_assert_eq(zvmm_guest_stop(g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_exit(g), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_access(g, 0, 4096), -EINVAL);
	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(after_fault, 1))
		mem[8] = MARK; /* a write after exit */
	else
		faulted = true;
	sigaction(SIGSEGV, &old, NULL);
	zvmm_guest_close(g);
	cr_assert(faulted, "a write to the guest mapping after exit went in");
}
