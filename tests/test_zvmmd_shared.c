// SPDX-License-Identifier: MIT
/*
 * zvmmd shared by tenants who do not trust each other (issue 28): a
 * member of the group (uid 65534 with group root, which the test's zvmmd
 * serves) cannot take root's connections (R1) or memory (R2) and sees no
 * other tenant's details (R7). The config has no key of the fair shares:
 * the defaults (zvmmd.conf(5): 32 connections a user, 50% of max, 10 s
 * idle) are what is tested. Each test failed against the zvmmd before
 * the shares. Like tests/test_zvmmd.c, this speaks the wire format
 * itself, on purpose, to test the daemon against the protocol as
 * documented and to hold connections no client library would.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../lib/zvmmd_proto.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

/* How long the test waits for what the daemon does (test_zvmmd.c). */
#define WAIT_S 60

/* zvmmd.conf(5)'s defaults, as the test's config leaves them. */
#define USER_CONNECTIONS 32
#define IDLE_S 10

/* The pool: 16 MiB chunks, nothing filled ahead, 160 MiB at most. */
#define CHUNK (16 * SZ_1M)
#define MAX (160 * SZ_1M)

#define MEMBER 65534
#define OTHER_MEMBER 65533

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char dir[40], sock[96], conf[96];
static pid_t daemon_pid = -1;

/* The suite's config, @service's lines added to [service]. */
static void conf_write(const char *service)
{
	FILE *f = fopen(conf, "w");

	cr_assert_not_null(f);
	fprintf(f,
		"[service]\nsocket = %s\ndir = %s/chunks\ngroup = root\n%s"
		"[pages.2M]\nchunk = 16M\nlow = 0\nhigh = 0\nmax = 160M\n"
		"[quarantine]\nrecheck = 50\n",
		sock, dir, service);
	fclose(f);
}

static void daemon_start(void)
{
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	/* Anyone may connect: the daemon's own checks are what decide. */
	cr_assert_eq(chmod(dir, 0711), 0);
	cr_assert_eq(chmod(sock, 0666), 0);
}

static void teardown(void)
{
	char cmd[256];

	/* SIGTERM is a clean exit: anything else (a sanitizer's) is said. */
	if (dir[0])
		(void)test_zvmmd_stop(&daemon_pid, SIGTERM, dir);
	if (dir[0]) {
		snprintf(
			cmd, sizeof(cmd),
			"umount -l %s/chunks/2M %s/chunks/2M-root 2>/dev/null; rm -rf %s",
			dir, dir, dir);
		(void)!system(cmd);
	}
	zero_hugetlb_release(&resv);
}

static void setup(void)
{
	test_need_root("zvmmd mounts hugetlbfs");
	if (access(test_zvmmd_bin(), X_OK))
		test_skip(TEST_NEED_TOOL, "no %s (make)", test_zvmmd_bin());
	test_on_skip(teardown);
	test_reserve_or_skip(SZ_2M, 96, &resv);
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-shared.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", dir);
	conf_write("");
	daemon_start();
}

TestSuite(zvmmd_shared, .init = setup, .fini = teardown, .timeout = 150);

static int send_msg(int fd, uint16_t type, const void *body, size_t len)
{
	char buf[512];
	int n = zvmmd_build(buf, sizeof(buf), type, body, len);

	return n < 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n ? -1 : 0;
}

/*
 * A LEASE of @bytes on a new connection, kept open in *@fd: 0 when
 * served (its chunks' fds closed at once: the connection holds the
 * lease), the errno of an ERROR, or -1 when no well-formed reply came.
 */
static int lease_keep(int *fd, uint64_t bytes, int *keep);

static int lease_on(int *fd, uint64_t bytes)
{
	return lease_keep(fd, bytes, NULL);
}

/* The same, the first chunk's fd kept in *@keep when not NULL. */
static int lease_keep(int *fd, uint64_t bytes, int *keep)
{
	struct zvmmd_lease_req req = { bytes, SZ_2M, -1, 0 };
	static char buf[ZVMMD_MSG_MAX];
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
	ssize_t n;

	*fd = test_zvmmd_connect(sock);
	if (*fd < 0 || send_msg(*fd, ZVMMD_LEASE, &req, sizeof(req)))
		return -1;
	n = recvmsg(*fd, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0 || zvmmd_parse(buf, (size_t)n, &m))
		return -1;
	if (m.type == ZVMMD_ERROR)
		return m.error.err;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		for (size_t i = 0;
		     i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int cfd;

			memcpy(&cfd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (keep && *keep < 0)
				*keep = cfd;
			else
				close(cfd);
		}
	return m.type == ZVMMD_LEASE_OK ? 0 : -1;
}

/*
 * lease_on(), asked again while it is refused ENOMEM, for 5 s at most:
 * a ghost's charge goes only after counts over a recheck (50 ms here)
 * all found its pages gone.
 */
static int lease_on_soon(int *fd, uint64_t bytes)
{
	int ret = lease_on(fd, bytes);

	for (int i = 0; ret == ENOMEM && i < 100; i++) {
		close(*fd);
		usleep(50000);
		ret = lease_on(fd, bytes);
	}
	return ret;
}

/* The same, every chunk's fd kept in @fds (*@n of them). */
static int lease_all(int *fd, uint64_t bytes, int *fds, int *n)
{
	struct zvmmd_lease_req req = { bytes, SZ_2M, -1, 0 };
	static char buf[ZVMMD_MSG_MAX];
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
	ssize_t got;

	*n = 0;
	*fd = test_zvmmd_connect(sock);
	if (*fd < 0 || send_msg(*fd, ZVMMD_LEASE, &req, sizeof(req)))
		return -1;
	got = recvmsg(*fd, &mh, MSG_CMSG_CLOEXEC);
	if (got <= 0 || zvmmd_parse(buf, (size_t)got, &m))
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		for (size_t i = 0;
		     i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
			memcpy(&fds[(*n)++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	if (m.type == ZVMMD_ERROR)
		return m.error.err;
	return m.type == ZVMMD_LEASE_OK ? 0 : -1;
}

/* STATUS on a new connection: its text in @out, 0; -1 for anything else. */
static int status_text(char *out, size_t len)
{
	static char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	int fd = test_zvmmd_connect(sock);
	ssize_t n;

	if (fd < 0 || send_msg(fd, ZVMMD_STATUS, NULL, 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n <= 0 || zvmmd_parse(buf, (size_t)n, &m) ||
	    m.type != ZVMMD_STATUS_OK || m.len >= len)
		return -1;
	snprintf(out, len, "%.*s", (int)m.len, (const char *)m.body);
	return 0;
}

static long long status_num(const char *key)
{
	static char text[ZVMMD_MSG_MAX];
	char pat[64];
	const char *p;

	cr_assert_eq(status_text(text, sizeof(text)), 0, "no STATUS_OK");
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	cr_assert_not_null(p, "no %s in %s", key, text);
	return atoll(p + strlen(pat));
}

static void wait_status(const char *key, long long want)
{
	double t0 = test_mono_now();
	long long now;

	while ((now = status_num(key)) != want && test_mono_now() - t0 < WAIT_S)
		usleep(10000);
	cr_assert_eq(now, want, "%s is %lld, not %lld, after %d s", key, now,
		     want, WAIT_S);
}

static unsigned int count(const char *text, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * A member: a child as @uid with group root among its groups, running
 * @body(in, out). It writes what it found to out and then waits on in
 * (holding its connections and leases) until member_end().
 */
struct member {
	pid_t pid;
	int in, out; /* the parent's ends: what the child says, "go" */
};

static void member_start(struct member *m, uid_t uid,
			 int (*body)(int in, int out))
{
	const gid_t root = 0;
	int up[2], down[2];

	cr_assert_eq(pipe2(up, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(down, O_CLOEXEC), 0);
	m->pid = fork();
	cr_assert_neq(m->pid, -1);
	if (!m->pid) {
		close(up[0]);
		close(down[1]);
		alarm(WAIT_S);
		if (setgroups(1, &root) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(10);
		_exit(body(down[0], up[1]));
	}
	close(up[1]);
	close(down[0]);
	m->in = up[0];
	m->out = down[1];
}

/* What the member wrote: @len bytes at @buf. */
static void member_read(struct member *m, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len && (n = read(m->in, (char *)buf + got, len - got)) > 0)
		got += (size_t)n;
	cr_assert_eq(got, len, "the member said %zu of %zu bytes", got, len);
}

/* Lets the member go: it exits, its connections and leases with it. */
static void member_end(struct member *m)
{
	int status;

	close(m->out);
	close(m->in);
	waitpid(m->pid, &status, 0);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "the member failed: status 0x%x", status);
}

/* In the member: until the parent lets it go. */
static int hold(int in)
{
	char c;

	return read(in, &c, 1) < 0;
}

/* Chunk @fd mapped shared and populated, *st its stat; NULL on error. */
static char *map_chunk(int fd, struct stat *st)
{
	char *m;

	if (fstat(fd, st))
		return NULL;
	m = mmap(NULL, (size_t)st->st_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_POPULATE, fd, 0);
	return m == MAP_FAILED ? NULL : m;
}

/* A member's last step: what it found, to the test, then hold. */
static int say_and_hold(int in, int out, const void *said, size_t len)
{
	if (write(out, said, len) != (ssize_t)len)
		return 12;
	return hold(in);
}

/*
 * R1: more connections than [service] user_connections, all opened
 * before any is looked at; says how many are open (nothing to read
 * yet), how many were refused with EUSERS, and how many neither.
 */
static int many_connections(int in, int out)
{
	int fds[USER_CONNECTIONS + 8], said[3] = { 0 };
	const int n = sizeof(fds) / sizeof(fds[0]);
	struct pollfd pf;
	char buf[512];

	for (int i = 0; i < n; i++)
		if ((fds[i] = test_zvmmd_connect(sock)) < 0)
			return 11;
	/* The last one accepted last: refused (or not) after all others. */
	pf = (struct pollfd){ .fd = fds[n - 1], .events = POLLIN };
	poll(&pf, 1, 5000);
	for (int i = 0; i < n; i++) {
		ssize_t r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
		struct zvmmd_msg m;

		if (r < 0 && errno == EAGAIN)
			said[0]++;
		else if (r > 0 && !zvmmd_parse(buf, (size_t)r, &m) &&
			 m.type == ZVMMD_ERROR && m.error.err == EUSERS)
			said[1]++;
		else
			said[2]++;
	}
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * R1: a member holds as many connections as it may; the rest it asks
 * for are refused (EUSERS), and root still connects and leases.
 */
Test(zvmmd_shared, a_members_connections_are_bounded_and_root_is_served)
{
	struct member m;
	int said[3], fd;

	member_start(&m, MEMBER, many_connections);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], USER_CONNECTIONS,
		     "%d connections open, %d refused (EUSERS), %d else",
		     said[0], said[1], said[2]);
	cr_assert_eq(said[1], 8, "%d refused with EUSERS, %d else", said[1],
		     said[2]);
	cr_assert_eq(lease_on(&fd, CHUNK), 0, "root's lease was refused");
	close(fd);
	member_end(&m);
	wait_status("leased_bytes", 0);
}

/*
 * R1: a STATUS every 3 s does not keep a connection that holds no lease
 * open: it is closed IDLE_S after it opened, whatever it asks.
 */
Test(zvmmd_shared, status_does_not_keep_a_connection_open)
{
	static char buf[ZVMMD_MSG_MAX];
	double t0 = test_mono_now(), open_s = 0;
	int fd = test_zvmmd_connect(sock);

	cr_assert_geq(fd, 0);
	while ((open_s = test_mono_now() - t0) < IDLE_S + 15) {
		if (send_msg(fd, ZVMMD_STATUS, NULL, 0) ||
		    recv(fd, buf, sizeof(buf), 0) <= 0)
			break;
		sleep(3);
	}
	close(fd);
	cr_assert_lt(open_s, IDLE_S + 6,
		     "a connection asking STATUS every 3 s stayed open %.0f s",
		     open_s);
}

/* R2: 2 MiB leases, each on a connection of its own, until refused. */
static int small_leases(int in, int out)
{
	int said[2] = { 0 }, fd;

	for (int i = 0; i < (int)(MAX / SZ_2M) && !said[1]; i++) {
		said[1] = lease_on(&fd, SZ_2M);
		said[0] += !said[1];
		if (said[1])
			close(fd);
	}
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * R2: a member's leases of 2 MiB are each charged a whole chunk (16
 * MiB), so that it is refused at its share (half of max: 5 of them),
 * not after taking all of max; root, not held to a share, leases the
 * rest; and a STATUS with more leases than it lists fits one reply.
 */
Test(zvmmd_shared, a_members_small_leases_are_charged_whole_chunks)
{
	static char text[ZVMMD_MSG_MAX];
	int said[2], fds[70], fd;
	struct member m;

	member_start(&m, MEMBER, small_leases);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], (int)(MAX / 2 / CHUNK),
		     "the member got %d leases of 2 MiB, then errno %d",
		     said[0], said[1]);
	cr_assert_eq(said[1], ENOMEM);

	/* Root's many small leases: not bounded by a share. */
	for (int i = 0; i < 70; i++)
		cr_assert_eq(lease_on(&fds[i], SZ_2M), 0, "root's lease %d", i);
	cr_assert_eq(status_text(text, sizeof(text)), 0, "no STATUS_OK");
	cr_assert_eq(count(text, "\"id\":"), 64, "%u leases listed",
		     count(text, "\"id\":"));
	cr_assert_eq(status_num("leases_total"), 75);
	for (int i = 0; i < 70; i++)
		close(fds[i]);
	wait_status("leased_bytes", (long long)said[0] * SZ_2M);
	wait_status("quarantined_bytes", 0);

	/* All max holds but the member's 10 MiB. */
	cr_assert_eq(lease_on(&fd, MAX - (uint64_t)said[0] * SZ_2M), 0,
		     "root's lease of the rest was refused");
	close(fd);
	member_end(&m);
	wait_status("leased_bytes", 0);
}

/* R7: one lease of 2 MiB held; says 0, or its errno. */
static int one_lease(int in, int out)
{
	int fd, ret = lease_on(&fd, SZ_2M);

	return say_and_hold(in, out, &ret, sizeof(ret));
}

/* R7: one lease held, then the STATUS as this member sees it. */
static int lease_and_status(int in, int out)
{
	static char text[ZVMMD_MSG_MAX];
	int fd;

	if (lease_on(&fd, SZ_2M) || status_text(text, sizeof(text)))
		return 11;
	return say_and_hold(in, out, text, strlen(text) + 1);
}

/*
 * R7: a member's STATUS lists its own lease and, of root's and another
 * member's, only counts: no pid, command name or uid of theirs.
 */
Test(zvmmd_shared, a_members_status_shows_its_own_and_counts_the_rest)
{
	static char text[ZVMMD_MSG_MAX], root_text[ZVMMD_MSG_MAX];
	struct member other, me;
	char pid[32];
	int ret, fd;
	size_t n = 0;

	cr_assert_eq(lease_on(&fd, CHUNK), 0, "root's lease");
	member_start(&other, OTHER_MEMBER, one_lease);
	member_read(&other, &ret, sizeof(ret));
	cr_assert_eq(ret, 0, "the other member's lease: errno %d", ret);
	member_start(&me, MEMBER, lease_and_status);
	while (n < sizeof(text) - 1 && read(me.in, text + n, 1) == 1 && text[n])
		n++;
	text[n] = '\0';
	cr_assert_gt(n, 0, "the member got no STATUS");

	cr_assert_eq(count(text, "\"id\":"), 1, "%s", text);
	cr_assert_not_null(strstr(text, "\"uid\":65534"), "%s", text);
	cr_assert_null(strstr(text, "\"uid\":65533"), "%s", text);
	cr_assert_null(strstr(text, "\"uid\":0,"), "%s", text);
	snprintf(pid, sizeof(pid), "\"pid\":%d,", (int)other.pid);
	cr_assert_null(strstr(text, pid), "the other's pid: %s", text);
	snprintf(pid, sizeof(pid), "\"pid\":%d,", (int)getpid());
	cr_assert_null(strstr(text, pid), "root's pid: %s", text);
	cr_assert_not_null(strstr(text, "\"leases_total\":3,"), "%s", text);
	cr_assert_not_null(strstr(text, "\"leased_bytes\":20971520,"), "%s",
			   text);

	/* Root sees them all. */
	cr_assert_eq(status_text(root_text, sizeof(root_text)), 0);
	cr_assert_eq(count(root_text, "\"id\":"), 3, "%s", root_text);
	cr_assert_not_null(strstr(root_text, "\"uid\":65533"), "%s", root_text);
	member_end(&me);
	member_end(&other);
	close(fd);
	wait_status("leased_bytes", 0);
}

/* What a member wrote up to its NUL, in @text. */
static void member_text(struct member *m, char *text, size_t len)
{
	size_t n = 0;

	while (n < len - 1 && read(m->in, text + n, 1) == 1 && text[n])
		n++;
	text[n] = '\0';
	cr_assert_gt(n, 0, "the member said nothing");
}

/*
 * R7: a lease ended while the member still holds its chunk: once it is
 * quarantined, the member's own STATUS as text.
 */
static int quarantined_own(int in, int out)
{
	static char text[ZVMMD_MSG_MAX];
	double t0 = test_mono_now();
	int fd, chunk = -1;

	if (lease_keep(&fd, SZ_2M, &chunk) || chunk < 0)
		return 11;
	close(fd);
	do {
		usleep(10000);
		if (status_text(text, sizeof(text)))
			return 12;
	} while (!strstr(text, "\"quarantined_bytes\":2097152,") &&
		 test_mono_now() - t0 < WAIT_S);
	if (write(out, text, strlen(text) + 1) != (ssize_t)strlen(text) + 1)
		return 13;
	return hold(in);
}

/* R7: another member's STATUS as text. */
static int status_only(int in, int out)
{
	static char text[ZVMMD_MSG_MAX];

	if (status_text(text, sizeof(text)))
		return 11;
	return say_and_hold(in, out, text, strlen(text) + 1);
}

/*
 * R7: a chunk quarantined after a member's lease, held by the member:
 * the member's STATUS names it and its holder, another member's only
 * counts it, root's names it.
 */
Test(zvmmd_shared, a_members_quarantined_chunks_are_its_own_to_see)
{
	static char mine[ZVMMD_MSG_MAX], theirs[ZVMMD_MSG_MAX],
		root_text[ZVMMD_MSG_MAX];
	struct member me, other;
	char pid[32];

	member_start(&me, MEMBER, quarantined_own);
	member_text(&me, mine, sizeof(mine));
	member_start(&other, OTHER_MEMBER, status_only);
	member_text(&other, theirs, sizeof(theirs));
	snprintf(pid, sizeof(pid), "\"holder_pid\":%d,", (int)me.pid);

	cr_assert_eq(count(theirs, "\"chunk\":"), 0, "%s", theirs);
	cr_assert_null(strstr(theirs, pid), "%s", theirs);
	cr_assert_not_null(strstr(theirs, "\"quarantined_total\":1,"), "%s",
			   theirs);
	cr_assert_eq(count(mine, "\"chunk\":"), 1, "%s", mine);
	cr_assert_not_null(strstr(mine, pid), "%s", mine);
	cr_assert_not_null(strstr(mine, "\"quarantined_total\":1,"), "%s",
			   mine);

	cr_assert_eq(status_text(root_text, sizeof(root_text)), 0);
	cr_assert_eq(count(root_text, "\"chunk\":"), 1, "%s", root_text);
	member_end(&other);
	member_end(&me);
	wait_status("quarantined_bytes", 0);
}

/* The host's hugepages of 2 MiB that no one has been promised. */
static long unpromised_pages(void)
{
	const char *base = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
	long v[2];

	for (int i = 0; i < 2; i++) {
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "%s%s", base,
			 i ? "resv_hugepages" : "free_hugepages");
		f = fopen(path, "r");
		cr_assert_not_null(f, "%s", path);
		cr_assert_eq(fscanf(f, "%ld", &v[i]), 1, "%s", path);
		fclose(f);
	}
	return v[0] - v[1];
}

/*
 * Every hugepage of 2 MiB no one has been promised, taken as anyone may
 * (anonymous MAP_HUGETLB) and touched: the mapping (NULL for none), its
 * pages in *@n; munmap() gives them back.
 */
static char *take_unpromised(long *n)
{
	char *grab;

	*n = unpromised_pages();
	grab = *n ? mmap(NULL, (size_t)*n * SZ_2M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) :
		    NULL;
	cr_assert_neq(grab, MAP_FAILED, "cannot take %ld free hugepages", *n);
	for (long i = 0; i < *n; i++)
		grab[(size_t)i * SZ_2M] = 1;
	return grab;
}

/*
 * Every page of @cfd, mapped MAP_NORESERVE, written in a child: its exit
 * status (SIGBUS for a page the kernel could not give).
 */
static int touch_noreserve(int cfd, uint64_t bytes)
{
	int status;
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (!pid) {
		char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_NORESERVE, cfd, 0);

		if (m == MAP_FAILED)
			_exit(11);
		for (uint64_t off = 0; off < bytes; off += SZ_2M)
			m[off] = 1;
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * An EMPTY lease never overcommits (issue 28, point 2): the pages of a
 * chunk leased empty are promised to it before LEASE_OK, so a client that
 * maps it MAP_NORESERVE can touch every page even after someone else took
 * every free hugepage the kernel had not promised. Before, the empty
 * chunk held no reservation, the other process got its pages, and the
 * client's touch was a SIGBUS.
 */
Test(zvmmd_shared, an_empty_lease_has_its_pages_promised)
{
	int fd, cfd = -1, status;
	char *grab, path[96];
	struct statfs sf;
	long others;

	cr_assert_eq(lease_keep(&fd, CHUNK, &cfd), 0, "no lease");
	cr_assert_geq(cfd, 0);
	cr_assert_eq(status_num("zero_bytes"), 0, "a chunk was filled ahead");
	/* In its pool's mount (sized to max), which counts reservations. */
	snprintf(path, sizeof(path), "%s/chunks/2M", dir);
	cr_assert_eq(statfs(path, &sf), 0, "%s", path);
	cr_assert_eq(
		(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize, CHUNK,
		"the empty chunk's pages are not reserved: %llu of %llu pages of the mount in use",
		(unsigned long long)(sf.f_blocks - sf.f_bfree),
		(unsigned long long)sf.f_blocks);

	/* Someone else takes every hugepage not promised to anyone. */
	grab = take_unpromised(&others);

	status = touch_noreserve(cfd, CHUNK);
	if (grab)
		munmap(grab, (size_t)others * SZ_2M);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "the lessee's touch of its empty chunk: status 0x%x%s",
		  status,
		  WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS ?
			  " (SIGBUS: its pages went to someone else)" :
			  "");
	close(cfd);
	close(fd);
	wait_status("leased_bytes", 0);
}

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

/*
 * No peer can send zvmmd a file (issue 28's review): zvmmd would make
 * the last close of it, whose release may wait as long as the sender
 * chose (a TCP socket lingering with unsent data stalled the loop for
 * 19 s, SIGTERM with it). A STATUS carrying an fd is refused by the
 * kernel at the sender (EPERM), and the connection still serves.
 */
Test(zvmmd_shared, no_peer_can_send_zvmmd_a_file)
{
	char buf[512], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, 0 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	int probe = socket(AF_UNIX, SOCK_SEQPACKET, 0), off = 0, fd, p[2];
	struct cmsghdr *cm;
	struct zvmmd_msg m;
	ssize_t n;

	cr_assert_geq(probe, 0);
	if (setsockopt(probe, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off))) {
		close(probe);
		test_skip(
			TEST_NEED_KERNEL,
			"SO_PASSRIGHTS (Linux 6.16) to refuse files sent to zvmmd");
	}
	close(probe);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	n = zvmmd_build(buf, sizeof(buf), ZVMMD_STATUS, NULL, 0);
	cr_assert_gt(n, 0);
	iov.iov_len = (size_t)n;
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[1], sizeof(int));

	fd = test_zvmmd_connect(sock);
	cr_assert_geq(fd, 0);
	errno = 0;
	cr_assert_eq(sendmsg(fd, &mh, MSG_NOSIGNAL), -1,
		     "zvmmd's socket took a file");
	cr_assert_eq(errno, EPERM, "%s", strerror(errno));
	/* The same request without the file is answered. */
	cr_assert_eq(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
	n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
	cr_assert_gt(n, 0);
	cr_assert(n > (ssize_t)sizeof(buf) ||
			  (!zvmmd_parse(buf, (size_t)n, &m) &&
			   m.type == ZVMMD_STATUS_OK),
		  "no STATUS_OK after the refused send");
	close(fd);
	close(p[0]);
	close(p[1]);
}

/* In a member: until its STATUS says @key is @want (10 s at most). */
static bool member_wait_status(const char *key, long long want)
{
	static char text[ZVMMD_MSG_MAX];
	char pat[64];

	snprintf(pat, sizeof(pat), "\"%s\":%lld,", key, want);
	for (int i = 0; i < 1000; i++) {
		if (!status_text(text, sizeof(text)) && strstr(text, pat))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Its share leased with one chunk's fd kept, the lease ended (that
 * chunk quarantined: the member holds it), then its share again, then
 * its share less that chunk: 0 or each errno, in @said[1..3]; @said[0]
 * whether the quarantine was seen.
 */
static int keep_then_lease(int in, int out)
{
	int said[4] = { 0 }, fd, fd2, keep = -1;

	said[1] = lease_keep(&fd, MAX / 2, &keep);
	close(fd);
	said[0] = member_wait_status("quarantined_bytes", CHUNK);
	said[2] = lease_on(&fd, MAX / 2);
	if (!said[2])
		close(fd);
	said[3] = lease_on(&fd2, MAX / 2 - CHUNK);
	return say_and_hold(in, out, said, sizeof(said));
}

static int share_again(int in, int out)
{
	int fd, ret = lease_on(&fd, MAX / 2);

	return say_and_hold(in, out, &ret, sizeof(ret));
}

/*
 * The review's A: a member that keeps chunks of an ended lease (mapped,
 * or an fd) still has them charged to its share, until they are retired:
 * before, it leased its share again beside them, twice over, and root
 * was refused. Once it lets go, its share is whole again.
 */
Test(zvmmd_shared, chunks_kept_after_a_lease_stay_in_the_members_share)
{
	struct member m;
	int said[4], ret;

	member_start(&m, MEMBER, keep_then_lease);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[1], 0, "the first lease: errno %d", said[1]);
	cr_assert(said[0], "the kept chunk was never quarantined");
	cr_assert_eq(said[2], ENOMEM,
		     "its share again beside the kept chunk: %d, not ENOMEM",
		     said[2]);
	cr_assert_eq(said[3], 0, "its share less the kept chunk: errno %d",
		     said[3]);
	member_end(&m);
	wait_status("quarantined_bytes", 0);
	wait_status("leased_bytes", 0);

	member_start(&m, MEMBER, share_again);
	member_read(&m, &ret, sizeof(ret));
	cr_assert_eq(ret, 0, "its share after it let go: errno %d", ret);
	member_end(&m);
}

/*
 * One chunk leased, grown through its fd (ftruncate to 4 chunks and
 * every page of them written; then pages fallocated past its end), and
 * the file's size and pages as zvmmd leaves them after a recheck: @said
 * holds 0 or an errno of the member's, then the sizes and block bytes.
 */
static int grow(int in, int out)
{
	long long said[5] = { 0 };
	int fd, keep = -1;
	struct stat st;
	char *m;

	said[0] = lease_keep(&fd, CHUNK, &keep);
	if (!said[0] && ftruncate(keep, 4 * CHUNK))
		said[0] = errno;
	m = said[0] ? MAP_FAILED :
		      mmap(NULL, 4 * CHUNK, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_POPULATE, keep, 0);
	if (!said[0] && m == MAP_FAILED)
		said[0] = errno;
	if (!said[0])
		munmap(m, 4 * CHUNK);
	usleep(500000);
	if (!said[0] && !fstat(keep, &st)) {
		said[1] = st.st_size;
		said[2] = st.st_blocks * 512;
	}
	if (!said[0] && fallocate(keep, FALLOC_FL_KEEP_SIZE, CHUNK, 3 * CHUNK))
		said[0] = errno;
	usleep(500000);
	if (!said[0] && !fstat(keep, &st)) {
		said[3] = st.st_size;
		said[4] = st.st_blocks * 512;
	}
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * The review's G: a member grew its one leased chunk through its fd
 * into all of max, charged one chunk, and root was refused. zvmmd cuts a
 * chunk back to its length (what lies past it was never leased) at
 * each recheck and before each lease.
 */
Test(zvmmd_shared, a_chunk_grown_by_its_holder_is_cut_back)
{
	long long said[5];
	struct member m;
	int fd;

	member_start(&m, MEMBER, grow);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the member: errno %lld", said[0]);
	cr_assert_eq(said[1], CHUNK, "grown by ftruncate: %lld bytes", said[1]);
	cr_assert_eq(said[2], CHUNK, "grown by ftruncate: %lld bytes in pages",
		     said[2]);
	cr_assert_eq(said[3], CHUNK, "after fallocate: %lld bytes", said[3]);
	cr_assert_eq(said[4], CHUNK, "grown by fallocate: %lld bytes in pages",
		     said[4]);
	cr_assert_eq(lease_on(&fd, MAX - CHUNK), 0,
		     "root was refused the rest of max");
	close(fd);
	member_end(&m);
	wait_status("leased_bytes", 0);
}

/*
 * In a member: @n chunks, every page written, their fds sent into socket
 * pair @sv and left unread (in flight: no scan sees them) and closed.
 * 0, or a member's exit code.
 */
static int hide_in_flight(int *cfd, int n, int sv[2])
{
	union {
		char raw[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} u;
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw };
	struct cmsghdr *cm;

	if (n > 16 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return 11;
	for (int i = 0; i < n; i++) {
		struct stat st;
		char *m = map_chunk(cfd[i], &st);

		if (!m)
			return 14;
		munmap(m, (size_t)st.st_size);
	}
	memset(u.raw, 0, sizeof(u.raw));
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), cfd, sizeof(int) * (size_t)n);
	if (sendmsg(sv[0], &mh, 0) != 1)
		return 15;
	for (int i = 0; i < n; i++)
		close(cfd[i]);
	return 0;
}

/*
 * Its share leased, hidden in flight (hide_in_flight()), the lease
 * ended; then its share again; then, the message dropped, its share
 * again: @said, 0 or each errno.
 */
static int hide_then_lease(int in, int out)
{
	int said[3] = { -1, -1, -1 }, fd, sv[2], n = 0, ret;
	static int cfd[ZVMMD_MAX_CHUNKS];

	said[0] = lease_all(&fd, MAX / 2, cfd, &n);
	if (said[0])
		return 11;
	ret = hide_in_flight(cfd, n, sv);
	if (ret)
		return ret;
	close(fd);
	if (!member_wait_status("leased_bytes", 0))
		return 16;
	said[1] = lease_on(&fd, MAX / 2);
	if (!said[1])
		close(fd);
	close(sv[0]);
	close(sv[1]);
	if (!member_wait_status("unseen_bytes", 0))
		return 17;
	said[2] = lease_on_soon(&fd, MAX / 2);
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * The review's C: a member hid its leased chunks where no scan looks (an
 * fd in flight), ended the lease, and leased its share again: the
 * hidden pages were counted held (unseen) but charged to no one, and
 * root was refused. A retire that frees less than the chunk's pages
 * leaves its charge on its user (a ghost) until the mount's unseen
 * bytes go.
 */
Test(zvmmd_shared, memory_hidden_from_the_scan_stays_in_the_members_share)
{
	struct member m;
	int said[3];

	member_start(&m, MEMBER, hide_then_lease);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the first lease: errno %d", said[0]);
	cr_assert_eq(said[1], ENOMEM,
		     "its share again beside the hidden chunks: %d, not ENOMEM",
		     said[1]);
	cr_assert_eq(said[2], 0, "its share once it let go: errno %d", said[2]);
	member_end(&m);
	wait_status("leased_bytes", 0);
	wait_status("unseen_bytes", 0);
}

/*
 * Its share leased and written, a page of each hugepage pinned in a
 * pipe (vmsplice), the chunks punched empty (st_blocks 0) and the lease
 * ended; then its share again: 0 or each errno in @said[0..1].
 */
static int pin_punch_then_lease(int in, int out)
{
	static int cfd[ZVMMD_MAX_CHUNKS];
	int said[2] = { -1, -1 }, fd, n = 0, p[2];

	said[0] = lease_all(&fd, MAX / 2, cfd, &n);
	if (said[0] || pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0)
		return 11;
	for (int i = 0; i < n; i++) {
		struct stat st;
		char *m = map_chunk(cfd[i], &st);

		if (!m)
			return 14;
		for (off_t off = 0; off < st.st_size; off += SZ_2M) {
			struct iovec iov = { m + off, 4096 };

			if (vmsplice(p[1], &iov, 1, 0) != 4096)
				return 15;
		}
		munmap(m, (size_t)st.st_size);
		if (fallocate(cfd[i],
			      FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			      st.st_size))
			return 16;
		close(cfd[i]);
	}
	close(fd);
	if (!member_wait_status("leased_bytes", 0))
		return 17;
	said[1] = lease_on(&fd, MAX / 2);
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * The second review's B2: pages pinned in a pipe and the chunk punched
 * empty, so that its st_blocks said nothing was left to free: the
 * retire made no ghost and the member leased its share again beside
 * the pinned pages, taking root's room. A retire is weighed against
 * the chunk's whole length.
 */
Test(zvmmd_shared, pinned_pages_of_a_punched_chunk_stay_in_the_share)
{
	struct member m;
	int said[2];

	member_start(&m, MEMBER, pin_punch_then_lease);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the first lease: errno %d", said[0]);
	cr_assert_eq(said[1], ENOMEM,
		     "its share again beside the pinned pages: %d, not ENOMEM",
		     said[1]);
	member_end(&m);
	wait_status("leased_bytes", 0);
	wait_status("unseen_bytes", 0);
}

/*
 * One chunk leased and kept, grown through its fd to 4 chunks, every
 * page written and a page of each past its end pinned in a pipe, until
 * zvmmd has cut it back; then its share less that chunk: 0 or each
 * errno in @said[0..1].
 */
static int grow_pin_then_lease(int in, int out)
{
	int said[2] = { -1, -1 }, fd, fd2, keep = -1, p[2], tries;
	struct stat st;

	said[0] = lease_keep(&fd, CHUNK, &keep);
	if (said[0] || pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0)
		return 11;
	/* zvmmd cuts it back each recheck (50 ms): grown and pinned between. */
	for (tries = 0; tries < 100; tries++) {
		size_t off = CHUNK;
		char *m, drain[4096];

		if (ftruncate(keep, 4 * CHUNK))
			return 13;
		m = mmap(NULL, 4 * CHUNK, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, keep, 0);
		if (m == MAP_FAILED)
			return 14;
		for (; off < 4 * CHUNK; off += SZ_2M) {
			struct iovec iov = { m + off, 4096 };

			if (vmsplice(p[1], &iov, 1, 0) != 4096)
				break;
		}
		munmap(m, 4 * CHUNK);
		if (off >= 4 * CHUNK)
			break;
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		while (read(p[0], drain, sizeof(drain)) > 0)
			;
	}
	if (tries == 100)
		return 15;
	for (int i = 0;
	     i < 500 && !fstat(keep, &st) && st.st_size > (off_t)CHUNK; i++)
		usleep(10000);
	if (st.st_size != (off_t)CHUNK)
		return 16;
	/* The recheck that cut it has charged what it could not free. */
	usleep(200000);
	said[1] = lease_on(&fd2, MAX / 2 - CHUNK);
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * The second review's B4: a chunk grown past its end, the pages there
 * pinned in a pipe, then cut back by zvmmd: the pinned pages stayed in
 * the mount's count, charged to no one, and the member leased its whole
 * share beside them (root was refused). What a cut cannot free is
 * charged to the chunk's user.
 */
Test(zvmmd_shared, pinned_pages_past_a_chunks_end_stay_in_the_share)
{
	struct member m;
	int said[2];

	member_start(&m, MEMBER, grow_pin_then_lease);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the first lease: errno %d", said[0]);
	cr_assert_eq(said[1], ENOMEM,
		     "its share beside the pinned pages: %d, not ENOMEM",
		     said[1]);
	member_end(&m);
	wait_status("leased_bytes", 0);
	wait_status("unseen_bytes", 0);
}

/*
 * Three chunks hidden in flight and their lease ended (48 MiB of ghosts
 * charged), the rest of its share leased and those chunks truncated to
 * nothing (their reserved pages go back: the mount counts 32 MiB less);
 * then two chunks more; then, the message dropped, three: 0 or each
 * errno in @said.
 */
static int hide_shrink_then_lease(int in, int out)
{
	int said[4] = { -1, -1, -1, -1 }, fd, fd2, fd3, sv[2], n = 0, ret;
	static int cfd[ZVMMD_MAX_CHUNKS];

	said[0] = lease_all(&fd, 3 * CHUNK, cfd, &n);
	if (said[0])
		return 11;
	ret = hide_in_flight(cfd, n, sv);
	if (ret)
		return ret;
	close(fd);
	if (!member_wait_status("leased_bytes", 0))
		return 16;
	said[1] = lease_all(&fd2, 2 * CHUNK, cfd, &n);
	if (said[1])
		return say_and_hold(in, out, said, sizeof(said));
	for (int i = 0; i < n; i++)
		if (ftruncate(cfd[i], 0))
			return 17;
	/* A recheck (50 ms) has read the mount since. */
	if (!member_wait_status("unseen_bytes", CHUNK))
		return 18;
	usleep(200000);
	said[2] = lease_on(&fd3, 2 * CHUNK);
	if (!said[2])
		close(fd3);
	close(sv[0]);
	close(sv[1]);
	if (!member_wait_status("unseen_bytes", 0))
		return 19;
	said[3] = lease_on_soon(&fd3, 3 * CHUNK);
	return say_and_hold(in, out, said, sizeof(said));
}

/*
 * The second review's B3: a member hid chunks (their charge stays as
 * ghosts), then shrank chunks it still leased. The mount's count fell
 * below the books, the ghosts were let go as if their pages had come
 * back, and the member leased 48 MiB beyond its 80 MiB share (it can
 * grow the shrunk chunks back to their length). Ghosts are let go only
 * when the pages in no chunk file fall below them, whatever a holder
 * does to its chunks.
 */
Test(zvmmd_shared, shrinking_a_leased_chunk_does_not_free_the_ghosts)
{
	struct member m;
	int said[4];

	member_start(&m, MEMBER, hide_shrink_then_lease);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the first lease: errno %d", said[0]);
	cr_assert_eq(said[1], 0, "the rest of its share: errno %d", said[1]);
	cr_assert_eq(
		said[2], ENOMEM,
		"past its share after shrinking its chunks: %d, not ENOMEM",
		said[2]);
	cr_assert_eq(said[3], 0, "its share once it let go: errno %d", said[3]);
	member_end(&m);
	wait_status("leased_bytes", 0);
	wait_status("unseen_bytes", 0);
}

/*
 * A member's lease of one chunk, mapped MAP_PRIVATE again and again
 * until the kernel refuses: each mapping reserves the chunk's pages in
 * the pool's mount for its copy-on-write pages, held by no file (the
 * third review's F2; F1, pages pinned in a pipe and the chunk punched
 * and written again, is the same to the mount). Says the lease's errno
 * and how many mappings it made.
 */
static int map_private_until_refused(int in, int out)
{
	int said[2] = { -1, 0 }, fd, cfd = -1;

	said[0] = lease_keep(&fd, CHUNK, &cfd);
	while (!said[0] && cfd >= 0 && said[1] < 1000 &&
	       mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE, cfd, 0) !=
		       MAP_FAILED)
		said[1]++;
	return say_and_hold(in, out, said, sizeof(said));
}

/* Root's LEASE of @bytes, each page then written and read back zero. */
static int root_lease_and_touch(uint64_t bytes)
{
	int fd, cfd[ZVMMD_MAX_CHUNKS], n = 0, ret;

	ret = lease_all(&fd, bytes, cfd, &n);
	for (int i = 0; i < n; i++) {
		struct stat st;
		char *m = ret ? NULL : map_chunk(cfd[i], &st);

		if (!ret && !m)
			ret = -2;
		for (off_t off = 0; m && off < st.st_size; off += 4096) {
			if (m[off])
				ret = -3;
			m[off] = 1;
		}
		if (m)
			munmap(m, (size_t)st.st_size);
		close(cfd[i]);
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * Root's reserve (issue 28: no member may deny root a lease). Private
 * mappings hide memory from every count that charges a share: without a
 * reserve a member took all of max with them and root's LEASE was
 * refused. With [service] root_reserve the kernel holds root's part in
 * a mount of its own (min_size=), the member's mount is max less it:
 * root leases the reserve beside the member, and beside anyone who took
 * every free hugepage the kernel had not promised, and reads zero.
 */
Test(zvmmd_shared, root_keeps_its_reserve_whatever_a_member_hides)
{
	const uint64_t reserve = 3 * CHUNK;
	struct member m;
	int said[2], ret;
	long others;
	char *grab;

	cr_assert_eq(status_num("reserve_bytes"), 0);
	/* Without one: the member's mappings take what root would lease. */
	member_start(&m, MEMBER, map_private_until_refused);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the member's lease: errno %d", said[0]);
	cr_assert_eq(said[1], (MAX - CHUNK) / CHUNK,
		     "%d private mappings of the member's chunk", said[1]);
	ret = root_lease_and_touch(reserve);
	cr_assert_eq(
		ret, ENOMEM,
		"root's LEASE beside the mappings, no reserve: %d, not ENOMEM",
		ret);
	member_end(&m);
	wait_status("leased_bytes", 0);

	cr_assert_eq(test_zvmmd_stop(&daemon_pid, SIGTERM, dir), 0);
	conf_write("root_reserve = 48M\n");
	daemon_start();
	cr_assert_eq(status_num("reserve_bytes"), (long long)reserve);
	member_start(&m, MEMBER, map_private_until_refused);
	member_read(&m, said, sizeof(said));
	cr_assert_eq(said[0], 0, "the member's lease: errno %d", said[0]);
	cr_assert_eq(
		said[1], (MAX - reserve - CHUNK) / CHUNK,
		"%d private mappings: the member's mount is not max less the reserve",
		said[1]);
	grab = take_unpromised(&others);
	ret = root_lease_and_touch(reserve);
	if (grab)
		munmap(grab, (size_t)others * SZ_2M);
	cr_assert_eq(
		ret, 0,
		"root's LEASE of its reserve beside the member: %d (-3: a page not zero)",
		ret);
	/* Past it, root is held to max as before. */
	cr_assert_eq(root_lease_and_touch(reserve + CHUNK), ENOMEM);
	member_end(&m);
	wait_status("leased_bytes", 0);
	wait_status("unseen_bytes", 0);
}

/*
 * A member's share leased, each chunk then cut to nothing (ftruncate):
 * the pages leave the mount, while zvmmd's books still count the lease
 * whole. Says the lease's errno.
 */
static int lease_share_then_truncate(int in, int out)
{
	static int cfd[ZVMMD_MAX_CHUNKS];
	int said = -1, fd, n = 0;

	said = lease_all(&fd, MAX / 2, cfd, &n);
	for (int i = 0; !said && i < n; i++)
		if (ftruncate(cfd[i], 0))
			said = 20;
	return say_and_hold(in, out, &said, sizeof(said));
}

static int lease_share(int in, int out)
{
	int said, fd;

	said = lease_on(&fd, MAX / 2);
	return say_and_hold(in, out, &said, sizeof(said));
}

/*
 * The second review of root's reserve, its first finding: a member that
 * truncates the chunks it leased frees their room in the stock's mount
 * while the books still count them, another member leases that room,
 * and the books reach max with the kernel still holding root's reserve.
 * Root was refused by the books; the reserve is the kernel's to count.
 */
Test(zvmmd_shared, root_keeps_its_reserve_when_the_books_count_more)
{
	const uint64_t reserve = 3 * CHUNK;
	struct member a, b;
	int said;

	cr_assert_eq(test_zvmmd_stop(&daemon_pid, SIGTERM, dir), 0);
	conf_write("root_reserve = 48M\n");
	daemon_start();
	member_start(&a, MEMBER, lease_share_then_truncate);
	member_read(&a, &said, sizeof(said));
	cr_assert_eq(said, 0, "the first member: %d", said);
	member_start(&b, OTHER_MEMBER, lease_share);
	member_read(&b, &said, sizeof(said));
	cr_assert_eq(said, 0, "the second member's lease: errno %d", said);
	cr_assert_eq(status_num("leased_bytes"), (long long)MAX);
	said = root_lease_and_touch(reserve);
	cr_assert_eq(said, 0,
		     "root's LEASE of its reserve with the books at max: %d",
		     said);
	member_end(&b);
	member_end(&a);
	wait_status("leased_bytes", 0);
}

/*
 * Any user may take the host's free hugepages (anonymous MAP_HUGETLB)
 * in the moment between two zvmmds, and the kernel then cannot hold
 * root's reserve: zvmmd starts all the same (the second review of the
 * reserve: it exited, and every lease with it), says so, and holds the
 * reserve at the first recheck after the pages are back.
 */
Test(zvmmd_shared, a_reserve_the_kernel_cannot_hold_yet_comes_later)
{
	long others;
	char *grab;

	cr_assert_eq(test_zvmmd_stop(&daemon_pid, SIGTERM, dir), 0);
	conf_write("root_reserve = 48M\n");
	grab = take_unpromised(&others);
	daemon_start();
	cr_assert_eq(status_num("reserve_bytes"), 0);
	/* Root is served meanwhile, from what the kernel has: nothing. */
	cr_assert_eq(root_lease_and_touch(CHUNK), ENOMEM);
	if (grab)
		munmap(grab, (size_t)others * SZ_2M);
	wait_status("reserve_bytes", 3 * CHUNK);
	cr_assert_eq(root_lease_and_touch(3 * CHUNK), 0);
}
