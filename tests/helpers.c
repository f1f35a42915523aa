// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sys/mman.h>

#include "../lib/safefile.h"
#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "helpers.h"

/*
 * The engine tests run the engine in this process as the zvmm program
 * does, with its ZVMM_STATE_DIR and ZVMM_CACHE_DIR; libzvmm.so, which
 * api/library_reads_no_environment loads, never reads them.
 */
__attribute__((constructor)) static void engine_as_the_program(void)
{
	program_env_enable();
}

const char *test_zvmm_bin(void)
{
	const char *b = getenv("ZVMM_BIN");

	return b && *b ? b : "build/zvmm";
}

const char *test_reserve_hugepages(uint64_t page_bytes, long count,
				   struct zero_hugetlb_resv *r)
{
	static char why[256];
	long nr, nfree;
	int ret;

	*r = (struct zero_hugetlb_resv)ZERO_HUGETLB_RESV_INIT;
	if (zero_hugetlb_counts(page_bytes, &nr, &nfree)) {
		snprintf(why, sizeof(why),
			 "kernel has no hugetlb pool of %llu kB pages",
			 (unsigned long long)(page_bytes >> 10));
		return why;
	}
	ret = zero_hugetlb_reserve(page_bytes, count, r);
	if (ret) {
		snprintf(
			why, sizeof(why),
			"needs %ld free %llu kB hugepages, %ld free, cannot reserve more: %s",
			count, (unsigned long long)(page_bytes >> 10), nfree,
			strerror(-ret));
		return why;
	}
	return NULL;
}

void test_reserve_or_skip(uint64_t page_bytes, long count,
			  struct zero_hugetlb_resv *r)
{
	const char *why = test_reserve_hugepages(page_bytes, count, r);

	if (why)
		test_skip(page_bytes == SZ_1G ? TEST_NEED_1G :
						TEST_NEED_HUGEPAGES,
			  "%s", why);
}

long test_find_not(const void *p, size_t len, uint8_t v)
{
	const uint64_t *w = p;
	uint64_t pat = 0x0101010101010101ull * v;
	const uint8_t *b;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != pat)
			break;
	b = p;
	for (i *= 8; i < len; i++)
		if (b[i] != v)
			return (long)i;
	return -1;
}

long test_nr_hugepages(uint64_t page_bytes)
{
	long nr, nfree;

	return zero_hugetlb_counts(page_bytes, &nr, &nfree) ? -1 : nr;
}

int test_copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	ssize_t n;
	int in, out, ret = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			ret = -1;
			break;
		}
	if (n < 0 || fchmod(out, mode))
		ret = -1;
	close(in);
	close(out);
	return ret;
}

static void drain(int fd, struct test_run *r)
{
	ssize_t n;
	char sink[4096];

	for (;;) {
		size_t room = sizeof(r->out) - 1 - r->out_len;

		n = room ? read(fd, r->out + r->out_len, room) :
			   read(fd, sink, sizeof(sink));
		if (n <= 0)
			break;
		if (room)
			r->out_len += (size_t)n;
	}
	r->out[r->out_len] = '\0';
}

/* As root; as uid 65534 with no group; with root's group (a member). */
enum spawn_as { AS_ROOT, AS_USER, AS_MEMBER };

static int spawn_as(const char *const *argv, enum spawn_as who,
		    struct test_proc *p);

int test_spawn_zvmm(const char *const *argv, bool as_user, struct test_proc *p)
{
	return spawn_as(argv, as_user ? AS_USER : AS_ROOT, p);
}

int test_run_zvmm_member(const char *const *argv, struct test_run *r)
{
	struct test_proc p;
	int ret;

	r->out_len = 0;
	r->out[0] = '\0';
	ret = spawn_as(argv, AS_MEMBER, &p);
	return ret ? ret : test_finish_zvmm(&p, r);
}

static int spawn_as(const char *const *argv, enum spawn_as who,
		    struct test_proc *p)
{
	const gid_t member_groups[] = { 0 };
	bool as_user = who != AS_ROOT;
	const char *args[64];
	int pfd[2], n = 0;

	/*
	 * An unprivileged child may not reach the build tree (a clone under
	 * /root, say): it runs a world-readable copy in /tmp instead.
	 */
	p->copy[0] = '\0';
	if (as_user) {
		snprintf(p->copy, sizeof(p->copy), "/tmp/zvmm-test-bin.%d",
			 (int)getpid());
		if (test_copy_file(test_zvmm_bin(), p->copy, 0755))
			return -errno;
		args[n++] = p->copy;
	} else {
		args[n++] = test_zvmm_bin();
	}
	while (*argv && n < 63)
		args[n++] = *argv++;
	if (*argv)
		return -E2BIG; /* a test's own mistake: never cut silently */
	args[n] = NULL;
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (!p->pid) {
		/* A test that times out must not leave zvmm behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		/* Root's supplementary groups go too: a user has none of them. */
		if (as_user &&
		    (setgroups(who == AS_MEMBER ? 1 : 0, member_groups) ||
		     setgid(65534) || setuid(65534)))
			_exit(125);
		execv(args[0], (char *const *)args);
		_exit(126);
	}
	close(pfd[1]);
	p->fd = pfd[0];
	return 0;
}

bool test_wait_output(struct test_proc *p, struct test_run *r,
		      const char *needle, int timeout_ms)
{
	struct pollfd pf = { .fd = p->fd, .events = POLLIN };
	struct timespec t0, t;
	long left = timeout_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!strstr(r->out, needle) && left > 0) {
		size_t room = sizeof(r->out) - 1 - r->out_len;
		ssize_t n;

		if (!room || poll(&pf, 1, (int)left) <= 0)
			return false;
		n = read(p->fd, r->out + r->out_len, room);
		if (n <= 0)
			return false;
		r->out_len += (size_t)n;
		r->out[r->out_len] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000 +
				     (t.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return strstr(r->out, needle) != NULL;
}

bool test_proc_running(struct test_proc *p)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
	       si.si_pid == 0;
}

int test_finish_zvmm(struct test_proc *p, struct test_run *r)
{
	int st, n;

	drain(p->fd, r);
	close(p->fd);
	n = waitpid(p->pid, &st, 0);
	if (p->copy[0])
		unlink(p->copy);
	if (n < 0)
		return -errno;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

int test_run_zvmm(const char *const *argv, bool as_user, struct test_run *r)
{
	struct test_proc p;
	int ret;

	r->out_len = 0;
	r->out[0] = '\0';
	ret = test_spawn_zvmm(argv, as_user, &p);
	return ret ? ret : test_finish_zvmm(&p, r);
}

void test_poison_file(const char *path, uint64_t bytes)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	char *p;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(ftruncate(fd, (off_t)bytes), 0);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED, "%s", strerror(errno));
	memset(p, POISON, bytes);
	munmap(p, bytes);
	close(fd);
}

long test_file_find_not_zero(const char *path, uint64_t bytes)
{
	/* O_NOATIME: the check is an observer, and a mapping that moved the
	 * file's atime would void the pool's state record (DESIGN.md 3). */
	int fd = open(path, O_RDONLY | O_NOATIME);
	char *p;
	long bad;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	bad = test_find_not(p, bytes, 0);
	munmap(p, bytes);
	close(fd);
	return bad;
}

uint64_t test_json_u64(const char *out, const char *section, const char *key)
{
	const char *from = out, *p;
	char pat[64];

	if (section) {
		snprintf(pat, sizeof(pat), "\"%s\": {", section);
		from = strstr(out, pat);
		cr_assert_not_null(from, "no %s in: %s", section, out);
	}
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(from, pat);
	cr_assert_not_null(p, "no %s in: %s", key, out);
	return strtoull(p + strlen(pat), NULL, 10);
}

struct criterion_test_params test_backend_params(void)
{
	static unsigned int idx[32];
	unsigned int n = zero_backend_count();

	for (unsigned int i = 0; i < n; i++)
		idx[i] = i;
	return cr_make_param_array(unsigned int, idx, n);
}

static void (*skip_undo)(void);

void test_on_skip(void (*undo)(void))
{
	skip_undo = undo;
}

/* The keys of $ZVMM_TEST_REQUIRE, one per need (helpers.h). */
static const struct {
	const char *need, *key;
} need_keys[] = {
	{ TEST_NEED_KVM, "kvm" },
	{ TEST_NEED_1G, "1g" },
	{ TEST_NEED_ROOT, "root" },
	{ TEST_NEED_HUGEPAGES, "hugepages" },
	{ TEST_NEED_HUGETLBFS, "hugepages" },
	{ TEST_NEED_CPU, "cpu" },
	{ TEST_NEED_TOOL, "tools" },
	{ TEST_NEED_CPUS, "cpus" },
	{ TEST_NEED_TIME, "time" },
	{ TEST_NEED_KERNEL, "kernel" },
};

bool test_required(const char *need)
{
	const char *req = getenv("ZVMM_TEST_REQUIRE"), *key = NULL;
	size_t n;

	for (size_t i = 0; i < sizeof(need_keys) / sizeof(need_keys[0]); i++)
		if (!strcmp(need_keys[i].need, need))
			key = need_keys[i].key;
	if (!req || !key)
		return false;
	n = strlen(key);
	while (*req) {
		size_t len = strcspn(req, ", ");

		if (len == n && !strncmp(req, key, n))
			return true;
		req += len;
		req += strspn(req, ", ");
	}
	return false;
}

void test_skip(const char *need, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (skip_undo)
		skip_undo();
	skip_undo = NULL;
	if (test_required(need))
		cr_assert_fail(
			"needs %s (ZVMM_TEST_REQUIRE), which this machine lacks: %s",
			need, why);
	cr_skip_test("needs %s: %s", need, why);
	__builtin_unreachable();
}

void test_fini_expect(bool ok, const char *fmt, ...)
{
	const char *log = getenv("ZVMM_TEST_FINI_LOG");
	char why[512];
	va_list ap;
	FILE *f;

	if (ok)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	cr_log_error("%s", why);
	if (!log || !*log)
		return;
	f = fopen(log, "a");
	if (!f)
		return;
	fprintf(f, "%s::%s: %s\n",
		criterion_current_suite ? criterion_current_suite->name : "?",
		criterion_current_test ? criterion_current_test->name : "?",
		why);
	fclose(f);
}

bool test_have_kvm(char *why, size_t len)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, len, "/dev/kvm: %s", strerror(errno));
		return false;
	}
	close(fd);
	return true;
}

void test_need_kvm(void)
{
	char why[128];

	if (!test_have_kvm(why, sizeof(why)))
		test_skip(TEST_NEED_KVM, "%s", why);
}

void test_need_1g(void)
{
	if (test_nr_hugepages(SZ_1G) < 0)
		test_skip(TEST_NEED_1G, "the kernel has no 1 GiB hugetlb pool");
}

void test_need_root(const char *why)
{
	if (geteuid() != 0)
		test_skip(TEST_NEED_ROOT, "%s", why);
}

void test_refuse_openat2(int err)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret;

	cr_assert(ctx, "seccomp_init failed");
	ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned int)err),
			       SCMP_SYS(openat2), 0);
	cr_assert_eq(ret, 0, "seccomp_rule_add: %s", strerror(-ret));
	/* What lets a process without CAP_SYS_ADMIN load a filter. */
	ret = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	cr_assert_eq(ret, 0, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	ret = seccomp_load(ctx);
	seccomp_release(ctx);
	if (ret == -EINVAL)
		test_skip(TEST_NEED_KERNEL, "no seccomp filters: %s",
			  strerror(-ret));
	cr_assert_eq(ret, 0, "seccomp_load: %s", strerror(-ret));
	errno = 0;
	ret = (int)syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));
	if (ret >= 0)
		close(ret);
	cr_assert(ret < 0 && errno == err,
		  "openat2 under a filter that refuses it (%s): %d (%s)",
		  strerror(err), ret, strerror(errno));
}

void test_mount_pool(const char *mnt, uint64_t page, bool *mounted)
{
	cr_assert_eq(mkdir(mnt, 0700), 0, "mkdir %s: %s", mnt, strerror(errno));
	if (mount("none", mnt, "hugetlbfs", 0,
		  page == SZ_1G ? "pagesize=1G" : "pagesize=2M")) {
		int err = errno;

		rmdir(mnt);
		test_skip(page == SZ_1G ? TEST_NEED_1G : TEST_NEED_HUGETLBFS,
			  "cannot mount hugetlbfs: %s", strerror(err));
	}
	*mounted = true;
}

void test_pool_cleanup(const char *mnt, const char *pool, const char *state,
		       bool mounted)
{
	char cmd[160];

	if (mounted) {
		unlink(pool);
		umount2(mnt, MNT_DETACH);
	}
	rmdir(mnt);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
}

void test_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

char *test_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s (tests run from the source tree)", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

const char *test_zvmmd_bin(void)
{
	const char *b = getenv("ZVMMD_BIN");

	return b && *b ? b : "build/zvmmd";
}

double test_mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int test_zvmmd_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void zvmmd_say_end(int status, const char *logdir)
{
	char log[160], line[512];
	FILE *f;

	if (WIFEXITED(status))
		fprintf(stderr, "zvmmd exited with status %d; its log:\n",
			WEXITSTATUS(status));
	else
		fprintf(stderr, "zvmmd was killed by signal %d; its log:\n",
			WTERMSIG(status));
	snprintf(log, sizeof(log), "%s/zvmmd.log", logdir);
	f = fopen(log, "re");
	if (!f) {
		fprintf(stderr, "  (%s: %s)\n", log, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	fclose(f);
}

bool test_zvmmd_alive(pid_t *pid, const char *logdir)
{
	int status;

	if (*pid <= 0)
		return false;
	if (waitpid(*pid, &status, WNOHANG) != *pid)
		return true;
	*pid = -1;
	zvmmd_say_end(status, logdir);
	return false;
}

int test_zvmmd_stop(pid_t *pid, int sig, const char *logdir)
{
	int status = 0;

	if (*pid <= 0)
		return 0;
	if (!test_zvmmd_alive(pid, logdir))
		return -1;
	kill(*pid, sig);
	while (waitpid(*pid, &status, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
	if (sig == SIGTERM && status)
		zvmmd_say_end(status, logdir);
	return status;
}

void test_zvmmd_start(const char *conf, const char *sock, const char *logdir,
		      int wait_s, pid_t *pid)
{
	test_zvmmd_start_passing(conf, sock, logdir, wait_s, pid, -1, NULL);
}

void test_zvmmd_start_passing(const char *conf, const char *sock,
			      const char *logdir, int wait_s, pid_t *pid,
			      int pass_fd, const char *pass_name)
{
	double t0 = test_mono_now();

	*pid = fork();
	cr_assert_neq(*pid, -1);
	if (!*pid) {
		char log[160], me[24];
		int null, fd;

		/* As systemd passes its fd store (sd_listen_fds(3)). */
		if (pass_fd >= 0) {
			if (pass_fd != 3 && dup2(pass_fd, 3) != 3)
				_exit(126);
			fcntl(3, F_SETFD, 0);
			snprintf(me, sizeof(me), "%d", (int)getpid());
			setenv("LISTEN_PID", me, 1);
			setenv("LISTEN_FDS", "1", 1);
			setenv("LISTEN_FDNAMES", pass_name, 1);
		}
		null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		/* Its log goes to a file: a test's output stays the test's. */
		snprintf(log, sizeof(log), "%s/zvmmd.log", logdir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(null, 1);
		dup2(fd >= 0 ? fd : null, 2);
		execl(test_zvmmd_bin(), "zvmmd", "--config", conf,
		      (char *)NULL);
		_exit(127);
	}
	while (test_mono_now() - t0 < wait_s) {
		int fd = test_zvmmd_connect(sock);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (waitpid(*pid, NULL, WNOHANG) == *pid) {
			*pid = -1;
			cr_assert_fail(
				"zvmmd exited at start: see %s/zvmmd.log",
				logdir);
		}
		usleep(10000);
	}
	cr_assert_fail("zvmmd did not listen on %s within %d s", sock, wait_s);
}
