// SPDX-License-Identifier: MIT
/*
 * `zvmm exec`: guest memory prepared as `zvmm run` prepares it under the
 * prezero policy (a pool file checked, locked, its record trusted or its
 * pages scrubbed; a zvmmd lease; or a private memfd), then handed to an
 * unmodified VMM (QEMU's memory-backend-file) as an inherited fd. The
 * VMM runs as zvmm's child; when it and everything it left are gone,
 * on_exit runs and the lease goes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"
#include "progress.h"
#include "sigwatch.h"

/* Process start, near enough: set first thing in main(). */
extern double zvmm_start_time;
extern char **environ;

/* Exit statuses of a VMM that could not be started, as a shell's. */
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static const struct cli_text exec_texts[] = {
	{ CLI_MEM, "guest RAM, whole pages (e.g. 4G)" },
	{ CLI_POLICY,
	  "zeroing policy; its mode must be prezero (the default here)" },
	{ CLI_JSON,
	  "write the JSON report once the VMM has exited ('-': stdout)" },
	{ CLI_QUIET, "no progress line and no summary" },
	{ 0 }
};

static const struct cli_verb exec_verb = {
	.name = "exec",
	.accepts = CLI_MEM | CLI_HUGEPAGES | CLI_POOL | CLI_POOL_SERVICE |
		   CLI_SOCKET | CLI_POLICY | CLI_SET | CLI_JSON | CLI_QUIET |
		   CLI_VERBOSE,
	.required = CLI_MEM,
	.rest = "-- VMM [ARG]...",
	.texts = exec_texts,
	.what = "Prepares SIZE bytes of hugepage memory as `zvmm run` does under the\n"
		"prezero policy (a --pool file locked, its state record trusted or its\n"
		"pages scrubbed; a zvmmd lease with --pool-service; else a private\n"
		"memfd), then runs VMM with the memory as an inherited fd. In VMM's\n"
		"arguments {mem-path} becomes /proc/self/fd/N, {mem-fd} N and {mem-size}\n"
		"the bytes; ZVMM_MEM_PATH, ZVMM_MEM_FD and ZVMM_MEM_SIZE say the same.\n"
		"SIGINT, SIGTERM and SIGHUP are passed to VMM. Once it has exited, and\n"
		"no process it left still holds the memory, the pool's on_exit runs\n"
		"(release, keep, or scrub and write the state record) and a lease goes\n"
		"back to zvmmd. QEMU:\n"
		"  zvmm exec --mem 4G --pool /dev/hugepages/vm1 -- qemu-system-x86_64 \\\n"
		"    -m 4G -object memory-backend-file,id=m,size=4G,mem-path={mem-path},share=on \\\n"
		"    -machine memory-backend=m ...",
	.after =
		"Exit status: VMM's own, or 128 + N when signal N ended it; 126 VMM\n"
		"could not be run, 127 not found; before VMM ran: 2 usage, 3 missing\n"
		"resources, 130 interrupted, 1 other errors.",
};

struct exec_state {
	struct cli_args a;
	struct zvmm_mem mem;
	struct zvmm_policy *pol;
	struct zvmm_guest *g; /* read by the signal thread */
	/* the VMM, for the signal thread; 0: none. Under pid_lock, so that
	 * no signal goes to its pid once it is reaped (and maybe reused). */
	pthread_mutex_t pid_lock;
	pid_t pid;
	pid_t vmm_pid; /* the VMM, for the reports */
	unsigned int forwarded; /* signals passed to the VMM */
	struct vmm_sigwatch w;
	unsigned int sigs_at_end;
	FILE *json;
	int mem_fd; /* the VMM's number for the memory; closed once it runs */
	int vmm_fd; /* that number, for the reports */
	char **argv, **envp; /* the VMM's, substituted */
	char e_path[80], e_fd[32], e_size[40]; /* envp's ZVMM_MEM_* */
	int wstatus;
	double t_opened, t_prepared, t_started, t_ended;
	bool held; /* a process the VMM left still holds the memory */
};

static void on_signal(void *arg, int sig)
{
	struct exec_state *s = arg;
	struct zvmm_guest *g;

	pthread_mutex_lock(&s->pid_lock);
	if (s->pid > 0) {
		/* The VMM decides what a signal means; zvmm waits for it. */
		kill(s->pid, sig);
		s->forwarded++;
		pthread_mutex_unlock(&s->pid_lock);
		return;
	}
	pthread_mutex_unlock(&s->pid_lock);
	g = __atomic_load_n(&s->g, __ATOMIC_SEQ_CST);
	if (g)
		zvmm_guest_cancel(g);
}

/* The policy's mode, from its formatted text (zvmm policy's). */
static int policy_mode(const struct zvmm_policy *pol, char *mode, size_t len)
{
	char text[4096], *p;
	int ret = zvmm_policy_format(pol, text, sizeof(text));

	if (ret < 0)
		return ret;
	p = strstr(text, "\nmode = ");
	if (!p)
		return -EINVAL;
	p += strlen("\nmode = ");
	snprintf(mode, len, "%.*s", (int)strcspn(p, "\n"), p);
	return 0;
}

static int check_policy(struct exec_state *s)
{
	char mode[32];
	int ret;

	ret = cli_policy_mode("prezero", s->a.policy, &s->a.sets, &s->pol);
	if (ret)
		return ret;
	ret = policy_mode(s->pol, mode, sizeof(mode));
	if (ret)
		return ret;
	if (strcmp(mode, "prezero")) {
		pr_err("exec: zeroing.mode = %s cannot serve another process: a userfaultfd serves only the process that registered it, and the VMM maps the memory itself. Use the prezero policy (the default here): on a pool with a clean state record, or leased from zvmmd (--pool-service), it is ready at once",
		       mode);
		return -EINVAL;
	}
	return 0;
}

/* @in with every {key} of @keys replaced by its value; NULL on ENOMEM. */
static char *substitute(const char *in, const char *const keys[][2])
{
	size_t len = strlen(in) + 1, n = 0;
	char *out;
	const char *p;

	for (unsigned int k = 0; keys[k][0]; k++)
		for (p = strstr(in, keys[k][0]); p;
		     p = strstr(p + 1, keys[k][0]))
			len += strlen(keys[k][1]);
	out = malloc(len);
	if (!out)
		return NULL;
	for (p = in; *p;) {
		unsigned int k;

		for (k = 0; keys[k][0]; k++)
			if (!strncmp(p, keys[k][0], strlen(keys[k][0])))
				break;
		if (keys[k][0]) {
			n += (size_t)sprintf(out + n, "%s", keys[k][1]);
			p += strlen(keys[k][0]);
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

static bool is_ours(const char *env)
{
	return !strncmp(env, "ZVMM_MEM_PATH=", 14) ||
	       !strncmp(env, "ZVMM_MEM_FD=", 12) ||
	       !strncmp(env, "ZVMM_MEM_SIZE=", 14);
}

/*
 * The VMM's argv and environment, made before fork(): the child of a
 * process with threads may only make async-signal-safe calls.
 */
static int make_command(struct exec_state *s)
{
	char path[64], fd[16], size[24];
	const char *const keys[][2] = { { "{mem-path}", path },
					{ "{mem-fd}", fd },
					{ "{mem-size}", size },
					{ NULL, NULL } };
	unsigned int n = 0, i;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->mem_fd);
	snprintf(fd, sizeof(fd), "%d", s->mem_fd);
	snprintf(size, sizeof(size), "%" PRIu64, s->mem.bytes);
	s->argv = calloc((size_t)s->a.nrest + 1, sizeof(*s->argv));
	if (!s->argv)
		return -ENOMEM;
	for (i = 0; i < (unsigned int)s->a.nrest; i++) {
		s->argv[i] = substitute(s->a.rest[i], keys);
		if (!s->argv[i])
			return -ENOMEM;
	}
	while (environ[n])
		n++;
	s->envp = calloc(n + 4, sizeof(*s->envp));
	if (!s->envp)
		return -ENOMEM;
	snprintf(s->e_path, sizeof(s->e_path), "ZVMM_MEM_PATH=%s", path);
	snprintf(s->e_fd, sizeof(s->e_fd), "ZVMM_MEM_FD=%s", fd);
	snprintf(s->e_size, sizeof(s->e_size), "ZVMM_MEM_SIZE=%s", size);
	n = 0;
	for (i = 0; environ[i]; i++)
		if (!is_ours(environ[i]))
			s->envp[n++] = environ[i];
	s->envp[n++] = s->e_path;
	s->envp[n++] = s->e_fd;
	s->envp[n++] = s->e_size;
	return 0;
}

static void free_command(struct exec_state *s)
{
	for (unsigned int i = 0; s->argv && s->argv[i]; i++)
		free(s->argv[i]);
	free(s->argv);
	free(s->envp); /* environ's strings and s's own */
}

/*
 * Runs the VMM: the memory's dup @dup becomes inheritable in the child
 * (its number is s->mem_fd), the signal mask is the one zvmm was started
 * with, less what zvmm blocked. An exec that fails reports its errno
 * through a close-on-exec pipe.
 */
static int spawn(struct exec_state *s, const sigset_t *mask)
{
	int pfd[2], err = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -err;
	}
	if (!pid) {
		if (fcntl(s->mem_fd, F_SETFD, 0) ||
		    sigprocmask(SIG_SETMASK, mask, NULL))
			err = errno;
		else
			execvpe(s->argv[0], s->argv, s->envp);
		err = errno;
		(void)!write(pfd[1], &err, sizeof(err));
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	close(pfd[1]);
	n = read(pfd[0], &err, sizeof(err));
	close(pfd[0]);
	if (n == sizeof(err)) {
		while (waitpid(pid, &s->wstatus, 0) < 0 && errno == EINTR)
			;
		pr_err("cannot run %s: %s", s->argv[0], strerror(err));
		return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
	}
	pthread_mutex_lock(&s->pid_lock);
	s->pid = pid;
	s->vmm_pid = pid;
	pthread_mutex_unlock(&s->pid_lock);
	return 0;
}

static int vmm_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return EXIT_OTHER;
}

static json_object *num(double v, const char *fmt)
{
	char text[64];

	snprintf(text, sizeof(text), fmt, v);
	return json_object_new_double_s(v, text);
}

/* docs/DESIGN.md 8: the exec report. */
static int write_json(struct exec_state *s, const struct zvmm_stats *z)
{
	json_object *o = json_object_new_object(), *vmm, *mem, *pz, *ex;
	char buf[16384];
	int ret;

	vmm = json_object_new_object();
	json_object_object_add(vmm, "command",
			       json_object_new_string(s->argv[0]));
	json_object_object_add(vmm, "pid", json_object_new_int(s->vmm_pid));
	json_object_object_add(vmm, "status",
			       json_object_new_int(vmm_status(s->wstatus)));
	json_object_object_add(
		vmm, "exit_code",
		WIFEXITED(s->wstatus) ?
			json_object_new_int(WEXITSTATUS(s->wstatus)) :
			NULL);
	json_object_object_add(
		vmm, "signal",
		WIFSIGNALED(s->wstatus) ?
			json_object_new_int(WTERMSIG(s->wstatus)) :
			NULL);
	json_object_object_add(vmm, "signals_passed",
			       json_object_new_int((int)s->forwarded));
	json_object_object_add(vmm, "left_holding",
			       json_object_new_boolean(s->held));
	mem = json_object_new_object();
	json_object_object_add(
		mem, "source",
		json_object_new_string(
			s->mem.source == ZVMM_SOURCE_SERVICE ? "service" :
			s->mem.source == ZVMM_SOURCE_POOL    ? "pool" :
							       "private"));
	json_object_object_add(mem, "fd", json_object_new_int(s->vmm_fd));
	json_object_object_add(mem, "bytes", json_object_new_uint64(z->bytes));
	json_object_object_add(mem, "page_bytes",
			       json_object_new_uint64(z->page_bytes));
	pz = json_object_new_object();
	json_object_object_add(pz, "open_seconds",
			       num(s->t_opened - zvmm_start_time, "%.6f"));
	json_object_object_add(pz, "seconds",
			       num(s->t_prepared - zvmm_start_time, "%.6f"));
	json_object_object_add(pz, "scrub_bytes",
			       json_object_new_uint64(z->prezero_scrub_bytes));
	json_object_object_add(
		pz, "populate_bytes",
		json_object_new_uint64(z->prezero_populate_bytes));
	json_object_object_add(pz, "service_zero_bytes",
			       json_object_new_uint64(z->service_zero_bytes));
	json_object_object_add(pz, "service_empty_bytes",
			       json_object_new_uint64(z->service_empty_bytes));
	json_object_object_add(pz, "record_clean",
			       json_object_new_boolean(z->record_clean));
	ex = json_object_new_object();
	json_object_object_add(ex, "on_exit",
			       json_object_new_string(z->on_exit));
	json_object_object_add(ex, "bytes",
			       json_object_new_uint64(z->exit_bytes));
	json_object_object_add(ex, "seconds", num(z->exit_seconds, "%.6f"));
	json_object_object_add(ex, "record_written",
			       json_object_new_boolean(z->record_written));
	json_object_object_add(o, "version", json_object_new_int(1));
	json_object_object_add(o, "vmm", vmm);
	json_object_object_add(o, "memory", mem);
	json_object_object_add(o, "prepare", pz);
	json_object_object_add(o, "run_seconds",
			       num(s->t_ended - s->t_started, "%.6f"));
	json_object_object_add(o, "exit", ex);
	/* Every statistic, as `zvmm run --json` has them. */
	if (s->g && zvmm_guest_stats_json(s->g, buf, sizeof(buf)) > 0)
		json_object_object_add(o, "stats", json_tokener_parse(buf));
	ret = fprintf(s->json, "%s\n",
		      json_object_to_json_string_ext(
			      o, JSON_C_TO_STRING_SPACED)) < 0 ?
		      -EIO :
		      0;
	json_object_put(o);
	return fflush(s->json) ? -EIO : ret;
}

static void show_progress(void *arg, uint64_t done, uint64_t total)
{
	vmm_progress_update(arg, "prezero", done, total);
}

/*
 * The VMM's fd for the memory, numbered from 3: an open file description
 * of its own, not a dup of the library's, so that a process the VMM
 * leaves holding it is seen at exit (a lease on the file, which a dup
 * sharing the library's description would hide). A zvmmd chunk this
 * user may not reopen (root's, 0600) is passed as a dup: zvmmd finds
 * who holds its chunks itself.
 */
static int vmm_file(struct exec_state *s, int fd)
{
	char proc[64];
	int nfd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	nfd = open(proc, O_RDWR | O_CLOEXEC);
	if (nfd < 0 && errno == EACCES && s->mem.source == ZVMM_SOURCE_SERVICE)
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0)
		return -errno;
	if (nfd < 3) {
		int high = fcntl(nfd, F_DUPFD_CLOEXEC, 3), e = errno;

		close(nfd);
		if (high < 0)
			return -e;
		nfd = high;
	}
	s->mem_fd = nfd;
	s->vmm_fd = nfd;
	return 0;
}

/* Checks, opens and prepares the memory; nothing runs yet. */
static int exec_prepare(struct exec_state *s)
{
	struct vmm_progress progress;
	struct zvmm_stats z;
	uint64_t offset;
	char sa[32], sb[32];
	int ret, fd;

	ret = zvmm_mem_check(&s->mem);
	if (ret)
		return ret;
	if (s->a.json && strcmp(s->a.json, "-")) {
		s->json = fopen(s->a.json, "we");
		if (!s->json) {
			pr_err("cannot write --json %s: %s", s->a.json,
			       strerror(errno));
			return -EINVAL;
		}
	} else if (s->a.json) {
		s->json = stdout;
	}
	ret = zvmm_guest_open(&s->mem, s->pol, &s->g);
	s->t_opened = clock_now();
	if (ret)
		return ret;
	if (vmm_sigwatch_seen(&s->w))
		return -ECANCELED;
	ret = zvmm_guest_file(s->g, &fd, &offset);
	if (ret == -EXDEV || (!ret && offset)) {
		pr_err("zvmmd leased --mem %s as several chunk files, and a VMM maps one file: set chunk (in zvmmd.conf's [pages.%s] section) to at least %s, or ask for at most one chunk",
		       size_format(s->mem.bytes, sa, sizeof(sa)),
		       size_label(s->mem.page_bytes, sb, sizeof(sb)),
		       size_format(s->mem.bytes, sa, sizeof(sa)));
		return -EINVAL;
	}
	if (ret)
		return ret;
	vmm_progress_begin(&progress, s->a.quiet);
	zvmm_guest_set_progress(s->g, show_progress, &progress);
	ret = zvmm_guest_prepare(s->g, 0);
	vmm_progress_end(&progress);
	zvmm_guest_set_progress(s->g, NULL, NULL);
	if (vmm_sigwatch_seen(&s->w))
		return -ECANCELED;
	if (ret)
		return ret;
	s->t_prepared = clock_now();
	ret = vmm_file(s, fd);
	if (ret)
		return ret;
	zvmm_guest_stats(s->g, &z);
	if (!s->a.quiet)
		fprintf(stderr,
			"zvmm: %s of %s pages ready in %.3f s (%s%s%s): fd %d to %s\n",
			size_format(z.bytes, sa, sizeof(sa)),
			size_label(z.page_bytes, sb, sizeof(sb)),
			s->t_prepared - zvmm_start_time,
			s->mem.source == ZVMM_SOURCE_POOL ? "pool " : "",
			s->mem.source == ZVMM_SOURCE_SERVICE ?
				"leased from zvmmd" :
			s->mem.source == ZVMM_SOURCE_POOL ? s->mem.pool_path :
							    "private memfd",
			z.record_clean ? ", its state record trusted" : "",
			s->mem_fd, s->a.rest[0]);
	return make_command(s);
}

/*
 * on_exit once nothing the VMM started can still run: handed back (which
 * keeps the memory as it is when a process still holds it), then exit.
 */
static int exec_on_exit(struct exec_state *s, bool vmm_ran)
{
	int ret;

	if (vmm_ran) {
		ret = zvmm_guest_handed_back(s->g);
		s->held = ret == -EBUSY;
	}
	(void)!zvmm_guest_stop(s->g);
	return vmm_guest_exit_watched(&s->w, s->sigs_at_end, s->g) ==
			       -ECANCELED ?
		       EXIT_INTERRUPTED :
		       0;
}

/* After the VMM: on_exit, the summary, the report. */
static int exec_finish(struct exec_state *s)
{
	struct zvmm_stats z;
	char sa[32];
	int status = vmm_status(s->wstatus);

	if (exec_on_exit(s, true))
		status = EXIT_INTERRUPTED;
	zvmm_guest_stats(s->g, &z);
	if (!s->a.quiet) {
		fprintf(stderr, "zvmm: %s (pid %d) %s %d after %.3f s",
			s->argv[0], (int)s->vmm_pid,
			WIFSIGNALED(s->wstatus) ? "was killed by signal" :
						  "exited with status",
			WIFSIGNALED(s->wstatus) ? WTERMSIG(s->wstatus) :
						  WEXITSTATUS(s->wstatus),
			s->t_ended - s->t_started);
		if (z.on_exit[0])
			fprintf(stderr, "; on_exit %s: %s in %.3f s%s",
				z.on_exit,
				size_human(z.exit_bytes, sa, sizeof(sa)),
				z.exit_seconds,
				z.record_written ? ", state record written" :
						   "");
		fputc('\n', stderr);
	}
	if (s->json && write_json(s, &z))
		pr_err("cannot write --json %s", s->a.json);
	return status;
}

static int exec_run(struct exec_state *s, const sigset_t *mask)
{
	int ret, sig;
	pid_t got;

	/*
	 * The VMM runs as this user: not dumpable, so that it cannot
	 * ptrace zvmm or take the library's own file description from it
	 * (pidfd_getfd(2)), which the check at its exit could not see.
	 */
	prctl(PR_SET_DUMPABLE, 0);
	s->t_started = clock_now();
	ret = spawn(s, mask);
	/* The VMM has its own copy; the library keeps the memory's file. */
	close(s->mem_fd);
	s->mem_fd = -1;
	if (ret) {
		s->sigs_at_end = vmm_sigwatch_count(&s->w);
		/* Never run: on_exit as the policy says, nothing handed out. */
		return exec_on_exit(s, false) ? EXIT_INTERRUPTED : ret;
	}
	zvmm_guest_start(s->g);
	/* A signal between the prepare and the VMM's pid is passed on. */
	sig = vmm_sigwatch_seen(&s->w);
	pthread_mutex_lock(&s->pid_lock);
	if (sig && !s->forwarded) {
		kill(s->pid, sig);
		s->forwarded++;
	}
	pthread_mutex_unlock(&s->pid_lock);
	/* Exited, not yet reaped: its pid cannot be reused until then. */
	while ((ret = waitid(P_PID, (id_t)s->vmm_pid, &(siginfo_t){ 0 },
			     WEXITED | WNOWAIT)) < 0 &&
	       errno == EINTR)
		;
	/*
	 * From here a signal cancels on_exit instead: the count taken under
	 * the same lock, so that one that comes after it is not lost.
	 */
	pthread_mutex_lock(&s->pid_lock);
	s->pid = 0;
	s->sigs_at_end = vmm_sigwatch_count(&s->w);
	pthread_mutex_unlock(&s->pid_lock);
	while ((got = waitpid(s->vmm_pid, &s->wstatus, 0)) < 0 &&
	       errno == EINTR)
		;
	s->t_ended = clock_now();
	if (got != s->vmm_pid) {
		pr_err("cannot learn how %s (pid %d) ended: %s", s->argv[0],
		       (int)s->vmm_pid, strerror(errno));
		exec_on_exit(s, true);
		return -ECHILD;
	}
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	struct exec_state *s = calloc(1, sizeof(*s));
	sigset_t mask;
	int ret, status;

	if (!s)
		return EXIT_OTHER;
	pthread_mutex_init(&s->pid_lock, NULL);
	s->mem_fd = -1;
	s->w.on_signal = on_signal;
	s->w.arg = s;
	s->a = (struct cli_args){ .page_bytes = ZVMM_PAGE_2M };
	ret = cli_parse(&exec_verb, argc, argv, &s->a);
	if (ret) {
		free(s);
		return ret > 0 ? 0 : EXIT_USAGE;
	}
	if (s->a.verbose && log_level < LOG_DEBUG)
		log_level = LOG_DEBUG;
	if (!s->a.nrest) {
		pr_err("exec needs the VMM to run after --, e.g. zvmm exec --mem 1G -- qemu-system-x86_64 -m 1G -object memory-backend-file,id=m,size=1G,mem-path={mem-path},share=on -machine memory-backend=m ...");
		free(s);
		return EXIT_USAGE;
	}
	ret = cli_mem_source(&s->a, &s->mem);
	if (!ret)
		ret = check_policy(s);
	if (ret) {
		zvmm_policy_free(s->pol);
		free(s);
		return cli_exit_status(ret);
	}
	/*
	 * SIGCHLD as the kernel has it: ignored (inherited so), a VMM's
	 * status would be lost to waitpid(2). The child gets the mask zvmm
	 * had, not the one blocked here.
	 */
	signal(SIGCHLD, SIG_DFL);
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	vmm_sigwatch_block_hup();
	ret = vmm_sigwatch_start(&s->w);
	if (ret)
		pr_err("cannot take SIGINT, SIGTERM and SIGHUP: %s",
		       strerror(-ret));
	if (!ret)
		ret = exec_prepare(s);
	if (!ret)
		ret = exec_run(s, &mask);
	if (!ret) {
		status = exec_finish(s);
	} else if (ret > 0) {
		status = ret; /* the VMM could not be run */
	} else if (ret == -ECANCELED) {
		pr_err("interrupted before the VMM started; nothing is left behind");
		status = EXIT_INTERRUPTED;
	} else {
		if (ret != -EINVAL && ret != -EBUSY && ret != -ENOMEM &&
		    ret != -ENOENT && ret != -EACCES && ret != -EPERM &&
		    ret != -ENODEV)
			pr_err("exec: %s", strerror(-ret));
		status = cli_exit_status(ret);
	}
	vmm_sigwatch_stop(&s->w);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	zvmm_guest_close(s->g);
	zvmm_policy_free(s->pol);
	if (s->json && s->json != stdout) {
		fclose(s->json);
		if (ret)
			unlink(s->a.json);
	}
	free_command(s);
	pthread_mutex_destroy(&s->pid_lock);
	free(s);
	return status;
}
