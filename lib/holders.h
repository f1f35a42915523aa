/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_HOLDERS_H
#define ZVMM_LIB_HOLDERS_H

#include <stddef.h>
#include <sys/stat.h>

/* A holder's command name, NUL included (the kernel's is 16 bytes). */
#define HOLDER_COMM_LEN 32

/*
 * Who else holds a file: a process other than this one that has it open
 * or mapped, found in /proc as fuser(1) finds it. It cannot see an fd
 * in flight in a unix socket's queue.
 */

/*
 * For @n files (@st: their device and inode) in one walk of /proc (its
 * cost is the host's processes, fds and mappings, whatever @n is):
 * pid[i] and comm[i] for file i, pid[i] = -1 for one no other process
 * holds. Returns how many are held.
 */
unsigned int holders_of(const struct stat *st, unsigned int n, long *pid,
			char (*comm)[HOLDER_COMM_LEN]);

/* The first process that holds @st's file, its name in @comm; -1: none. */
long holder_of(const struct stat *st, char *comm, size_t len);

#endif
