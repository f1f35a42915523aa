/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_HOLDERS_H
#define ZVMM_LIB_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* A holder's command name, NUL included (the kernel's is 16 bytes). */
#define HOLDER_COMM_LEN 32

/*
 * Who else holds a file: a process other than this one that has it open
 * or mapped, found in /proc as fuser(1) finds it, but from text procfs
 * writes itself: /proc/PID/fdinfo/N's mnt_id: and ino: lines and
 * /proc/PID/maps's device and inode columns. Nothing is stat()ed or
 * opened through /proc/PID/fd/N: that would call into the file's own
 * filesystem, and a FUSE server that stops answering would freeze the
 * walk there. It cannot see an fd in flight in a unix socket's queue, a
 * thread's private fd table after unshare(CLONE_FILES), pages held by a
 * pipe (vmsplice) or by io_uring: its callers count what the kernel
 * says is in use, not what this found.
 */

/* A file looked for: where it lives. */
struct holder_file {
	int mnt_id; /* its mount's id (holder_mnt_id()); -1: any of @dev */
	dev_t dev; /* st_dev: maps names a file by device and inode */
	ino_t ino;
};

/* The mount id of what @fd is open on (its fdinfo's mnt_id:); -errno. */
int holder_mnt_id(int fd);

/*
 * For @n files in one walk of /proc (its cost is the host's processes,
 * fds and mappings, whatever @n is): pid[i] and comm[i] for file i,
 * pid[i] = -1 for one no other process holds. The walk gives up at
 * @deadline (CLOCK_MONOTONIC seconds, 0 for none) or once *@stop (read
 * atomically between processes, NULL for none) is true: every file not
 * found by then is pid 0, comm "?", as held by someone not known, never
 * free. Returns how many are held, or -ETIMEDOUT or -ECANCELED for a
 * walk that gave up.
 */
int holders_walk(const struct holder_file *f, unsigned int n, long *pid,
		 char (*comm)[HOLDER_COMM_LEN], double deadline,
		 const bool *stop);

/*
 * holders_walk() over the processes after *@resume (pids ascend in
 * /proc; 0: all of them): one that gives up sets *@resume to the last
 * process it walked whole, for the next call to go on from (past the
 * one it was in, when it walked none whole: a process too big for one
 * call is not seen); one that gets to the end sets it to 0. A file is
 * free only when walks from 0 to the end, in one or many calls, found
 * no holder of it.
 */
int holders_walk_from(const struct holder_file *f, unsigned int n, long *pid,
		      char (*comm)[HOLDER_COMM_LEN], double deadline,
		      const bool *stop, long *resume);

/* holders_walk() of @n files by their stat, with no deadline. */
unsigned int holders_of(const struct stat *st, unsigned int n, long *pid,
			char (*comm)[HOLDER_COMM_LEN]);

/* The first process that holds @st's file, its name in @comm; -1: none. */
long holder_of(const struct stat *st, char *comm, size_t len);

#endif
