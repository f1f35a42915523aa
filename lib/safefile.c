// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file.h"
#include "safefile.h"

bool safe_owner_ok(const struct stat *st, bool dir)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0)
		return false;
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return true;
	return dir && (st->st_mode & S_ISVTX);
}

static void say_why(const char *path, const struct stat *st, bool dir,
		    char *why, size_t len)
{
	if (!S_ISDIR(st->st_mode) && dir)
		snprintf(why, len, "%s is not a directory", path);
	else if (st->st_uid != geteuid() && st->st_uid != 0)
		snprintf(
			why, len,
			"%s is owned by uid %u, not by this user (uid %u) or root: chown %u %s, or use a directory of your own",
			path, (unsigned int)st->st_uid, (unsigned int)geteuid(),
			(unsigned int)geteuid(), path);
	else
		snprintf(
			why, len,
			"%s is writable by group or others (mode %04o): chmod go-w %s",
			path, (unsigned int)(st->st_mode & 07777), path);
}

int safe_dir_open(const char *path, bool create, char *why, size_t len)
{
	char sub[PATH_MAX];
	struct stat st;
	int fd, n;

	if (create) {
		n = snprintf(sub, sizeof(sub), "%s/", path);
		if (n >= (int)sizeof(sub))
			return -ENAMETOOLONG;
		n = file_mkdir_parents(sub, 0700);
		if (n) {
			snprintf(why, len, "%s cannot be created: %s", path,
				 strerror(-n));
			return -EPERM;
		}
	}
	fd = safe_dir_trusted(path, SAFE_DIR_LAST, &st);
	if (fd >= 0)
		return fd;
	/* zvmm's own: sticky is not enough, no one else writes here. */
	if (fd == -EPERM && st.st_mode) {
		say_why(path, &st, true, why, len);
		return -EPERM;
	}
	/* Missing is only missing; anything else is unusable. */
	if (fd == -ENOENT && !create)
		return fd;
	if (fd == -ELOOP || fd == -ENOTDIR)
		snprintf(
			why, len,
			"%s is a symbolic link or not a directory: give a real directory",
			path);
	else
		snprintf(why, len, "%s cannot be opened: %s", path,
			 strerror(-fd));
	return -EPERM;
}

/* A directory on the way: its handle, never a symbolic link's target. */
#define WALK_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * @name in @dirfd would not open (@err): -ELOOP when it is a symbolic
 * link, as openat2 says. O_NOFOLLOW refuses one with ELOOP, but with
 * O_PATH opens the link itself, which O_DIRECTORY then refuses with
 * ENOTDIR. A name swapped meanwhile changes only which error is said.
 */
static int walk_error(int dirfd, const char *name, int err)
{
	struct stat st;

	if ((err == ENOTDIR || err == ELOOP) &&
	    !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return -err;
}

/*
 * openat2's RESOLVE_NO_SYMLINKS by hand: each component opened in the
 * directory before it with O_NOFOLLOW. Empty components are skipped;
 * "." and ".." are opened as any other name, so the kernel resolves them
 * from the directory reached, as it does for openat2.
 */
static int walk_dir(const char *path, int flags)
{
	char name[NAME_MAX + 1];
	const char *p = path, *end;
	int dirfd = AT_FDCWD, fd;
	bool last = false;

	if (!*p)
		return -ENOENT;
	if (strlen(p) >= PATH_MAX)
		return -ENAMETOOLONG;
	while (*p == '/')
		p++;
	if (p != path) {
		/* "/" is no link: opened as asked when it is all there is. */
		dirfd = open("/", *p ? WALK_FLAGS : flags);
		if (dirfd < 0)
			return -errno;
		if (!*p)
			return dirfd;
	}
	for (;;) {
		end = strchrnul(p, '/');
		if (end - p > NAME_MAX) {
			fd = -ENAMETOOLONG;
		} else {
			memcpy(name, p, (size_t)(end - p));
			name[end - p] = '\0';
			for (p = end; *p == '/'; p++)
				;
			last = !*p;
			fd = openat(dirfd, name,
				    last ? flags | O_NOFOLLOW : WALK_FLAGS);
			if (fd < 0)
				fd = walk_error(dirfd, name, errno);
		}
		if (dirfd != AT_FDCWD)
			close(dirfd);
		if (fd < 0 || last)
			return fd;
		dirfd = fd;
	}
}

int safe_dir_nofollow(const char *path, int flags)
{
	struct open_how how = {
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	int fd;

	if (flags & ~O_PATH)
		return -EINVAL;
	flags |= O_DIRECTORY | O_CLOEXEC;
	how.flags = (unsigned int)flags;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	/*
	 * EXDEV is RESOLVE_NO_XDEV's refusal of a jump, not expected here:
	 * read as a link on the path, as it always was, never as a reason
	 * to walk.
	 */
	if (errno == ELOOP || errno == EXDEV)
		return -ELOOP;
	/*
	 * Refused: ENOSYS from a kernel before 5.6, valgrind or a seccomp
	 * filter, EPERM from the filters of older container runtimes.
	 * openat2 itself has no EPERM for a directory opened O_PATH or
	 * O_RDONLY; were one to come (an LSM), the walk meets it too and
	 * says it, so the walk is never a way around a refusal.
	 */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	return walk_dir(path, flags);
}

int safe_dir_trusted(const char *path, unsigned int how, struct stat *st)
{
	int flags = how & SAFE_DIR_PATH ? O_PATH : O_RDONLY;
	int fd, ret;
	bool ok;

	memset(st, 0, sizeof(*st));
	if (how & SAFE_DIR_LAST) {
		fd = open(path, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	} else {
		fd = safe_dir_nofollow(path, flags);
		if (fd < 0)
			return fd;
	}
	if (fstat(fd, st)) {
		ret = -errno;
		memset(st, 0, sizeof(*st));
		close(fd);
		return ret;
	}
	if (how & SAFE_DIR_ROOT)
		ok = st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
	else
		ok = safe_owner_ok(st, how & SAFE_DIR_STICKY);
	if (ok)
		return fd;
	close(fd);
	return -EPERM;
}

int safe_write_at(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[NAME_MAX + 1];
	const char *p = buf;
	uint64_t r;
	int fd, ret = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return -errno;
	if (snprintf(tmp, sizeof(tmp), ".%.200s.%016" PRIx64 ".tmp", name, r) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat(dirfd, tmp, dirfd, name))
		ret = -errno;
	if (ret) {
		unlinkat(dirfd, tmp, 0);
		return ret;
	}
	/* The rename itself is durable only once the directory is. */
	return fsync(dirfd) ? -errno : 0;
}

int safe_read_at(int dirfd, const char *name, size_t max, char **buf,
		 size_t *len)
{
	struct stat st;
	int fd, ret;

	fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode) || !safe_owner_ok(&st, false)) {
		close(fd);
		return -EPERM;
	}
	ret = file_read_fd(fd, max, buf, len);
	close(fd);
	return ret;
}

const char *safe_getenv(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

static bool program_env;

void program_env_enable(void)
{
	__atomic_store_n(&program_env, true, __ATOMIC_RELAXED);
}

const char *program_getenv(const char *name)
{
	return __atomic_load_n(&program_env, __ATOMIC_RELAXED) ?
		       safe_getenv(name) :
		       NULL;
}
