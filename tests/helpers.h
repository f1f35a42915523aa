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
 * here; a test that lacks something calls cr_skip_test() with the reason
 * these return, never passes silently.
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

/* Copies @from to a new file @to of @mode: 0, or -1 with errno set. */
int test_copy_file(const char *from, const char *to, mode_t mode);

/* Writes @text to @path, replacing it; a failure fails the test. */
void test_write_text(const char *path, const char *text);

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

/* Skips the test when /dev/kvm cannot be opened. */
void test_need_kvm(void);

/*
 * A pool test's scratch: a hugetlbfs mount of @page pages at @mnt (the
 * test skips when it cannot be made) and, at the end, the pool file in
 * it, the mount, and the state record directory @state removed.
 */
void test_mount_pool(const char *mnt, uint64_t page, bool *mounted);
void test_pool_cleanup(const char *mnt, const char *pool, const char *state,
		       bool mounted);

#endif
