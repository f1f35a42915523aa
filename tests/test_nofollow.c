// SPDX-License-Identifier: MIT
/*
 * safe_dir_nofollow() (lib/safefile.h): a directory reached without
 * following a symbolic link in any component, through openat2(2) and,
 * where openat2 is refused (ENOSYS, EPERM: an older kernel, valgrind, a
 * container runtime's seccomp filter), one component at a time. Every
 * test runs three ways, openat2 answering (suite nofollow) and refused
 * by a seccomp filter (nofollow_enosys, nofollow_eperm), and expects
 * the same fd or the same error each way.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/safefile.h"
#include "helpers.h"

static char base[64];

/*
 * base/a/b/c         directories
 * base/a/file        a regular file
 * base/a/link_end -> b, base/link_mid -> a, base/dangling -> nowhere
 */
static void setup(void)
{
	char p[128];

	snprintf(base, sizeof(base), "/tmp/zvmm-test-nofollow.%d",
		 (int)getpid());
	cr_assert_eq(mkdir(base, 0700), 0, "%s: %s", base, strerror(errno));
	snprintf(p, sizeof(p), "%s/a/b/c/", base);
	cr_assert_eq(file_mkdir_parents(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/a/file", base);
	test_write_text(p, "not a directory\n");
	snprintf(p, sizeof(p), "%s/a/link_end", base);
	cr_assert_eq(symlink("b", p), 0);
	snprintf(p, sizeof(p), "%s/link_mid", base);
	cr_assert_eq(symlink("a", p), 0);
	snprintf(p, sizeof(p), "%s/dangling", base);
	cr_assert_eq(symlink("nowhere", p), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
}

TestSuite(nofollow, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(nofollow_enosys, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(nofollow_eperm, .init = setup, .fini = teardown, .timeout = 30);

/* @name as it is, and again with openat2 refused with ENOSYS and EPERM. */
#define EVERY_WAY(name)                      \
	static void name(void);              \
	Test(nofollow, name)                 \
	{                                    \
		name();                      \
	}                                    \
	Test(nofollow_enosys, name)          \
	{                                    \
		test_refuse_openat2(ENOSYS); \
		name();                      \
	}                                    \
	Test(nofollow_eperm, name)           \
	{                                    \
		test_refuse_openat2(EPERM);  \
		name();                      \
	}                                    \
	static void name(void)

static const int how[] = { O_PATH, 0 };

static const char *flags_name(int flags)
{
	return flags ? "O_PATH" : "O_RDONLY";
}

/* @path (under base unless absolute) opens, as the directory @real. */
static void opens(const char *path, int flags, const char *real)
{
	char p[256], r[256];
	struct stat a, b;
	int fd, fl;

	snprintf(p, sizeof(p), "%s%s%s", *path == '/' ? "" : base,
		 *path == '/' ? "" : "/", path);
	snprintf(r, sizeof(r), "%s%s%s", *real == '/' ? "" : base,
		 *real == '/' ? "" : "/", real);
	fd = safe_dir_nofollow(p, flags);
	cr_assert_geq(fd, 0, "%s (%s): %s", p, flags_name(flags),
		      strerror(-fd));
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(stat(r, &b), 0, "%s: %s", r, strerror(errno));
	cr_expect(a.st_dev == b.st_dev && a.st_ino == b.st_ino,
		  "%s (%s) opened another directory than %s", p,
		  flags_name(flags), r);
	fl = fcntl(fd, F_GETFL);
	cr_expect_eq(fl & O_PATH, flags & O_PATH, "%s: flags %#x, asked %s", p,
		     fl, flags_name(flags));
	cr_expect_eq(fl & O_ACCMODE, O_RDONLY);
	cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC, "%s: no O_CLOEXEC", p);
	close(fd);
}

/* Relative @path, opened from the working directory as it is. */
static void opens_rel(const char *path, int flags, const char *real)
{
	struct stat a, b;
	int fd;

	fd = safe_dir_nofollow(path, flags);
	cr_assert_geq(fd, 0, "%s (%s): %s", path, flags_name(flags),
		      strerror(-fd));
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(stat(real, &b), 0, "%s: %s", real, strerror(errno));
	cr_expect(a.st_dev == b.st_dev && a.st_ino == b.st_ino,
		  "%s (%s) opened another directory than %s", path,
		  flags_name(flags), real);
	close(fd);
}

/* @path (under base unless absolute or empty) is refused with -@err. */
static void refused(const char *path, int err)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "%s%s%s", *path == '/' || !*path ? "" : base,
		 *path == '/' || !*path ? "" : "/", path);
	for (unsigned int i = 0; i < 2; i++) {
		fd = safe_dir_nofollow(p, how[i]);
		if (fd >= 0)
			close(fd);
		cr_expect_eq(fd, -err, "%.200s (%s): %d (%s), want %d (%s)", p,
			     flags_name(how[i]), fd,
			     fd < 0 ? strerror(-fd) : "opened", -err,
			     strerror(err));
	}
}

static unsigned int fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	cr_assert(d, "/proc/self/fd: %s", strerror(errno));
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

EVERY_WAY(real_directory_opens)
{
	for (unsigned int i = 0; i < 2; i++) {
		opens("a/b/c", how[i], "a/b/c");
		opens("a", how[i], "a");
		opens("/", how[i], "/");
		opens("/tmp", how[i], "/tmp");
	}
}

EVERY_WAY(symlink_on_the_path_is_eloop)
{
	refused("link_mid/b", ELOOP); /* in the middle */
	refused("a/link_end", ELOOP); /* at the end */
	refused("a/link_end/", ELOOP);
	refused("a/link_end/c/..", ELOOP);
	refused("dangling", ELOOP);
	refused("dangling/x", ELOOP);
	refused("a/../link_mid", ELOOP);
	refused("/proc/self/cwd", ELOOP); /* magic links are links */
}

EVERY_WAY(dots_and_empty_components_resolve)
{
	for (unsigned int i = 0; i < 2; i++) {
		opens("a//b///c/", how[i], "a/b/c");
		opens("./a/./b/.", how[i], "a/b");
		opens("a/b/c/../..", how[i], "a");
		opens("a/b/../b/c", how[i], "a/b/c");
		opens("a/..", how[i], ".");
		opens("//", how[i], "/");
		opens("/..", how[i], "/");
		opens("/../tmp/./", how[i], "/tmp");
	}
}

EVERY_WAY(relative_paths_resolve)
{
	char b[96];

	snprintf(b, sizeof(b), "%s/a/b", base);
	cr_assert_eq(chdir(b), 0, "%s: %s", b, strerror(errno));
	for (unsigned int i = 0; i < 2; i++) {
		opens_rel(".", how[i], ".");
		opens_rel("c", how[i], "c");
		opens_rel("c/", how[i], "c");
		opens_rel("..", how[i], "..");
		opens_rel("../b//c/.", how[i], "c");
		opens_rel("../../..", how[i], "/tmp");
	}
	cr_expect_eq(safe_dir_nofollow("../link_end", O_PATH), -ELOOP);
	cr_expect_eq(safe_dir_nofollow("../../link_mid/b", 0), -ELOOP);
	cr_expect_eq(safe_dir_nofollow("nope", O_PATH), -ENOENT);
	cr_expect_eq(safe_dir_nofollow("../file", 0), -ENOTDIR);
}

EVERY_WAY(missing_component_is_enoent)
{
	refused("nope", ENOENT);
	refused("nope/a", ENOENT);
	refused("a/b/nope/", ENOENT);
	refused("", ENOENT);
}

EVERY_WAY(file_component_is_enotdir)
{
	refused("a/file", ENOTDIR);
	refused("a/file/", ENOTDIR);
	refused("a/file/x", ENOTDIR);
	refused("a/file/..", ENOTDIR);
}

EVERY_WAY(names_too_long_are_enametoolong)
{
	char name[NAME_MAX + 2], path[PATH_MAX + 8];

	memset(name, 'x', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	refused(name, ENAMETOOLONG);
	/* Short components, past PATH_MAX in all. */
	for (unsigned int i = 0; i < PATH_MAX / 2 + 2; i++)
		memcpy(path + 2 * i, "./", 2);
	path[PATH_MAX + 4] = '\0';
	refused(path, ENAMETOOLONG);
}

/* The walk closes every directory it opened on the way, error or not. */
EVERY_WAY(no_fd_is_left_behind)
{
	unsigned int before = fds_open();

	refused("link_mid/b/c", ELOOP);
	refused("a/b/c/link", ENOENT);
	refused("a/file/x", ENOTDIR);
	opens("a/b/c", O_PATH, "a/b/c");
	opens("a/b/c", 0, "a/b/c");
	cr_expect_eq(fds_open(), before, "%u fds open, %u before", fds_open(),
		     before);
}

EVERY_WAY(flags_but_o_path_are_einval)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/a", base);
	cr_expect_eq(safe_dir_nofollow(p, O_RDWR), -EINVAL);
	cr_expect_eq(safe_dir_nofollow(p, O_PATH | O_CREAT), -EINVAL);
	cr_expect_eq(safe_dir_nofollow(p, O_NOFOLLOW), -EINVAL);
}
