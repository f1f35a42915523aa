// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "clock.h"
#include "holders.h"

/*
 * The devices of this process's mounts by mount id, from
 * /proc/self/mountinfo, for files looked for by device alone (mnt_id
 * -1): a mount this process cannot see (another mount namespace's) is
 * not in it, and an fd on one counts when its inode matches.
 */
struct mounts {
	int *id;
	dev_t *dev;
	size_t nr;
	bool read;
};

static void mounts_read(struct mounts *m)
{
	char line[512];
	size_t len = 0;
	bool whole = true;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	m->read = true;
	while (f && fgets(line, sizeof(line), f)) {
		bool start = whole;
		unsigned int maj, min;
		int id;
		void *a, *b;

		whole = strchr(line, '\n') != NULL;
		if (!start ||
		    sscanf(line, "%d %*d %u:%u", &id, &maj, &min) != 3)
			continue;
		if (m->nr == len) {
			len = len ? 2 * len : 64;
			a = realloc(m->id, len * sizeof(*m->id));
			if (a)
				m->id = a;
			b = realloc(m->dev, len * sizeof(*m->dev));
			if (b)
				m->dev = b;
			if (!a || !b)
				break;
		}
		m->id[m->nr] = id;
		m->dev[m->nr++] = makedev(maj, min);
	}
	if (f)
		fclose(f);
}

/* Whether an fd on mount @mnt_id may be on @dev (unknown mounts may). */
static bool mount_on(struct mounts *m, int mnt_id, dev_t dev)
{
	if (!m->read)
		mounts_read(m);
	for (size_t i = 0; i < m->nr; i++)
		if (m->id[i] == mnt_id)
			return m->dev[i] == dev;
	return true;
}

/* The first of @n files, not found yet, that an fd of @mnt_id:@ino is. */
static int which_fd(const struct holder_file *f, unsigned int n,
		    const long *pid, int mnt_id, ino_t ino, struct mounts *m)
{
	for (unsigned int i = 0; i < n; i++)
		if (pid[i] < 0 && f[i].ino == ino &&
		    (f[i].mnt_id >= 0 ? f[i].mnt_id == mnt_id :
					mount_on(m, mnt_id, f[i].dev)))
			return (int)i;
	return -1;
}

/* The first of @n files, not found yet, that a mapping of @dev:@ino is. */
static int which_map(const struct holder_file *f, unsigned int n,
		     const long *pid, dev_t dev, ino_t ino)
{
	for (unsigned int i = 0; i < n; i++)
		if (pid[i] < 0 && f[i].ino == ino && f[i].dev == dev)
			return (int)i;
	return -1;
}

/*
 * The mnt_id: and ino: of fdinfo file @name in @dirfd; false when it
 * cannot be read (the fd closed meanwhile) or has no mnt_id:. A kernel
 * before 5.14 writes no ino: line: *@ino is then 0, and the caller
 * counts an fd on the mount as holding every file on it.
 */
static bool fdinfo_read(int dirfd, const char *name, int *mnt_id, ino_t *ino)
{
	char buf[256], *p;
	unsigned long long i;
	ssize_t len;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	p = strstr(buf, "\nmnt_id:");
	if (!p || sscanf(p + 8, "%d", mnt_id) != 1)
		return false;
	p = strstr(buf, "\nino:");
	*ino = p && sscanf(p + 5, "%llu", &i) == 1 ? (ino_t)i : 0;
	return true;
}

int holder_mnt_id(int fd)
{
	char path[48];
	int dirfd, id = -1;
	ino_t ino;

	dirfd = open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%d", fd);
	if (!fdinfo_read(dirfd, path, &id, &ino))
		id = -EBADF;
	close(dirfd);
	return id;
}

static bool gave_up(double deadline, const bool *stop, int *why)
{
	if (stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))
		*why = -ECANCELED;
	else if (deadline > 0 && clock_now() > deadline)
		*why = -ETIMEDOUT;
	return *why != 0;
}

struct walk {
	const struct holder_file *f;
	unsigned int n, found;
	long *pid;
	struct mounts mounts;
	double deadline;
	const bool *stop;
	int why; /* -ETIMEDOUT, -ECANCELED: given up */
};

/*
 * Whether fd @name of the process whose /proc/PID/fd is @fddir is a file
 * with a path (a chunk's is one): its link, which procfs writes from the
 * dentry without a call into the file's filesystem, starts with '/'.
 * Anything else (anon_inode:, socket:, pipe:) is no chunk, and its
 * fdinfo is not read: an io_uring's lists every registered file's path,
 * seconds for a ring of 20,000 long ones. A link that cannot be read is
 * looked at.
 */
static bool fd_is_path(int fddir, const char *name)
{
	char link[8];

	if (fddir < 0 || readlinkat(fddir, name, link, sizeof(link)) < 1)
		return true;
	return link[0] == '/';
}

/* Process @p's fds, by its fdinfo; the deadline looked at each fd. */
static void walk_fds(struct walk *w, long p)
{
	char path[64];
	struct dirent *de;
	int fddir;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/fd", p);
	fddir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%ld/fdinfo", p);
	dir = opendir(path);
	while (dir && w->found < w->n && (de = readdir(dir))) {
		ino_t ino;
		int mnt_id, k;

		if (de->d_name[0] == '.')
			continue;
		if (gave_up(w->deadline, w->stop, &w->why))
			break;
		if (!fd_is_path(fddir, de->d_name) ||
		    !fdinfo_read(dirfd(dir), de->d_name, &mnt_id, &ino))
			continue;
		if (ino) {
			k = which_fd(w->f, w->n, w->pid, mnt_id, ino,
				     &w->mounts);
			if (k >= 0) {
				w->pid[k] = p;
				w->found++;
			}
			continue;
		}
		/* No ino: line: every file on that mount is held. */
		for (unsigned int i = 0; i < w->n; i++)
			if (w->pid[i] < 0 && w->f[i].mnt_id == mnt_id) {
				w->pid[i] = p;
				w->found++;
			}
	}
	if (dir)
		closedir(dir);
	if (fddir >= 0)
		close(fddir);
}

/*
 * Process @p's mappings, by its maps. A line longer than the buffer (a
 * long path) is read on to its end, and what follows its first piece is
 * never taken for a line of its own: a path's text cannot pass for a
 * mapping.
 */
static void walk_maps(struct walk *w, long p)
{
	char path[64], line[512];
	unsigned int seen = 0;
	bool whole = true;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/maps", p);
	f = fopen(path, "re");
	while (f && w->found < w->n && fgets(line, sizeof(line), f)) {
		bool start = whole;
		unsigned int maj, min;
		unsigned long long ino;
		int k;

		whole = strchr(line, '\n') != NULL;
		if (!start)
			continue;
		if (!(++seen % 1024) && gave_up(w->deadline, w->stop, &w->why))
			break;
		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu", &maj, &min,
			   &ino) != 3 ||
		    !ino)
			continue;
		k = which_map(w->f, w->n, w->pid, makedev(maj, min),
			      (ino_t)ino);
		if (k >= 0) {
			w->pid[k] = p;
			w->found++;
		}
	}
	if (f)
		fclose(f);
}

static void comm_of(long pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

int holders_walk(const struct holder_file *f, unsigned int n, long *pid,
		 char (*comm)[HOLDER_COMM_LEN], double deadline,
		 const bool *stop)
{
	return holders_walk_from(f, n, pid, comm, deadline, stop, NULL);
}

int holders_walk_from(const struct holder_file *f, unsigned int n, long *pid,
		      char (*comm)[HOLDER_COMM_LEN], double deadline,
		      const bool *stop, long *resume)
{
	struct walk w = {
		.f = f, .n = n, .pid = pid, .deadline = deadline, .stop = stop
	};
	long self = (long)getpid(), from = resume ? *resume : 0, done = from;
	long at = 0; /* the process being walked when it gave up */
	struct dirent *de;
	DIR *proc;

	for (unsigned int i = 0; i < n; i++)
		pid[i] = -1;
	proc = n ? opendir("/proc") : NULL;
	if (n && !proc)
		w.why = -errno;
	while (proc && w.found < n && !w.why && (de = readdir(proc))) {
		unsigned int before = w.found;
		char *end;
		long p;

		p = strtol(de->d_name, &end, 10);
		if (*end || p <= from || p == self ||
		    gave_up(deadline, stop, &w.why))
			continue;
		at = p;
		walk_fds(&w, p);
		if (w.found < n && !w.why)
			walk_maps(&w, p);
		if (!w.why)
			done = p;
		for (unsigned int i = 0; i < n && w.found > before; i++)
			if (pid[i] == p)
				comm_of(p, comm[i], sizeof(comm[i]));
	}
	if (proc)
		closedir(proc);
	free(w.mounts.id);
	free(w.mounts.dev);
	/*
	 * A slice that could not walk even one process whole goes past it
	 * next time, or no pass would ever end: what that process holds is
	 * then not seen, as an fd in flight is not (zvmmd weighs what a
	 * retire frees).
	 */
	if (resume)
		*resume = !w.why ? 0 : done == from && at ? at : done;
	if (!w.why)
		return (int)w.found;
	/* Not looked at everywhere: held by someone not known. */
	for (unsigned int i = 0; i < n; i++)
		if (pid[i] < 0) {
			pid[i] = 0;
			snprintf(comm[i], HOLDER_COMM_LEN, "?");
		}
	return w.why;
}

unsigned int holders_of(const struct stat *st, unsigned int n, long *pid,
			char (*comm)[HOLDER_COMM_LEN])
{
	struct holder_file *f = calloc(n ? n : 1, sizeof(*f));
	int ret;

	if (!f) {
		/* Not looked: held, as a walk that gave up says. */
		for (unsigned int i = 0; i < n; i++) {
			pid[i] = 0;
			snprintf(comm[i], HOLDER_COMM_LEN, "?");
		}
		return n;
	}
	for (unsigned int i = 0; i < n; i++)
		f[i] = (struct holder_file){ -1, st[i].st_dev, st[i].st_ino };
	ret = holders_walk(f, n, pid, comm, 0, NULL);
	free(f);
	if (ret >= 0)
		return (unsigned int)ret;
	ret = 0;
	for (unsigned int i = 0; i < n; i++)
		ret += pid[i] >= 0;
	return (unsigned int)ret;
}

long holder_of(const struct stat *st, char *comm, size_t len)
{
	char c[1][HOLDER_COMM_LEN];
	long pid;

	if (!holders_of(st, 1, &pid, c))
		return -1;
	snprintf(comm, len, "%s", c[0]);
	return pid;
}
