// SPDX-License-Identifier: MIT
/*
 * The trust boundary (docs/DESIGN.md, zvmm(1), libzvmm(3)): a pool and
 * the state directory may be written by the euid that runs zvmm and by
 * root, and by no one else; what the state record proves must hold
 * against every writer, not only against zvmm's own launches.
 *
 * - [pool] record = trust | verify | never;
 * - named pools outside the boundary are refused (-EPERM, exit 3 with
 *   the command that fixes it) and left exactly as they were: another
 *   owner, a group or other write bit, a symlink on the path, a
 *   directory others can write that is not sticky; an empty file zvmm
 *   did not create is never unlinked; the same with openat2(2) refused
 *   by a seccomp filter (suites trust_openat2_enosys, _eperm);
 * - a pool another process has open or mapped is refused, naming it;
 * - writers between launches (through a shared mapping, aiming around
 *   the lines zvmm used to sample, or setting the times back) and
 *   during a run (a page punched out, a page written behind zvmm's
 *   back): the next tenant reads zero in every byte;
 * - a state directory outside the boundary gets no record and vouches
 *   for nothing; a symlink where a record goes is never followed;
 * - a child forked after prepare cannot reach guest memory.
 *
 * Through the public header and the zvmm binary alone. Messages a
 * refusal logs go to a buffer (zvmm_set_log()) or, for the binary, to
 * the captured output: none reaches the test's own output.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "../include/zvmm/zvmm.h"
#include "helpers.h"

#define PAGE ZVMM_PAGE_2M
#define PAGES 8
#define POOL_BYTES (PAGES * PAGE)
#define NOBODY 65534
#define MARKS 8

static char mnt[64], pool[160], state[80], good[96], victim[96];
static char victim2[112], dirlink[96];
static struct zvmm_reservation *resv;
static struct zvmm_guest *live; /* open when an assertion fails */
static bool mounted;
static pid_t holder; /* a process holding the pool open */
static int holder_go = -1; /* closing it lets the holder end */
static char logged[16384];
static struct test_run r;

static void log_cb(void *arg, enum zvmm_log_level level, const char *msg)
{
	size_t n = strlen(logged);

	(void)arg;
	(void)level;
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static void setup(void)
{
	int pid = (int)getpid();

	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-trust.%d", pid);
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "/tmp/zvmm-test-trust-state.%d", pid);
	snprintf(good, sizeof(good), "%s.good", state);
	snprintf(victim, sizeof(victim), "/tmp/zvmm-test-trust-victim.%d", pid);
	snprintf(victim2, sizeof(victim2), "%s.2", victim);
	snprintf(dirlink, sizeof(dirlink), "/tmp/zvmm-test-trust-link.%d", pid);
	setenv("ZVMM_STATE_DIR", state, 1);
	logged[0] = '\0';
	zvmm_set_log(log_cb, NULL, ZVMM_LOG_DEBUG);
}

static void teardown(void)
{
	char cmd[512];

	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
	}
	holder = 0;
	if (holder_go >= 0)
		close(holder_go);
	holder_go = -1;
	zvmm_guest_close(live);
	live = NULL;
	/* Unmounting hugetlbfs frees every file and page in it. */
	if (mounted && umount(mnt))
		umount2(mnt, MNT_DETACH);
	mounted = false;
	rmdir(mnt);
	unlink(dirlink);
	unlink(victim);
	unlink(victim2);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", state, good);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
	zvmm_hugepages_release(resv);
	resv = NULL;
	zvmm_set_log(NULL, NULL, ZVMM_LOG_ERROR);
}

TestSuite(trust, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(trust_openat2_enosys, .init = setup, .fini = teardown,
	  .timeout = 120);
TestSuite(trust_openat2_eperm, .init = setup, .fini = teardown, .timeout = 120);

/*
 * A test of a named pool's path and directory, as it is and again with
 * openat2(2) refused as valgrind, an older kernel or a container
 * runtime's seccomp filter refuse it (ENOSYS, EPERM): the directory is
 * then reached one component at a time, and the boundary is the same.
 * The filter is the test process's and the zvmm it runs inherits it.
 */
#define PATH_TEST(name)                      \
	static void name(void);              \
	Test(trust, name)                    \
	{                                    \
		name();                      \
	}                                    \
	Test(trust_openat2_enosys, name)     \
	{                                    \
		test_refuse_openat2(ENOSYS); \
		name();                      \
	}                                    \
	Test(trust_openat2_eperm, name)      \
	{                                    \
		test_refuse_openat2(EPERM);  \
		name();                      \
	}                                    \
	static void name(void)

/* Root, two pools' worth of free 2 MiB pages, a hugetlbfs mount. */
static void need_pool(void)
{
	int ret;

	test_on_skip(teardown);
	test_need_root("hugetlbfs mount, hugepages, chown");
	ret = zvmm_hugepages_reserve(PAGE, 2 * PAGES, &resv);
	if (ret)
		test_skip(TEST_NEED_HUGEPAGES, "cannot reserve %d: %s",
			  2 * PAGES, strerror(-ret));
	cr_assert_eq(mkdir(mnt, 0700), 0, "mkdir %s: %s", mnt, strerror(errno));
	if (mount("none", mnt, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount at %s: %s", mnt,
			  strerror(errno));
	mounted = true;
}

/* ------------------------------------------------------------ launches */

static struct zvmm_policy *policy(const char *mode, const char *on_exit,
				  const char *record)
{
	struct zvmm_policy *p;

	cr_assert_eq(zvmm_policy_new(&p), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.mode", mode), 0);
	cr_assert_eq(zvmm_policy_set(p, "pool.on_exit", on_exit), 0);
	/* No calibration: a fixed backend, small chunks. */
	cr_assert_eq(zvmm_policy_set(p, "zeroing.backend", "memset"), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.workers", "2"), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.chunk", "256K"), 0);
	if (record)
		cr_assert_eq(zvmm_policy_set(p, "pool.record", record), 0,
			     "pool.record = %s refused: %s", record, logged);
	return p;
}

/* zvmm_guest_open() of @path; a guest it opens is closed again. */
static int open_and_close(const char *path, const struct zvmm_policy *pol)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, PAGE);
	struct zvmm_guest *g = NULL;
	int ret;

	mem.pool_path = path;
	ret = zvmm_guest_open(&mem, pol, &g);
	if (!ret)
		zvmm_guest_close(g);
	return ret;
}

/* Offset of mark @k in page @p for @seed: never on a fixed line. */
static uint64_t mark_off(uint64_t p, unsigned int k, unsigned int seed)
{
	uint64_t x = (p * 0x9e3779b97f4a7c15ull) ^ (k * 0xbf58476d1ce4e5b9ull) ^
		     (seed * 0x94d049bb133111ebull);

	x ^= x >> 31;
	return (x % (PAGE / MARKS / 8)) * 8 + k * (PAGE / MARKS);
}

static uint64_t mark_val(uint64_t p, unsigned int k, unsigned int seed)
{
	return 0x5a5a000000000000ull | (uint64_t)seed << 32 | p << 8 | k;
}

/* Non-zero words in page @p of @mem: every word read. */
static uint64_t page_foreign(const volatile uint64_t *mem, uint64_t p)
{
	const volatile uint64_t *w = mem + p * PAGE / 8;
	uint64_t n = 0;

	for (uint64_t i = 0; i < PAGE / 8; i++)
		n += w[i] != 0;
	return n;
}

static void page_mark(volatile uint64_t *mem, uint64_t p, unsigned int seed)
{
	for (unsigned int k = 0; k < MARKS; k++)
		mem[(p * PAGE + mark_off(p, k, seed)) / 8] =
			mark_val(p, k, seed);
}

/* Marks of @seed in page @p that are not what the guest wrote. */
static unsigned int page_lost(const volatile uint64_t *mem, uint64_t p,
			      unsigned int seed)
{
	unsigned int n = 0;

	for (unsigned int k = 0; k < MARKS; k++)
		n += mem[(p * PAGE + mark_off(p, k, seed)) / 8] !=
		     mark_val(p, k, seed);
	return n;
}

struct tenant {
	struct zvmm_stats open; /* right after zvmm_guest_open() */
	struct zvmm_stats end; /* after on_exit */
	uint64_t foreign; /* non-zero words read, every word of every page */
	int exit_ret;
};

/*
 * One launch on the pool, as a VMM with one vCPU would: open, prepare,
 * serve (the library's thread), read every word of every page and, with
 * @seed, write marks; stop, on_exit, close.
 */
static void tenant(const char *mode, const char *on_exit, const char *record,
		   unsigned int seed, struct tenant *t)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, PAGE);
	struct zvmm_policy *pol = policy(mode, on_exit, record);
	volatile uint64_t *w;
	uint64_t bytes;
	void *addr;
	int ret;

	memset(t, 0, sizeof(*t));
	mem.pool_path = pool;
	ret = zvmm_guest_open(&mem, pol, &live);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s: %s", strerror(-ret), logged);
	zvmm_guest_stats(live, &t->open);
	cr_assert_eq(zvmm_guest_prepare(live, 0), 0, "%s", logged);
	if (zvmm_guest_fd(live) >= 0)
		cr_assert_eq(zvmm_guest_serve_thread(live, NULL, NULL), 0);
	zvmm_guest_memory(live, &addr, &bytes);
	cr_assert_eq(bytes, POOL_BYTES);
	w = addr;
	zvmm_guest_start(live);
	for (uint64_t p = 0; p < PAGES; p++) {
		t->foreign += page_foreign(w, p);
		if (seed)
			page_mark(w, p, seed);
	}
	cr_assert_eq(zvmm_guest_stop(live), 0, "%s", logged);
	t->exit_ret = zvmm_guest_exit(live);
	zvmm_guest_stats(live, &t->end);
	zvmm_guest_close(live);
	live = NULL;
}

/*
 * A launch that writes marks and leaves the pool zero (on_exit = scrub),
 * with a record when @record says it must write one.
 */
static void scrubbed_launch(unsigned int seed, bool record)
{
	struct tenant t;

	tenant("demand", "scrub", NULL, seed, &t);
	cr_assert_eq(t.exit_ret, 0, "on_exit = scrub: %s", logged);
	if (record)
		cr_assert(t.end.record_written,
			  "on_exit = scrub wrote no record: %s", logged);
}

/* ------------------------------------------------------ outside writers */

/* The four lines of every page zvmm sampled before this boundary. */
static bool old_sample(uint64_t off_in_page)
{
	for (uint64_t k = 0; k < 4; k++) {
		uint64_t s = (PAGE - 64) / 3 * k & ~63ull;

		if (off_in_page >= s && off_in_page < s + 64)
			return true;
	}
	return false;
}

enum {
	W_DENSE = 1, /* every line of every page but the four old samples */
	W_SPARSE = 2, /* a few words in pages 2 and 5, off those lines */
	W_RESTORE_TIMES = 4, /* then atime and mtime set back (futimens) */
};

/* In a child: what another process with write access to the pool does. */
static int writer(const char *path, unsigned int how)
{
	struct timespec ts[2];
	struct stat st;
	uint8_t *p;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size != (off_t)POOL_BYTES)
		return 1;
	p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 2;
	for (uint64_t pg = 0; pg < PAGES; pg++) {
		uint8_t *page = p + pg * PAGE;

		if (how & W_DENSE) {
			for (uint64_t off = 0; off < PAGE; off += 64)
				if (!old_sample(off))
					memset(page + off, 0xa5, 64);
		}
		if ((how & W_SPARSE) && (pg == 2 || pg == 5)) {
			for (uint64_t k = 0; k < 8; k++) {
				uint64_t off = k * (PAGE / 8) + 4096 + 8 * k;

				if (!old_sample(off))
					*(volatile uint64_t *)(page + off) =
						0xbad0000000000000ull | pg;
			}
		}
	}
	munmap(p, POOL_BYTES);
	if (how & W_RESTORE_TIMES) {
		ts[0] = st.st_atim;
		ts[1] = st.st_mtim;
		if (futimens(fd, ts))
			return 3;
	}
	close(fd);
	return 0;
}

/* Another process writes the pool as @how says, and exits. */
static void outside_write(unsigned int how)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(writer(pool, how));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the outside writer failed (%d)", st);
}

/*
 * Another process holds the pool: its own fd, or (@map_only) a
 * MAP_SHARED mapping of it whose fd it closed. It runs until
 * release_holder().
 */
static void hold_pool(const char *path, bool map_only)
{
	int ready[2], go[2];
	char c;

	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	holder = fork();
	cr_assert_geq(holder, 0);
	if (!holder) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		if (map_only) {
			if (mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, 0) == MAP_FAILED)
				_exit(2);
			close(fd);
		}
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		if (read(go[0], &c, 1) < 0)
			_exit(4);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	holder_go = go[1];
	cr_assert_eq(read(ready[0], &c, 1), 1, "the holder could not open %s",
		     path);
	close(ready[0]);
}

static void release_holder(void)
{
	close(holder_go);
	holder_go = -1;
	cr_assert_eq(waitpid(holder, NULL, 0), holder);
	holder = 0;
}

/* ----------------------------------------------------- files as they were */

struct snap {
	struct stat st;
	uint64_t sum; /* FNV-1a of the contents, read without faulting */
	bool exists;
};

static struct snap snap_file(const char *path)
{
	struct snap s = { .sum = 0xcbf29ce484222325ull };
	static uint8_t buf[1 << 16];
	ssize_t n;
	off_t off = 0;
	int fd;

	if (lstat(path, &s.st))
		return s;
	s.exists = true;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	/* read(2): holes read as zero and stay holes. */
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			s.sum = (s.sum ^ buf[i]) * 0x100000001b3ull;
		off += n;
	}
	close(fd);
	return s;
}

static void same_file(const char *path, const struct snap *a, const char *what)
{
	struct snap b = snap_file(path);

	cr_assert(b.exists, "%s: %s was removed", what, path);
	cr_expect_eq(b.st.st_ino, a->st.st_ino, "%s: %s was replaced", what,
		     path);
	cr_expect_eq(b.st.st_size, a->st.st_size, "%s: size %lld, was %lld",
		     what, (long long)b.st.st_size, (long long)a->st.st_size);
	cr_expect_eq(b.st.st_blocks, a->st.st_blocks,
		     "%s: blocks %lld, were %lld", what,
		     (long long)b.st.st_blocks, (long long)a->st.st_blocks);
	cr_expect_eq(b.st.st_uid, a->st.st_uid, "%s: owner %u, was %u", what,
		     b.st.st_uid, a->st.st_uid);
	cr_expect_eq(b.st.st_gid, a->st.st_gid, "%s: group changed", what);
	cr_expect_eq(b.st.st_mode, a->st.st_mode, "%s: mode %o, was %o", what,
		     b.st.st_mode, a->st.st_mode);
	cr_expect(b.st.st_mtim.tv_sec == a->st.st_mtim.tv_sec &&
			  b.st.st_mtim.tv_nsec == a->st.st_mtim.tv_nsec,
		  "%s: mtime changed", what);
	cr_expect_eq(b.sum, a->sum, "%s: the contents changed", what);
}

/*
 * A file of @bytes at @path with its first page poisoned, then @mode and
 * @uid: a pool someone else made.
 */
static void make_file(const char *path, uint64_t bytes, mode_t mode, uid_t uid)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	void *p;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	if (bytes) {
		cr_assert_eq(ftruncate(fd, (off_t)bytes), 0);
		p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		cr_assert_neq(p, MAP_FAILED, "%s", strerror(errno));
		memset(p, POISON, PAGE);
		munmap(p, PAGE);
	}
	cr_assert_eq(fchmod(fd, mode), 0);
	cr_assert_eq(fchown(fd, uid, uid), 0);
	close(fd);
}

/* The names in @dir, sorted, one per line ("" when it is missing). */
static void list_dir(const char *dir, char *out, size_t len)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t l = strlen(out);

		if (strcmp(ents[i]->d_name, ".") &&
		    strcmp(ents[i]->d_name, ".."))
			snprintf(out + l, len - l, "%s\n", ents[i]->d_name);
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

/* The one record in @dir (pool-DEV-INODE.state): its path into @out. */
static void record_in(const char *dir, char *out, size_t len)
{
	char names[1024], *nl;

	list_dir(dir, names, sizeof(names));
	nl = strchr(names, '\n');
	cr_assert(nl && !nl[1] && !strncmp(names, "pool-", 5) &&
			  strstr(names, ".state\n"),
		  "%s should hold one record, holds: %s", dir, names);
	*nl = '\0';
	snprintf(out, len, "%s/%.160s", dir, names);
}

/* ------------------------------------------------------------ the key */

Test(trust, record_is_a_policy_key)
{
	static const char *const ok[] = { "trust", "verify", "never" };
	struct zvmm_policy *p;
	char buf[4096], path[128];

	cr_assert_eq(zvmm_policy_new(&p), 0);
	cr_assert_gt(zvmm_policy_format(p, buf, sizeof(buf)), 0);
	cr_expect(strstr(buf, "record = trust"), "the default: %s", buf);
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(zvmm_policy_set(p, "pool.record", ok[i]), 0,
			     "pool.record = %s: %s", ok[i], logged);
		cr_assert_gt(zvmm_policy_format(p, buf, sizeof(buf)), 0);
		cr_assert(strstr(buf, ok[i]), "%s", buf);
	}
	cr_assert_eq(zvmm_policy_set(p, "pool.record", "sometimes"), -EINVAL);
	snprintf(path, sizeof(path), "/tmp/zvmm-test-trust.%d.conf",
		 (int)getpid());
	test_write_text(path, "[pool]\nrecord = verify\n");
	cr_assert_eq(zvmm_policy_load(p, path), 0, "%s", logged);
	unlink(path);
	cr_assert_gt(zvmm_policy_format(p, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "record = verify"), "%s", buf);
	zvmm_policy_free(p);
}

/* never: a clean record, which trust would use, skips nothing. */
Test(trust, record_never_trusts_no_record)
{
	struct tenant t;

	need_pool();
	scrubbed_launch(3, true);
	tenant("demand", "keep", NULL, 0, &t);
	cr_assert(t.open.record_clean,
		  "a clean record was not trusted by default: %s", logged);
	scrubbed_launch(4, true);
	tenant("demand", "keep", "never", 0, &t);
	cr_expect(!t.open.record_clean, "record = never trusted a record");
	cr_expect_eq(t.open.zero_pages, 0,
		     "record = never: %llu pages taken as zero at open",
		     (unsigned long long)t.open.zero_pages);
	cr_expect_eq(t.foreign, 0, "the guest read %llu non-zero words",
		     (unsigned long long)t.foreign);
}

/*
 * verify: every byte is read before the record is trusted, so a few
 * words written off every line zvmm could sample are found, and their
 * pages are not mapped as zero.
 */
Test(trust, record_verify_finds_a_sparse_writer)
{
	struct tenant t;

	need_pool();
	scrubbed_launch(3, true);
	outside_write(W_SPARSE);
	tenant("demand", "keep", "verify", 0, &t);
	cr_expect_geq(t.open.dirty_pages, 2,
		      "record = verify: %llu dirty pages at open, 2 written",
		      (unsigned long long)t.open.dirty_pages);
	cr_expect_eq(t.foreign, 0,
		     "record = verify: the guest read %llu written words",
		     (unsigned long long)t.foreign);
	/* And a pool no one wrote still reads zero. */
	scrubbed_launch(5, true);
	tenant("prezero", "keep", "verify", 0, &t);
	cr_expect_eq(t.foreign, 0, "the guest read %llu non-zero words",
		     (unsigned long long)t.foreign);
}

/* -------------------------------------------------- pools in the boundary */

/* @path is refused (-EPERM, or -ELOOP with @loop_ok) and left as it was. */
static void refused(const char *path, bool loop_ok, const char *fix,
		    const char *what)
{
	char before[1024], after[1024];
	struct snap s = snap_file(pool);
	int ret;

	list_dir(state, before, sizeof(before));
	logged[0] = '\0';
	ret = open_and_close(path, NULL);
	cr_assert(ret == -EPERM || (loop_ok && ret == -ELOOP),
		  "%s: open returned %d (%s), want -EPERM: %s", what, ret,
		  ret ? strerror(-ret) : "opened", logged);
	if (fix)
		cr_expect(strstr(logged, fix), "%s: the log names no '%s': %s",
			  what, fix, logged);
	same_file(pool, &s, what);
	list_dir(state, after, sizeof(after));
	cr_expect_str_eq(after, before, "%s: the state directory changed",
			 what);
}

PATH_TEST(pool_of_another_owner_is_refused)
{
	need_pool();
	/* A record for it, left while it was ours: neither read nor used. */
	scrubbed_launch(3, true);
	cr_assert_eq(chown(pool, NOBODY, NOBODY), 0);
	refused(pool, false, "chown", "a pool owned by uid 65534");
}

PATH_TEST(pool_others_can_write_is_refused)
{
	static const mode_t modes[] = { 0620, 0602, 0666 };

	need_pool();
	scrubbed_launch(3, true);
	for (unsigned int i = 0; i < 3; i++) {
		char what[64];

		snprintf(what, sizeof(what), "a pool of mode %o", modes[i]);
		cr_assert_eq(chmod(pool, modes[i]), 0);
		refused(pool, false, "chmod", what);
	}
}

/* hugetlbfs has no symlinks: the links live in /tmp, beside the mount. */
PATH_TEST(symlink_to_the_pool_is_refused)
{
	need_pool();
	make_file(pool, POOL_BYTES, 0600, 0);
	cr_assert_eq(symlink(pool, dirlink), 0, "%s", strerror(errno));
	refused(dirlink, true, NULL, "a symlink to the pool");
}

PATH_TEST(symlinked_directory_on_the_path_is_refused)
{
	char path[160];

	need_pool();
	make_file(pool, POOL_BYTES, 0600, 0);
	cr_assert_eq(symlink(mnt, dirlink), 0, "%s", strerror(errno));
	snprintf(path, sizeof(path), "%s/pool", dirlink);
	refused(path, true, NULL, "a symlinked directory on the path");
}

/*
 * A new pool through a symlinked directory, or through a symlink to
 * where no file is: zvmm creates nothing.
 */
PATH_TEST(symlink_creates_no_pool)
{
	char path[160], target[128];
	int ret;

	need_pool();
	cr_assert_eq(symlink(mnt, dirlink), 0, "%s", strerror(errno));
	snprintf(path, sizeof(path), "%s/pool", dirlink);
	ret = open_and_close(path, NULL);
	cr_expect(ret == -EPERM || ret == -ELOOP,
		  "a new pool through a symlinked directory: %d: %s", ret,
		  logged);
	cr_expect_neq(access(pool, F_OK), 0,
		      "a pool was made through a symlinked directory");
	unlink(dirlink);
	snprintf(target, sizeof(target), "%s/made-through-a-link", mnt);
	cr_assert_eq(symlink(target, dirlink), 0, "%s", strerror(errno));
	logged[0] = '\0';
	ret = open_and_close(dirlink, NULL);
	cr_expect(ret == -EPERM || ret == -ELOOP,
		  "open through a dangling symlink returned %d: %s", ret,
		  logged);
	cr_expect_neq(access(target, F_OK), 0,
		      "zvmm created the symlink's target");
}

PATH_TEST(pool_in_a_directory_others_can_write_is_refused)
{
	char dir[96];

	need_pool();
	snprintf(dir, sizeof(dir), "%s/shared", mnt);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	make_file(pool, POOL_BYTES, 0600, 0);
	refused(pool, false, "chmod", "a pool in a directory of mode 0777");
	/* Sticky: no one else can remove or replace it there. */
	cr_assert_eq(chmod(dir, 01777), 0);
	logged[0] = '\0';
	cr_assert_eq(open_and_close(pool, NULL), 0,
		     "a pool in a sticky directory was refused: %s", logged);
}

PATH_TEST(new_pool_in_a_directory_others_can_write_is_refused)
{
	char dir[96];
	int ret;

	need_pool();
	snprintf(dir, sizeof(dir), "%s/shared", mnt);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	ret = open_and_close(pool, NULL);
	cr_expect_eq(ret, -EPERM, "a new pool in a 0777 directory: %d: %s", ret,
		     logged);
	cr_expect_neq(access(pool, F_OK), 0, "a refused pool was left behind");
}

/* A new pool is the euid's, 0600, whatever the umask. */
PATH_TEST(new_pool_is_the_euids_and_private)
{
	struct stat st;
	mode_t old;

	need_pool();
	old = umask(0);
	cr_assert_eq(open_and_close(pool, NULL), 0, "%s", logged);
	umask(old);
	cr_assert_eq(stat(pool, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0600, "a new pool of mode %o",
		     st.st_mode & 07777);
	cr_expect_eq(st.st_uid, geteuid());
}

/* The same as another user: its pool is its own, 0600. */
PATH_TEST(new_pool_of_a_user_is_its_own)
{
	char dir[96], ustate[96], cmd[160];
	struct stat st;

	need_pool();
	snprintf(dir, sizeof(dir), "%s/user", mnt);
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	snprintf(ustate, sizeof(ustate), "%s.user", state);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
	cr_assert_eq(mkdir(ustate, 0700), 0);
	cr_assert_eq(chown(ustate, NOBODY, NOBODY), 0);
	setenv("ZVMM_STATE_DIR", ustate, 1);
	cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem", "16M",
						     "--pool", pool, "--set",
						     "zeroing.backend=memset",
						     "--quiet", NULL },
				   true, &r),
		     0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ustate);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
	cr_assert_eq(r.status, 0, "as uid 65534: status %d: %s", r.status,
		     r.out);
	cr_assert_eq(stat(pool, &st), 0);
	cr_expect_eq(st.st_uid, NOBODY);
	cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
}

/* The binary: exit 3, the fix on standard error, the file untouched. */
PATH_TEST(binary_refuses_a_pool_outside_the_boundary)
{
	static const struct {
		mode_t mode;
		uid_t uid;
		const char *fix;
	} cases[] = { { 0600, NOBODY, "chown" }, { 0666, 0, "chmod" } };

	need_pool();
	for (unsigned int i = 0; i < 2; i++) {
		struct snap s;

		unlink(pool);
		make_file(pool, POOL_BYTES, cases[i].mode, cases[i].uid);
		s = snap_file(pool);
		cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem",
							     "16M", "--pool",
							     pool, "--quiet",
							     NULL },
					   false, &r),
			     0);
		cr_expect_eq(r.status, 3, "mode %o uid %u: status %d: %s",
			     cases[i].mode, cases[i].uid, r.status, r.out);
		cr_expect(strstr(r.out, cases[i].fix),
			  "mode %o uid %u: no '%s' in: %s", cases[i].mode,
			  cases[i].uid, cases[i].fix, r.out);
		same_file(pool, &s, cases[i].fix);
	}
}

/* The binary: a symlink on the pool's path is exit 3, saying so. */
PATH_TEST(binary_refuses_a_symlink_on_the_pool_path)
{
	char path[160];

	need_pool();
	make_file(pool, POOL_BYTES, 0600, 0);
	cr_assert_eq(symlink(mnt, dirlink), 0, "%s", strerror(errno));
	snprintf(path, sizeof(path), "%s/pool", dirlink);
	cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem", "16M",
						     "--pool", path, "--quiet",
						     NULL },
				   false, &r),
		     0);
	cr_expect_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_expect(strstr(r.out, "a symbolic link is on its path"),
		  "no 'a symbolic link is on its path' in: %s", r.out);
}

/*
 * An empty file zvmm did not create, given as the pool: when the open
 * fails after it was opened, it is still there, empty.
 */
Test(trust, empty_file_zvmm_did_not_create_is_left_in_place)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(64ULL << 30, PAGE);
	struct zvmm_guest *g = NULL;
	struct stat st;
	int ret;

	need_pool();
	make_file(pool, 0, 0600, 0);
	setenv("ZVMM_INJECT", "mmap", 1);
	ret = test_run_zvmm((const char *[]){ "prezero", "--mem", "16M",
					      "--pool", pool, "--quiet", NULL },
			    false, &r);
	unsetenv("ZVMM_INJECT");
	cr_assert_eq(ret, 0);
	cr_expect_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert_eq(stat(pool, &st), 0,
		     "a failed open unlinked a file zvmm did not create: %s",
		     r.out);
	cr_expect_eq(st.st_size, 0, "left %lld bytes long",
		     (long long)st.st_size);
	cr_expect_eq(st.st_mode & 07777, 0600);
	/* Not enough hugepages for it, through the library. */
	mem.pool_path = pool;
	ret = zvmm_guest_open(&mem, NULL, &g);
	if (!ret)
		zvmm_guest_close(g);
	cr_expect_neq(ret, 0, "64 GiB of 2 MiB pages opened");
	cr_assert_eq(stat(pool, &st), 0,
		     "a failed open unlinked a file zvmm did not create: %s",
		     logged);
	cr_expect_eq(st.st_size, 0, "left %lld bytes long",
		     (long long)st.st_size);
}

/* ---------------------------------------------------- others holding it */

ParameterizedTestParameters(trust, pool_open_elsewhere_is_refused)
{
	static bool map_only[] = { false, true };

	return cr_make_param_array(bool, map_only, 2);
}

/*
 * Another process has the pool open (an fd; or only a shared mapping,
 * its fd closed): the open is -EBUSY naming that pid; once it is gone,
 * the next open works.
 */
ParameterizedTest(bool *map_only, trust, pool_open_elsewhere_is_refused)
{
	char want[64];
	int ret;

	need_pool();
	cr_assert_eq(open_and_close(pool, NULL), 0, "%s", logged);
	hold_pool(pool, *map_only);
	logged[0] = '\0';
	ret = open_and_close(pool, NULL);
	snprintf(want, sizeof(want), "open by pid %d", (int)holder);
	cr_expect_eq(ret, -EBUSY, "%s held elsewhere: open returned %d: %s",
		     *map_only ? "mapped" : "open", ret, logged);
	cr_expect(strstr(logged, want), "no '%s' in: %s", want, logged);
	release_holder();
	logged[0] = '\0';
	cr_assert_eq(open_and_close(pool, NULL), 0,
		     "refused after the other process ended: %s", logged);
}

Test(trust, binary_names_the_pid_holding_the_pool)
{
	char want[64];

	need_pool();
	cr_assert_eq(open_and_close(pool, NULL), 0, "%s", logged);
	hold_pool(pool, false);
	cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem", "16M",
						     "--pool", pool, "--quiet",
						     NULL },
				   false, &r),
		     0);
	snprintf(want, sizeof(want), "pid %d", (int)holder);
	cr_expect_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_expect(strstr(r.out, want), "no '%s' in: %s", want, r.out);
	release_holder();
	cr_assert_eq(test_run_zvmm((const char *[]){ "prezero", "--mem", "16M",
						     "--pool", pool, "--quiet",
						     NULL },
				   false, &r),
		     0);
	cr_expect_eq(r.status, 0, "after the holder ended: %d: %s", r.status,
		     r.out);
}

/* ------------------------------------------------ writers between launches */

struct between {
	char mode[12]; /* the next tenant's */
	bool restore_times;
};

ParameterizedTestParameters(trust, writer_between_launches_is_caught)
{
	static struct between cases[] = {
		{ "prezero", false }, { "demand", false }, { "hybrid", false },
		{ "prezero", true },  { "demand", true },  { "hybrid", true },
	};

	return cr_make_param_array(struct between, cases,
				   sizeof(cases) / sizeof(cases[0]));
}

/*
 * After a scrub wrote the record, another process maps the pool and
 * writes every line of every page but the four zvmm used to sample
 * (then, in half the cases, sets atime and mtime back): the next
 * launch trusts no record and its guest reads zero everywhere.
 */
ParameterizedTest(struct between *c, trust, writer_between_launches_is_caught)
{
	struct tenant t;

	need_pool();
	scrubbed_launch(3, true);
	outside_write(W_DENSE | (c->restore_times ? W_RESTORE_TIMES : 0));
	tenant(c->mode, "keep", NULL, 0, &t);
	cr_expect_eq(t.foreign, 0,
		     "%s%s: the guest read %llu of the writer's words", c->mode,
		     c->restore_times ? ", times set back" : "",
		     (unsigned long long)t.foreign);
	cr_expect(!t.open.record_clean, "%s%s: the record was trusted", c->mode,
		  c->restore_times ? ", times set back" : "");
}

/*
 * mtime set back with utimensat(2) after a write through a mapping: the
 * stamp (ctime moved) tells, whatever the samples see.
 */
Test(trust, mtime_set_back_does_not_restore_trust)
{
	struct timespec ts[2];
	struct tenant t;
	struct stat st;
	uint64_t *p;
	int fd;

	need_pool();
	scrubbed_launch(3, true);
	cr_assert_eq(stat(pool, &st), 0);
	fd = open(pool, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	p[(3 * PAGE + 123456 * 8) / 8] = 0xbad0000000000003ull;
	munmap(p, POOL_BYTES);
	close(fd);
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1] = st.st_mtim;
	cr_assert_eq(utimensat(AT_FDCWD, pool, ts, 0), 0);
	tenant("demand", "keep", NULL, 0, &t);
	cr_expect(!t.open.record_clean, "the record was trusted");
	cr_expect_eq(t.foreign, 0, "the guest read %llu written words",
		     (unsigned long long)t.foreign);
}

/* ------------------------------------------------- writers during a run */

ParameterizedTestParameters(trust, writer_during_a_run_is_caught)
{
	static char modes[][12] = { "demand", "hybrid" };

	return cr_make_param_array(char[12], modes, 2);
}

#define PUNCHED 1 /* touched by the guest, then punched out */
#define WRITTEN 6 /* never touched, written behind zvmm's back */
#define WRITTEN_TOUCHED 7 /* written behind zvmm's back, then touched */

/* In a child: punch page PUNCHED out, write the two others. */
static int run_writer(void)
{
	int fd = open(pool, O_RDWR | O_CLOEXEC);
	uint8_t *p;

	if (fd < 0)
		return 1;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(PUNCHED * PAGE), (off_t)PAGE))
		return 2;
	p = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 3;
	for (uint64_t off = 0; off < PAGE; off += 64) {
		if (old_sample(off))
			continue;
		memset(p + WRITTEN * PAGE + off, POISON, 64);
		memset(p + WRITTEN_TOUCHED * PAGE + off, POISON, 64);
	}
	munmap(p, POOL_BYTES);
	close(fd);
	return 0;
}

/*
 * A new pool, on_exit = scrub. While the guest runs, another process
 * punches out a page the guest touched and writes two it never touched
 * (the block count stays the same); the guest then touches one of them
 * and more. The guest reads only zero, its own marks stay, and the next
 * tenant reads zero in every byte.
 */
ParameterizedTest(char *mode, trust, writer_during_a_run_is_caught)
{
	static const unsigned int before[] = { 0, 1, 2 };
	static const unsigned int after[] = { 3, 4, WRITTEN_TOUCHED };
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, PAGE);
	struct zvmm_policy *pol;
	volatile uint64_t *w;
	uint64_t bytes, read_during = 0, lost = 0;
	struct tenant t;
	void *addr;
	pid_t pid;
	int ret, st;

	need_pool();
	pol = policy(mode, "scrub", NULL);
	/* hybrid: a background slow enough not to reach the pages written */
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.rate_limit", "16M"), 0);
	mem.pool_path = pool;
	ret = zvmm_guest_open(&mem, pol, &live);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s: %s", strerror(-ret), logged);
	cr_assert_eq(zvmm_guest_prepare(live, 0), 0, "%s", logged);
	cr_assert_eq(zvmm_guest_serve_thread(live, NULL, NULL), 0);
	zvmm_guest_memory(live, &addr, &bytes);
	w = addr;
	zvmm_guest_start(live);
	for (unsigned int i = 0; i < 3; i++) {
		read_during += page_foreign(w, before[i]);
		page_mark(w, before[i], 9);
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(run_writer());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "the writer failed: %d",
		  st);
	for (unsigned int i = 0; i < 3; i++) {
		read_during += page_foreign(w, after[i]);
		page_mark(w, after[i], 9);
	}
	for (unsigned int i = 0; i < 3; i++) {
		if (before[i] != PUNCHED)
			lost += page_lost(w, before[i], 9);
		lost += page_lost(w, after[i], 9);
	}
	cr_assert_eq(zvmm_guest_stop(live), 0, "%s", logged);
	ret = zvmm_guest_exit(live);
	zvmm_guest_close(live);
	live = NULL;
	cr_expect_eq(read_during, 0,
		     "%s: the guest read %llu words written behind zvmm's back",
		     mode, (unsigned long long)read_during);
	cr_expect_eq(lost, 0, "%s: %llu of the guest's marks changed", mode,
		     (unsigned long long)lost);
	tenant("demand", "keep", NULL, 0, &t);
	cr_expect_eq(t.foreign, 0,
		     "%s: the next tenant read %llu non-zero words (on_exit "
		     "returned %d, record %s)",
		     mode, (unsigned long long)t.foreign, ret,
		     t.open.record_clean ? "trusted" : "not trusted");
}

/* ------------------------------------------------------ the state directory */

struct bad_dir {
	uid_t uid;
	mode_t mode;
};

ParameterizedTestParameters(trust, state_dir_outside_the_boundary_is_not_used)
{
	static struct bad_dir cases[] = { { NOBODY, 0700 }, { 0, 0777 } };

	return cr_make_param_array(struct bad_dir, cases, 2);
}

/*
 * $ZVMM_STATE_DIR another user owns, or anyone can write: no record is
 * written there, and a valid record placed there (made in a good
 * directory for the same pool) vouches for nothing.
 */
ParameterizedTest(struct bad_dir *c, trust,
		  state_dir_outside_the_boundary_is_not_used)
{
	char names[1024], rec[256], copy[512];
	struct tenant t;

	need_pool();
	cr_assert_eq(mkdir(state, 0700), 0);
	cr_assert_eq(chown(state, c->uid, c->uid), 0);
	cr_assert_eq(chmod(state, c->mode), 0);
	scrubbed_launch(3, false);
	list_dir(state, names, sizeof(names));
	cr_expect_str_eq(names, "",
			 "uid %u mode %o: zvmm wrote into the directory: %s",
			 c->uid, c->mode, names);
	/* A good directory's record, copied in as its owner would. */
	cr_assert_eq(mkdir(good, 0700), 0);
	setenv("ZVMM_STATE_DIR", good, 1);
	scrubbed_launch(4, true);
	record_in(good, rec, sizeof(rec));
	snprintf(copy, sizeof(copy), "cp %s %s/ && chown -R %u:%u %s/", rec,
		 state, c->uid, c->uid, state);
	cr_assert_eq(system(copy), 0);
	setenv("ZVMM_STATE_DIR", state, 1);
	tenant("demand", "keep", NULL, 0, &t);
	cr_expect(!t.open.record_clean,
		  "uid %u mode %o: a record there was trusted", c->uid,
		  c->mode);
	cr_expect_eq(t.foreign, 0, "the guest read %llu non-zero words",
		     (unsigned long long)t.foreign);
}

/* A symlink where the record is read from is not followed. */
Test(trust, state_symlink_is_not_followed_on_read)
{
	char rec[256];
	struct tenant t;

	need_pool();
	cr_assert_eq(mkdir(state, 0700), 0);
	scrubbed_launch(3, true);
	record_in(state, rec, sizeof(rec));
	/* The valid record moved out, a symlink to it in its place. */
	cr_assert_eq(rename(rec, victim), 0, "%s", strerror(errno));
	cr_assert_eq(symlink(victim, rec), 0);
	tenant("demand", "keep", NULL, 0, &t);
	cr_expect(!t.open.record_clean, "a record read through a symlink");
	cr_expect_eq(t.foreign, 0);
	cr_expect_eq(access(victim, F_OK), 0, "the symlink's target removed");
}

/*
 * Symlinks where the record and its temporary file are written: the
 * files they point to are left as they were.
 */
Test(trust, state_symlink_is_not_followed_on_write)
{
	char rec[256], tmp[300];
	struct snap s1, s2;

	need_pool();
	cr_assert_eq(mkdir(state, 0700), 0);
	scrubbed_launch(3, true); /* learns the record's name */
	record_in(state, rec, sizeof(rec));
	cr_assert_eq(unlink(rec), 0);
	test_write_text(victim, "a file the record must not replace\n");
	test_write_text(victim2, "another file the record must not replace\n");
	s1 = snap_file(victim);
	s2 = snap_file(victim2);
	cr_assert_eq(symlink(victim, rec), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", rec, (int)getpid());
	cr_assert_eq(symlink(victim2, tmp), 0);
	scrubbed_launch(4, false);
	same_file(victim, &s1, "the record's symlink target");
	same_file(victim2, &s2, "the temporary file's symlink target");
}

/* ---------------------------------------------------------------- fork */

ParameterizedTestParameters(trust, forked_child_cannot_reach_guest_memory)
{
	static char modes[][12] = { "prezero", "demand" };

	return cr_make_param_array(char[12], modes, 2);
}

/*
 * After prepare the VMM forks: the child's write to the guest mapping
 * kills it (SIGSEGV: the mapping is not inherited), and the guest's
 * memory is as it was.
 */
ParameterizedTest(char *mode, trust, forked_child_cannot_reach_guest_memory)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, PAGE);
	struct zvmm_policy *pol;
	volatile uint64_t *w;
	uint64_t bytes, foreign = 0;
	void *addr;
	pid_t pid;
	int ret, st;

	need_pool();
	pol = policy(mode, "keep", NULL);
	mem.pool_path = pool;
	ret = zvmm_guest_open(&mem, pol, &live);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s: %s", strerror(-ret), logged);
	cr_assert_eq(zvmm_guest_prepare(live, 0), 0, "%s", logged);
	zvmm_guest_memory(live, &addr, &bytes);
	w = addr;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		for (uint64_t p = 0; p < PAGES; p++)
			w[(p * PAGE + 4096) / 8] = 0x77;
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (zvmm_guest_fd(live) >= 0)
		cr_assert_eq(zvmm_guest_serve_thread(live, NULL, NULL), 0);
	zvmm_guest_start(live);
	for (uint64_t p = 0; p < PAGES; p++)
		foreign += page_foreign(w, p);
	cr_assert_eq(zvmm_guest_stop(live), 0);
	zvmm_guest_close(live);
	live = NULL;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
		  "%s: the forked child wrote guest memory and %s %d", mode,
		  WIFSIGNALED(st) ? "died of signal" : "exited with",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	cr_expect_eq(foreign, 0, "%s: the guest read %llu of the child's words",
		     mode, (unsigned long long)foreign);
}

/*
 * A state directory that cannot be used at all (a regular file in its
 * place) is not trusted, as one outside the boundary: the launch goes
 * on, scrubs, and writes no record; it does not fail.
 */
Test(trust, unusable_state_dir_means_scrub_not_failure)
{
	struct tenant t;
	int fd;

	need_pool();
	fd = open(state, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	tenant("demand", "scrub", NULL, 5, &t);
	cr_assert_eq(t.exit_ret, 0, "on_exit = scrub failed: %s", logged);
	cr_expect(!t.end.record_written, "a record was written");
	tenant("hybrid", "keep", NULL, 0, &t);
	cr_expect(!t.open.record_clean, "a record was trusted");
	cr_expect_eq(t.foreign, 0, "the guest read %llu non-zero words",
		     (unsigned long long)t.foreign);
	unlink(state);
}

/*
 * Another process opening the pool while zvmm probes for holders breaks
 * the probe's lease: that must never signal zvmm to death (SIGIO's
 * default), however often it happens. A launch may be refused (-EBUSY)
 * when the opener holds the file at that moment; it is never killed.
 */
Test(trust, opener_of_the_pool_cannot_kill_a_launch)
{
	struct zvmm_policy *pol = policy("prezero", "scrub", NULL);
	unsigned int ok = 0, busy = 0;
	pid_t opener;
	int st;

	need_pool();
	cr_assert_eq(open_and_close(pool, pol), 0, "%s", logged);
	opener = fork();
	cr_assert_geq(opener, 0);
	if (!opener) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			int fd = open(pool, O_RDONLY | O_CLOEXEC);

			if (fd >= 0)
				close(fd);
		}
	}
	for (unsigned int i = 0; i < 40; i++) {
		struct zvmm_mem mem = ZVMM_MEM_INIT(POOL_BYTES, PAGE);
		struct zvmm_guest *g = NULL;
		int ret;

		mem.pool_path = pool;
		ret = zvmm_guest_open(&mem, pol, &g);
		if (!ret) {
			ret = zvmm_guest_prezero(g);
			zvmm_guest_close(g);
		}
		cr_assert(!ret || ret == -EBUSY, "launch %u: %d: %s", i, ret,
			  logged);
		ok += !ret;
		busy += ret == -EBUSY;
	}
	kill(opener, SIGKILL);
	waitpid(opener, &st, 0);
	zvmm_policy_free(pol);
	cr_assert_eq(ok + busy, 40);
}
