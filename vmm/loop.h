/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_LOOP_H
#define ZVMM_VMM_LOOP_H

#include "../include/zvmm/zvmm.h"
#include "kvm.h"

/*
 * The control thread's event loop, driven by liburing: libzvmm's fd
 * (guest faults and pages its workers finished), the VM's stop eventfd,
 * and a timer for progress and --timeout. It runs until the guest's run
 * stops. SIGINT and SIGTERM are not its: the launch's one signal thread
 * (sigwatch.h) takes them from start to exit and stops the VM, which
 * ends the loop through the stop eventfd.
 */
struct vmm_loop {
	struct vmm_vm *vm;
	struct zvmm_guest *guest; /* its fd: faults and finished pages */
	bool quiet; /* no progress line */
	double timeout; /* seconds from the loop's start to stop at, 0: none */
};

/*
 * Runs until the VM stops. Returns 0, or a negative errno when the loop
 * itself failed (the VM is then stopped too).
 */
int vmm_loop_run(struct vmm_loop *l) __attribute__((warn_unused_result));

#endif
