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
 * The loop hands the thread a round of chunks (a dup of each fd: the
 * loop may retire a chunk meanwhile) and takes the round back when
 * @trim_efd is readable; a LEASE that comes while a round is out waits
 * for it (lease_make()), so that the pages a holder grew into are back
 * in the pool before it is weighed. The round's entries are the
 * thread's from the hand-over to the eventfd, the loop's otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../lib/thread.h"
#include "zvmmd.h"

/* One cut: @t's file back to its length, its pages past it freed. */
static void trim_cut(struct trim *t)
{
	struct stat st;

	t->err = 0;
	if (fstat(t->fd, &st)) {
		t->err = errno;
		return;
	}
	t->size = st.st_size;
	if ((uint64_t)st.st_size > t->bytes &&
	    ftruncate(t->fd, (off_t)t->bytes))
		t->err = errno;
	/* Pages allocated past the end (fallocate FALLOC_FL_KEEP_SIZE). */
	if (!fstat(t->fd, &st) && (uint64_t)st.st_blocks * 512 > t->end &&
	    fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)t->end, (off_t)(INT64_MAX - t->end)) &&
	    !t->err)
		t->err = errno;
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
		for (unsigned int i = 0; i < d->trim_n; i++)
			trim_cut(&d->trims[i]);
		pthread_mutex_lock(&d->trim_lock);
		d->trim_req = false;
		(void)!write(d->trim_efd, &one, sizeof(one));
	}
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
 * The trim thread stopped. A cut in flight is the kernel's to finish:
 * the join waits for it (the holder's mappings bound it, and it ends).
 */
void trim_stop(struct zvmmd *d)
{
	if (d->trim_on) {
		pthread_mutex_lock(&d->trim_lock);
		d->trim_stop = true;
		pthread_cond_signal(&d->trim_wake);
		pthread_mutex_unlock(&d->trim_lock);
		pthread_join(d->trim_thread, NULL);
		d->trim_on = false;
	}
	for (unsigned int i = 0; i < d->trim_n; i++)
		close(d->trims[i].fd);
	d->trim_n = 0;
	d->trim_busy = false;
	if (d->trim_efd >= 0)
		close(d->trim_efd);
	d->trim_efd = -1;
}

/*
 * @c of @p, grown past its length by its holder, into the next round:
 * false when the round is full (the next recheck finds it again).
 */
static bool trim_add(struct zvmmd *d, struct pool *p, struct chunk *c)
{
	struct trim *t = &d->trims[d->trim_n];
	uint64_t page = p->cfg->page_bytes;

	if (d->trim_n == TRIM_ROUND)
		return false;
	t->fd = dup(c->fd);
	if (t->fd < 0)
		return false;
	t->pool = p;
	t->c = c;
	t->ino = c->st.st_ino;
	t->bytes = c->bytes;
	t->end = (c->bytes + page - 1) / page * page;
	d->trim_n++;
	return true;
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
				(void)trim_add(d, cl->lease->pool, c);
	for (int k = 0; k < ZVMMD_NR_POOLS; k++) {
		struct pool *p = &d->pools[k];
		struct chunk *lists[2] = { p->returned, p->quarantine };

		if (!p->cfg->on)
			continue;
		for (int j = 0; j < 2; j++)
			for (struct chunk *c = lists[j]; c; c = c->next)
				if (chunk_grown(p, c))
					(void)trim_add(d, p, c);
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

	for (const struct client *cl = d->clients; cl; cl = cl->next)
		for (x = cl->lease && cl->lease->pool == p ? cl->lease->chunks :
							     NULL;
		     x; x = x->next)
			if (x == c)
				return true;
	for (int j = 0; j < 2; j++)
		for (x = lists[j]; x; x = x->next)
			if (x == c)
				return true;
	return false;
}

/*
 * A round back from the thread: each chunk still given out that was cut
 * is said once and charged what the cut could not free
 * (chunk_charge_cut()); then the LEASEs that waited for it are made.
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
		struct trim *t = &d->trims[i];
		struct chunk *c = t->c;

		close(t->fd);
		if (!chunk_out(d, t->pool, c) || c->st.st_ino != t->ino)
			continue;
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
		chunk_charge_cut(d, t->pool, c);
		pthread_mutex_unlock(&d->lock);
	}
	d->trim_n = 0;
	d->trim_busy = false;
	leases_waiting(d);
}
