// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/magic.h>

#include "../lib/file.h"
#include "../lib/holders.h"
#include "../lib/inject.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "../lib/zvmmd_client.h"
#include "hugetlb.h"
#include "memory.h"

#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30 << 26)
#define MFD_HUGE_2MB (21 << 26)
#endif

/* MemTotal in KiB, 0 when it cannot be read. */
static long mem_total_kb(void)
{
	uint64_t kb;

	if (sysfs_read_field("/proc/meminfo", "MemTotal", &kb))
		return 0;
	return (long)kb;
}

/* A counter of the pool of @page_bytes pages, -1 when it cannot be read. */
static long read_count(uint64_t page_bytes, const char *file)
{
	long v;

	return zero_hugetlb_read(page_bytes, file, &v) ? -1 : v;
}

/* hugetlbfs accounts allocated pages in st_blocks. */
static uint64_t held_pages(const struct stat *st, uint64_t page_bytes)
{
	return (uint64_t)st->st_blocks * 512 / page_bytes;
}

int zero_mem_pool_pages(const char *path, uint64_t page_bytes, uint64_t *pages,
			uint64_t *file_bytes)
{
	struct stat st;

	*pages = 0;
	*file_bytes = 0;
	if (stat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	*file_bytes = (uint64_t)st.st_size;
	*pages = held_pages(&st, page_bytes);
	return 0;
}

/* @pool names the pool in messages; @fd >= 0 is checked instead of it. */
static int check_mount(const char *pool, int fd, uint64_t page_bytes, char *err,
		       size_t len)
{
	/* The field of struct zvmm_mem that named it: a path, or a fd. */
	const char *field = strncmp(pool, "fd ", 3) ? "mem.pool_path " : "mem.";
	char dir[PATH_MAX], a[32], b[32];
	struct statfs sfs;

	snprintf(dir, sizeof(dir), "%s", pool);
	if (fd >= 0 ? fstatfs(fd, &sfs) : statfs(dirname(dir), &sfs)) {
		int e = errno;

		snprintf(err, len, "%s%s: cannot reach its directory: %s",
			 field, pool, strerror(e));
		return -e;
	}
	if (sfs.f_type != HUGETLBFS_MAGIC) {
		snprintf(
			err, len,
			"%s%s is not on a hugetlbfs mount: mount one first, e.g. mkdir -p /mnt/zvmm && mount -t hugetlbfs -o pagesize=%s none /mnt/zvmm",
			field, pool, page_bytes == SZ_1G ? "1G" : "2M");
		return -ENODEV;
	}
	if ((uint64_t)sfs.f_bsize != page_bytes) {
		snprintf(
			err, len,
			"%s%s is on a hugetlbfs mount of %s pages, not %s: use mem.page_bytes %s or a mount with -o pagesize=%s",
			field, pool,
			size_format((uint64_t)sfs.f_bsize, a, sizeof(a)),
			size_format(page_bytes, b, sizeof(b)),
			sfs.f_bsize == (long)SZ_1G ? "1G" : "2M",
			page_bytes == SZ_1G ? "1G" : "2M");
		return -EINVAL;
	}
	return 0;
}

/*
 * The pid holding a flock(2) on the file @fd, from /proc/locks (the
 * kernel names the process that took it), or -1 when not found.
 */
static long lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	struct stat st;
	long pid = -1, p;
	FILE *f;

	if (fstat(fd, &st))
		return -1;
	f = fopen("/proc/locks", "re");
	if (!f)
		return -1;
	while (pid < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &p,
			   &maj, &min, &ino) == 5 &&
		    !strcmp(kind, "FLOCK") && ino == st.st_ino &&
		    makedev(maj, min) == st.st_dev)
			pid = p;
	fclose(f);
	return pid;
}

/*
 * A pool file belongs to one launch at a time: an exclusive flock(2) for
 * the whole run, held by the open file, so the kernel drops it when the
 * holder exits however it exits (a dead holder never blocks). Returns 0,
 * or -EBUSY with @err naming the holder.
 */
static int lock_pool(int fd, const char *path, char *err, size_t len)
{
	long pid;

	/*
	 * A moment's retry: another launch's pre-flight probe holds the
	 * lock for microseconds and must not refuse this one. A launch that
	 * runs holds it for good, and is refused within 50 ms.
	 */
	for (int tries = 0;; tries++) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK || tries == 10)
			break;
		usleep(5000);
	}
	if (errno != EWOULDBLOCK) {
		int e = errno;

		snprintf(err, len, "mem.pool_path %s: cannot lock it: %s", path,
			 strerror(e));
		return -e;
	}
	pid = lock_holder(fd);
	if (pid > 0)
		snprintf(
			err, len,
			"pool %s is in use by zvmm pid %ld: wait for it to end, or use another mem.pool_path",
			path, pid);
	else
		snprintf(
			err, len,
			"pool %s is in use by another zvmm: wait for it to end, or use another mem.pool_path",
			path);
	return -EBUSY;
}

/*
 * Something other than a regular file at a pool's path (a directory, a
 * FIFO, a socket, a device node): a request that is wrong, -EINVAL, as
 * libzvmm(3) says, whatever errno opening it gave (EISDIR, ENXIO).
 */
static int not_regular(const char *path, mode_t mode, char *err, size_t len)
{
	const char *what = "of another type";

	if (S_ISDIR(mode)) {
		snprintf(
			err, len,
			"mem.pool_path %s is not a regular file but a directory: name a pool file, e.g. %s/pool",
			path, path);
		return -EINVAL;
	}
	if (S_ISFIFO(mode))
		what = "a FIFO";
	else if (S_ISSOCK(mode))
		what = "a socket";
	else if (S_ISCHR(mode) || S_ISBLK(mode))
		what = "a device node";
	snprintf(
		err, len,
		"mem.pool_path %s is not a regular file but %s: name another path, or remove it",
		path, what);
	return -EINVAL;
}

/* Whether another launch holds the pool at @path (checked before anything
 * is allocated; zero_mem_create() takes the lock for real). */
static int probe_pool_lock(const char *path, char *err, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK),
	    ret;

	if (fd < 0)
		return 0;
	ret = lock_pool(fd, path, err, len);
	close(fd); /* drops the probe's own lock */
	return ret == -EBUSY ? ret : 0;
}

int zero_mem_preflight(const struct zero_mem_opts *o, char *err, size_t len)
{
	uint64_t nr, have = 0, fbytes = 0, need;
	char a[32], b[32], path[128];
	long nfree, resv, avail, total_kb;
	int ret;

	if (o->page_bytes != SZ_2M && o->page_bytes != SZ_1G) {
		snprintf(err, len,
			 "hugepage size %s is not supported: use 2M or 1G",
			 size_format(o->page_bytes, a, sizeof(a)));
		return -EINVAL;
	}
	nr = o->bytes / o->page_bytes;
	if (!o->bytes || o->bytes % o->page_bytes) {
		snprintf(
			err, len,
			"memory size %s is not a multiple of the %s page size: round it to whole pages, e.g. %s",
			size_format(o->bytes, a, sizeof(a)),
			size_format(o->page_bytes, b, sizeof(b)),
			size_format((o->bytes / o->page_bytes + 1) *
					    o->page_bytes,
				    path, sizeof(path)));
		return -EINVAL;
	}
	/* zvmmd holds the pages, and says what it cannot give. */
	if (o->service)
		return 0;
	nfree = read_count(o->page_bytes, "free_hugepages");
	resv = read_count(o->page_bytes, "resv_hugepages");
	if (nfree < 0) {
		snprintf(
			err, len,
			"the kernel has no %s hugepage pool (%s missing): use another mem.page_bytes",
			size_format(o->page_bytes, a, sizeof(a)),
			zero_hugetlb_path(o->page_bytes, "free_hugepages", path,
					  sizeof(path)));
		return -ENOENT;
	}
	if (o->has_fd) {
		struct stat st;

		/* No lock probe: flock(2) on the caller's own open file
		 * would share (and on unlock drop) a lock the caller holds. */
		snprintf(path, sizeof(path), "fd %d", o->fd);
		ret = check_mount(path, o->fd, o->page_bytes, err, len);
		if (ret)
			return ret;
		if (fstat(o->fd, &st)) {
			ret = -errno;
			snprintf(err, len, "%s: %s", path, strerror(-ret));
			return ret;
		}
		fbytes = (uint64_t)st.st_size;
		have = held_pages(&st, o->page_bytes);
		if (fbytes && fbytes != o->bytes) {
			snprintf(err, len, "%s holds %s, but %s was asked for",
				 path, size_format(fbytes, a, sizeof(a)),
				 size_format(o->bytes, b, sizeof(b)));
			return -EINVAL;
		}
	} else if (o->pool_path) {
		struct stat lst;

		/* Said first: the mount a link sits on is beside the point. */
		if (!lstat(o->pool_path, &lst) && S_ISLNK(lst.st_mode)) {
			snprintf(
				err, len,
				"mem.pool_path %s is a symbolic link, and zvmm follows none to a pool: give the file itself (realpath -e %s)",
				o->pool_path, o->pool_path);
			return -EPERM;
		}
		/* A request that is wrong, before what the machine lacks. */
		if (!lstat(o->pool_path, &lst) && !S_ISREG(lst.st_mode))
			return not_regular(o->pool_path, lst.st_mode, err, len);
		ret = check_mount(o->pool_path, -1, o->page_bytes, err, len);
		if (!ret)
			ret = probe_pool_lock(o->pool_path, err, len);
		if (ret)
			return ret;
		ret = zero_mem_pool_pages(o->pool_path, o->page_bytes, &have,
					  &fbytes);
		if (ret) {
			snprintf(err, len, "mem.pool_path %s: %s", o->pool_path,
				 strerror(-ret));
			return ret;
		}
		if (fbytes && fbytes != o->bytes) {
			snprintf(
				err, len,
				"mem.pool_path %s holds %s, but %s was asked for: use mem.bytes %s, or remove the file to start a new pool",
				o->pool_path, size_format(fbytes, a, sizeof(a)),
				size_format(o->bytes, b, sizeof(b)),
				size_format(fbytes, path, sizeof(path)));
			return -EINVAL;
		}
	}
	need = nr - have;
	avail = nfree - (resv > 0 ? resv : 0);
	/*
	 * A pool file keeps the reservations of its shared mappings until
	 * it is truncated: one whose prezero stopped half way holds
	 * reserved pages that count as neither its own nor free. Here the
	 * reserved pages may be the file's; mmap() makes the exact check
	 * and fails cleanly when they are another's.
	 */
	if ((o->pool_path || o->has_fd) && fbytes)
		avail = nfree;
	if ((long)need <= avail)
		return 0;
	total_kb = mem_total_kb();
	if (need * (o->page_bytes >> 10) > (uint64_t)total_kb) {
		char ram[32], p2[128];

		snprintf(
			err, len,
			"needs %llu free %s hugepages, %ld free (reserve them with: echo %ld > %s), but %s is more than this machine's %s of RAM can hold: choose a smaller mem.bytes",
			(unsigned long long)need,
			size_format(o->page_bytes, b, sizeof(b)),
			avail < 0 ? 0 : avail,
			read_count(o->page_bytes, "nr_hugepages") + (long)need -
				avail,
			zero_hugetlb_path(o->page_bytes, "nr_hugepages", p2,
					  sizeof(p2)),
			size_format(o->bytes, a, sizeof(a)),
			size_human((uint64_t)total_kb << 10, ram, sizeof(ram)));
		return -ENOMEM;
	}
	snprintf(err, len,
		 "needs %llu free %s hugepages, %ld free: echo %ld > %s",
		 (unsigned long long)need,
		 size_format(o->page_bytes, a, sizeof(a)),
		 avail < 0 ? 0 : avail,
		 read_count(o->page_bytes, "nr_hugepages") + (long)need - avail,
		 zero_hugetlb_path(o->page_bytes, "nr_hugepages", path,
				   sizeof(path)));
	return -ENOMEM;
}

/*
 * A named pool's directory, opened O_PATH with no symbolic link in any
 * component of the path, and checked: the euid's or root's, and no one
 * else may write it unless it is sticky (safe_dir_trusted()). Everything
 * after works on this fd, so a component renamed or replaced after the
 * check changes nothing.
 */
static int open_pool_dir(const char *path, struct zero_mem *m, char *err,
			 size_t len)
{
	char dir[PATH_MAX];
	const char *base;
	struct stat st;
	int fd;

	if (file_split_path(path, dir, sizeof(dir), &base) ||
	    strlen(base) >= sizeof(m->name)) {
		snprintf(err, len,
			 "mem.pool_path %s: name a file, not a directory",
			 path);
		return -EINVAL;
	}
	snprintf(m->name, sizeof(m->name), "%s", base);
	fd = safe_dir_trusted(dir, SAFE_DIR_PATH | SAFE_DIR_STICKY, &st);
	if (fd >= 0) {
		m->dirfd = fd;
		return 0;
	}
	if (fd == -ELOOP) {
		snprintf(
			err, len,
			"mem.pool_path %s: a symbolic link is on its path, and zvmm follows none to a pool: give the path without links (realpath -e %s)",
			path, dir);
		return -EPERM;
	}
	if (fd != -EPERM || !st.st_mode) {
		snprintf(err, len,
			 "mem.pool_path %s: cannot reach its directory: %s",
			 path, strerror(-fd));
		return fd;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0)
		snprintf(
			err, len,
			"mem.pool_path %s: its directory %s is owned by uid %u, who could replace the pool: use a directory of your own or root's (chown %u %s)",
			path, dir, (unsigned int)st.st_uid,
			(unsigned int)geteuid(), dir);
	else
		snprintf(
			err, len,
			"mem.pool_path %s: its directory %s is writable by group or others (mode %04o), who could replace the pool: chmod go-w %s (or chmod +t %s)",
			path, dir, (unsigned int)(st.st_mode & 07777), dir,
			dir);
	return -EPERM;
}

/* An existing pool file: the euid's, a regular file no one else writes. */
static int check_pool_file(const struct zero_mem *m, const struct stat *st,
			   char *err, size_t len)
{
	if (!S_ISREG(st->st_mode))
		return not_regular(m->path, st->st_mode, err, len);
	if (st->st_uid != geteuid()) {
		snprintf(
			err, len,
			"mem.pool_path %s is owned by uid %u, not by this user (uid %u), and only the owner's pools are trusted: use another mem.pool_path, or have it removed and let zvmm create a new one (a chown %u leaves pages its owner may still hold)",
			m->path, (unsigned int)st->st_uid,
			(unsigned int)geteuid(), (unsigned int)geteuid());
		return -EPERM;
	}
	/*
	 * Not chmod: whoever could write it may hold its pages pinned
	 * (io_uring fixed buffers, RDMA) with no fd and no mapping left, and
	 * write them at will. Only a new file is free of them.
	 */
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(
			err, len,
			"mem.pool_path %s is writable by group or others (mode %04o); chmod go-w is not enough, since they may still hold its pages: remove it (rm %s) and let zvmm create a new one",
			m->path, (unsigned int)(st->st_mode & 07777), m->path);
		return -EPERM;
	}
	return 0;
}

/*
 * Under the lock: an empty file holding nothing is sized to @bytes (a
 * pool whose creator lost the race for the lock or died before sizing
 * it, a file the user or the caller made; one not created here is
 * emptied again on failure, never removed), any other must hold @bytes.
 */
static int size_pool(struct zero_mem *m, uint64_t bytes, char *err, size_t len)
{
	struct stat st;
	int e;

	if (fstat(m->fd, &st))
		goto err_errno;
	if (!st.st_size && !st.st_blocks) {
		if (ftruncate(m->fd, (off_t)bytes))
			goto err_errno;
		m->sized = !m->created;
		return 0;
	}
	if ((uint64_t)st.st_size != bytes) {
		snprintf(err, len, "%s%s is not a pool file of %llu bytes",
			 m->caller_fd ? "mem." : "mem.pool_path ", m->path,
			 (unsigned long long)bytes);
		return -EINVAL;
	}
	return 0;
err_errno:
	e = errno;
	snprintf(err, len, "cannot size guest memory in %s: %s", m->path,
		 strerror(e));
	return -e;
}

/*
 * A named pool: created O_CREAT | O_EXCL mode 0600, or an existing file
 * inside the trust boundary, never through a symbolic link, on a
 * hugetlbfs mount of the page size as the opened fd sees it, locked, and
 * open nowhere else.
 */
static int open_pool(const struct zero_mem_opts *o, struct zero_mem *m,
		     char *err, size_t len)
{
	struct stat st;
	int e;

	e = open_pool_dir(o->pool_path, m, err, len);
	if (e)
		return e;
	m->fd = openat(m->dirfd, m->name,
		       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	if (m->fd >= 0) {
		m->created = true;
	} else if (errno == EEXIST) {
		m->fd = openat(m->dirfd, m->name,
			       O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				       O_CLOEXEC);
		if (m->fd < 0 && errno == ELOOP) {
			snprintf(
				err, len,
				"mem.pool_path %s is a symbolic link, and zvmm follows none to a pool: give the file itself (realpath -e %s)",
				o->pool_path, o->pool_path);
			return -EPERM;
		}
		/*
		 * What is there says more than the errno: another user's
		 * pool (EACCES), a directory (EISDIR), a socket (ENXIO).
		 */
		if (m->fd < 0) {
			int open_errno = errno;

			if (!fstatat(m->dirfd, m->name, &st,
				     AT_SYMLINK_NOFOLLOW)) {
				e = check_pool_file(m, &st, err, len);
				if (e)
					return e;
			}
			errno = open_errno;
		}
	}
	if (m->fd < 0)
		goto err_errno;
	if (fstat(m->fd, &st))
		goto err_errno;
	if (!m->created) {
		e = check_pool_file(m, &st, err, len);
		if (e)
			return e;
	}
	e = check_mount(o->pool_path, m->fd, o->page_bytes, err, len);
	if (e)
		return e;
	/* Another launch may have opened the new file already and locked
	 * it first: then it is theirs, and it stays. */
	e = lock_pool(m->fd, o->pool_path, err, len);
	if (e) {
		m->created = false;
		return e;
	}
	e = zero_mem_check_alone(m, err, len);
	if (e)
		return e;
	return size_pool(m, o->bytes, err, len);
err_errno:
	e = errno;
	snprintf(err, len, "cannot create guest memory in %s: %s", m->path,
		 strerror(e));
	return -e;
}

int zero_mem_check_alone(const struct zero_mem *m, char *err, size_t len)
{
	char comm[64];
	struct stat st;
	int tries, e = 0;
	long pid;

	/*
	 * F_SETLEASE F_WRLCK is granted only while no other open file
	 * description of the file exists, and a mapping holds one after its
	 * fd is closed: the kernel's exact answer, in microseconds. (The
	 * lease is given back at once; it is never held.) A moment's retry:
	 * another launch's pre-flight probe, or one refused by the lock,
	 * holds the file for microseconds.
	 */
	/*
	 * While it is held, another open() of the file breaks the lease and
	 * signals the holder, SIGIO by default, whose default action ends
	 * the process (an opener of a readable pool could kill a launch, or
	 * the VMM embedding it). SIGURG's default is to ignore it.
	 */
	if (fcntl(m->fd, F_SETSIG, SIGURG))
		return -errno;
	for (tries = 0;; tries++) {
		if (!fcntl(m->fd, F_SETLEASE, F_WRLCK)) {
			(void)!fcntl(m->fd, F_SETLEASE, F_UNLCK);
			return 0;
		}
		e = errno;
		if (e != EAGAIN || tries == 10)
			break;
		usleep(5000);
	}
	if (fstat(m->fd, &st))
		return -errno;
	pid = holder_of(&st, comm, sizeof(comm));
	/* No lease to be had here (leases disabled): /proc alone answers. */
	if (pid < 0 && e != EAGAIN)
		return 0;
	if (pid > 0)
		snprintf(
			err, len,
			"pool %s is open by pid %ld (%s), which could write it behind zvmm's back: end it, or use another mem.pool_path",
			m->path, pid, comm);
	else
		snprintf(
			err, len,
			"pool %s is open by another process (not visible from here), which could write it behind zvmm's back: end it, or use another mem.pool_path",
			m->path);
	return -EBUSY;
}

static int open_backing(const struct zero_mem_opts *o, struct zero_mem *m,
			char *err, size_t len)
{
	struct stat st;
	int e;

	if (o->has_fd) {
		struct stat cst;
		char proc[64];

		snprintf(m->path, sizeof(m->path), "fd %d", o->fd);
		m->pool = true;
		m->caller_fd = true;
		/*
		 * An open file description of our own, not a dup: flock(2)
		 * locks the description, so on a dup a second open of the
		 * same fd would take the lock it already holds, the lock
		 * would outlive close while the caller keeps its fd, and the
		 * caller's own LOCK_UN would drop it.
		 */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
		if (fstat(o->fd, &cst))
			goto err_errno;
		m->fd = open(proc, O_RDWR | O_CLOEXEC);
		if (m->fd < 0)
			goto err_errno;
		if (fstat(m->fd, &st) || st.st_dev != cst.st_dev ||
		    st.st_ino != cst.st_ino || !S_ISREG(st.st_mode)) {
			snprintf(err, len,
				 "%s: not a regular file that %s reopens",
				 m->path, proc);
			return -EINVAL;
		}
		e = lock_pool(m->fd, m->path, err, len);
		return e ? e : size_pool(m, o->bytes, err, len);
	}
	if (!o->pool_path) {
		e = zvmm_inject("memfd");
		if (e) {
			errno = e;
			goto err_errno;
		}
		m->fd = memfd_create(
			"zvmm-guest",
			MFD_CLOEXEC |
				(o->shmem ?
					 0 :
					 MFD_HUGETLB | (o->page_bytes == SZ_1G ?
								MFD_HUGE_1GB :
								MFD_HUGE_2MB)));
		if (m->fd < 0)
			goto err_errno;
		if (ftruncate(m->fd, (off_t)o->bytes))
			goto err_errno;
		return 0;
	}
	snprintf(m->path, sizeof(m->path), "%s", o->pool_path);
	m->pool = true;
	return open_pool(o, m, err, len);
err_errno:
	e = errno;
	snprintf(err, len, "cannot create guest memory%s%s: %s",
		 m->path[0] ? " in " : "", m->path, strerror(e));
	return -e;
}

/*
 * One range of @m->bytes (aligned to the page, reserved PROT_NONE) with
 * the lease's chunks mapped into it side by side: KVM sees one memslot,
 * each chunk stays its own file.
 */
static char *map_chunks(struct zero_mem *m, char **res)
{
	const struct zvmmd_lease *l = m->lease;
	uint64_t off = 0, page = m->page_bytes;
	char *base;

	*res = mmap(NULL, m->res_len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (*res == MAP_FAILED)
		return MAP_FAILED;
	base = (char *)(((uintptr_t)*res + page - 1) & ~(uintptr_t)(page - 1));
	for (unsigned int i = 0; i < l->nr && off < m->bytes; i++) {
		uint64_t n = l->ent[i].bytes < m->bytes - off ?
				     l->ent[i].bytes :
				     m->bytes - off;

		if (mmap(base + off, n, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, l->fd[i], 0) == MAP_FAILED)
			return MAP_FAILED;
		off += n;
	}
	if (off != m->bytes) {
		errno = EPROTO; /* zvmmd leased less than it said */
		return MAP_FAILED;
	}
	return base;
}

/*
 * Guest memory leased from zvmmd: mapped twice from its chunks, each
 * page as the lease says: a filled chunk's are zero (zvmmd allocated and
 * the kernel zeroed them, in a directory only zvmmd reaches), an empty
 * chunk's are holes the kernel zeroes at first touch.
 */
static int create_leased(const struct zero_mem_opts *o, struct zero_mem *m,
			 char *err, size_t len)
{
	uint64_t off = 0;
	int ret;

	m->lease = calloc(1, sizeof(*m->lease));
	if (!m->lease)
		return -ENOMEM;
	m->lease->sock = -1;
	ret = zvmmd_client_lease(o->service_path, o->bytes, o->page_bytes,
				 m->lease, err, len);
	if (ret)
		return ret;
	snprintf(m->path, sizeof(m->path), "zvmmd %s",
		 o->service_path ? o->service_path : ZVMMD_DEFAULT_SOCKET);
	m->res_len = m->bytes + m->page_bytes;
	/* Every chunk but the last is this long (zvmmd's chunk size). */
	m->split_bytes = m->lease->ent[0].bytes;
	m->guest = map_chunks(m, &m->guest_res);
	if (m->guest != MAP_FAILED)
		m->alias = map_chunks(m, &m->alias_res);
	if (m->guest == MAP_FAILED || m->alias == MAP_FAILED) {
		ret = -errno;
		snprintf(err, len, "cannot map the chunks zvmmd leased: %s",
			 strerror(-ret));
		return ret;
	}
	if (madvise(m->guest, m->bytes, MADV_DONTFORK) ||
	    madvise(m->alias, m->bytes, MADV_DONTFORK)) {
		ret = -errno;
		snprintf(err, len, "madvise(MADV_DONTFORK): %s",
			 strerror(-ret));
		return ret;
	}
	ret = zero_pages_create(m->nr_pages, ZP_FRESH, &m->pages);
	if (ret) {
		snprintf(err, len, "cannot allocate the page state table");
		return ret;
	}
	for (unsigned int i = 0; i < m->lease->nr && off < m->bytes; i++) {
		uint64_t end = off + m->lease->ent[i].bytes;

		for (uint64_t p = off / m->page_bytes;
		     m->lease->ent[i].state == ZVMMD_CHUNK_ZERO &&
		     p < end / m->page_bytes && p < m->nr_pages;
		     p++)
			if (zero_page_move(m->pages, p, ZP_FRESH, ZP_ZEROING) ||
			    zero_page_move(m->pages, p, ZP_ZEROING, ZP_ZERO))
				return -EINVAL;
		off = end;
	}
	return 0;
}

int zero_mem_create(const struct zero_mem_opts *o, struct zero_mem **out,
		    char *err, size_t len)
{
	enum zero_page_state initial = ZP_FRESH;
	struct zero_mem *m;
	int ret;

	if (!o->page_bytes || o->page_bytes % 4096 || !o->bytes ||
	    o->bytes % o->page_bytes) {
		snprintf(err, len, "guest memory must be whole pages");
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = m->dirfd = -1;
	m->guest = m->alias = MAP_FAILED;
	m->bytes = o->bytes;
	m->page_bytes = o->page_bytes;
	m->nr_pages = o->bytes / o->page_bytes;

	if (o->service) {
		ret = create_leased(o, m, err, len);
		if (ret)
			goto fail;
		*out = m;
		return 0;
	}
	ret = open_backing(o, m, err, len);
	if (ret)
		goto fail;
	/* The file as locked, before this launch's own mmap() moves its
	 * atime: what a state record is checked against. */
	if (fstat(m->fd, &m->st_open)) {
		ret = -errno;
		snprintf(err, len, "%s: %s", m->path, strerror(-ret));
		goto fail;
	}
	if (m->pool && !m->created && !m->sized) {
		struct stat st;

		/*
		 * A reused pool may hold the previous guest's data. Without
		 * a record proving otherwise every page of a file that holds
		 * any page is DIRTY: hugetlbfs cannot say which pages it
		 * holds (its llseek has no SEEK_DATA/SEEK_HOLE, checked on
		 * 6.18, and mincore(2) sees only a mapping's own page
		 * tables). Safety does not rest on this: the guest mapping
		 * is registered for MISSING and MINOR faults, so the guest
		 * reaches no page, hole or not, without zvmm (DESIGN.md 3).
		 */
		if (fstat(m->fd, &st) || st.st_blocks)
			initial = ZP_DIRTY;
	}
	/* Shared mappings reserve the file's hugepages now, so a shortage
	 * is an error here rather than a SIGBUS in the guest later. */
	ret = zvmm_inject("mmap");
	if (ret) {
		errno = ret;
		goto fail_map;
	}
	m->guest = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			m->fd, 0);
	if (m->guest == MAP_FAILED)
		goto fail_map;
	m->alias = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			m->fd, 0);
	if (m->alias == MAP_FAILED)
		goto fail_map;
	/*
	 * A child of fork(2) would share the pages with none of zvmm's
	 * faults: its first touch of a hole allocates a page the table
	 * calls FRESH, its writes reach a guest's page unseen. It gets no
	 * mapping at all (as QEMU does for guest RAM).
	 */
	if (madvise(m->guest, m->bytes, MADV_DONTFORK) ||
	    madvise(m->alias, m->bytes, MADV_DONTFORK)) {
		ret = -errno;
		snprintf(err, len, "madvise(MADV_DONTFORK): %s",
			 strerror(-ret));
		goto fail;
	}
	ret = zero_pages_create(m->nr_pages, initial, &m->pages);
	if (ret) {
		snprintf(err, len, "cannot allocate the page state table");
		goto fail;
	}
	*out = m;
	return 0;
fail_map:
	ret = -errno;
	snprintf(
		err, len,
		"cannot map %llu bytes of hugetlb memory: %s (are enough hugepages free?)",
		(unsigned long long)m->bytes, strerror(errno));
fail:
	zero_mem_undo(m);
	zero_mem_destroy(m);
	return ret;
}

void zero_mem_undo(struct zero_mem *m)
{
	struct stat st, here;

	/* Only the file this launch created, and only if it is still the
	 * one under that name in the directory it was checked in. */
	if (m->created && m->dirfd >= 0 && m->fd >= 0 && !fstat(m->fd, &st) &&
	    !fstatat(m->dirfd, m->name, &here, AT_SYMLINK_NOFOLLOW) &&
	    st.st_dev == here.st_dev && st.st_ino == here.st_ino)
		unlinkat(m->dirfd, m->name, 0);
	/* A file that was empty is emptied again, never removed. */
	if (m->sized && m->fd >= 0 && ftruncate(m->fd, 0)) {
		/* it keeps its size: no page is in it */
	}
	m->created = m->sized = false;
}

void zero_mem_destroy(struct zero_mem *m)
{
	if (!m)
		return;
	if (m->lease) {
		/* The reserved ranges, the chunks mapped in them included. */
		if (m->alias_res && m->alias_res != MAP_FAILED)
			munmap(m->alias_res, m->res_len);
		if (m->guest_res && m->guest_res != MAP_FAILED)
			munmap(m->guest_res, m->res_len);
		m->alias = m->guest = MAP_FAILED;
		zvmmd_client_release(m->lease);
		free(m->lease);
	}
	if (m->alias != MAP_FAILED && m->alias)
		munmap(m->alias, m->bytes);
	if (m->guest != MAP_FAILED && m->guest)
		munmap(m->guest, m->bytes);
	if (m->fd >= 0)
		close(m->fd);
	if (m->dirfd >= 0)
		close(m->dirfd);
	zero_pages_destroy(m->pages);
	free(m);
}

uint64_t zero_mem_allocated_pages(const struct zero_mem *m)
{
	struct stat st;

	if (fstat(m->fd, &st))
		return UINT64_MAX; /* unknown: more than any count, trust none */
	return held_pages(&st, m->page_bytes);
}

int zero_mem_punch_fresh(struct zero_mem *m, uint64_t *found)
{
	uint64_t before, after, i = 0, n;

	*found = 0;
	if (!m->pool)
		return 0;
	before = zero_mem_allocated_pages(m);
	while (i < m->nr_pages) {
		if (zero_page_get(m->pages, i) != ZP_FRESH) {
			i++;
			continue;
		}
		for (n = 1; i + n < m->nr_pages &&
			    zero_page_get(m->pages, i + n) == ZP_FRESH;
		     n++)
			;
		/*
		 * Over a hole this is a walk of an empty page cache range;
		 * over a page someone allocated it frees the page and its
		 * data. (It also drops the range's reservation: a later
		 * populate may then find the pool empty, and fails cleanly.)
		 */
		if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(i * m->page_bytes),
			      (off_t)(n * m->page_bytes)))
			return -errno;
		i += n;
	}
	after = zero_mem_allocated_pages(m);
	*found = before != UINT64_MAX && before > after ? before - after : 0;
	return 0;
}

int zero_mem_guest_exited(struct zero_mem *m, uint64_t *foreign)
{
	uint64_t held = 0, fresh = 0, found = 0;
	int ret;

	for (uint64_t i = 0; i < m->nr_pages; i++) {
		enum zero_page_state s = zero_page_get(m->pages, i);

		if (s == ZP_MAPPED) {
			ret = zero_page_move(m->pages, i, ZP_MAPPED, ZP_DIRTY);
			if (ret)
				return ret;
		}
		fresh += s == ZP_FRESH;
		held += s != ZP_FRESH;
	}
	if (foreign)
		*foreign = 0;
	/*
	 * A named pool outlives the launch: a FRESH page that another
	 * process allocated (and wrote) behind zvmm's back must not be
	 * "populated" for the next tenant, which would keep its data. The
	 * file's total cannot say which page (one punched out and another
	 * filled leave it unchanged) and hugetlbfs has no SEEK_DATA, so
	 * every FRESH page is made a hole again.
	 */
	if (fresh && m->pool) {
		ret = zero_mem_punch_fresh(m, &found);
		if (foreign)
			*foreign = found;
		return ret;
	}
	/*
	 * An anonymous memfd dies with zvmm, but the table stays honest: if
	 * the file holds more than the pages the table does not call FRESH,
	 * a FRESH page was allocated behind zvmm's back, and none is
	 * trusted.
	 */
	if (fresh && zero_mem_allocated_pages(m) > held)
		for (uint64_t i = 0; i < m->nr_pages; i++)
			if (zero_page_get(m->pages, i) == ZP_FRESH) {
				ret = zero_page_move(m->pages, i, ZP_FRESH,
						     ZP_DIRTY);
				if (ret)
					return ret;
			}
	return 0;
}

int zero_mem_written(struct zero_mem *m)
{
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		enum zero_page_state s = zero_page_get(m->pages, i);
		int ret = 0;

		if (s != ZP_DIRTY)
			ret = zero_page_move(m->pages, i, s, ZP_DIRTY);
		if (ret)
			return ret;
	}
	return 0;
}
