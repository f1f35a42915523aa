// SPDX-License-Identifier: MIT
/*
 * holders_of(): who holds which file, found as fuser(1) finds
 * it (an open fd, a mapping), for many files in one walk of /proc. zvmmd
 * retires a returned chunk only when this says no one holds it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/holders.h"
#include "helpers.h"

#define NR 4

static char path[NR][64];
static struct stat st[NR];

static void setup(void)
{
	for (int i = 0; i < NR; i++) {
		int fd;

		snprintf(path[i], sizeof(path[i]),
			 "/tmp/zvmm-test-holders.%d.%d", (int)getpid(), i);
		fd = open(path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		cr_assert_geq(fd, 0);
		cr_assert_eq(ftruncate(fd, 4096), 0);
		cr_assert_eq(fstat(fd, &st[i]), 0);
		close(fd);
	}
}

static void teardown(void)
{
	for (int i = 0; i < NR; i++)
		unlink(path[i]);
}

/*
 * A walk costs what the host runs (every process's fds and mappings):
 * milliseconds, and more with other work on the machine. The bound is
 * far past that.
 */
TestSuite(holders, .init = setup, .fini = teardown, .timeout = 120);

/*
 * A child named @name that holds file @i (by fd, or by a mapping only)
 * until it is killed, or the test ends: it dies with the test, whatever
 * the time the test takes.
 */
static pid_t holder(int i, bool map, const char *name, int ready[2])
{
	pid_t test = getpid(), pid = fork();

	cr_assert_neq(pid, -1);
	if (!pid) {
		int fd;

		close(ready[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != test)
			_exit(1);
		fd = open(path[i], O_RDWR);
		prctl(PR_SET_NAME, name);
		if (fd < 0)
			_exit(1);
		if (map) {
			if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) ==
			    MAP_FAILED)
				_exit(1);
			close(fd);
		}
		(void)!write(ready[1], "x", 1);
		close(ready[1]);
		pause();
		_exit(0);
	}
	return pid;
}

Test(holders, each_file_its_holder_in_one_walk)
{
	long pid[NR];
	char comm[NR][HOLDER_COMM_LEN], c;
	int ready[2];
	pid_t a, b;

	cr_assert_eq(pipe(ready), 0);
	a = holder(1, false, "zvmm-fd-holder", ready);
	b = holder(3, true, "zvmm-map-holder", ready);
	/* The write end is theirs alone now: one that fails is an end of file. */
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "a holder could not start");
	cr_assert_eq(read(ready[0], &c, 1), 1, "a holder could not start");
	close(ready[0]);
	cr_assert_eq(holders_of(st, NR, pid, comm), 2);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	cr_assert_eq(pid[0], -1);
	cr_assert_eq(pid[1], a, "an open fd: %ld, want %d", pid[1], (int)a);
	cr_assert_str_eq(comm[1], "zvmm-fd-holder");
	cr_assert_eq(pid[2], -1);
	cr_assert_eq(pid[3], b, "a mapping: %ld, want %d", pid[3], (int)b);
	cr_assert_str_eq(comm[3], "zvmm-map-holder");
	/* Let go: no one. */
	cr_assert_eq(holders_of(st, NR, pid, comm), 0);
	for (int i = 0; i < NR; i++)
		cr_assert_eq(pid[i], -1);
	cr_assert_eq(holder_of(&st[2], comm[0], sizeof(comm[0])), -1);
}

/* The files by mount id and inode, as zvmmd looks for its chunks. */
static void by_mount(struct holder_file *f)
{
	for (int i = 0; i < NR; i++) {
		int fd = open(path[i], O_RDONLY | O_CLOEXEC);

		cr_assert_geq(fd, 0);
		f[i] = (struct holder_file){ holder_mnt_id(fd), st[i].st_dev,
					     st[i].st_ino };
		close(fd);
		cr_assert_geq(f[i].mnt_id, 0);
	}
}

/*
 * holders_walk() by mount id and inode (fdinfo) finds an fd; a walk
 * past its deadline, or told to stop, says every file it did not find
 * held by someone not known (pid 0), never free.
 */
Test(holders, a_walk_cut_short_counts_every_file_held)
{
	struct holder_file f[NR];
	long pid[NR];
	char comm[NR][HOLDER_COMM_LEN], c;
	bool stop = true;
	int ready[2];
	pid_t a;

	by_mount(f);
	cr_assert_eq(pipe(ready), 0);
	a = holder(2, false, "zvmm-fd-holder", ready);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "a holder could not start");
	close(ready[0]);
	cr_assert_eq(holders_walk(f, NR, pid, comm, 0, NULL), 1);
	cr_assert_eq(pid[2], a, "an open fd: %ld, want %d", pid[2], (int)a);
	cr_assert_eq(pid[0], -1);
	/* A deadline long gone: nothing looked at, nothing free. */
	cr_assert_eq(holders_walk(f, NR, pid, comm, 1e-9, NULL), -ETIMEDOUT);
	for (int i = 0; i < NR; i++)
		cr_assert_eq(pid[i], 0, "file %d: %ld", i, pid[i]);
	cr_assert_eq(holders_walk(f, NR, pid, comm, 0, &stop), -ECANCELED);
	for (int i = 0; i < NR; i++)
		cr_assert_eq(pid[i], 0, "file %d: %ld", i, pid[i]);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	cr_assert_eq(holders_walk(f, NR, pid, comm, 0, NULL), 0);
}

#define LOADERS 8

/*
 * holders_walk_from() in slices (a deadline of 5 ms each) goes on
 * where the last gave up, always forward, and the slices of one pass
 * together find the holder, once, and nothing for a file no one holds.
 */
Test(holders, a_walk_in_slices_goes_on_where_it_stopped)
{
	struct holder_file f[NR];
	long pid[NR], resume = 0, last = 0;
	char comm[NR][HOLDER_COMM_LEN], c;
	unsigned int slices = 0, found = 0;
	pid_t a, load[LOADERS];
	int ready[2], ret;

	by_mount(f);
	/* Fds enough that a pass takes many slices: 8 x 2000. */
	for (int i = 0; i < LOADERS; i++) {
		cr_assert_eq(pipe(ready), 0);
		load[i] = fork();
		cr_assert_neq(load[i], -1);
		if (!load[i]) {
			int null = open("/dev/null", O_RDONLY);

			for (int k = 0; k < 2000 && null >= 0; k++)
				if (dup(null) < 0)
					_exit(1);
			(void)!write(ready[1], "", 1);
			for (;;)
				pause();
		}
		close(ready[1]);
		cr_assert_eq(read(ready[0], &c, 1), 1, "a loader failed");
		close(ready[0]);
	}
	cr_assert_eq(pipe(ready), 0);
	a = holder(2, false, "zvmm-fd-holder", ready);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "a holder could not start");
	close(ready[0]);
	do {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ret = holders_walk_from(f, NR, pid, comm,
					ts.tv_sec + ts.tv_nsec * 1e-9 + 5e-3,
					NULL, &resume);
		cr_assert(ret >= 0 || ret == -ETIMEDOUT, "%d", ret);
		cr_assert(!resume || resume > last,
			  "slice %u went back: from %ld to %ld", slices, last,
			  resume);
		cr_assert(pid[0] <= 0, "file 0 held by %ld", pid[0]);
		found += pid[2] == a;
		last = resume;
	} while (resume && ++slices < 1000000);
	cr_assert_eq(resume, 0, "no end after %u slices", slices);
	cr_assert_geq(found, 1, "the holder found in %u slices", found);
	cr_log_info("one pass in %u slices", slices + 1);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	for (int i = 0; i < LOADERS; i++) {
		kill(load[i], SIGKILL);
		waitpid(load[i], NULL, 0);
	}
}

#define RING_FILES 16000

/* A directory chain of @depth names of 200 bytes under @base, made. */
static void long_dir(char *out, size_t len, const char *base, int depth)
{
	char name[201];

	memset(name, 'd', 200);
	name[200] = '\0';
	snprintf(out, len, "%s", base);
	cr_assert(!mkdir(out, 0700) || errno == EEXIST, "%s", out);
	for (int i = 0; i < depth; i++) {
		size_t n = strlen(out);

		snprintf(out + n, len - n, "/%s", name);
		cr_assert(!mkdir(out, 0700) || errno == EEXIST, "%s", out);
	}
}

/*
 * The review's B1: any local user's io_uring with thousands of
 * registered files at long paths made each read of its fdinfo format
 * every path (seconds), and a walk that read it held zvmmd's loop for
 * as long. A walk reads the fdinfo of an fd whose link is a path alone:
 * a ring's is "anon_inode:[io_uring]".
 */
Test(holders, a_ring_of_registered_files_does_not_slow_a_walk)
{
	char dir[4096], file[4096 + 8], base[64], c, cmd[128];
	struct holder_file f[NR];
	char comm[NR][HOLDER_COMM_LEN];
	int ready[2], status;
	long pid[NR];
	double t0, took;
	pid_t ring;

	snprintf(base, sizeof(base), "/tmp/zvmm-test-holders.%d.long",
		 (int)getpid());
	long_dir(dir, sizeof(dir), base, 15);
	snprintf(file, sizeof(file), "%s/f", dir);
	by_mount(f);
	cr_assert_eq(pipe(ready), 0);
	ring = fork();
	cr_assert_neq(ring, -1);
	if (!ring) {
		static int fds[RING_FILES];
		struct rlimit rl;
		struct io_uring r;
		int fd;

		close(ready[0]);
		fd = open(file, O_RDWR | O_CREAT, 0600);
		if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl))
			_exit(1);
		rl.rlim_cur = rl.rlim_max;
		if (rl.rlim_max < RING_FILES + 64 ||
		    setrlimit(RLIMIT_NOFILE, &rl))
			_exit(3);
		for (int i = 0; i < RING_FILES; i++)
			fds[i] = fd;
		if (io_uring_queue_init(4, &r, 0) ||
		    io_uring_register_files(&r, fds, RING_FILES))
			_exit(2);
		(void)!write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		waitpid(ring, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
			test_skip(TEST_NEED_TOOL,
				  "RLIMIT_NOFILE's hard limit under %d",
				  RING_FILES + 64);
		cr_assert_fail("the ring could not be made: status 0x%x",
			       status);
	}
	close(ready[0]);
	t0 = test_mono_now();
	cr_assert_geq(holders_walk(f, NR, pid, comm, 0, NULL), 0);
	took = test_mono_now() - t0;
	kill(ring, SIGKILL);
	waitpid(ring, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	(void)!system(cmd);
	cr_log_info("a walk beside a ring of %d files took %.0f ms", RING_FILES,
		    took * 1e3);
	cr_assert_lt(took, 0.25,
		     "a walk took %.0f ms (the loop waits 250 ms at most)",
		     took * 1e3);
}
