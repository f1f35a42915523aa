// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/log.h"
#include "sigwatch.h"

/*
 * The watcher sleeps in poll() on a signalfd and an eventfd: pausing it
 * writes the eventfd and it returns at once. (A timed sigtimedwait()
 * loop made every pause wait out its timeout: 50 ms of each launch,
 * measured by `make bench`.)
 */
static void *watch(void *arg)
{
	struct vmm_sigwatch *w = arg;
	struct pollfd p[2] = { { .fd = w->sfd, .events = POLLIN },
			       { .fd = w->efd, .events = POLLIN } };
	struct signalfd_siginfo si;
	int sig;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		if (read(w->sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		sig = (int)si.ssi_signo;
		/* seq_cst: against the launch publishing what to stop. */
		if (!__atomic_load_n(&w->sig, __ATOMIC_SEQ_CST))
			__atomic_store_n(&w->sig, sig, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&w->count, 1, __ATOMIC_SEQ_CST);
		w->on_signal(w->arg, sig);
	}
	return NULL;
}

/*
 * SIGHUP too once vmm_sigwatch_block_hup() said so, less the signals
 * ignored then (nohup, a shell's background job): a blocked signal is
 * queued even when ignored, and would be taken as if it were not. One
 * process, one set.
 */
static bool with_hup;
static sigset_t exec_set;

static void watched(sigset_t *set)
{
	if (with_hup) {
		*set = exec_set;
		return;
	}
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

void vmm_sigwatch_block(void)
{
	sigset_t set;

	watched(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void vmm_sigwatch_block_hup(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	sigemptyset(&exec_set);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &sa) || sa.sa_handler != SIG_IGN)
			sigaddset(&exec_set, sigs[i]);
	with_hup = true;
	vmm_sigwatch_block();
}

int vmm_sigwatch_start(struct vmm_sigwatch *w)
{
	sigset_t set;
	int ret;

	watched(&set);
	w->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->sfd < 0 || w->efd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = -pthread_create(&w->thread, NULL, watch, w);
	if (ret)
		goto fail;
	w->started = 1;
	return 0;
fail:
	if (w->sfd >= 0)
		close(w->sfd);
	if (w->efd >= 0)
		close(w->efd);
	w->sfd = w->efd = -1;
	return ret;
}

int vmm_guest_exit_watched(struct vmm_sigwatch *w, unsigned int sigs_at_end,
			   struct zvmm_guest *g)
{
	int ret;

	zvmm_guest_rearm(g);
	/* A signal between the run's end and the rearm was cleared by it. */
	if (vmm_sigwatch_count(w) != sigs_at_end)
		zvmm_guest_cancel(g);
	ret = zvmm_guest_exit(g);
	if (ret == -ECANCELED && vmm_sigwatch_count(w) != sigs_at_end) {
		pr_err("interrupted during the pool's on_exit: no state record was written");
		return -ECANCELED;
	}
	return ret == -ECANCELED ? 0 : ret;
}

int vmm_sigwatch_seen(struct vmm_sigwatch *w)
{
	return __atomic_load_n(&w->sig, __ATOMIC_SEQ_CST);
}

unsigned int vmm_sigwatch_count(struct vmm_sigwatch *w)
{
	return __atomic_load_n(&w->count, __ATOMIC_SEQ_CST);
}

void vmm_sigwatch_stop(struct vmm_sigwatch *w)
{
	uint64_t one = 1;

	if (w->started) {
		__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
		if (write(w->efd, &one, sizeof(one)) != sizeof(one)) {
			/* cannot fail on a fresh eventfd; join anyway */
		}
		pthread_join(w->thread, NULL);
		close(w->sfd);
		close(w->efd);
		w->sfd = w->efd = -1;
		w->started = 0;
		__atomic_store_n(&w->stop, 0, __ATOMIC_RELEASE);
	}
}
