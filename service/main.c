// SPDX-License-Identifier: MIT
/*
 * zvmmd's main: parses its command line, makes the one struct zvmmd
 * (zvmmd.h), runs its event loop until SIGTERM or SIGINT, and frees it.
 * Beside the loop run the filler (chunks.c) and the holder scan
 * (quarantine.c): the loop accepts, reads and drops clients, hands the
 * scan a walk on a timer and when a lease ends, and takes its answer
 * back through an eventfd, so a walk of a busy /proc never delays a
 * reply or SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/log.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "zvmmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zvmmd [--config FILE]\n"
		"\n"
		"Keeps hugepage memory zeroed ahead of time and leases it to VMMs\n"
		"over a unix socket (zvmmd(8), docs/zvmmd-protocol.md). Runs in the\n"
		"foreground, logs to stderr (journald under systemd), ends on SIGTERM.\n"
		"\n"
		"  --config FILE   its configuration (default %s;\n"
		"                  zvmmd.conf(5))\n",
		ZVMMD_CONF_PATH);
}

/*
 * The command line into *@config. Returns 0 to run, 1 when --help or
 * --version said all there is, -EINVAL when the line is wrong (said).
 */
static int parse(int argc, char **argv, const char **config)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			*config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("zvmmd %s\n", ZVMM_VERSION);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; see zvmmd --help",
		       argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/*
 * [service] root_reserve where it is not what was asked in pool @p: none
 * (max is one chunk, or the share is under a page), or capped at max
 * less a chunk. Said at start, so that no one counts on a reserve the
 * kernel does not hold.
 */
static void reserve_said(const struct zvmmd *d, const struct pool *p)
{
	uint64_t max = p->cfg->max, asked = d->cfg.root_reserve;
	char a[32], b[32], c[32];

	if (d->cfg.root_reserve_pct)
		asked = max / 100 * asked + max % 100 * asked / 100;
	asked = asked / p->cfg->page_bytes * p->cfg->page_bytes;
	if (!p->reserve_cfg)
		pr_warn("%s pages: [service] root_reserve holds none of this pool (its max is one chunk, or the reserve is under a page)",
			p->label);
	else if (p->reserve_cfg < asked)
		pr_warn("%s pages: [service] root_reserve holds %s of this pool, not %s: at most its max less one chunk (%s)",
			p->label, size_format(p->reserve_cfg, a, sizeof(a)),
			size_format(asked, b, sizeof(b)),
			size_format(max - p->cfg->chunk_bytes, c, sizeof(c)));
}

/*
 * A zvmmd of the configuration at @path, not started: *@out, to be
 * freed with zvmmd_free(). Returns 0, -EINVAL for a configuration in
 * error, or another -errno (said).
 */
static int zvmmd_new(const char *path, struct zvmmd **out)
{
	struct zvmmd *d = calloc(1, sizeof(*d));
	char err[512];
	int ret;

	*out = d;
	if (!d) {
		pr_err("cannot start: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->wake, NULL);
	pthread_mutex_init(&d->gate_lock, NULL);
	pthread_cond_init(&d->gate_cv, NULL);
	pthread_mutex_init(&d->scan_lock, NULL);
	pthread_cond_init(&d->scan_wake, NULL);
	d->scan_efd = -1;
	d->scan_ev = (struct ev){ EV_SCAN, NULL };
	pthread_mutex_init(&d->trim_lock, NULL);
	pthread_cond_init(&d->trim_wake, NULL);
	d->trim_efd = -1;
	d->trim_ev = (struct ev){ EV_TRIM, NULL };
	d->dirfd = d->epfd = d->listen_fd = d->signal_fd = d->timer_fd = -1;
	d->listen_ev = (struct ev){ EV_LISTEN, NULL };
	d->signal_ev = (struct ev){ EV_SIGNAL, NULL };
	d->timer_ev = (struct ev){ EV_TIMER, NULL };
	fdstore_take(d);
	zvmmd_config_defaults(&d->cfg);
	ret = zvmmd_config_load(path, &d->cfg, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		const struct zvmmd_pool_cfg *pc = &d->cfg.pool[i];
		struct pool *p = &d->pools[i];
		char ps[8];

		p->cfg = pc;
		p->m.dirfd = p->r.dirfd = -1;
		/* Its mount's and its chunks' names: 2M, 2M-node1, ... */
		size_label(pc->page_bytes ? pc->page_bytes : SZ_2M, ps,
			   sizeof(ps));
		if (pc->node >= 0)
			snprintf(p->label, sizeof(p->label), "%s-node%d", ps,
				 pc->node);
		else
			snprintf(p->label, sizeof(p->label), "%s", ps);
		/* Root's: 2M-root, 2M-node1-root. */
		snprintf(p->m.label, sizeof(p->m.label), "%s", p->label);
		snprintf(p->r.label, sizeof(p->r.label), "%s-root", p->label);
		p->reserve_cfg = zvmmd_root_reserve(&d->cfg, (unsigned int)i);
		if (pc->on && d->cfg.root_reserve)
			reserve_said(d, p);
		/*
		 * Each mount sized to its part: the kernel holds the two
		 * to max together whatever the books say.
		 */
		p->m.size = pc->max - p->reserve_cfg;
		p->r.size = p->r.min = p->reserve_cfg;
		p->r.keep_empty = p->reserve_cfg != 0;
	}
	return 0;
}

static void signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
}

/*
 * What zvmmd needs before it touches anything: root, descriptors, its
 * group, SIGTERM and SIGINT for the loop alone, and its socket free.
 */
static int zvmmd_prepare(struct zvmmd *d)
{
	struct rlimit rl;
	struct group *gr;
	sigset_t set;

	if (geteuid()) {
		pr_err("zvmmd mounts hugetlbfs and owns its chunks: run it as root (systemctl start zvmmd)");
		return -EPERM;
	}
	/* Two descriptors a connection, one a chunk: as many as allowed. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)!setrlimit(RLIMIT_NOFILE, &rl);
	}
	gr = getgrnam(d->cfg.group);
	d->gid = gr ? gr->gr_gid : (gid_t)-1;
	if (!gr)
		pr_warn("group %s does not exist: only root may lease (addgroup --system %s)",
			d->cfg.group, d->cfg.group);
	signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/*
	 * One zvmmd a config: a second would empty and remount the first's
	 * pools. Under systemd the socket unit sees to it.
	 */
	if (!listener_activated(d) && listener_taken(d)) {
		pr_err("another zvmmd listens on %s: stop it first (systemctl stop zvmmd), or give this one its own [service] socket and dir",
		       d->cfg.socket);
		return -EADDRINUSE;
	}
	return 0;
}

/* The loop's descriptors: the socket, the signals, the recheck timer. */
static int loop_open(struct zvmmd *d)
{
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t set;
	int ret;

	signals(&set);
	d->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	d->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->signal_fd < 0 || d->timer_fd < 0 || d->epfd < 0) {
		ret = -errno;
		pr_err("cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	its.it_interval.tv_sec = d->cfg.recheck_ms / 1000;
	its.it_interval.tv_nsec = (long)(d->cfg.recheck_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	timerfd_settime(d->timer_fd, 0, &its, NULL);
	ev.data.ptr = &d->listen_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->listen_fd, &ev);
	ev.data.ptr = &d->signal_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->signal_fd, &ev);
	ev.data.ptr = &d->timer_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->timer_fd, &ev);
	ev.data.ptr = &d->scan_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->scan_efd, &ev);
	ev.data.ptr = &d->trim_ev;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->trim_efd, &ev);
	return 0;
}

/*
 * @d started: its mounts, its socket, its loop and the filler. Returns
 * 0 or -errno (said); what was started is undone by zvmmd_free().
 */
static int zvmmd_start(struct zvmmd *d)
{
	int ret;

	ret = zvmmd_prepare(d);
	if (!ret)
		ret = pools_open(d);
	if (ret)
		return ret;
	ret = listener_open(d);
	if (ret) {
		pr_err("cannot listen on %s: %s", d->cfg.socket,
		       strerror(-ret));
		return ret;
	}
	ret = scan_start(d);
	if (ret) {
		pr_err("cannot start the holder scan: %s", strerror(-ret));
		return ret;
	}
	ret = trim_start(d);
	if (ret) {
		pr_err("cannot start the trims: %s", strerror(-ret));
		return ret;
	}
	ret = loop_open(d);
	if (ret)
		return ret;
	ret = filler_start(d);
	if (ret) {
		pr_err("cannot start the filler: %s", strerror(-ret));
		return ret;
	}
	pr_info("listening on %s (pid %d)", d->cfg.socket, (int)getpid());
	return 0;
}

/* Event @i of the @n in @evs handled; true when zvmmd is to stop. */
static bool loop_event(struct zvmmd *d, struct epoll_event *evs, int i, int n)
{
	struct ev *e = evs[i].data.ptr;
	struct signalfd_siginfo si;
	uint64_t ticks;

	switch (e->kind) {
	case EV_LISTEN:
		listener_accept(d);
		break;
	case EV_SIGNAL:
		if (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
			pr_info("%s: shutting down",
				strsignal((int)si.ssi_signo));
			return true;
		}
		break;
	case EV_TIMER:
		if (read(d->timer_fd, &ticks, sizeof(ticks)) > 0) {
			quarantine_check(d);
			peers_sweep_idle(d, evs, i + 1, n);
		}
		break;
	case EV_SCAN:
		scan_done(d);
		break;
	case EV_TRIM:
		trims_done(d);
		break;
	case EV_PIDFD:
		/* The client exited: its lease ends even if a child of a
		 * fork() keeps the socket. */
		peers_forget(evs, i + 1, n, e->c);
		peer_drop(d, e->c);
		break;
	case EV_CLIENT:
		if ((evs[i].events & (EPOLLHUP | EPOLLERR)) ||
		    !peer_read(d, e->c)) {
			peers_forget(evs, i + 1, n, e->c);
			peer_drop(d, e->c);
		}
		break;
	}
	return false;
}

/* Until SIGTERM or SIGINT: 0, or -errno when the loop itself fails. */
static int zvmmd_run(struct zvmmd *d)
{
	struct epoll_event evs[16];
	int n;

	for (;;) {
		n = epoll_wait(d->epfd, evs, 16, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int i = 0; i < n; i++)
			if (evs[i].data.ptr && loop_event(d, evs, i, n))
				return 0;
	}
}

/* Everything @d holds given back, half-made or not, its socket gone. */
static void zvmmd_free(struct zvmmd *d)
{
	bool joined;

	if (!d)
		return;
	joined = scan_stop(d);
	joined &= trim_stop(d);
	joined &= filler_stop(d);
	peers_drop_all(d);
	pools_close(d);
	peers_users_sweep(d, true);
	/* Passed and not taken (a start that failed): left to the store. */
	for (int k = 0; k < ZVMMD_NR_STORED; k++)
		if (d->stored[k].fd >= 0)
			close(d->stored[k].fd);
	if (d->passed_socket >= 0)
		close(d->passed_socket);
	listener_close(d);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (!joined)
		return; /* the scan, trim or gate thread may still use @d */
	scan_free(d);
	if (d->scan_efd >= 0)
		close(d->scan_efd);
	pthread_cond_destroy(&d->scan_wake);
	pthread_mutex_destroy(&d->scan_lock);
	pthread_cond_destroy(&d->trim_wake);
	pthread_mutex_destroy(&d->trim_lock);
	pthread_cond_destroy(&d->gate_cv);
	pthread_mutex_destroy(&d->gate_lock);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int main(int argc, char **argv)
{
	const char *config = ZVMMD_CONF_PATH;
	struct zvmmd *d;
	int ret;

	log_to_stderr_as("zvmmd", getenv("JOURNAL_STREAM") != NULL);
	/*
	 * A program of zvmm's, as zvmm is: zvmm's code in it keeps a
	 * calibration profile or a pool state record, if it ever does, in
	 * $ZVMM_CACHE_DIR and $ZVMM_STATE_DIR, so a test's or CI's zvmmd
	 * stays out of the host's /var/cache/zvmm and /var/lib/zvmm.
	 */
	program_env_enable();
	ret = parse(argc, argv, &config);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = zvmmd_new(config, &d);
	if (ret) {
		zvmmd_free(d);
		return ret == -EINVAL ? 2 : 1;
	}
	ret = zvmmd_start(d);
	if (!ret)
		ret = zvmmd_run(d);
	zvmmd_free(d);
	return ret ? 1 : 0;
}
