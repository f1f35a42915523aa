// SPDX-License-Identifier: MIT
/*
 * libzvmm as zvmmd's client, against a daemon that lies: whatever
 * listens at the socket path hands out the chunks a guest boots on, so
 * the client takes them only from root (or its own user) and only as
 * files zvmmd makes (lib/zvmmd_client.c). The fake daemon here is
 * honest first, so that each refusal is the check's, not the fake's.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../lib/zvmmd_client.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char dir[48], sock[96];

static void setup(void)
{
	test_need_root("a listener of another uid");
	test_reserve_or_skip(SZ_2M, 8, &resv);
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-client.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
}

static void teardown(void)
{
	unlink(sock);
	rmdir(dir);
	zero_hugetlb_release(&resv);
}

TestSuite(service_client, .init = setup, .fini = teardown, .timeout = 60);

/* What the fake daemon leases: these fds, said to be these chunks. */
struct fake {
	int lfd;
	unsigned int nr;
	int fd[4];
	struct zvmmd_chunk_ent ent[4];
};

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	size_t body = sizeof(struct zvmmd_lease_rep) +
		      f->nr * sizeof(struct zvmmd_chunk_ent);
	struct zvmmd_lease_rep rep = { .lease_id = 1,
				       .nr_chunks = f->nr,
				       .page_bytes = SZ_2M };
	char buf[ZVMMD_MSG_MAX], req[256];
	union {
		char raw[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw,
			     .msg_controllen =
				     CMSG_SPACE(sizeof(int) * f->nr) };
	struct cmsghdr *cm;
	int c, n;

	c = accept(f->lfd, NULL, NULL);
	if (c < 0)
		return NULL;
	if (recv(c, req, sizeof(req), 0) <= 0)
		goto out;
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_LEASE_OK, NULL, body);
	if (n < 0)
		goto out;
	for (unsigned int i = 0; i < f->nr; i++) {
		if (f->ent[i].state == ZVMMD_CHUNK_ZERO)
			rep.zero_bytes += f->ent[i].bytes;
		else
			rep.empty_bytes += f->ent[i].bytes;
		memcpy(buf + sizeof(struct zvmmd_hdr) + sizeof(rep) +
			       i * sizeof(f->ent[i]),
		       &f->ent[i], sizeof(f->ent[i]));
	}
	memcpy(buf + sizeof(struct zvmmd_hdr), &rep, sizeof(rep));
	memset(u.raw, 0, sizeof(u.raw));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * f->nr);
	memcpy(CMSG_DATA(cm), f->fd, sizeof(int) * f->nr);
	iov.iov_len = (size_t)n;
	(void)!sendmsg(c, &mh, MSG_NOSIGNAL);
	/* Until the client lets go: the lease's end. */
	(void)!recv(c, req, sizeof(req), 0);
out:
	close(c);
	return NULL;
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	return fd;
}

static unsigned int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A chunk as zvmmd makes one: 2 MiB pages, 0600, filled or not. */
static int chunk(uint64_t bytes, bool filled, unsigned int flags, mode_t mode)
{
	int fd = memfd_create("chunk", MFD_CLOEXEC | flags);

	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	cr_assert_eq(fchmod(fd, mode), 0);
	cr_assert_eq(ftruncate(fd, (off_t)bytes), 0);
	if (filled)
		cr_assert_eq(fallocate(fd, 0, 0, (off_t)bytes), 0);
	return fd;
}

/* Leases 4 MiB from the fake: 0, or the client's errno; @err its words. */
static int lease_from(struct fake *f, char *err, size_t len)
{
	struct zvmmd_lease l;
	unsigned int before = open_fds(), mine = 0;
	pthread_t t;
	int ret;

	f->lfd = listen_at(sock);
	cr_assert_eq(pthread_create(&t, NULL, fake_serve, f), 0);
	err[0] = '\0';
	ret = zvmmd_client_lease(sock, 4 * SZ_1M, SZ_2M, &l, err, len);
	if (!ret)
		zvmmd_client_release(&l);
	pthread_join(t, NULL);
	close(f->lfd);
	for (unsigned int i = 0; i < f->nr; i++)
		if (i == 0 || f->fd[i] != f->fd[i - 1]) {
			close(f->fd[i]);
			mine++;
		}
	/* Taken or refused, the client keeps none of the lease's fds. */
	cr_assert_eq(open_fds(), before - mine, "fds left behind");
	return ret;
}

static void one(struct fake *f, int fd, uint64_t bytes, uint32_t state)
{
	memset(f, 0, sizeof(*f));
	f->nr = 1;
	f->fd[0] = fd;
	f->ent[0] = (struct zvmmd_chunk_ent){ .bytes = bytes, .state = state };
}

Test(service_client, an_honest_daemon_is_taken)
{
	struct fake f;
	char err[512];

	one(&f, chunk(4 * SZ_1M, true, MFD_HUGETLB, 0600), 4 * SZ_1M,
	    ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), 0, "%s", err);
	one(&f, chunk(4 * SZ_1M, false, MFD_HUGETLB, 0600), 4 * SZ_1M,
	    ZVMMD_CHUNK_EMPTY);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), 0, "%s", err);
}

Test(service_client, a_chunk_not_on_hugetlbfs_is_refused)
{
	struct fake f;
	char err[512];

	one(&f, chunk(4 * SZ_1M, true, 0, 0600), 4 * SZ_1M, ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "not a hugetlbfs file"), "%s", err);
}

Test(service_client, a_filled_chunk_with_holes_is_refused)
{
	struct fake f;
	char err[512];

	/* Holes would be zeroed by the kernel, but the lease lies. */
	one(&f, chunk(4 * SZ_1M, false, MFD_HUGETLB, 0600), 4 * SZ_1M,
	    ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "said to be filled"), "%s", err);
	/* An "empty" one that holds someone's pages. */
	one(&f, chunk(4 * SZ_1M, true, MFD_HUGETLB, 0600), 4 * SZ_1M,
	    ZVMMD_CHUNK_EMPTY);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "said to be empty"), "%s", err);
}

Test(service_client, a_chunk_others_can_reach_is_refused)
{
	struct fake f;
	char err[512];

	one(&f, chunk(4 * SZ_1M, true, MFD_HUGETLB, 0644), 4 * SZ_1M,
	    ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "not the daemon's and this user's alone"), "%s",
		  err);
}

/*
 * zvmmd gives a member's lease to the member's uid: a chunk of a third
 * uid (neither the listener's nor this process's) is refused.
 */
Test(service_client, a_chunk_of_a_third_uid_is_refused)
{
	struct fake f;
	char err[512];
	int fd;

	if (geteuid())
		test_skip(TEST_NEED_ROOT, "a file of another uid is made by root");
	fd = chunk(4 * SZ_1M, true, MFD_HUGETLB, 0600);
	cr_assert_eq(fchown(fd, 65534, (gid_t)-1), 0);
	one(&f, fd, 4 * SZ_1M, ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "not the daemon's and this user's alone"), "%s",
		  err);
}

Test(service_client, a_chunk_of_another_length_is_refused)
{
	struct fake f;
	char err[512];

	one(&f, chunk(6 * SZ_1M, true, MFD_HUGETLB, 0600), 4 * SZ_1M,
	    ZVMMD_CHUNK_ZERO);
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "not as long"), "%s", err);
}

/* One page behind two guest addresses: a write at one shows at both. */
Test(service_client, one_file_as_two_chunks_is_refused)
{
	struct fake f;
	char err[512];
	int fd = chunk(2 * SZ_1M, true, MFD_HUGETLB, 0600);

	memset(&f, 0, sizeof(f));
	f.nr = 2;
	f.fd[0] = f.fd[1] = fd;
	f.ent[0] = (struct zvmmd_chunk_ent){ .bytes = 2 * SZ_1M,
					     .state = ZVMMD_CHUNK_ZERO };
	f.ent[1] = f.ent[0];
	cr_assert_eq(lease_from(&f, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "another chunk of the lease again"), "%s", err);
}

/*
 * A listener that is not root: another user's socket at the path
 * (a directory others can write). Refused before anything is sent.
 */
Test(service_client, a_listener_of_another_user_is_refused)
{
	struct zvmmd_lease l;
	char err[512], c;
	int ready[2], ret;
	pid_t pid;

	cr_assert_eq(chmod(dir, 0777), 0);
	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		alarm(30);
		if (setgid(65534) || setuid(65534))
			_exit(1);
		fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(fd, 4))
			_exit(1);
		(void)!write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the other user's listener");
	close(ready[0]);
	ret = zvmmd_client_lease(sock, 4 * SZ_1M, SZ_2M, &l, err, sizeof(err));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_eq(ret, -EPERM, "%s", err);
	cr_assert(strstr(err, "uid 65534"), "%s", err);
}
