// SPDX-License-Identifier: MIT
/*
 * zvmmd's quarantine: a chunk whose lease ended while some process still
 * holds it (an fd, a mapping) is never leased again, and is retired once
 * no one holds it, looked at again every [quarantine] recheck.
 *
 * Who holds chunks is asked for all of them at once, in one walk of
 * /proc (a walk costs what the host runs: every fd and mapping), and
 * without the lock, so the filler is not held up by it. Only the event
 * loop moves chunks into and out of quarantine, so none of them goes
 * meanwhile.
 */
#include <stdio.h>

#include "../lib/log.h"
#include "zvmmd.h"

/* A lease's chunks come back: retired, or quarantined while held. */
void quarantine_returned(struct zvmmd *d, struct lease *l)
{
	struct pool *p = l->pool;
	struct chunk *c, *next;
	unsigned int n = 0, i = 0;

	for (c = l->chunks; c && n < ZVMMD_MAX_CHUNKS; c = c->next)
		d->holder_st[n++] = c->st;
	holders_of(d->holder_st, n, d->holder_pid, d->holder_comm);
	pthread_mutex_lock(&d->lock);
	for (c = l->chunks; c; c = next, i++) {
		next = c->next;
		p->leased_bytes -= c->bytes;
		if (i < n && d->holder_pid[i] < 0) {
			chunk_retire(p, c);
			continue;
		}
		c->holder = i < n ? d->holder_pid[i] : 0;
		snprintf(c->holder_comm, sizeof(c->holder_comm), "%s",
			 i < n ? d->holder_comm[i] : "?");
		c->next = p->quarantine;
		p->quarantine = c;
		p->quarantined_bytes += c->bytes;
		pr_warn("lease %u: chunk %s is still held by pid %ld (%s): quarantined, never leased again, retired once free",
			l->id, c->name, c->holder, c->holder_comm);
	}
	filler_poke(d);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The holders of the first ZVMMD_MAX_CHUNKS quarantined chunks (the rest
 * at the next look), in pool order; how many were asked about.
 */
static unsigned int quarantine_holders(struct zvmmd *d)
{
	unsigned int n = 0;

	for (int k = 0; k < ZVMMD_NR_POOLS; k++)
		for (struct chunk *c = d->pools[k].quarantine;
		     c && n < ZVMMD_MAX_CHUNKS; c = c->next)
			d->holder_st[n++] = c->st;
	if (n)
		holders_of(d->holder_st, n, d->holder_pid, d->holder_comm);
	return n;
}

/* The quarantine, looked at again: chunks no one holds now retire. */
void quarantine_check(struct zvmmd *d)
{
	unsigned int n = quarantine_holders(d), i = 0;
	struct chunk *c, **pp;

	if (!n)
		return;
	pthread_mutex_lock(&d->lock);
	for (int k = 0; k < ZVMMD_NR_POOLS && i < n; k++) {
		struct pool *p = &d->pools[k];

		pp = &p->quarantine;
		while ((c = *pp) && i < n) {
			long pid = d->holder_pid[i];

			if (pid >= 0) {
				c->holder = pid;
				snprintf(c->holder_comm, sizeof(c->holder_comm),
					 "%s", d->holder_comm[i++]);
				pp = &c->next;
				continue;
			}
			i++;
			*pp = c->next;
			p->quarantined_bytes -= c->bytes;
			pr_info("chunk %s is free again: retired", c->name);
			chunk_retire(p, c);
			filler_poke(d);
		}
	}
	pthread_mutex_unlock(&d->lock);
}
