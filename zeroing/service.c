// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "service.h"

/* How long zvmmd has to answer: it answers at once, from memory. */
#define ANSWER_SECONDS 10

/*
 * Whoever listens at the socket path is not trusted for being there: a
 * path in a directory another user can write could be theirs, and so
 * could the "zeroed" chunks it sends, mapped by them still. So the
 * listener must be root or this process's own user (zvmmd needs root),
 * and every chunk a file zvmmd makes: a hugetlbfs file of this page size
 * and its stated length, owned by the listener and reachable by no one
 * else, each chunk a file of its own, and a filled chunk's every page
 * allocated (an empty one none).
 */
static int check_peer(int sock, uid_t *uid)
{
	struct ucred uc = { .uid = (uid_t)-1 };
	socklen_t n = sizeof(uc);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &n))
		return -errno;
	*uid = uc.uid;
	return uc.uid == 0 || uc.uid == geteuid() ? 0 : -EPERM;
}

static const char *check_chunk(const struct zero_lease *l, unsigned int i,
			       uint64_t page_bytes, uid_t owner)
{
	const struct zvmmd_chunk_ent *e = &l->ent[i];
	struct statfs sfs;
	struct stat st, o;
	int fl;

	if (fstat(l->fd[i], &st) || fstatfs(l->fd[i], &sfs))
		return "cannot be examined";
	if (!S_ISREG(st.st_mode) || sfs.f_type != HUGETLBFS_MAGIC ||
	    (uint64_t)sfs.f_bsize != page_bytes)
		return "is not a hugetlbfs file of the lease's page size";
	if ((uint64_t)st.st_size != e->bytes)
		return "is not as long as the lease says";
	if (st.st_uid != owner || (st.st_mode & 077))
		return "is not the daemon's alone (owner, or mode past 0600)";
	fl = fcntl(l->fd[i], F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
		return "is not open for reading and writing";
	if (e->state == ZVMMD_CHUNK_ZERO &&
	    (uint64_t)st.st_blocks * 512 != e->bytes)
		return "is said to be filled but does not hold every page";
	if (e->state != ZVMMD_CHUNK_ZERO && st.st_blocks)
		return "is said to be empty but holds pages";
	for (unsigned int k = 0; k < i; k++)
		if (!fstat(l->fd[k], &o) && o.st_dev == st.st_dev &&
		    o.st_ino == st.st_ino)
			return "is another chunk of the lease again";
	return NULL;
}

int zero_service_lease(const char *path, uint64_t bytes, uint64_t page_bytes,
		       struct zero_lease *l, char *err, size_t len)
{
	struct timeval tv = { .tv_sec = ANSWER_SECONDS };
	const char *why;
	uid_t owner = (uid_t)-1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct zvmmd_lease_req req = { .bytes = bytes,
				       .page_bytes = page_bytes,
				       .node = -1 };
	static __thread char buf[ZVMMD_MSG_MAX];
	union {
		char raw[CMSG_SPACE(sizeof(int) * ZVMMD_MAX_CHUNKS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw,
			     .msg_controllen = sizeof(u.raw) };
	struct cmsghdr *cm;
	struct zvmmd_msg m;
	unsigned int nfd = 0;
	ssize_t n;
	int ret;

	memset(l, 0, sizeof(*l));
	l->sock = -1;
	if (!path)
		path = ZERO_SERVICE_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, len, "zvmmd socket %s: too long a path", path);
		return -EINVAL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	l->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (l->sock < 0 ||
	    connect(l->sock, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		snprintf(
			err, len, "cannot reach zvmmd at %s: %s: %s", path,
			strerror(-ret),
			ret == -EACCES ?
				"join its group (usermod -aG zvmm USER)" :
				"start it (systemctl start zvmmd.socket), or use a pool of this launch's own");
		zero_service_release(l);
		return ret == -EACCES ? ret : -ENOENT;
	}
	ret = check_peer(l->sock, &owner);
	if (ret) {
		snprintf(
			err, len,
			"%s is not zvmmd's: it is served by uid %u, not root: refused (a socket in a directory others can write may be anyone's)",
			path, (unsigned int)owner);
		zero_service_release(l);
		return -EPERM;
	}
	setsockopt(l->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_LEASE, &req, sizeof(req));
	if (n < 0 || send(l->sock, buf, (size_t)n, MSG_NOSIGNAL) != n) {
		ret = n < 0 ? (int)n : -errno;
		goto proto;
	}
	n = recvmsg(l->sock, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		ret = n < 0 ? -errno : -EPIPE;
		if (ret == -EAGAIN)
			ret = -ETIMEDOUT;
		goto proto;
	}
	/* Every fd that came is ours to close, whatever else is wrong. */
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned int k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (unsigned int i = 0; i < k && nfd < ZVMMD_MAX_CHUNKS; i++)
			memcpy(&l->fd[nfd++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	l->nr = nfd;
	ret = zvmmd_parse(buf, (size_t)n, &m);
	if (ret)
		goto proto;
	if (m.type == ZVMMD_ERROR) {
		snprintf(err, len, "zvmmd: %s", m.error.msg);
		zero_service_release(l);
		return -m.error.err;
	}
	ret = -EPROTO;
	if (m.type != ZVMMD_LEASE_OK || m.rep.nr_chunks != nfd ||
	    (mh.msg_flags & MSG_CTRUNC) || m.rep.page_bytes != page_bytes)
		goto proto;
	for (unsigned int i = 0; i < nfd; i++)
		if (zvmmd_chunk_at(&m, i, &l->ent[i]))
			goto proto;
	for (unsigned int i = 0; i < nfd; i++) {
		why = check_chunk(l, i, page_bytes, owner);
		if (why) {
			snprintf(
				err, len,
				"zvmmd at %s leased chunk %u that %s: refused, nothing of it is used",
				path, i, why);
			zero_service_release(l);
			return -EPROTO;
		}
	}
	l->zero_bytes = m.rep.zero_bytes;
	l->empty_bytes = m.rep.empty_bytes;
	return 0;
proto:
	snprintf(err, len, "zvmmd at %s answered no lease: %s", path,
		 strerror(-ret));
	zero_service_release(l);
	return ret;
}

void zero_service_release(struct zero_lease *l)
{
	for (unsigned int i = 0; i < l->nr; i++)
		if (l->fd[i] >= 0)
			close(l->fd[i]);
	l->nr = 0;
	if (l->sock >= 0)
		close(l->sock);
	l->sock = -1;
}
