// SPDX-License-Identifier: MIT
/*
 * Tenant after tenant of libzvmm in one process, under every policy,
 * both serving modes and every on_exit, each touching every word of its
 * memory from a thread the way a vCPU would (all must read zero; then
 * marked), optionally under a seccomp filter that allows exactly the
 * system calls of a list in include/zvmm/syscalls.list's format and
 * traps on anything else (tests/test_seccomp.c).
 *
 *   seccomp-tenant [--allow LIST] [--deny SYSCALL=ERRNO]... [--pool PATH]
 *                  [--socket PATH] [--mem MIB] [--profile PATH]
 *                  [--state-dir DIR] [--policy FILE] [--calibration-out PATH]
 *                  [--rounds N] [--reserve] [--calibrate] [--mark-calls]
 *   seccomp-tenant --allow LIST... --exec PROGRAM [ARG]...
 *
 * --exec: PROGRAM runs under the filter (zvmmd under its unit's
 * SystemCallFilter=, without systemd), with what systemd always allows
 * (systemd_calls) rather than this program's own; LIST may be given
 * more than once.
 * --allow: from here on only LIST's system calls (every context) and the
 * few this program makes itself (harness_calls below) are allowed; any
 * other ends the process with "syscall NR is not in the list" and exit
 * status 70. --deny: that one call fails with ERRNO instead (openat2
 * refused as some container runtimes do). --mark-calls: before each
 * library call, a write(-1, "@zvmm_call") that strace(1) shows, so
 * tools/syscalls.py can tell which call made which system call.
 * --socket: the memory is leased from zvmmd at PATH (ZVMM_SOURCE_SERVICE).
 *
 * Exit status: 0 every tenant ran and read only zero, 1 a library
 * error, 10 a tenant read a non-zero word, 12 marks of its own were
 * lost, 2 usage, 70 a system call outside the list.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"

#define ALLOW_MAX 512

/*
 * What this program calls outside the library, each for a reason of
 * its own; everything else the filter allows comes from the list.
 */
static const char *const harness_calls[] = {
	"write", /* its messages, and --mark-calls */
	"exit_group", /* exit(3) */
	"poll", /* the embedder's own serve loop on zvmm_guest_fd() */
	"rt_sigreturn", /* returning from SIGSYS's handler never happens,
			   but glibc's signal frames need it */
};

/*
 * --exec runs a program under the filter as systemd's SystemCallFilter=
 * would: these are allowed there whatever the list says (systemd.exec(5)).
 */
static const char *const systemd_calls[] = {
	"execve",	   "exit",	   "exit_group",   "getrlimit",
	"rt_sigreturn",	   "sigreturn",	   "clock_getres", "clock_gettime",
	"clock_nanosleep", "gettimeofday", "nanosleep",	   "time",
};

struct opts {
	const char *allow[4], *pool, *socket, *profile, *state_dir;
	const char *policy, *cal_out;
	const char *deny[8];
	unsigned int nr_allow, nr_deny, rounds;
	uint64_t mem;
	bool reserve, calibrate, mark_calls, exec;
};

static struct opts o = { .rounds = 1, .mem = 16ULL << 20 };
static unsigned int tenants, seq;
static const char *record_mode; /* pool.record, when set */

/* A marker strace shows: the library call that comes next. */
static void mark(const char *call)
{
	char buf[64];
	int n;

	if (!o.mark_calls)
		return;
	n = snprintf(buf, sizeof(buf), "@%s", call);
	if (write(-1, buf, (size_t)n) < 0)
		errno = 0;
}

/*
 * A library call between markers: what strace shows between "@fn" and
 * "@" on this thread is fn's, the rest this program's own.
 */
#define CALL(fn, ...)                                             \
	({                                                        \
		mark(#fn);                                        \
		__typeof__(fn(__VA_ARGS__)) r_ = fn(__VA_ARGS__); \
		mark("");                                         \
		r_;                                               \
	})
#define CALLV(fn, ...)           \
	do {                     \
		mark(#fn);       \
		fn(__VA_ARGS__); \
		mark("");        \
	} while (0)

/* ---------------------------------------------------------- the filter */

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char msg[96] = "seccomp-tenant: syscall ";
	char num[16];
	int n = 0, nr = si->si_syscall, len = (int)strlen(msg);

	(void)sig;
	(void)uc;
	do
		num[n++] = (char)('0' + nr % 10);
	while ((nr /= 10) && n < (int)sizeof(num));
	while (n)
		msg[len++] = num[--n];
	memcpy(msg + len, " is not in the list\n", 20);
	len += 20;
	if (write(2, msg, (size_t)len) < 0)
		_exit(71);
	_exit(70);
}

static int allow_name(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	/* A name this architecture lacks (the list holds x86_64's). */
	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

/* LIST's lines: "CONTEXT SYSCALL", '#' comments; every context. */
static int read_list(scmp_filter_ctx ctx, const char *path)
{
	char line[256], ctxname[128], name[64];
	unsigned int n = 0;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && !ret) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%127s %63s", ctxname, name) != 2) {
			fprintf(stderr, "seccomp-tenant: %s: bad line: %s",
				path, line);
			ret = -EINVAL;
			break;
		}
		ret = allow_name(ctx, name);
		n++;
	}
	fclose(f);
	if (!ret && !n)
		ret = -ENODATA;
	return ret;
}

static int install_filter(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys,
				.sa_flags = SA_SIGINFO };
	scmp_filter_ctx ctx;
	int ret = 0;

	if (!o.nr_allow && !o.nr_deny)
		return 0;
	sigaction(SIGSYS, &sa, NULL);
	ctx = seccomp_init(o.nr_allow ? SCMP_ACT_TRAP : SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	for (unsigned int i = 0; i < o.nr_deny && !ret; i++) {
		char name[64];
		int e = 0, nr;

		if (sscanf(o.deny[i], "%63[^=]=%d", name, &e) != 2 ||
		    (nr = seccomp_syscall_resolve_name(name)) ==
			    __NR_SCMP_ERROR) {
			ret = -EINVAL;
			break;
		}
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)e), nr, 0);
	}
	for (unsigned int i = 0;
	     o.nr_allow && !o.exec && !ret &&
	     i < sizeof(harness_calls) / sizeof(harness_calls[0]);
	     i++)
		ret = allow_name(ctx, harness_calls[i]);
	for (unsigned int i = 0;
	     o.exec && !ret &&
	     i < sizeof(systemd_calls) / sizeof(systemd_calls[0]);
	     i++)
		ret = allow_name(ctx, systemd_calls[i]);
	for (unsigned int i = 0; i < o.nr_allow && !ret; i++)
		ret = read_list(ctx, o.allow[i]);
	if (!ret)
		ret = seccomp_load(ctx); /* sets no_new_privs itself */
	seccomp_release(ctx);
	return ret;
}

/* ---------------------------------------------------------- a tenant */

struct vcpu {
	volatile uint64_t *mem;
	uint64_t words, seed;
	uint64_t nonzero, lost;
	volatile int done;
};

static uint64_t mark_of(uint64_t seed, uint64_t word)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + word + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 31;
	return z ? z : 1;
}

/* Reads every word (all must be zero), then writes its marks. */
static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;

	for (uint64_t w = 0; w < c->words; w++)
		if (c->mem[w])
			c->nonzero++;
	for (uint64_t w = 0; w < c->words; w++)
		c->mem[w] = mark_of(c->seed, w);
	for (uint64_t w = 0; w < c->words; w++)
		if (c->mem[w] != mark_of(c->seed, w))
			c->lost++;
	c->done = 1;
	return NULL;
}

static void log_line(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	if (level <= ZVMM_LOG_WARNING)
		fprintf(stderr, "libzvmm: %s\n", msg);
}

static void progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	(void)done;
	(void)total;
}

/* The embedder's serve loop: zvmm_guest_fd() polled on its own thread. */
static int serve_until_done(struct zvmm_guest *g, struct vcpu *c)
{
	struct pollfd p = { .fd = zvmm_guest_fd(g), .events = POLLIN };

	while (!c->done) {
		int n = poll(&p, 1, 10);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			int ret = CALL(zvmm_guest_process, g);

			if (ret)
				return ret;
		}
	}
	return 0;
}

static int policy_for(const char *mode, const char *on_exit,
		      struct zvmm_policy **pol)
{
	char buf[4096];
	int ret = CALL(zvmm_policy_new, pol);

	if (!ret)
		ret = CALL(zvmm_policy_set, *pol, "zeroing.mode", mode);
	if (!ret && on_exit)
		ret = CALL(zvmm_policy_set, *pol, "pool.on_exit", on_exit);
	if (!ret && on_exit && o.state_dir)
		ret = CALL(zvmm_policy_set, *pol, "pool.state_dir",
			   o.state_dir);
	if (!ret && on_exit && record_mode)
		ret = CALL(zvmm_policy_set, *pol, "pool.record", record_mode);
	if (!ret && o.profile)
		ret = CALL(zvmm_policy_set, *pol, "zeroing.profile", o.profile);
	if (!ret && CALL(zvmm_policy_format, *pol, buf, sizeof(buf)) < 0)
		ret = -EIO;
	return ret;
}

static int tenant(const char *mode, bool thread, const char *on_exit)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(o.mem, ZVMM_PAGE_2M);
	struct zvmm_policy *pol = NULL;
	struct zvmm_guest *g = NULL;
	struct zvmm_layout lay;
	struct zvmm_stats st;
	struct vcpu c = { .seed = ++seq };
	char json[8192];
	pthread_t t;
	void *addr;
	int ret;

	if (o.socket) {
		mem.source = ZVMM_SOURCE_SERVICE;
		mem.service_path = o.socket;
	} else {
		mem.source = o.pool ? ZVMM_SOURCE_POOL : ZVMM_SOURCE_PRIVATE;
		mem.pool_path = o.pool;
	}
	ret = CALL(zvmm_mem_check, &mem);
	if (!ret)
		ret = policy_for(mode, o.pool ? on_exit : NULL, &pol);
	if (!ret)
		ret = CALL(zvmm_guest_open, &mem, pol, &g);
	CALLV(zvmm_policy_free, pol);
	if (ret) {
		fprintf(stderr, "seccomp-tenant: open (%s): %s\n", mode,
			strerror(-ret));
		return ret;
	}
	CALLV(zvmm_guest_set_progress, g, progress, NULL);
	ret = CALL(zvmm_guest_prepare, g, mem.page_bytes);
	/* The VMM's own thread writes an initrd's range. */
	if (!ret)
		ret = CALL(zvmm_guest_access, g, o.mem - mem.page_bytes, 4096);
	if (!ret && thread)
		ret = CALL(zvmm_guest_serve_thread, g, NULL, NULL);
	if (ret)
		goto out;
	CALLV(zvmm_guest_memory, g, &addr, &c.words);
	CALLV(zvmm_guest_layout, g, &lay);
	/* Skip the words of boot data and initrd, as a guest would not. */
	c.mem = addr;
	c.words /= 8;
	CALLV(zvmm_guest_start, g);
	ret = -pthread_create(&t, NULL, vcpu_thread, &c);
	if (ret)
		goto out;
	if (!thread && zvmm_guest_fd(g) >= 0)
		ret = serve_until_done(g, &c);
	pthread_join(t, NULL);
	if (!ret)
		ret = CALL(zvmm_guest_stop, g);
	if (!ret)
		ret = CALL(zvmm_guest_exit, g);
	CALLV(zvmm_guest_stats, g, &st);
	if (CALL(zvmm_guest_stats_json, g, json, sizeof(json)) < 0 && !ret)
		ret = -EIO;
out:
	CALLV(zvmm_guest_close, g);
	tenants++;
	if (ret) {
		fprintf(stderr, "seccomp-tenant: %s, %s serving: %s\n", mode,
			thread ? "thread" : "embedder", strerror(-ret));
		return ret;
	}
	if (c.nonzero || c.lost)
		fprintf(stderr,
			"seccomp-tenant: %s, %s serving, tenant %u: %" PRIu64
			" non-zero words, %" PRIu64 " marks lost\n",
			mode, thread ? "thread" : "embedder", tenants,
			c.nonzero, c.lost);
	return c.nonzero ? 10 : c.lost ? 12 : 0;
}

/* Calls that are not a tenant's: the machine, the backends, errors. */
static int the_rest(void)
{
	struct zvmm_mem huge = ZVMM_MEM_INIT(1ULL << 50, ZVMM_PAGE_2M);
	struct zvmm_backend_info info[32];
	struct zvmm_calibration *cal = NULL;
	struct zvmm_guest *g = NULL;
	char buf[512];
	int ret;

	CALL(zvmm_version);
	CALL(zvmm_arch);
	CALL(zvmm_check_version, 0, 2);
	CALL(zvmm_backends, info, 32);
	CALLV(zvmm_cpu_features, buf, sizeof(buf));
	/* A failing open makes the calls its message needs, and no more;
	 * the message is expected, so not shown. */
	CALLV(zvmm_set_log, NULL, NULL, ZVMM_LOG_ERROR);
	ret = CALL(zvmm_guest_open, &huge, NULL, &g);
	CALLV(zvmm_set_log, log_line, NULL, ZVMM_LOG_WARNING);
	if (!ret) {
		CALLV(zvmm_guest_close, g);
		return -EEXIST;
	}
	if (o.policy) {
		struct zvmm_policy *pol = NULL;

		ret = CALL(zvmm_policy_new, &pol);
		if (!ret)
			ret = CALL(zvmm_policy_load, pol, o.policy);
		CALLV(zvmm_policy_free, pol);
		if (ret)
			return ret;
	}
	if (!o.calibrate)
		return 0;
	ret = CALL(zvmm_calibrate, &cal);
	if (!ret)
		CALL(zvmm_calibration_best, cal, 0);
	if (!ret && o.cal_out)
		ret = CALL(zvmm_calibration_write, cal, o.cal_out, NULL, 0);
	CALLV(zvmm_calibration_free, cal);
	return ret;
}

/* A warm pool made ready without a guest, cancelled and rearmed. */
static int warm_pool(void)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(o.mem, ZVMM_PAGE_2M);
	struct zvmm_policy *pol = NULL;
	struct zvmm_guest *g = NULL;
	int ret;

	mem.pool_path = o.pool;
	ret = policy_for("prezero", "scrub", &pol);
	if (!ret)
		ret = CALL(zvmm_guest_open, &mem, pol, &g);
	CALLV(zvmm_policy_free, pol);
	if (ret)
		return ret;
	CALLV(zvmm_guest_set_progress, g, progress, NULL);
	ret = CALL(zvmm_guest_prezero, g);
	CALLV(zvmm_guest_cancel, g);
	CALLV(zvmm_guest_rearm, g);
	CALLV(zvmm_guest_close, g);
	if (ret)
		fprintf(stderr, "seccomp-tenant: prezero: %s\n",
			strerror(-ret));
	return ret;
}

static const struct option long_opts[] = {
	{ "allow", required_argument, NULL, 'a' },
	{ "deny", required_argument, NULL, 'd' },
	{ "pool", required_argument, NULL, 'p' },
	{ "socket", required_argument, NULL, 's' },
	{ "mem", required_argument, NULL, 'm' },
	{ "profile", required_argument, NULL, 'f' },
	{ "rounds", required_argument, NULL, 'r' },
	{ "state-dir", required_argument, NULL, 'S' },
	{ "policy", required_argument, NULL, 'P' },
	{ "calibration-out", required_argument, NULL, 'o' },
	{ "reserve", no_argument, NULL, 'R' },
	{ "calibrate", no_argument, NULL, 'c' },
	{ "mark-calls", no_argument, NULL, 'k' },
	{ "exec", no_argument, NULL, 'x' },
	{ NULL, 0, NULL, 0 },
};

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "+", long_opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (o.nr_allow == 4)
				exit(2);
			o.allow[o.nr_allow++] = optarg;
			break;
		case 'x':
			o.exec = true;
			return;
		case 'd':
			if (o.nr_deny == 8)
				exit(2);
			o.deny[o.nr_deny++] = optarg;
			break;
		case 'p':
			o.pool = optarg;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'm':
			o.mem = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'f':
			o.profile = optarg;
			break;
		case 'r':
			o.rounds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			o.policy = optarg;
			break;
		case 'o':
			o.cal_out = optarg;
			break;
		case 'S':
			o.state_dir = optarg;
			break;
		case 'R':
			o.reserve = true;
			break;
		case 'c':
			o.calibrate = true;
			break;
		case 'k':
			o.mark_calls = true;
			break;
		default:
			fprintf(stderr,
				"usage: seccomp-tenant [--allow LIST] [--deny SYSCALL=ERRNO]... [--pool PATH] [--socket PATH] [--mem MIB] [--profile PATH] [--state-dir DIR] [--policy FILE] [--calibration-out PATH] [--rounds N] [--reserve] [--calibrate] [--mark-calls] [--exec PROGRAM [ARG]...]\n");
			exit(2);
		}
	}
	if (optind != argc || !o.mem || o.mem % (2ULL << 20) ||
	    o.mem < (4ULL << 20) || (o.pool && o.socket))
		exit(2);
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "prezero", "demand", "hybrid" };
	static const char *const exits[] = { "release", "keep", "scrub" };
	struct zvmm_reservation *resv = NULL;
	unsigned int nr_exits = 1;
	int ret;

	parse(argc, argv);
	CALLV(zvmm_set_log, log_line, NULL, ZVMM_LOG_WARNING);
	ret = install_filter();
	if (ret) {
		fprintf(stderr, "seccomp-tenant: the filter: %s\n",
			strerror(-ret));
		return 1;
	}
	if (o.exec) {
		if (optind == argc)
			return 2;
		/* SIGSYS's handler is gone after execve: killed by it. */
		execv(argv[optind], argv + optind);
		fprintf(stderr, "seccomp-tenant: %s: %s\n", argv[optind],
			strerror(errno));
		return 1;
	}
	if (o.pool)
		nr_exits = 3;
	if (o.reserve)
		ret = CALL(zvmm_hugepages_reserve, ZVMM_PAGE_2M,
			   o.mem / ZVMM_PAGE_2M, &resv);
	if (!ret)
		ret = the_rest();
	if (!ret && o.pool)
		ret = warm_pool();
	for (unsigned int r = 0; r < o.rounds && !ret; r++)
		for (unsigned int m = 0; m < 3 && !ret; m++)
			for (unsigned int s = 0; s < 2 && !ret; s++)
				for (unsigned int e = 0; e < nr_exits && !ret;
				     e++)
					ret = tenant(modes[m], s == 0,
						     exits[e]);
	/* The last one scrubbed: its record is read back page by page. */
	record_mode = "verify";
	for (unsigned int m = 0; o.pool && m < 3 && !ret; m++)
		ret = tenant(modes[m], true, "scrub");
	if (resv)
		CALLV(zvmm_hugepages_release, resv);
	printf("seccomp-tenant: %u tenants%s\n", tenants,
	       ret ? ", then a failure" : ", every word read zero");
	return ret > 0 ? ret : ret ? 1 : 0;
}
