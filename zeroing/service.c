// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "service.h"

int zero_service_lease(const char *path, uint64_t bytes, uint64_t page_bytes,
		       struct zero_lease *l, char *err, size_t len)
{
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
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_LEASE, &req, sizeof(req));
	if (n < 0 || send(l->sock, buf, (size_t)n, MSG_NOSIGNAL) != n) {
		ret = n < 0 ? (int)n : -errno;
		goto proto;
	}
	n = recvmsg(l->sock, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		ret = n < 0 ? -errno : -EPIPE;
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
