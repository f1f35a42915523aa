// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/clock.h"
#include "kvm.h"

/* Kicks a vCPU thread out of KVM_RUN; the handler does nothing. */
#define VMM_KICK_SIGNAL SIGUSR1

static void kick_handler(int sig)
{
	(void)sig;
}

const char *vmm_cpuinfo = "/proc/cpuinfo";

enum vmm_hw_virt vmm_hw_virt(void)
{
	enum vmm_hw_virt v = VMM_HW_VIRT_UNKNOWN;
	bool vmx = false, hypervisor = false;
	char *line = NULL, *word, *save;
	size_t cap = 0;
	FILE *f = fopen(vmm_cpuinfo, "re");

	if (!f)
		return v;
	/* x86 lists "flags : ..." per CPU; the first is enough. */
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) || !strchr(line, ':'))
			continue;
		for (word = strtok_r(strchr(line, ':') + 1, " \t\n", &save);
		     word; word = strtok_r(NULL, " \t\n", &save)) {
			vmx |= !strcmp(word, "vmx") || !strcmp(word, "svm");
			hypervisor |= !strcmp(word, "hypervisor");
		}
		if (vmx)
			v = VMM_HW_VIRT_YES;
		else if (hypervisor)
			v = VMM_HW_VIRT_NONE_VM;
		else
			v = VMM_HW_VIRT_NONE;
		break;
	}
	free(line);
	fclose(f);
	return v;
}

/* What a machine without hardware virtualization can still do. */
#define WITHOUT_KVM                                                      \
	"what works here without KVM: zvmm prezero --pool, zvmm bench, " \
	"zvmm calibrate, libzvmm and zvmmd"

void vmm_kvm_explain(const char *dev, int e, char *why, size_t len)
{
	enum vmm_hw_virt v = vmm_hw_virt();
	char lead[320];

	if ((e == EACCES || e == EPERM) && geteuid()) {
		snprintf(
			why, len,
			"cannot open %s: %s (run as root or join the kvm group)",
			dev, strerror(e));
		return;
	}
	/* Root is refused by something other than the node's mode. */
	if (e == EACCES || e == EPERM) {
		snprintf(
			why, len,
			"cannot open %s: %s, even as root: a device cgroup, a container or a security module refuses it; run zvmm where /dev/kvm is allowed",
			dev, strerror(e));
		return;
	}
	/* ENOENT: no node; ENXIO or ENODEV: a node with no driver behind it. */
	if (e != ENOENT && e != ENXIO && e != ENODEV) {
		snprintf(why, len, "cannot open %s: %s", dev, strerror(e));
		return;
	}
	if (e == ENOENT)
		snprintf(lead, sizeof(lead), "%s does not exist", dev);
	else
		snprintf(lead, sizeof(lead), "cannot open %s: %s", dev,
			 strerror(e));
	/*
	 * Without vmx or svm no module can give KVM: under a hypervisor
	 * that offers no nested virtualization (this workplace's PVM
	 * guests), or on a CPU whose firmware turned it off (Linux then
	 * hides vmx from the flags too).
	 */
	if (v == VMM_HW_VIRT_NONE_VM)
		snprintf(
			why, len,
			"%s, and this machine has no hardware virtualization (no vmx or svm among the CPU flags in /proc/cpuinfo): it is a VM without nested virtualization, so no kernel module can help; run guests where VT-x or AMD-V is available; %s",
			lead, WITHOUT_KVM);
	else if (v == VMM_HW_VIRT_NONE)
		snprintf(
			why, len,
			"%s, and this machine has no hardware virtualization (no vmx or svm among the CPU flags in /proc/cpuinfo), so no kernel module can help: turn VT-x or AMD-V on in the firmware if the CPU has it; %s",
			lead, WITHOUT_KVM);
	else
		snprintf(
			why, len,
			"%s: the kernel needs KVM (CONFIG_KVM, kvm_intel or kvm_amd loaded), or run where virtualization is available",
			lead);
}

int vmm_kvm_probe(const char *dev, char *why, size_t len)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	vmm_kvm_explain(dev, errno, why, len);
	return -ENODEV;
}

static int check_cap(struct vmm_vm *vm, long cap, const char *name, char *err,
		     size_t len)
{
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, cap) > 0)
		return 0;
	snprintf(err, len, "KVM lacks %s, which zvmm needs: use a newer kernel",
		 name);
	return -ENODEV;
}

/* CPUID as KVM supports it, with each vCPU's APIC ID set to its index. */
static int set_cpuid(struct vmm_vm *vm, struct vmm_vcpu *c)
{
	unsigned int n = 256;
	struct kvm_cpuid2 *cpuid;
	int ret = 0;

	cpuid = calloc(1, sizeof(*cpuid) + n * sizeof(cpuid->entries[0]));
	if (!cpuid)
		return -ENOMEM;
	cpuid->nent = n;
	if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) < 0) {
		ret = -errno;
		goto out;
	}
	for (unsigned int i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

		if (e->function == 1)
			e->ebx = (e->ebx & 0x00ffffff) | (c->index << 24);
		if (e->function == 0xb || e->function == 0x1f)
			e->edx = c->index;
	}
	if (ioctl(c->fd, KVM_SET_CPUID2, cpuid) < 0)
		ret = -errno;
out:
	free(cpuid);
	return ret;
}

static int add_slot(struct vmm_vm *vm, uint32_t slot, uint64_t gpa,
		    uint64_t size, char *host)
{
	struct kvm_userspace_memory_region r = {
		.slot = slot,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.userspace_addr = (uint64_t)(uintptr_t)host,
	};

	return ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno :
								      0;
}

int vmm_vm_create(const char *dev, const struct vmm_ram *mem,
		  unsigned int nr_vcpus, struct vmm_vm **out, char *err,
		  size_t len)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	struct vmm_vm *vm;
	int ret, version;

	if (!nr_vcpus || nr_vcpus > VMM_MAX_VCPUS) {
		snprintf(err, len, "--vcpus %u: give 1 to %d", nr_vcpus,
			 VMM_MAX_VCPUS);
		return -EINVAL;
	}
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->kvm_fd = vm->vm_fd = -1;
	vm->mem = *mem;
	vm->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->stop_fd < 0) {
		ret = -errno;
		snprintf(err, len, "eventfd: %s", strerror(-ret));
		free(vm);
		return ret;
	}
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->stopped, NULL);
	for (unsigned int i = 0; i < VMM_MAX_VCPUS; i++)
		vm->vcpu[i].fd = -1;

	vm->kvm_fd = open(dev, O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		ret = -errno;
		vmm_kvm_explain(dev, -ret, err, len);
		goto fail;
	}
	version = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (version != KVM_API_VERSION) {
		snprintf(
			err, len,
			"%s speaks KVM API %d, zvmm needs %d: is it a KVM device?",
			dev, version, KVM_API_VERSION);
		ret = -ENODEV;
		goto fail;
	}
	ret = check_cap(vm, KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", err,
			len);
	if (!ret)
		ret = check_cap(vm, KVM_CAP_IMMEDIATE_EXIT,
				"KVM_CAP_IMMEDIATE_EXIT", err, len);
	if (ret)
		goto fail;
	vm->run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0 || vm->run_size <= 0) {
		ret = -errno;
		snprintf(err, len, "cannot create a KVM VM: %s",
			 strerror(-ret));
		goto fail;
	}
	/* Intel needs three pages for its real-mode TSS: in the hole. */
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0)
		ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000UL);

	vm->t_vm = clock_now();
	vm->low_bytes = mem->bytes < VMM_LOW_RAM_END ? mem->bytes :
						       VMM_LOW_RAM_END;
	vm->high_bytes = mem->bytes - vm->low_bytes;
	ret = add_slot(vm, 0, 0, vm->low_bytes, mem->guest);
	if (!ret && vm->high_bytes)
		ret = add_slot(vm, 1, VMM_HIGH_RAM_START, vm->high_bytes,
			       mem->guest + vm->low_bytes);
	if (ret) {
		snprintf(err, len, "cannot register guest memory with KVM: %s",
			 strerror(-ret));
		goto fail;
	}

	vm->t_memslots = clock_now();
	sigemptyset(&sa.sa_mask);
	sigaction(VMM_KICK_SIGNAL, &sa, NULL);
	vm->nr_vcpus = nr_vcpus;
	for (unsigned int i = 0; i < nr_vcpus; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];

		c->vm = vm;
		c->index = i;
		c->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)i);
		if (c->fd < 0) {
			ret = -errno;
			snprintf(err, len, "cannot create vCPU %u: %s", i,
				 strerror(-ret));
			goto fail;
		}
		c->run = mmap(NULL, (size_t)vm->run_size,
			      PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (c->run == MAP_FAILED) {
			c->run = NULL;
			ret = -errno;
			snprintf(err, len, "cannot map vCPU %u: %s", i,
				 strerror(-ret));
			goto fail;
		}
		ret = set_cpuid(vm, c);
		if (ret) {
			snprintf(err, len, "cannot set CPUID of vCPU %u: %s", i,
				 strerror(-ret));
			goto fail;
		}
	}
	*out = vm;
	return 0;
fail:
	vmm_vm_destroy(vm);
	return ret;
}

void vmm_vm_destroy(struct vmm_vm *vm)
{
	if (!vm)
		return;
	for (unsigned int i = 0; i < VMM_MAX_VCPUS; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];

		if (c->run)
			munmap(c->run, (size_t)vm->run_size);
		if (c->fd >= 0)
			close(c->fd);
	}
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->stop_fd >= 0)
		close(vm->stop_fd);
	pthread_cond_destroy(&vm->stopped);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

int64_t vmm_gpa_to_offset(const struct vmm_vm *vm, uint64_t gpa, uint64_t len)
{
	if (gpa + len < gpa)
		return -1;
	if (gpa + len <= vm->low_bytes)
		return (int64_t)gpa;
	if (gpa >= VMM_HIGH_RAM_START &&
	    gpa + len <= VMM_HIGH_RAM_START + vm->high_bytes)
		return (int64_t)(gpa - VMM_HIGH_RAM_START + vm->low_bytes);
	return -1;
}

static void flat(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	*s = (struct kvm_segment){
		.base = 0,
		.limit = 0xffffffff,
		.selector = sel,
		.type = type,
		.present = 1,
		.dpl = 0,
		.db = 1,
		.s = 1,
		.l = 0,
		.g = 1,
	};
}

int vmm_vcpus_reset_pvh(struct vmm_vm *vm, uint32_t entry, uint32_t start_info)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];
		struct kvm_sregs sr;
		struct kvm_regs r;

		if (ioctl(c->fd, KVM_GET_SREGS, &sr) < 0)
			return -errno;
		flat(&sr.cs, 0x10, 0xb); /* code, execute/read, accessed */
		flat(&sr.ds, 0x18, 0x3); /* data, read/write, accessed */
		sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
		sr.tr = (struct kvm_segment){ .limit = 0x67,
					      .type = 0xb,
					      .present = 1 };
		sr.ldt = (struct kvm_segment){ .limit = 0xffff,
					       .type = 0x2,
					       .present = 1 };
		sr.cr0 = 0x11; /* PE, ET; paging off */
		sr.cr4 = 0;
		sr.efer = 0;
		if (ioctl(c->fd, KVM_SET_SREGS, &sr) < 0)
			return -errno;
		memset(&r, 0, sizeof(r));
		r.rip = entry;
		r.rbx = start_info;
		r.rflags = 0x2;
		if (ioctl(c->fd, KVM_SET_REGS, &r) < 0)
			return -errno;
	}
	return 0;
}

void vmm_vm_request_stop(struct vmm_vm *vm, enum vmm_stop why, int code,
			 const char *msg)
{
	uint64_t one = 1;

	pthread_mutex_lock(&vm->lock);
	if (vm->stop == VMM_RUNNING) {
		__atomic_store_n(&vm->stop, why, __ATOMIC_RELEASE);
		vm->exit_code = code;
		if (msg)
			snprintf(vm->why, sizeof(vm->why), "%s", msg);
		if (write(vm->stop_fd, &one, sizeof(one)) < 0) {
			/* cannot overflow: written once */
		}
	}
	pthread_cond_broadcast(&vm->stopped);
	pthread_mutex_unlock(&vm->lock);
}

static void dump_regs(struct vmm_vcpu *c)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (ioctl(c->fd, KVM_GET_REGS, &r) < 0 ||
	    ioctl(c->fd, KVM_GET_SREGS, &s) < 0)
		return;
	fprintf(stderr,
		"zvmm: vCPU %u: rip %016llx rsp %016llx rflags %08llx\n"
		"  rax %016llx rbx %016llx rcx %016llx rdx %016llx\n"
		"  rsi %016llx rdi %016llx rbp %016llx\n"
		"  cr0 %08llx cr2 %016llx cr3 %016llx cr4 %08llx efer %llx\n"
		"  cs %04x (base %llx, l %u, db %u) ss %04x\n",
		c->index, r.rip, r.rsp, r.rflags, r.rax, r.rbx, r.rcx, r.rdx,
		r.rsi, r.rdi, r.rbp, s.cr0, s.cr2, s.cr3, s.cr4, s.efer,
		s.cs.selector, s.cs.base, s.cs.l, s.cs.db, s.ss.selector);
}

static bool stopping(struct vmm_vm *vm)
{
	return __atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE) != VMM_RUNNING;
}

static void *vcpu_thread(void *arg)
{
	struct vmm_vcpu *c = arg;
	struct vmm_vm *vm = c->vm;
	struct kvm_run *run = c->run;
	char msg[200];
	sigset_t set;
	bool last;

	sigemptyset(&set);
	sigaddset(&set, VMM_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	while (!stopping(vm)) {
		if (c->index == 0 && !vm->first_entry)
			vm->first_entry = clock_now();
		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				__atomic_store_n(&run->immediate_exit, 0,
						 __ATOMIC_RELAXED);
				continue;
			}
			snprintf(msg, sizeof(msg), "KVM_RUN on vCPU %u: %s",
				 c->index, strerror(errno));
			vmm_vm_request_stop(vm, VMM_STOP_ERROR, 0, msg);
			break;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_IO: {
			uint8_t *data = (uint8_t *)run + run->io.data_offset;

			for (uint32_t i = 0; i < run->io.count; i++)
				vm->io.pio(c, run->io.port,
					   run->io.direction == KVM_EXIT_IO_OUT,
					   data + i * run->io.size,
					   run->io.size);
			break;
		}
		case KVM_EXIT_MMIO:
			/* No MMIO devices: reads see all ones, writes drop. */
			__atomic_fetch_add(&vm->mmio_exits, 1,
					   __ATOMIC_RELAXED);
			if (!run->mmio.is_write)
				memset(run->mmio.data, 0xff,
				       sizeof(run->mmio.data));
			break;
		case KVM_EXIT_HLT:
			if (c->index == 0)
				vmm_vm_request_stop(
					vm, VMM_STOP_HALTED, 0,
					"vCPU 0 halted without writing an exit code to port 0xf4");
			else
				goto out; /* an AP that is done */
			break;
		case KVM_EXIT_SHUTDOWN:
			snprintf(
				msg, sizeof(msg),
				"guest crashed: vCPU %u triple-faulted (KVM_EXIT_SHUTDOWN)",
				c->index);
			if (vm->verbose)
				dump_regs(c);
			vmm_vm_request_stop(vm, VMM_STOP_SHUTDOWN, 0, msg);
			break;
		case KVM_EXIT_INTERNAL_ERROR:
			snprintf(
				msg, sizeof(msg),
				"guest crashed: KVM internal error %u on vCPU %u (emulation failure)",
				run->internal.suberror, c->index);
			if (vm->verbose)
				dump_regs(c);
			vmm_vm_request_stop(vm, VMM_STOP_INTERNAL, 0, msg);
			break;
		case KVM_EXIT_FAIL_ENTRY:
			snprintf(
				msg, sizeof(msg),
				"vCPU %u could not enter the guest: hardware reason 0x%llx",
				c->index,
				(unsigned long long)run->fail_entry
					.hardware_entry_failure_reason);
			if (vm->verbose)
				dump_regs(c);
			vmm_vm_request_stop(vm, VMM_STOP_INTERNAL, 0, msg);
			break;
		default:
			snprintf(msg, sizeof(msg),
				 "vCPU %u stopped with unexpected KVM exit %u",
				 c->index, run->exit_reason);
			if (vm->verbose)
				dump_regs(c);
			vmm_vm_request_stop(vm, VMM_STOP_INTERNAL, 0, msg);
			break;
		}
	}
out:
	pthread_mutex_lock(&vm->lock);
	last = --vm->running == 0;
	pthread_cond_broadcast(&vm->stopped);
	pthread_mutex_unlock(&vm->lock);
	if (last)
		vmm_vm_request_stop(vm, VMM_STOP_HALTED, 0,
				    "every vCPU halted without an exit code");
	return NULL;
}

int vmm_vm_start(struct vmm_vm *vm)
{
	sigset_t set, old;
	int ret = 0;

	/* Threads start with the kick signal blocked and unblock it
	 * themselves, so it never lands on another thread. */
	sigemptyset(&set);
	sigaddset(&set, VMM_KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];

		pthread_mutex_lock(&vm->lock);
		vm->running++;
		pthread_mutex_unlock(&vm->lock);
		ret = -zvmm_inject("vcpu");
		if (!ret)
			ret = -pthread_create(&c->thread, NULL, vcpu_thread, c);
		if (ret) {
			pthread_mutex_lock(&vm->lock);
			vm->running--;
			pthread_mutex_unlock(&vm->lock);
			vmm_vm_request_stop(vm, VMM_STOP_ERROR, 0,
					    "cannot start a vCPU thread");
			break;
		}
		c->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

enum vmm_stop vmm_vm_wait(struct vmm_vm *vm)
{
	enum vmm_stop why;

	pthread_mutex_lock(&vm->lock);
	/* The run ends when something stops it, or when every vCPU has
	 * halted (an AP halting is normal; vCPU 0 halting stops the run). */
	while (vm->stop == VMM_RUNNING && vm->running)
		pthread_cond_wait(&vm->stopped, &vm->lock);
	if (vm->stop == VMM_RUNNING)
		__atomic_store_n(&vm->stop, VMM_STOP_HALTED, __ATOMIC_RELEASE);
	why = vm->stop;
	pthread_mutex_unlock(&vm->lock);
	/*
	 * One kick each: immediate_exit catches a vCPU between its stop
	 * check and KVM_RUN, the signal one inside it, and one caught in a
	 * userfaultfd fault leaves once libzvmm's drain (it serves from
	 * zvmm_guest_stop() on) has mapped its page. Then a plain join.
	 */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];

		if (!c->started)
			continue;
		__atomic_store_n(&c->run->immediate_exit, 1, __ATOMIC_RELAXED);
		pthread_kill(c->thread, VMM_KICK_SIGNAL);
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vmm_vcpu *c = &vm->vcpu[i];

		if (c->started && !pthread_join(c->thread, NULL))
			c->started = false;
	}
	return why;
}
