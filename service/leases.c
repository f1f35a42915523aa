// SPDX-License-Identifier: MIT
/*
 * zvmmd's leases: a LEASE served from a pool's filled chunks first, then
 * empty ones, its chunks' fds sent beside the reply; a lease that ends
 * gives its chunks to the quarantine (quarantine.c), which retires them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "zvmmd.h"

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

/*
 * A lease that never reached its client: filled chunks go back to the
 * ready list (no one else saw them), new empty ones are retired.
 */
static void lease_put_back(struct pool *p, struct lease *l)
{
	struct chunk *c, *next;

	for (c = l->chunks; c; c = next) {
		next = c->next;
		p->leased_bytes -= c->bytes;
		if (!c->filled) {
			chunk_retire(p, c);
			continue;
		}
		c->next = p->zero;
		p->zero = c;
		p->zero_bytes += c->bytes;
	}
	l->chunks = NULL;
}

/* A lease that never reached its client, none of it fit to lease again. */
static void lease_retire(struct pool *p, struct lease *l)
{
	struct chunk *c, *next;

	for (c = l->chunks; c; c = next) {
		next = c->next;
		p->leased_bytes -= c->bytes;
		chunk_retire(p, c);
	}
	l->chunks = NULL;
}

/*
 * A member's chunks are its uid's for the lease (mode 0600 kept): a VMM
 * that opens a path to them, as QEMU opens mem-path=/proc/self/fd/N,
 * reopens the file under its owner and mode, and root's 0600 would
 * shut out the lessee it was leased to. No one else gains anything:
 * the mount is 0700 root's, in zvmmd's own mount namespace, so no path
 * reaches a chunk, and /proc/PID/fd of the lessee is the lessee's. A
 * returned chunk is retired, never leased again, whoever owns it. @uid
 * 0 gives a lease that was not sent back to root before its chunks go
 * back to the stock. Needs CAP_CHOWN.
 */
static int lease_give(struct lease *l, uid_t uid)
{
	for (struct chunk *c = l->chunks; c; c = c->next)
		if (fchownat(c->fd, "", uid, (gid_t)-1, AT_EMPTY_PATH))
			return -errno;
	return 0;
}

static void lease_undo(struct zvmmd *d, struct lease *l)
{
	int ret = lease_give(l, 0);

	/* One root cannot take back stays out of the stock. */
	if (ret) {
		pr_warn("lease %u: cannot give its chunks back to root: %s; they are retired",
			l->id, strerror(-ret));
		pthread_mutex_lock(&d->lock);
		lease_retire(l->pool, l);
		pthread_mutex_unlock(&d->lock);
		free(l);
		return;
	}
	pthread_mutex_lock(&d->lock);
	lease_put_back(l->pool, l);
	pthread_mutex_unlock(&d->lock);
	free(l);
}

/*
 * The pool a request of @page_bytes on @node draws from: the one kept on
 * that node; for any node (-1), the one kept on any node, else the one
 * with the most zeroed bytes. NULL when none is configured.
 */
static struct pool *pool_of(struct zvmmd *d, uint64_t page_bytes, int node)
{
	struct pool *any = NULL, *best = NULL;

	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		struct pool *p = &d->pools[i];

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

uint64_t lease_share(const struct zvmmd *d, const struct pool *p)
{
	uint64_t max = p->cfg->max;

	if (d->cfg.user_share_pct)
		return max / 100 * d->cfg.user_share +
		       max % 100 * d->cfg.user_share / 100;
	return d->cfg.user_share < max ? d->cfg.user_share : max;
}

/*
 * Whether @cl's uid may be charged @need more chunks of @p: root always
 * (bounded by max alone), any other uid up to [service] user_share of
 * the pool's max. Each chunk is charged whole, filled or empty, so that
 * many small leases cannot pass for little, and stays charged after its
 * lease until it is retired (a quarantined chunk is still its user's). False: refused, *@ret what
 * sending the ERROR gave.
 */
static bool lease_in_share(struct zvmmd *d, struct client *cl,
			   const struct pool *p, uint64_t need, int *ret)
{
	uint64_t share = lease_share(d, p), chunk = p->cfg->chunk_bytes;
	uint64_t held = cl->user->charged[p - d->pools];
	char a[32], b[32], c[32];

	if (!cl->uid || (need <= share / chunk && held <= share - need * chunk))
		return true;
	*ret = send_error(
		cl->fd, ENOMEM,
		"uid %u holds %s of %s pages (leased, or kept after its leases ended) and this lease would take it past its share, %s ([service] user_share; a lease is charged whole chunks of %s)",
		(unsigned int)cl->uid, size_format(held, a, sizeof(a)),
		p->label, size_format(share, b, sizeof(b)),
		size_format(chunk, c, sizeof(c)));
	return false;
}

/*
 * The pool that serves @req for @cl and how many of its chunks (*@need);
 * NULL when the request is refused, its ERROR sent, *@ret what sending
 * it gave.
 */
static struct pool *lease_pool(struct zvmmd *d, struct client *cl,
			       const struct zvmmd_lease_req *req,
			       uint64_t *need, int *ret)
{
	struct pool *p;
	uint64_t chunk;
	char a[32], b[32];

	pthread_mutex_lock(&d->lock);
	p = pool_of(d, req->page_bytes, req->node);
	pthread_mutex_unlock(&d->lock);
	*ret = 0;
	if (cl->lease)
		*ret = send_error(
			cl->fd, EBUSY,
			"this connection holds lease %u: one lease per connection, open another",
			cl->lease->id);
	else if (!p && req->node >= 0)
		*ret = send_error(
			cl->fd, EINVAL,
			"zvmmd keeps no %s pages on node %d: configure [pages.%s.node%d] in %s",
			size_label(req->page_bytes, a, sizeof(a)), req->node,
			size_label(req->page_bytes, b, sizeof(b)), req->node,
			"zvmmd.conf");
	else if (!p)
		*ret = send_error(
			cl->fd, EINVAL,
			"zvmmd keeps no %s pages: configure [pages.%s] in %s",
			size_label(req->page_bytes, a, sizeof(a)),
			size_label(req->page_bytes, b, sizeof(b)),
			"zvmmd.conf");
	if (cl->lease || !p)
		return NULL;
	chunk = p->cfg->chunk_bytes;
	/* Not (bytes + chunk - 1) / chunk: that wraps near 2^64. */
	*need = req->bytes / chunk + !!(req->bytes % chunk);
	if (*need <= ZVMMD_MAX_CHUNKS)
		return lease_in_share(d, cl, p, *need, ret) ? p : NULL;
	*ret = send_error(cl->fd, EINVAL,
			  "%s is more than %u chunks of %s: ask for less",
			  size_format(req->bytes, a, sizeof(a)),
			  ZVMMD_MAX_CHUNKS, size_format(chunk, b, sizeof(b)));
	return NULL;
}

/*
 * How much of @want bytes of new empty chunks (@chunk each, the last
 * shorter) root's reserve takes in @p: whole chunks, first, while the
 * kernel still holds room for them in root's mount.
 */
static uint64_t lease_in_reserve(const struct pool *p, uint64_t want)
{
	uint64_t chunk = p->cfg->chunk_bytes, page = p->cfg->page_bytes;
	uint64_t room = pool_reserve_left(p), in = 0;

	while (in < want) {
		uint64_t len = want - in < chunk ? want - in : chunk;

		/* A file takes whole pages of its mount. */
		if ((len + page - 1) / page * page > room)
			break;
		room -= (len + page - 1) / page * page;
		in += len;
	}
	return in;
}

/*
 * Whether @p has room now for @want bytes of new empty chunks, with the
 * lock held, @taken bytes of its filled chunks just taken counted held
 * again: 0, -ENOSPC past max, -EDQUOT past the stock's mount (max less
 * root's reserve), -ENOMEM when the kernel lacks the pages. Root's go to
 * its reserve first (*@in_reserve of them: lease_in_reserve()), which
 * the kernel holds for them whatever the books, the free hugepages or
 * the stock's mount say (a member that shrank its chunks made the books
 * count more than the kernel holds, and root was refused); the rest, as
 * any user's, to the stock's mount.
 */
static int lease_room(const struct pool *p, bool root, uint64_t taken,
		      uint64_t want, uint64_t *in_reserve)
{
	uint64_t page = p->cfg->page_bytes, rest;

	*in_reserve = root ? lease_in_reserve(p, want) : 0;
	rest = want - *in_reserve;
	if (!rest)
		return 0;
	if (pool_held_bytes(p) + taken + want > p->cfg->max)
		return -ENOSPC;
	if (p->reserve_cfg && mount_used(p->m.dirfd) + rest > p->m.size)
		return root ? -ENOSPC : -EDQUOT;
	return free_pages(page) < rest / page ? -ENOMEM : 0;
}

/*
 * @need chunks of @p into @l, with the lock held: filled chunks first,
 * then empty ones (the kernel zeroes their pages at the client's first
 * touch, and has promised them: chunk_reserve()) while the pool may hold
 * more and the kernel has the pages.
 * Returns 0, -ENOSPC past the pool's max, -ENOMEM when free hugepages
 * are short, or chunk_create()'s error; @l holds what was taken either
 * way, *@zero_n of its chunks filled.
 */
static int lease_take(struct pool *p, bool root,
		      const struct zvmmd_lease_req *req, uint64_t need,
		      struct lease *l, uint64_t *zero_n)
{
	uint64_t chunk = p->cfg->chunk_bytes, empty_n, want, in_r;
	struct chunk *c, **tail = &l->chunks;
	int ret;

	*zero_n = 0;
	while (l->nr < need && p->zero) {
		c = p->zero;
		p->zero = c->next;
		p->zero_bytes -= c->bytes;
		c->next = NULL;
		*tail = c;
		tail = &c->next;
		l->nr++;
		(*zero_n)++;
	}
	empty_n = need - l->nr;
	want = empty_n ? req->bytes - *zero_n * chunk : 0;
	ret = lease_room(p, root, *zero_n * chunk, want, &in_r);
	while (!ret && l->nr < need) {
		/* The last one only as long as the request still needs. */
		uint64_t len = want < chunk ? want : chunk;

		ret = chunk_create(p, in_r ? &p->r : &p->m, len, &c);
		in_r -= in_r ? len : 0;
		if (ret)
			break;
		ret = chunk_reserve(c);
		if (ret) {
			chunk_retire(p, c);
			break;
		}
		want -= len;
		*tail = c;
		tail = &c->next;
		l->nr++;
	}
	for (c = l->chunks; c; c = c->next)
		l->bytes += c->bytes;
	p->leased_bytes += l->bytes;
	return ret;
}

/*
 * A lease of @p that lease_take() could not make whole, said; @in_use is
 * what the pool held once it was put back, read under the lock (the
 * filler changes the books).
 */
static int lease_refused(struct client *cl, const struct zvmmd_lease_req *req,
			 struct pool *p, uint64_t in_use, int ret)
{
	char a[32], b[32], c[32];

	if (ret == -EDQUOT)
		return send_error(
			cl->fd, ENOMEM,
			"zvmmd keeps %s of its %s of %s pages for root ([service] root_reserve), and %s of the rest is in use: ask for less, or raise max",
			size_format(p->reserve_cfg, a, sizeof(a)),
			size_format(p->cfg->max, b, sizeof(b)), p->label,
			size_format(mount_used(p->m.dirfd), c, sizeof(c)));
	if (ret == -ENOSPC)
		return send_error(
			cl->fd, ENOMEM,
			"zvmmd may hold at most %s of %s pages (that pool's max) and %s of it is in use: ask for less, or raise max",
			size_format(p->cfg->max, a, sizeof(a)), p->label,
			size_format(in_use, b, sizeof(b)));
	return send_error(
		cl->fd, -ret,
		"zvmmd cannot make %s of %s pages: %s (free hugepages short: raise nr_hugepages)",
		size_format(req->bytes, a, sizeof(a)), p->label,
		strerror(-ret));
}

/*
 * A lease of @req for @cl, or an ERROR saying why not. Returns 0 when
 * the reply went out, else the errno of sending it.
 */
static int lease_grant(struct zvmmd *d, struct client *cl, struct pool *p,
		       const struct zvmmd_lease_req *req, uint64_t need)
{
	uint64_t zero_n;
	struct lease *l;
	char a[32];
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return send_error(cl->fd, ENOMEM, "zvmmd is out of memory");
	pthread_mutex_lock(&d->lock);
	pool_account(d, p);
	l->pool = p;
	l->id = ++d->next_lease;
	ret = lease_take(p, !cl->uid, req, need, l, &zero_n);
	if (ret) {
		uint64_t in_use;

		/*
		 * Put back before the lock goes: the filler seeing the stock
		 * taken refilled it, and the stock came back on top (a
		 * refused LEASE left it a chunk past high).
		 */
		lease_put_back(p, l);
		in_use = pool_held_bytes(p);
		pthread_mutex_unlock(&d->lock);
		free(l);
		return lease_refused(cl, req, p, in_use, ret);
	}
	for (struct chunk *c = l->chunks; c; c = c->next)
		c->owner = cl->uid;
	__atomic_store_n(&d->last_lease_ns, (uint64_t)(clock_now() * 1e9),
			 __ATOMIC_RELAXED);
	filler_poke(d);
	pthread_mutex_unlock(&d->lock);
	ret = cl->uid ? lease_give(l, cl->uid) : 0;
	/*
	 * Without CAP_CHOWN (a unit of an older zvmm, a container) the
	 * chunks go as root's, as before: a client that maps its fds is
	 * served; one that reopens a path to them (QEMU) cannot open them.
	 */
	if (ret == -EPERM) {
		static bool said;

		if (!said)
			pr_warn("cannot give leased chunks to their member's uid (no CAP_CHOWN: zvmmd.service's CapabilityBoundingSet): leases go as root's, which a VMM that reopens /proc/self/fd/N cannot open");
		said = true;
		ret = lease_give(l, 0);
	}
	if (ret) {
		pr_warn("lease %u to pid %d: cannot give its chunks to uid %u: %s",
			l->id, (int)cl->pid, (unsigned int)cl->uid,
			strerror(-ret));
		lease_undo(d, l);
		return send_error(cl->fd, -ret,
				  "zvmmd cannot give the chunks to your uid");
	}
	ret = send_lease(cl->fd, l);
	if (ret) {
		pr_warn("lease %u to pid %d: cannot send it: %s", l->id,
			(int)cl->pid, strerror(-ret));
		lease_undo(d, l);
		return ret;
	}
	cl->lease = l;
	for (struct chunk *c = l->chunks; c; c = c->next) {
		c->charge = p->cfg->chunk_bytes;
		c->charged_to = &cl->user->charged[p - d->pools];
		c->charged_chunks = &cl->user->chunks;
		*c->charged_to += c->charge;
		cl->user->chunks++;
	}
	pr_info("lease %u: %s of %s pages to pid %d (%s), uid %u: %llu filled, %llu empty chunks",
		l->id, size_format(l->bytes, a, sizeof(a)), p->label,
		(int)cl->pid, cl->comm, (unsigned int)cl->uid,
		(unsigned long long)zero_n,
		(unsigned long long)(l->nr - zero_n));
	return 0;
}

/*
 * Whether lease_take() would find @p short of room for @req (@need
 * chunks) now, as it weighs: the filled chunks it takes are held
 * already, the empty ones must fit under max and in the free hugepages.
 */
static bool lease_short(struct zvmmd *d, struct pool *p, bool root,
			const struct zvmmd_lease_req *req, uint64_t need)
{
	uint64_t chunk = p->cfg->chunk_bytes, zero_n, want, in_r;
	bool short_of_room;

	pthread_mutex_lock(&d->lock);
	pool_account(d, p);
	zero_n = p->zero_bytes / chunk < need ? p->zero_bytes / chunk : need;
	want = zero_n < need ? req->bytes - zero_n * chunk : 0;
	short_of_room = lease_room(p, root, 0, want, &in_r) != 0;
	pthread_mutex_unlock(&d->lock);
	return short_of_room;
}

/*
 * @req for @cl: refused, or granted; one the pool is short of room for
 * waits for the chunks their holders grew to be cut back (a round of
 * trims out: this one or one before), so that pages grown into are back
 * in the pool before it is weighed. A request that waited is made after
 * that round, whatever has grown since: a holder that grows its chunks
 * again and again delays a LEASE one round at most, and one the pool
 * has room for not at all.
 */
static int lease_ask(struct zvmmd *d, struct client *cl,
		     const struct zvmmd_lease_req *req, bool waited)
{
	struct pool *p;
	uint64_t need;
	int ret;

	p = lease_pool(d, cl, req, &need, &ret);
	if (!p)
		return ret;
	if (!waited && lease_short(d, p, !cl->uid, req, need) &&
	    trims_start(d)) {
		peer_wait(d, cl, req);
		return 0;
	}
	return lease_grant(d, cl, p, req, need);
}

int lease_make(struct zvmmd *d, struct client *cl,
	       const struct zvmmd_lease_req *req)
{
	return lease_ask(d, cl, req, false);
}

/* The requests that waited for a round of trims, made. */
void leases_waiting(struct zvmmd *d)
{
	for (struct client *cl = d->clients; cl; cl = cl->next)
		if (cl->waiting) {
			peer_unwait(d, cl);
			(void)lease_ask(d, cl, &cl->wait_req, true);
		}
}

/* The lease of a client gone: its chunks to the quarantine. */
void lease_end(struct zvmmd *d, struct lease *l)
{
	quarantine_returned(d, l);
	free(l);
}
