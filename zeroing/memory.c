// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

#include "../lib/inject.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
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
	char dir[PATH_MAX], a[32], b[32];
	struct statfs sfs;

	snprintf(dir, sizeof(dir), "%s", pool);
	if (fd >= 0 ? fstatfs(fd, &sfs) : statfs(dirname(dir), &sfs)) {
		int e = errno;

		snprintf(err, len, "--pool %s: cannot reach its directory: %s",
			 pool, strerror(e));
		return -e;
	}
	if (sfs.f_type != HUGETLBFS_MAGIC) {
		snprintf(
			err, len,
			"--pool %s is not on a hugetlbfs mount: mount one first, e.g. mkdir -p /mnt/zvmm && mount -t hugetlbfs -o pagesize=%s none /mnt/zvmm",
			pool, page_bytes == SZ_1G ? "1G" : "2M");
		return -ENODEV;
	}
	if ((uint64_t)sfs.f_bsize != page_bytes) {
		snprintf(
			err, len,
			"--pool %s is on a hugetlbfs mount of %s pages, not %s: use --hugepages %s or a mount with -o pagesize=%s",
			pool, size_format((uint64_t)sfs.f_bsize, a, sizeof(a)),
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

		snprintf(err, len, "--pool %s: cannot lock it: %s", path,
			 strerror(e));
		return -e;
	}
	pid = lock_holder(fd);
	if (pid > 0)
		snprintf(
			err, len,
			"pool %s is in use by zvmm pid %ld: wait for it to end, or use another --pool",
			path, pid);
	else
		snprintf(
			err, len,
			"pool %s is in use by another zvmm: wait for it to end, or use another --pool",
			path);
	return -EBUSY;
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
	uint64_t nr = o->bytes / o->page_bytes, have = 0, fbytes = 0, need;
	char a[32], b[32], path[128];
	long nfree, resv, avail, total_kb;
	int ret;

	if (o->page_bytes != SZ_2M && o->page_bytes != SZ_1G) {
		snprintf(err, len,
			 "hugepage size %s is not supported: use 2M or 1G",
			 size_format(o->page_bytes, a, sizeof(a)));
		return -EINVAL;
	}
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
	nfree = read_count(o->page_bytes, "free_hugepages");
	resv = read_count(o->page_bytes, "resv_hugepages");
	if (nfree < 0) {
		snprintf(
			err, len,
			"the kernel has no %s hugepage pool (%s missing): use another --hugepages size",
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
		ret = check_mount(o->pool_path, -1, o->page_bytes, err, len);
		if (!ret)
			ret = probe_pool_lock(o->pool_path, err, len);
		if (ret)
			return ret;
		ret = zero_mem_pool_pages(o->pool_path, o->page_bytes, &have,
					  &fbytes);
		if (ret) {
			snprintf(err, len, "--pool %s: %s", o->pool_path,
				 strerror(-ret));
			return ret;
		}
		if (fbytes && fbytes != o->bytes) {
			snprintf(
				err, len,
				"--pool %s holds %s, but %s was asked for: use --mem %s, or remove the file to start a new pool",
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
			"needs %llu free %s hugepages, %ld free (reserve them with: echo %ld > %s), but %s is more than this machine's %s of RAM can hold: choose a smaller --mem",
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
		if (e)
			return e;
		if (fstat(m->fd, &st))
			goto err_errno;
		if (!st.st_size && !st.st_blocks) {
			if (ftruncate(m->fd, (off_t)o->bytes))
				goto err_errno;
			m->created = true;
		} else if ((uint64_t)st.st_size != o->bytes) {
			snprintf(err, len, "%s is not a file of %llu bytes",
				 m->path, (unsigned long long)o->bytes);
			return -EINVAL;
		}
		return 0;
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
	m->fd = open(o->pool_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (m->fd >= 0) {
		/* Another launch may have opened the new file already:
		 * then it is theirs, and it stays. */
		e = lock_pool(m->fd, o->pool_path, err, len);
		if (e)
			return e;
		m->created = true;
		if (ftruncate(m->fd, (off_t)o->bytes))
			goto err_errno;
		return 0;
	}
	if (errno != EEXIST)
		goto err_errno;
	m->fd = open(o->pool_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (m->fd < 0)
		goto err_errno;
	e = lock_pool(m->fd, o->pool_path, err, len);
	if (e)
		return e;
	if (fstat(m->fd, &st))
		goto err_errno;
	/*
	 * An empty file holding nothing is a pool whose creator lost the
	 * race for the lock, or died before sizing it: under the lock it is
	 * ours to make, not an obstacle left for ever.
	 */
	if (S_ISREG(st.st_mode) && !st.st_size && !st.st_blocks) {
		if (ftruncate(m->fd, (off_t)o->bytes))
			goto err_errno;
		m->created = true;
		return 0;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != o->bytes) {
		snprintf(err, len, "--pool %s is not a pool file of %llu bytes",
			 o->pool_path, (unsigned long long)o->bytes);
		return -EINVAL;
	}
	return 0;
err_errno:
	e = errno;
	snprintf(err, len, "cannot create guest memory%s%s: %s",
		 m->path[0] ? " in " : "", m->path, strerror(e));
	return -e;
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
	m->fd = -1;
	m->guest = m->alias = MAP_FAILED;
	m->bytes = o->bytes;
	m->page_bytes = o->page_bytes;
	m->nr_pages = o->bytes / o->page_bytes;

	ret = open_backing(o, m, err, len);
	if (ret)
		goto fail;
	if (m->pool && !m->created) {
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
	/* Nothing left behind: a file this call made, or sized, undone. */
	if (m->created && !m->caller_fd)
		unlink(m->path);
	if (m->created && m->caller_fd && ftruncate(m->fd, 0)) {
		/* the caller's file keeps its size: no pages are in it */
	}
	zero_mem_destroy(m);
	return ret;
}

void zero_mem_destroy(struct zero_mem *m)
{
	if (!m)
		return;
	if (m->alias != MAP_FAILED && m->alias)
		munmap(m->alias, m->bytes);
	if (m->guest != MAP_FAILED && m->guest)
		munmap(m->guest, m->bytes);
	if (m->fd >= 0)
		close(m->fd);
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

int zero_mem_guest_exited(struct zero_mem *m)
{
	uint64_t held = 0, fresh = 0;
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
	/*
	 * Every page the table does not call FRESH is in the file or was
	 * never allocated (DIRTY from a partly held pool). If the file holds
	 * more than that, a FRESH page was allocated behind zvmm's back (a
	 * writer other than the guest, whose every first touch faulted to
	 * zvmm): which one is unknown, so none of them is trusted.
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
