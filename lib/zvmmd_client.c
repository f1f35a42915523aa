// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "zvmmd_client.h"

/* How long zvmmd has to answer: it answers at once, from memory. */
#define ANSWER_SECONDS 10

/* A reply, per thread: a caller's stack may be small. */
static __thread char reply[ZVMMD_MSG_MAX];

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

/*
 * A connection to zvmmd at @path whose listener passed check_peer(): the
 * socket, or -errno with @err saying why, @remedy what to do when no one
 * listens there. *@owner: the listener's uid.
 */
static int client_connect(const char *path, const char *remedy, uid_t *owner,
			  char *err, size_t len)
{
	struct timeval tv = { .tv_sec = ANSWER_SECONDS };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	*owner = (uid_t)-1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, len, "zvmmd socket %s: too long a path", path);
		return -EINVAL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		snprintf(err, len, "cannot reach zvmmd at %s: %s: %s", path,
			 strerror(-ret),
			 ret == -EACCES ?
				 "join its group (usermod -aG zvmm USER)" :
				 remedy);
		if (fd >= 0)
			close(fd);
		return ret == -EACCES ? ret : -ENOENT;
	}
	if (check_peer(fd, owner)) {
		snprintf(
			err, len,
			"%s is not zvmmd's: it is served by uid %u, not root: refused (a socket in a directory others can write may be anyone's)",
			path, (unsigned int)*owner);
		close(fd);
		return -EPERM;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends a request of @type and @body; 0 or -errno. */
static int request(int sock, uint16_t type, const void *body, size_t len)
{
	char buf[64];
	int n = zvmmd_build(buf, sizeof(buf), type, body, len);

	if (n < 0)
		return n;
	return send(sock, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -errno;
}

/* A reply's length, or -errno: -ETIMEDOUT, -EPIPE when zvmmd closed. */
static ssize_t reply_len(ssize_t n)
{
	if (n > 0)
		return n;
	if (!n)
		return -EPIPE;
	return errno == EAGAIN ? -ETIMEDOUT : -errno;
}

/*
 * A LEASE_OK or ERROR into reply[], its fds into @l (every fd that came
 * is @l's to close, whatever else is wrong). Its length, or -errno;
 * *@ctrunc: fds were cut off.
 */
static ssize_t recv_lease(int sock, struct zvmmd_lease *l, bool *ctrunc)
{
	union {
		char raw[CMSG_SPACE(sizeof(int) * ZVMMD_MAX_CHUNKS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { reply, sizeof(reply) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw,
			     .msg_controllen = sizeof(u.raw) };
	struct cmsghdr *cm;
	ssize_t n;

	n = reply_len(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC));
	if (n < 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned int k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (unsigned int i = 0; i < k && l->nr < ZVMMD_MAX_CHUNKS; i++)
			memcpy(&l->fd[l->nr++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	*ctrunc = mh.msg_flags & MSG_CTRUNC;
	return n;
}

static const char *check_chunk(const struct zvmmd_lease *l, unsigned int i,
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
	/* zvmmd gives a member's lease to the member's uid (zvmmd(8)). */
	if ((st.st_uid != owner && st.st_uid != geteuid()) ||
	    (st.st_mode & 077))
		return "is not the daemon's and this user's alone (owner, or mode past 0600)";
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

/*
 * A reply with no fds into reply[] (recvmsg() as for a lease: the same
 * system call whatever is asked); its length or -errno.
 */
static ssize_t recv_status(int sock)
{
	struct iovec iov = { reply, sizeof(reply) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	return reply_len(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC));
}

/*
 * A parsed LEASE_OK against the fds that came with it: entries, page
 * size and fds agree, and each chunk is a file zvmmd makes. 0, or
 * -EPROTO with @err saying what is wrong.
 */
static int check_lease(const char *path, const struct zvmmd_msg *m, bool ctrunc,
		       uint64_t page_bytes, uid_t owner, struct zvmmd_lease *l,
		       char *err, size_t len)
{
	const char *why;
	bool ok = m->type == ZVMMD_LEASE_OK && m->rep.nr_chunks == l->nr &&
		  !ctrunc && m->rep.page_bytes == page_bytes;

	for (unsigned int i = 0; ok && i < l->nr; i++)
		ok = !zvmmd_chunk_at(m, i, &l->ent[i]);
	if (!ok) {
		snprintf(err, len, "zvmmd at %s answered no lease: %s", path,
			 strerror(EPROTO));
		return -EPROTO;
	}
	for (unsigned int i = 0; i < l->nr; i++) {
		why = check_chunk(l, i, page_bytes, owner);
		if (why) {
			snprintf(
				err, len,
				"zvmmd at %s leased chunk %u that %s: refused, nothing of it is used",
				path, i, why);
			return -EPROTO;
		}
	}
	l->zero_bytes = m->rep.zero_bytes;
	l->empty_bytes = m->rep.empty_bytes;
	return 0;
}

int zvmmd_client_lease(const char *path, uint64_t bytes, uint64_t page_bytes,
		       struct zvmmd_lease *l, char *err, size_t len)
{
	struct zvmmd_lease_req req = { .bytes = bytes,
				       .page_bytes = page_bytes,
				       .node = -1 };
	bool ctrunc = false;
	struct zvmmd_msg m;
	uid_t owner;
	ssize_t n;
	int ret;

	memset(l, 0, sizeof(*l));
	l->sock = -1;
	if (!path)
		path = ZVMMD_DEFAULT_SOCKET;
	ret = client_connect(
		path,
		"start it (systemctl start zvmmd.socket), or use a pool of this launch's own",
		&owner, err, len);
	if (ret < 0)
		return ret;
	l->sock = ret;
	ret = request(l->sock, ZVMMD_LEASE, &req, sizeof(req));
	n = ret ? ret : recv_lease(l->sock, l, &ctrunc);
	ret = n < 0 ? (int)n : zvmmd_parse(reply, (size_t)n, &m);
	if (!ret && m.type == ZVMMD_ERROR) {
		snprintf(err, len, "zvmmd: %s", m.error.msg);
		ret = -m.error.err;
	} else if (!ret) {
		ret = check_lease(path, &m, ctrunc, page_bytes, owner, l, err,
				  len);
	} else {
		snprintf(err, len, "zvmmd at %s answered no lease: %s", path,
			 strerror(-ret));
	}
	if (ret)
		zvmmd_client_release(l);
	return ret;
}

void zvmmd_client_release(struct zvmmd_lease *l)
{
	for (unsigned int i = 0; i < l->nr; i++)
		if (l->fd[i] >= 0)
			close(l->fd[i]);
	l->nr = 0;
	if (l->sock >= 0)
		close(l->sock);
	l->sock = -1;
}

int zvmmd_client_status(const char *path, char *out, size_t out_len, char *err,
			size_t len)
{
	struct zvmmd_msg m;
	uid_t owner;
	ssize_t n;
	int sock, ret;

	if (!path)
		path = ZVMMD_DEFAULT_SOCKET;
	sock = client_connect(path,
			      "is it running? systemctl start zvmmd.socket",
			      &owner, err, len);
	if (sock < 0)
		return sock;
	ret = request(sock, ZVMMD_STATUS, NULL, 0);
	n = ret ? ret : recv_status(sock);
	close(sock);
	if (n < 0) {
		snprintf(err, len, "zvmmd at %s did not answer: %s", path,
			 strerror((int)-n));
		return (int)n;
	}
	ret = zvmmd_parse(reply, (size_t)n, &m);
	if (!ret && m.type == ZVMMD_ERROR) {
		snprintf(err, len, "zvmmd: %s", m.error.msg);
		return -m.error.err;
	}
	if (ret || m.type != ZVMMD_STATUS_OK) {
		snprintf(err, len, "zvmmd at %s sent no status: %s", path,
			 ret ? strerror(-ret) : "another message");
		return -EPROTO;
	}
	snprintf(out, out_len, "%.*s", (int)m.len, (const char *)m.body);
	return 0;
}
