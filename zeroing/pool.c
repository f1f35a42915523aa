// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/size.h"
#include "../lib/thread.h"
#include "calibrate.h"
#include "pool.h"

/* A page being cleared: its chunks are claimed in ascending order. */
struct job {
	uint64_t page;
	uint32_t nr_chunks;
	uint32_t next_chunk; /* next to claim */
	uint32_t done_chunks;
	uint32_t inflight; /* claimed, not finished */
	uint64_t chunk; /* bytes a claim clears */
	bool populate; /* FRESH page: one fallocate, the kernel zeroes it */
	bool demand;
	uint64_t seq; /* demand order */
	double t_ask; /* asked for on demand */
	double t_first; /* first chunk claimed, 0: none yet */
	struct zero_demand_time *time; /* the asker's, told at settle */
	struct job *next;
};

/* A ring of page numbers, one slot per page of the pool. */
struct page_queue {
	uint64_t *q; /* NULL: not kept */
	uint64_t head, len;
};

struct worker_arg {
	struct zero_pool *pool;
	int cpu;
};

struct zero_pool {
	struct zero_pool_cfg cfg;
	struct worker_arg *args;
	uint64_t chunk;
	pthread_mutex_t lock;
	pthread_cond_t work; /* workers wait here */
	pthread_cond_t done; /* pages finished, pass finished */
	pthread_t *threads;
	unsigned int nr_threads;
	bool stop;
	bool cancelled;
	int error;

	bool bg_active;
	bool skip_fresh;
	uint64_t bg_cursor, bg_end;
	struct job *bg_job; /* background page with chunks left to claim */
	uint64_t rate; /* bytes per second, 0: unlimited */
	uint64_t bg_claimed;
	double bg_start, bg_stop;

	struct job *jobs; /* every page in ZEROING */
	uint64_t seq;
	uint64_t demand_extent; /* a demand page's claims */
	/* Bumped (atomic) per demand: what a spinning worker watches. */
	uint64_t demand_gen;
	/* Idle workers poll rather than sleep until then (clock_now()). */
	double spin_until;
	bool cpu_to_spare; /* fewer workers than CPUs: pollers need not yield */
	struct zero_pool_stats st;

	int notify_fd; /* eventfd written per queued page, -1: none */
	struct page_queue settled; /* demand pages settled, for the loop */
	struct page_queue ahead; /* background pages made ZERO (hybrid) */
};

static struct job *find_job(struct zero_pool *pool, uint64_t page)
{
	for (struct job *j = pool->jobs; j; j = j->next)
		if (j->page == page)
			return j;
	return NULL;
}

static void unlink_job(struct zero_pool *pool, struct job *job)
{
	struct job **pp;

	for (pp = &pool->jobs; *pp != job; pp = &(*pp)->next)
		;
	*pp = job->next;
	if (pool->bg_job == job)
		pool->bg_job = NULL;
	free(job);
}

/*
 * Takes a DIRTY or FRESH page into ZEROING with a job for it. Returns the
 * job, or NULL with *err: -ENOMEM, or -EAGAIN when the page left @from
 * meanwhile (a page is moved outside the pool's lock too: mapped into
 * the guest, say), which is no failure: the caller looks again.
 */
static struct job *new_job_locked(struct zero_pool *pool, uint64_t page,
				  enum zero_page_state from, bool demand,
				  int *err)
{
	uint64_t pb = pool->cfg.mem->page_bytes;
	struct job *j = calloc(1, sizeof(*j));

	*err = -ENOMEM;
	if (!j)
		return NULL;
	*err = zero_page_move(pool->cfg.mem->pages, page, from, ZP_ZEROING);
	if (*err) {
		free(j);
		return NULL;
	}
	j->page = page;
	j->populate = from == ZP_FRESH && !pool->cfg.scrub_fresh;
	j->chunk = demand ? pool->demand_extent : pool->chunk;
	j->nr_chunks = j->populate ? 1 :
				     (uint32_t)((pb + j->chunk - 1) / j->chunk);
	j->demand = demand;
	j->seq = demand ? ++pool->seq : 0;
	j->t_ask = demand ? clock_now() : 0;
	j->next = pool->jobs;
	pool->jobs = j;
	return j;
}

static void finish_pass_locked(struct zero_pool *pool)
{
	if (pool->bg_active && pool->bg_cursor >= pool->bg_end && !pool->jobs) {
		pool->bg_active = false;
		pool->bg_stop = clock_now();
		pthread_cond_broadcast(&pool->done);
	}
}

/* Queues @page on @q for the event loop and wakes it. */
static void queue_locked(struct zero_pool *pool, struct page_queue *q,
			 uint64_t page)
{
	uint64_t one = 1;

	if (pool->notify_fd < 0 || !q->q)
		return;
	q->q[(q->head + q->len++) % pool->cfg.nr_pages] = page;
	if (write(pool->notify_fd, &one, sizeof(one)) < 0) {
		/* the counter saturates only after 2^64 - 1 pages */
	}
}

/*
 * A demand page is done: its asker learns where the time went, and idle
 * workers keep polling a while, since the next fault of a guest touching
 * its memory comes right after this one.
 */
static void settle_demand_locked(struct zero_pool *pool, struct job *job)
{
	double now = clock_now(), start;

	pool->spin_until = now + ZERO_POOL_SPIN;
	if (!job->time)
		return;
	/* Joined after its first claim (a background page): no hand-off. */
	start = job->t_first > job->t_ask ? job->t_first : job->t_ask;
	job->time->handoff_us = (start - job->t_ask) * 1e6;
	job->time->clear_us = (now - start) * 1e6;
	job->time->settled = now;
	job->time = NULL;
}

/*
 * Settles a job no worker holds: ZERO when every chunk is done, back to
 * DIRTY when cancelled before that (part of it may hold data).
 */
static void settle_locked(struct zero_pool *pool, struct job *job)
{
	struct zero_pages *pages = pool->cfg.mem->pages;
	bool wake = false;
	int ret;

	if (job->inflight)
		return;
	if (job->done_chunks == job->nr_chunks)
		ret = zero_page_move(pages, job->page, ZP_ZEROING, ZP_ZERO);
	else if (pool->cancelled)
		ret = zero_page_move(pages, job->page, ZP_ZEROING, ZP_DIRTY);
	else
		return;
	if (ret && !pool->error)
		pool->error = ret;
	if (job->demand)
		settle_demand_locked(pool, job);
	/* Each page is in at most one job: the demand queue cannot
	 * overflow. The ahead queue is best effort. */
	if (job->demand)
		queue_locked(pool, &pool->settled, job->page);
	else if (!ret && job->done_chunks == job->nr_chunks &&
		 pool->ahead.len < pool->cfg.nr_pages)
		queue_locked(pool, &pool->ahead, job->page);
	/*
	 * Only a vCPU waiting for this page (its job is a demand job) and
	 * zero_pool_wait() for the last job of a pass that is over (ended
	 * or cancelled) sleep on done. Waking the
	 * waiter of a prezero pass per background page cost ~10 us a page
	 * (2 MiB pages, 1 worker: 62 against 88 GB/s on 1 GiB pages).
	 */
	wake = job->demand;
	unlink_job(pool, job);
	if (wake || (!pool->jobs && !pool->bg_active))
		pthread_cond_broadcast(&pool->done);
}

static void cancel_locked(struct zero_pool *pool)
{
	struct job *j, *next;

	pool->cancelled = true;
	if (pool->bg_active)
		pool->bg_stop = clock_now();
	pool->bg_active = false;
	for (j = pool->jobs; j; j = next) {
		next = j->next;
		settle_locked(pool, j);
	}
	pthread_cond_broadcast(&pool->work);
	pthread_cond_broadcast(&pool->done);
}

static void fail_locked(struct zero_pool *pool, int err)
{
	if (!pool->error)
		pool->error = err;
	cancel_locked(pool);
}

/*
 * The yield point's choice: the oldest demand page with chunks left,
 * else the background page in hand, else the next background page that
 * is not clear yet, in ascending order.
 */
static struct job *pick_locked(struct zero_pool *pool)
{
	struct zero_pages *pages = pool->cfg.mem->pages;
	struct job *best = NULL, *j;
	int err;

	if (pool->cancelled)
		return NULL;
	for (j = pool->jobs; j; j = j->next)
		if (j->demand && j->next_chunk < j->nr_chunks &&
		    (!best || j->seq < best->seq))
			best = j;
	if (best || !pool->bg_active)
		return best;
	j = pool->bg_job;
	if (j && !j->demand && j->next_chunk < j->nr_chunks)
		return j;
	pool->bg_job = NULL;
	while (pool->bg_cursor < pool->bg_end) {
		uint64_t p = pool->bg_cursor++;
		enum zero_page_state s = zero_page_get(pages, p);

		if (s != ZP_DIRTY && (s != ZP_FRESH || pool->skip_fresh))
			continue;
		j = new_job_locked(pool, p, s, false, &err);
		if (!j && err == -EAGAIN)
			continue; /* no longer ours to clear */
		if (!j) {
			fail_locked(pool, err);
			return NULL;
		}
		pool->bg_job = j;
		return j;
	}
	return NULL;
}

static void abs_time(double t, struct timespec *ts)
{
	ts->tv_sec = (time_t)t;
	ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
}

static int do_chunk(struct zero_pool *pool, const struct job *job, uint64_t off,
		    uint64_t len)
{
	struct zero_mem *m = pool->cfg.mem;

	if (job->populate) {
		int e = zvmm_inject("populate");

		if (e)
			return -e;
		/*
		 * The kernel allocates and zeroes the page on this core.
		 * MADV_POPULATE_WRITE faults it in under the per-page hugetlb
		 * fault mutex, so workers run in parallel; fallocate() holds
		 * the inode lock for its whole call and serialises them
		 * (measured: 2 workers no faster than 1).
		 */
		if (madvise(zero_mem_alias_page(m, job->page), m->page_bytes,
			    MADV_POPULATE_WRITE))
			return -errno;
		return 0;
	}
	pool->cfg.clear(zero_mem_alias_page(m, job->page) + off, len);
	return 0;
}

static void pin(const struct worker_arg *wa)
{
	struct bitmask *cpus;
	cpu_set_t set;

	if (numa_available() < 0) {
		if (wa->cpu >= 0) {
			CPU_ZERO(&set);
			CPU_SET(wa->cpu, &set);
			pthread_setaffinity_np(pthread_self(), sizeof(set),
					       &set);
		}
		return;
	}
	if (wa->cpu >= 0) {
		cpus = numa_allocate_cpumask();
		if (cpus) {
			numa_bitmask_setbit(cpus, (unsigned int)wa->cpu);
			numa_sched_setaffinity(0, cpus);
			numa_free_cpumask(cpus);
		}
	}
	/* Pages this thread allocates (populate) come from its node. */
	if (wa->pool->cfg.node >= 0)
		numa_set_preferred(wa->pool->cfg.node);
}

/*
 * An idle worker right after a demand page polls for the next one
 * instead of sleeping: waking a sleeping thread costs more than a
 * demand page's hand-off can afford (docs/DESIGN.md 5, "The demand
 * path", has the breakdown). Returns true when it polled (the caller
 * looks for work again), false when the caller should sleep. Called and
 * returns with the lock held; polls without it.
 */
static bool spin_locked(struct zero_pool *pool)
{
	uint64_t gen = __atomic_load_n(&pool->demand_gen, __ATOMIC_ACQUIRE);
	double until = pool->spin_until;
	bool yield = !pool->cpu_to_spare;

	if (pool->stop || pool->cancelled || clock_now() >= until)
		return false;
	pthread_mutex_unlock(&pool->lock);
	while (__atomic_load_n(&pool->demand_gen, __ATOMIC_ACQUIRE) == gen &&
	       clock_now() < until) {
		/*
		 * With a worker on every CPU the asker has none to run on
		 * but a poller's: yield it, or the asker waits a time slice
		 * to ask for its next page.
		 */
		if (yield)
			sched_yield();
		else
			arch_relax();
	}
	pthread_mutex_lock(&pool->lock);
	/* Timed out with nothing new: sleep next time round. */
	if (pool->spin_until == until &&
	    __atomic_load_n(&pool->demand_gen, __ATOMIC_ACQUIRE) == gen)
		pool->spin_until = 0;
	return true;
}

static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct zero_pool *pool = wa->pool;
	uint64_t pb = pool->cfg.mem->page_bytes;
	struct timespec ts;
	struct job *job;

	thread_name("zvmm-worker");
	pin(wa);
	pthread_mutex_lock(&pool->lock);
	while (!pool->stop) {
		uint64_t off, len;
		bool demand;
		int err;

		job = pick_locked(pool);
		if (!job) {
			finish_pass_locked(pool);
			if (!spin_locked(pool))
				pthread_cond_wait(&pool->work, &pool->lock);
			continue;
		}
		if (!job->demand && pool->rate) {
			double due =
				pool->bg_start +
				(double)pool->bg_claimed / (double)pool->rate;

			if (due > clock_now()) {
				/* Woken early by demand work, it is served
				 * first on the next pick. */
				abs_time(due, &ts);
				pthread_cond_timedwait(&pool->work, &pool->lock,
						       &ts);
				continue;
			}
		}
		off = (uint64_t)job->next_chunk++ * job->chunk;
		len = job->populate ?
			      pb :
			      (pb - off < job->chunk ? pb - off : job->chunk);
		if (job->demand && !job->t_first)
			job->t_first = clock_now();
		job->inflight++;
		demand = job->demand;
		if (!demand)
			pool->bg_claimed += len;
		pthread_mutex_unlock(&pool->lock);

		err = do_chunk(pool, job, off, len);

		pthread_mutex_lock(&pool->lock);
		job->inflight--;
		if (err) {
			fail_locked(pool, err);
			continue;
		}
		job->done_chunks++;
		if (job->populate)
			pool->st.populate_bytes += len;
		else
			pool->st.scrub_bytes += len;
		if (demand)
			pool->st.demand_bytes += len;
		if (demand && job->populate)
			pool->st.demand_populate_bytes += len;
		settle_locked(pool, job);
		finish_pass_locked(pool);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static void pool_free(struct zero_pool *pool)
{
	pthread_cond_destroy(&pool->work);
	pthread_cond_destroy(&pool->done);
	pthread_mutex_destroy(&pool->lock);
	free(pool->args);
	free(pool->threads);
	free(pool->settled.q);
	free(pool->ahead.q);
	free(pool);
}

static void stop_workers(struct zero_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	cancel_locked(pool);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned int i = 0; i < pool->nr_threads; i++)
		pthread_join(pool->threads[i], NULL);
	pool->nr_threads = 0;
}

/*
 * A pinned worker is created on its CPU (the attribute), not moved there
 * once it runs: it never clears a chunk elsewhere, and whoever looks at
 * it after zero_pool_create() sees it where it stays.
 */
static int start_worker(struct zero_pool *pool, unsigned int i)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int ret;

	if (pool->args[i].cpu < 0)
		return -pthread_create(&pool->threads[i], NULL, worker,
				       &pool->args[i]);
	ret = -pthread_attr_init(&attr);
	if (ret)
		return ret;
	CPU_ZERO(&set);
	CPU_SET(pool->args[i].cpu, &set);
	ret = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!ret)
		ret = -pthread_create(&pool->threads[i], &attr, worker,
				      &pool->args[i]);
	pthread_attr_destroy(&attr);
	return ret;
}

/* The CPUs this process may run on (its affinity, not the machine's). */
static unsigned int cpus_allowed(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned int)CPU_COUNT(&set);
}

/*
 * A demand page is cut for every worker to take part (two claims each,
 * so one that wakes late still finds work), in 64 KiB multiples, never
 * above the background chunk: a 1 GiB page keeps the latency bound.
 */
static uint64_t demand_extent(const struct zero_pool *pool)
{
	uint64_t pb = pool->cfg.mem->page_bytes;
	uint64_t parts = 2 * (uint64_t)pool->cfg.nr_workers;
	uint64_t e = (pb + parts - 1) / parts;

	e = (e + SZ_64K - 1) / SZ_64K * SZ_64K;
	return e < pool->chunk ? e : pool->chunk;
}

int zero_pool_create(const struct zero_pool_cfg *cfg, struct zero_pool **out)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	struct zero_pool *pool;
	sigset_t all, old;
	int ret = 0;

	if (!cfg->nr_workers || !cfg->chunk || cfg->chunk % 64 ||
	    cfg->first_page + cfg->nr_pages > cfg->mem->nr_pages)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->cfg = *cfg;
	pool->cfg.cpus = NULL;
	pool->notify_fd = -1;
	pool->chunk = cfg->chunk < cfg->mem->page_bytes ? cfg->chunk :
							  cfg->mem->page_bytes;
	pool->demand_extent = demand_extent(pool);
	pool->cpu_to_spare = cfg->nr_workers < cpus_allowed();
	pool->threads = calloc(cfg->nr_workers, sizeof(*pool->threads));
	pool->args = calloc(cfg->nr_workers, sizeof(*pool->args));
	/*
	 * Adaptive: the lock is held for a claim or a settle, well under a
	 * microsecond, and a demand page's asker and workers take it right
	 * after one another; sleeping on it cost a futex wake each time.
	 */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&pool->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->work, &ca);
	pthread_cond_init(&pool->done, &ca);
	pthread_condattr_destroy(&ca);
	if (!pool->threads || !pool->args) {
		pool_free(pool);
		return -ENOMEM;
	}
	/* Workers take no signal: the embedding process's stay its own. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned int i = 0; i < cfg->nr_workers; i++) {
		pool->args[i].pool = pool;
		pool->args[i].cpu = cfg->cpus ? cfg->cpus[i] : -1;
		ret = -zvmm_inject("worker");
		if (!ret)
			ret = start_worker(pool, i);
		if (ret)
			break;
		pool->nr_threads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		stop_workers(pool);
		pool_free(pool);
		return ret;
	}
	*out = pool;
	return 0;
}

void zero_pool_destroy(struct zero_pool *pool)
{
	if (!pool)
		return;
	stop_workers(pool);
	pool_free(pool);
}

void zero_pool_start(struct zero_pool *pool, uint64_t rate_limit,
		     bool skip_fresh)
{
	pthread_mutex_lock(&pool->lock);
	pool->skip_fresh = skip_fresh;
	pool->cancelled = false;
	pool->error = 0;
	pool->rate = rate_limit;
	pool->bg_cursor = pool->cfg.first_page;
	pool->bg_end = pool->cfg.first_page + pool->cfg.nr_pages;
	pool->bg_claimed = 0;
	pool->bg_start = clock_now();
	pool->bg_active = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

static int result_locked(struct zero_pool *pool)
{
	if (pool->error)
		return pool->error;
	return pool->cancelled ? -ECANCELED : 0;
}

int zero_pool_wait(struct zero_pool *pool, void (*progress)(void *arg),
		   void *arg)
{
	struct timespec ts;
	int ret;

	pthread_mutex_lock(&pool->lock);
	/* After a cancel, until every page in hand is settled. */
	while (pool->bg_active || pool->jobs) {
		abs_time(clock_now() + 0.1, &ts);
		pthread_cond_timedwait(&pool->done, &pool->lock, &ts);
		if (progress) {
			pthread_mutex_unlock(&pool->lock);
			progress(arg);
			pthread_mutex_lock(&pool->lock);
		}
	}
	ret = result_locked(pool);
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

/* Every worker, sleeping or polling, sees demand work at once. */
static void wake_for_demand_locked(struct zero_pool *pool)
{
	__atomic_add_fetch(&pool->demand_gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&pool->work);
}

/*
 * Puts @page ahead of all background work. Returns 0 when it is already
 * ZERO or MAPPED, 1 when a job for it runs (new, or a background one it
 * joined), or a negative errno. A new job tells @t, when set, where its
 * time went.
 */
static int demand_locked(struct zero_pool *pool, uint64_t page, bool *counted,
			 struct zero_demand_time *t)
{
	enum zero_page_state s = zero_page_get(pool->cfg.mem->pages, page);
	struct job *j;
	int ret;

	if (s == ZP_ZERO || s == ZP_MAPPED)
		return 0;
	ret = result_locked(pool);
	if (ret)
		return ret;
	if (!*counted) {
		pool->st.demand_pages++;
		*counted = true;
	}
	if (s == ZP_ZEROING) {
		/* Join the page's remaining chunks: every worker takes them
		 * before any background work. */
		j = find_job(pool, page);
		if (j && !j->demand) {
			j->demand = true;
			j->seq = ++pool->seq;
			j->t_ask = clock_now();
			if (pool->bg_job == j)
				pool->bg_job = NULL;
			wake_for_demand_locked(pool);
		}
		if (j && t && !j->time)
			j->time = t;
		return 1;
	}
	j = new_job_locked(pool, page, s, true, &ret);
	if (!j)
		return ret == -EAGAIN ? demand_locked(pool, page, counted, t) :
					ret;
	j->time = t;
	wake_for_demand_locked(pool);
	return 1;
}

static bool owns(const struct zero_pool *pool, uint64_t page)
{
	return page >= pool->cfg.first_page &&
	       page < pool->cfg.first_page + pool->cfg.nr_pages;
}

/*
 * Polls @page's state without the lock until it is no longer ZEROING,
 * for at most ZERO_POOL_SPIN: an asker asleep on `done` pays a wake-up
 * per page (2 MiB pages, 2 workers on 2 CPUs: 9.4 us of a 42 us page,
 * docs/DESIGN.md 5). Where a worker runs on every CPU the asker yields
 * between looks, so it never holds a CPU a worker clears on.
 */
static void asker_spin(struct zero_pool *pool, uint64_t page)
{
	const struct zero_pages *pages = pool->cfg.mem->pages;
	double until = clock_now() + ZERO_POOL_SPIN;

	while (zero_page_get(pages, page) == ZP_ZEROING &&
	       clock_now() < until) {
		if (pool->cpu_to_spare)
			arch_relax();
		else
			sched_yield();
	}
}

int zero_pool_demand_timed(struct zero_pool *pool, uint64_t page, bool count,
			   struct zero_demand_time *t)
{
	bool counted = !count;
	struct job *j;
	int ret;

	if (!owns(pool, page))
		return -EINVAL;
	if (t)
		*t = (struct zero_demand_time){ 0 };
	pthread_mutex_lock(&pool->lock);
	while ((ret = demand_locked(pool, page, &counted, t)) == 1) {
		pthread_mutex_unlock(&pool->lock);
		asker_spin(pool, page);
		pthread_mutex_lock(&pool->lock);
		if (zero_page_get(pool->cfg.mem->pages, page) != ZP_ZEROING)
			continue;
		pthread_cond_wait(&pool->done, &pool->lock);
	}
	/* Not waited for to the end (cancelled): the job keeps no pointer
	 * to the caller's stack. */
	j = t ? find_job(pool, page) : NULL;
	if (j && j->time == t)
		j->time = NULL;
	pthread_mutex_unlock(&pool->lock);
	if (t && t->settled > 0)
		t->wake_us = (clock_now() - t->settled) * 1e6;
	return ret;
}

int zero_pool_demand(struct zero_pool *pool, uint64_t page, bool count)
{
	return zero_pool_demand_timed(pool, page, count, NULL);
}

int zero_pool_demand_async(struct zero_pool *pool, uint64_t page)
{
	bool counted = false;
	int ret;

	if (!owns(pool, page))
		return -EINVAL;
	pthread_mutex_lock(&pool->lock);
	ret = demand_locked(pool, page, &counted, NULL);
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

int zero_pool_set_notify(struct zero_pool *pool, int fd, bool ahead)
{
	size_t n = pool->cfg.nr_pages ? pool->cfg.nr_pages : 1;
	uint64_t *q = calloc(n, sizeof(*q));
	uint64_t *a = ahead ? calloc(n, sizeof(*a)) : NULL;

	if (!q || (ahead && !a)) {
		free(q);
		free(a);
		return -ENOMEM;
	}
	pthread_mutex_lock(&pool->lock);
	free(pool->settled.q);
	free(pool->ahead.q);
	pool->settled = (struct page_queue){ .q = q };
	pool->ahead = (struct page_queue){ .q = a };
	pool->notify_fd = fd;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

static unsigned int pop(struct zero_pool *pool, struct page_queue *q,
			uint64_t *pages, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&pool->lock);
	while (n < max && q->len) {
		pages[n++] = q->q[q->head];
		q->head = (q->head + 1) % pool->cfg.nr_pages;
		q->len--;
	}
	pthread_mutex_unlock(&pool->lock);
	return n;
}

unsigned int zero_pool_pop_ahead(struct zero_pool *pool, uint64_t *pages,
				 unsigned int max)
{
	return pop(pool, &pool->ahead, pages, max);
}

unsigned int zero_pool_pop_done(struct zero_pool *pool, uint64_t *pages,
				unsigned int max)
{
	return pop(pool, &pool->settled, pages, max);
}

int zero_pool_error(struct zero_pool *pool)
{
	int ret;

	pthread_mutex_lock(&pool->lock);
	ret = pool->error;
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

void zero_pool_cancel(struct zero_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	cancel_locked(pool);
	pthread_mutex_unlock(&pool->lock);
}

void zero_pool_get_stats(struct zero_pool *pool, struct zero_pool_stats *s)
{
	struct zero_pages *pages = pool->cfg.mem->pages;
	uint64_t left = 0;

	pthread_mutex_lock(&pool->lock);
	*s = pool->st;
	s->bg_active = pool->bg_active;
	s->bg_seconds = !pool->bg_start ? 0 :
					  (pool->bg_active ? clock_now() :
							     pool->bg_stop) -
						  pool->bg_start;
	pthread_mutex_unlock(&pool->lock);
	for (uint64_t p = pool->cfg.first_page;
	     p < pool->cfg.first_page + pool->cfg.nr_pages; p++) {
		enum zero_page_state st = zero_page_get(pages, p);

		left += st != ZP_ZERO && st != ZP_MAPPED;
	}
	s->pages_left = left;
}
