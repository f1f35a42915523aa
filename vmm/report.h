/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_REPORT_H
#define ZVMM_VMM_REPORT_H

#include <stdio.h>

#include "../zeroing/guest.h"
#include "devices.h"

/* What `zvmm run` reports about one launch (DESIGN.md 8). */
struct vmm_run_facts {
	const struct zero_guest_layout *mem;
	struct zero_guest_report z;
	const struct vmm_devices *dev; /* the guest's own report */
	unsigned int vcpus;
	uint64_t mmio_exits;
	double start; /* process start, on zero_now()'s clock */
	double ready_ms; /* process start to the first vCPU entry */
	double total_ms;
	int exit_code; /* the guest's */
};

/* The JSON report: written whenever the guest ran, report or not. */
void vmm_report_json(FILE *f, const struct vmm_run_facts *r);

/* The two-line human summary. */
void vmm_report_summary(FILE *f, const struct vmm_run_facts *r);

#endif
