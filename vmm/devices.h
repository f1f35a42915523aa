/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_DEVICES_H
#define ZVMM_VMM_DEVICES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kvm.h"

/*
 * The guest's devices: COM1 at 0x3f8 (transmit only; the line status says
 * always ready) and the exit port at 0xf4, compatible with QEMU's
 * isa-debug-exit. Other ports are counted and reported once.
 */

#define VMM_COM1 0x3f8
#define VMM_EXIT_PORT 0xf4
#define VMM_LINE_MAX 4096

struct vmm_devices {
	struct vmm_vm *vm;
	FILE *serial; /* where guest output goes */
	pthread_mutex_t lock;
	char line[VMM_LINE_MAX]; /* the current line, capped */
	size_t line_len;
	bool line_over; /* the current line lost bytes to the cap */
	unsigned int extra_reports; /* report lines after the first */
	bool have_report;
	char report[VMM_LINE_MAX]; /* JSON after "ZVMM-REPORT " */
	double touch_start; /* host time of the ZVMM-TOUCH-START line */
	double report_time; /* host time of the report line */
	uint64_t other_pio; /* accesses to ports nobody serves */
	int first_other_port; /* -1 until one is seen */
};

void vmm_devices_init(struct vmm_devices *d, struct vmm_vm *vm, FILE *serial);
void vmm_devices_fini(struct vmm_devices *d);

/* The vmm_io_ops.pio handler; @c->vm->io.arg is the vmm_devices. */
void vmm_devices_pio(struct vmm_vcpu *c, uint16_t port, bool out, uint8_t *data,
		     unsigned int size);

/*
 * A number field of the guest's report: 0 with *v set, -ENOENT when it is
 * absent, -EINVAL when its value is not an unsigned integer, -ERANGE when
 * it does not fit in 64 bits.
 *
 * @json is parsed with json-c (strict, valid UTF-8) and must be one JSON
 * object of under VMM_LINE_MAX bytes, else -EINVAL; -ENOMEM when json-c
 * cannot allocate. @key is looked up among its top-level members only: a
 * name inside a string or a nested object is not one. Of duplicate
 * members the last counts (json-c's choice, as Python's and JavaScript's).
 * Not an unsigned integer: a negative, a fraction or exponent ("5.0",
 * "5e3"), a string, a bool, null, an array or an object; "-0" is 0.
 */
int vmm_report_u64(const char *json, const char *key, uint64_t *v)
	__attribute__((warn_unused_result));

#endif
