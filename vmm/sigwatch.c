// SPDX-License-Identifier: MIT
#include <errno.h>
#include <time.h>

#include "sigwatch.h"

static void *watch(void *arg)
{
	struct vmm_sigwatch *w = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		sig = sigtimedwait(&set, NULL, &ts);
		if (sig <= 0)
			continue;
		if (!__atomic_load_n(&w->sig, __ATOMIC_ACQUIRE))
			__atomic_store_n(&w->sig, sig, __ATOMIC_RELEASE);
		w->on_signal(w->arg, sig);
	}
	return NULL;
}

void vmm_sigwatch_block(struct vmm_sigwatch *w)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &w->old);
}

int vmm_sigwatch_start(struct vmm_sigwatch *w)
{
	int ret = pthread_create(&w->thread, NULL, watch, w);

	w->started = !ret;
	return -ret;
}

int vmm_sigwatch_seen(struct vmm_sigwatch *w)
{
	return __atomic_load_n(&w->sig, __ATOMIC_ACQUIRE);
}

void vmm_sigwatch_pause(struct vmm_sigwatch *w)
{
	if (w->started) {
		__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
		pthread_join(w->thread, NULL);
		w->started = 0;
		__atomic_store_n(&w->stop, 0, __ATOMIC_RELEASE);
	}
}

int vmm_sigwatch_end(struct vmm_sigwatch *w)
{
	vmm_sigwatch_pause(w);
	pthread_sigmask(SIG_SETMASK, &w->old, NULL);
	return __atomic_load_n(&w->sig, __ATOMIC_ACQUIRE);
}
