// SPDX-License-Identifier: MIT
/*
 * What zvmm says of the machine it runs on, whatever the machine lacks:
 * `zvmm run`'s usage errors before any missing resource, every missing
 * resource in one message, a CPU without hardware virtualization named
 * as such with what still works; a pool path that is not a file refused
 * as a wrong request; `zvmm calibrate`'s table and the cache size it
 * assumed; zvmmd kept out of the host's cache and state directories.
 * Expected errors are captured, never printed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/file.h"
#include "../lib/size.h"
#include "../vmm/kvm.h"
#include "../zeroing/backend.h"
#include "../zeroing/memory.h"
#include "helpers.h"

static struct test_run r;
static char tmp[64];

static void make_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/zvmm-test-machine.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
}

static void drop_tmp(void)
{
	char cmd[96];

	vmm_cpuinfo = "/proc/cpuinfo";
	if (!tmp[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	test_fini_expect(!system(cmd), "cannot remove %s", tmp);
	tmp[0] = '\0';
}

static void run(const char *const *argv)
{
	cr_assert_eq(test_run_zvmm(argv, false, &r), 0);
}

/* An error is one line: the whole output ends at its first newline. */
static void assert_one_line(void)
{
	cr_assert_eq(strchr(r.out, '\n'), r.out + r.out_len - 1,
		     "not one line: %s", r.out);
}

/*
 * A usage error whatever the machine lacks: a size that is not whole
 * pages is said before /dev/kvm, a 1 GiB pool or free hugepages are
 * looked for (a machine with none of them, or with all of them).
 */
Test(machine, run_size_error_before_what_the_machine_lacks)
{
	static const char *const kvm[] = { "/dev/kvm", "/nonexistent/kvm" };

	for (unsigned int i = 0; i < 2; i++) {
		run((const char *[]){ "run", "--mem", "3M", "--kvm", kvm[i],
				      NULL });
		cr_assert_eq(r.status, 2, "--kvm %s: status %d: %s", kvm[i],
			     r.status, r.out);
		cr_assert(
			strstr(r.out,
			       "memory size 3 MiB is not a multiple of the 2 MiB page size"),
			"%s", r.out);
		cr_assert_not(strstr(r.out, "kvm"), "%s", r.out);
		assert_one_line();
	}
	run((const char *[]){ "run", "--mem", "1536M", "--hugepages", "1G",
			      "--kvm", "/nonexistent/kvm", NULL });
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "not a multiple of the 1 GiB page size"), "%s",
		  r.out);
	assert_one_line();
}

/*
 * No /dev/kvm and too few hugepages: both in one message, exit 3, and
 * the hugepage pool as it was.
 */
Test(machine, run_names_every_missing_resource_at_once)
{
	long nr = 0, nfree = 0, nr2 = 0, free2 = 0;
	char mem[32];

	/* Above what is free, whatever other tests hold meanwhile. */
	if (zero_hugetlb_counts(SZ_2M, &nr, &nfree))
		nfree = 0;
	snprintf(mem, sizeof(mem), "%ldM", (nfree + 64) * 2);
	run((const char *[]){ "run", "--mem", mem, "--kvm", "/nonexistent/kvm",
			      NULL });
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	assert_one_line();
	cr_assert(strstr(r.out, "/nonexistent/kvm does not exist"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "2 MiB hugepage"), "%s", r.out);
	cr_assert(strstr(r.out, "(1) ") && strstr(r.out, "(2) "), "%s", r.out);
	if (!zero_hugetlb_counts(SZ_2M, &nr2, &free2))
		cr_assert_eq(nr2, nr, "nr_hugepages moved: %ld, then %ld", nr,
			     nr2);
}

/* The first "flags" line of /proc/cpuinfo (x86), read here on its own. */
static bool cpu_flags(bool *virt, bool *vm)
{
	char line[8192], *w, *save;
	FILE *f = fopen("/proc/cpuinfo", "re");
	bool found = false;

	*virt = *vm = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) || !strchr(line, ':'))
			continue;
		found = true;
		for (w = strtok_r(strchr(line, ':') + 1, " \t\n", &save); w;
		     w = strtok_r(NULL, " \t\n", &save)) {
			*virt |= !strcmp(w, "vmx") || !strcmp(w, "svm");
			*vm |= !strcmp(w, "hypervisor");
		}
	}
	fclose(f);
	return found;
}

static const char *const works_without_kvm[] = { "zvmm prezero --pool",
						 "zvmm bench", "zvmm calibrate",
						 "libzvmm", "zvmmd" };

/*
 * Without /dev/kvm, what would help on this CPU: a module where it has
 * vmx or svm (or is not x86); where it has neither, that it has no
 * hardware virtualization, that no module can help, and what works
 * without KVM.
 */
Test(machine, run_without_kvm_says_what_this_cpu_allows)
{
	bool x86, virt, vm;

	x86 = cpu_flags(&virt, &vm);
	run((const char *[]){ "run", "--mem", "2M", "--kvm", "/nonexistent/kvm",
			      NULL });
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "/nonexistent/kvm does not exist"), "%s",
		  r.out);
	if (x86 && !virt) {
		cr_assert(strstr(r.out, "no hardware virtualization"), "%s",
			  r.out);
		cr_assert(strstr(r.out, "no kernel module can help"), "%s",
			  r.out);
		if (vm)
			cr_assert(strstr(r.out,
					 "a VM without nested virtualization"),
				  "%s", r.out);
		for (unsigned int i = 0; i < 5; i++)
			cr_assert(strstr(r.out, works_without_kvm[i]),
				  "%s not named: %s", works_without_kvm[i],
				  r.out);
		cr_assert_not(strstr(r.out, "CONFIG_KVM"), "%s", r.out);
	} else {
		cr_assert(strstr(r.out, "CONFIG_KVM"), "%s", r.out);
		cr_assert_not(strstr(r.out, "no hardware virtualization"), "%s",
			      r.out);
	}
}

/* vmm_kvm_explain() for a made-up /proc/cpuinfo and open(2) errno. */
static void explain(const char *cpuinfo, int e, char *why, size_t len)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/cpuinfo", tmp);
	test_write_text(path, cpuinfo);
	vmm_cpuinfo = path;
	vmm_kvm_explain("/dev/kvm", e, why, len);
}

/* Every CPU the message tells apart, on whatever CPU this runs. */
Test(machine, kvm_message_follows_the_cpu_flags, .fini = drop_tmp)
{
	char why[1024];

	make_tmp();
	/* A VM without nested virtualization (this workplace's PVM guest). */
	explain("processor\t: 0\nflags\t\t: fpu sse2 hypervisor avx2\n", ENOENT,
		why, sizeof(why));
	cr_assert(strstr(why, "/dev/kvm does not exist"), "%s", why);
	cr_assert(strstr(why, "no hardware virtualization"), "%s", why);
	cr_assert(strstr(why, "a VM without nested virtualization"), "%s", why);
	cr_assert(strstr(why, "no kernel module can help"), "%s", why);
	for (unsigned int i = 0; i < 5; i++)
		cr_assert(strstr(why, works_without_kvm[i]), "%s not named: %s",
			  works_without_kvm[i], why);
	cr_assert_not(strstr(why, "CONFIG_KVM"), "%s", why);
	/* Bare metal with VT-x off in the firmware: Linux hides vmx. */
	explain("flags\t\t: fpu sse2\n", ENOENT, why, sizeof(why));
	cr_assert(strstr(why, "no hardware virtualization"), "%s", why);
	cr_assert(strstr(why, "firmware"), "%s", why);
	cr_assert_not(strstr(why, "nested"), "%s", why);
	/* A node with no driver behind it, on a CPU without virtualization. */
	explain("flags\t\t: fpu hypervisor\n", ENXIO, why, sizeof(why));
	cr_assert(strstr(why, "cannot open /dev/kvm"), "%s", why);
	cr_assert(strstr(why, "no hardware virtualization"), "%s", why);
	/* vmx or svm: a module helps; and another architecture's cpuinfo. */
	explain("flags\t\t: fpu vmx hypervisor\n", ENOENT, why, sizeof(why));
	cr_assert(strstr(why, "CONFIG_KVM"), "%s", why);
	cr_assert_not(strstr(why, "no hardware virtualization"), "%s", why);
	explain("flags\t\t: fpu svm\n", ENOENT, why, sizeof(why));
	cr_assert(strstr(why, "CONFIG_KVM"), "%s", why);
	explain("processor\t: 0\nFeatures\t: fp asimd\n", ENOENT, why,
		sizeof(why));
	cr_assert(strstr(why, "CONFIG_KVM"), "%s", why);
	/* Refused: root is not told to run as root. */
	explain("flags\t\t: fpu vmx\n", EACCES, why, sizeof(why));
	cr_assert(strstr(why, "Permission denied"), "%s", why);
	if (geteuid())
		cr_assert(strstr(why, "run as root or join the kvm group"),
			  "%s", why);
	else
		cr_assert_not(strstr(why, "run as root"), "%s", why);
}

static char logged[1024];

static void keep_log(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	if (level == ZVMM_LOG_ERROR)
		snprintf(logged, sizeof(logged), "%s", msg);
}

/*
 * A directory at the pool path is a wrong request, -EINVAL, as
 * libzvmm(3) says: from the check, from the open, and from the open's
 * own look at what is there (a directory may appear after the check),
 * where opening it gave EISDIR. zvmm says so as a usage error, before
 * /dev/kvm; the directory stays as it was.
 */
Test(machine, pool_path_that_is_a_directory_is_einval, .fini = drop_tmp)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(SZ_2M, ZVMM_PAGE_2M);
	struct zero_mem_opts o = { .bytes = SZ_2M, .page_bytes = SZ_2M };
	struct zvmm_guest *g = NULL;
	struct zero_mem *m = NULL;
	char dir[96], err[512];
	struct stat st;

	make_tmp();
	snprintf(dir, sizeof(dir), "%s/pool", tmp);
	cr_assert_eq(mkdir(dir, 0700), 0);
	mem.pool_path = dir;
	zvmm_set_log(keep_log, NULL, ZVMM_LOG_ERROR);
	cr_assert_eq(zvmm_mem_check(&mem), -EINVAL, "%s", logged);
	cr_assert(strstr(logged, "is not a regular file but a directory"), "%s",
		  logged);
	logged[0] = '\0';
	cr_assert_eq(zvmm_guest_open(&mem, NULL, &g), -EINVAL, "%s", logged);
	cr_assert(strstr(logged, "is not a regular file"), "%s", logged);
	zvmm_set_log(NULL, NULL, ZVMM_LOG_ERROR);
	o.pool_path = dir;
	cr_assert_eq(zero_mem_create(&o, &m, err, sizeof(err)), -EINVAL, "%s",
		     err);
	cr_assert(strstr(err, "is not a regular file but a directory"), "%s",
		  err);

	run((const char *[]){ "prezero", "--mem", "2M", "--pool", dir, NULL });
	cr_assert_eq(r.status, 2, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "--pool "), "%s", r.out);
	cr_assert(strstr(r.out, "is not a regular file but a directory"), "%s",
		  r.out);
	assert_one_line();
	run((const char *[]){ "run", "--mem", "2M", "--pool", dir, "--kvm",
			      "/nonexistent/kvm", NULL });
	cr_assert_eq(r.status, 2, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "is not a regular file but a directory"), "%s",
		  r.out);
	assert_one_line();
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
}

/* `zvmm calibrate --out` into the test's directory: its output in r. */
static void calibrate(char *profile, size_t len)
{
	snprintf(profile, len, "%s/calibration.ini", tmp);
	run((const char *[]){ "calibrate", "--out", profile, NULL });
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
}

/*
 * The table: one column per chunk size, each cell one word apart from
 * the next (a best backend never runs into its neighbour), and a
 * backend out of the running after the first chunk size shown as not
 * timed, never as 0.0.
 */
Test(machine, calibrate_table_columns_are_separate, .fini = drop_tmp)
{
	static const char *const chunks[] = { "256K", "1M", "2M", "4M", "8M" };
	static char text[sizeof(r.out)];
	char profile[96], *line, *save, *w, *wsave, *end;
	bool in_table = false, untimed = false, best_seen = false;
	unsigned int rows = 0;

	make_tmp();
	calibrate(profile, sizeof(profile));
	memcpy(text, r.out, r.out_len + 1);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned int n = 0;
		bool best = !strncmp(line, "best ", 5);

		if (!strncmp(line, "GB/s ", 5)) {
			for (w = strtok_r(line + 5, " ", &wsave); w;
			     w = strtok_r(NULL, " ", &wsave), n++)
				cr_assert(n < 5 && !strcmp(w, chunks[n]),
					  "header cell %u is '%s'", n, w);
			cr_assert_eq(n, 5);
			in_table = true;
			continue;
		}
		if (!in_table)
			continue;
		w = strtok_r(line, " ", &wsave);
		cr_assert(best || zero_backend_index(w) >= 0,
			  "row of '%s', not a backend", w);
		for (w = strtok_r(NULL, " ", &wsave); w;
		     w = strtok_r(NULL, " ", &wsave), n++) {
			if (best) {
				cr_assert_geq(zero_backend_index(w), 0,
					      "best '%s' is not one backend",
					      w);
				continue;
			}
			if (!strcmp(w, "-")) {
				untimed = true;
				continue;
			}
			cr_assert(strtod(w, &end) > 0 && !*end,
				  "cell '%s' is neither a rate nor -", w);
		}
		cr_assert_eq(n, 5, "a row of %u cells", n);
		if (best) {
			best_seen = true;
			break;
		}
		rows++;
	}
	cr_assert(best_seen && rows, "no table in: %s", r.out);
	if (untimed)
		cr_assert(strstr(r.out, "\n-: not timed"), "- unexplained: %s",
			  r.out);
}

/*
 * With no cache size in sysfs (this workplace's machines), calibrate
 * says the size it assumed, and the profile carries it; with one, it
 * says nothing of the kind. The in-process cases, with a made-up sysfs,
 * are calibrate::unknown_cache_is_said_and_kept.
 */
Test(machine, calibrate_says_what_it_assumed_of_the_cache, .fini = drop_tmp)
{
	char profile[96], *text = NULL;
	bool listed;
	size_t len;
	glob_t gl;
	int fd;

	listed = !glob("/sys/devices/system/cpu/cpu*/cache/index*/size", 0,
		       NULL, &gl);
	if (listed)
		globfree(&gl);
	make_tmp();
	calibrate(profile, sizeof(profile));
	fd = open(profile, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", profile, strerror(errno));
	cr_assert_eq(file_read_fd(fd, 1 << 20, &text, &len), 0);
	close(fd);
	if (listed) {
		cr_assert_not(strstr(r.out, "sysfs lists no cache sizes"), "%s",
			      r.out);
		cr_assert_not(strstr(text, "\nllc_assumed"), "%s", text);
	} else {
		cr_assert(
			strstr(r.out,
			       "sysfs lists no cache sizes (/sys/devices/system/cpu/cpu*/cache)"),
			"%s", r.out);
		cr_assert(strstr(r.out, "were 256 MiB"), "%s", r.out);
		cr_assert(strstr(text, "\nllc = 0\nllc_assumed = 268435456\n"),
			  "%s", text);
	}
	free(text);
}

static bool zvmmd_listens(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (fd >= 0)
		close(fd);
	return ok;
}

/* What a directory holds, as "a b c", or "" when empty or missing. */
static void entries(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	out[0] = '\0';
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n += (size_t)snprintf(out + n, n < len ? len - n : 0,
					      "%s ", e->d_name);
	if (d)
		closedir(d);
}

/*
 * In a mount namespace of its own, with empty /var/cache and /var/lib:
 * zvmmd runs with the tests' ZVMM_CACHE_DIR and ZVMM_STATE_DIR; 0 when
 * it left both host directories empty, else what it left, on @fd.
 */
static int zvmmd_in_namespace(int fd, const char *conf, const char *sock)
{
	char log[96], cache[96], state[96], left[512];
	int st = -1;
	pid_t d;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/var/cache", "tmpfs", 0, "mode=0755") ||
	    mount("tmpfs", "/var/lib", "tmpfs", 0, "mode=0755")) {
		dprintf(fd, "no mount namespace: %s", strerror(errno));
		return 2;
	}
	snprintf(log, sizeof(log), "%s/zvmmd.log", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	setenv("ZVMM_CACHE_DIR", cache, 1);
	setenv("ZVMM_STATE_DIR", state, 1);
	d = fork();
	if (!d) {
		int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out, 1);
		dup2(out, 2);
		execl(test_zvmmd_bin(), "zvmmd", "--config", conf,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; d > 0 && i < 500 && !zvmmd_listens(sock); i++) {
		if (waitpid(d, &st, WNOHANG) == d) {
			dprintf(fd, "zvmmd exited at start: see %s", log);
			return 1;
		}
		usleep(10000);
	}
	if (d > 0) {
		kill(d, SIGTERM);
		waitpid(d, &st, 0);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		dprintf(fd, "zvmmd did not run and stop cleanly (%d): see %s",
			st, log);
		return 1;
	}
	entries("/var/cache", left, sizeof(left));
	if (left[0]) {
		dprintf(fd, "zvmmd left in /var/cache: %s", left);
		return 1;
	}
	entries("/var/lib", left, sizeof(left));
	if (left[0]) {
		dprintf(fd, "zvmmd left in /var/lib: %s", left);
		return 1;
	}
	return 0;
}

/*
 * zvmmd is a program of zvmm's: what it keeps of a calibration profile
 * or a pool state record goes where $ZVMM_CACHE_DIR and $ZVMM_STATE_DIR
 * say, as zvmm's does, so the zvmmds of tests and CI never write the
 * host's /var/cache/zvmm or /var/lib/zvmm. Watched in a mount namespace
 * whose /var/cache and /var/lib are empty, so other work on the host
 * neither shows up here nor sees this.
 */
Test(machine, zvmmd_keeps_nothing_in_the_hosts_cache_or_state, .fini = drop_tmp,
     .timeout = 60)
{
	char conf[96], sock[96], why[512] = "";
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	test_need_root("zvmmd runs as root and mounts hugetlbfs");
	if (access(test_zvmmd_bin(), X_OK))
		test_skip(TEST_NEED_TOOL, "no %s (make)", test_zvmmd_bin());
	make_tmp();
	snprintf(conf, sizeof(conf), "%s/zvmmd.conf", tmp);
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", tmp);
	{
		char text[512];

		snprintf(
			text, sizeof(text),
			"[service]\nsocket = %s\ndir = %s/chunks\ngroup = root\n"
			"[pages.2M]\nchunk = 16M\nlow = 16M\nhigh = 16M\nmax = 32M\n",
			sock, tmp);
		test_write_text(conf, text);
	}
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pfd[0]);
		_exit(zvmmd_in_namespace(pfd[1], conf, sock));
	}
	close(pfd[1]);
	n = read(pfd[0], why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", why);
}
