// SPDX-License-Identifier: MIT
/*
 * What systemd hands zvmmd at start and keeps for it across a restart:
 * the socket zvmmd.socket bound, and in the unit's file descriptor store
 * (FileDescriptorStoreMax=) the root of each pool's mount that tenants
 * still held pages in when zvmmd stopped. The unit's mounts live in its
 * own mount namespace and end with it, so without the store the next
 * zvmmd could not find the pages an old mount still counts, and would
 * mount a new one sized to max beside them (docs/DESIGN.md, "One mount a
 * pool, across restarts").
 *
 * The protocol is systemd's, stable and documented in sd_notify(3) and
 * sd_listen_fds(3): LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES at start,
 * fds from 3 on; a datagram "FDSTORE=1\nFDNAME=NAME" with the fd in
 * SCM_RIGHTS to $NOTIFY_SOCKET to store one, "FDSTOREREMOVE=1\nFDNAME=
 * NAME" to drop it. Spoken here, as it is a few lines, so that zvmmd
 * links nothing more than it needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../lib/log.h"
#include "zvmmd.h"

#define SD_LISTEN_FDS_START 3
#define POOL_PREFIX "zvmmd-pool-"

/* LISTEN_FDNAMES's @i-th name (colon-separated) into @out, or "". */
static void fd_name(const char *names, int i, char *out, size_t len)
{
	const char *s = names, *e;

	out[0] = '\0';
	for (; s && i > 0; i--) {
		s = strchr(s, ':');
		s = s ? s + 1 : NULL;
	}
	if (!s)
		return;
	e = strchr(s, ':');
	snprintf(out, len, "%.*s", (int)(e ? (size_t)(e - s) : strlen(s)), s);
}

void fdstore_take(struct zvmmd *d)
{
	const char *lp = getenv("LISTEN_PID"), *lf = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES");
	int n = lf ? atoi(lf) : 0;
	char name[64];

	d->passed_socket = -1;
	for (int k = 0; k < ZVMMD_NR_STORED; k++)
		d->stored[k].fd = -1;
	if (!lp || atol(lp) != (long)getpid() || n <= 0)
		return;
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i, k;

		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fd_name(names, i, name, sizeof(name));
		if (!strncmp(name, POOL_PREFIX, strlen(POOL_PREFIX)) &&
		    strlen(name + strlen(POOL_PREFIX)) <
			    sizeof(d->stored[0].label)) {
			for (k = 0; k < ZVMMD_NR_STORED && d->stored[k].fd >= 0;
			     k++)
				;
			if (k < ZVMMD_NR_STORED) {
				d->stored[k].fd = fd;
				memcpy(d->stored[k].label,
				       name + strlen(POOL_PREFIX),
				       strlen(name + strlen(POOL_PREFIX)) + 1);
				continue;
			}
		} else if (d->passed_socket < 0) {
			/* zvmmd.socket's, checked by listener_open(). */
			d->passed_socket = fd;
			continue;
		}
		pr_warn("systemd passed fd %d (%s), which zvmmd does not know: closed",
			fd, name[0] ? name : "no name");
		close(fd);
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

/* The stored mount root for pool @label, taken out of @d; -1: none. */
int fdstore_pool(struct zvmmd *d, const char *label)
{
	for (int k = 0; k < ZVMMD_NR_STORED; k++)
		if (d->stored[k].fd >= 0 &&
		    !strcmp(d->stored[k].label, label)) {
			int fd = d->stored[k].fd;

			d->stored[k].fd = -1;
			return fd;
		}
	return -1;
}

/* Stored fds no pool took (a pool no longer configured): closed. */
void fdstore_close_rest(struct zvmmd *d)
{
	for (int k = 0; k < ZVMMD_NR_STORED; k++)
		if (d->stored[k].fd >= 0) {
			pr_info("systemd kept a mount for pool %s, which zvmmd.conf no longer has: let go",
				d->stored[k].label);
			fdstore_send(d->stored[k].label, -1);
			close(d->stored[k].fd);
			d->stored[k].fd = -1;
		}
}

int fdstore_send(const char *label, int fd)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		char raw[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char text[128];
	struct iovec iov = { text, 0 };
	struct msghdr mh = { .msg_name = &sa,
			     .msg_iov = &iov,
			     .msg_iovlen = 1 };
	socklen_t salen;
	int s, ret = 0;

	if (!path || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return -ENOTCONN;
	memcpy(sa.sun_path, path, strlen(path));
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			    strlen(path) + (path[0] == '/'));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	mh.msg_namelen = salen;
	iov.iov_len = (size_t)snprintf(
		text, sizeof(text), "%s\nFDNAME=" POOL_PREFIX "%s",
		fd >= 0 ? "FDSTORE=1" : "FDSTOREREMOVE=1", label);
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(u.raw, 0, sizeof(u.raw));
		mh.msg_control = u.raw;
		mh.msg_controllen = sizeof(u.raw);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
		ret = -errno;
	close(s);
	return ret;
}
