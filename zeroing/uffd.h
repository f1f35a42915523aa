/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_UFFD_H
#define ZVMM_ZEROING_UFFD_H

#include <stddef.h>

/*
 * A userfaultfd that may handle kernel faults (KVM's accesses to guest
 * memory are kernel faults: not UFFD_USER_MODE_ONLY).
 *
 * Two ways in, the same object behind both (fs/userfaultfd.c):
 *   /dev/userfaultfd, USERFAULTFD_IOC_NEW (Linux 6.1+): allowed to whoever
 *     may open the device read-write, so its group decides, host-wide
 *     state untouched. Tried first, as QEMU does: for a user in the
 *     device's group it is the least privilege, and it spares the
 *     CAP_SYS_PTRACE check (and its audit record) of the syscall.
 *   userfaultfd(2): allowed with CAP_SYS_PTRACE, or for everyone when
 *     vm.unprivileged_userfaultfd = 1.
 * Neither is weaker than the other: the fd, its features and its
 * registration are the same, so the fallback is not a degraded mode.
 *
 * Returns the fd (@flags: O_CLOEXEC, O_NONBLOCK) and sets *@via to the
 * way that gave it, or a negative errno with @err naming both refusals
 * and both ways out, and which of them this system offers (docs and
 * zvmm(1) "Running as a user").
 */
int zero_uffd_open(int flags, const char **via, char *err, size_t len);

#endif
