// SPDX-License-Identifier: MIT
/*
 * zvmmd's trims: a chunk zvmmd gave out and has not retired is cut back
 * to its length when its holder grew it (chunks.c, chunk_grown()), on a
 * thread of its own. The cut is an ftruncate or a hole punched past the
 * end, and either one unmaps the range from every mapping of the file:
 * in the second review a member's 160 processes of 60,000 mappings each
 * made one cut take 1.3 s, and that many more mappings, longer. In the
 * event loop that held up every LEASE, STATUS and SIGTERM meanwhile.
 *
 * The loop hands the thread a round, every grown chunk (a dup of each
 * fd: the loop may retire a chunk meanwhile), and takes it back when
 * @trim_efd is readable. A LEASE that the pool could not serve while
 * grown pages are in it waits for the round in flight (lease_ask()), so
 * that those pages are back before it is weighed. The round's entries
 * are the thread's from the hand-over to the eventfd, the loop's
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../lib/thread.h"
#include "zvmmd.h"

/* The pages of the file @fd holds, in bytes; 0 when it cannot be read. */
static uint64_t file_bytes(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (uint64_t)st.st_blocks * 512;
}

/*
 * One cut: @t's file back to its length, its pages past it freed, and
 * weighed: what left the file but not the mount is held by someone no
 * scan sees (pinned in a pipe), charged to the chunk's user after.
 */
static void trim_cut(struct trim *t)
{
	uint64_t in_file, used, in_file_after, used_after, freed, dropped;
	struct stat st;

	t->err = 0;
	if (fstat(t->fd, &st)) {
		t->err = errno;
		return;
	}
	t->size = st.st_size;
	/* Mount, file; cut; file, mount: a fault between weighs high. */
	used = mount_used(t->mount_fd);
	in_file = file_bytes(t->fd);
	if ((uint64_t)st.st_size > t->bytes &&
	    ftruncate(t->fd, (off_t)t->bytes))
		t->err = errno;
	/* Pages allocated past the end (fallocate FALLOC_FL_KEEP_SIZE). */
	if (file_bytes(t->fd) > t->end &&
	    fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)t->end, (off_t)(INT64_MAX - t->end)) &&
	    !t->err)
		t->err = errno;
	in_file_after = file_bytes(t->fd);
	used_after = mount_used(t->mount_fd);
	freed = in_file > in_file_after ? in_file - in_file_after : 0;
	dropped = used > used_after ? used - used_after : 0;
	t->kept = freed > dropped ? freed - dropped : 0;
}

/* The rounds, one at a time, as the loop hands them over. */
static void *trim_thread(void *arg)
{
	struct zvmmd *d = arg;
	uint64_t one = 1;

	thread_name("zvmmd-trim");
	pthread_mutex_lock(&d->trim_lock);
	for (;;) {
		while (!d->trim_req && !d->trim_stop)
			pthread_cond_wait(&d->trim_wake, &d->trim_lock);
		if (d->trim_stop)
			break;
		pthread_mutex_unlock(&d->trim_lock);
		/* SIGTERM waits for the cut in flight, not the round. */
		for (unsigned int i = 0; i < d->trim_n; i++) {
			if (__atomic_load_n(&d->trim_stop, __ATOMIC_ACQUIRE))
				break;
			trim_cut(&d->trims[i]);
			d->trims[i].done = true;
		}
		pthread_mutex_lock(&d->trim_lock);
		d->trim_req = false;
		(void)!write(d->trim_efd, &one, sizeof(one));
	}
	d->trim_exited = true;
	pthread_cond_broadcast(&d->trim_wake);
	pthread_mutex_unlock(&d->trim_lock);
	return NULL;
}

int trim_start(struct zvmmd *d)
{
	int ret;

	d->trim_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->trim_efd < 0)
		return -errno;
	ret = -pthread_create(&d->trim_thread, NULL, trim_thread, d);
	d->trim_on = !ret;
	return ret;
}

/*
 * The trim thread stopped: true once it is joined, false when a cut
 * still ran a second after it was asked to stop (the kernel's, as long
 * as the holder's mappings make it: the process's exit ends it; @d must
 * then outlive the call, and the round's fds are left to the exit).
 */
bool trim_stop(struct zvmmd *d)
{
	struct timespec ts;
	bool exited = true;

	if (d->trim_on) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&d->trim_lock);
		__atomic_store_n(&d->trim_stop, true, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&d->trim_wake);
		while (!d->trim_exited &&
		       !pthread_cond_timedwait(&d->trim_wake, &d->trim_lock,
					       &ts))
			;
		exited = d->trim_exited;
		pthread_mutex_unlock(&d->trim_lock);
		if (!exited) {
			pr_warn("a cut of a grown chunk did not end within 1 s: left to the exit");
			return false;
		}
		pthread_join(d->trim_thread, NULL);
		d->trim_on = false;
	}
	for (unsigned int i = 0; i < d->trim_n; i++) {
		close(d->trims[i].fd);
		close(d->trims[i].mount_fd);
	}
	d->trim_n = 0;
	d->trim_busy = false;
	free(d->trims);
	d->trims = NULL;
	d->trim_cap = 0;
	if (d->trim_efd >= 0)
		close(d->trim_efd);
	d->trim_efd = -1;
	return true;
}

/*
 * @c of @p, grown past its length by its holder, into the next round:
 * every grown chunk goes, however many (a cap would let a holder keep
 * one grown for good behind others it grows again and again).
 */
static void trim_add(struct zvmmd *d, struct pool *p, struct chunk *c)
{
	uint64_t page = p->cfg->page_bytes;
	struct trim *t;

	if (d->trim_n == d->trim_cap) {
		unsigned int cap = d->trim_cap ? 2 * d->trim_cap : 16;
		struct trim *a = realloc(d->trims, cap * sizeof(*a));

		if (!a)
			return; /* the next recheck finds it again */
		d->trims = a;
		d->trim_cap = cap;
	}
	t = &d->trims[d->trim_n];
	memset(t, 0, sizeof(*t));
	t->fd = dup(c->fd);
	if (t->fd < 0)
		return;
	t->mount_fd = dup(c->mnt->dirfd);
	if (t->mount_fd < 0) {
		close(t->fd);
		return;
	}
	t->pool = p;
	t->c = c;
	t->ino = c->st.st_ino;
	t->bytes = c->bytes;
	t->end = (c->bytes + page - 1) / page * page;
	d->trim_n++;
}

/*
 * Every chunk zvmmd gave out and has not retired looked at (an fstat
 * each: leased, returned, quarantined), and a round of those grown
 * handed to the thread. True when a round is out, this one or one
 * before.
 */
bool trims_start(struct zvmmd *d)
{
	if (d->trim_busy)
		return true;
	if (!d->trim_on)
		return false;
	for (struct client *cl = d->clients; cl; cl = cl->next)
		for (struct chunk *c = cl->lease ? cl->lease->chunks : NULL; c;
		     c = c->next)
			if (chunk_grown(cl->lease->pool, c))
				trim_add(d, cl->lease->pool, c);
	for (int k = 0; k < ZVMMD_NR_POOLS; k++) {
		struct pool *p = &d->pools[k];
		struct chunk *lists[2] = { p->returned, p->quarantine };

		if (!p->cfg->on)
			continue;
		for (int j = 0; j < 2; j++)
			for (struct chunk *c = lists[j]; c; c = c->next)
				if (chunk_grown(p, c))
					trim_add(d, p, c);
	}
	if (!d->trim_n)
		return false;
	d->trim_busy = true;
	pthread_mutex_lock(&d->trim_lock);
	d->trim_req = true;
	pthread_cond_signal(&d->trim_wake);
	pthread_mutex_unlock(&d->trim_lock);
	return true;
}

/* @c, if it is still one that zvmmd gave out from @p: not retired. */
static bool chunk_out(const struct zvmmd *d, const struct pool *p,
		      const struct chunk *c)
{
	const struct chunk *lists[2] = { p->returned, p->quarantine };
	const struct chunk *x;

	for (const struct client *cl = d->clients; cl; cl = cl->next) {
		if (!cl->lease || cl->lease->pool != p)
			continue;
		for (x = cl->lease->chunks; x; x = x->next)
			if (x == c)
				return true;
	}
	for (int j = 0; j < 2; j++)
		for (x = lists[j]; x; x = x->next)
			if (x == c)
				return true;
	return false;
}

/* One cut of a round, back in the loop: said once, and charged. */
static void trim_apply(struct zvmmd *d, struct trim *t)
{
	struct chunk *c = t->c;

	/* A chunk retired meanwhile was weighed then (chunk_retire()). */
	if (!t->done || !chunk_out(d, t->pool, c) || c->st.st_ino != t->ino)
		return;
	if (t->err)
		pr_warn("chunk %s: cannot cut it back to %llu bytes: %s",
			c->name, (unsigned long long)c->bytes,
			strerror(t->err));
	else if (!c->trim_said && (uint64_t)t->size > c->bytes)
		pr_warn("chunk %s was grown to %lld bytes by its holder: cut back to %llu (said once a chunk)",
			c->name, (long long)t->size,
			(unsigned long long)c->bytes);
	c->trim_said |= (uint64_t)t->size > c->bytes;
	pthread_mutex_lock(&d->lock);
	chunk_charge_cut(t->pool, c, t->kept);
	pthread_mutex_unlock(&d->lock);
}

/*
 * A round back from the thread: each chunk still given out that was cut
 * said and charged what the cut could not free; each pool counted once;
 * then the LEASEs that waited for it are made.
 */
void trims_done(struct zvmmd *d)
{
	uint64_t v;

	if (read(d->trim_efd, &v, sizeof(v)) != sizeof(v) || !d->trim_busy)
		return;
	/* The thread's writes before the eventfd, seen through its lock. */
	pthread_mutex_lock(&d->trim_lock);
	pthread_mutex_unlock(&d->trim_lock);
	for (unsigned int i = 0; i < d->trim_n; i++) {
		trim_apply(d, &d->trims[i]);
		close(d->trims[i].fd);
		close(d->trims[i].mount_fd);
	}
	d->trim_n = 0;
	d->trim_busy = false;
	pthread_mutex_lock(&d->lock);
	for (int k = 0; k < ZVMMD_NR_POOLS; k++)
		if (d->pools[k].cfg->on)
			pool_account(d, &d->pools[k]);
	filler_poke(d);
	pthread_mutex_unlock(&d->lock);
	leases_waiting(d);
}
