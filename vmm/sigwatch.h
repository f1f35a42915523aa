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
	int stop;
	int sfd, efd; /* signalfd of SIGINT/SIGTERM; eventfd to stop it */
	pthread_t thread;
	sigset_t old;
	int started;
};

void vmm_sigwatch_block(struct vmm_sigwatch *w);
int vmm_sigwatch_start(struct vmm_sigwatch *w)
	__attribute__((warn_unused_result));
/* The first signal the watcher took, 0 if none (any thread). */
int vmm_sigwatch_seen(struct vmm_sigwatch *w);

/* Stops the watcher and restores the signal mask; returns the signal. */
int vmm_sigwatch_end(struct vmm_sigwatch *w);

#endif
