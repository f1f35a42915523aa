/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_KVM_H
#define ZVMM_VMM_KVM_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The KVM virtual machine: /dev/kvm, the VM, guest RAM as memslots and
 * one thread per vCPU. Guest physical layout: RAM from 0 up to 3 GiB,
 * the rest from 4 GiB, leaving the 3-4 GiB hole x86 guests expect for
 * devices (and where KVM's TSS pages go).
 */

#define VMM_LOW_RAM_END (3ULL << 30)
#define VMM_HIGH_RAM_START (4ULL << 30)
#define VMM_MAX_VCPUS 64

struct vmm_vm;

struct vmm_vcpu {
	struct vmm_vm *vm;
	unsigned int index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
};

/* What ends a run. */
enum vmm_stop {
	VMM_RUNNING,
	VMM_STOP_EXIT_PORT, /* the guest wrote its exit code */
	VMM_STOP_SHUTDOWN, /* triple fault */
	VMM_STOP_INTERNAL, /* KVM_EXIT_INTERNAL_ERROR, failed entry, ... */
	VMM_STOP_HALTED, /* vCPU 0 halted without an exit code */
	VMM_STOP_CANCELLED, /* SIGINT/SIGTERM */
	VMM_STOP_TIMEOUT, /* ran past --timeout */
	VMM_STOP_ERROR, /* KVM_RUN failed */
};

struct vmm_io_ops {
	/*
	 * Port I/O, one access of @size bytes: an OUT's bytes are in
	 * @data, an IN's are written there. It cannot fail: a port with no
	 * device is the device model's to count and answer.
	 */
	void (*pio)(struct vmm_vcpu *c, uint16_t port, bool out, uint8_t *data,
		    unsigned int size);
	void *arg;
};

/* The guest's RAM: the mapping libzvmm hands out (zvmm_guest_memory()). */
struct vmm_ram {
	char *guest;
	uint64_t bytes;
};

struct vmm_vm {
	int kvm_fd;
	int vm_fd;
	int run_size;
	struct vmm_ram mem;
	uint64_t low_bytes, high_bytes; /* RAM below 3 GiB / from 4 GiB */
	unsigned int nr_vcpus;
	struct vmm_vcpu vcpu[VMM_MAX_VCPUS];
	struct vmm_io_ops io;
	bool verbose;

	int stop_fd; /* eventfd written when the run stops */
	pthread_mutex_t lock;
	pthread_cond_t stopped;
	enum vmm_stop stop;
	int exit_code; /* from the exit port */
	char why[256]; /* the message for a crash */
	unsigned int running; /* vCPU threads not yet returned */
	double first_entry; /* CLOCK_MONOTONIC of the first KVM_RUN */
	double t_vm, t_memslots; /* VM created; memslots registered */
	uint64_t mmio_exits;
};

/* What /proc/cpuinfo says of hardware virtualization. */
enum vmm_hw_virt {
	VMM_HW_VIRT_UNKNOWN, /* no x86 "flags" line: another arch, no file */
	VMM_HW_VIRT_YES, /* vmx or svm */
	VMM_HW_VIRT_NONE_VM, /* neither, under a hypervisor */
	VMM_HW_VIRT_NONE, /* neither, and no hypervisor flag */
};

/* "/proc/cpuinfo"; tests point it at a made-up file. */
extern const char *vmm_cpuinfo;

/* What the first CPU's flags in vmm_cpuinfo say. */
enum vmm_hw_virt vmm_hw_virt(void);

/*
 * Why @dev (normally /dev/kvm) does not open, @e being open(2)'s errno,
 * into @why: what is missing and what would help. On a CPU without vmx
 * or svm no kernel module can help: it says so, and names what works
 * without KVM.
 */
void vmm_kvm_explain(const char *dev, int e, char *why, size_t len);

/*
 * Whether @dev opens read-write, checked before memory is taken: 0, or
 * -ENODEV with vmm_kvm_explain()'s reason in @why.
 */
int vmm_kvm_probe(const char *dev, char *why, size_t len)
	__attribute__((warn_unused_result));

/*
 * Opens @dev (normally /dev/kvm), checks the API version and the
 * capabilities used, creates the VM with @mem as its RAM and @nr_vcpus
 * vCPUs. Returns 0, or a negative errno with @err saying what to do
 * (-ENOENT/-EACCES/-ENODEV for a missing or unusable /dev/kvm).
 */
int vmm_vm_create(const char *dev, const struct vmm_ram *mem,
		  unsigned int nr_vcpus, struct vmm_vm **out, char *err,
		  size_t err_len) __attribute__((warn_unused_result));

void vmm_vm_destroy(struct vmm_vm *vm);

/* Guest physical address -> offset in the memory file, or -1. */
int64_t vmm_gpa_to_offset(const struct vmm_vm *vm, uint64_t gpa, uint64_t len);

/*
 * Puts every vCPU at the PVH entry: 32-bit protected mode, paging off,
 * flat segments, %ebx = @start_info. vCPUs other than 0 start there too
 * and tell themselves apart by their APIC ID (guest/README.md).
 */
int vmm_vcpus_reset_pvh(struct vmm_vm *vm, uint32_t entry, uint32_t start_info)
	__attribute__((warn_unused_result));

/* Starts the vCPU threads. */
int vmm_vm_start(struct vmm_vm *vm) __attribute__((warn_unused_result));

/*
 * Waits until the run stops, then stops and joins every vCPU thread. A
 * vCPU caught in a userfaultfd fault leaves KVM_RUN only once the fault
 * is served: call zvmm_guest_stop() first, after which libzvmm serves
 * them by itself until zvmm_guest_exit().
 */
enum vmm_stop vmm_vm_wait(struct vmm_vm *vm);

/* Ends the run from any thread (vCPU threads, the signal thread). */
void vmm_vm_request_stop(struct vmm_vm *vm, enum vmm_stop why, int code,
			 const char *msg);

#endif
