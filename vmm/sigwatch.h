/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_SIGWATCH_H
#define ZVMM_VMM_SIGWATCH_H

#include <pthread.h>
#include <signal.h>

/*
 * SIGINT and SIGTERM taken by a thread of their own: they are blocked in
 * every thread (vmm_sigwatch_block() before any thread is created) and
 * the watcher calls @on_signal, so stopping work, which takes locks,
 * never runs inside a signal handler.
 */
struct vmm_sigwatch {
	void (*on_signal)(void *arg, int sig);
	void *arg;
	int sig; /* the first signal seen, 0 if none */
	unsigned int count; /* signals seen */
	int stop;
	int sfd, efd; /* signalfd of SIGINT/SIGTERM; eventfd to stop it */
	pthread_t thread;
	int started;
};

void vmm_sigwatch_block(void);
/*
 * The same with SIGHUP as well, from now on (zvmm exec passes them on),
 * each only if it is not ignored now (nohup, a background job).
 */
void vmm_sigwatch_block_hup(void);
int vmm_sigwatch_start(struct vmm_sigwatch *w)
	__attribute__((warn_unused_result));
/* The first signal the watcher took, 0 if none (any thread). */
int vmm_sigwatch_seen(struct vmm_sigwatch *w);

/* How many signals it took so far (any thread). */
unsigned int vmm_sigwatch_count(struct vmm_sigwatch *w);

/*
 * Stops the watcher: no callback runs after it, and the signals stay
 * blocked, so one that comes now waits, pending, instead of killing the
 * process half way through its cleanup.
 */
void vmm_sigwatch_stop(struct vmm_sigwatch *w);

struct zvmm_guest;

/*
 * zvmm_guest_exit() once the run is over, @sigs_at_end the watcher's
 * count when it ended: on_exit may take a while (scrub), and a signal
 * from then on cancels it, one that ended the run does not. -ECANCELED,
 * said, when a signal cut it short; else what the exit returned.
 */
int vmm_guest_exit_watched(struct vmm_sigwatch *w, unsigned int sigs_at_end,
			   struct zvmm_guest *g);

#endif
