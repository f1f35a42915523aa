// SPDX-License-Identifier: MIT
/*
 * zvmmd's chunks: the hugetlbfs mount of each pool, the chunk files in
 * it, and the filler thread that keeps each pool's filled chunks between
 * its low and high (docs/DESIGN.md, "zvmmd").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "../lib/thread.h"
#include "zvmmd.h"

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

/* What @p holds by its books. */
static uint64_t pool_books(const struct pool *p)
{
	return p->zero_bytes + p->filling_bytes + p->leased_bytes +
	       p->quarantined_bytes;
}

/*
 * What @p holds: its books, and what the kernel counted in its mount
 * beyond them at the last pool_account(). The filler and LEASE decide
 * what is free from this, so memory held where the holder scan cannot
 * see is never handed out again.
 */
uint64_t pool_held_bytes(const struct pool *p)
{
	return pool_books(p) + p->unseen_bytes;
}

/*
 * Ghosts let go, oldest first, while together they hold more than the
 * pages outside every chunk file, @outside: what their holders let go
 * of, or a retire weighed while the filler or a tenant allocated (such
 * a ghost goes at a later count). Only once counts over a recheck, at
 * least two, all found them over: one count is not a snapshot (the
 * mount and each file are read one after another while tenants fault
 * and shrink their chunks), and a holder that raced one count must
 * race every count for a recheck. With the lock held.
 */
static void ghosts_settle(struct zvmmd *d, struct pool *p, uint64_t outside)
{
	double now = clock_now(), hold = d->cfg.recheck_ms / 1000.0;
	uint64_t sum = 0;
	struct ghost **pp, *g;

	for (g = p->ghosts; g; g = g->next)
		sum += g->bytes;
	if (sum <= outside) {
		p->ghosts_over_since = 0;
		return;
	}
	if (!p->ghosts_over_since) {
		p->ghosts_over_since = now;
		p->ghosts_outside_max = outside;
		return;
	}
	if (outside > p->ghosts_outside_max)
		p->ghosts_outside_max = outside;
	if (now - p->ghosts_over_since < hold)
		return;
	outside = p->ghosts_outside_max;
	p->ghosts_over_since = 0;
	while (sum > outside && p->ghosts) {
		for (pp = &p->ghosts; (*pp)->next; pp = &(*pp)->next)
			;
		g = *pp;
		*pp = NULL;
		sum -= g->bytes;
		*g->charged_to -= g->charge;
		(*g->charged_chunks)--;
		free(g);
	}
}

/* The bytes in @c's file's pages (a chunk no one has shrunk: its own). */
static uint64_t chunk_in_file(const struct chunk *c)
{
	struct stat st;

	return c && !fstat(c->fd, &st) ? (uint64_t)st.st_blocks * 512 : 0;
}

/*
 * What @p's chunk files hold in pages, with the lock held: the filled
 * chunks, the one being filled so far, and each chunk zvmmd gave out and
 * has not retired, whatever its holder made of it (shrunk, punched,
 * grown). Reserved pages of an empty chunk no one has faulted are in no
 * file's count.
 */
static uint64_t pool_in_files(const struct zvmmd *d, const struct pool *p)
{
	uint64_t sum = p->zero_bytes + chunk_in_file(p->filling);
	const struct chunk *lists[2] = { p->returned, p->quarantine };
	const struct chunk *c;

	for (const struct client *cl = d ? d->clients : NULL; cl;
	     cl = cl->next) {
		if (!cl->lease || cl->lease->pool != p)
			continue;
		for (c = cl->lease->chunks; c; c = c->next)
			sum += chunk_in_file(c);
	}
	for (int i = 0; i < 2; i++)
		for (c = lists[i]; c; c = c->next)
			sum += chunk_in_file(c);
	return sum;
}

uint64_t free_pages(uint64_t page_bytes)
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

/* What @p's mounts hold by the kernel's count: its stock's and root's. */
uint64_t pool_mount_used(const struct pool *p)
{
	return (p->m.dirfd >= 0 ? mount_used(p->m.dirfd) : 0) +
	       (p->r.dirfd >= 0 ? mount_used(p->r.dirfd) : 0);
}

/*
 * What of root's reserve in @p the kernel still holds unused: its
 * mount's min_size= (= its size=) less what root's chunks use (the
 * subpool's own reservation, mm/hugetlb.c hugepage_subpool_get_pages()).
 * Those pages are in resv_hugepages, so free_hugepages less that does
 * not count them, though root's empty chunks take them first. None
 * while the reserve is off (a mount of one taken over only counts).
 */
uint64_t pool_reserve_left(const struct pool *p)
{
	uint64_t used, held;

	if (!p->reserve || p->r.dirfd < 0 || !p->r.min)
		return 0;
	held = p->r.min < p->r.size || !p->r.size ? p->r.min : p->r.size;
	used = mount_used(p->r.dirfd);
	return used < held ? held - used : 0;
}

/*
 * @p's unseen_bytes from the kernel's count of its mounts, with the lock
 * held: hugetlbfs counts a page in use (f_blocks - f_bfree) from its
 * reservation (a mapping) or allocation until the last reference to it
 * goes, the page cache's, a mapping's, a pipe's or an io_uring's, also
 * after its file is retired. The books count an empty chunk no one has
 * mapped in full, so what they hide is at least the difference, never
 * less than 0. A mount with no max (no size=) counts nothing.
 *
 * The ghosts are weighed against another count: the pages outside
 * every chunk file (the mount's count less what the files hold, read
 * between two counts of the mount and against the larger). The books
 * cannot serve: a holder that shrinks a chunk it still leases lowers
 * the mount's count below them and, before, the ghosts went as if
 * their pages had come back; it grows the chunk back at will.
 */
void pool_account(struct zvmmd *d, struct pool *p)
{
	uint64_t used, before, files, books = pool_books(p);

	if (p->m.dirfd < 0) {
		p->unseen_bytes = 0;
		return;
	}
	before = pool_mount_used(p);
	files = pool_in_files(d, p);
	used = pool_mount_used(p);
	p->unseen_bytes = used > books ? used - books : 0;
	if (before > used)
		used = before;
	ghosts_settle(d, p, used > files ? used - files : 0);
}

/*
 * A chunk is gone for good: its name first, so that nothing finds it,
 * then zvmmd's fd; its pages go back to the kernel once no one else holds
 * the file. Called with the lock held (or alone). A chunk that was
 * leased is weighed: what its retire did not free (the mount's count
 * before and after, against its pages) is held by someone no scan sees,
 * and its charge stays with its user as a ghost.
 */
void chunk_retire(struct pool *p, struct chunk *c)
{
	uint64_t used = 0, pages = 0, freed;
	struct ghost *g;

	/*
	 * Against its whole length, as the books count it (an empty chunk
	 * is reserved whole): its st_blocks would say 0 of a chunk whose
	 * holder punched it after pinning its pages in a pipe. One its
	 * holder truly shrank makes a ghost the next count lets go.
	 */
	if (c->charged_to && c->mnt->dirfd >= 0) {
		uint64_t page = p->cfg->page_bytes;
		struct stat st;

		pages = (c->bytes + page - 1) / page * page;
		/* And past it: grown, its pages there pinned, then let go. */
		if (!fstat(c->fd, &st) && (uint64_t)st.st_blocks * 512 > pages)
			pages = (uint64_t)st.st_blocks * 512;
		used = mount_used(c->mnt->dirfd);
	}
	if (unlinkat(c->mnt->dirfd, c->name, 0) && errno != ENOENT)
		pr_warn("cannot remove chunk %s/%s: %s", c->mnt->dir, c->name,
			strerror(errno));
	close(c->fd);
	if (pages) {
		uint64_t now = mount_used(c->mnt->dirfd);

		freed = used > now ? used - now : 0;
		g = freed < pages ? calloc(1, sizeof(*g)) : NULL;
		if (g) {
			g->bytes = pages - freed;
			g->charged_to = c->charged_to;
			g->charged_chunks = c->charged_chunks;
			g->charge = c->charge;
			g->next = p->ghosts;
			p->ghosts = g;
			c->charged_to = NULL;
		}
	}
	chunk_uncharge(c);
	free(c);
}

/* @c's charge off its user's share (peers.c frees a user left bare). */
void chunk_uncharge(struct chunk *c)
{
	if (!c->charged_to)
		return;
	*c->charged_to -= c->charge;
	(*c->charged_chunks)--;
	c->charged_to = NULL;
	c->charged_chunks = NULL;
}

/*
 * Whether a chunk zvmmd gave out was grown past its length by its
 * holder (ftruncate, fallocate past its end, a shared mapping longer
 * than it), into pages of the pool's max no share is charged for: a
 * member took all of max that way from a 2 MiB lease. What lies past a
 * chunk's length was never leased, no guest's memory: trim.c cuts it
 * back, looked for at each recheck and before each lease the pool is
 * short of room for.
 */
bool chunk_grown(const struct pool *p, const struct chunk *c)
{
	uint64_t page = p->cfg->page_bytes;
	struct stat st;

	return !fstat(c->fd, &st) &&
	       ((uint64_t)st.st_size > c->bytes ||
		(uint64_t)st.st_blocks * 512 >
			(c->bytes + page - 1) / page * page);
}

/*
 * After @c's growth was cut: @kept bytes the cut took out of the file
 * but not out of the mount (pinned in a pipe, an io_uring buffer: the
 * trim thread weighed it, trim.c), charged to @c's user as a ghost of
 * its own, as it grew them. With the lock held.
 */
void chunk_charge_cut(struct pool *p, struct chunk *c, uint64_t kept)
{
	struct ghost *g;

	if (!c->charged_to || !kept)
		return;
	g = calloc(1, sizeof(*g));
	if (!g)
		return;
	g->bytes = kept;
	g->charge = kept;
	g->charged_to = c->charged_to;
	g->charged_chunks = c->charged_chunks;
	*g->charged_to += g->charge;
	(*g->charged_chunks)++;
	g->next = p->ghosts;
	p->ghosts = g;
}

/* A new chunk file of @bytes in @p's mount @m, no page in it yet. */
int chunk_create(struct pool *p, struct hmount *m, uint64_t bytes,
		 struct chunk **out)
{
	struct chunk *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	snprintf(c->name, sizeof(c->name), "chunk-%s-%llu", p->label,
		 (unsigned long long)++p->seq);
	c->bytes = bytes;
	c->holder = -1;
	c->mnt = m;
	c->fd = openat(m->dirfd, c->name,
		       O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		       0600);
	if (c->fd < 0) {
		ret = -errno;
		free(c);
		return ret;
	}
	if (ftruncate(c->fd, (off_t)bytes) || fstat(c->fd, &c->st)) {
		ret = -errno;
		chunk_retire(p, c);
		return ret;
	}
	*out = c;
	return 0;
}

/*
 * The pages of an empty chunk promised to it before it is leased: a
 * shared mapping of a hugetlbfs file without MAP_NORESERVE reserves its
 * pages in the file's own reservation map (mm/hugetlb.c,
 * hugetlb_reserve_pages()), charged to the mount's size= and kept after
 * munmap until the file is truncated or gone. The client may then map
 * it MAP_NORESERVE, or fault it after the host's free hugepages went to
 * someone else, and still never meet SIGBUS: its faults take the pages
 * promised. -ENOMEM when the kernel cannot promise them.
 */
int chunk_reserve(struct chunk *c)
{
	void *m = mmap(NULL, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       c->fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	munmap(m, c->bytes);
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
	/* And in its mount, whose size= is max less root's reserve. */
	return p->refilling &&
	       pool_held_bytes(p) + cfg->chunk_bytes <= cfg->max &&
	       (!p->reserve_cfg ||
		mount_used(p->m.dirfd) + cfg->chunk_bytes <= p->m.size);
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

static bool stopping(const struct zvmmd *d)
{
	return __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE);
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

static bool wait_quiet(const struct zvmmd *d, double *left)
{
	double t0 = clock_now(), until;
	bool slept = false;

	for (;;) {
		until = (double)__atomic_load_n(&d->last_lease_ns,
						__ATOMIC_RELAXED) *
				1e-9 +
			LEASE_QUIET;
		if (until > t0 + *left)
			until = t0 + *left;
		if (until <= clock_now() || stopping(d))
			break;
		pace_until(until);
		slept = true;
	}
	*left -= clock_now() - t0;
	if (*left < 0)
		*left = 0;
	return slept;
}

/*
 * The filler's allocations on @node (strict, as the pool's node = asks)
 * until fill_policy_restore(). The policy is the thread's own:
 * hugetlbfs_fallocate() allocates through a VMA with no policy of its
 * own, so the task's applies. It binds the kernel's own allocations in
 * the call too (the page cache's nodes, the reservation map's entries),
 * a few bytes beside each hugepage. Whatever policy the thread had (a
 * unit's NUMAPolicy=, numactl) is kept in @old for the restore.
 */
struct fill_policy {
	int mode;
	struct bitmask *mask;
};

static void fill_policy_bind(int node, struct fill_policy *old)
{
	struct bitmask *nodes;

	old->mask = NULL;
	if (node < 0 || numa_available() < 0)
		return;
	old->mask = numa_allocate_nodemask();
	nodes = numa_allocate_nodemask();
	if (get_mempolicy(&old->mode, old->mask->maskp, old->mask->size, NULL,
			  0)) {
		numa_free_nodemask(old->mask);
		old->mask = NULL;
	}
	numa_bitmask_setbit(nodes, (unsigned int)node);
	/* + 1: the kernel reads one bit fewer than it is told (libnuma's). */
	if (set_mempolicy(MPOL_BIND, nodes->maskp, nodes->size + 1))
		pr_warn("cannot fill on node %d alone: %s", node,
			strerror(errno));
	numa_free_nodemask(nodes);
}

static void fill_policy_restore(struct fill_policy *old)
{
	if (!old->mask)
		return;
	if (set_mempolicy(old->mode, old->mask->maskp, old->mask->size + 1))
		(void)set_mempolicy(MPOL_DEFAULT, NULL, 0);
	numa_free_nodemask(old->mask);
	old->mask = NULL;
}

/* The calling thread on the filler's CPUs, as [scrub] cpus says. */
static void filler_cpus(const struct zvmmd *d)
{
	struct bitmask *cpus;

	if (!d->cfg.scrub_cpus[0] || numa_available() < 0)
		return;
	cpus = numa_parse_cpustring_all(d->cfg.scrub_cpus);
	if (!cpus || numa_sched_setaffinity(0, cpus))
		pr_warn("cannot keep the filler on CPUs %s: %s",
			d->cfg.scrub_cpus, strerror(errno));
	if (cpus)
		numa_free_cpumask(cpus);
}

/*
 * [scrub] priority = idle, without running the zeroing at SCHED_IDLE.
 * The kernel zeroes a hugepage holding locks that others wait for: the
 * chunk's inode lock and the page's hugetlb fault mutex (8 per possible
 * CPU, hashed by file and index), which a client's first touch of its
 * leased pages and the loop's last close of a retired chunk
 * (remove_inode_hugepages()) take too. A SCHED_IDLE thread on a CPU
 * that something else keeps busy runs a few ms a second and is stopped
 * anywhere in a page: the loop then waited 3.3-8.5 s for one, in 2 of
 * 28 runs of zvmmd_holders::a_starved_filler_holds_up_no_lease (Xeon
 * model 207, 2 vCPUs). So the gate, a thread of its own at SCHED_IDLE
 * on the filler's CPUs, does nothing but let the filler go: once it
 * runs, those CPUs had time no one else wanted, and the filler zeroes
 * pages for GATE_PASS_S at its own, normal priority, where a page takes
 * its 0.1-100 ms (2 MiB to 1 GiB) and a busy CPU delays it by a fair
 * share only. A gate costs two wake-ups, under 2% of a pass.
 */
#define GATE_PASS_S 0.002

static void *gate(void *arg)
{
	struct zvmmd *d = arg;
	struct sched_param sp = { 0 };

	thread_name("zvmmd-gate");
	filler_cpus(d);
	if (sched_setscheduler(0, SCHED_IDLE, &sp))
		pr_warn("cannot run the filler's gate at idle priority: %s",
			strerror(errno));
	pthread_mutex_lock(&d->gate_lock);
	while (!d->gate_stop) {
		if (d->gate_want) {
			d->gate_want = false;
			d->gate_open = true;
			pthread_cond_broadcast(&d->gate_cv);
		} else {
			pthread_cond_wait(&d->gate_cv, &d->gate_lock);
		}
	}
	d->gate_exited = true;
	pthread_cond_broadcast(&d->gate_cv);
	pthread_mutex_unlock(&d->gate_lock);
	return NULL;
}

/* Once the gate has run: true, or false for a stop. */
static bool gate_pass(struct zvmmd *d)
{
	bool go;

	if (!d->gate_on)
		return !stopping(d);
	pthread_mutex_lock(&d->gate_lock);
	d->gate_want = true;
	pthread_cond_broadcast(&d->gate_cv);
	while (!d->gate_open && !d->gate_stop)
		pthread_cond_wait(&d->gate_cv, &d->gate_lock);
	go = d->gate_open;
	d->gate_open = false;
	pthread_mutex_unlock(&d->gate_lock);
	return go && !stopping(d);
}

/*
 * Fills one chunk: every page allocated, so the kernel zeroes it here, in
 * this thread (zvmmd's cgroup: the cost is the operator's and visible),
 * when the gate lets it, at no more than [scrub] rate.
 *
 * Allocated by fallocate(), never by faulting a mapping: a fault, or
 * MADV_POPULATE_WRITE, zeroes the page under zvmmd's mmap_lock held for
 * read, and any mmap(), munmap() or brk() of the event loop (a malloc)
 * waits for the page. A filler at SCHED_IDLE held the loop 1.4 s that
 * way in CI, and up to 1.8 s in 1 of 14 runs of
 * zvmmd_holders::a_long_walk_of_proc_holds_up_nothing beside two CPU
 * hogs. fallocate() takes the chunk's inode lock and the page's fault
 * mutex, as a fault does, and nothing of this process's address space.
 */
static int chunk_fill(struct zvmmd *d, struct pool *p, struct chunk *c)
{
	uint64_t page = p->cfg->page_bytes, rate = d->cfg.scrub_rate;
	double t0 = clock_now(), pass_end = 0, quiet_left = LEASE_QUIET_MAX;
	struct fill_policy old;
	uint64_t off = 0;
	int ret = 0;

	fill_policy_bind(p->cfg->node, &old);
	while (off < c->bytes) {
		if (stopping(d)) {
			ret = -ECANCELED;
			break;
		}
		if (clock_now() >= pass_end) {
			if (!gate_pass(d)) {
				ret = -ECANCELED;
				break;
			}
			pass_end = clock_now() + GATE_PASS_S;
		}
		/*
		 * After the gate, whose wait can be long: a lease made
		 * meanwhile is given its quiet, and the gate asked again.
		 * The quiet a page waits is LEASE_QUIET_MAX in all, the
		 * gate's waits aside.
		 */
		if (wait_quiet(d, &quiet_left)) {
			pass_end = 0;
			continue;
		}
		if (fallocate(c->fd, 0, (off_t)off, (off_t)page)) {
			ret = -errno;
			break;
		}
		off += page;
		quiet_left = LEASE_QUIET_MAX;
		if (rate)
			pace_until(t0 + (double)off / (double)rate);
	}
	fill_policy_restore(&old);
	if (!ret) {
		/* The status reads these under the lock. */
		pthread_mutex_lock(&d->lock);
		p->filled_bytes += c->bytes;
		p->fill_seconds += clock_now() - t0;
		pthread_mutex_unlock(&d->lock);
	}
	return ret;
}

/*
 * One chunk of @p filled, outside the lock (held on entry and again on
 * return): ready to lease, or retired and the error said once (a lease
 * or a return tries again).
 */
static void fill_one(struct zvmmd *d, struct pool *p)
{
	struct chunk *c;
	int ret;

	ret = chunk_create(p, &p->m, p->cfg->chunk_bytes, &c);
	if (ret)
		goto failed;
	p->filling_bytes += c->bytes;
	p->filling = c;
	pthread_mutex_unlock(&d->lock);
	ret = chunk_fill(d, p, c);
	pthread_mutex_lock(&d->lock);
	p->filling = NULL;
	p->filling_bytes -= c->bytes;
	if (ret) {
		chunk_retire(p, c);
		goto failed;
	}
	c->filled = true;
	c->next = p->zero;
	p->zero = c;
	p->zero_bytes += c->bytes;
	return;
failed:
	if (ret != -ECANCELED && !p->fill_error) {
		p->fill_error = -ret;
		pr_warn("cannot fill a chunk of %s pages: %s (free hugepages short? raise nr_hugepages, or lower that pool's high)",
			p->label, strerror(-ret));
	}
}

/* The filler thread: @arg is the struct zvmmd. */
static void *filler(void *arg)
{
	struct zvmmd *d = arg;

	thread_name("zvmmd-fill");
	filler_cpus(d);
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		struct pool *p = NULL;

		for (int i = 0; i < ZVMMD_NR_POOLS && !p; i++)
			if (fill_wanted(&d->pools[i]))
				p = &d->pools[i];
		if (p)
			fill_one(d, p);
		else
			pthread_cond_wait(&d->wake, &d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int filler_start(struct zvmmd *d)
{
	int ret;

	if (d->cfg.scrub_idle) {
		ret = -pthread_create(&d->gate, NULL, gate, d);
		if (ret)
			return ret;
		d->gate_on = true;
	}
	ret = -pthread_create(&d->filler, NULL, filler, d);
	d->filler_on = !ret;
	return ret;
}

bool filler_stop(struct zvmmd *d)
{
	struct timespec ts;
	bool exited = true;

	pthread_mutex_lock(&d->lock);
	/* Atomic: chunk_fill() reads it without the lock, between pages. */
	__atomic_store_n(&d->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&d->wake);
	pthread_mutex_unlock(&d->lock);
	/*
	 * The gate is stopped first: a filler waiting for it goes at once.
	 * It runs at SCHED_IDLE, so on CPUs kept busy its own exit can take
	 * seconds: it has 1 s, then is left to the process's exit.
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	pthread_mutex_lock(&d->gate_lock);
	d->gate_stop = true;
	pthread_cond_broadcast(&d->gate_cv);
	pthread_mutex_unlock(&d->gate_lock);
	if (d->filler_on)
		pthread_join(d->filler, NULL);
	d->filler_on = false;
	if (!d->gate_on)
		return true;
	pthread_mutex_lock(&d->gate_lock);
	while (!d->gate_exited &&
	       !pthread_cond_timedwait(&d->gate_cv, &d->gate_lock, &ts))
		;
	exited = d->gate_exited;
	pthread_mutex_unlock(&d->gate_lock);
	if (!exited) {
		pr_warn("the filler's gate did not stop within 1 s: left to the exit");
		return false;
	}
	pthread_join(d->gate, NULL);
	d->gate_on = false;
	return true;
}

/* Something changed what the filler should do. With the lock held. */
void filler_poke(struct zvmmd *d)
{
	for (int i = 0; i < ZVMMD_NR_POOLS; i++)
		d->pools[i].fill_error = 0;
	pthread_cond_signal(&d->wake);
}

/* ------------------------------------------------------------- mounts */

/*
 * A directory of zvmmd's, made with @mode when missing, opened without
 * following a symbolic link anywhere in @path (safe_dir_trusted():
 * openat2, or one component at a time where openat2 is refused), and
 * root's and writable by root alone: otherwise another user could swap
 * what is in it (a chunk directory for a symbolic link that points a
 * mount of zvmmd's anywhere, a socket for theirs). Returns the fd or
 * -errno.
 */
int zvmmd_dir_open(const char *path, mode_t mode, const char *key)
{
	struct stat st;
	int fd;

	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	fd = safe_dir_trusted(path, SAFE_DIR_ROOT, &st);
	if (fd == -EPERM && st.st_mode) {
		pr_err("%s %s: must be root's and writable by root alone (chown root; chmod go-w)",
		       key, path);
		return fd;
	}
	if (fd < 0)
		pr_err("%s %s: cannot open it without following a symbolic link: %s (give a path without one)",
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

/* The bytes in use in the hugetlbfs mount at @fd (0 with no size=). */
uint64_t mount_used(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) || sf.f_type != HUGETLBFS_MAGIC ||
	    sf.f_blocks < sf.f_bfree)
		return 0;
	return (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
}

/*
 * The files still alive in the hugetlbfs mount at @fd, unlinked ones a
 * holder keeps open or in flight included: its inode count (zvmmd
 * mounts with nr_inodes=, and hugetlbfs gives an inode back only when
 * it is destroyed, at its last reference). -1 when the mount keeps no
 * count (made without nr_inodes=): anything may still reach it.
 */
static long mount_files(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) || sf.f_type != HUGETLBFS_MAGIC || !sf.f_files ||
	    sf.f_files == (fsfilcnt_t)-1 || sf.f_ffree >= sf.f_files)
		return -1;
	return (long)(sf.f_files - sf.f_ffree) - 1; /* its root directory */
}

/*
 * Whether a previous zvmmd's mount (its root at @fd, its files removed)
 * is to be taken over rather than let go for a fresh one: while any page
 * of it is in use or any file of it is alive (a chunk cut to nothing by
 * a holder no scan sees could be grown again in a mount no one counts),
 * and root's reserve of the size asked even empty (letting it go would
 * give its hugepages to whoever asks first).
 */
static bool mount_wanted(const struct hmount *m, int fd)
{
	struct statfs sf;

	if (mount_used(fd) || mount_files(fd))
		return true;
	return m->keep_empty && !fstatfs(fd, &sf) &&
	       (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize == m->size;
}

/*
 * A mount a previous zvmmd left at @m's (it was killed, or stopped while
 * tenants held chunks): nothing in it is trusted, so its files go. Pages
 * its tenants still hold stay in use in it, counted by its size=: a new
 * mount beside it would let the two hold more than max. So a mount still
 * wanted (mount_wanted()) is taken over, whatever its size (said when it
 * is not @m's), and one that is not is detached for a fresh one. True
 * when it was taken over (its root is then @m's at).
 */
static bool mount_take_over(struct hmount *m)
{
	unsigned int stale = 0;
	uint64_t used = 0;
	bool wanted = true;
	struct statfs sf;
	char a[32];
	int fd;

	if (statfs(m->at, &sf) || sf.f_type != HUGETLBFS_MAGIC)
		return false;
	fd = open(m->at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		stale = remove_all(fd);
		used = mount_used(fd);
		wanted = mount_wanted(m, fd);
		close(fd);
	}
	if (stale)
		pr_info("%s: %u chunks of a previous zvmmd removed: their state is unknown",
			m->dir, stale);
	if (!wanted) {
		(void)!umount2(m->at, MNT_DETACH);
		return false;
	}
	pr_info("%s: a previous zvmmd's mount, its tenants holding %s there: taken over, and what they hold counted until they let go",
		m->dir, size_format(used, a, sizeof(a)));
	return true;
}

/*
 * A mount taken over keeps the size= it was made with, which a changed
 * zvmmd.conf does not change: @m's is set to what the kernel says
 * (statfs), so the books and STATUS say what the kernel holds to, and
 * said when it differs. zvmmd mounts root's reserve with min_size= its
 * size=, so a kept one holds its size (mountinfo is not read: a kept
 * mount the fd store passed is in none of this namespace, and any user
 * can add lines to it).
 */
static void mount_kept_sizes(struct hmount *m)
{
	uint64_t size = 0, want_size = m->size;
	char a[32], b[32];
	struct statfs sf;

	if (!fstatfs(m->dirfd, &sf))
		size = (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize;
	m->size = size;
	m->min = m->min ? size : 0;
	if (size != want_size)
		pr_warn("%s: the kept mount holds at most %s, not %s, until zvmmd restarts with nothing held there",
			m->dir, size_format(size, a, sizeof(a)),
			size_format(want_size, b, sizeof(b)));
}

/*
 * The root of the mount a previous zvmmd left in systemd's fd store
 * (@fd, fdstore.c): taken over as mount_take_over() takes over one
 * still mounted (files removed, what is used counted), through the fd
 * alone, as the mount ended with the previous zvmmd's mount namespace.
 * It stays in the store until zvmmd lets it go (a zvmmd that crashed
 * after taking it would otherwise leave it to no one). True when taken;
 * else @fd is closed.
 */
static bool mount_take_stored(struct hmount *m, uint64_t page_bytes, int fd)
{
	unsigned int stale;
	struct statfs sf;
	uint64_t used;
	char a[32];

	if (fstatfs(fd, &sf) || sf.f_type != HUGETLBFS_MAGIC ||
	    (uint64_t)sf.f_bsize != page_bytes) {
		pr_warn("%s: the mount systemd kept is not hugetlbfs of its pages: let go",
			m->dir);
		(void)fdstore_send(m->label, -1);
		close(fd);
		return false;
	}
	stale = remove_all(fd);
	used = mount_used(fd);
	if (stale)
		pr_info("%s: %u chunks of a previous zvmmd removed: their state is unknown",
			m->dir, stale);
	if (!mount_wanted(m, fd)) {
		(void)fdstore_send(m->label, -1);
		close(fd);
		return false;
	}
	pr_info("%s: the mount systemd kept for it, its tenants holding %s there: taken over, and what they hold counted until they let go",
		m->dir, size_format(used, a, sizeof(a)));
	/* One still mounted here is the same one: the fd keeps it. */
	if (!statfs(m->at, &sf) && sf.f_type == HUGETLBFS_MAGIC)
		(void)!umount2(m->at, MNT_DETACH);
	m->dirfd = fd;
	return true;
}

/*
 * Files a zvmmd mount may hold at once (nr_inodes=): its chunks, and
 * retired ones a holder keeps open. hugetlbfs counts them only with a
 * limit, and the count is what says whether anything still reaches a
 * mount (mount_files()); an inode costs nothing until it is made.
 */
#define MOUNT_INODES (1u << 24)

/*
 * Mount @m of a pool of @page_bytes pages, 0700, under [service] dir
 * (@dirfd): what is in it is zvmmd's alone. Whatever a previous zvmmd
 * left there is of unknown state: removed, never leased. With @fresh
 * false, only a mount a previous zvmmd left holding pages is taken, so
 * that they are counted (root's reserve mount, the reserve since
 * turned off); none is made. Returns -ENOMEM only when the kernel
 * refused the mount for want of hugepages (min_size=); on any error
 * what it made is undone.
 */
/*
 * @m mounted at its path under @dirfd: a previous zvmmd's mount found
 * there and still wanted (*@kept), or, when @fresh, a new one. Returns
 * 0 (@m->mounted), 1 when not @fresh and none is there, or -errno;
 * -ENOMEM only when the kernel refused the mount for want of hugepages.
 */
static int mount_place(struct hmount *m, uint64_t page_bytes, int dirfd,
		       bool fresh, bool *kept)
{
	char opts[160], ps[8];
	struct stat st;
	int ret;

	if (!fresh && (fstatat(dirfd, m->label, &st, AT_SYMLINK_NOFOLLOW) ||
		       !S_ISDIR(st.st_mode) || st.st_uid != 0))
		return 1;
	if (fresh && mkdirat(dirfd, m->label, 0700) && errno != EEXIST)
		return -errno;
	if (fstatat(dirfd, m->label, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		return -ENOTDIR;
	*kept = mount_take_over(m);
	if (*kept || !fresh) {
		m->mounted = *kept;
		if (!*kept)
			unlinkat(dirfd, m->label, AT_REMOVEDIR);
		return *kept ? 0 : 1;
	}
	/*
	 * A mount of its own, sized: hugetlbfs refuses an allocation past
	 * its size= whoever makes it, so a client cannot grow a leased
	 * chunk (ftruncate, fallocate through its fd) into hugepages zvmmd
	 * does not count, nor take root's reserve, held by min_size= in
	 * root's mount (ENOMEM when the host's free hugepages are short).
	 */
	snprintf(opts, sizeof(opts), "pagesize=%s,mode=0700,nr_inodes=%u",
		 size_label(page_bytes, ps, sizeof(ps)), MOUNT_INODES);
	if (m->size)
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",size=%llu", (unsigned long long)m->size);
	if (m->min)
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",min_size=%llu", (unsigned long long)m->min);
	if (mount("zvmmd", m->at, "hugetlbfs", MS_NOSUID | MS_NODEV, opts)) {
		ret = -errno;
		unlinkat(dirfd, m->label, AT_REMOVEDIR);
		return ret;
	}
	m->mounted = true;
	return 0;
}

static int mount_open(struct hmount *m, uint64_t page_bytes, const char *dir,
		      int dirfd, int stored, bool fresh)
{
	bool kept = true, from_store = false;
	int ret;

	snprintf(m->dir, sizeof(m->dir), "%s/%s", dir, m->label);
	snprintf(m->at, sizeof(m->at), "/proc/self/fd/%d/%s", dirfd, m->label);
	if (stored >= 0 && mount_take_stored(m, page_bytes, stored)) {
		from_store = true;
	} else {
		ret = mount_place(m, page_bytes, dirfd, fresh, &kept);
		if (ret)
			return ret > 0 ? 0 : ret;
		m->dirfd = open(m->at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (m->dirfd < 0) {
			ret = -errno;
			goto undo;
		}
	}
	/* The holder scan knows an fd on a chunk by its mount's id. */
	m->mnt_id = holder_mnt_id(m->dirfd);
	if (m->mnt_id < 0) {
		ret = m->mnt_id;
		goto undo;
	}
	/*
	 * Under systemd, into the fd store at once, not only at a clean
	 * stop: a zvmmd killed (OOM, a stop timeout) takes its mount
	 * namespace with it, and the next would mount a new max beside
	 * what tenants still hold. Out of it when zvmmd lets it go; one
	 * that came from the store is there already.
	 */
	if (!from_store)
		(void)fdstore_send(m->label, m->dirfd);
	if (kept)
		mount_kept_sizes(m);
	return 0;
undo:
	/*
	 * Left as found, but for a mount that holds what someone may still
	 * reach (a stored or kept one: it stays where it was).
	 */
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = -1;
	if (m->mounted && !kept) {
		(void)!umount2(m->at, MNT_DETACH);
		unlinkat(dirfd, m->label, AT_REMOVEDIR);
	}
	m->mounted = false;
	return ret == -ENOMEM ? -EIO : ret;
}

static int pool_open(struct zvmmd *d, struct pool *p, const char *dir,
		     int dirfd)
{
	uint64_t page = p->cfg->page_bytes;
	char a[32], b[32];
	int ret;

	snprintf(p->dir, sizeof(p->dir), "%s/%s", dir, p->label);
	/* Root's first: a kept one holds what it was made with. */
	ret = mount_open(&p->r, page, dir, dirfd, fdstore_pool(d, p->r.label),
			 p->reserve_cfg);
	/*
	 * Not a reason not to start: any user may take free hugepages
	 * (anonymous MAP_HUGETLB) in the moment between two zvmmds. Tried
	 * again at each recheck (pool_tidy()); until then root has none.
	 */
	if (ret == -ENOMEM) {
		pr_warn("%s: the kernel cannot hold root's reserve, %s of %s pages, now: %s are free and not promised (raise nr_hugepages, or lower [service] root_reserve); zvmmd tries again at each recheck, and root has no reserve until then",
			p->r.dir, size_format(p->reserve_cfg, a, sizeof(a)),
			p->label,
			size_format(free_pages(page) * page, b, sizeof(b)));
		p->r.dirfd = -1;
		ret = 0;
	} else if (ret) {
		return ret;
	}
	/*
	 * The stock's sized to max less root's mount, whatever it holds (a
	 * kept one may not be what the config asks); never 0, which would
	 * mount the stock's without a size=. A reserve mount kept with the
	 * reserve since turned off is not taken from it: it only counts
	 * its tenants' pages until they let go, and the stock's mount keeps
	 * all of max for after.
	 */
	if (p->r.dirfd >= 0 && p->reserve_cfg) {
		p->m.size = p->r.size < p->cfg->max ? p->cfg->max - p->r.size :
						      page;
		p->reserve = p->r.min < p->r.size ? p->r.min : p->r.size;
		pr_info("%s: %s of %s pages held by the kernel for root's leases alone ([service] root_reserve)",
			p->r.dir, size_format(p->reserve, a, sizeof(a)),
			p->label);
	}
	ret = mount_open(&p->m, page, dir, dirfd, fdstore_pool(d, p->m.label),
			 true);
	/* What tenants of a mount taken over hold: unseen from the start. */
	if (!ret)
		pool_account(d, p);
	return ret;
}

/*
 * @m closed. A mount that holds pages, or a file someone may still
 * reach (mount_files(): a chunk its holder cut to nothing could be grown
 * again), is kept for the next zvmmd, which takes it over and counts
 * them (mount_take_over()); a detached one would hold them where no
 * zvmmd counts, past max. Under systemd the mount ends with the unit's
 * mount namespace: its root goes to the unit's fd store instead
 * (fdstore.c), and so does root's reserve even empty, so that a restart
 * keeps the hugepages the kernel holds for it.
 */
static void mount_close(struct hmount *m, int dirfd)
{
	uint64_t used = 0;
	long files = 0;
	bool keep;
	char a[32];

	if (m->dirfd >= 0) {
		used = mount_used(m->dirfd);
		files = mount_files(m->dirfd);
	}
	keep = used || files;
	if ((keep || m->keep_empty) && m->dirfd >= 0 &&
	    !fdstore_send(m->label, m->dirfd))
		pr_info("%s: %s: the mount's root is kept in systemd's fd store for a restart of zvmmd to count (a stop of the unit empties the store, and the next start does not count it)",
			m->dir,
			used ? "tenants still hold pages there" :
			keep ? "tenants may still hold chunk files there" :
			       "root's reserve");
	else if (keep && m->mounted)
		pr_info("%s: tenants still hold %s there%s: the mount stays for the next zvmmd to count (umount it once they are gone)",
			m->dir, size_format(used, a, sizeof(a)),
			files ? ", and chunk files" : "");
	else if (keep)
		pr_warn("%s: tenants still hold %s there, which the next zvmmd will not count",
			m->dir, size_format(used, a, sizeof(a)));
	/* Let go: out of the store too, had it come from there. */
	if (!keep && !m->keep_empty && m->dirfd >= 0)
		(void)fdstore_send(m->label, -1);
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = -1;
	/*
	 * One that something may still reach is left for the next zvmmd,
	 * said above; a stored one lives on in the store.
	 */
	if (m->mounted && !keep) {
		if (umount2(m->at, MNT_DETACH))
			pr_warn("cannot unmount %s: %s", m->dir,
				strerror(errno));
	}
	if (!keep)
		unlinkat(dirfd, m->label, AT_REMOVEDIR);
	m->mounted = false;
}

static void pool_close(struct pool *p, int dirfd)
{
	struct chunk *c;

	while ((c = p->zero)) {
		p->zero = c->next;
		chunk_retire(p, c);
	}
	while ((c = p->quarantine)) {
		p->quarantine = c->next;
		chunk_retire(p, c);
	}
	while ((c = p->returned)) {
		p->returned = c->next;
		chunk_retire(p, c);
	}
	while (p->ghosts) {
		struct ghost *g = p->ghosts;

		p->ghosts = g->next;
		free(g);
	}
	mount_close(&p->m, dirfd);
	mount_close(&p->r, dirfd);
}

/*
 * A reserve mount a previous zvmmd left, taken over with the reserve
 * since turned off, once its tenants let go: unmounted, so that the
 * kernel no longer holds its min_size= for no one. With the lock held.
 */
void pool_tidy(struct zvmmd *d, struct pool *p)
{
	char a[32];

	if (!p->reserve_cfg && p->r.dirfd >= 0 && !mount_used(p->r.dirfd) &&
	    !mount_files(p->r.dirfd))
		mount_close(&p->r, d->dirfd);
	/*
	 * Tried only once the pages look free: a refused mount may have
	 * had the kernel try to make surplus pages (compaction) first, in
	 * the event loop.
	 */
	if (!p->reserve_cfg || p->r.dirfd >= 0 ||
	    free_pages(p->cfg->page_bytes) * p->cfg->page_bytes <
		    p->reserve_cfg ||
	    mount_open(&p->r, p->cfg->page_bytes, d->cfg.dir, d->dirfd, -1,
		       true))
		return;
	p->reserve = p->r.min < p->r.size ? p->r.min : p->r.size;
	pr_info("%s: %s of %s pages now held by the kernel for root's leases alone ([service] root_reserve)",
		p->r.dir, size_format(p->reserve, a, sizeof(a)), p->label);
}

/* [service] dir, then the mounts of each pool that is on. */
int pools_open(struct zvmmd *d)
{
	int ret;

	d->dirfd = zvmmd_dir_open(d->cfg.dir, 0755, "[service] dir");
	if (d->dirfd < 0)
		return d->dirfd;
	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		if (!d->cfg.pool[i].on)
			continue;
		ret = pool_open(d, &d->pools[i], d->cfg.dir, d->dirfd);
		if (ret) {
			pr_err("cannot set up %s: %s", d->pools[i].dir,
			       strerror(-ret));
			return ret;
		}
	}
	fdstore_close_rest(d);
	return 0;
}

void pools_close(struct zvmmd *d)
{
	for (int i = 0; i < ZVMMD_NR_POOLS; i++)
		if (d->cfg.pool[i].on)
			pool_close(&d->pools[i], d->dirfd);
	if (d->dirfd >= 0)
		close(d->dirfd);
	d->dirfd = -1;
}
