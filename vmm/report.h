/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_REPORT_H
#define ZVMM_VMM_REPORT_H

#include <stdio.h>

#include "../include/zvmm/zvmm.h"
#include "devices.h"

/* What `zvmm run` reports about one launch (DESIGN.md 8). */
struct vmm_run_facts {
	struct zvmm_stats z; /* the zeroing, from libzvmm */
	const struct vmm_devices *dev; /* the guest's own report */
	unsigned int vcpus;
	uint64_t mmio_exits;
	double start; /* process start, on clock_now()'s clock */
	double ready_ms; /* process start to the first vCPU entry */
	/*
	 * Where ready_ms went, in order: options and policy (and the guest
	 * image, /dev/kvm, hugepages checked), then the memory's
	 * (zvmm_stats: memory, record, engine), the page work before
	 * start, KVM's VM, memslots and vCPUs, the loader, the vCPU start.
	 */
	double options_ms, prepare_ms, kvm_vm_ms, kvm_memslots_ms, kvm_vcpus_ms,
		loader_ms, start_ms;
	double total_ms;
	int exit_code; /* the guest's */
};

/* The JSON report: written whenever the guest ran, report or not. */
void vmm_report_json(FILE *f, const struct vmm_run_facts *r);

/* Where the launch time went, one line (--verbose). */
void vmm_report_phases(FILE *f, const struct vmm_run_facts *r);

/* The two-line human summary. */
void vmm_report_summary(FILE *f, const struct vmm_run_facts *r);

#endif
