/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_TESTS_HELPERS_H
#define ZVMM_TESTS_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <criterion/parameterized.h>

#include "../zeroing/hugetlb.h"

/*
 * Probes for what a test needs (root, hugepages, CPU features) live
 * here; a test that lacks something skips through test_skip() or a
 * test_need_*() below, naming the need and the reason, and never passes
 * silently or calls cr_skip_test() itself (tests/report.py counts a skip
 * that names no need as a failure).
 */

#define POISON 0xa5

/* Path of the zvmm binary under test ($ZVMM_BIN, default build/zvmm). */
const char *test_zvmm_bin(void);

/*
 * Makes @count hugepages of @page_bytes free, reserving them as root.
 * Returns NULL on success, or a reason to skip.
 */
const char *test_reserve_hugepages(uint64_t page_bytes, long count,
				   struct zero_hugetlb_resv *r);

/*
 * test_reserve_hugepages(), or a skip for the hugepages it lacks (a
 * 1 GiB pool is TEST_NEED_1G, 2 MiB pages TEST_NEED_HUGEPAGES).
 */
void test_reserve_or_skip(uint64_t page_bytes, long count,
			  struct zero_hugetlb_resv *r);

/* Copies @from to a new file @to of @mode: 0, or -1 with errno set. */
int test_copy_file(const char *from, const char *to, mode_t mode);

/* Writes @text to @path, replacing it; a failure fails the test. */
void test_write_text(const char *path, const char *text);

/* A whole file of the source tree, NUL-terminated; a failure fails the test. */
char *test_slurp(const char *path);

/* Offset of the first byte in [p, p + len) that is not @v, or -1. */
long test_find_not(const void *p, size_t len, uint8_t v);

struct test_run {
	int status; /* exit status, or 128 + signal */
	char out[1 << 16]; /* stdout and stderr, interleaved, truncated */
	size_t out_len;
};

/*
 * Runs zvmm with @argv (NULL-terminated, without argv[0]). With
 * @as_user set the child drops to uid/gid 65534 first. A test that
 * signals zvmm waits for what zvmm says (test_wait_output()), never
 * for a time. Returns 0, or -errno when the child could not be run.
 */
int test_run_zvmm(const char *const *argv, bool as_user, struct test_run *r);

/*
 * The same as uid and gid 65534 with root's group as its one
 * supplementary group: a member of a test zvmmd's [service] group root.
 */
int test_run_zvmm_member(const char *const *argv, struct test_run *r);

/* A zvmm running in the background, its stdout and stderr on @fd. */
struct test_proc {
	pid_t pid;
	int fd;
	char copy[64];
};

/* Starts zvmm with @argv as test_run_zvmm() does, without waiting. */
int test_spawn_zvmm(const char *const *argv, bool as_user, struct test_proc *p);

/*
 * Reads @p's output into @r until it holds @needle (true), or the
 * output ends or @timeout_ms pass (false). @r starts empty.
 */
bool test_wait_output(struct test_proc *p, struct test_run *r,
		      const char *needle, int timeout_ms);

/* Whether @p has not exited yet (it is not reaped). */
bool test_proc_running(struct test_proc *p);

/* Reads the rest of @p's output into @r and waits for its status. */
int test_finish_zvmm(struct test_proc *p, struct test_run *r);

/*
 * Pool files: makes @path @bytes long and writes the poison over all of
 * it (as a guest that used the pool would leave it); the offset of the
 * first non-zero byte of the file, or -1, read without moving the file's
 * atime (the owner's O_NOATIME: an observer that leaves the pool's state
 * record valid). Both fail the test on error.
 */
void test_poison_file(const char *path, uint64_t bytes);
long test_file_find_not_zero(const char *path, uint64_t bytes);

/*
 * A number in zvmm's JSON output @out: the first "@key": after
 * "@section": { when @section is set. Fails the test when it is absent.
 */
uint64_t test_json_u64(const char *out, const char *section, const char *key);

/* Parameters for one test per registry backend: their indices. */
struct criterion_test_params test_backend_params(void);

/* nr_hugepages for @page_bytes, or -1. */
long test_nr_hugepages(uint64_t page_bytes);

/*
 * Skips: every skip says what the test needs, as "needs WHAT: why", and
 * `make test` ends with one line per WHAT (tests/report.py). The needs
 * named in $ZVMM_TEST_REQUIRE (a comma list of the keys below) fail
 * instead, so a machine that has them never skips a test for them.
 */
#define TEST_NEED_KVM "/dev/kvm" /* key: kvm */
#define TEST_NEED_1G "a 1 GiB hugepage pool" /* key: 1g */
#define TEST_NEED_ROOT "root" /* key: root */
#define TEST_NEED_HUGEPAGES "free 2 MiB hugepages" /* key: hugepages */
#define TEST_NEED_HUGETLBFS "a hugetlbfs mount" /* key: hugepages */
#define TEST_NEED_CPU "a CPU feature" /* key: cpu */
#define TEST_NEED_TOOL "a tool or file" /* key: tools */
#define TEST_NEED_CPUS "two CPUs" /* key: cpus */
#define TEST_NEED_TIME "a machine quick enough" /* key: time */
#define TEST_NEED_KERNEL "a kernel feature or setting" /* key: kernel */

/*
 * Skips the test for @need (one of the TEST_NEED_* strings), or fails it
 * when $ZVMM_TEST_REQUIRE lists @need's key. The function given to
 * test_on_skip() runs first, so a skip after setup leaves nothing behind
 * (Criterion runs no .fini after a skip).
 */
__attribute__((noreturn, format(printf, 2, 3))) void
test_skip(const char *need, const char *fmt, ...);
void test_on_skip(void (*undo)(void));

/* Whether $ZVMM_TEST_REQUIRE lists @need's key. */
bool test_required(const char *need);

/*
 * A check in a .fini, which Criterion does not count: it fails the run
 * instead, through the file $ZVMM_TEST_FINI_LOG that tests/report.py
 * reads after the runner.
 */
__attribute__((format(printf, 2, 3))) void
test_fini_expect(bool ok, const char *fmt, ...);

/* Whether /dev/kvm opens; the reason it does not in @why. */
bool test_have_kvm(char *why, size_t len);

/* Skips the test when /dev/kvm cannot be opened. */
void test_need_kvm(void);

/* Skips the test when the kernel has no 1 GiB hugetlb pool. */
void test_need_1g(void);

/* Skips the test when the effective user is not root. */
void test_need_root(const char *why);

/*
 * From here on openat2(2) fails with @err (ENOSYS or EPERM) in this
 * process and in whatever it forks and executes: a seccomp filter, as
 * valgrind, an older kernel or a container runtime's filter refuse it.
 * Criterion runs each test in a process of its own, so the filter ends
 * with the test. Fails the test unless openat2 then answers @err.
 */
void test_refuse_openat2(int err);

/*
 * A pool test's scratch: a hugetlbfs mount of @page pages at @mnt (the
 * test skips when it cannot be made) and, at the end, the pool file in
 * it, the mount, and the state record directory @state removed.
 */
void test_mount_pool(const char *mnt, uint64_t page, bool *mounted);
void test_pool_cleanup(const char *mnt, const char *pool, const char *state,
		       bool mounted);

/*
 * zvmmd for the tests that start one: the binary ($ZVMMD_BIN, default
 * build/zvmmd), a monotonic clock in seconds, a connection to @sock (an
 * fd, or -1), and zvmmd started on @conf with its log in @logdir's
 * zvmmd.log: *@pid is its pid from the fork on (-1 again if it exits
 * at start), and the test fails unless it listens on @sock within
 * @wait_s seconds.
 */
const char *test_zvmmd_bin(void);
double test_mono_now(void);
int test_zvmmd_connect(const char *sock);
/*
 * The same, with @pass_fd handed to zvmmd as fd 3 under @pass_name, the
 * way systemd hands in its fd store (-1: none).
 */
void test_zvmmd_start_passing(const char *conf, const char *sock,
			      const char *logdir, int wait_s, pid_t *pid,
			      int pass_fd, const char *pass_name);
void test_zvmmd_start(const char *conf, const char *sock, const char *logdir,
		      int wait_s, pid_t *pid);
/*
 * Ends *@pid (-1 then) with @sig and returns its wait status. A zvmmd
 * that did not exit 0 on SIGTERM, or that had already ended (a
 * sanitizer's report, a crash), has its log in @logdir copied to stderr,
 * so that the run's output says why.
 */
int test_zvmmd_stop(pid_t *pid, int sig, const char *logdir);
/*
 * Whether zvmmd *@pid still runs: when it has ended, its status and log
 * go to stderr (as test_zvmmd_stop) and *@pid becomes -1.
 */
bool test_zvmmd_alive(pid_t *pid, const char *logdir);

#endif
