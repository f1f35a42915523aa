// SPDX-License-Identifier: MIT
/*
 * `zvmm exec`: Debian's QEMU, unmodified (KVM where /dev/kvm works, TCG
 * elsewhere), boots the touch guest on memory zvmm prepared and handed
 * to it as an inherited fd. Checked from the guest's side (its own
 * verify and probe of an earlier tenant's marks) and from outside (the
 * pool's state record, a second launch, what is left holding the file):
 * a poisoned pool reads zero; tenant after tenant on one pool; a record
 * on_exit = scrub wrote after QEMU is trusted next time; a second user of
 * the pool is refused while QEMU runs; SIGTERM to zvmm ends QEMU and
 * on_exit still runs; a VMM that leaves a process holding the memory
 * gets no record and no byte changed; a zvmmd lease boots clean and goes
 * back.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/size.h"
#include "helpers.h"

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static char tmp[64], mnt[80], state[96], pool[128], elf[256];
static bool mounted;
static pid_t zvmmd_pid = -1;

static void teardown(void);

static bool have_qemu(void)
{
	return !system("command -v qemu-system-x86_64 >/dev/null 2>&1");
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/zvmm-test-exec.%d", (int)getpid());
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	mkdir(tmp, 0755);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	setenv("ZVMM_STATE_DIR", state, 1);
	snprintf(elf, sizeof(elf), "%s", test_zvmm_bin());
	*strrchr(elf, '/') = '\0';
	strcat(elf, "/guest/touch.elf");
	test_on_skip(teardown);
}

/* The tests that boot QEMU on a pool of 2 MiB pages. */
static void setup_pool(void)
{
	if (!have_qemu())
		test_skip(TEST_NEED_TOOL,
			  "qemu-system-x86_64 is not installed (make deps)");
	/* 64M for a pool, or zvmmd's max of 192M and 8M for QEMU's own. */
	test_reserve_or_skip(SZ_2M, 104, &resv);
	test_mount_pool(mnt, SZ_2M, &mounted);
}

static void teardown(void)
{
	char cmd[256];

	if (zvmmd_pid > 0)
		test_zvmmd_stop(&zvmmd_pid, SIGTERM, tmp);
	if (mounted) {
		snprintf(cmd, sizeof(cmd), "rm -f %s/*", mnt);
		(void)!system(cmd);
		umount2(mnt, MNT_DETACH);
	}
	snprintf(cmd, sizeof(cmd),
		 "umount -l %s/chunks/2M 2>/dev/null; rm -rf %s", tmp, tmp);
	(void)!system(cmd);
	zero_hugetlb_release(&resv);
}

TestSuite(exec, .init = setup, .fini = teardown, .timeout = 180);

#define QEMU_MAX 48

/*
 * argv for `zvmm exec [@opts...] -- qemu ...` on 64 MiB with the touch
 * guest's command line @append; @paused: QEMU waits (-S) until ended.
 */
static void qemu_argv(const char **argv, const char *const *opts,
		      const char *append, bool paused)
{
	static const char *const q[] = {
		"qemu-system-x86_64",
		"-M",
		"microvm,x-option-roms=off,memory-backend=m",
		"-cpu",
		"qemu64",
		"-accel",
		"kvm",
		"-accel",
		"tcg",
		"-m",
		"64M",
		"-object",
		"memory-backend-file,id=m,size={mem-size},mem-path={mem-path},share=on",
		"-nodefaults",
		"-nographic",
		"-serial",
		"stdio",
		"-device",
		"isa-debug-exit,iobase=0xf4,iosize=0x04",
		NULL
	};
	unsigned int n = 0;

	argv[n++] = "exec";
	argv[n++] = "--mem";
	argv[n++] = "64M";
	while (opts && *opts)
		argv[n++] = *opts++;
	argv[n++] = "--";
	for (unsigned int i = 0; q[i]; i++)
		argv[n++] = q[i];
	argv[n++] = "-kernel";
	argv[n++] = elf;
	argv[n++] = "-append";
	argv[n++] = append;
	if (paused)
		argv[n++] = "-S";
	argv[n] = NULL;
	cr_assert_lt(n, QEMU_MAX);
}

/* QEMU's status for the guest's exit code @code (isa-debug-exit). */
#define GUEST(code) (((code) << 1) | 1)

static void exec_qemu(const char *const *opts, const char *append)
{
	const char *argv[QEMU_MAX];

	qemu_argv(argv, opts, append, false);
	cr_assert_eq(test_run_zvmm(argv, false, &r), 0);
	/* QEMU's own errors exit 1 too, which is also the guest's 0. */
	cr_assert(strstr(r.out, "ZVMM-REPORT") || r.status == 3,
		  "the guest did not report: %s", r.out);
}

static uint64_t field(const char *section, const char *key)
{
	return test_json_u64(r.out, section, key);
}

/* A number in the guest's ZVMM-REPORT line; 0 when absent. */
static uint64_t guest_field(const char *key)
{
	char k[64];
	const char *p = strstr(r.out, "ZVMM-REPORT {");

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = p ? strstr(p, k) : NULL;
	return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

static bool json_true(const char *key)
{
	char k[64];

	snprintf(k, sizeof(k), "\"%s\": true", key);
	return strstr(r.out, k) != NULL;
}

/* A poisoned pool is scrubbed before QEMU maps it: the guest reads zero. */
Test(exec, poisoned_pool_reads_zero, .init = setup_pool)
{
	test_poison_file(pool, 64 * SZ_1M);
	exec_qemu((const char *[]){ "--pool", pool, "--json", "-", NULL },
		  "stride=2M verify=8");
	cr_assert_eq(r.status, GUEST(0), "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"nonzero_bytes\":0,"), "%s", r.out);
	cr_assert_gt(guest_field("verified_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("prepare", "scrub_bytes"), 64 * SZ_1M, "%s", r.out);
	/* The pool's default on_exit: its pages go back to the kernel. */
	cr_assert(strstr(r.out, "\"on_exit\": \"release\""), "%s", r.out);
}

/*
 * Tenant after tenant on one pool, the first's marks where no one
 * samples, left in the pool (on_exit = keep): the next looks for them.
 * Then on_exit = scrub writes a record after QEMU (whose mapping moved
 * the file's atime), and the third launch trusts it: nothing scrubbed
 * before QEMU, and the guest still reads zero.
 */
Test(exec, tenant_after_tenant_and_a_trusted_record, .init = setup_pool)
{
	exec_qemu((const char *[]){ "--pool", pool, "--set",
				    "pool.on_exit=keep", NULL },
		  "mark=16 seed=5");
	cr_assert_eq(r.status, GUEST(0), "first tenant: %s", r.out);
	cr_assert_neq(test_file_find_not_zero(pool, 64 * SZ_1M), -1,
		      "the first tenant's marks are not in the pool");
	exec_qemu((const char *[]){ "--pool", pool, "--set",
				    "pool.on_exit=scrub", "--json", "-", NULL },
		  "probe=5 mark=16 order=down");
	cr_assert_eq(r.status, GUEST(0),
		     "the second tenant found the first's data: %s", r.out);
	cr_assert(json_true("record_written"), "%s", r.out);
	cr_assert_eq(test_file_find_not_zero(pool, 64 * SZ_1M), -1);
	exec_qemu((const char *[]){ "--pool", pool, "--json", "-", NULL },
		  "probe=5 mark=16 verify=8");
	cr_assert_eq(r.status, GUEST(0), "third tenant: %s", r.out);
	cr_assert(json_true("record_clean"), "%s", r.out);
	cr_assert_eq(field("prepare", "scrub_bytes"), 0, "%s", r.out);
}

/* Whether some process besides zvmm maps @pool: QEMU has opened it. */
static bool mapped_twice(void)
{
	char cmd[256];

	snprintf(
		cmd, sizeof(cmd),
		"test $(grep -l ' %s$' /proc/[0-9]*/maps 2>/dev/null | wc -l) -ge 2",
		pool);
	return !system(cmd);
}

static void wait_mapped(void)
{
	double end = test_mono_now() + 60;

	while (!mapped_twice() && test_mono_now() < end)
		usleep(20000);
	cr_assert(mapped_twice(), "QEMU did not map %s", pool);
}

/*
 * While QEMU runs, the pool is its alone: a second exec is refused and
 * changes nothing. SIGTERM to zvmm is passed to QEMU, which ends, and
 * on_exit still scrubs and writes the record.
 */
Test(exec, busy_while_qemu_runs_and_sigterm_ends_it, .init = setup_pool)
{
	const char *argv[QEMU_MAX];
	struct test_proc p;
	struct test_run second;

	qemu_argv(argv,
		  (const char *[]){ "--pool", pool, "--set",
				    "pool.on_exit=scrub", "--json", "-", NULL },
		  "stride=2M", true);
	cr_assert_eq(test_spawn_zvmm(argv, false, &p), 0);
	wait_mapped();
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "64M",
						     "--pool", pool, "--",
						     "true", NULL },
				   false, &second),
		     0);
	cr_assert_eq(second.status, 3, "second user: %s", second.out);
	cr_assert(strstr(second.out, "in use by zvmm") ||
			  strstr(second.out, "open by pid"),
		  "%s", second.out);
	cr_assert(test_proc_running(&p), "the first exec ended");
	cr_assert_eq(kill(p.pid, SIGTERM), 0);
	cr_assert_eq(test_finish_zvmm(&p, &r), 0);
	/* QEMU ends on SIGTERM with status 0; zvmm exits with it. */
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("vmm", "signals_passed"), 1, "%s", r.out);
	cr_assert(strstr(r.out, "\"on_exit\": \"scrub\""), "%s", r.out);
	cr_assert(json_true("record_written"), "%s", r.out);
}

/*
 * A VMM that leaves a process holding the memory: on_exit must not
 * change a byte under it (it may be a guest still running), no record
 * vouches for the pool, and the next launch is refused until it lets
 * go, then scrubs everything.
 */
Test(exec, a_process_left_holding_the_memory_gets_no_record, .init = setup_pool)
{
	char hold[160];

	snprintf(hold, sizeof(hold), "%s/hold", tmp);
	cr_assert_eq(
		test_run_zvmm(
			(const char *[]){
				"exec", "--mem", "64M", "--pool", pool, "--set",
				"pool.on_exit=scrub", "--json", "-", "--", "sh",
				"-c",
				"(touch $0; i=0; while [ -e $0 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done) >/dev/null 2>&1 & exit 0",
				hold, NULL },
			false, &r),
		0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(json_true("left_holding"), "%s", r.out);
	cr_assert_null(strstr(r.out, "\"record_written\": true"), "%s", r.out);
	cr_assert(strstr(r.out, "\"on_exit\": \"keep\""), "%s", r.out);
	cr_assert(strstr(r.out, "no state record"), "%s", r.out);
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "64M",
						     "--pool", pool, "--",
						     "true", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 3, "refused while held: %s", r.out);
	cr_assert(strstr(r.out, "open by pid"), "%s", r.out);
	unlink(hold);
	for (int i = 0; i < 200; i++) {
		exec_qemu((const char *[]){ "--pool", pool, "--json", "-",
					    NULL },
			  "stride=2M verify=8");
		if (r.status != 3)
			break;
		usleep(50000);
	}
	cr_assert_eq(r.status, GUEST(0), "%s", r.out);
	cr_assert_eq(field("prepare", "scrub_bytes"), 64 * SZ_1M, "%s", r.out);
}

/* Private memory: {mem-*} and ZVMM_MEM_* name it, and QEMU boots on it. */
Test(exec, private_memory_and_its_names, .init = setup_pool)
{
	cr_assert_eq(
		test_run_zvmm(
			(const char *[]){
				"exec", "--mem", "4M", "--quiet", "--", "sh",
				"-c",
				"test \"$ZVMM_MEM_PATH\" = /proc/self/fd/$ZVMM_MEM_FD && test $ZVMM_MEM_SIZE = {mem-size} && test {mem-path} = $ZVMM_MEM_PATH && test -e {mem-path} && echo names-ok",
				NULL },
			false, &r),
		0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "names-ok"), "%s", r.out);
	cr_assert_null(strstr(r.out, "zvmm:"), "--quiet: %s", r.out);
	exec_qemu(NULL, "stride=2M verify=8");
	cr_assert_eq(r.status, GUEST(0), "%s", r.out);
	cr_assert(strstr(r.out, "\"nonzero_bytes\":0,"), "%s", r.out);
}

/* What cannot work is said before anything is taken, or as a shell says. */
Test(exec, refusals)
{
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "64M",
						     "--policy",
						     "configs/hybrid.conf",
						     "--", "true", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "userfaultfd"), "%s", r.out);
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "64M",
						     "--set",
						     "zeroing.mode=demand",
						     "--", "true", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert_eq(
		test_run_zvmm((const char *[]){ "exec", "--mem", "64M", NULL },
			      false, &r),
		0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "after --"), "%s", r.out);
}

Test(exec, a_vmm_not_found_is_127, .init = setup_pool)
{
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "4M",
						     "--", "/nonexistent/vmm",
						     NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 127, "%s", r.out);
	cr_assert(strstr(r.out, "cannot run /nonexistent/vmm"), "%s", r.out);
}

/*
 * A zvmmd of the test's own, its socket in @sock: 64 MiB chunks, one
 * kept filled, @max in all.
 */
static void start_zvmmd(char sock[128], const char *max)
{
	char conf[128], text[512];

	test_need_root("zvmmd mounts hugetlbfs");
	if (access(test_zvmmd_bin(), X_OK))
		test_skip(TEST_NEED_TOOL, "no %s (make)", test_zvmmd_bin());
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", tmp);
	snprintf(sock, 128, "%s/zvmmd.sock", tmp);
	snprintf(text, sizeof(text),
		 "[service]\nsocket = %s\ndir = %s/chunks\ngroup = root\n"
		 "[pages.2M]\nchunk = 64M\nlow = 64M\nhigh = 64M\nmax = %s\n",
		 sock, tmp, max);
	test_write_text(conf, text);
	test_zvmmd_start(conf, sock, tmp, 60, &zvmmd_pid);
}

/*
 * A zvmmd lease, tenant after tenant: the first's marks are not found by
 * the second, and every chunk goes back. A request that would span
 * chunks is refused with what to configure.
 */
Test(exec, a_zvmmd_lease_boots_clean_and_goes_back, .init = setup_pool)
{
	char sock[128];

	start_zvmmd(sock, "192M");
	exec_qemu((const char *[]){ "--pool-service", "--socket", sock, NULL },
		  "mark=16 seed=9");
	cr_assert_eq(r.status, GUEST(0), "first tenant: %s", r.out);
	exec_qemu((const char *[]){ "--pool-service", "--socket", sock,
				    "--json", "-", NULL },
		  "probe=9 mark=16 order=down");
	cr_assert_eq(r.status, GUEST(0),
		     "the second tenant found the first's data: %s", r.out);
	cr_assert(strstr(r.out, "\"source\": \"service\""), "%s", r.out);
	cr_assert_eq(test_run_zvmm((const char *[]){ "exec", "--mem", "128M",
						     "--pool-service",
						     "--socket", sock, "--",
						     "true", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "[pages.2M]"), "%s", r.out);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(test_run_zvmm((const char *[]){ "pool", "status",
							     "--socket", sock,
							     "--json", "-",
							     NULL },
					   false, &r),
			     0);
		if (strstr(r.out, "\"leased_bytes\":0,") ||
		    strstr(r.out, "\"leased_bytes\": 0,"))
			break;
		usleep(50000);
	}
	cr_assert(strstr(r.out, "\"leased_bytes\":0,") ||
			  strstr(r.out, "\"leased_bytes\": 0,"),
		  "%s", r.out);
}

/*
 * As a member of zvmmd's group (uid 65534): QEMU reopens mem-path under
 * the chunk's owner and mode, and zvmmd gave the chunk to the member's
 * uid for the lease, so QEMU opens it; the guest reads zero.
 */
Test(exec, a_member_runs_qemu_on_its_lease, .init = setup_pool)
{
	char sock[128], guest[128];
	const char *argv[QEMU_MAX];

	start_zvmmd(sock, "128M");
	/* The user reaches the socket and a copy of the guest. */
	cr_assert_eq(chmod(tmp, 0711), 0);
	cr_assert_eq(chmod(sock, 0666), 0);
	snprintf(guest, sizeof(guest), "%s/touch.elf", tmp);
	cr_assert_eq(test_copy_file(elf, guest, 0644), 0);
	snprintf(elf, sizeof(elf), "%s", guest);
	qemu_argv(argv,
		  (const char *[]){ "--pool-service", "--socket", sock, NULL },
		  "probe=9 mark=16 verify=8", false);
	cr_assert_eq(test_run_zvmm_member(argv, &r), 0);
	cr_assert_eq(r.status, GUEST(0), "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "ZVMM-REPORT"), "%s", r.out);
	cr_assert_gt(guest_field("verified_bytes"), 0, "%s", r.out);
}

/*
 * Only the access time a VMM's mapping moves is forgiven: a VMM that
 * changes the pool's ctime (a chmod through its fd, as one that let
 * another user in would) gets no record, and its pages are punched out
 * (release) whatever on_exit says: a page pinned meanwhile leaves the
 * file.
 */
Test(exec, a_changed_ctime_gets_no_record, .init = setup_pool)
{
	cr_assert_eq(
		test_run_zvmm((const char *[]){ "exec", "--mem", "64M",
						"--pool", pool, "--set",
						"pool.on_exit=scrub", "--json",
						"-", "--", "sh", "-c",
						"chmod 0600 {mem-path}", NULL },
			      false, &r),
		0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "\"on_exit\": \"release\""), "%s", r.out);
	cr_assert(strstr(r.out, "\"record_written\": false"), "%s", r.out);
	/* A VMM that only maps it (QEMU) leaves a record. */
	exec_qemu((const char *[]){ "--pool", pool, "--set",
				    "pool.on_exit=scrub", "--json", "-", NULL },
		  "stride=2M");
	cr_assert_eq(r.status, GUEST(0), "%s", r.out);
	cr_assert(json_true("record_written"), "%s", r.out);
}

/* A VMM's status reaches zvmm's caller even when SIGCHLD came ignored. */
Test(exec, the_vmms_status_with_sigchld_ignored, .init = setup_pool)
{
	char cmd[512];
	int st;

	snprintf(
		cmd, sizeof(cmd),
		"trap '' CHLD; exec %s exec --mem 4M --quiet -- sh -c 'exit 7'",
		test_zvmm_bin());
	st = system(cmd);
	cr_assert(WIFEXITED(st), "status %d", st);
	cr_assert_eq(WEXITSTATUS(st), 7);
}

/*
 * libzvmm: a caller's fd handed to another process. Its holders cannot
 * be told from the caller's own, so on_exit changes nothing (keep),
 * whatever the policy says.
 */
Test(exec, a_callers_fd_is_kept_as_it_is, .init = setup_pool)
{
	struct zvmm_mem mem;
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	struct zvmm_stats st;
	uint64_t offset;
	int fd, gfd;

	fd = memfd_create("exec-test", MFD_CLOEXEC | MFD_HUGETLB);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	cr_assert_eq(ftruncate(fd, 8 * SZ_2M), 0);
	zvmm_mem_init(&mem, 8 * SZ_2M, ZVMM_PAGE_2M);
	mem.source = ZVMM_SOURCE_FD;
	mem.fd = fd;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "prezero"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "scrub"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0);
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_file(g, &gfd, &offset), 0);
	cr_assert_geq(gfd, 0);
	cr_assert_eq(offset, 0);
	cr_assert_eq(zvmm_guest_handed_back(g), 0);
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_stats(g, &st);
	cr_assert_str_eq(st.on_exit, "keep");
	zvmm_guest_close(g);
	zvmm_policy_free(pol);
	close(fd);
}
