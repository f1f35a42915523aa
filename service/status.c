// SPDX-License-Identifier: MIT
/*
 * zvmmd's STATUS: what each pool holds, its leases and its quarantined
 * chunks, as the rows of lib/zvmmd_status.h (the schema `zvmm pool
 * status` reads by, and docs/zvmmd-protocol.md's table), written
 * through the same table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/zvmmd_status.h"
#include "zvmmd.h"

/*
 * What one STATUS shows: whom to (@uid: root sees every lease and
 * chunk, any other uid its own, and counts of the rest) and how many
 * more entries it may list (@leases, @quarantined: STATUS_LISTED at
 * first, fewer when the reply had to be made again to fit).
 */
struct view {
	uid_t uid;
	unsigned int leases, quarantined;
};

/* @p's leases, newest connection first, with the lock held; -ENOMEM. */
static int status_leases(const struct zvmmd *d, const struct pool *p,
			 struct view *w, struct zvmmd_status_pool *o)
{
	struct zvmmd_status_lease *v;
	const struct client *cl;

	v = calloc(w->leases ? w->leases : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->leases.v = v;
	for (cl = d->clients; cl; cl = cl->next) {
		if (!cl->lease || cl->lease->pool != p)
			continue;
		o->leases_total++;
		if (!w->leases || (w->uid && cl->uid != w->uid))
			continue;
		v->id = cl->lease->id;
		v->pid = cl->pid;
		snprintf(v->comm, sizeof(v->comm), "%s", cl->comm);
		v->uid = cl->uid;
		v->bytes = (int64_t)cl->lease->bytes;
		v++;
		o->leases.nr++;
		w->leases--;
	}
	return 0;
}

/* @p's quarantined chunks, with the lock held; -ENOMEM. */
static int status_quarantined(const struct pool *p, struct view *w,
			      struct zvmmd_status_pool *o)
{
	struct zvmmd_status_quarantined *v;
	const struct chunk *c;

	v = calloc(w->quarantined ? w->quarantined : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->quarantined.v = v;
	for (c = p->quarantine; c; c = c->next) {
		o->quarantined_total++;
		if (!w->quarantined || (w->uid && c->owner != w->uid))
			continue;
		snprintf(v->chunk, sizeof(v->chunk), "%s", c->name);
		v->bytes = (int64_t)c->bytes;
		v->holder_pid = c->holder;
		snprintf(v->holder_comm, sizeof(v->holder_comm), "%s",
			 c->holder_comm);
		v++;
		o->quarantined.nr++;
		w->quarantined--;
	}
	return 0;
}

/* Pool @p's row, with the lock held; -ENOMEM. */
static int status_pool(const struct zvmmd *d, const struct pool *p,
		       struct view *w, struct zvmmd_status_pool *o)
{
	const struct zvmmd_pool_cfg *cfg = p->cfg;

	o->page_bytes = (int64_t)cfg->page_bytes;
	o->node = cfg->node;
	o->chunk_bytes = (int64_t)cfg->chunk_bytes;
	o->zero_bytes = (int64_t)p->zero_bytes;
	o->filling_bytes = (int64_t)p->filling_bytes;
	o->clean_bytes = o->zero_bytes;
	o->dirty_bytes = o->filling_bytes;
	o->leased_bytes = (int64_t)p->leased_bytes;
	o->quarantined_bytes = (int64_t)p->quarantined_bytes;
	o->unseen_bytes = (int64_t)p->unseen_bytes;
	o->low_bytes = (int64_t)cfg->low;
	o->high_bytes = (int64_t)cfg->high;
	o->max_bytes = (int64_t)cfg->max;
	o->reserve_bytes = (int64_t)p->reserve;
	o->scrubbed_bytes = (int64_t)p->filled_bytes;
	if (p->fill_seconds > 0)
		o->scrub_gbps = (double)p->filled_bytes / p->fill_seconds / 1e9;
	if (status_leases(d, p, w, o))
		return -ENOMEM;
	return status_quarantined(p, w, o);
}

/* The status as STATUS_OK's JSON text, in *@text (free() it); -ENOMEM. */
static int status_text(struct zvmmd *d, struct view w, char **text)
{
	struct zvmmd_status s = { .pid = getpid() };
	struct zvmmd_status_pool *pools;
	int ret = 0;

	snprintf(s.version, sizeof(s.version), "%s", ZVMM_VERSION);
	pools = calloc(ZVMMD_NR_POOLS, sizeof(*pools));
	if (!pools)
		return -ENOMEM;
	s.pools.v = pools;
	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < ZVMMD_NR_POOLS && !ret; i++)
		if (d->pools[i].cfg->on)
			ret = status_pool(d, &d->pools[i], &w,
					  &pools[s.pools.nr++]);
	pthread_mutex_unlock(&d->lock);
	if (!ret)
		ret = zvmmd_status_json(&s, text);
	zvmmd_status_free(&s);
	return ret;
}

/*
 * The STATUS_OK reply to @cl, or an ERROR when it cannot be made. The
 * lists are bounded (STATUS_LISTED), and should names long enough and
 * pools many enough still overflow a message, it is made again listing
 * fewer, down to none: the counts always fit.
 */
int status_send(struct zvmmd *d, const struct client *cl)
{
	char buf[ZVMMD_MSG_MAX], *text;
	struct view w = { .uid = cl->uid };
	unsigned int most = STATUS_LISTED;
	int n = -EMSGSIZE, ret;

	for (;;) {
		w.leases = w.quarantined = most;
		ret = status_text(d, w, &text);
		if (ret)
			return send_error(cl->fd, -ret,
					  "zvmmd is out of memory");
		n = zvmmd_build(buf, sizeof(buf), ZVMMD_STATUS_OK, text,
				strlen(text));
		free(text);
		if (n >= 0 || !most)
			break;
		most /= 4;
	}
	if (n < 0)
		return send_error(cl->fd, EMSGSIZE,
				  "the status is too long for one message");
	if (send(cl->fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
		return -errno;
	return 0;
}
