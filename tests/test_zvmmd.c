// SPDX-License-Identifier: MIT
/*
 * zvmmd from outside, as VMMs and attackers meet it: a daemon of the test's
 * own (started here, ended by its pid) on a socket and a hugetlbfs mount of
 * the test's own. Leases read zero everywhere, tenant after tenant, at
 * offsets the daemon never looks at; a chunk comes back from a client that
 * closed, that was killed with -9, or that left a child holding it (then
 * quarantined and never leased again while held); a daemon killed with -9
 * trusts nothing it left; many clients at once; hostile messages; a peer
 * outside the group. Its directories, and leases through them, again
 * with openat2(2) refused by a seccomp filter (suites
 * zvmmd_openat2_enosys, _eperm).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/size.h"
#include "../lib/zvmmd_proto.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

#define CHUNK (16 * SZ_1M)
#define MARK 0x5a17ed00c0ffee00ull

/*
 * How long the test waits for what the daemon does (listen, take a lease
 * back, fill, close a connection): each takes milliseconds, and seconds
 * under ASan with other work on every core; past this it is not coming.
 * The waits look for the event, never sleep a fixed time, and this bound
 * is well inside the suite's timeout.
 */
#define WAIT_S 60

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char dir[40], sock[96], conf[96];
static pid_t daemon_pid = -1;

static int file_contains(const char *path, const char *needle)
{
	char buf[16384] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static void daemon_start(void)
{
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
}

static int daemon_stop(int sig)
{
	int status = -1;

	if (daemon_pid > 0) {
		kill(daemon_pid, sig);
		waitpid(daemon_pid, &status, 0);
	}
	daemon_pid = -1;
	return status;
}

static void teardown(void);

static void setup(void)
{
	FILE *f;

	test_need_root("zvmmd mounts hugetlbfs");
	if (access(test_zvmmd_bin(), X_OK))
		test_skip(TEST_NEED_TOOL, "no %s (make)", test_zvmmd_bin());
	test_on_skip(teardown);
	test_reserve_or_skip(SZ_2M, 96, &resv);
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-zvmmd.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"[service]\nsocket = %s\ndir = %s/chunks\ngroup = root\n"
		"[pages.2M]\nchunk = 16M\nlow = 32M\nhigh = 64M\nmax = 160M\n"
		"[quarantine]\nrecheck = 50\n",
		sock, dir);
	fclose(f);
	daemon_start();
}

static void teardown(void)
{
	char cmd[160];

	daemon_stop(SIGTERM);
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd),
			 "umount -l %s/chunks/2M 2>/dev/null; rm -rf %s", dir,
			 dir);
		(void)!system(cmd);
	}
	zero_hugetlb_release(&resv);
}

TestSuite(zvmmd, .init = setup, .fini = teardown, .timeout = 120);

/*
 * zvmmd, and every zvmmd a test starts, with openat2 refused as an older
 * kernel or a container runtime's seccomp filter refuse it: its
 * directories are then opened one component at a time, and must be
 * refused and used as they are with openat2.
 */
static void setup_enosys(void)
{
	test_refuse_openat2(ENOSYS);
	setup();
}

static void setup_eperm(void)
{
	test_refuse_openat2(EPERM);
	setup();
}

TestSuite(zvmmd_openat2_enosys, .init = setup_enosys, .fini = teardown,
	  .timeout = 120);
TestSuite(zvmmd_openat2_eperm, .init = setup_eperm, .fini = teardown,
	  .timeout = 120);

/* A test of zvmmd's directories: as it is, and with openat2 refused. */
#define DIR_TEST(name)                   \
	static void name(void);          \
	Test(zvmmd, name)                \
	{                                \
		name();                  \
	}                                \
	Test(zvmmd_openat2_enosys, name) \
	{                                \
		name();                  \
	}                                \
	Test(zvmmd_openat2_eperm, name)  \
	{                                \
		name();                  \
	}                                \
	static void name(void)

/*
 * The tests that boot a guest: Criterion runs the suite's .init (setup())
 * first and then this, so a skip here undoes what setup() made
 * (test_on_skip()); it does not call setup() again.
 */
static void setup_kvm(void)
{
	test_need_kvm();
}

/*
 * A lease as a client holds it: the socket, the chunks mapped in one.
 * This client speaks the wire format itself (lib/zvmmd_proto.h), on
 * purpose, rather than through lib/zvmmd_client.c, so that the daemon
 * is tested against the protocol as documented, not against the one
 * client it ships with, and so that it can send what no client sends.
 */
struct lease {
	int sock;
	unsigned int n;
	int fds[ZVMMD_MAX_CHUNKS];
	struct zvmmd_chunk_ent ent[ZVMMD_MAX_CHUNKS];
	struct zvmmd_lease_rep rep;
	uint64_t bytes;
	volatile uint64_t *mem;
	int err; /* an ERROR's errno, 0 for a lease */
	char msg[240];
};

static int send_msg(int fd, uint16_t type, const void *body, size_t len)
{
	char buf[512];
	int n = zvmmd_build(buf, sizeof(buf), type, body, len);

	return n < 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n ? -1 : 0;
}

/* Receives one reply: a LEASE_OK with its fds, or an ERROR. */
static int recv_reply(int fd, struct lease *l)
{
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
	ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

	if (n <= 0 || zvmmd_parse(buf, (size_t)n, &m))
		return -1;
	if (m.type == ZVMMD_ERROR) {
		l->err = m.error.err;
		snprintf(l->msg, sizeof(l->msg), "%s", m.error.msg);
		return 0;
	}
	if (m.type != ZVMMD_LEASE_OK)
		return -1;
	l->rep = m.rep;
	l->n = m.rep.nr_chunks;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int) * l->n))
		return -1;
	memcpy(l->fds, CMSG_DATA(cm), sizeof(int) * l->n);
	for (unsigned int i = 0; i < l->n; i++)
		if (zvmmd_chunk_at(&m, i, &l->ent[i]))
			return -1;
	return 0;
}

/* Asks for @bytes of 2 MiB pages and maps the chunks side by side. */
static void lease_get(struct lease *l, uint64_t bytes)
{
	struct zvmmd_lease_req req = { .bytes = bytes,
				       .page_bytes = SZ_2M,
				       .node = -1 };
	uint64_t off = 0;
	char *base;

	memset(l, 0, sizeof(*l));
	l->sock = test_zvmmd_connect(sock);
	cr_assert_geq(l->sock, 0, "connect %s: %s", sock, strerror(errno));
	cr_assert_eq(send_msg(l->sock, ZVMMD_LEASE, &req, sizeof(req)), 0);
	cr_assert_eq(recv_reply(l->sock, l), 0, "no well-formed reply");
	if (l->err)
		return;
	l->bytes = bytes;
	/* One reserved range, the chunks MAP_FIXED into it: one memslot. */
	base = mmap(NULL, bytes + SZ_2M, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(base, MAP_FAILED);
	base = (char *)(((uintptr_t)base + SZ_2M - 1) &
			~(uintptr_t)(SZ_2M - 1));
	for (unsigned int i = 0; i < l->n; i++) {
		uint64_t len = bytes - off < l->ent[i].bytes ? bytes - off :
							       l->ent[i].bytes;

		cr_assert_neq(mmap(base + off, len, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_FIXED, l->fds[i], 0),
			      MAP_FAILED, "chunk %u: %s", i, strerror(errno));
		off += len;
	}
	cr_assert_eq(off, bytes, "the chunks cover %llu of %llu bytes",
		     (unsigned long long)off, (unsigned long long)bytes);
	l->mem = (volatile uint64_t *)base;
}

/* Ends a lease as a VMM does at its exit: unmapped, fds and socket closed. */
static void lease_put(struct lease *l)
{
	if (l->mem)
		munmap((void *)l->mem, l->bytes);
	for (unsigned int i = 0; i < l->n; i++)
		close(l->fds[i]);
	close(l->sock);
	l->mem = NULL;
}

/* Words not zero, reading every word (the daemon samples none). */
static uint64_t nonzero_words(const struct lease *l)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < l->bytes / 8; i++)
		bad += l->mem[i] != 0;
	return bad;
}

/* Marks at offsets no one samples: one word per 4 KiB, shifted by page. */
static void mark(struct lease *l)
{
	for (uint64_t off = 0; off < l->bytes; off += 4096)
		l->mem[(off + ((off >> 12) % 509) * 8) / 8] = MARK + off;
}

static bool inode_in(const struct lease *l, ino_t ino)
{
	struct stat st;

	for (unsigned int i = 0; i < l->n; i++)
		if (!fstat(l->fds[i], &st) && st.st_ino == ino)
			return true;
	return false;
}

/* The daemon's status as JSON text. */
static void status(char *out, size_t len)
{
	static char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	int fd = test_zvmmd_connect(sock);
	ssize_t n;

	cr_assert_geq(fd, 0);
	cr_assert_eq(send_msg(fd, ZVMMD_STATUS, NULL, 0), 0);
	n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	cr_assert_gt(n, 0);
	cr_assert_eq(zvmmd_parse(buf, (size_t)n, &m), 0);
	cr_assert_eq(m.type, ZVMMD_STATUS_OK);
	snprintf(out, len, "%.*s", (int)m.len, (const char *)m.body);
}

/* A status number: "key": N of the first pool. */
static long long status_num(const char *key)
{
	char text[8192], pat[64];
	const char *p;

	status(text, sizeof(text));
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	cr_assert_not_null(p, "no %s in %s", key, text);
	return atoll(p + strlen(pat));
}

/* Waits up to WAIT_S for @key to become @want. */
static void wait_status(const char *key, long long want)
{
	double t0 = test_mono_now();
	long long now;

	while ((now = status_num(key)) != want && test_mono_now() - t0 < WAIT_S)
		usleep(10000);
	cr_assert_eq(now, want, "%s is %lld, not %lld, after %d s", key, now,
		     want, WAIT_S);
}

/*
 * Tenant after tenant: each reads zero in every word of what it leased,
 * writes marks where no one samples, and gives it back; no chunk (inode)
 * is ever handed out twice.
 */
DIR_TEST(tenant_after_tenant_reads_zero_never_the_same_chunk)
{
	ino_t seen[64];
	unsigned int nseen = 0;
	struct stat st;

	wait_status("zero_bytes", 64 * SZ_1M);
	for (int t = 0; t < 6; t++) {
		struct lease l;

		/* 40 MiB: two filled chunks, then what the daemon has. */
		lease_get(&l, 40 * SZ_1M);
		cr_assert_eq(l.err, 0, "tenant %d: %s", t, l.msg);
		cr_assert_eq(nonzero_words(&l), 0,
			     "tenant %d read another's data", t);
		for (unsigned int i = 0; i < l.n; i++) {
			cr_assert_eq(fstat(l.fds[i], &st), 0);
			for (unsigned int k = 0; k < nseen; k++)
				cr_assert_neq(st.st_ino, seen[k],
					      "tenant %d got a chunk again", t);
			if (nseen < 64)
				seen[nseen++] = st.st_ino;
		}
		mark(&l);
		lease_put(&l);
		wait_status("leased_bytes", 0);
	}
	cr_assert_eq(status_num("quarantined_bytes"), 0);
}

/* A client killed with -9 mid-run: its chunks come back and retire. */
Test(zvmmd, a_client_killed_with_9)
{
	pid_t pid, test = getpid();
	struct lease l;
	int wfd[2];
	char c;

	cr_assert_eq(pipe(wfd), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		/* Killed by the test; never outliving a test that failed. */
		close(wfd[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != test)
			_exit(1);
		lease_get(&l, 32 * SZ_1M);
		if (l.err)
			_exit(1);
		mark(&l);
		(void)!write(wfd[1], "x", 1);
		pause();
		_exit(0);
	}
	close(wfd[1]);
	cr_assert_eq(read(wfd[0], &c, 1), 1, "the client got no lease");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	wait_status("leased_bytes", 0);
	cr_assert_eq(status_num("quarantined_bytes"), 0);
	lease_get(&l, 32 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	cr_assert_eq(nonzero_words(&l), 0, "read the killed client's data");
	lease_put(&l);
}

/*
 * The filler starts no page within 100 ms of a lease (zvmmd(8)): the
 * client is mapping its chunks then, on hugetlb fault mutexes a fill may
 * share. Without the wait, 32 MiB of 2 MiB pages refill in a few ms.
 * Only what is seen inside the window counts: a slow machine skips it.
 */
Test(zvmmd, a_fresh_lease_holds_the_filler_back)
{
	struct lease l;
	unsigned int seen = 0;
	double t0;

	wait_status("zero_bytes", 64 * SZ_1M);
	/*
	 * 48 MiB: 16 left, under low (32), so the filler wants to fill. t0
	 * comes before the request, so the lease is no earlier: a status
	 * answered within 80 ms of t0 is inside the lease's 100, however
	 * late a busy machine hands the test the lease or the status.
	 */
	t0 = test_mono_now();
	lease_get(&l, 48 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	for (;;) {
		long long clean = status_num("zero_bytes");

		/* The status was answered before this. */
		if (test_mono_now() - t0 >= 0.08)
			break;
		cr_assert_eq(clean, 16 * SZ_1M,
			     "a chunk was filled %.0f ms after a lease",
			     (test_mono_now() - t0) * 1e3);
		seen++;
		usleep(5000);
	}
	if (!seen)
		test_skip(TEST_NEED_TIME, "no look inside 80 ms of the lease");
	/* Then it fills, back to high. */
	wait_status("zero_bytes", 64 * SZ_1M);
	lease_put(&l);
}

/*
 * A client holds its chunks' fds read-write: growing one (ftruncate,
 * fallocate) would take hugepages zvmmd does not count. The pool's
 * mount is sized to its max, so the kernel refuses past it, though the
 * machine has the pages free (setup reserved 192 MiB; max is 160).
 */
Test(zvmmd, a_client_cannot_grow_a_chunk_past_max)
{
	struct lease l;
	int ret;

	wait_status("zero_bytes", 64 * SZ_1M);
	lease_get(&l, 16 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	cr_assert_eq(ftruncate(l.fds[0], (off_t)(128 * SZ_1M)), 0);
	/* 64 MiB held, 112 more: past 160, within what is free. */
	ret = fallocate(l.fds[0], 0, (off_t)(16 * SZ_1M), (off_t)(112 * SZ_1M));
	cr_assert_eq(ret, -1, "a chunk grew past the pool's max");
	cr_assert_eq(errno, ENOSPC, "%s", strerror(errno));
	lease_put(&l);
	wait_status("leased_bytes", 0);
}

/*
 * A connection that asks nothing is closed after 10 s (zvmmd(8)): idle
 * ones cannot pin the daemon's descriptors.
 */
Test(zvmmd, an_idle_connection_is_closed)
{
	char c;
	int fd = test_zvmmd_connect(sock);
	struct timeval tv = { .tv_sec = 30 };

	cr_assert_geq(fd, 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
		     0);
	cr_assert_eq(recv(fd, &c, 1, 0), 0, "not closed: %s", strerror(errno));
	close(fd);
}

/* Runs another zvmmd with @config to its end: its exit status, its log. */
static int zvmmd_once(const char *config, char *log, size_t len)
{
	char path[160];
	int status, fd;
	ssize_t n;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/once.log", dir);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		alarm(20);
		execl(test_zvmmd_bin(), "zvmmd", "--config", config,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, log, len - 1) : 0;
	log[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A second zvmmd on one config would empty the first's pools: refused. */
Test(zvmmd, a_second_zvmmd_on_one_config_is_refused)
{
	char log[2048];
	struct lease l;

	wait_status("zero_bytes", 64 * SZ_1M);
	lease_get(&l, 16 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	cr_assert_eq(zvmmd_once(conf, log, sizeof(log)), 1, "%s", log);
	cr_assert(strstr(log, "another zvmmd listens"), "%s", log);
	/* The first one's chunks and lease are as they were. */
	cr_assert_eq(status_num("zero_bytes"), 48 * SZ_1M);
	cr_assert_eq(status_num("leased_bytes"), 16 * SZ_1M);
	cr_assert_eq(nonzero_words(&l), 0);
	lease_put(&l);
}

/*
 * [service] dir where another user could swap a pool's directory for a
 * symbolic link (zvmmd mounts there as root): writable by others, or
 * reached through a link. Refused at start, nothing mounted.
 */
DIR_TEST(a_chunk_dir_others_could_change_is_refused)
{
	static const char *const how[] = { "writable", "link" };
	char sub[128], other[160], log[2048], text[512], c2[160];

	for (unsigned int i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, how[i]);
		snprintf(other, sizeof(other), "%s/real", dir);
		if (i == 0) {
			cr_assert_eq(mkdir(sub, 0777), 0);
			cr_assert_eq(chmod(sub, 0777), 0);
		} else {
			cr_assert_eq(mkdir(other, 0700), 0);
			cr_assert_eq(symlink(other, sub), 0);
		}
		snprintf(c2, sizeof(c2), "%s/other.conf", dir);
		snprintf(
			text, sizeof(text),
			"[service]\nsocket = %s/other.sock\ndir = %s\ngroup = root\n"
			"[pages.2M]\nchunk = 16M\nlow = 16M\nhigh = 16M\nmax = 16M\n",
			dir, sub);
		test_write_text(c2, text);
		cr_assert_eq(zvmmd_once(c2, log, sizeof(log)), 1, "%s: %s",
			     how[i], log);
		cr_assert(strstr(log, i ? "symbolic link" :
					  "writable by root alone"),
			  "%s: %s", how[i], log);
	}
}

/*
 * A client that forked and left a child holding a chunk: quarantined,
 * never leased again while held, retired once the child lets go.
 */
Test(zvmmd, a_chunk_a_child_still_holds_is_quarantined)
{
	struct lease l, next;
	struct stat st;
	int ready[2], go[2], status = -1;
	pid_t client, child = 0;
	ino_t held;
	ssize_t n;
	char c;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	client = fork();
	cr_assert_neq(client, -1);
	if (!client) {
		close(ready[0]);
		close(go[1]);
		lease_get(&l, 16 * SZ_1M);
		if (l.err || fstat(l.fds[0], &st))
			_exit(1);
		child = fork();
		if (!child) {
			/*
			 * Keeps the chunk's fd, not the socket, until the
			 * test says go, or ends: a failed test must not leave
			 * it holding hugepages, and the write end of go is
			 * the test's alone, so its end is an end of file here.
			 */
			close(l.sock);
			(void)!write(ready[1], &st.st_ino, sizeof(st.st_ino));
			close(ready[1]);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		_exit(child < 0); /* the client exits; its child lives on */
	}
	/* The write end of ready is theirs alone: an end of file if both end. */
	close(ready[1]);
	close(go[0]);
	n = read(ready[0], &held, sizeof(held));
	waitpid(client, &status, 0);
	cr_assert_eq(n, (ssize_t)sizeof(held),
		     "no child holds a chunk: the client's wait status %#x",
		     status);
	wait_status("leased_bytes", 0);
	cr_assert_eq(status_num("quarantined_bytes"), 16 * SZ_1M);
	/* Leases meanwhile never get the held chunk. */
	for (int t = 0; t < 4; t++) {
		lease_get(&next, 16 * SZ_1M);
		cr_assert_eq(next.err, 0, "%s", next.msg);
		cr_assert_not(inode_in(&next, held),
			      "a quarantined chunk was leased again");
		lease_put(&next);
	}
	(void)!write(go[1], "x", 1);
	wait_status("quarantined_bytes", 0);
}

/*
 * zvmmd killed with -9 and started again: nothing it left is trusted,
 * every chunk it had is gone, and a lease reads zero.
 */
Test(zvmmd, killed_with_9_and_restarted_trusts_nothing)
{
	char path[192];
	struct lease l;
	struct stat st;

	wait_status("zero_bytes", 64 * SZ_1M);
	lease_get(&l, 16 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	mark(&l);
	cr_assert_eq(fstat(l.fds[0], &st), 0);
	daemon_stop(SIGKILL);
	lease_put(&l);
	daemon_start();
	/* Its files are gone: the old chunk is no one's to lease. */
	snprintf(path, sizeof(path), "%s/chunks/2M", dir);
	wait_status("zero_bytes", 64 * SZ_1M);
	lease_get(&l, 64 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	cr_assert_not(inode_in(&l, st.st_ino),
		      "a chunk of the killed zvmmd was leased");
	cr_assert_eq(nonzero_words(&l), 0);
	lease_put(&l);
	snprintf(path, sizeof(path), "%s/zvmmd.log", dir);
	cr_assert_eq(file_contains(path, "previous zvmmd removed"), 1,
		     "the restarted zvmmd did not say what it removed");
}

struct many {
	int err;
	uint64_t bad;
};

static void *one_client(void *arg)
{
	struct many *m = arg;
	struct lease l;

	lease_get(&l, 8 * SZ_1M);
	m->err = l.err;
	if (!l.err) {
		m->bad = nonzero_words(&l);
		mark(&l);
		lease_put(&l);
	}
	return NULL;
}

/* Eight clients at once: each its own chunks, all zero. */
Test(zvmmd, many_clients_at_once)
{
	struct many m[8] = { 0 };
	pthread_t th[8];

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 8; i++)
			pthread_create(&th[i], NULL, one_client, &m[i]);
		for (int i = 0; i < 8; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < 8; i++) {
			cr_assert_eq(m[i].err, 0, "client %d: errno %d", i,
				     m[i].err);
			cr_assert_eq(m[i].bad, 0, "client %d read data", i);
		}
	}
	wait_status("leased_bytes", 0);
}

static int daemon_fds(void)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)daemon_pid);
	d = opendir(path);
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/*
 * Connections zvmmd has open, or not accepted yet: the sockets on its
 * path (/proc/net/unix) that do not listen (__SO_ACCEPTCON, 0x10000).
 * A client's own end has no path.
 */
static int daemon_connections(void)
{
	char line[512], path[256];
	unsigned long flags;
	FILE *f = fopen("/proc/net/unix", "re");
	int n = 0;

	cr_assert_not_null(f, "/proc/net/unix: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*x %*x %lx %*x %*x %*u %255s", &flags,
			   path) == 2 &&
		    !strcmp(path, sock) && !(flags & 0x10000))
			n++;
	fclose(f);
	return n;
}

/*
 * Waits up to WAIT_S for zvmmd to have closed every connection (those
 * the test closed: wait_status()'s, hostile()'s), and says how many fds
 * it holds then, once two counts 20 ms apart agree.
 */
static int daemon_fds_alone(void)
{
	double t0 = test_mono_now();
	int n;

	while ((n = daemon_connections()) && test_mono_now() - t0 < WAIT_S)
		usleep(10000);
	cr_assert_eq(
		n, 0,
		"zvmmd still has %d connections, %d s after the test closed its last",
		n, WAIT_S);
	/*
	 * And its count of fds steady: what a connection held beside its
	 * socket may be closed a moment after it.
	 */
	for (int was = -1; n != was && test_mono_now() - t0 < WAIT_S;) {
		was = n;
		usleep(20000);
		n = daemon_fds();
	}
	return n;
}

/* What a hostile message gets: an ERROR with @err, and nothing more. */
static void hostile(const void *msg, size_t len, int err)
{
	struct lease l = { 0 };
	int fd = test_zvmmd_connect(sock);

	cr_assert_geq(fd, 0);
	cr_assert_eq(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
	cr_assert_eq(recv_reply(fd, &l), 0, "no well-formed reply");
	cr_assert_eq(l.err, err, "errno %d (%s), want %d", l.err, l.msg, err);
	cr_assert_eq(l.n, 0);
	close(fd);
}

/*
 * Malformed and hostile messages: each answered with a clear error, no
 * chunk and no fd leaked (each connection closed when the client hangs
 * up), and the daemon keeps serving.
 */
Test(zvmmd, hostile_messages_leave_nothing_behind)
{
	struct {
		struct zvmmd_hdr h;
		struct zvmmd_lease_req r;
	} m = { { ZVMMD_MAGIC, ZVMMD_VERSION, ZVMMD_LEASE, sizeof(m.r), 0 },
		{ 16 * SZ_1M, SZ_2M, -1, 0 } };
	char junk[300];
	struct lease l;
	int before, after;
	double t0, closed;

	wait_status("zero_bytes", 64 * SZ_1M);
	before = daemon_fds_alone();
	t0 = test_mono_now();
	memset(junk, 0x41, sizeof(junk));
	hostile(junk, sizeof(junk), EPROTO);
	hostile(junk, 3, EPROTO);
	m.h.version = 2;
	hostile(&m, sizeof(m), EPROTONOSUPPORT);
	m.h.version = ZVMMD_VERSION;
	m.h.len = sizeof(m.r) - 1;
	hostile(&m, sizeof(m) - 1, EPROTO);
	m.h.len = sizeof(m.r);
	m.r.bytes = 0;
	hostile(&m, sizeof(m), EINVAL);
	m.r.bytes = SZ_2M + 4096;
	hostile(&m, sizeof(m), EINVAL);
	m.r.bytes = 16 * SZ_1M;
	m.r.page_bytes = 4096;
	hostile(&m, sizeof(m), EINVAL);
	m.r.page_bytes = SZ_1G; /* not configured */
	m.r.bytes = SZ_1G;
	hostile(&m, sizeof(m), EINVAL);
	m.r.page_bytes = SZ_2M;
	m.r.bytes = 1024 * SZ_1M; /* past max */
	hostile(&m, sizeof(m), ENOMEM);
	/* Rounded up to chunks, it wrapped to none. */
	m.r.bytes = 0 - 2 * SZ_1M;
	hostile(&m, sizeof(m), EINVAL);
	m.h.type = ZVMMD_LEASE_OK; /* the daemon's own type */
	hostile(&m, sizeof(m), EPROTO);
	/* Nothing held on their account, and it still leases. */
	cr_assert_eq(status_num("leased_bytes"), 0);
	after = daemon_fds_alone();
	closed = test_mono_now() - t0;
	cr_assert_eq(after, before, "zvmmd leaked fds: %d, was %d", after,
		     before);
	lease_get(&l, 16 * SZ_1M);
	cr_assert_eq(l.err, 0, "%s", l.msg);
	lease_put(&l);
	cr_assert_eq(waitpid(daemon_pid, NULL, WNOHANG), 0, "zvmmd died");
	/*
	 * zvmmd(8) also closes a connection idle for 10 s: all of them gone
	 * sooner after the first opened, they were closed on hangup.
	 */
	if (closed >= 10)
		test_skip(
			TEST_NEED_TIME,
			"the connections closed %.0f s after the first: a close on hangup is not told from one for idleness",
			closed);
}

/*
 * A LEASE from uid and gid 65534 with @n supplementary @groups: 0 when
 * it was served (chunks came), 1 when refused with EACCES and nothing,
 * 10 and up for what went wrong on the way.
 */
static int lease_as_nobody(const gid_t *groups, size_t n)
{
	int status;
	pid_t pid;

	wait_status("zero_bytes", 64 * SZ_1M);
	/* Anyone may connect: the daemon's own check is what decides. */
	cr_assert_eq(chmod(dir, 0711), 0);
	cr_assert_eq(chmod(sock, 0666), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		struct lease l = { 0 };
		struct zvmmd_lease_req req = { 16 * SZ_1M, SZ_2M, -1, 0 };
		int fd;

		alarm(30);
		if (setgroups(n, groups) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		fd = test_zvmmd_connect(sock);
		if (fd < 0)
			_exit(11);
		/* A refusal comes first; the request finds the door shut. */
		(void)!send_msg(fd, ZVMMD_LEASE, &req, sizeof(req));
		if (recv_reply(fd, &l))
			_exit(12);
		for (unsigned int i = 0; i < l.n; i++)
			close(l.fds[i]);
		if (!l.err && l.n)
			_exit(0);
		_exit(l.err == EACCES && !l.n ? 1 : 13);
	}
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status), "the peer died");
	return WEXITSTATUS(status);
}

/* A peer neither root nor in [service] group is refused before anything. */
Test(zvmmd, a_peer_outside_the_group_is_refused)
{
	int ret = lease_as_nobody(NULL, 0);

	cr_assert_eq(ret, 1, "the peer was not refused: %d", ret);
	cr_assert_eq(status_num("leased_bytes"), 0);
}

/*
 * A member whose group comes late in a long list (300 supplementary
 * groups; the kernel keeps up to 65536) is served: SO_PEERGROUPS says
 * ERANGE for a short buffer, and zvmmd asks again with room.
 */
Test(zvmmd, a_member_of_many_groups_is_served)
{
	static gid_t groups[300];
	int ret;

	for (unsigned int i = 0; i < 299; i++)
		groups[i] = 20000 + i;
	groups[299] = 0; /* the test's zvmmd serves group root */
	ret = lease_as_nobody(groups, 300);
	cr_assert_eq(ret, 0, "the member was not served: %d", ret);
	wait_status("leased_bytes", 0);
}

/* SIGTERM: a clean shutdown, the socket and the mount gone. */
Test(zvmmd, sigterm_is_a_clean_shutdown)
{
	char path[192];
	int status;

	status = daemon_stop(SIGTERM);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "zvmmd status %d", status);
	cr_assert_neq(access(sock, F_OK), 0, "the socket is left");
	snprintf(path, sizeof(path), "grep -q ' %s/chunks/2M ' /proc/mounts",
		 dir);
	cr_assert_neq(system(path), 0, "the chunk mount is left");
}

/*
 * zvmm run --pool-service under every policy, tenant after tenant: the
 * first leaves marks where no one samples, the second looks for them
 * (probe=, exit 10 if any is found) and must read zero everywhere it
 * verifies; zvmmd gets every chunk back.
 */
Test(zvmmd, launches_lease_under_every_policy, .init = setup_kvm)
{
	static const char *const policies[] = { "prezero", "demand", "hybrid" };
	struct test_run r;
	char pol[64];

	wait_status("zero_bytes", 64 * SZ_1M);
	for (unsigned int i = 0; i < 3; i++) {
		snprintf(pol, sizeof(pol), "configs/%s.conf", policies[i]);
		cr_assert_eq(test_run_zvmm(
				     (const char *[]){
					     "run", "--mem", "64M",
					     "--pool-service", "--socket", sock,
					     "--policy", pol, "--cmdline",
					     "mark=8 seed=7", NULL },
				     false, &r),
			     0);
		cr_assert_eq(r.status, 0, "%s, first tenant: %s", policies[i],
			     r.out);
		cr_assert(strstr(r.out, "zvmmd leased"), "%s", r.out);
		cr_assert_eq(test_run_zvmm(
				     (const char *[]){
					     "run", "--mem", "64M",
					     "--pool-service", "--socket", sock,
					     "--policy", pol, "--cmdline",
					     "probe=7 mark=8 order=down",
					     NULL },
				     false, &r),
			     0);
		cr_assert_eq(r.status, 0,
			     "%s, second tenant found the first's data: %s",
			     policies[i], r.out);
		wait_status("leased_bytes", 0);
	}
}

/*
 * libzvmm's memory source: ZVMM_MEM_SERVICE leases through the API, the
 * stats say what came zero, the memory reads zero, close ends the lease;
 * with no zvmmd there the open fails -ENOENT, nothing left behind.
 */
Test(zvmmd, the_library_leases_with_zvmm_mem_service)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(48 * SZ_1M, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct zvmm_stats st;
	volatile uint64_t *ram;
	uint64_t bytes, bad = 0;
	void *addr;

	wait_status("zero_bytes", 64 * SZ_1M);
	mem.flags = ZVMM_MEM_SERVICE;
	mem.pool_path = sock;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "demand"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0);
	cr_assert_eq(status_num("leased_bytes"), 48 * SZ_1M);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_access(g, 0, 48 * SZ_1M), 0);
	zvmm_guest_memory(g, &addr, &bytes);
	ram = addr;
	for (uint64_t i = 0; i < bytes / 8; i++)
		bad += ram[i] != 0;
	zvmm_guest_stats(g, &st);
	cr_assert_eq(st.service_zero_bytes + st.service_empty_bytes,
		     48 * SZ_1M);
	cr_assert_gt(st.service_zero_bytes, 0);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_close(g);
	cr_assert_eq(bad, 0, "%llu words not zero", (unsigned long long)bad);
	wait_status("leased_bytes", 0);
	mem.pool_path = "/tmp/zvmm-test-zvmmd-none.sock";
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), -ENOENT);
	zvmm_policy_free(pol);
}

/* Asks for @bytes of 2 MiB pages on @node: the reply's errno, 0 for a lease. */
static int lease_on_node(uint64_t bytes, int node, struct lease *l)
{
	struct zvmmd_lease_req req = { bytes, SZ_2M, node, 0 };

	memset(l, 0, sizeof(*l));
	l->sock = test_zvmmd_connect(sock);
	cr_assert_geq(l->sock, 0);
	cr_assert_eq(send_msg(l->sock, ZVMMD_LEASE, &req, sizeof(req)), 0);
	cr_assert_eq(recv_reply(l->sock, l), 0);
	return l->err;
}

/*
 * Watermarks per node and page size: a [pages.2M.node0] pool serves
 * node 0 (and "any node"), and a node it keeps nothing for is refused
 * with the section to add.
 */
Test(zvmmd, a_pool_per_node)
{
	struct lease l;
	FILE *f;

	daemon_stop(SIGTERM);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"[service]\nsocket = %s\ndir = %s/chunks\ngroup = root\n"
		"[pages.2M.node0]\nchunk = 16M\nlow = 32M\nhigh = 32M\nmax = 64M\n",
		sock, dir);
	fclose(f);
	daemon_start();
	wait_status("zero_bytes", 32 * SZ_1M);
	cr_assert_eq(status_num("node"), 0);
	cr_assert_eq(lease_on_node(16 * SZ_1M, 0, &l), 0, "%s", l.msg);
	cr_assert_eq(l.rep.zero_bytes, 16 * SZ_1M);
	for (unsigned int i = 0; i < l.n; i++)
		close(l.fds[i]);
	close(l.sock);
	cr_assert_eq(lease_on_node(16 * SZ_1M, 1, &l), EINVAL);
	cr_assert(strstr(l.msg, "[pages.2M.node1]"), "%s", l.msg);
	close(l.sock);
	cr_assert_eq(lease_on_node(16 * SZ_1M, -1, &l), 0, "%s", l.msg);
	for (unsigned int i = 0; i < l.n; i++)
		close(l.fds[i]);
	close(l.sock);
	wait_status("leased_bytes", 0);
}
