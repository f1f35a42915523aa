// SPDX-License-Identifier: MIT
/*
 * The threads libzvmm starts inside an embedding VMM, seen from
 * /proc/self/task: they take none of the VMM's signals, and they are
 * pinned to one CPU each only while the policy says so ([numa] pin).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "helpers.h"

#define BYTES (32ULL << 20)

static struct zvmm_reservation *resv;

static void setup(void)
{
	int ret;

	test_need_root("hugepages");
	ret = zvmm_hugepages_reserve(ZVMM_PAGE_2M, BYTES / ZVMM_PAGE_2M, &resv);
	if (ret)
		test_skip(TEST_NEED_HUGEPAGES, "cannot reserve 16: %s",
			  strerror(-ret));
}

static void teardown(void)
{
	zvmm_hugepages_release(resv);
	resv = NULL;
}

TestSuite(threads, .init = setup, .fini = teardown, .timeout = 60);

/* A field of /proc/self/task/@tid/status, as text. */
static bool task_field(long tid, const char *key, char *out, size_t len)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) &&
		    line[strlen(key)] == ':') {
			snprintf(out, len, "%s", line + strlen(key) + 1);
			out[strcspn(out, "\n")] = '\0';
			found = true;
		}
	fclose(f);
	return found;
}

/* The tasks of this process but the calling thread, up to @max. */
static int other_tasks(long *tids, int max)
{
	long self = syscall(SYS_gettid);
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	cr_assert_not_null(dir);
	while ((d = readdir(dir)) && n < max) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid > 0 && tid != self)
			tids[n++] = tid;
	}
	closedir(dir);
	return n;
}

static struct zvmm_guest *open_demand(const char *pin)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	int ret;

	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "demand"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.workers", "2"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "numa.pin", pin), 0);
	ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	cr_assert_eq(ret, 0, "open: %s", strerror(-ret));
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	return g;
}

Test(threads, library_threads_block_the_vmms_signals)
{
	struct zvmm_guest *g;
	long before[64], tids[64];
	int nb = other_tasks(before, 64), n, checked = 0;
	char blk[64];

	g = open_demand("cpu");
	cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	n = other_tasks(tids, 64);
	for (int i = 0; i < n; i++) {
		unsigned long long mask;
		bool old = false;

		for (int k = 0; k < nb; k++)
			old |= before[k] == tids[i];
		if (old || !task_field(tids[i], "SigBlk", blk, sizeof(blk)))
			continue;
		mask = strtoull(blk, NULL, 16);
		/* SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGCHLD, SIGURG blocked */
		for (int sig = 1; sig <= 31; sig++)
			if (sig != 9 && sig != 19)
				cr_assert(
					mask & (1ull << (sig - 1)),
					"library thread %ld takes signal %d (SigBlk %s)",
					tids[i], sig, blk);
		checked++;
	}
	/* Two workers and the serving thread. */
	cr_assert_geq(checked, 3, "only %d library threads found", checked);
	cr_assert_eq(zvmm_guest_stop(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_close(g);
}

static int pinned_threads(long *before, int nb)
{
	long tids[64];
	int n = other_tasks(tids, 64), pinned = 0;
	char cpus[128];

	for (int i = 0; i < n; i++) {
		bool old = false;

		for (int k = 0; k < nb; k++)
			old |= before[k] == tids[i];
		if (!old &&
		    task_field(tids[i], "Cpus_allowed_list", cpus,
			       sizeof(cpus)) &&
		    !strpbrk(cpus, ",-"))
			pinned++;
	}
	return pinned;
}

Test(threads, pinning_is_the_policys)
{
	long before[64];
	int nb = other_tasks(before, 64);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct zvmm_guest *g;

	if (ncpu < 2)
		test_skip(TEST_NEED_CPUS,
			  "one CPU: pinned and unpinned look the same");
	g = open_demand("cpu");
	cr_assert_eq(pinned_threads(before, nb), 2,
		     "pin = cpu: two workers on one CPU each");
	zvmm_guest_close(g);
	g = open_demand("none");
	cr_assert_eq(pinned_threads(before, nb), 0,
		     "pin = none: no worker has an affinity of its own");
	zvmm_guest_close(g);
}
