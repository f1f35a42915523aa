// SPDX-License-Identifier: MIT
/*
 * zvmmd's listening socket, [service] socket: bound here 0660
 * root:[service] group, or passed by systemd (zvmmd.socket); accepting
 * pauses while descriptors are short.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../lib/log.h"
#include "zvmmd.h"

/* systemd's socket activation: zvmmd.socket made and bound it. */
bool listener_activated(const struct zvmmd *d)
{
	return d->passed_socket >= 0;
}

/* A live zvmmd at [service] socket: connecting succeeds. */
bool listener_taken(const struct zvmmd *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->cfg.socket);
	live = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return live;
}

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83 /* Linux 6.16, include/uapi/asm-generic/socket.h */
#endif

/*
 * No peer may send zvmmd a file: with SO_PASSRIGHTS off its sendmsg()
 * with SCM_RIGHTS fails (EPERM). A file sent would be closed by zvmmd,
 * and the last close of a file runs its release, which may wait as
 * long as its sender chose (a TCP socket's SO_LINGER with unsent data
 * stalled the event loop, and SIGTERM read there, for as long). Set on
 * the listener, whose new connections inherit it, and on each accepted
 * one (systemd's socket may have queued connections before). A kernel
 * without it cannot refuse files: said once, at start.
 */
static int listener_refuse_files(int fd, bool say)
{
	int off = 0;

	if (!setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)))
		return 0;
	if (say)
		pr_warn("this kernel cannot refuse files sent to zvmmd's socket (SO_PASSRIGHTS, Linux 6.16): a peer can make the event loop close a file whose release waits (docs/DESIGN.md, zvmmd)");
	return -errno;
}

/* The socket systemd passed, checked to be the kind clients expect. */
static int listener_passed(struct zvmmd *d)
{
	int type = 0;
	socklen_t len = sizeof(type);

	d->listen_fd = d->passed_socket;
	d->passed_socket = -1;
	if (getsockopt(d->listen_fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    type != SOCK_SEQPACKET) {
		pr_err("the socket systemd passed is not SOCK_SEQPACKET: ListenSequentialPacket= in zvmmd.socket");
		return -EINVAL;
	}
	fcntl(d->listen_fd, F_SETFD, FD_CLOEXEC);
	fcntl(d->listen_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * The socket's directory, made and checked as zvmmd's own, and a stale
 * socket of an earlier zvmmd there removed, never anything else.
 */
static int listener_clear(const struct zvmmd *d)
{
	char dir[sizeof(d->cfg.socket)], *slash;
	struct stat st;
	int fd;

	snprintf(dir, sizeof(dir), "%s", d->cfg.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		fd = zvmmd_dir_open(dir, 0755, "[service] socket's directory");
		if (fd < 0)
			return fd;
		close(fd);
	}
	if (!lstat(d->cfg.socket, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			pr_err("%s exists and is not a socket: remove it, or set [service] socket",
			       d->cfg.socket);
			return -EEXIST;
		}
		unlink(d->cfg.socket);
	}
	return 0;
}

/* [service] socket bound here, 0660 root:[service] group, listening. */
static int listener_bind(struct zvmmd *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct group *gr;
	mode_t mask;
	int ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->cfg.socket);
	ret = listener_clear(d);
	if (ret)
		return ret;
	d->listen_fd = socket(AF_UNIX,
			      SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->listen_fd < 0)
		return -errno;
	/* 0660 from the start, never a moment more open. */
	mask = umask(0117);
	ret = bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(mask);
	if (ret)
		return -errno;
	d->bound = true;
	gr = getgrnam(d->cfg.group);
	if (fchownat(AT_FDCWD, d->cfg.socket, 0, gr ? gr->gr_gid : 0,
		     AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (listen(d->listen_fd, 64))
		return -errno;
	return 0;
}

int listener_open(struct zvmmd *d)
{
	int ret = listener_activated(d) ? listener_passed(d) : listener_bind(d);

	if (!ret)
		(void)listener_refuse_files(d->listen_fd, true);
	return ret;
}

void listener_close(struct zvmmd *d)
{
	if (d->bound)
		unlink(d->cfg.socket);
	d->bound = false;
}

void listener_pause(struct zvmmd *d, const char *why)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &d->listen_ev };

	if (d->listen_paused)
		return;
	d->listen_paused = true;
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->listen_fd, &ev);
	pr_warn("cannot accept a connection: %s; accepting again once one closes (%u open; raise LimitNOFILE)",
		why, d->nr_clients);
}

void listener_resume(struct zvmmd *d)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.ptr = &d->listen_ev };

	if (!d->listen_paused)
		return;
	d->listen_paused = false;
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->listen_fd, &ev);
}

/* A connection, unless there are MAX_CLIENTS already or no descriptor. */
void listener_accept(struct zvmmd *d)
{
	int fd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			listener_pause(d, strerror(errno));
		return;
	}
	(void)listener_refuse_files(fd, false);
	if (d->nr_clients >= MAX_CLIENTS) {
		(void)!send_error(
			fd, EUSERS,
			"zvmmd serves %u connections at most and has them: try again once one closes",
			MAX_CLIENTS);
		close(fd);
		return;
	}
	peer_new(d, fd);
}
