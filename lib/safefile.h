/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_SAFEFILE_H
#define ZVMM_LIB_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/*
 * Files inside zvmm's trust boundary (docs/DESIGN.md 3, "Threat
 * model"): only the effective uid that runs zvmm, and root, may write a
 * pool, a state record or a profile. Everything here works on a
 * directory fd checked once, so a path component swapped after the
 * check changes nothing, and never follows a symbolic link to the file.
 */

/*
 * Whether @st is owned by the euid or root and writable by nobody else.
 * @dir: a directory writable by others is still trusted when it is
 * sticky and owned by the euid or root (others cannot remove or rename
 * what is not theirs).
 */
bool safe_owner_ok(const struct stat *st, bool dir);

/*
 * How a trusted directory is reached, and whose it must be. With none of
 * these: no symbolic link in any component (safe_dir_nofollow()), and
 * owned by the euid or root and writable by no one else.
 */
enum {
	/*
	 * Only the last component may not be a symbolic link (O_NOFOLLOW):
	 * the state directory and the profile cache, as docs/DESIGN.md 3,
	 * "Threat model", has them.
	 */
	SAFE_DIR_LAST = 1 << 0,
	/* Writable by others and sticky is trusted too: a pool's directory. */
	SAFE_DIR_STICKY = 1 << 1,
	/* Root's alone, not the euid's: zvmmd's directories. */
	SAFE_DIR_ROOT = 1 << 2,
	/* An O_PATH handle, not one that reads the directory. */
	SAFE_DIR_PATH = 1 << 3,
};

/*
 * The one way a directory inside the trust boundary is opened: reached
 * and checked as @how says, on the fd, so a component swapped after the
 * check changes nothing. Returns the fd; the negative errno of reaching
 * it (-ELOOP for a symbolic link @how refuses, -ENOTDIR, -ENOENT...),
 * *@st then with st_mode 0; or -EPERM for a directory it reached that is
 * not one @how trusts, *@st then saying whose it is and its mode, for
 * the caller's message.
 */
int safe_dir_trusted(const char *path, unsigned int how, struct stat *st)
	__attribute__((warn_unused_result));

/*
 * Opens directory @path (safe_dir_trusted(), SAFE_DIR_LAST), first creating it
 * and its missing parents with mode 0700 when @create. Returns the fd,
 * -ENOENT when it is missing (and not to be created), or -EPERM for any
 * directory that cannot be used: one that fails safe_owner_ok() (not
 * sticky-tolerant: a state directory is zvmm's alone), a symbolic link,
 * not a directory, not reachable or not creatable; @why then says what
 * is wrong and, where there is one, the command that fixes it.
 */
int safe_dir_open(const char *path, bool create, char *why, size_t why_len)
	__attribute__((warn_unused_result));

/*
 * Opens directory @path without following a symbolic link in any of its
 * components, the last one included: openat2(2) RESOLVE_NO_SYMLINKS or,
 * where openat2 is refused (ENOSYS or EPERM: an older kernel, valgrind,
 * a seccomp filter), one component at a time with O_NOFOLLOW from "/"
 * or the working directory. @flags: O_PATH for a handle, 0 for one that
 * reads the directory; O_DIRECTORY | O_CLOEXEC is added. Returns the fd,
 * -ELOOP for a symbolic link on the path, -ENOTDIR, -ENOENT, or another
 * negative errno: the same both ways.
 */
int safe_dir_nofollow(const char *path, int flags)
	__attribute__((warn_unused_result));

/*
 * Replaces @name in @dirfd with @len bytes of @buf, atomically: a new
 * file of a random name (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600),
 * written and synced, renamed over @name, then the directory synced.
 * Returns 0 or a negative errno; on failure the temporary file is gone.
 */
int safe_write_at(int dirfd, const char *name, const void *buf, size_t len)
	__attribute__((warn_unused_result));

/*
 * Reads @name in @dirfd without following a symbolic link: a regular
 * file that passes safe_owner_ok(), at most @max bytes, into a malloc'd
 * NUL-terminated buffer. Returns 0, -ENOENT, -EPERM for a file outside
 * the boundary (a symbolic link, another owner, group/other writable,
 * not a regular file), -EFBIG, or another negative errno.
 */
int safe_read_at(int dirfd, const char *name, size_t max, char **buf,
		 size_t *len) __attribute__((warn_unused_result));

/*
 * secure_getenv(): NULL in a setuid or setcap process, so an embedder
 * run with privileges never takes a path from its caller's environment.
 * NULL for an empty value too.
 */
const char *safe_getenv(const char *name);

/*
 * The zvmm program's own variables, ZVMM_STATE_DIR and ZVMM_CACHE_DIR:
 * program_getenv() reads them (as safe_getenv()) once the program called
 * program_env_enable(), and is NULL before. libzvmm never calls it, so
 * an embedder's directories come from its policies and the standard
 * places alone, never from whatever environment its process has.
 */
void program_env_enable(void);
const char *program_getenv(const char *name);

#endif
