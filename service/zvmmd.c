// SPDX-License-Identifier: MIT
/*
 * zvmmd: keeps hugepage memory zeroed ahead of time, in chunks (one
 * hugetlbfs file each, on a mount of its own that only it can reach), and
 * leases it to VMMs over a unix SOCK_SEQPACKET socket (lib/zvmmd_proto.h,
 * docs/zvmmd-protocol.md). docs/DESIGN.md, "zvmmd", says why a chunk is
 * never leased twice: a returned chunk is retired (unlinked, its pages
 * back to the kernel once no one holds them) and a new one is filled in
 * its place, at idle priority, in zvmmd's own thread and cgroup.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/clock.h"
#include "../lib/holders.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "../lib/zvmmd_proto.h"
#include "config.h"

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif
#define SD_LISTEN_FDS_START 3

/* ------------------------------------------------------------ logging */

static bool to_journal; /* stderr is journald's: "<N>" priorities */

__attribute__((format(printf, 2, 3))) static void say(int prio, const char *fmt,
						      ...)
{
	static const char *const names[] = {
		[3] = "error", [4] = "warning", [6] = "info", [7] = "debug"
	};
	va_list ap;

	if (to_journal)
		fprintf(stderr, "<%d>", prio);
	else
		fprintf(stderr, "zvmmd: %s: ", names[prio] ? names[prio] : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define err_(...) say(3, __VA_ARGS__)
#define warn_(...) say(4, __VA_ARGS__)
#define info_(...) say(6, __VA_ARGS__)

/* ------------------------------------------------------------- chunks */

struct chunk {
	struct chunk *next;
	int fd;
	uint64_t bytes;
	struct stat st;
	char name[48];
	bool filled; /* every page allocated and zero: leased as ZERO */
	long holder; /* quarantined: who held it at the last look */
	char holder_comm[32];
};

struct pool {
	const struct zvmmd_pool_cfg *cfg;
	char label[24]; /* "2M", "1G", "2M-node1" */
	char dir[PATH_MAX]; /* for messages: [service] dir/label */
	char at[64]; /* the mount point through d.dirfd: /proc/self/fd/N/label */
	int dirfd;
	bool mounted;
	bool refilling; /* below low: fill up to high */
	uint64_t seq;
	struct chunk *zero; /* filled, ready to lease */
	struct chunk *quarantine; /* returned, still held by someone */
	uint64_t zero_bytes, filling_bytes, leased_bytes, quarantined_bytes;
	uint64_t filled_bytes; /* filled since start, for the rate */
	double fill_seconds;
	int fill_error; /* the last fill's, shown in status */
};

struct lease {
	struct lease *next;
	uint32_t id;
	struct pool *pool;
	struct chunk *chunks;
	unsigned int nr;
	uint64_t bytes;
};

enum { EV_LISTEN = 1, EV_SIGNAL, EV_TIMER, EV_CLIENT, EV_PIDFD };

/* What an epoll event points at. */
struct ev {
	int kind;
	struct client *c;
};

/* A connected client: its socket, its pidfd, at most one lease. */
struct client {
	struct ev sock_ev, pid_ev;
	int fd, pidfd;
	pid_t pid;
	uid_t uid;
	char comm[32];
	bool refused; /* not root, not in the group: every message refused */
	double since; /* accepted, or its last message: CLOCK_MONOTONIC */
	struct lease *lease;
	struct client *next;
};

/*
 * Each connection costs zvmmd two descriptors (the socket, the client's
 * pidfd). A client asks at once (a lease, a status), so one that holds
 * no lease is closed after IDLE_SECONDS: a group member cannot pin the
 * daemon's descriptors with idle connections, only with leases, which
 * [pages] max bounds. At most MAX_CLIENTS at a time, and when the
 * process runs out of descriptors anyway accepting pauses until one is
 * closed (the listening socket would otherwise wake epoll forever).
 */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define IDLE_SECONDS 10.0
#define MAX_CLIENTS 4096
static unsigned int nr_clients;
static bool listen_paused;

/*
 * Refused peers kept open until they close, so each reads why (closing
 * on a request still unread would reset the connection first); at most
 * this many, then a refusal closes at once.
 */
#define MAX_REFUSED 16
static unsigned int nr_refused;

static struct ev listen_ev = { EV_LISTEN, NULL },
		 signal_ev = { EV_SIGNAL, NULL }, timer_ev = { EV_TIMER, NULL };

static struct {
	struct zvmmd_config cfg;
	struct pool pools[ZVMMD_NR_POOLS];
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	pthread_t filler;
	bool filler_on;
	int epfd, listen_fd, signal_fd, timer_fd;
	bool bound; /* the socket file is ours to remove */
	int dirfd; /* [service] dir, opened without symbolic links */
	gid_t gid; /* the peers' group, (gid_t)-1: root alone */
	struct client *clients;
	uint32_t next_lease;
	uint64_t last_lease_ns; /* atomic: CLOCK_MONOTONIC of the last lease */
} d = { .lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.epfd = -1,
	.listen_fd = -1,
	.signal_fd = -1,
	.timer_fd = -1,
	.dirfd = -1 };

static uint64_t held_bytes(const struct pool *p)
{
	return p->zero_bytes + p->filling_bytes + p->leased_bytes +
	       p->quarantined_bytes;
}

/*
 * A chunk is gone for good: its name first, so that nothing finds it,
 * then zvmmd's fd; its pages go back to the kernel once no one else holds
 * the file. Called with the lock held (or alone).
 */
static void retire(struct pool *p, struct chunk *c)
{
	if (unlinkat(p->dirfd, c->name, 0) && errno != ENOENT)
		warn_("cannot remove chunk %s/%s: %s", p->dir, c->name,
		      strerror(errno));
	close(c->fd);
	free(c);
}

/* A new chunk file of @bytes, no page in it yet. */
static int chunk_create(struct pool *p, uint64_t bytes, struct chunk **out)
{
	struct chunk *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	snprintf(c->name, sizeof(c->name), "chunk-%s-%llu", p->label,
		 (unsigned long long)++p->seq);
	c->bytes = bytes;
	c->holder = -1;
	c->fd = openat(p->dirfd, c->name,
		       O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		       0600);
	if (c->fd < 0) {
		ret = -errno;
		free(c);
		return ret;
	}
	if (ftruncate(c->fd, (off_t)bytes) || fstat(c->fd, &c->st)) {
		ret = -errno;
		retire(p, c);
		return ret;
	}
	*out = c;
	return 0;
}

/* ------------------------------------------------------------- filler */

static bool fill_wanted(struct pool *p)
{
	const struct zvmmd_pool_cfg *cfg = p->cfg;
	uint64_t ready = p->zero_bytes + p->filling_bytes;

	if (!cfg->on || !cfg->high || p->fill_error)
		return false;
	if (ready < cfg->low)
		p->refilling = true;
	if (ready >= cfg->high)
		p->refilling = false;
	return p->refilling && held_bytes(p) + cfg->chunk_bytes <= cfg->max;
}

/* Sleeps until @t (CLOCK_MONOTONIC seconds) or a stop. */
static void pace_until(double t)
{
	struct timespec ts;
	double now = clock_now();

	if (t <= now)
		return;
	ts.tv_sec = (time_t)(t - now);
	ts.tv_nsec = (long)((t - now - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

/*
 * The kernel zeroes a page the filler allocates while holding one of its
 * hugetlb fault mutexes (8 per possible CPU, hashed by file and index);
 * a client's first mapping of its leased pages may hash to the same one
 * and then waits for the whole page: 130-210 ms for 1 GiB, in 3 of 50
 * storm launches on Xeon model 207, the filler having started the moment
 * the lease took a chunk. A client maps what it leased within a few ms,
 * so no page is started until the last lease is LEASE_QUIET old; leases
 * one after another hold the filler back by at most LEASE_QUIET_MAX a
 * page.
 */
#define LEASE_QUIET 0.1
#define LEASE_QUIET_MAX 1.0

static void wait_quiet(void)
{
	double t0 = clock_now(), until;

	for (;;) {
		until = (double)__atomic_load_n(&d.last_lease_ns,
						__ATOMIC_RELAXED) *
				1e-9 +
			LEASE_QUIET;
		if (until > t0 + LEASE_QUIET_MAX)
			until = t0 + LEASE_QUIET_MAX;
		if (until <= clock_now() ||
		    __atomic_load_n(&d.stop, __ATOMIC_ACQUIRE))
			return;
		pace_until(until);
	}
}

/*
 * Fills one chunk: every page allocated, so the kernel zeroes it here, in
 * this thread (SCHED_IDLE, zvmmd's cgroup: the cost is the operator's and
 * visible), at no more than [scrub] rate.
 */
static int chunk_fill(struct pool *p, struct chunk *c)
{
	uint64_t page = p->cfg->page_bytes, rate = d.cfg.scrub_rate;
	double t0 = clock_now();
	char *addr;
	int ret = 0;

	addr = mmap(NULL, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
		    0);
	if (addr == MAP_FAILED)
		return -errno;
	if (p->cfg->node >= 0 && numa_available() >= 0)
		numa_tonode_memory(addr, c->bytes, p->cfg->node);
	for (uint64_t off = 0; off < c->bytes && !ret; off += page) {
		if (__atomic_load_n(&d.stop, __ATOMIC_ACQUIRE)) {
			ret = -ECANCELED;
			break;
		}
		wait_quiet();
		if (madvise(addr + off, page, MADV_POPULATE_WRITE))
			ret = -errno;
		else if (rate)
			pace_until(t0 + (double)(off + page) / (double)rate);
	}
	munmap(addr, c->bytes);
	if (!ret) {
		/* The status reads these under the lock. */
		pthread_mutex_lock(&d.lock);
		p->filled_bytes += c->bytes;
		p->fill_seconds += clock_now() - t0;
		pthread_mutex_unlock(&d.lock);
	}
	return ret;
}

static void *filler(void *arg)
{
	struct sched_param sp = { 0 };

	(void)arg;
	if (d.cfg.scrub_idle && sched_setscheduler(0, SCHED_IDLE, &sp))
		warn_("cannot run the filler at idle priority: %s",
		      strerror(errno));
	if (d.cfg.scrub_cpus[0] && numa_available() >= 0) {
		struct bitmask *cpus =
			numa_parse_cpustring_all(d.cfg.scrub_cpus);

		if (!cpus || numa_sched_setaffinity(0, cpus))
			warn_("cannot keep the filler on CPUs %s: %s",
			      d.cfg.scrub_cpus, strerror(errno));
		if (cpus)
			numa_free_cpumask(cpus);
	}
	pthread_mutex_lock(&d.lock);
	while (!d.stop) {
		struct pool *p = NULL;
		struct chunk *c;
		int ret;

		for (int i = 0; i < ZVMMD_NR_POOLS && !p; i++)
			if (fill_wanted(&d.pools[i]))
				p = &d.pools[i];
		if (!p) {
			pthread_cond_wait(&d.wake, &d.lock);
			continue;
		}
		ret = chunk_create(p, p->cfg->chunk_bytes, &c);
		if (!ret)
			p->filling_bytes += c->bytes;
		pthread_mutex_unlock(&d.lock);
		if (!ret) {
			ret = chunk_fill(p, c);
			pthread_mutex_lock(&d.lock);
			p->filling_bytes -= c->bytes;
			if (!ret) {
				c->filled = true;
				c->next = p->zero;
				p->zero = c;
				p->zero_bytes += c->bytes;
			} else {
				retire(p, c);
			}
		} else {
			pthread_mutex_lock(&d.lock);
		}
		if (ret && ret != -ECANCELED && !p->fill_error) {
			/* Said once; a lease or a return tries again. */
			p->fill_error = -ret;
			warn_("cannot fill a chunk of %s pages: %s (free hugepages short? raise nr_hugepages, or lower that pool's high)",
			      p->label, strerror(-ret));
		}
	}
	pthread_mutex_unlock(&d.lock);
	return NULL;
}

/* Something changed what the filler should do. With the lock held. */
static void poke_filler(void)
{
	for (int i = 0; i < ZVMMD_NR_POOLS; i++)
		d.pools[i].fill_error = 0;
	pthread_cond_signal(&d.wake);
}

/* ------------------------------------------------------------- leases */

/* Free hugepages of @page_bytes the kernel has not promised anyone. */
static uint64_t free_pages(uint64_t page_bytes)
{
	char path[96];
	long nfree = 0, resv = 0;

	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/hugepages/hugepages-%llukB/free_hugepages",
		 (unsigned long long)(page_bytes >> 10));
	if (sysfs_read_long(path, &nfree))
		return 0;
	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/hugepages/hugepages-%llukB/resv_hugepages",
		 (unsigned long long)(page_bytes >> 10));
	if (sysfs_read_long(path, &resv))
		resv = 0;
	return nfree > resv ? (uint64_t)(nfree - resv) : 0;
}

static int send_error(int fd, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int send_error(int fd, int err, const char *fmt, ...)
{
	struct zvmmd_error e = { .err = err };
	char buf[sizeof(struct zvmmd_hdr) + sizeof(e)];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_ERROR, &e, sizeof(e));
	if (n < 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
		return -errno;
	return 0;
}

/* The lease's reply: entries in the message, the fds beside it. */
static int send_lease(int fd, const struct lease *l)
{
	size_t body = sizeof(struct zvmmd_lease_rep) +
		      l->nr * sizeof(struct zvmmd_chunk_ent);
	char buf[ZVMMD_MSG_MAX], *b;
	union {
		char raw[CMSG_SPACE(sizeof(int) * ZVMMD_MAX_CHUNKS)];
		struct cmsghdr align;
	} u;
	struct zvmmd_lease_rep rep = { .lease_id = l->id,
				       .nr_chunks = l->nr,
				       .page_bytes = l->pool->cfg->page_bytes };
	struct iovec iov = { .iov_base = buf };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw,
			     .msg_controllen =
				     CMSG_SPACE(sizeof(int) * l->nr) };
	struct cmsghdr *cm;
	const struct chunk *c;
	unsigned int i = 0;
	int n;

	n = zvmmd_build(buf, sizeof(buf), ZVMMD_LEASE_OK, NULL, body);
	if (n < 0)
		return n;
	b = buf + sizeof(struct zvmmd_hdr) + sizeof(rep);
	memset(u.raw, 0, sizeof(u.raw));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * l->nr);
	for (c = l->chunks; c; c = c->next, i++) {
		struct zvmmd_chunk_ent e = {
			.bytes = c->bytes,
			.state = c->filled ? ZVMMD_CHUNK_ZERO :
					     ZVMMD_CHUNK_EMPTY
		};

		if (e.state == ZVMMD_CHUNK_ZERO)
			rep.zero_bytes += c->bytes;
		else
			rep.empty_bytes += c->bytes;
		memcpy(b + i * sizeof(e), &e, sizeof(e));
		memcpy(CMSG_DATA(cm) + i * sizeof(int), &c->fd, sizeof(int));
	}
	memcpy(buf + sizeof(struct zvmmd_hdr), &rep, sizeof(rep));
	iov.iov_len = (size_t)n;
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != n)
		return -errno;
	return 0;
}

/* A lease's chunks come back: retired, or quarantined while held. */
/*
 * Who holds chunks, one walk of /proc for all of them (a walk costs what
 * the host runs: every fd and mapping), and without d.lock, so the
 * filler is not held up by it. Only this thread (the event loop) moves
 * chunks into and out of quarantine, so none of them goes meanwhile.
 */
static long holder_pid[ZVMMD_MAX_CHUNKS];
static char holder_comm[ZVMMD_MAX_CHUNKS][HOLDER_COMM_LEN];

static void lease_end(struct lease *l)
{
	static struct stat st[ZVMMD_MAX_CHUNKS];
	struct pool *p = l->pool;
	struct chunk *c, *next;
	unsigned int n = 0, i = 0;

	for (c = l->chunks; c && n < ZVMMD_MAX_CHUNKS; c = c->next)
		st[n++] = c->st;
	holders_of(st, n, holder_pid, holder_comm);
	pthread_mutex_lock(&d.lock);
	for (c = l->chunks; c; c = next, i++) {
		next = c->next;
		p->leased_bytes -= c->bytes;
		if (i < n && holder_pid[i] < 0) {
			retire(p, c);
			continue;
		}
		c->holder = i < n ? holder_pid[i] : 0;
		snprintf(c->holder_comm, sizeof(c->holder_comm), "%s",
			 i < n ? holder_comm[i] : "?");
		c->next = p->quarantine;
		p->quarantine = c;
		p->quarantined_bytes += c->bytes;
		warn_("lease %u: chunk %s is still held by pid %ld (%s): quarantined, never leased again, retired once free",
		      l->id, c->name, c->holder, c->holder_comm);
	}
	poke_filler();
	pthread_mutex_unlock(&d.lock);
	free(l);
}

/*
 * A lease that never reached its client: filled chunks go back to the
 * ready list (no one else saw them), new empty ones are retired.
 */
static void lease_undo(struct lease *l)
{
	struct pool *p = l->pool;
	struct chunk *c, *next;

	pthread_mutex_lock(&d.lock);
	for (c = l->chunks; c; c = next) {
		next = c->next;
		p->leased_bytes -= c->bytes;
		if (!c->filled) {
			retire(p, c);
			continue;
		}
		c->next = p->zero;
		p->zero = c;
		p->zero_bytes += c->bytes;
	}
	pthread_mutex_unlock(&d.lock);
	free(l);
}

/* The quarantine, looked at again: chunks no one holds now retire. */
static void quarantine_check(void)
{
	static struct stat st[ZVMMD_MAX_CHUNKS];
	struct chunk *c, **pp;
	unsigned int n = 0, i = 0;

	/* The first ZVMMD_MAX_CHUNKS this tick, the rest at the next. */
	for (int k = 0; k < ZVMMD_NR_POOLS; k++)
		for (c = d.pools[k].quarantine; c && n < ZVMMD_MAX_CHUNKS;
		     c = c->next)
			st[n++] = c->st;
	if (!n)
		return;
	holders_of(st, n, holder_pid, holder_comm);
	pthread_mutex_lock(&d.lock);
	for (int k = 0; k < ZVMMD_NR_POOLS && i < n; k++) {
		struct pool *p = &d.pools[k];

		pp = &p->quarantine;
		while ((c = *pp) && i < n) {
			long pid = holder_pid[i];

			if (pid >= 0) {
				c->holder = pid;
				snprintf(c->holder_comm, sizeof(c->holder_comm),
					 "%s", holder_comm[i++]);
				pp = &c->next;
				continue;
			}
			i++;
			*pp = c->next;
			p->quarantined_bytes -= c->bytes;
			info_("chunk %s is free again: retired", c->name);
			retire(p, c);
			poke_filler();
		}
	}
	pthread_mutex_unlock(&d.lock);
}

/*
 * The pool a request of @page_bytes on @node draws from: the one kept on
 * that node; for any node (-1), the one kept on any node, else the one
 * with the most zeroed bytes. NULL when none is configured.
 */
static struct pool *pool_of(uint64_t page_bytes, int node)
{
	struct pool *any = NULL, *best = NULL;

	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		struct pool *p = &d.pools[i];

		if (!p->cfg->on || p->cfg->page_bytes != page_bytes)
			continue;
		if (node >= 0 && p->cfg->node == node)
			return p;
		if (p->cfg->node < 0)
			any = p;
		if (!best || p->zero_bytes > best->zero_bytes)
			best = p;
	}
	return any ? any : node < 0 ? best : NULL;
}

/*
 * A lease of @req for @cl: filled chunks first, then empty ones (the
 * kernel zeroes their pages at the client's first touch) while the
 * service may hold more and the kernel has the pages.
 */
static int lease_make(struct client *cl, const struct zvmmd_lease_req *req)
{
	struct pool *p;
	uint64_t chunk, need, zero_n = 0, empty_n, want;
	struct lease *l;
	struct chunk *c, **tail;
	char a[32], b[32];
	int ret = 0;

	pthread_mutex_lock(&d.lock);
	p = pool_of(req->page_bytes, req->node);
	pthread_mutex_unlock(&d.lock);
	if (cl->lease)
		return send_error(
			cl->fd, EBUSY,
			"this connection holds lease %u: one lease per connection, open another",
			cl->lease->id);
	if (!p && req->node >= 0)
		return send_error(
			cl->fd, EINVAL,
			"zvmmd keeps no %s pages on node %d: configure [pages.%s.node%d] in %s",
			size_label(req->page_bytes, a, sizeof(a)), req->node,
			size_label(req->page_bytes, b, sizeof(b)), req->node,
			"zvmmd.conf");
	if (!p)
		return send_error(
			cl->fd, EINVAL,
			"zvmmd keeps no %s pages: configure [pages.%s] in %s",
			size_label(req->page_bytes, a, sizeof(a)),
			size_label(req->page_bytes, b, sizeof(b)),
			"zvmmd.conf");
	chunk = p->cfg->chunk_bytes;
	/* Not (bytes + chunk - 1) / chunk: that wraps near 2^64. */
	need = req->bytes / chunk + !!(req->bytes % chunk);
	if (need > ZVMMD_MAX_CHUNKS)
		return send_error(
			cl->fd, EINVAL,
			"%s is more than %u chunks of %s: ask for less",
			size_format(req->bytes, a, sizeof(a)), ZVMMD_MAX_CHUNKS,
			size_format(chunk, b, sizeof(b)));
	l = calloc(1, sizeof(*l));
	if (!l)
		return send_error(cl->fd, ENOMEM, "zvmmd is out of memory");
	pthread_mutex_lock(&d.lock);
	l->pool = p;
	l->id = ++d.next_lease;
	tail = &l->chunks;
	while (l->nr < need && p->zero) {
		c = p->zero;
		p->zero = c->next;
		p->zero_bytes -= c->bytes;
		c->next = NULL;
		*tail = c;
		tail = &c->next;
		l->nr++;
		zero_n++;
	}
	empty_n = need - l->nr;
	want = empty_n ? req->bytes - zero_n * chunk : 0;
	/* What it holds, the filled chunks taken now counted again. */
	if (empty_n && held_bytes(p) + zero_n * chunk + want > p->cfg->max)
		ret = -ENOSPC;
	else if (empty_n &&
		 free_pages(p->cfg->page_bytes) < want / p->cfg->page_bytes)
		ret = -ENOMEM;
	while (!ret && l->nr < need) {
		/* The last one only as long as the request still needs. */
		uint64_t len = want < chunk ? want : chunk;

		ret = chunk_create(p, len, &c);
		if (ret)
			break;
		want -= len;
		*tail = c;
		tail = &c->next;
		l->nr++;
	}
	for (c = l->chunks; c; c = c->next)
		l->bytes += c->bytes;
	p->leased_bytes += l->bytes;
	__atomic_store_n(&d.last_lease_ns, (uint64_t)(clock_now() * 1e9),
			 __ATOMIC_RELAXED);
	poke_filler();
	pthread_mutex_unlock(&d.lock);
	if (ret) {
		uint64_t zb = l->bytes;

		lease_undo(l);
		if (ret == -ENOSPC)
			return send_error(
				cl->fd, ENOMEM,
				"zvmmd may hold at most %s of %s pages (that pool's max) and %s of it is in use: ask for less, or raise max",
				size_format(p->cfg->max, a, sizeof(a)),
				p->label,
				size_format(held_bytes(p) + zb, b, sizeof(b)));
		return send_error(
			cl->fd, -ret,
			"zvmmd cannot make %s of %s pages: %s (free hugepages short: raise nr_hugepages)",
			size_format(req->bytes, a, sizeof(a)), p->label,
			strerror(-ret));
	}
	ret = send_lease(cl->fd, l);
	if (ret) {
		warn_("lease %u to pid %d: cannot send it: %s", l->id,
		      (int)cl->pid, strerror(-ret));
		lease_undo(l);
		return ret;
	}
	cl->lease = l;
	info_("lease %u: %s of %s pages to pid %d (%s), uid %u: %llu filled, %llu empty chunks",
	      l->id, size_format(l->bytes, a, sizeof(a)), p->label,
	      (int)cl->pid, cl->comm, (unsigned int)cl->uid,
	      (unsigned long long)zero_n, (unsigned long long)(l->nr - zero_n));
	return 0;
}

/* ------------------------------------------------------------- status */

static json_object *pool_json(struct pool *p)
{
	json_object *o = json_object_new_object(), *leases, *q;
	const struct client *cl;
	const struct chunk *c;

	json_object_object_add(
		o, "page_bytes",
		json_object_new_int64((int64_t)p->cfg->page_bytes));
	json_object_object_add(o, "node", json_object_new_int(p->cfg->node));
	json_object_object_add(
		o, "chunk_bytes",
		json_object_new_int64((int64_t)p->cfg->chunk_bytes));
	json_object_object_add(o, "clean_bytes",
			       json_object_new_int64((int64_t)p->zero_bytes));
	json_object_object_add(
		o, "dirty_bytes",
		json_object_new_int64((int64_t)p->filling_bytes));
	json_object_object_add(o, "leased_bytes",
			       json_object_new_int64((int64_t)p->leased_bytes));
	json_object_object_add(
		o, "quarantined_bytes",
		json_object_new_int64((int64_t)p->quarantined_bytes));
	json_object_object_add(o, "low_bytes",
			       json_object_new_int64((int64_t)p->cfg->low));
	json_object_object_add(o, "high_bytes",
			       json_object_new_int64((int64_t)p->cfg->high));
	json_object_object_add(o, "max_bytes",
			       json_object_new_int64((int64_t)p->cfg->max));
	json_object_object_add(o, "scrubbed_bytes",
			       json_object_new_int64((int64_t)p->filled_bytes));
	json_object_object_add(
		o, "scrub_gbps",
		json_object_new_double(p->fill_seconds > 0 ?
					       (double)p->filled_bytes /
						       p->fill_seconds / 1e9 :
					       0));
	leases = json_object_new_array();
	for (cl = d.clients; cl; cl = cl->next) {
		json_object *e;

		if (!cl->lease || cl->lease->pool != p)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "id",
				       json_object_new_int64(cl->lease->id));
		json_object_object_add(e, "pid", json_object_new_int(cl->pid));
		json_object_object_add(e, "comm",
				       json_object_new_string(cl->comm));
		json_object_object_add(e, "uid",
				       json_object_new_int64(cl->uid));
		json_object_object_add(
			e, "bytes",
			json_object_new_int64((int64_t)cl->lease->bytes));
		json_object_array_add(leases, e);
	}
	json_object_object_add(o, "leases", leases);
	q = json_object_new_array();
	for (c = p->quarantine; c; c = c->next) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "chunk",
				       json_object_new_string(c->name));
		json_object_object_add(
			e, "bytes", json_object_new_int64((int64_t)c->bytes));
		json_object_object_add(e, "holder_pid",
				       json_object_new_int64(c->holder));
		json_object_object_add(e, "holder_comm",
				       json_object_new_string(c->holder_comm));
		json_object_array_add(q, e);
	}
	json_object_object_add(o, "quarantined", q);
	return o;
}

static int send_status(int fd)
{
	json_object *root = json_object_new_object(), *pools;
	char buf[ZVMMD_MSG_MAX];
	const char *text;
	int n, ret = 0;

	pools = json_object_new_array();
	pthread_mutex_lock(&d.lock);
	for (int i = 0; i < ZVMMD_NR_POOLS; i++)
		if (d.pools[i].cfg->on)
			json_object_array_add(pools, pool_json(&d.pools[i]));
	pthread_mutex_unlock(&d.lock);
	json_object_object_add(root, "version",
			       json_object_new_string(zvmm_version()));
	json_object_object_add(root, "pid", json_object_new_int(getpid()));
	json_object_object_add(root, "pools", pools);
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_STATUS_OK, text, strlen(text));
	if (n < 0)
		ret = send_error(fd, EMSGSIZE,
				 "the status is too long for one message");
	else if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
		ret = -errno;
	json_object_put(root);
	return ret;
}

/* ------------------------------------------------------------ clients */

static void listen_pause(const char *why)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &listen_ev };

	if (listen_paused)
		return;
	listen_paused = true;
	epoll_ctl(d.epfd, EPOLL_CTL_MOD, d.listen_fd, &ev);
	warn_("cannot accept a connection: %s; accepting again once one closes (%u open; raise LimitNOFILE)",
	      why, nr_clients);
}

static void listen_resume(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_ev };

	if (!listen_paused)
		return;
	listen_paused = false;
	epoll_ctl(d.epfd, EPOLL_CTL_MOD, d.listen_fd, &ev);
}

static void client_drop(struct client *cl)
{
	struct client **pp;

	for (pp = &d.clients; *pp && *pp != cl; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = cl->next;
	if (cl->refused)
		nr_refused--;
	nr_clients--;
	if (cl->lease) {
		info_("lease %u of pid %d (%s) ended", cl->lease->id,
		      (int)cl->pid, cl->comm);
		lease_end(cl->lease);
	}
	epoll_ctl(d.epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	if (cl->pidfd >= 0) {
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, cl->pidfd, NULL);
		close(cl->pidfd);
	}
	free(cl);
	listen_resume();
}

static int refuse(int fd, uid_t uid)
{
	return send_error(
		fd, EACCES,
		"uid %u is not in group %s: zvmmd leases to root and that group (usermod -aG %s USER)",
		(unsigned int)uid, d.cfg.group, d.cfg.group);
}

/* Root, or a member of [service] group (its primary or another group). */
static bool peer_allowed(int fd, const struct ucred *uc)
{
	gid_t few[64], *groups = few;
	socklen_t len = sizeof(few);
	bool ok = false;
	int ret;

	if (uc->uid == 0)
		return true;
	if (d.gid == (gid_t)-1)
		return false;
	if (uc->gid == d.gid)
		return true;
	/* ERANGE says how much room the peer's groups need (up to 65536). */
	ret = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (ret && errno == ERANGE && len > sizeof(few)) {
		groups = malloc(len);
		if (groups &&
		    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
			free(groups);
			groups = NULL;
		}
	} else if (ret) {
		groups = NULL;
	}
	for (size_t i = 0; groups && i < len / sizeof(gid_t); i++)
		ok |= groups[i] == d.gid;
	if (groups != few)
		free(groups);
	return ok;
}

static void client_accept(void)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct epoll_event ev = { .events = EPOLLIN };
	struct client *cl;
	char path[64];
	FILE *f;
	int fd;

	fd = accept4(d.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			listen_pause(strerror(errno));
		return;
	}
	if (nr_clients >= MAX_CLIENTS) {
		(void)!send_error(
			fd, EUSERS,
			"zvmmd serves %u connections at most and has them: try again once one closes",
			MAX_CLIENTS);
		close(fd);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len)) {
		close(fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	if (!peer_allowed(fd, &uc)) {
		cl->refused = true;
		cl->uid = uc.uid;
		(void)!refuse(fd, uc.uid);
		warn_("refused pid %d, uid %u: not in group %s", (int)uc.pid,
		      (unsigned int)uc.uid, d.cfg.group);
		if (nr_refused >= MAX_REFUSED) {
			free(cl);
			close(fd);
			return;
		}
		nr_refused++;
	}
	cl->sock_ev = (struct ev){ EV_CLIENT, cl };
	cl->pid_ev = (struct ev){ EV_PIDFD, cl };
	cl->since = clock_now();
	cl->fd = fd;
	cl->pid = uc.pid;
	cl->uid = uc.uid;
	snprintf(cl->comm, sizeof(cl->comm), "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)uc.pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(cl->comm, sizeof(cl->comm), f))
			cl->comm[strcspn(cl->comm, "\n")] = '\0';
		fclose(f);
	}
	/*
	 * The client's exit ends its lease even if a child of a fork()
	 * keeps the socket open. SO_PEERPIDFD (Linux 6.5) names the very
	 * process that connected, even one gone by now; pidfd_open() of its
	 * pid could name another that took the number since.
	 */
	len = sizeof(cl->pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &cl->pidfd, &len))
		cl->pidfd = (int)syscall(SYS_pidfd_open, uc.pid, 0);
	ev.data.ptr = &cl->sock_ev;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, fd, &ev);
	if (cl->pidfd >= 0) {
		ev.data.ptr = &cl->pid_ev;
		epoll_ctl(d.epfd, EPOLL_CTL_ADD, cl->pidfd, &ev);
	}
	cl->next = d.clients;
	d.clients = cl;
	nr_clients++;
}

/* One message from @cl; false when the client is gone or misbehaved. */
static bool client_read(struct client *cl)
{
	char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	ssize_t n;
	int ret;

	n = recv(cl->fd, buf, sizeof(buf), MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n < 0)
		return true;
	cl->since = clock_now();
	if ((size_t)n > sizeof(buf)) {
		(void)!send_error(cl->fd, EMSGSIZE,
				  "a message of %zd bytes: at most %d", n,
				  ZVMMD_MSG_MAX);
		return true;
	}
	if (cl->refused) {
		(void)!refuse(cl->fd, cl->uid);
		return true;
	}
	ret = zvmmd_parse(buf, (size_t)n, &m);
	if (ret) {
		(void)!send_error(
			cl->fd, -ret,
			"malformed message: %s (docs/zvmmd-protocol.md, version %d)",
			strerror(-ret), ZVMMD_VERSION);
		warn_("pid %d (%s) sent a malformed message: %s", (int)cl->pid,
		      cl->comm, strerror(-ret));
		return true;
	}
	switch (m.type) {
	case ZVMMD_LEASE:
		(void)!lease_make(cl, &m.req);
		break;
	case ZVMMD_STATUS:
		(void)!send_status(cl->fd);
		break;
	default:
		(void)!send_error(
			cl->fd, EPROTO,
			"message type 0x%x is zvmmd's, not a client's", m.type);
	}
	return true;
}

/* ------------------------------------------------------ mounts, socket */

/*
 * The page size's own hugetlbfs instance, 0700, under [service] dir:
 * what is in it is zvmmd's alone. Whatever a previous zvmmd left there
 * is of unknown state: removed, never leased.
 */
/*
 * A directory of zvmmd's, made with @mode when missing, opened without
 * following a symbolic link anywhere in @path (safe_dir_trusted():
 * openat2, or one component at a time where openat2 is refused), and
 * root's and writable by root alone: otherwise another user could swap
 * what is in it (a chunk directory for a symbolic link that points a
 * mount of zvmmd's anywhere, a socket for theirs). Returns the fd or
 * -errno.
 */
static int safe_dir(const char *path, mode_t mode, const char *key)
{
	struct stat st;
	int fd;

	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	fd = safe_dir_trusted(path, SAFE_DIR_ROOT, &st);
	if (fd == -EPERM && st.st_mode) {
		err_("%s %s: must be root's and writable by root alone (chown root; chmod go-w)",
		     key, path);
		return fd;
	}
	if (fd < 0)
		err_("%s %s: cannot open it without following a symbolic link: %s (give a path without one)",
		     key, path, strerror(-fd));
	return fd;
}

/* Removes every file in @dirfd's directory; how many. */
static unsigned int remove_all(int dirfd)
{
	unsigned int n = 0;
	struct dirent *de;
	DIR *dir = fdopendir(dup(dirfd));

	while (dir && (de = readdir(dir)))
		if (de->d_name[0] != '.' && !unlinkat(dirfd, de->d_name, 0))
			n++;
	if (dir)
		closedir(dir);
	return n;
}

static int pool_open(struct pool *p)
{
	char opts[96], ps[8];
	struct statfs sf;
	struct stat st;
	unsigned int stale = 0;
	int fd;

	snprintf(p->dir, sizeof(p->dir), "%s/%s", d.cfg.dir, p->label);
	snprintf(p->at, sizeof(p->at), "/proc/self/fd/%d/%s", d.dirfd,
		 p->label);
	if (mkdirat(d.dirfd, p->label, 0700) && errno != EEXIST)
		return -errno;
	if (fstatat(d.dirfd, p->label, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		return -ENOTDIR;
	/*
	 * A mount a previous zvmmd left (killed, crashed mid-fill): nothing
	 * in it is trusted, so its files go, and the mount is detached, as
	 * its size is unknown too.
	 */
	if (!statfs(p->at, &sf) && sf.f_type == HUGETLBFS_MAGIC) {
		fd = open(p->at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			stale = remove_all(fd);
			close(fd);
		}
		(void)!umount2(p->at, MNT_DETACH);
	}
	if (stale)
		info_("%s: %u chunks of a previous zvmmd removed: their state is unknown",
		      p->dir, stale);
	/*
	 * A mount of its own, sized to the pool's max: hugetlbfs refuses an
	 * allocation past it whoever makes it, so a client cannot grow a
	 * leased chunk (ftruncate, fallocate through its fd) into hugepages
	 * zvmmd does not count.
	 */
	snprintf(opts, sizeof(opts), "pagesize=%s,mode=0700",
		 size_label(p->cfg->page_bytes, ps, sizeof(ps)));
	if (p->cfg->max)
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",size=%llu", (unsigned long long)p->cfg->max);
	if (mount("zvmmd", p->at, "hugetlbfs", MS_NOSUID | MS_NODEV, opts))
		return -errno;
	p->mounted = true;
	p->dirfd = open(p->at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dirfd < 0)
		return -errno;
	return 0;
}

static void pool_close(struct pool *p)
{
	struct chunk *c;

	while ((c = p->zero)) {
		p->zero = c->next;
		retire(p, c);
	}
	while ((c = p->quarantine)) {
		p->quarantine = c->next;
		retire(p, c);
	}
	if (p->dirfd >= 0)
		close(p->dirfd);
	if (p->mounted && umount2(p->at, MNT_DETACH))
		warn_("cannot unmount %s: %s", p->dir, strerror(errno));
	if (p->mounted)
		unlinkat(d.dirfd, p->label, AT_REMOVEDIR);
}

static bool socket_activated(void)
{
	const char *lp = getenv("LISTEN_PID"), *lf = getenv("LISTEN_FDS");

	return lp && lf && atol(lp) == (long)getpid() && atoi(lf) == 1;
}

/* A live zvmmd at [service] socket: connecting succeeds. */
static bool another_listens(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d.cfg.socket);
	live = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return live;
}

static int socket_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	struct group *gr;
	char dir[sizeof(sa.sun_path)], *slash;
	int type = 0, fd, ret;
	socklen_t len = sizeof(type);
	mode_t mask;

	/* systemd's socket activation: zvmmd.socket made and bound it. */
	if (socket_activated()) {
		d.listen_fd = SD_LISTEN_FDS_START;
		if (getsockopt(d.listen_fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
		    type != SOCK_SEQPACKET) {
			err_("the socket systemd passed is not SOCK_SEQPACKET: ListenSequentialPacket= in zvmmd.socket");
			return -EINVAL;
		}
		fcntl(d.listen_fd, F_SETFD, FD_CLOEXEC);
		fcntl(d.listen_fd, F_SETFL, O_NONBLOCK);
		return 0;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d.cfg.socket);
	snprintf(dir, sizeof(dir), "%s", d.cfg.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		fd = safe_dir(dir, 0755, "[service] socket's directory");
		if (fd < 0)
			return fd;
		close(fd);
	}
	/* A stale socket of an earlier zvmmd, never anything else. */
	if (!lstat(d.cfg.socket, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			err_("%s exists and is not a socket: remove it, or set [service] socket",
			     d.cfg.socket);
			return -EEXIST;
		}
		unlink(d.cfg.socket);
	}
	d.listen_fd = socket(AF_UNIX,
			     SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d.listen_fd < 0)
		return -errno;
	/* 0660 from the start, never a moment more open. */
	mask = umask(0117);
	ret = bind(d.listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(mask);
	if (ret)
		return -errno;
	d.bound = true;
	gr = getgrnam(d.cfg.group);
	if (fchownat(AT_FDCWD, d.cfg.socket, 0, gr ? gr->gr_gid : 0,
		     AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (listen(d.listen_fd, 64))
		return -errno;
	return 0;
}

/* --------------------------------------------------------------- main */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zvmmd [--config FILE]\n"
		"\n"
		"Keeps hugepage memory zeroed ahead of time and leases it to VMMs\n"
		"over a unix socket (zvmmd(8), docs/zvmmd-protocol.md). Runs in the\n"
		"foreground, logs to stderr (journald under systemd), ends on SIGTERM.\n"
		"\n"
		"  --config FILE   its configuration (default /etc/zvmm/zvmmd.conf;\n"
		"                  zvmmd.conf(5))\n");
}

/* A client dropped: its other events in this batch are stale. */
static void forget(struct epoll_event *evs, int from, int n,
		   const struct client *cl)
{
	for (int k = from; k < n; k++) {
		struct ev *e = evs[k].data.ptr;

		if (e && (e == &cl->sock_ev || e == &cl->pid_ev))
			evs[k].data.ptr = NULL;
	}
}

/* Connections that hold no lease and asked nothing for IDLE_SECONDS. */
static void sweep_idle(struct epoll_event *evs, int from, int n)
{
	double now = clock_now();
	struct client *cl = d.clients, *next;

	for (; cl; cl = next) {
		next = cl->next;
		if (cl->lease || now - cl->since < IDLE_SECONDS)
			continue;
		forget(evs, from, n, cl);
		client_drop(cl);
	}
	/* Descriptors short for another reason (ENFILE): try again. */
	listen_resume();
}

static int loop(void)
{
	struct epoll_event evs[16];
	struct signalfd_siginfo si;
	uint64_t ticks;
	int n;

	for (;;) {
		n = epoll_wait(d.epfd, evs, 16, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int i = 0; i < n; i++) {
			struct ev *e = evs[i].data.ptr;

			if (!e)
				continue;
			switch (e->kind) {
			case EV_LISTEN:
				client_accept();
				break;
			case EV_SIGNAL:
				if (read(d.signal_fd, &si, sizeof(si)) ==
				    sizeof(si)) {
					info_("%s: shutting down",
					      strsignal((int)si.ssi_signo));
					return 0;
				}
				break;
			case EV_TIMER:
				if (read(d.timer_fd, &ticks, sizeof(ticks)) >
				    0) {
					quarantine_check();
					sweep_idle(evs, i + 1, n);
				}
				break;
			case EV_PIDFD:
				/* The client exited: its lease ends even if
				 * a child of a fork() keeps the socket. */
				forget(evs, i + 1, n, e->c);
				client_drop(e->c);
				break;
			case EV_CLIENT:
				if ((evs[i].events & (EPOLLHUP | EPOLLERR)) ||
				    !client_read(e->c)) {
					forget(evs, i + 1, n, e->c);
					client_drop(e->c);
				}
				break;
			}
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *config = "/etc/zvmm/zvmmd.conf";
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	char err[512];
	sigset_t set;
	struct group *gr;
	int c, ret;

	to_journal = getenv("JOURNAL_STREAM") != NULL;
	/*
	 * A program of zvmm's, as zvmm is: libzvmm's code in it keeps a
	 * calibration profile or a pool state record, if it ever does, in
	 * $ZVMM_CACHE_DIR and $ZVMM_STATE_DIR, so a test's or CI's zvmmd
	 * stays out of the host's /var/cache/zvmm and /var/lib/zvmm.
	 */
	program_env_enable();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("zvmmd %s\n", zvmm_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		err_("unexpected argument '%s'; see zvmmd --help",
		     argv[optind]);
		return 2;
	}
	zvmmd_config_defaults(&d.cfg);
	ret = zvmmd_config_load(config, &d.cfg, err, sizeof(err));
	if (ret) {
		err_("%s", err);
		return ret == -EINVAL ? 2 : 1;
	}
	if (geteuid()) {
		err_("zvmmd mounts hugetlbfs and owns its chunks: run it as root (systemctl start zvmmd)");
		return 1;
	}
	/* Two descriptors a connection, one a chunk: as many as allowed. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)!setrlimit(RLIMIT_NOFILE, &rl);
	}
	gr = getgrnam(d.cfg.group);
	d.gid = gr ? gr->gr_gid : (gid_t)-1;
	if (!gr)
		warn_("group %s does not exist: only root may lease (addgroup --system %s)",
		      d.cfg.group, d.cfg.group);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/*
	 * One zvmmd a config: a second would empty and remount the first's
	 * pools. Under systemd the socket unit sees to it.
	 */
	if (!socket_activated() && another_listens()) {
		err_("another zvmmd listens on %s: stop it first (systemctl stop zvmmd), or give this one its own [service] socket and dir",
		     d.cfg.socket);
		return 1;
	}
	d.dirfd = safe_dir(d.cfg.dir, 0755, "[service] dir");
	if (d.dirfd < 0)
		return 1;
	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		const struct zvmmd_pool_cfg *pc = &d.cfg.pool[i];
		char ps[8];

		d.pools[i].cfg = pc;
		d.pools[i].dirfd = -1;
		/* Its mount's and its chunks' names: 2M, 2M-node1, ... */
		size_label(pc->page_bytes ? pc->page_bytes : SZ_2M, ps,
			   sizeof(ps));
		if (pc->node >= 0)
			snprintf(d.pools[i].label, sizeof(d.pools[i].label),
				 "%s-node%d", ps, pc->node);
		else
			snprintf(d.pools[i].label, sizeof(d.pools[i].label),
				 "%s", ps);
		if (!d.cfg.pool[i].on)
			continue;
		ret = pool_open(&d.pools[i]);
		if (ret) {
			err_("cannot set up %s: %s", d.pools[i].dir,
			     strerror(-ret));
			goto out;
		}
	}
	ret = socket_open();
	if (ret) {
		err_("cannot listen on %s: %s", d.cfg.socket, strerror(-ret));
		goto out;
	}
	d.signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	d.timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d.signal_fd < 0 || d.timer_fd < 0 || d.epfd < 0) {
		ret = -errno;
		err_("cannot set up the event loop: %s", strerror(-ret));
		goto out;
	}
	its.it_interval.tv_sec = d.cfg.recheck_ms / 1000;
	its.it_interval.tv_nsec = (long)(d.cfg.recheck_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	timerfd_settime(d.timer_fd, 0, &its, NULL);
	ev.data.ptr = &listen_ev;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.listen_fd, &ev);
	ev.data.ptr = &signal_ev;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.signal_fd, &ev);
	ev.data.ptr = &timer_ev;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.timer_fd, &ev);
	ret = -pthread_create(&d.filler, NULL, filler, NULL);
	if (ret) {
		err_("cannot start the filler: %s", strerror(-ret));
		goto out;
	}
	d.filler_on = true;
	info_("listening on %s (pid %d)", d.cfg.socket, (int)getpid());
	ret = loop();
out:
	pthread_mutex_lock(&d.lock);
	/* Atomic: chunk_fill() reads it without the lock, between pages. */
	__atomic_store_n(&d.stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&d.wake);
	pthread_mutex_unlock(&d.lock);
	if (d.filler_on)
		pthread_join(d.filler, NULL);
	while (d.clients)
		client_drop(d.clients);
	for (int i = 0; i < ZVMMD_NR_POOLS; i++)
		if (d.cfg.pool[i].on)
			pool_close(&d.pools[i]);
	if (d.dirfd >= 0)
		close(d.dirfd);
	if (d.bound)
		unlink(d.cfg.socket);
	return ret ? 1 : 0;
}
