// SPDX-License-Identifier: MIT
/*
 * zvmm and libzvmm as an unprivileged user (uid 65534), as libvirt's qemu
 * user or a jailer's uid runs a VMM: /dev/kvm and /dev/userfaultfd by
 * group, a hugetlbfs mount of the user's own (uid=, mode=0700), the
 * hugepages reserved by root, vm.unprivileged_userfaultfd left at 0.
 *
 * The device permissions are the test's alone: each launch runs in a
 * mount namespace of its own where /dev/kvm and /dev/userfaultfd are
 * nodes the test made (its group, its mode) bound over the host's, or
 * where /dev has no userfaultfd at all (a kernel before 6.1). Nothing on
 * the host changes, and nothing is left to put back if a test dies. The
 * binary is dropped to the user with setpriv(1) and a clean environment,
 * the library with setresuid(2) in a child.
 *
 * Every launch is checked from the guest's side (the touch guest's
 * sampled lines over a pool that another tenant filled) and from outside
 * (the pool file read after a scrubbing exit); the same launches as root
 * run after the user's. Only the tests that boot a guest need /dev/kvm:
 * the library (a thread touching the memory as a vCPU would), its
 * userfaultfd and its refusals, the pool checks (through `zvmm prezero`)
 * and the other verbs run without it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/size.h"
#include "helpers.h"

#define UID 65534
#define GID 65534
#define UFFD_GID 64990 /* the test's stand-in for the zvmm group */
#define KVM_GID 64991 /* and for the kvm group */
#define BASE "/tmp/zvmm-test-user"
#define MNT BASE /* the user's hugetlbfs mount */
#define RMNT BASE ".root" /* root's */
#define HOME_DIR BASE ".home"
#define DEV BASE ".dev" /* device nodes, in each launch's namespace */
#define BIN BASE ".bin" /* a copy of zvmm any user may run */
#define RSTATE BASE ".rstate"
#define RCACHE BASE ".rcache"
#define ROOTDIR BASE ".rootdir" /* root's 0755 directory */
#define SYSCTL "/proc/sys/vm/unprivileged_userfaultfd"
#define MEM "64M"
#define MEM_BYTES (64ull << 20)
#define PAGES 112 /* 2 MiB pages: two 64 MiB pools and a library pool */

enum uffd_dev {
	DEV_GROUP, /* 0660, group UFFD_GID, the user in it */
	DEV_DENIED, /* 0600: root's alone */
	DEV_NOT_MEMBER, /* 0660, group UFFD_GID, the user not in it */
	DEV_ABSENT, /* no /dev/userfaultfd: a kernel before 6.1 */
};

struct who {
	bool user;
	enum uffd_dev dev;
};

static const struct who user = { true, DEV_GROUP };
static const struct who root = { false, DEV_GROUP };

static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static bool mounted, rmounted;
static char sysctl_saved[8];
static pid_t holder = -1;
static struct test_run r;

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)!write(fd, s, strlen(s));
		close(fd);
	}
}

static void teardown(void);

/*
 * What every test needs, checked before anything is made: root (the
 * devices and the mount), setpriv(1), a kernel with /dev/userfaultfd and
 * vm.unprivileged_userfaultfd at 0 (else any user may handle faults and
 * the refusals below cannot happen). /dev/kvm only for the tests that
 * boot a guest (setup_kvm()).
 */
static void setup(void)
{
	struct stat st;
	ssize_t n = -1;
	int fd;

	test_need_root("makes a user's devices and hugetlbfs mount");
	if (access("/usr/bin/setpriv", X_OK))
		test_skip(TEST_NEED_TOOL, "no /usr/bin/setpriv (util-linux)");
	if (stat("/dev/userfaultfd", &st) || !S_ISCHR(st.st_mode))
		test_skip(TEST_NEED_KERNEL,
			  "this kernel has no /dev/userfaultfd (Linux 6.1+)");
	fd = open(SYSCTL, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, sysctl_saved, sizeof(sysctl_saved) - 1);
		close(fd);
	}
	if (n <= 0)
		test_skip(TEST_NEED_KERNEL, "cannot read " SYSCTL);
	if (sysctl_saved[0] != '0')
		test_skip(TEST_NEED_KERNEL,
			  SYSCTL " is not 0: every user may handle faults");
	test_on_skip(teardown);
	test_reserve_or_skip(SZ_2M, PAGES, &resv);
	cr_assert_eq(mkdir(MNT, 0700), 0, "%s", strerror(errno));
	if (mount("none", MNT, "hugetlbfs", 0,
		  "pagesize=2M,uid=65534,gid=65534,mode=0700"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount hugetlbfs: %s",
			  strerror(errno));
	mounted = true;
	test_mount_pool(RMNT, SZ_2M, &rmounted);
	cr_assert_eq(mkdir(HOME_DIR, 0700), 0);
	cr_assert_eq(chown(HOME_DIR, UID, GID), 0);
	cr_assert_eq(mkdir(DEV, 0755), 0);
	cr_assert_eq(mkdir(ROOTDIR, 0755), 0);
	cr_assert_eq(test_copy_file(test_zvmm_bin(), BIN, 0755), 0, "%s",
		     strerror(errno));
}

/*
 * The tests that boot a guest: Criterion runs the suite's .init (setup())
 * first and then this, so a skip here undoes what setup() made
 * (test_on_skip()); it does not call setup() again.
 */
static void setup_kvm(void)
{
	test_need_kvm();
}

static void teardown(void)
{
	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
		holder = -1;
	}
	if (sysctl_saved[0])
		write_file(SYSCTL, sysctl_saved);
	(void)!system("rm -f " MNT "/* " RMNT "/* 2>/dev/null");
	if (mounted)
		umount2(MNT, MNT_DETACH);
	if (rmounted)
		umount2(RMNT, MNT_DETACH);
	mounted = rmounted = false;
	rmdir(MNT);
	rmdir(RMNT);
	rmdir(DEV);
	unlink(BIN);
	(void)!system("rm -rf " HOME_DIR " " RSTATE " " RCACHE " " ROOTDIR);
	zero_hugetlb_release(&resv);
}

TestSuite(user, .init = setup, .fini = teardown, .timeout = 240);

static int make_node(const char *path, dev_t rdev, mode_t mode, gid_t gid)
{
	if (mknod(path, S_IFCHR | mode, rdev) || chown(path, 0, gid) ||
	    chmod(path, mode))
		return -1;
	return 0;
}

/*
 * In a fresh mount namespace of this (single-threaded) child: /dev/kvm
 * of group KVM_GID where the host has one, and /dev/userfaultfd as @dev
 * says, the host's nodes untouched. Exits 125 when it cannot.
 */
static void private_devices(enum uffd_dev dev)
{
	struct stat kvm;
	bool has_kvm = !stat("/dev/kvm", &kvm);

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		_exit(125);
	if (dev == DEV_ABSENT) {
		/* A /dev without userfaultfd: the nodes zvmm may open. */
		if (mount("tmpfs", "/dev", "tmpfs", 0, "mode=0755") ||
		    (has_kvm &&
		     make_node("/dev/kvm", kvm.st_rdev, 0660, KVM_GID)) ||
		    make_node("/dev/null", makedev(1, 3), 0666, 0) ||
		    make_node("/dev/zero", makedev(1, 5), 0666, 0) ||
		    make_node("/dev/urandom", makedev(1, 9), 0666, 0))
			_exit(125);
		return;
	}
	if (mount("tmpfs", DEV, "tmpfs", 0, "mode=0755") ||
	    (has_kvm && (make_node(DEV "/kvm", kvm.st_rdev, 0660, KVM_GID) ||
			 mount(DEV "/kvm", "/dev/kvm", NULL, MS_BIND, NULL))) ||
	    make_node(DEV "/userfaultfd", makedev(10, 257),
		      dev == DEV_DENIED ? 0600 : 0660, UFFD_GID) ||
	    mount(DEV "/userfaultfd", "/dev/userfaultfd", NULL, MS_BIND, NULL))
		_exit(125);
}

/* zvmm @args as @w, output in r; the environment a login would give. */
static void launch(const struct who *w, const char *const *args)
{
	const char *argv[48];
	struct test_proc p = { .copy = "" };
	int pfd[2], n = 0;

	if (w->user) {
		argv[n++] = "/usr/bin/setpriv";
		argv[n++] = "--reuid=65534";
		argv[n++] = "--regid=65534";
		argv[n++] = w->dev == DEV_GROUP ? "--groups=64990,64991" :
						  "--groups=64991";
		argv[n++] = "--";
	}
	argv[n++] = "/usr/bin/env";
	argv[n++] = "-i";
	argv[n++] = "PATH=/usr/bin:/bin";
	argv[n++] = w->user ? "HOME=" HOME_DIR : "ZVMM_STATE_DIR=" RSTATE;
	if (!w->user)
		argv[n++] = "ZVMM_CACHE_DIR=" RCACHE;
	argv[n++] = BIN;
	while (*args && n < 47)
		argv[n++] = *args++;
	argv[n] = NULL;

	r.out_len = 0;
	r.out[0] = '\0';
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	p.pid = fork();
	cr_assert_geq(p.pid, 0);
	if (!p.pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		umask(022);
		if (chdir("/"))
			_exit(125);
		private_devices(w->dev);
		execv(argv[0], (char *const *)argv);
		_exit(126);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	cr_assert_eq(test_finish_zvmm(&p, &r), 0);
	cr_assert_neq(r.status, 125, "the test could not make its devices");
	cr_assert_neq(r.status, 126, "cannot run %s", argv[0]);
}

static void run_pool(const struct who *w, const char *pool, const char *mode,
		     const char *on_exit)
{
	char m[48], e[48];

	snprintf(m, sizeof(m), "zeroing.mode=%s", mode);
	snprintf(e, sizeof(e), "pool.on_exit=%s", on_exit);
	launch(w,
	       (const char *[]){ "run", "--mem", MEM, "--pool", pool, "--set",
				 m, "--set", e, "--cmdline", "verify=64",
				 "--json", "-", "--quiet", NULL });
}

static void guest_saw_zeros(const char *what)
{
	cr_assert_eq(r.status, 0, "%s: status %d: %s", what, r.status, r.out);
	cr_assert_gt(test_json_u64(r.out, "guest", "verified_bytes"), 0);
	cr_assert_eq(test_json_u64(r.out, "guest", "nonzero_bytes"), 0,
		     "%s: the guest read another's bytes: %s", what, r.out);
}

/*
 * Tenant after tenant on one pool, each policy: before every launch the
 * pool is poisoned from outside (a previous tenant's data at every
 * offset), then a tenant that leaves its own pattern, then a scrubbing
 * exit whose file is read back. @pool's directory decides whose it is.
 */
static void tenants(const struct who *w, const char *pool)
{
	static const char *const modes[] = { "prezero", "demand", "hybrid" };
	char what[64];

	for (unsigned int i = 0; i < 3; i++) {
		snprintf(what, sizeof(what), "%s %s after poison",
			 w->user ? "user" : "root", modes[i]);
		test_poison_file(pool, MEM_BYTES);
		if (w->user)
			cr_assert_eq(chown(pool, UID, GID), 0);
		run_pool(w, pool, modes[i], "keep");
		guest_saw_zeros(what);
		/* The next one reads where this guest wrote its pattern. */
		snprintf(what, sizeof(what), "%s %s after a tenant",
			 w->user ? "user" : "root", modes[i]);
		run_pool(w, pool, modes[(i + 1) % 3], "scrub");
		guest_saw_zeros(what);
		cr_assert_eq(test_file_find_not_zero(pool, MEM_BYTES), -1,
			     "%s: a scrubbing exit left bytes", what);
	}
}

Test(user, every_policy_tenant_after_tenant, .init = setup_kvm)
{
	tenants(&user, MNT "/pool");
	/* Whose files: the user's, where the user keeps them. */
	cr_assert_eq(access(HOME_DIR "/.local/state/zvmm", F_OK), 0,
		     "no state directory in the user's home");
	/* And the same launches as root still pass. */
	tenants(&root, RMNT "/pool");
}

/*
 * zvmm exec as the user, as run: QEMU (KVM by group here, TCG where the
 * host has none) on the user's pool, poisoned from outside first, reads
 * zero; on_exit scrubs and writes the record in the user's state
 * directory, and the next exec trusts it and scrubs nothing.
 */
Test(user, exec_runs_qemu_on_the_users_pool)
{
	char elf[256], pool[] = MNT "/exec";
	const char *args[] = {
		"exec",
		"--mem",
		MEM,
		"--pool",
		pool,
		"--set",
		"pool.on_exit=scrub",
		"--json",
		"-",
		"--quiet",
		"--",
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
		MEM,
		"-object",
		"memory-backend-file,id=m,size={mem-size},mem-path={mem-path},share=on",
		"-nodefaults",
		"-nographic",
		"-serial",
		"stdio",
		"-device",
		"isa-debug-exit,iobase=0xf4,iosize=0x04",
		"-kernel",
		ROOTDIR "/touch.elf",
		"-append",
		"stride=2M verify=8",
		NULL
	};

	if (system("command -v qemu-system-x86_64 >/dev/null 2>&1"))
		test_skip(TEST_NEED_TOOL,
			  "qemu-system-x86_64 is not installed (make deps)");
	snprintf(elf, sizeof(elf), "%s", test_zvmm_bin());
	*strrchr(elf, '/') = '\0';
	strcat(elf, "/guest/touch.elf");
	cr_assert_eq(test_copy_file(elf, ROOTDIR "/touch.elf", 0644), 0);
	test_poison_file(pool, MEM_BYTES);
	cr_assert_eq(chown(pool, UID, GID), 0);
	launch(&user, args);
	/* isa-debug-exit: QEMU's 1 is the guest's 0. */
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"nonzero_bytes\":0,"), "%s", r.out);
	cr_assert(strstr(r.out, "\"record_written\": true"), "%s", r.out);
	cr_assert_eq(test_json_u64(r.out, "prepare", "scrub_bytes"), MEM_BYTES);
	launch(&user, args);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"record_clean\": true"), "%s", r.out);
	cr_assert_eq(test_json_u64(r.out, "prepare", "scrub_bytes"), 0);
	cr_assert_eq(test_file_find_not_zero(pool, MEM_BYTES), -1);
}

static long free_2m(void)
{
	long nr, nfree;

	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr, &nfree), 0);
	return nfree;
}

/* ------------------------------------------------------- the library */

struct toucher {
	volatile uint64_t *mem;
	uint64_t bytes, foreign;
	uint64_t mark;
};

/* A vCPU: reads every word, then leaves a mark at an unsampled offset. */
static void *touch(void *arg)
{
	struct toucher *t = arg;

	for (uint64_t i = 0; i < t->bytes / 8; i++)
		t->foreign += t->mem[i] != 0;
	for (uint64_t p = 0; p < t->bytes / SZ_2M; p++)
		t->mem[(p * SZ_2M + 4096 * (p % 511) + 2056) / 8] = t->mark;
	return NULL;
}

static void lib_log(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "libzvmm: %s\n", msg);
}

/* An API call that failed, said for the test to read; its -errno. */
static long lib_failed(const char *call, int ret)
{
	fprintf(stderr, "%s: %s\n", call, strerror(-ret));
	return ret;
}

/*
 * One tenant through the API, on @pool (NULL: an anonymous memfd): the
 * words it read that were not zero, or the -errno of the call that
 * failed.
 */
static long lib_tenant(const char *pool, const char *mode, uint64_t mark)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(MEM_BYTES, ZVMM_PAGE_2M);
	struct toucher t = { .mark = mark };
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	pthread_t th;
	void *addr;
	int ret;

	mem.pool_path = pool;
	ret = zvmm_policy_new(&pol);
	if (ret)
		return lib_failed("zvmm_policy_new", ret);
	ret = zvmm_policy_set(pol, "zeroing.mode", mode);
	if (!ret)
		ret = zvmm_policy_set(pol, "pool.on_exit", "keep");
	if (!ret)
		ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol);
	if (ret)
		return lib_failed("zvmm_guest_open", ret);
	ret = zvmm_guest_prepare(g, 0);
	if (!ret)
		ret = zvmm_guest_serve_thread(g, NULL, NULL);
	if (ret) {
		zvmm_guest_close(g);
		return lib_failed("zvmm_guest_prepare", ret);
	}
	zvmm_guest_memory(g, &addr, &t.bytes);
	t.mem = addr;
	zvmm_guest_start(g);
	pthread_create(&th, NULL, touch, &t);
	pthread_join(th, NULL);
	ret = zvmm_guest_stop(g);
	if (!ret)
		ret = zvmm_guest_exit(g);
	zvmm_guest_close(g);
	return ret ? lib_failed("zvmm_guest_stop or _exit", ret) :
		     (long)t.foreign;
}

/* Tenants on one pool, one per mode, one after another. */
struct lib_job {
	const char *pool;
	const char *modes[4];
};

/*
 * libzvmm in a process that made its devices as @w says and dropped to
 * the user itself (setresuid(2)), with the environment of a login: the
 * tenants of @job, each reading every word after the one before marked
 * its pages. Exit 0, or 1 with the reason on stderr, where the library's
 * log goes too, debug included.
 */
static void lib_child(const struct who *w, const struct lib_job *job)
{
	const gid_t groups[] = { KVM_GID, UFFD_GID };
	long foreign;

	private_devices(w->dev);
	if (setgroups(w->dev == DEV_GROUP ? 2 : 1, groups) ||
	    setresgid(GID, GID, GID) || setresuid(UID, UID, UID) || !geteuid())
		_exit(125);
	clearenv();
	setenv("HOME", HOME_DIR, 1);
	zvmm_set_log(lib_log, NULL, ZVMM_LOG_DEBUG);
	for (unsigned int i = 0; i < 4 && job->modes[i]; i++) {
		foreign = lib_tenant(job->pool, job->modes[i],
				     0x5a5a0000ull + i + 1);
		if (foreign < 0)
			_exit(1);
		if (foreign) {
			fprintf(stderr,
				"tenant %u (%s) read %ld words not zero\n", i,
				job->modes[i], foreign);
			_exit(1);
		}
	}
	_exit(0);
}

/* lib_child() for @w and @job; its status and output in r. */
static void lib_launch(const struct who *w, const struct lib_job *job)
{
	struct test_proc p = { .copy = "" };
	int pfd[2];

	r.out_len = 0;
	r.out[0] = '\0';
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	p.pid = fork();
	cr_assert_geq(p.pid, 0);
	if (!p.pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		lib_child(w, job);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	cr_assert_eq(test_finish_zvmm(&p, &r), 0);
	cr_assert_neq(r.status, 125,
		      "the test could not make its devices or become the user");
}

Test(user, the_library_as_a_user)
{
	static const struct lib_job job = {
		MNT "/lib", { "demand", "hybrid", "prezero", "demand" }
	};

	/* Someone's data before the first tenant: the pool is the user's. */
	test_poison_file(MNT "/lib", MEM_BYTES);
	cr_assert_eq(chown(MNT "/lib", UID, GID), 0);
	lib_launch(&user, &job);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	/* The tenants' marks stayed theirs; the file is the user's. */
	cr_assert_eq(test_file_find_not_zero(MNT "/lib", MEM_BYTES) >= 0, true,
		     "the last tenant's marks are gone");
}

/* --------------------------------------------- where userfaultfd comes from */

Test(user, userfaultfd_comes_from_the_device, .init = setup_kvm)
{
	launch(&user, (const char *[]){ "run", "--mem", MEM, "--verbose",
					"--set", "zeroing.mode=demand", NULL });
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "userfaultfd from /dev/userfaultfd"), "%s",
		  r.out);
	cr_assert(strstr(r.out, ", 0 non-zero"), "%s", r.out);
}

Test(user, the_library_takes_userfaultfd_from_the_device)
{
	lib_launch(&user, &(struct lib_job){ NULL, { "demand" } });
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "userfaultfd from /dev/userfaultfd"), "%s",
		  r.out);
}

/*
 * Refused, with every way out named (zeroing/uffd.c), by `zvmm run` or
 * by the library; nothing created, nothing held.
 */
static void refused(const struct who *w, const char *offers, bool library)
{
	long before = free_2m();
	char set[32];

	for (unsigned int i = 0; i < 2; i++) {
		const char *mode = i ? "hybrid" : "demand";

		if (library) {
			lib_launch(w,
				   &(struct lib_job){ MNT "/new", { mode } });
			cr_assert_eq(r.status, 1, "status %d: %s", r.status,
				     r.out);
			cr_assert(
				strstr(r.out,
				       "zvmm_guest_prepare: Operation not permitted"),
				"%s", r.out);
		} else {
			snprintf(set, sizeof(set), "zeroing.mode=%s", mode);
			launch(w, (const char *[]){ "run", "--mem", MEM,
						    "--pool", MNT "/new",
						    "--set", set, NULL });
			cr_assert_eq(r.status, 3, "status %d: %s", r.status,
				     r.out);
		}
		cr_assert(strstr(r.out, "/dev/userfaultfd: "), "%s", r.out);
		cr_assert(strstr(r.out,
				 "userfaultfd(2): Operation not permitted"),
			  "%s", r.out);
		cr_assert(strstr(r.out, offers), "%s", r.out);
		cr_assert(strstr(r.out, "vm.unprivileged_userfaultfd=1 (now 0"),
			  "%s", r.out);
		cr_assert(strstr(r.out, "prezero policy"), "%s", r.out);
		cr_assert_neq(access(MNT "/new", F_OK), 0,
			      "a refused launch left its pool file");
		cr_assert_eq(free_2m(), before, "hugepages held after refusal");
	}
}

static void refused_without_access(bool library)
{
	static const struct who denied = { true, DEV_DENIED };
	static const struct who outside = { true, DEV_NOT_MEMBER };

	refused(&denied,
		"which this system has for root alone (group 64990, mode 0600)",
		library);
	cr_assert(strstr(r.out, "/dev/userfaultfd: Permission denied"), "%s",
		  r.out);
	refused(&outside,
		"which this system offers to group 64990 (mode 0660): add this user to group 64990",
		library);
}

Test(user, refused_without_access_to_the_device, .init = setup_kvm)
{
	refused_without_access(false);
}

Test(user, the_library_is_refused_without_access_to_the_device)
{
	refused_without_access(true);
}

static void refused_without_device(bool library)
{
	static const struct who absent = { true, DEV_ABSENT };

	refused(&absent,
		"the one way this system offers: it has no /dev/userfaultfd",
		library);
	cr_assert(strstr(r.out, "/dev/userfaultfd: No such file or directory"),
		  "%s", r.out);
}

Test(user, refused_where_the_kernel_has_no_device, .init = setup_kvm)
{
	refused_without_device(false);
}

Test(user, the_library_is_refused_where_the_kernel_has_no_device)
{
	refused_without_device(true);
}

/* Without the device, the sysctl is the other way, and it is taken. */
Test(user, the_sysctl_is_the_other_way, .init = setup_kvm)
{
	static const struct who absent = { true, DEV_ABSENT };

	write_file(SYSCTL, "1");
	launch(&absent, (const char *[]){ "run", "--mem", MEM, "--verbose",
					  "--pool", MNT "/pool", "--set",
					  "zeroing.mode=hybrid", NULL });
	write_file(SYSCTL, sysctl_saved);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "userfaultfd from userfaultfd(2)"), "%s",
		  r.out);
	cr_assert(strstr(r.out, ", 0 non-zero"), "%s", r.out);
}

Test(user, the_library_takes_the_sysctl_way)
{
	static const struct who absent = { true, DEV_ABSENT };

	write_file(SYSCTL, "1");
	lib_launch(&absent, &(struct lib_job){ MNT "/pool", { "hybrid" } });
	write_file(SYSCTL, sysctl_saved);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "userfaultfd from userfaultfd(2)"), "%s",
		  r.out);
}

/* -------------------------------------------------- pools and other verbs */

/*
 * A process holding the pool open until killed: the user's (a program it
 * ran, so its /proc is the user's to read, as any of its processes'), or
 * root's when @as_root.
 */
static pid_t hold(const char *pool, bool as_root)
{
	const char *sh = "exec 3<\"$0\" && echo held && exec sleep 600";
	const char *argv[] = { "/usr/bin/setpriv",
			       "--reuid=65534",
			       "--regid=65534",
			       "--clear-groups",
			       "--",
			       "/bin/sh",
			       "-c",
			       sh,
			       pool,
			       NULL };
	int pfd[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(as_root ? "/bin/sh" : argv[0],
		      (char *const *)(as_root ? argv + 5 : argv));
		_exit(126);
	}
	close(pfd[1]);
	cr_assert_eq(read(pfd[0], &c, 1), 1, "the holder could not open");
	close(pfd[0]);
	return pid;
}

/* `zvmm prezero` of @pool: the pool checks of every launch, no guest. */
static void prezero_pool(const struct who *w, const char *pool)
{
	launch(w, (const char *[]){ "prezero", "--mem", MEM, "--pool", pool,
				    "--quiet", NULL });
}

Test(user, a_busy_pool_is_refused)
{
	char pid[32];

	prezero_pool(&user, MNT "/pool");
	cr_assert_eq(r.status, 0, "first launch: status %d: %s", r.status,
		     r.out);
	/* Held by another process of the same user: named. */
	holder = hold(MNT "/pool", false);
	prezero_pool(&user, MNT "/pool");
	snprintf(pid, sizeof(pid), "is open by pid %d", (int)holder);
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, pid), "%s", r.out);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	/* Held by root, whose /proc this user cannot read: still refused. */
	holder = hold(MNT "/pool", true);
	prezero_pool(&user, MNT "/pool");
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "is open by another process"), "%s", r.out);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	holder = -1;
	/* Free again: the pool was left as it was, and is the user's. */
	test_poison_file(MNT "/pool", MEM_BYTES);
	prezero_pool(&user, MNT "/pool");
	cr_assert_eq(r.status, 0, "after the holders left: status %d: %s",
		     r.status, r.out);
	cr_assert_eq(test_file_find_not_zero(MNT "/pool", MEM_BYTES), -1,
		     "the pool is not zero after the holders left");
}

/*
 * --reserve beyond what is free: root's, and the pool is as it was.
 * `zvmm run` reserves only once it found /dev/kvm.
 */
Test(user, reserving_hugepages_needs_root, .init = setup_kvm)
{
	long nr = test_nr_hugepages(SZ_2M), before = free_2m();
	char big[32];

	snprintf(big, sizeof(big), "%ldM", (before + 8) * 2);
	launch(&user, (const char *[]){ "run", "--mem", big, "--reserve",
					"--pool", MNT "/big", NULL });
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "only root may raise nr_hugepages"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "sudo tee /sys/kernel/mm/hugepages/"), "%s",
		  r.out);
	cr_assert_not(strstr(r.out, "could not restore"), "%s", r.out);
	cr_assert_eq(test_nr_hugepages(SZ_2M), nr);
	cr_assert_neq(access(MNT "/big", F_OK), 0);
	cr_assert_eq(free_2m(), before, "hugepages held after the refusal");
}

Test(user, what_needs_root_says_so_and_changes_nothing)
{
	long before = free_2m();

	/* A profile in root's directory: refused before measuring. */
	launch(&user, (const char *[]){ "calibrate", "--quiet", "--out",
					ROOTDIR "/calibration.ini", NULL });
	cr_assert_eq(r.status, 2, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "run as root"), "%s", r.out);
	cr_assert_neq(access(ROOTDIR "/calibration.ini", F_OK), 0);

	/* A pool root made in the user's mount: not the user's to trust. */
	test_poison_file(MNT "/roots", MEM_BYTES);
	prezero_pool(&user, MNT "/roots");
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "not by this user"), "%s", r.out);
	cr_assert_eq(test_file_find_not_zero(MNT "/roots", MEM_BYTES), 0,
		     "a refused launch changed root's pool");
	unlink(MNT "/roots");

	/* Root's mount: the user cannot reach it and is told so. */
	prezero_pool(&user, RMNT "/pool");
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "Permission denied"), "%s", r.out);
	cr_assert_neq(access(RMNT "/pool", F_OK), 0);
	cr_assert_eq(free_2m(), before, "hugepages held after the refusals");
}

/* The other verbs a user runs: none of them asks for root. */
Test(user, every_other_verb_runs_as_a_user)
{
	test_poison_file(MNT "/pre", MEM_BYTES);
	cr_assert_eq(chown(MNT "/pre", UID, GID), 0);
	prezero_pool(&user, MNT "/pre");
	cr_assert_eq(r.status, 0, "prezero: status %d: %s", r.status, r.out);
	cr_assert_eq(test_file_find_not_zero(MNT "/pre", MEM_BYTES), -1,
		     "prezero as a user left bytes");
	launch(&user, (const char *[]){ "calibrate", "--out", "-", NULL });
	cr_assert_eq(r.status, 0, "calibrate: status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "best"), "%s", r.out);
	launch(&user, (const char *[]){ "backends", NULL });
	cr_assert_eq(r.status, 0, "backends: status %d: %s", r.status, r.out);
	launch(&user, (const char *[]){ "policy", "--set",
					"zeroing.mode=demand", NULL });
	cr_assert_eq(r.status, 0, "policy: status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "demand"), "%s", r.out);
}
