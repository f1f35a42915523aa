// SPDX-License-Identifier: MIT
/*
 * The state directory stays bounded (zero_record_write(), docs/DESIGN.md
 * "Pools: the lock and the record"): writing a record removes those no
 * launch could trust again, so the directory holds at most one record
 * per pool file that exists:
 * - a record whose pool file was removed, replaced by another file at
 *   its path, or changed since (its ctime moved: a reused inode number
 *   looks the same) is removed by the next record written;
 * - a record of another version (one written before version 4 has no
 *   path) is removed, and was never trusted;
 * - the record of a pool that exists as it was recorded stays, another
 *   launch's included, however many launches write theirs meanwhile;
 * - what the record vouches for is unchanged: a record whose numbers do
 *   not match the file is refused, path or not;
 * - the path is absolute whatever the launch was given, with any byte
 *   in it, and names the file where it is at exit; a pool no path names
 *   then gets no record.
 *
 * Launches through the public header on pools of one 2 MiB page in a
 * hugetlbfs mount of the test's own, records in a state directory of the
 * test's own (pool.state_dir); record texts read with zeroing/record.h.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/size.h"
#include "../zeroing/record.h"
#include "helpers.h"

#define PAGE ZVMM_PAGE_2M
#define MAX_RECORDS 64

static char mnt[64], state[80], sub[96];
static bool mounted;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char logged[16384];

static void log_cb(void *arg, enum zvmm_log_level level, const char *msg)
{
	size_t n = strlen(logged);

	(void)arg;
	(void)level;
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static void setup(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-record.%d", (int)getpid());
	snprintf(state, sizeof(state), "/tmp/zvmm-test-record.%d.state",
		 (int)getpid());
	logged[0] = '\0';
	zvmm_set_log(log_cb, NULL, ZVMM_LOG_DEBUG);
}

static void teardown(void)
{
	if (chdir("/")) {
		/* the mount is detached below all the same */
	}
	if (sub[0])
		umount2(sub, MNT_DETACH);
	/* Unmounting hugetlbfs frees every pool file and page in it. */
	test_pool_cleanup(mnt, "", state, mounted);
	mounted = false;
	zero_hugetlb_release(&resv);
	zvmm_set_log(NULL, NULL, ZVMM_LOG_ERROR);
}

TestSuite(record_prune, .init = setup, .fini = teardown, .timeout = 120);

/* Root, @pages free 2 MiB pages, a hugetlbfs mount, the state dir. */
static void need_pools(long pages)
{
	test_on_skip(teardown);
	test_need_root("a hugetlbfs mount of the test's own, hugepages");
	test_reserve_or_skip(SZ_2M, pages, &resv);
	test_mount_pool(mnt, SZ_2M, &mounted);
	cr_assert_eq(mkdir(state, 0700), 0, "%s", strerror(errno));
}

static void pool_path(unsigned int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/pool%u", mnt, i);
}

static struct zvmm_policy *policy(void)
{
	struct zvmm_policy *p;

	cr_assert_eq(zvmm_policy_new(&p), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.mode", "prezero"), 0);
	cr_assert_eq(zvmm_policy_set(p, "pool.on_exit", "scrub"), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.backend", "memset"), 0);
	cr_assert_eq(zvmm_policy_set(p, "zeroing.workers", "1"), 0);
	cr_assert_eq(zvmm_policy_set(p, "pool.state_dir", state), 0, "%s",
		     logged);
	return p;
}

/*
 * One launch on the pool at @path (a page, created when missing) that
 * ends with on_exit = scrub: 0 or the first error, the stats after open
 * in *open and after exit in *end (either may be NULL).
 */
static int launch(const char *path, struct zvmm_stats *open,
		  struct zvmm_stats *end)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(PAGE, PAGE);
	struct zvmm_policy *pol = policy();
	struct zvmm_guest *g = NULL;
	int ret;

	mem.pool_path = path;
	ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	if (ret)
		return ret;
	if (open)
		zvmm_guest_stats(g, open);
	ret = zvmm_guest_prepare(g, 0);
	if (!ret) {
		zvmm_guest_start(g);
		ret = zvmm_guest_stop(g);
	}
	if (!ret)
		ret = zvmm_guest_exit(g);
	if (end)
		zvmm_guest_stats(g, end);
	zvmm_guest_close(g);
	return ret;
}

/* A launch on @path that must write its record. */
static void recorded_launch(const char *path)
{
	struct zvmm_stats end;
	int ret = launch(path, NULL, &end);

	cr_assert_eq(ret, 0, "launch on %s: %s: %s", path, strerror(-ret),
		     logged);
	cr_assert(end.record_written, "no record written for %s: %s", path,
		  logged);
}

/* Whether the next launch on @path trusts its record (it consumes it). */
static bool trusted(const char *path)
{
	struct zvmm_stats open;
	int ret = launch(path, &open, NULL);

	cr_assert_eq(ret, 0, "launch on %s: %s: %s", path, strerror(-ret),
		     logged);
	return open.record_clean;
}

/* The name of the record of the file at @path now. */
static void record_name_of(const char *path, char *buf, size_t len)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	snprintf(buf, len, "pool-%llu-%llu.state",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The state directory's entries, sorted, one a line. */
static void listing(char *out, size_t len)
{
	char *names[MAX_RECORDS];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d = opendir(state);

	cr_assert_not_null(d, "%s: %s", state, strerror(errno));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && n < MAX_RECORDS)
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	out[0] = '\0';
	for (unsigned int i = 0; i < n; i++) {
		size_t l = strlen(out);

		snprintf(out + l, len - l, "%s\n", names[i]);
		free(names[i]);
	}
}

/* The listing a directory holding the records of @n pool paths has. */
static void expected(const char *const *paths, unsigned int n, char *out,
		     size_t len)
{
	char *names[MAX_RECORDS];

	cr_assert_leq(n, MAX_RECORDS);
	for (unsigned int i = 0; i < n; i++) {
		names[i] = malloc(96);
		record_name_of(paths[i], names[i], 96);
	}
	qsort(names, n, sizeof(names[0]), by_name);
	out[0] = '\0';
	for (unsigned int i = 0; i < n; i++) {
		size_t l = strlen(out);

		snprintf(out + l, len - l, "%s\n", names[i]);
		free(names[i]);
	}
}

static void expect_records(const char *const *paths, unsigned int n,
			   const char *what)
{
	char have[4096], want[4096];

	listing(have, sizeof(have));
	expected(paths, n, want, sizeof(want));
	cr_expect_str_eq(have, want,
			 "%s: the state directory holds:\n%swant:\n%s", what,
			 have, want);
}

/* The record of the file at @path, parsed. */
static void read_record(const char *path, struct zero_record *r)
{
	char name[96], file[256];
	char *text;
	size_t n;
	FILE *f;

	record_name_of(path, name, sizeof(name));
	snprintf(file, sizeof(file), "%s/%s", state, name);
	f = fopen(file, "re");
	cr_assert_not_null(f, "%s: %s", file, strerror(errno));
	text = malloc(ZERO_RECORD_TEXT_MAX);
	n = fread(text, 1, ZERO_RECORD_TEXT_MAX, f);
	fclose(f);
	cr_assert_eq(zero_record_parse(text, n, r), 0, "%.*s", (int)n, text);
	free(text);
}

/* Replaces the record of the file at @path with @r, checksum and all. */
static void write_record(const char *path, const struct zero_record *r)
{
	char name[96], file[256], *text = malloc(ZERO_RECORD_TEXT_MAX);
	int n = zero_record_format(r, text, ZERO_RECORD_TEXT_MAX);

	cr_assert(n > 0 && n < ZERO_RECORD_TEXT_MAX);
	record_name_of(path, name, sizeof(name));
	snprintf(file, sizeof(file), "%s/%s", state, name);
	test_write_text(file, text);
	cr_assert_eq(chmod(file, 0600), 0);
	free(text);
}

/* -------------------------------------------------------- removed pools */

/*
 * Records for six pools, three of them removed: the next record written
 * (for one of the others) leaves one record per pool that is left.
 */
Test(record_prune, one_record_per_live_pool)
{
	char p[6][96];
	const char *live[] = { p[0], p[2], p[5] }, *all[6];

	need_pools(7);
	for (unsigned int i = 0; i < 6; i++) {
		pool_path(i, p[i], sizeof(p[i]));
		all[i] = p[i];
		recorded_launch(p[i]);
	}
	expect_records(all, 6, "six pools recorded");
	cr_assert_eq(unlink(p[1]), 0);
	cr_assert_eq(unlink(p[3]), 0);
	cr_assert_eq(unlink(p[4]), 0);
	/* Removing pool files alone prunes nothing: only a write does. */
	recorded_launch(p[0]);
	expect_records(live, 3, "three pools removed, one recorded again");
	/* Each record left is still good. */
	for (unsigned int i = 0; i < 3; i++)
		cr_expect(trusted(live[i]),
			  "%s: its record was not trusted: %s", live[i],
			  logged);
}

/*
 * A record whose path names another file now (the pool removed, a new
 * one made there) or the same inode with a later ctime (changed since;
 * as a file of a reused inode number would be) is removed; so is one
 * whose path is a directory now.
 */
Test(record_prune, replaced_or_changed_pool_is_removed)
{
	char a[96], b[96], c[96], d[96];
	const char *left[] = { c };
	int fd;

	need_pools(5);
	pool_path(0, a, sizeof(a));
	pool_path(1, b, sizeof(b));
	pool_path(2, c, sizeof(c));
	pool_path(3, d, sizeof(d));
	recorded_launch(a);
	recorded_launch(b);
	recorded_launch(d);
	/* a: another file at its path. */
	cr_assert_eq(unlink(a), 0);
	fd = open(a, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	close(fd);
	/* b: the same file, changed (utimensat(2) moves ctime). */
	cr_assert_eq(utimensat(AT_FDCWD, b, NULL, 0), 0);
	/* d: a directory where the pool was. */
	cr_assert_eq(unlink(d), 0);
	cr_assert_eq(mkdir(d, 0700), 0);
	recorded_launch(c);
	expect_records(left, 1, "a replaced, b changed, d a directory");
	cr_assert_eq(rmdir(d), 0);
	cr_assert_eq(unlink(a), 0);
}

/*
 * The record of a pool that exists as it was recorded stays, whoever
 * wrote it: four processes launch on a pool each, again and again at
 * once, each writing its record (and pruning the others') at every
 * launch. At the end every pool has its record, and it is trusted.
 */
Test(record_prune, other_launches_records_stay)
{
	enum { PROCS = 4, ROUNDS = 10 };
	char p[PROCS][96];
	const char *all[PROCS];
	pid_t pid[PROCS];

	need_pools(PROCS + 1);
	for (unsigned int i = 0; i < PROCS; i++) {
		pool_path(i, p[i], sizeof(p[i]));
		all[i] = p[i];
	}
	for (unsigned int i = 0; i < PROCS; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (!pid[i]) {
			for (unsigned int r = 0; r < ROUNDS; r++) {
				struct zvmm_stats end;

				if (launch(p[i], NULL, &end) ||
				    !end.record_written)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (unsigned int i = 0; i < PROCS; i++) {
		int st;

		cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
		cr_expect(WIFEXITED(st) && !WEXITSTATUS(st),
			  "launcher %u: status %d: %s", i, st, logged);
	}
	expect_records(all, PROCS, "after concurrent launches");
	for (unsigned int i = 0; i < PROCS; i++)
		cr_expect(trusted(p[i]), "%s: its record was not trusted: %s",
			  p[i], logged);
}

/* ------------------------------------------------ the record's contents */

/*
 * A record as zvmm wrote it before version 4 (no path), matching the
 * pool in every number: not trusted (another version), and removed by
 * the next record written for another pool while its pool still exists.
 */
Test(record_prune, record_without_path_is_removed)
{
	char a[96], b[96];
	const char *left[] = { b };
	struct zero_record r;

	need_pools(3);
	pool_path(0, a, sizeof(a));
	pool_path(1, b, sizeof(b));
	recorded_launch(a);
	read_record(a, &r);
	r.version = 3;
	r.path[0] = '\0';
	write_record(a, &r);
	cr_expect(!trusted(a), "a record of version 3 was trusted");
	/* Again, and left there for the pruning. */
	recorded_launch(a);
	read_record(a, &r);
	r.version = 3;
	r.path[0] = '\0';
	write_record(a, &r);
	recorded_launch(b);
	expect_records(left, 1, "a's record of version 3");
}

/*
 * What a record vouches for is as before: one whose numbers do not
 * match the file is refused, whatever its path says; the record zvmm
 * wrote is trusted, and so is it with another path (the path is where
 * the file was, never what it is).
 */
Test(record_prune, trust_is_unchanged)
{
	static const char *const what[] = { "inode", "ctime", "mtime",
					    "atime", "boot",  "size" };
	char a[96], b[96];
	struct zero_record r;

	need_pools(3);
	pool_path(0, a, sizeof(a));
	pool_path(1, b, sizeof(b));
	recorded_launch(b);
	for (unsigned int i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		recorded_launch(a);
		read_record(a, &r);
		r.inode += i == 0;
		r.ctime_ns += i == 1;
		r.mtime_ns += i == 2;
		r.atime_ns += i == 3;
		r.boot_lo ^= i == 4;
		r.size += i == 5 ? PAGE : 0;
		write_record(a, &r);
		cr_expect(!trusted(a), "a record of another %s was trusted",
			  what[i]);
	}
	recorded_launch(a);
	cr_expect(trusted(a), "the record zvmm wrote was not trusted: %s",
		  logged);
	recorded_launch(a);
	read_record(a, &r);
	cr_expect_str_eq(r.path, a);
	snprintf(r.path, sizeof(r.path), "%s", b);
	write_record(a, &r);
	cr_expect(trusted(a), "a record naming another path was not trusted");
}

/*
 * A relative pool path, and a name with every kind of byte: the record
 * holds the absolute path, and is pruned once the file is gone.
 */
Test(record_prune, path_is_absolute_and_any_name_works)
{
	static const char odd[] = "po ol\n[x];#%41=\t\xff";
	char abs_odd[128], abs_rel[96], b[96];
	const char *left[] = { b };
	struct zero_record r;

	need_pools(4);
	snprintf(abs_odd, sizeof(abs_odd), "%s/%s", mnt, odd);
	snprintf(abs_rel, sizeof(abs_rel), "%s/rel", mnt);
	pool_path(1, b, sizeof(b));
	cr_assert_eq(chdir(mnt), 0);
	recorded_launch("rel");
	recorded_launch(odd);
	cr_assert_eq(chdir("/"), 0);
	read_record(abs_rel, &r);
	cr_expect_str_eq(r.path, abs_rel);
	read_record(abs_odd, &r);
	cr_expect_str_eq(r.path, abs_odd);
	cr_expect(trusted(abs_odd), "the odd name's record was not trusted: %s",
		  logged);
	recorded_launch(abs_odd);
	cr_assert_eq(unlink(abs_odd), 0);
	cr_assert_eq(unlink(abs_rel), 0);
	recorded_launch(b);
	expect_records(left, 1, "the odd and relative pools removed");
}

/*
 * An open guest on a fresh pool at @path, prepared and stopped: what
 * @during does next happens between its run and its exit (on_exit =
 * scrub). Returns its stats after the exit.
 */
static struct zvmm_stats exit_after(const char *path, void (*during)(void))
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(PAGE, PAGE);
	struct zvmm_policy *pol = policy();
	struct zvmm_guest *g = NULL;
	struct zvmm_stats end;

	mem.pool_path = path;
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0, "%s", logged);
	zvmm_policy_free(pol);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0, "%s", logged);
	zvmm_guest_start(g);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	during();
	cr_expect_eq(zvmm_guest_exit(g), 0, "%s", logged);
	zvmm_guest_stats(g, &end);
	zvmm_guest_close(g);
	return end;
}

static char sub2[96];

static void rename_dir(void)
{
	cr_assert_eq(rename(sub, sub2), 0, "%s", strerror(errno));
}

static void hide_dir(void)
{
	cr_assert_eq(mount("none", sub, "tmpfs", 0, "size=64k"), 0, "%s",
		     strerror(errno));
}

/*
 * The pool's directory renamed during the launch: the record names the
 * file where it is now. Hidden under another mount, so no path names
 * the file: no record (none could be pruned once the file is gone).
 */
Test(record_prune, path_is_where_the_pool_is_at_exit)
{
	char a[128], moved[128], before[4096], names[4096];
	struct zvmm_stats end;
	struct zero_record r;

	need_pools(2);
	snprintf(sub, sizeof(sub), "%s/d1", mnt);
	snprintf(sub2, sizeof(sub2), "%s/d2", mnt);
	snprintf(a, sizeof(a), "%s/pool", sub);
	snprintf(moved, sizeof(moved), "%s/pool", sub2);
	cr_assert_eq(mkdir(sub, 0700), 0);
	end = exit_after(a, rename_dir);
	cr_assert(end.record_written, "%s", logged);
	read_record(moved, &r);
	cr_expect_str_eq(r.path, moved);
	cr_expect(trusted(moved), "%s", logged);
	cr_assert_eq(unlink(moved), 0);
	cr_assert_eq(rename(sub2, sub), 0);

	/* The record of the file removed stays until the next one written. */
	listing(before, sizeof(before));
	logged[0] = '\0';
	end = exit_after(a, hide_dir);
	umount2(sub, MNT_DETACH);
	cr_expect(!end.record_written, "a record was written");
	cr_expect(strstr(logged, "no longer at a path that names it"), "%s",
		  logged);
	listing(names, sizeof(names));
	cr_expect_str_eq(names, before, "the state directory holds:\n%s",
			 names);
}
