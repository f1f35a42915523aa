/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_INJECT_H
#define ZVMM_LIB_INJECT_H

/*
 * Fault injection for the failure-path tests (tests/test_inject.c):
 * ZVMM_INJECT=POINT[:N] makes the Nth call (default the first) at POINT
 * fail as the real call would, so every unwind path can be driven on
 * purpose. Points and the errno they give:
 *
 *   memfd     memfd_create of guest memory          ENOMEM
 *   mmap      mapping guest memory                  ENOMEM
 *   populate  a worker populating a FRESH page      ENOMEM (the hugetlb
 *             pool running dry in the middle of prezero)
 *   fallocate punching the pool's pages out         ENOSPC
 *   uffd      both ways to a userfaultfd: the device EACCES,
 *             userfaultfd(2) EPERM (a user without either)
 *   uffd-dev  /dev/userfaultfd alone                EACCES (the
 *             syscall is tried next)
 *   worker    starting a worker thread              EAGAIN
 *   vcpu      starting a vCPU thread                EAGAIN
 *   continue  UFFDIO_CONTINUE for a guest fault     EFAULT
 *
 * Unset, it costs one load per call site.
 *
 * Who obeys it: the zvmm binary, release builds included, because the
 * failure-path tests must run the very binary users run, and a user who
 * sets ZVMM_INJECT asks for the failure. libzvmm does not: a library must
 * not change what it does on an environment variable the VMM that embeds
 * it never heard of. So the variable is read only when the binary's
 * main() calls zvmm_inject_from_env(); in-process tests arm points with
 * zvmm_inject_arm().
 */

/* Reads ZVMM_INJECT, once; the zvmm binary's main() calls it. */
void zvmm_inject_from_env(void);

/* The errno to fail with at @point now, or 0 to go on. Thread-safe. */
int zvmm_inject(const char *point);

/*
 * In-process tests (tests/model_life.c): as ZVMM_INJECT=@point:@n from
 * now on, counting calls afresh; NULL disarms. Not while a call at the
 * point may run in another thread.
 */
void zvmm_inject_arm(const char *point, unsigned long n);

#endif
