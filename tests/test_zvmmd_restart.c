// SPDX-License-Identifier: MIT
/*
 * zvmmd restarted while tenants hold its chunks (issue 28, point 2:
 * restarts never let zvmmd hold more than max). A tenant's chunks keep
 * their pages after zvmmd is gone, whether it was stopped (SIGTERM) or
 * killed (SIGKILL); the next zvmmd must count them against max, and leave
 * the mount that counts them for the one after if they are still held.
 * Before, each start mounted a new instance sized to max beside the
 * detached old one: the host held max and what the tenants kept, and
 * STATUS said nothing of it. Speaks the wire format itself, as
 * tests/test_zvmmd_shared.c does and for the same reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../lib/zvmmd_proto.h"
#include "../zeroing/hugetlb.h"
#include "helpers.h"

#define WAIT_S 60

/* The pool: 16 MiB chunks, nothing filled ahead, 64 MiB at most. */
#define CHUNK (16 * SZ_1M)
#define MAX (64 * SZ_1M)
#define HELD (2 * CHUNK)

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char dir[40], sock[96], conf[96], mnt[96];
static pid_t daemon_pid = -1;

/* What a tenant of the first zvmmd keeps: its chunks, mapped. */
static int held_fd[ZVMMD_MAX_CHUNKS];
static unsigned int held_n;
static char *held_map;

static void held_drop(void)
{
	if (held_map)
		munmap(held_map, HELD);
	held_map = NULL;
	for (unsigned int i = 0; i < held_n; i++)
		close(held_fd[i]);
	held_n = 0;
}

static void daemon_stop(int sig)
{
	int status = 0;

	if (daemon_pid <= 0)
		return;
	kill(daemon_pid, sig);
	waitpid(daemon_pid, &status, 0);
	daemon_pid = -1;
	cr_assert(sig != SIGTERM || status == 0,
		  "zvmmd exited with status 0x%x on SIGTERM", status);
}

static void teardown(void)
{
	char cmd[320];

	held_drop();
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	daemon_pid = -1;
	if (dir[0]) {
		snprintf(
			cmd, sizeof(cmd),
			"umount -l %s/chunks/2M %s/chunks/2M-root 2>/dev/null; rm -rf %s",
			dir, dir, dir);
		(void)!system(cmd);
	}
	zero_hugetlb_release(&resv);
}

/* The suite's config, @service's lines added to [service]. */
static void conf_write(const char *service)
{
	FILE *f = fopen(conf, "w");

	cr_assert_not_null(f);
	fprintf(f,
		"[service]\nsocket = %s\ndir = %s/chunks\n%s"
		"[pages.2M]\nchunk = 16M\nlow = 0\nhigh = 0\nmax = 64M\n"
		"[quarantine]\nrecheck = 50\n",
		sock, dir, service);
	fclose(f);
}

static void setup(void)
{
	test_need_root("zvmmd mounts hugetlbfs");
	if (access(test_zvmmd_bin(), X_OK))
		test_skip(TEST_NEED_TOOL, "no %s (make)", test_zvmmd_bin());
	test_on_skip(teardown);
	test_reserve_or_skip(SZ_2M, 2 * MAX / SZ_2M, &resv);
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-restart.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", dir);
	snprintf(mnt, sizeof(mnt), "%s/chunks/2M", dir);
	conf_write("");
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
}

TestSuite(zvmmd_restart, .init = setup, .fini = teardown, .timeout = 120);

static int send_msg(int fd, uint16_t type, const void *body, size_t len)
{
	char buf[512];
	int n = zvmmd_build(buf, sizeof(buf), type, body, len);

	return n < 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n ? -1 : 0;
}

/*
 * A LEASE of @bytes on a new connection (*@fd, kept open): 0 with its
 * chunks' fds in @fds (*@n of them), the errno of an ERROR, or -1.
 */
static int lease(int *fd, uint64_t bytes, int *fds, unsigned int *n)
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

/* A lease of @bytes asked and given back at once: 0 or its errno. */
static int lease_try(uint64_t bytes)
{
	int fd, fds[ZVMMD_MAX_CHUNKS], ret;
	unsigned int n;

	ret = lease(&fd, bytes, fds, &n);
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
	if (fd >= 0)
		close(fd);
	return ret;
}

static long long status_num(const char *key)
{
	static char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	int fd = test_zvmmd_connect(sock);
	char pat[64];
	const char *p;
	ssize_t n;

	cr_assert_geq(fd, 0, "cannot connect to zvmmd");
	cr_assert_eq(send_msg(fd, ZVMMD_STATUS, NULL, 0), 0);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	cr_assert(n > 0 && !zvmmd_parse(buf, (size_t)n, &m) &&
			  m.type == ZVMMD_STATUS_OK,
		  "no STATUS_OK");
	buf[n] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr((const char *)m.body, pat);
	cr_assert_not_null(p, "no %s in STATUS", key);
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

/* Whether a hugetlbfs instance is mounted at the pool's directory. */
static bool mounted(void)
{
	struct statfs sf;

	return !statfs(mnt, &sf) && sf.f_type == HUGETLBFS_MAGIC;
}

/*
 * After a restart: the new zvmmd counts the HELD bytes the tenant kept
 * (a lease past max - HELD is refused, the rest is not), what the tenant
 * wrote is still its own, and once it lets go (@fd, its connection,
 * closed too) all of max can be leased and nothing is left held.
 */
static void held_counted_then_freed(int fd)
{
	cr_assert_eq(status_num("unseen_bytes"), (long long)HELD,
		     "the new zvmmd does not count what the tenant holds");
	cr_assert_eq(lease_try(MAX - HELD + CHUNK), ENOMEM,
		     "a lease past max was not refused");
	cr_assert_eq(lease_try(MAX - HELD), 0, "the rest of max was refused");
	wait_status("leased_bytes", 0);
	for (uint64_t off = 0; off < HELD; off += SZ_2M)
		cr_assert_eq(held_map[off], 0x5a, "byte %llu changed",
			     (unsigned long long)off);
	held_drop();
	close(fd);
	wait_status("unseen_bytes", 0);
	cr_assert_eq(lease_try(MAX), 0, "all of max was refused");
	wait_status("leased_bytes", 0);
	wait_status("quarantined_bytes", 0);
}

/*
 * A tenant of the first zvmmd leases HELD bytes, maps them side by side
 * and writes every page (its guest's memory); zvmmd then goes with @sig
 * and a second one starts on the same config. It must count HELD as in
 * use, lease only max - HELD, and get all of max back once the tenant
 * lets go.
 */
static void restart_then(int sig, const char *service, long long reserve)
{
	int fd;

	cr_assert_eq(lease(&fd, HELD, held_fd, &held_n), 0, "no lease");
	cr_assert_eq(held_n, HELD / CHUNK);
	held_map =
		mmap(NULL, HELD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(held_map, MAP_FAILED);
	for (unsigned int i = 0; i < held_n; i++) {
		char *m = mmap(held_map + (size_t)i * CHUNK, CHUNK,
			       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			       held_fd[i], 0);

		cr_assert_neq(m, MAP_FAILED, "chunk %u: %s", i,
			      strerror(errno));
	}
	for (uint64_t off = 0; off < HELD; off += SZ_2M)
		held_map[off] = 0x5a;

	daemon_stop(sig);
	cr_assert(mounted(),
		  "the mount that counts the tenant's pages is gone");
	if (service)
		conf_write(service);
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	/* What the kernel holds for root, whatever the new config asks. */
	cr_assert_eq(status_num("reserve_bytes"), reserve);
	held_counted_then_freed(fd);

	/* Nothing held: a stop leaves no mount. */
	daemon_stop(SIGTERM);
	cr_assert_not(mounted(),
		      "zvmmd stopped with nothing held left its mount");
}

static void restart_with_memory_held(int sig)
{
	restart_then(sig, NULL, 0);
}

Test(zvmmd_restart, a_stopped_zvmmds_tenants_are_counted_by_the_next)
{
	restart_with_memory_held(SIGTERM);
}

Test(zvmmd_restart, a_killed_zvmmds_tenants_are_counted_by_the_next)
{
	restart_with_memory_held(SIGKILL);
}

/*
 * With [service] root_reserve, root's empty chunks are in a mount of
 * their own (2M-root, min_size= the reserve): it is kept and taken over
 * across a restart as the pool's other mount is, its tenant's pages
 * counted and its bytes untouched.
 */
Test(zvmmd_restart, roots_reserve_mount_is_taken_over)
{
	daemon_stop(SIGTERM);
	conf_write("root_reserve = 32M\n");
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	snprintf(mnt, sizeof(mnt), "%s/chunks/2M-root", dir);
	cr_assert(mounted(), "no mount for root's reserve at %s", mnt);
	cr_assert_eq(status_num("reserve_bytes"), 32 * SZ_1M);
	/* Asked for more: the kept mount holds what it was made with. */
	restart_then(SIGKILL, "root_reserve = 48M\n", 32 * SZ_1M);
}

/* The reserve turned off meanwhile: its mount's pages still counted. */
Test(zvmmd_restart, a_reserve_turned_off_still_counts_roots_tenants)
{
	daemon_stop(SIGTERM);
	conf_write("root_reserve = 32M\n");
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	snprintf(mnt, sizeof(mnt), "%s/chunks/2M-root", dir);
	restart_then(SIGTERM, "", 0);
}

/*
 * Under systemd (zvmmd.service's PrivateMounts=) the mount ends with
 * the unit's mount namespace, so what restart_with_memory_held() relies
 * on (the mount left in place) is gone: zvmmd puts the mount's root in
 * the unit's fd store instead (FileDescriptorStoreMax=, sd_notify(3)'s
 * FDSTORE=1) and the next one takes it back (sd_listen_fds(3)). The
 * test stands in for systemd: a datagram socket as $NOTIFY_SOCKET, the
 * mount detached as the namespace's end detaches it, the fd passed as
 * fd 3 named zvmmd-pool-2M.
 */
static int notify_fd = -1;
static char notify_path[96];

/* One datagram from zvmmd within @ms: its text in @text, an fd or -1. */
static int notify_read(int ms, char *text, size_t len, int *fd)
{
	union {
		char raw[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { text, len - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.raw,
			     .msg_controllen = sizeof(u.raw) };
	struct pollfd pf = { .fd = notify_fd, .events = POLLIN };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	text[0] = '\0';
	if (poll(&pf, 1, ms) != 1)
		return -1;
	n = recvmsg(notify_fd, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -1;
	text[n] = '\0';
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return 0;
}

/* Every datagram zvmmd has sent so far, read and let go. */
static void notify_drain(void)
{
	char text[256];
	int fd;

	while (!notify_read(300, text, sizeof(text), &fd))
		if (fd >= 0)
			close(fd);
}

/* systemd's notify socket, as the unit gives zvmmd: ours to read. */
static void notify_listen(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify_path);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(notify_fd, 0);
	cr_assert_eq(bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", notify_path, 1);
}

static void notify_end(void)
{
	unsetenv("NOTIFY_SOCKET");
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
	if (notify_path[0])
		unlink(notify_path);
	/* The suite's too, whether or not Criterion runs it after this. */
	teardown();
}

/* The next fd zvmmd stores under zvmmd-pool-@label, others skipped. */
static int notify_stored(const char *label)
{
	char text[256], want[64];
	int fd;

	snprintf(want, sizeof(want), "FDNAME=zvmmd-pool-%s", label);
	while (!notify_read(5000, text, sizeof(text), &fd)) {
		const char *at = strstr(text, want);

		if (strstr(text, "FDSTORE=1") && at && !at[strlen(want)])
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

Test(zvmmd_restart, under_systemd_the_fd_store_keeps_the_mount,
     .fini = notify_end)
{
	char text[256];
	int fd, stored, extra;

	daemon_stop(SIGTERM);
	notify_listen();
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	/* Stored as it is made, so that a zvmmd killed keeps it too. */
	stored = notify_stored("2M");
	cr_assert_geq(stored, 0, "zvmmd did not store its new mount");
	close(stored);

	cr_assert_eq(lease(&fd, HELD, held_fd, &held_n), 0, "no lease");
	held_map =
		mmap(NULL, HELD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(held_map, MAP_FAILED);
	for (unsigned int i = 0; i < held_n; i++)
		cr_assert_neq(mmap(held_map + (size_t)i * CHUNK, CHUNK,
				   PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_FIXED, held_fd[i], 0),
			      MAP_FAILED);
	for (uint64_t off = 0; off < HELD; off += SZ_2M)
		held_map[off] = 0x5a;

	daemon_stop(SIGTERM);
	cr_assert_eq(notify_read(5000, text, sizeof(text), &stored), 0,
		     "zvmmd stored nothing as it stopped");
	notify_drain();
	cr_assert(strstr(text, "FDSTORE=1") &&
			  strstr(text, "FDNAME=zvmmd-pool-2M"),
		  "zvmmd said: %s", text);
	cr_assert_geq(stored, 0, "no fd came with: %s", text);
	/* The unit's mount namespace ends: its mounts with it. */
	cr_assert_eq(umount2(mnt, MNT_DETACH), 0, "%s: %s", mnt,
		     strerror(errno));

	test_zvmmd_start_passing(conf, sock, dir, WAIT_S, &daemon_pid, stored,
				 "zvmmd-pool-2M");
	close(stored);
	/* It stays in the store while zvmmd runs: a crash keeps it. */
	cr_assert_neq(notify_read(300, text, sizeof(text), &extra), 0,
		      "zvmmd said at start: %s", text);
	held_counted_then_freed(fd);
	notify_drain();
	daemon_stop(SIGTERM);
	/* Nothing held: let go, out of the store too. */
	cr_assert_eq(notify_read(5000, text, sizeof(text), &extra), 0,
		     "zvmmd did not take the mount out of the store");
	cr_assert(strstr(text, "FDSTOREREMOVE=1") &&
			  strstr(text, "FDNAME=zvmmd-pool-2M") && extra < 0,
		  "zvmmd said: %s", text);
}

/*
 * Root's reserve under systemd: stored even empty as zvmmd stops (the
 * hugepages the kernel holds for it stay held across a restart) with
 * its mount point let go, taken back by a restart of the same config,
 * and let go for a fresh one when root_reserve has changed (a review:
 * it was taken back whatever its size, so a change never applied).
 */
Test(zvmmd_restart, under_systemd_roots_reserve_is_kept_empty,
     .fini = notify_end)
{
	int stored;

	daemon_stop(SIGTERM);
	notify_listen();
	conf_write("root_reserve = 32M\n");
	test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	cr_assert_eq(status_num("reserve_bytes"), 32 * SZ_1M);
	snprintf(mnt, sizeof(mnt), "%s/chunks/2M-root", dir);
	for (int i = 0; i < 2; i++) {
		notify_drain();
		daemon_stop(SIGTERM);
		stored = notify_stored("2M-root");
		cr_assert_geq(stored, 0, "root's empty reserve was not stored");
		cr_assert_not(mounted(),
			      "the stored reserve is still mounted at %s", mnt);
		if (i)
			conf_write("root_reserve = 48M\n");
		test_zvmmd_start_passing(conf, sock, dir, WAIT_S, &daemon_pid,
					 stored, "zvmmd-pool-2M-root");
		close(stored);
		cr_assert_eq(status_num("reserve_bytes"),
			     (i ? 48 : 32) * SZ_1M);
		cr_assert_eq(lease_try(32 * SZ_1M), 0);
	}
}

/*
 * A chunk its tenant cut to nothing (ftruncate to 0) and kept: no page
 * of the mount is in use when zvmmd stops, but the tenant can grow the
 * file again. The mount stays for the next zvmmd, and the one after
 * (the mount's inode count says a file is alive), which counts what the
 * file grows to; before, the stop detached it (nothing used), the next
 * zvmmd mounted a new one beside it, and the tenant's growth was in a
 * mount no one counted: the host could hold twice max.
 */
Test(zvmmd_restart, a_chunk_cut_to_nothing_keeps_its_mount)
{
	int fd;

	cr_assert_eq(lease(&fd, CHUNK, held_fd, &held_n), 0, "no lease");
	cr_assert_eq(held_n, 1);
	cr_assert_eq(ftruncate(held_fd[0], 0), 0);
	close(fd);
	wait_status("leased_bytes", 0);
	/* Twice: the zvmmd that took the mount over knows no chunk out. */
	for (int i = 0; i < 2; i++) {
		daemon_stop(SIGTERM);
		cr_assert(mounted(),
			  "stop %d left no mount for a chunk file still held",
			  i + 1);
		test_zvmmd_start(conf, sock, dir, WAIT_S, &daemon_pid);
	}
	cr_assert_eq(ftruncate(held_fd[0], CHUNK), 0);
	cr_assert_eq(fallocate(held_fd[0], 0, 0, CHUNK), 0, "%s",
		     strerror(errno));
	wait_status("unseen_bytes", CHUNK);
	held_drop();
	wait_status("unseen_bytes", 0);
	daemon_stop(SIGTERM);
	cr_assert_not(mounted(),
		      "zvmmd stopped with nothing held left its mount");
}
