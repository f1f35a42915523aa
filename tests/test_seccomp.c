// SPDX-License-Identifier: MIT
/*
 * libzvmm inside a VMM's sandbox (libzvmm(3), SECCOMP): tenant after
 * tenant under every policy, serving mode and on_exit, run by
 * tests/seccomp_tenant.c under a seccomp filter of exactly
 * include/zvmm/syscalls.list, where any other system call ends the
 * program; zvmmd under its unit's filter, leasing to such tenants; and
 * the list, the manual, the unit and what the code imports agreeing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LIST "include/zvmm/syscalls.list"
#define DAEMON_LIST "dist/zvmmd.syscalls"
#define UNIT "dist/systemd/zvmmd.service"

static char dir[64], mnt[96];
static bool mounted;
static struct zero_hugetlb_resv resv;

static const char *tenant_bin(void)
{
	const char *b = getenv("ZVMM_SECCOMP_TENANT");

	return b ? b : "build/tests/seccomp-tenant";
}

static void teardown(void)
{
	char cmd[160];

	if (mounted)
		umount2(mnt, MNT_DETACH);
	mounted = false;
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "test_seccomp: %s left behind\n", dir);
	}
	dir[0] = 0;
	zero_hugetlb_release(&resv);
}

/* Root, 24 free 2 MiB pages, a scratch directory and a hugetlbfs in it. */
static void setup(void)
{
	test_on_skip(teardown);
	test_need_root(
		"a seccomp test reserves hugepages and mounts hugetlbfs");
	if (access(tenant_bin(), X_OK))
		test_skip(TEST_NEED_TOOL,
			  "%s is not built (make test builds it)",
			  tenant_bin());
	test_reserve_or_skip(2ULL << 20, 24, &resv);
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-seccomp.XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	cr_assert(!mkdir(mnt, 0700));
	if (mount("none", mnt, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "mount -t hugetlbfs: %s",
			  strerror(errno));
	mounted = true;
}

TestSuite(seccomp, .init = setup, .fini = teardown, .timeout = 300);

/* Runs @argv; its exit status (128 + signal), its output into @out. */
static int run(const char *const *argv, char *out, size_t len)
{
	size_t have = 0;
	int p[2], st;
	pid_t pid;

	cr_assert(!pipe2(p, O_CLOEXEC));
	pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], out + have, len - 1 - have);

		if (n <= 0)
			break;
		have += (size_t)n;
		if (have == len - 1)
			have = 0; /* keep the tail */
	}
	out[have] = 0;
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char out[1 << 16];

/*
 * Every call of the API a VMM makes, no pool: the three policies, both
 * serving modes, calibration, a policy file, a failing open, and the
 * hugepage reservation, all under a filter of exactly the list.
 */
Test(seccomp, every_call_runs_under_a_filter_of_exactly_the_list)
{
	char prof[128], cal[128];
	const char *argv[] = { tenant_bin(),
			       "--allow",
			       LIST,
			       "--reserve",
			       "--calibrate",
			       "--profile",
			       prof,
			       "--calibration-out",
			       cal,
			       "--policy",
			       "configs/hybrid.conf",
			       NULL };
	int st;

	snprintf(prof, sizeof(prof), "%s/profile", dir);
	snprintf(cal, sizeof(cal), "%s/calibration.ini", dir);
	st = run(argv, out, sizeof(out));
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert(strstr(out, "6 tenants, every word read zero"), "%s", out);
	cr_assert(!access(cal, F_OK), "no calibration written: %s", out);
}

/*
 * Tenant after tenant on one pool file, every on_exit (keep leaves the
 * last tenant's marks for the next to see, scrub writes a record the
 * next one trusts, pool.record = verify reads it back on verify
 * threads), a warm prezero: only zero was read, under the filter.
 */
Test(seccomp, tenant_after_tenant_on_a_pool_under_the_filter)
{
	char pool[128], state[128], prof[128];
	const char *argv[] = { tenant_bin(), "--allow",	    LIST,  "--pool",
			       pool,	     "--state-dir", state, "--profile",
			       prof,	     "--rounds",    "2",   NULL };
	int st;

	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(prof, sizeof(prof), "%s/profile", dir);
	st = run(argv, out, sizeof(out));
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert(strstr(out, "39 tenants, every word read zero"), "%s", out);
}

/*
 * Writing a record prunes the state directory, under the filter too: a
 * file of a record's name that no launch could trust (here, no record
 * at all) is removed when the first tenant on the pool writes its own.
 */
Test(seccomp, records_are_pruned_under_the_filter)
{
	char pool[128], state[128], prof[128], stale[160];
	const char *argv[] = { tenant_bin(), "--allow",	    LIST,  "--pool",
			       pool,	     "--state-dir", state, "--profile",
			       prof,	     NULL };
	int st;

	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(prof, sizeof(prof), "%s/profile", dir);
	snprintf(stale, sizeof(stale), "%s/pool-1-1.state", state);
	cr_assert(!mkdir(state, 0700));
	test_write_text(stale, "no record\n");
	cr_assert(!chmod(stale, 0600));
	st = run(argv, out, sizeof(out));
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert(strstr(out, "every word read zero"), "%s", out);
	cr_expect(access(stale, F_OK), "%s was not removed", stale);
}

/* The same with openat2 refused, as older container runtimes do. */
Test(seccomp, a_pool_works_with_openat2_refused)
{
	static const char *const how[] = { "openat2=38", "openat2=1" };
	char pool[128], state[128], prof[128];

	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(prof, sizeof(prof), "%s/profile", dir);
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { tenant_bin(), "--allow",	    LIST,
				       "--deny",     how[i],	    "--pool",
				       pool,	     "--state-dir", state,
				       "--profile",  prof,	    NULL };
		int st = run(argv, out, sizeof(out));

		cr_assert_eq(st, 0, "%s: exit %d: %s", how[i], st, out);
		cr_assert(strstr(out, "every word read zero"), "%s", out);
	}
}

/*
 * The filter bites: a list without memfd_create (the first tenant's
 * memory, with no pool) ends the program at that call, so the tests
 * above would catch a system call missing from the list.
 */
Test(seccomp, a_system_call_outside_the_list_ends_the_tenant)
{
	char cut[128], line[256], prof[128];
	const char *argv[] = { tenant_bin(), "--allow", cut,
			       "--profile",  prof,	NULL };
	FILE *in = fopen(LIST, "re"), *to;
	int st;

	snprintf(cut, sizeof(cut), "%s/cut.list", dir);
	snprintf(prof, sizeof(prof), "%s/profile", dir);
	cr_assert(in, "%s: %s", LIST, strerror(errno));
	to = fopen(cut, "we");
	cr_assert(to);
	while (fgets(line, sizeof(line), in))
		if (!strstr(line, " memfd_create"))
			fputs(line, to);
	fclose(in);
	fclose(to);
	st = run(argv, out, sizeof(out));
	cr_assert_eq(st, 70, "exit %d, not the filter's 70: %s", st, out);
	cr_assert(strstr(out, "syscall 319 is not in the list"), "%s", out);
}

static bool wait_for(const char *path, pid_t pid)
{
	for (int i = 0; i < 400; i++) {
		if (!access(path, F_OK))
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		poll(NULL, 0, 25);
	}
	return false;
}

/*
 * zvmmd under its unit's SystemCallFilter= (both lists, and what
 * systemd always allows), applied without systemd; tenants lease from
 * it under the library's filter; SIGTERM ends it cleanly.
 */
Test(seccomp, zvmmd_and_its_tenants_run_under_their_filters)
{
	/* The plain build: a sanitizer's runtime makes calls of its own. */
	const char *zvmmd = getenv("ZVMM_SECCOMP_ZVMMD");
	char conf[128], sock[128], chunks[128], text[512], abs[256];
	const char *dargv[] = { tenant_bin(), "--allow", LIST, "--allow",
				DAEMON_LIST,  "--exec",	 abs,  "--config",
				conf,	      NULL };
	const char *targv[] = { tenant_bin(), "--allow", LIST, "--socket",
				sock,	      "--mem",	 "32", NULL };
	int st, dst;
	pid_t d;

	if (!zvmmd)
		zvmmd = "build/zvmmd";
	cr_assert(realpath(zvmmd, abs), "%s: %s", zvmmd, strerror(errno));
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", dir);
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
	snprintf(chunks, sizeof(chunks), "%s/chunks", dir);
	snprintf(text, sizeof(text),
		 "[service]\nsocket = %s\ndir = %s\ngroup = root\n"
		 "[pages.2M]\nchunk = 16M\nlow = 32M\nhigh = 32M\nmax = 64M\n",
		 sock, chunks);
	test_write_text(conf, text);
	d = fork();
	cr_assert(d >= 0);
	if (!d) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execv(dargv[0], (char *const *)dargv);
		_exit(127);
	}
	if (!wait_for(sock, d)) {
		kill(d, SIGKILL);
		waitpid(d, &dst, 0);
		cr_assert_fail(
			"zvmmd under its filter did not start (status %d)",
			dst);
	}
	st = run(targv, out, sizeof(out));
	kill(d, SIGTERM);
	cr_assert_eq(waitpid(d, &dst, 0), d);
	cr_assert_eq(st, 0, "a tenant: exit %d: %s", st, out);
	cr_assert(strstr(out, "every word read zero"), "%s", out);
	cr_assert(
		WIFEXITED(dst) && !WEXITSTATUS(dst),
		"zvmmd under its filter: %s %d (SIGSYS is %d: a system call outside %s and %s)",
		WIFEXITED(dst) ? "exit" : "signal",
		WIFEXITED(dst) ? WEXITSTATUS(dst) : WTERMSIG(dst), SIGSYS, LIST,
		DAEMON_LIST);
}

/* ------------------------------------------------ the lists agree */

static void python(const char *args, const char *what)
{
	char cmd[512];
	FILE *p;
	size_t n;
	int st;

	if (access("/usr/bin/python3", X_OK) || access("/usr/bin/nm", X_OK))
		test_skip(TEST_NEED_TOOL, "python3 and nm (make deps)");
	snprintf(cmd, sizeof(cmd), "python3 tools/syscalls.py %s 2>&1", args);
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	cr_assert_eq(st, 0, "%s: %s", what, out);
}

TestSuite(seccomp_list);

/*
 * What the code can make: every function libzvmm and zvmmd import
 * (nm -D) is known to tools/syscalls.py, and what it may call is in the
 * list (zvmmd's: also in dist/zvmmd.syscalls).
 */
Test(seccomp_list, the_list_holds_what_the_code_imports)
{
	const char *lib = getenv("ZVMM_LIB"), *zvmmd = getenv("ZVMMD_BIN");
	char args[512];

	if (!lib)
		lib = "build/libzvmm/libzvmm.so";
	if (!zvmmd)
		zvmmd = "build/zvmmd";
	snprintf(args, sizeof(args), "--imports %s --check " LIST, lib);
	python(args, "libzvmm");
	snprintf(args, sizeof(args), "--imports %s --check " LIST, zvmmd);
	python(args, "zvmmd");
}

/* The words of @text after every occurrence of @key up to the line end. */
static void words_after(const char *text, const char *key, char *set,
			size_t len)
{
	const char *p = text;

	set[0] = 0;
	while ((p = strstr(p, key))) {
		const char *e;

		p += strlen(key);
		e = strchr(p, '\n');
		strncat(set, p, e ? (size_t)(e - p) : strlen(p));
		strncat(set, " ", len - strlen(set) - 1);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, unique, space separated. */
static void canonical(char *set)
{
	char *w[1024], *save = NULL, *copy = strdup(set), *t;
	unsigned int n = 0;

	for (t = strtok_r(copy, " \t", &save); t && n < 1024;
	     t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	qsort(w, n, sizeof(*w), cmp_str);
	set[0] = 0;
	for (unsigned int i = 0; i < n; i++)
		if (!i || strcmp(w[i], w[i - 1])) {
			strcat(set, w[i]);
			strcat(set, " ");
		}
	free(copy);
}

/*
 * Each context's calls as "ctx: a b c\n" from the list files, and from
 * libzvmm(3)'s SECCOMP table (.TP, the context, its calls).
 */
static void list_contexts(const char *path, char *buf, size_t len)
{
	char *text = test_slurp(path), *save = NULL, *line;
	char prev[128] = "", calls[4096] = "";

	buf[0] = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char ctx[128], sc[64];

		if (line[0] == '#' || sscanf(line, "%127s %63s", ctx, sc) != 2)
			continue;
		if (strcmp(ctx, prev)) {
			if (prev[0])
				snprintf(buf + strlen(buf), len - strlen(buf),
					 "%s: %s\n", prev, calls);
			snprintf(prev, sizeof(prev), "%s", ctx);
			calls[0] = 0;
		}
		strcat(calls, sc);
		strcat(calls, " ");
	}
	if (prev[0])
		snprintf(buf + strlen(buf), len - strlen(buf), "%s: %s\n", prev,
			 calls);
	free(text);
}

static void man_contexts(char *buf, size_t len)
{
	char *text = test_slurp("man/libzvmm.3"), *s, *e, *save = NULL;
	char *line, *ctx = NULL;
	int state = 0;

	s = strstr(text, "\n.SH SECCOMP\n");
	cr_assert(s, "libzvmm(3) has no SECCOMP section");
	e = strstr(s + 1, "\n.SH ");
	if (e)
		*e = 0;
	buf[0] = 0;
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, ".TP")) {
			state = 1;
		} else if (state == 1) {
			ctx = line + (line[2] == 'R' ? 4 : 3);
			ctx[strcspn(ctx, " ")] = 0;
			state = 2;
		} else if (state == 2) {
			snprintf(buf + strlen(buf), len - strlen(buf),
				 "%s: %s \n", ctx, line);
			state = 0;
		}
	}
	free(text);
}

Test(seccomp_list, libzvmm3_seccomp_and_the_installed_list_agree)
{
	static char list[16384], man[16384];

	list_contexts(LIST, list, sizeof(list));
	man_contexts(man, sizeof(man));
	cr_assert(strlen(list) > 200, "%s is nearly empty: %s", LIST, list);
	cr_assert_str_eq(
		man, list,
		"libzvmm(3) SECCOMP differs from %s (python3 tools/syscalls.py --man %s writes the table):\nman:\n%s\nlist:\n%s",
		LIST, LIST, man, list);
}

/* zvmmd's unit allows exactly the library's list and the daemon's. */
Test(seccomp_list, the_zvmmd_unit_filter_is_both_lists)
{
	static char unit[8192], want[8192];
	char *text = test_slurp(UNIT), *lib = test_slurp(LIST);
	char *dmn = test_slurp(DAEMON_LIST);
	char *both[2] = { lib, dmn };

	words_after(text, "\nSystemCallFilter=", unit, sizeof(unit));
	canonical(unit);
	want[0] = 0;
	for (int i = 0; i < 2; i++) {
		char *save = NULL, *line;

		for (line = strtok_r(both[i], "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char ctx[128], sc[64];

			if (line[0] != '#' &&
			    sscanf(line, "%127s %63s", ctx, sc) == 2) {
				strcat(want, sc);
				strcat(want, " ");
			}
		}
	}
	canonical(want);
	cr_assert(strlen(want) > 100);
	cr_assert_str_eq(
		unit, want,
		"%s's SystemCallFilter= is not %s and %s (python3 tools/syscalls.py --unit %s writes it):\nunit: %s\nlists: %s",
		UNIT, LIST, DAEMON_LIST, LIST, unit, want);
	free(text);
	free(lib);
	free(dmn);
}
