/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_LOOP_H
#define ZVMM_VMM_LOOP_H

#include "../include/zvmm/zvmm.h"
#include "kvm.h"

/*
 * The control thread's event loop, driven by liburing: libzvmm's fd
 * (guest faults and pages its workers finished), a signalfd
 * for SIGINT and SIGTERM, the VM's stop eventfd, and a timer for
 * progress and --timeout. It runs until the guest's run stops.
 */
struct vmm_loop {
	struct vmm_vm *vm;
	struct zvmm_guest *guest; /* its fd: faults and finished pages */
	bool quiet; /* no progress line */
	int signal_fd;
	double timeout; /* seconds from the loop's start to stop at, 0: none */
	int sig; /* the signal that stopped the run, 0 if none */
};

/*
 * Runs until the VM stops. SIGINT/SIGTERM stop the workers (within one
 * chunk) and the vCPUs. Returns 0, or a negative errno when the loop
 * itself failed (the VM is then stopped too).
 */
int vmm_loop_run(struct vmm_loop *l) __attribute__((warn_unused_result));

#endif
