// SPDX-License-Identifier: MIT
/*
 * zvmmd's peers: each connection, who made it (SO_PEERCRED, its groups,
 * its pidfd), whether it is served (root or [service] group), its
 * messages, and its end, which ends its lease.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/log.h"
#include "zvmmd.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int send_error(int fd, int err, const char *fmt, ...)
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

static int refuse(const struct zvmmd *d, int fd, uid_t uid)
{
	return send_error(
		fd, EACCES,
		"uid %u is not in group %s: zvmmd leases to root and that group (usermod -aG %s USER)",
		(unsigned int)uid, d->cfg.group, d->cfg.group);
}

/* Root, or a member of [service] group (its primary or another group). */
static bool peer_allowed(const struct zvmmd *d, int fd, const struct ucred *uc)
{
	gid_t few[64], *groups = few;
	socklen_t len = sizeof(few);
	bool ok = false;
	int ret;

	if (uc->uid == 0)
		return true;
	if (d->gid == (gid_t)-1)
		return false;
	if (uc->gid == d->gid)
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
		ok |= groups[i] == d->gid;
	if (groups != few)
		free(groups);
	return ok;
}

/*
 * The command name of @pid, for the log and the status; "?" unknown.
 * Read by pid, then the pidfd asked whether that process still lives:
 * if it does, the pid was its all along (a pid is not reused while its
 * process lives, even as a zombie), and the name is not another's that
 * took the number since.
 */
static void peer_comm(pid_t pid, int pidfd, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0))
		snprintf(comm, len, "?");
}

/* @uid's accounting, made at its first connection; NULL: no memory. */
static struct peer_user *user_get(struct zvmmd *d, uid_t uid)
{
	struct peer_user *u;

	for (u = d->users; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = d->users;
	d->users = u;
	return u;
}

/*
 * Users with no connection and no chunk charged to them freed (@all:
 * every one, at exit, when no chunk is left).
 */
void peers_users_sweep(struct zvmmd *d, bool all)
{
	struct peer_user **pp = &d->users, *u;

	while ((u = *pp)) {
		if (all || (!u->connections && !u->chunks)) {
			*pp = u->next;
			free(u);
			continue;
		}
		pp = &u->next;
	}
}

/*
 * A connection of @u's gone: @u freed with its last, unless chunks of
 * its ended leases are still charged to it (peers_users_sweep() then).
 */
static void user_put(struct zvmmd *d, struct peer_user *u)
{
	struct peer_user **pp;

	if (--u->connections || u->chunks)
		return;
	for (pp = &d->users; *pp && *pp != u; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = u->next;
	free(u);
}

/*
 * Whether @u, not root, may open one more connection: at most [service]
 * user_connections each, and all of theirs together leave ROOT_RESERVE
 * for root. Refused: told (EUSERS), and logged at most once a second.
 */
static bool user_admitted(struct zvmmd *d, int fd, const struct peer_user *u)
{
	bool all = d->nr_members >= MAX_CLIENTS - ROOT_RESERVE;
	double now = clock_now();

	if (!u->uid || (!all && u->connections < d->cfg.user_connections))
		return true;
	if (all)
		(void)!send_error(
			fd, EUSERS,
			"zvmmd's connections for users other than root are all in use (%u): try again once one closes",
			MAX_CLIENTS - ROOT_RESERVE);
	else
		(void)!send_error(
			fd, EUSERS,
			"uid %u has %u connections open, the most one user may ([service] user_connections): close one",
			(unsigned int)u->uid, u->connections);
	if (now - d->users_logged < 1.0) {
		d->users_unlogged++;
		return false;
	}
	pr_warn("refused a connection of uid %u: %s (%u more refused since the last such line)",
		(unsigned int)u->uid,
		all ? "the connections for users other than root are in use" :
		      "it has [service] user_connections open",
		d->users_unlogged);
	d->users_logged = now;
	d->users_unlogged = 0;
	return false;
}

/*
 * @cl watched: its socket, and its process, so that the client's exit
 * ends its lease even if a child of a fork() keeps the socket open.
 * SO_PEERPIDFD (Linux 6.5) names the very process that connected, even
 * one gone by now; pidfd_open() of its pid could name another that took
 * the number since.
 */
static void peer_watch(struct zvmmd *d, struct client *cl)
{
	struct epoll_event ev = { .events = EPOLLIN };
	socklen_t len = sizeof(cl->pidfd);

	if (getsockopt(cl->fd, SOL_SOCKET, SO_PEERPIDFD, &cl->pidfd, &len))
		cl->pidfd = (int)syscall(SYS_pidfd_open, cl->pid, 0);
	ev.data.ptr = &cl->sock_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, cl->fd, &ev);
	if (cl->pidfd >= 0) {
		ev.data.ptr = &cl->pid_ev;
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, cl->pidfd, &ev);
	}
}

/*
 * A peer outside the group: told why, and kept (its every message
 * refused) while fewer than MAX_REFUSED are. False: closed at once.
 */
static bool peer_refused(struct zvmmd *d, int fd, const struct ucred *uc)
{
	(void)!refuse(d, fd, uc->uid);
	pr_warn("refused pid %d, uid %u: not in group %s", (int)uc->pid,
		(unsigned int)uc->uid, d->cfg.group);
	if (d->nr_refused >= MAX_REFUSED)
		return false;
	d->nr_refused++;
	return true;
}

/*
 * @cl's uid accounted, when it may have one more connection; false:
 * refused and told why.
 */
static bool peer_account(struct zvmmd *d, struct client *cl, uid_t uid)
{
	struct peer_user *u = user_get(d, uid);

	if (!u) {
		(void)!send_error(cl->fd, ENOMEM, "zvmmd is out of memory");
		return false;
	}
	if (!user_admitted(d, cl->fd, u)) {
		/* Its first connection refused: nothing to keep. */
		u->connections++;
		user_put(d, u);
		return false;
	}
	u->connections++;
	d->nr_members += uid != 0;
	cl->user = u;
	return true;
}

/* A connection accepted on @fd: its peer checked, then served. */
void peer_new(struct zvmmd *d, int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct client *cl;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len)) {
		close(fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->fd = fd;
	if (!peer_account(d, cl, uc.uid)) {
		free(cl);
		close(fd);
		return;
	}
	if (!peer_allowed(d, fd, &uc)) {
		cl->refused = true;
		if (!peer_refused(d, fd, &uc)) {
			d->nr_members--;
			user_put(d, cl->user);
			free(cl);
			close(fd);
			return;
		}
	}
	cl->sock_ev = (struct ev){ EV_CLIENT, cl };
	cl->pid_ev = (struct ev){ EV_PIDFD, cl };
	cl->since = clock_now();
	cl->pid = uc.pid;
	cl->uid = uc.uid;
	peer_watch(d, cl);
	peer_comm(uc.pid, cl->pidfd, cl->comm, sizeof(cl->comm));
	cl->next = d->clients;
	d->clients = cl;
	d->nr_clients++;
}

/* A message that parsed, answered. */
static void peer_request(struct zvmmd *d, struct client *cl,
			 const struct zvmmd_msg *m)
{
	switch (m->type) {
	case ZVMMD_LEASE:
		(void)!lease_make(d, cl, &m->req);
		break;
	case ZVMMD_STATUS:
		(void)!status_send(d, cl);
		break;
	default:
		(void)!send_error(
			cl->fd, EPROTO,
			"message type 0x%x is zvmmd's, not a client's",
			m->type);
	}
}

/* One message from @cl; false when the client is gone or misbehaved. */
bool peer_read(struct zvmmd *d, struct client *cl)
{
	char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	ssize_t n;
	int ret;

	n = recv(cl->fd, buf, sizeof(buf), MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	/*
	 * No message keeps a connection open: only a lease does. A STATUS
	 * every few seconds would otherwise pin a connection for ever.
	 */
	if (n < 0)
		return true;
	if ((size_t)n > sizeof(buf)) {
		(void)!send_error(cl->fd, EMSGSIZE,
				  "a message of %zd bytes: at most %d", n,
				  ZVMMD_MSG_MAX);
		return true;
	}
	if (cl->refused) {
		(void)!refuse(d, cl->fd, cl->uid);
		return true;
	}
	ret = zvmmd_parse(buf, (size_t)n, &m);
	if (ret) {
		(void)!send_error(
			cl->fd, -ret,
			"malformed message: %s (docs/zvmmd-protocol.md, version %d)",
			strerror(-ret), ZVMMD_VERSION);
		pr_warn("pid %d (%s) sent a malformed message: %s",
			(int)cl->pid, cl->comm, strerror(-ret));
		return true;
	}
	peer_request(d, cl, &m);
	return true;
}

void peer_drop(struct zvmmd *d, struct client *cl)
{
	struct client **pp;

	for (pp = &d->clients; *pp && *pp != cl; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = cl->next;
	if (cl->refused)
		d->nr_refused--;
	d->nr_clients--;
	d->nr_members -= cl->uid != 0;
	if (cl->lease) {
		pr_info("lease %u of pid %d (%s) ended", cl->lease->id,
			(int)cl->pid, cl->comm);
		/* Its chunks stay charged until they are retired. */
		lease_end(d, cl->lease);
	}
	user_put(d, cl->user);
	/*
	 * The pidfd goes before the socket: once a client can see its
	 * connection gone (/proc/net/unix), nothing of it is left open.
	 */
	if (cl->pidfd >= 0) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, cl->pidfd, NULL);
		close(cl->pidfd);
	}
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	free(cl);
	listener_resume(d);
}

void peers_drop_all(struct zvmmd *d)
{
	while (d->clients)
		peer_drop(d, d->clients);
}

/* A client dropped: its other events in this batch are stale. */
void peers_forget(struct epoll_event *evs, int from, int n,
		  const struct client *cl)
{
	for (int k = from; k < n; k++) {
		struct ev *e = evs[k].data.ptr;

		if (e && (e == &cl->sock_ev || e == &cl->pid_ev))
			evs[k].data.ptr = NULL;
	}
}

/*
 * @cl's LEASE @req waits for a round of trims (lease_ask()): nothing
 * more is read from it meanwhile, so that its replies come in the order
 * it asked (docs/zvmmd-protocol.md); a hang-up is still seen.
 */
void peer_wait(struct zvmmd *d, struct client *cl,
	       const struct zvmmd_lease_req *req)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &cl->sock_ev };

	cl->waiting = true;
	cl->wait_req = *req;
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, cl->fd, &ev);
}

/* @cl's wait is over: read from again. */
void peer_unwait(struct zvmmd *d, struct client *cl)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &cl->sock_ev };

	cl->waiting = false;
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, cl->fd, &ev);
}

/*
 * Connections that hold no lease and wait for none, open [service] idle
 * seconds.
 */
void peers_sweep_idle(struct zvmmd *d, struct epoll_event *evs, int from, int n)
{
	double now = clock_now();
	struct client *cl = d->clients, *next;

	for (; cl; cl = next) {
		next = cl->next;
		if (cl->lease || cl->waiting || now - cl->since < d->cfg.idle_s)
			continue;
		peers_forget(evs, from, n, cl);
		peer_drop(d, cl);
	}
	/* Descriptors short for another reason (ENFILE): try again. */
	listener_resume(d);
}
