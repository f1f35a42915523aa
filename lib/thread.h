/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_THREAD_H
#define ZVMM_LIB_THREAD_H

#include <sys/prctl.h>

/*
 * Names the calling thread (at most 15 bytes): the library's threads
 * show as zvmm-worker, zvmm-serve and zvmm-verify in ps -L and top -H of
 * the VMM that embeds it, and a seccomp audit log names them. One
 * prctl(2), which libzvmm(3)'s SECCOMP list holds; the
 * pthread_setname_np() way would open /proc/self/task/TID/comm.
 */
static inline void thread_name(const char *name)
{
	prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

#endif
