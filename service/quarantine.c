// SPDX-License-Identifier: MIT
/*
 * zvmmd's quarantine: a chunk whose lease ended while some process still
 * holds it (an fd, a mapping) is never leased again, and is retired once
 * no one holds it, looked at again every [quarantine] recheck.
 *
 * Who holds chunks is asked for all of them at once, in one walk of
 * /proc (lib/holders.h), on a thread of its own: a walk costs what the
 * host runs (every fd and mapping of every process, seconds for a user
 * who opens enough of them), and LEASE, STATUS and SIGTERM are answered
 * meanwhile. A walk has SCAN_DEADLINE_S; one that runs out clears
 * nothing it did not find free, so a chunk it did not look for is held,
 * never free. Only the event loop moves chunks into and out of the
 * returned list and the quarantine, so none that a walk looks for goes
 * meanwhile.
 *
 * A lease's end is looked at at once, in the loop, for QUICK_S at most;
 * a chunk that walk had no time for stays in its pool's leased_bytes
 * until the thread's next walk has looked: retired then, or
 * quarantined. What the walk cannot see (an fd in flight, pages in a
 * pipe) the kernel's count of the mount shows (pool_account()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/thread.h"
#include "zvmmd.h"

#define SCAN_DEADLINE_S 2.0

/* The walks, one at a time, as the loop hands them over. */
static void *scan_thread(void *arg)
{
	struct zvmmd *d = arg;
	uint64_t one = 1;
	int ret;

	thread_name("zvmmd-scan");
	pthread_mutex_lock(&d->scan_lock);
	for (;;) {
		while (!d->scan_req && !d->scan_stop)
			pthread_cond_wait(&d->scan_wake, &d->scan_lock);
		if (d->scan_stop)
			break;
		pthread_mutex_unlock(&d->scan_lock);
		ret = holders_walk_from(d->holder_file, d->scan_n,
					d->holder_pid, d->holder_comm,
					clock_now() + SCAN_DEADLINE_S,
					&d->scan_stop, &d->scan_resume);
		pthread_mutex_lock(&d->scan_lock);
		d->scan_ret = ret;
		d->scan_req = false;
		(void)!write(d->scan_efd, &one, sizeof(one));
	}
	d->scan_exited = true;
	pthread_cond_broadcast(&d->scan_wake);
	pthread_mutex_unlock(&d->scan_lock);
	return NULL;
}

int scan_start(struct zvmmd *d)
{
	int ret;

	d->scan_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->scan_efd < 0)
		return -errno;
	ret = -pthread_create(&d->scan_thread, NULL, scan_thread, d);
	d->scan_on = !ret;
	return ret;
}

/*
 * The scan thread stopped: true once it is joined, false when a walk
 * still ran a second after it was asked to stop (a read of /proc that
 * blocks: the process's exit ends it; @d must then outlive the call).
 */
bool scan_stop(struct zvmmd *d)
{
	struct timespec ts;
	bool exited;

	if (!d->scan_on)
		return true;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	pthread_mutex_lock(&d->scan_lock);
	__atomic_store_n(&d->scan_stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&d->scan_wake);
	while (!d->scan_exited &&
	       !pthread_cond_timedwait(&d->scan_wake, &d->scan_lock, &ts))
		;
	exited = d->scan_exited;
	pthread_mutex_unlock(&d->scan_lock);
	if (!exited) {
		pr_warn("the holder scan did not stop within 1 s: left to the exit");
		return false;
	}
	pthread_join(d->scan_thread, NULL);
	d->scan_on = false;
	return true;
}

/* Room for @n chunks in the scan's arrays; false: none to be had. */
static bool scan_room(struct zvmmd *d, unsigned int n)
{
	unsigned int cap = d->scan_cap ? d->scan_cap : 64;
	void *a, *b, *c, *e;

	if (n <= d->scan_cap)
		return true;
	while (cap < n)
		cap *= 2;
	a = realloc(d->scan_chunk, cap * sizeof(*d->scan_chunk));
	if (a)
		d->scan_chunk = a;
	b = realloc(d->holder_file, cap * sizeof(*d->holder_file));
	if (b)
		d->holder_file = b;
	c = realloc(d->holder_pid, cap * sizeof(*d->holder_pid));
	if (c)
		d->holder_pid = c;
	e = realloc(d->holder_comm, cap * sizeof(*d->holder_comm));
	if (e)
		d->holder_comm = e;
	if (!a || !b || !c || !e)
		return false;
	d->scan_cap = cap;
	return true;
}

void scan_free(struct zvmmd *d)
{
	free(d->scan_chunk);
	free(d->holder_file);
	free(d->holder_pid);
	free(d->holder_comm);
	d->scan_chunk = NULL;
	d->holder_file = NULL;
	d->holder_pid = NULL;
	d->holder_comm = NULL;
	d->scan_cap = 0;
}

/*
 * Every returned and quarantined chunk handed to the thread, whatever
 * their number (a cap would leave some never looked at again); if a
 * walk runs, one more after it when @again (chunks came back), else
 * nothing (the next recheck looks). A walk from the first process
 * starts a pass; a chunk first handed over mid-pass is judged by the
 * next whole one.
 */
static void scan_kick(struct zvmmd *d, bool again)
{
	unsigned int n = 0, want = 0;
	bool fresh;

	if (d->scan_busy) {
		d->scan_again |= again;
		return;
	}
	for (int k = 0; k < ZVMMD_NR_POOLS; k++) {
		for (struct chunk *c = d->pools[k].returned; c; c = c->next)
			want++;
		for (struct chunk *c = d->pools[k].quarantine; c; c = c->next)
			want++;
	}
	if (!want || !d->scan_on || !scan_room(d, want))
		return;
	fresh = !d->scan_resume;
	if (fresh)
		d->pass++;
	for (int k = 0; k < ZVMMD_NR_POOLS; k++) {
		struct pool *p = &d->pools[k];
		struct chunk *lists[2] = { p->returned, p->quarantine };

		for (int j = 0; j < 2; j++)
			for (struct chunk *c = lists[j]; c; c = c->next) {
				if (!c->pass_from)
					c->pass_from = d->pass + !fresh;
				d->scan_chunk[n] = c;
				d->holder_file[n++] =
					(struct holder_file){ c->mnt->mnt_id,
							      c->st.st_dev,
							      c->st.st_ino };
			}
	}
	d->scan_busy = true;
	d->scan_again = false;
	pthread_mutex_lock(&d->scan_lock);
	d->scan_n = n;
	d->scan_req = true;
	pthread_cond_signal(&d->scan_wake);
	pthread_mutex_unlock(&d->scan_lock);
}

/*
 * A lease's chunks come back: looked for at once, in the loop, for at
 * most QUICK_S (a walk of a host's /proc takes milliseconds), so that a
 * chunk no one holds is retired before the next request is read, as a
 * VMM started again at once needs; held ones are quarantined. What the
 * walk had no time for stays in leased_bytes, on the returned list, for
 * the scan thread (quarantine_returned() then stalls the loop QUICK_S
 * at most in a second, whatever /proc holds and however many leases
 * end: quick_walk()).
 */
#define QUICK_S 0.25
#define QUICK_WINDOW_S 1.0

static void returned_apply(struct zvmmd *d, struct lease *l, bool done)
{
	struct pool *p = l->pool;
	struct chunk *c, *next;
	unsigned int i = 0;

	for (c = l->chunks; c; c = next, i++) {
		long pid = i < ZVMMD_MAX_CHUNKS ? d->quick_pid[i] : 0;

		next = c->next;
		c->looked = false;
		c->holder = 0;
		snprintf(c->holder_comm, sizeof(c->holder_comm), "?");
		/*
		 * Root's reserve chunks are retired unlooked at too: only
		 * root reaches them, and a walk a member slowed down must
		 * not keep root's next lease out of its reserve. Retiring
		 * never leases again; held pages stay counted (a ghost).
		 */
		if (pid < 0 || (!pid && !done && c->mnt == &p->r)) {
			p->leased_bytes -= c->bytes;
			chunk_retire(p, c);
			continue;
		}
		if (pid > 0 || done) {
			p->leased_bytes -= c->bytes;
			c->looked = true;
			c->holder = pid;
			snprintf(c->holder_comm, sizeof(c->holder_comm), "%s",
				 d->quick_comm[i]);
			c->next = p->quarantine;
			p->quarantine = c;
			p->quarantined_bytes += c->bytes;
			pr_warn("lease %u: chunk %s is still held by pid %ld (%s): quarantined, never leased again, retired once free",
				l->id, c->name, c->holder, c->holder_comm);
			continue;
		}
		c->next = p->returned;
		p->returned = c;
	}
	l->chunks = NULL;
}

/*
 * The walk at a lease's end, within what is left of QUICK_S in the
 * current QUICK_WINDOW_S: many leases ending at once (a uid's 32
 * connections closed together) would otherwise stall the loop QUICK_S
 * each, 8 s for one uid (measured in review: 16 s for two). With the
 * budget spent, the chunks go to the scan thread unlooked at. Returns
 * holders_walk()'s answer, or -ETIMEDOUT with nothing looked at.
 */
static int quick_walk(struct zvmmd *d, unsigned int n)
{
	double now = clock_now(), left;
	int ret;

	if (now - d->quick_window >= QUICK_WINDOW_S) {
		d->quick_window = now;
		d->quick_spent = 0;
	}
	left = QUICK_S - d->quick_spent;
	if (left < 0.001) {
		memset(d->quick_pid, 0, sizeof(d->quick_pid[0]) * n);
		return -ETIMEDOUT;
	}
	ret = holders_walk(d->quick_file, n, d->quick_pid, d->quick_comm,
			   now + left, NULL);
	d->quick_spent += clock_now() - now;
	return ret;
}

void quarantine_returned(struct zvmmd *d, struct lease *l)
{
	unsigned int n = 0;
	int ret;

	for (struct chunk *c = l->chunks; c && n < ZVMMD_MAX_CHUNKS;
	     c = c->next)
		d->quick_file[n++] = (struct holder_file){ c->mnt->mnt_id,
							   c->st.st_dev,
							   c->st.st_ino };
	ret = quick_walk(d, n);
	pthread_mutex_lock(&d->lock);
	returned_apply(d, l, ret >= 0);
	pool_account(d, l->pool);
	filler_poke(d);
	pthread_mutex_unlock(&d->lock);
	if (ret < 0)
		scan_kick(d, true);
}

/*
 * Every recheck: the kernel's count of each mount read again (memory
 * hidden from the walk comes back when its holder lets go: the filler
 * is told), and the quarantine looked at again, unless a walk runs.
 */
void quarantine_check(struct zvmmd *d)
{
	bool freed = false;

	(void)trims_start(d);
	peers_users_sweep(d, false);
	pthread_mutex_lock(&d->lock);
	for (int k = 0; k < ZVMMD_NR_POOLS; k++) {
		struct pool *p = &d->pools[k];
		uint64_t was = p->unseen_bytes;

		if (!p->cfg->on)
			continue;
		pool_tidy(d, p);
		pool_account(d, p);
		freed |= p->unseen_bytes < was;
	}
	if (freed)
		filler_poke(d);
	pthread_mutex_unlock(&d->lock);
	scan_kick(d, false);
}

/* @c out of whichever list of @p holds it; false if none does. */
static bool unlink_chunk(struct pool *p, struct chunk *c)
{
	struct chunk **lists[2] = { &p->returned, &p->quarantine };

	for (int j = 0; j < 2; j++)
		for (struct chunk **pp = lists[j]; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				return true;
			}
	return false;
}

static struct pool *pool_of_chunk(struct zvmmd *d, struct chunk *c)
{
	for (int k = 0; k < ZVMMD_NR_POOLS; k++)
		if (unlink_chunk(&d->pools[k], c))
			return &d->pools[k];
	return NULL;
}

/* Walk @i's answer for its chunk, with the lock held. */
static void scan_apply(struct zvmmd *d, unsigned int i, bool pass_end)
{
	struct chunk *c = d->scan_chunk[i];
	bool was_returned = !c->looked, free_now;
	long pid = d->holder_pid[i];
	struct pool *p;

	/*
	 * Free: no slice of a whole pass that looked for it from its start
	 * found it held. Found held now: quarantined, its holder named.
	 * Neither (a slice ran out of time, or the pass began before it
	 * came back): kept as it is, for the slices and passes to come.
	 */
	if (pid > 0)
		c->pass_held = d->pass;
	free_now = pass_end && pid < 0 && c->pass_from <= d->pass &&
		   c->pass_held != d->pass;
	if (pid <= 0 && !free_now && !was_returned)
		return;
	p = pool_of_chunk(d, c);
	if (!p)
		return;
	if (was_returned)
		p->leased_bytes -= c->bytes;
	else
		p->quarantined_bytes -= c->bytes;
	if (free_now) {
		if (!was_returned)
			pr_info("chunk %s is free again: retired", c->name);
		chunk_retire(p, c);
		return;
	}
	c->looked = true;
	if (pid > 0 || was_returned) {
		c->holder = pid > 0 ? pid : 0;
		snprintf(c->holder_comm, sizeof(c->holder_comm), "%s",
			 pid > 0 ? d->holder_comm[i] : "?");
	}
	c->next = p->quarantine;
	p->quarantine = c;
	p->quarantined_bytes += c->bytes;
	if (was_returned && c->holder > 0)
		pr_warn("chunk %s is still held by pid %ld (%s): quarantined, never leased again, retired once free",
			c->name, c->holder, c->holder_comm);
	else if (was_returned)
		pr_warn("chunk %s: the holder scan has not walked all of /proc since it came back: quarantined, looked at again",
			c->name);
}

/* The thread's walk is done (@scan_efd readable): its answers applied. */
void scan_done(struct zvmmd *d)
{
	static bool said;
	uint64_t v;

	if (read(d->scan_efd, &v, sizeof(v)) != sizeof(v) || !d->scan_busy)
		return;
	pthread_mutex_lock(&d->scan_lock);
	pthread_mutex_unlock(&d->scan_lock);
	if (d->scan_ret == -ETIMEDOUT && !said) {
		said = true;
		pr_warn("a walk of /proc for the holders of chunks ran past %.0f s: it goes on from there at the next recheck, and what it has not cleared stays quarantined until it has walked all of /proc (said once)",
			SCAN_DEADLINE_S);
	}
	pthread_mutex_lock(&d->lock);
	/* The pass is whole when a slice got to the last process. */
	for (unsigned int i = 0; i < d->scan_n; i++)
		scan_apply(d, i, d->scan_ret >= 0 && !d->scan_resume);
	for (int k = 0; k < ZVMMD_NR_POOLS; k++)
		if (d->pools[k].cfg->on)
			pool_account(d, &d->pools[k]);
	filler_poke(d);
	pthread_mutex_unlock(&d->lock);
	d->scan_busy = false;
	/* Chunks that came back meanwhile are looked for at once. */
	if (d->scan_again)
		scan_kick(d, false);
}
