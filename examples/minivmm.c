// SPDX-License-Identifier: MIT
/*
 * minivmm: a whole VMM in one file, on KVM and libzvmm's public API. It
 * boots a PVH ELF guest (zvmm's touch guest, build/guest/touch.elf) on
 * hugepage memory that libzvmm zeroes under the policy asked for, gives
 * it COM1 (on stdout) and the exit port at 0xf4, and ends with one line
 * that says whether the guest found zero everywhere it looked.
 *
 *   minivmm --guest ELF [--mem MIB] [--hugepages 2M|1G]
 *           [--policy prezero|demand|hybrid] [--policy-file FILE]
 *           [--pool FILE] [--serve poll|thread] [--vcpus N] [--cmdline STR]
 *
 * Guest RAM is one memslot from address 0, at most 3 GiB (below the x86
 * hole). The ELF's segments go where they ask; hvm_start_info, the memory
 * map and the command line go in a 4 KiB boot page at the top of RAM's
 * first GiB (the touch guest reads them before it maps more), which the
 * memory map marks reserved so that the guest leaves it alone.
 *
 * libzvmm's rule for a VMM: write guest memory only where
 * zvmm_guest_prepare()'s boot_bytes or zvmm_guest_access() made it ready.
 * boot_bytes covers the segments; the boot page, far above them, is
 * made ready by zvmm_guest_access().
 */
#define _GNU_SOURCE
#ifndef __x86_64__
#error "minivmm sets up x86 vCPUs for x86 PVH guests: build it on x86-64"
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zvmm/zvmm.h>

#define COM1 0x3f8
#define EXIT_PORT 0xf4 /* QEMU's isa-debug-exit: the guest's exit code */
#define MAX_VCPUS 64 /* the touch guest has stacks for 64 */
#define RAM_MAX_MIB 3072 /* one memslot, below the x86 hole */
#define BOOT_PAGE 4096ULL
#define MEMMAP_OFF 64 /* in the boot page, after hvm_start_info */
#define CMDLINE_OFF 256
#define REPORT "ZVMM-REPORT "
#define KICK_SIGNAL SIGUSR1 /* takes a vCPU thread out of KVM_RUN */
#define CPUID_MAX 256 /* KVM's limit on CPUID entries */

/* The PVH boot ABI, as Xen's arch-x86/hvm/start_info.h has it. */
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC 0x336ec578u
#define E820_RAM 1
#define E820_RESERVED 2

struct hvm_start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
	uint32_t memmap_entries, reserved;
};

struct hvm_memmap_entry {
	uint64_t addr, size;
	uint32_t type, reserved;
};

struct opts {
	const char *guest, *mode, *policy_file, *pool, *cmdline;
	uint64_t mem_bytes, page_bytes;
	unsigned int vcpus;
	bool serve_thread;
};

/* A PVH kernel is a few MiB; more is not one. */
#define IMAGE_MAX (64 << 20)

struct image {
	const unsigned char *data; /* the file, read into our memory */
	size_t size;
	const Elf64_Phdr *ph;
	unsigned int phnum;
	uint32_t entry; /* the 32-bit PVH entry point */
	uint64_t end; /* guest-physical end of the highest segment */
};

enum stop { RUNNING, STOP_EXIT_PORT, STOP_CRASH, STOP_ERROR, STOP_SIGNAL };

struct vcpu {
	struct vm *vm;
	unsigned int index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
};

struct vm {
	int kvm_fd, vm_fd, stop_fd;
	size_t run_size;
	unsigned int nr_vcpus, running;
	struct vcpu vcpu[MAX_VCPUS];
	pthread_mutex_t lock; /* everything below */
	enum stop stop; /* the first reason wins */
	uint32_t exit_code;
	char why[200];
	char line[4096]; /* COM1's current line, capped */
	size_t line_len;
	bool line_over;
	char report[4096]; /* the JSON of the first report line */
};

__attribute__((format(printf, 2, 3))) static int fail(int ret, const char *fmt,
						      ...)
{
	va_list ap;

	fputs("minivmm: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return ret;
}

/* The library never prints: its warnings and errors come here. */
static void log_line(void *arg, enum zvmm_log_level level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "minivmm: libzvmm %s: %s\n",
		level == ZVMM_LOG_ERROR ? "error" : "warning", msg);
}

/* ------------------------------------------------------ the PVH loader */

/* The Xen note that gives the 32-bit entry, in a PT_NOTE segment. */
static bool find_pvh_note(const unsigned char *p, uint64_t len, uint32_t *entry)
{
	uint64_t off = 0, desc;
	uint32_t n[3]; /* namesz, descsz, type */

	while (off <= len && len - off >= sizeof(n)) {
		memcpy(n, p + off, sizeof(n));
		desc = off + sizeof(n) + ((n[0] + 3ULL) & ~3ULL);
		if (desc > len || n[1] > len - desc)
			return false;
		if (n[2] == XEN_ELFNOTE_PHYS32_ENTRY && n[0] == 4 &&
		    !memcmp(p + off + sizeof(n), "Xen", 4) && n[1] >= 4) {
			memcpy(entry, p + desc, 4);
			return true;
		}
		off = desc + ((n[1] + 3ULL) & ~3ULL);
	}
	return false;
}

/*
 * Reads @path into memory of our own (a mapping of the file would show
 * what another writer changes after the checks) and checks that it is an
 * x86-64 PVH ELF whose segments lie inside the file and below @limit
 * (the boot page), trusting no offset.
 */
static int image_open(const char *path, uint64_t limit, struct image *im)
{
	const Elf64_Ehdr *eh;
	bool note = false;
	uint64_t lo = UINT64_MAX;
	unsigned char *p;
	struct stat st;
	size_t got = 0;
	ssize_t n = 1;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "--guest %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size ||
	    st.st_size > IMAGE_MAX) {
		close(fd);
		return fail(
			-EINVAL,
			"--guest %s: not a regular file of 1 byte to %d MiB",
			path, IMAGE_MAX >> 20);
	}
	p = malloc((size_t)st.st_size);
	while (p && got < (size_t)st.st_size &&
	       (n = pread(fd, p + got, (size_t)st.st_size - got, (off_t)got)) >
		       0)
		got += (size_t)n;
	close(fd);
	if (!p || got != (size_t)st.st_size) {
		free(p);
		return fail(n < 0 ? -errno : -EIO, "--guest %s: %s", path,
			    n < 0 ? strerror(errno) : "cannot read it whole");
	}
	im->data = p;
	im->size = (size_t)st.st_size;
	eh = (const void *)p;
	if (im->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff % 8 ||
	    eh->e_phoff > im->size ||
	    (im->size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return fail(-EINVAL,
			    "--guest %s is not an x86-64 ELF executable", path);
	im->ph = (const void *)(im->data + eh->e_phoff);
	im->phnum = eh->e_phnum;
	for (unsigned int i = 0; i < im->phnum; i++) {
		const Elf64_Phdr *ph = &im->ph[i];

		if (ph->p_filesz > im->size ||
		    ph->p_offset > im->size - ph->p_filesz)
			return fail(-EINVAL, "--guest %s: segment %u is cut",
				    path, i);
		if (ph->p_type == PT_NOTE && !note)
			note = find_pvh_note(im->data + ph->p_offset,
					     ph->p_filesz, &im->entry);
		if (ph->p_type != PT_LOAD || !ph->p_memsz)
			continue;
		if (ph->p_filesz > ph->p_memsz || ph->p_paddr > limit ||
		    ph->p_memsz > limit - ph->p_paddr)
			return fail(
				-EINVAL,
				"--guest %s: segment %u at 0x%llx does not fit below the boot page at 0x%llx: give more --mem",
				path, i, (unsigned long long)ph->p_paddr,
				(unsigned long long)limit);
		if (ph->p_paddr < lo)
			lo = ph->p_paddr;
		if (ph->p_paddr + ph->p_memsz > im->end)
			im->end = ph->p_paddr + ph->p_memsz;
	}
	if (!note || im->entry < lo || im->entry >= im->end)
		return fail(
			-EINVAL,
			"--guest %s is not a PVH kernel: no Xen note %d with an entry inside its segments",
			path, XEN_ELFNOTE_PHYS32_ENTRY);
	return 0;
}

/* The segments into guest RAM: the file's bytes, then zeros to memsz. */
static void image_load(const struct image *im, unsigned char *ram)
{
	for (unsigned int i = 0; i < im->phnum; i++) {
		const Elf64_Phdr *ph = &im->ph[i];

		if (ph->p_type != PT_LOAD || !ph->p_memsz)
			continue;
		memcpy(ram + ph->p_paddr, im->data + ph->p_offset,
		       ph->p_filesz);
		memset(ram + ph->p_paddr + ph->p_filesz, 0,
		       ph->p_memsz - ph->p_filesz);
	}
}

/* hvm_start_info, the memory map and the command line, at @boot. */
static void boot_page_write(unsigned char *ram, uint64_t ram_bytes,
			    uint64_t boot, const char *cmdline)
{
	struct hvm_start_info *si = (void *)(ram + boot);
	struct hvm_memmap_entry *mm = (void *)(ram + boot + MEMMAP_OFF);
	uint64_t above = boot + BOOT_PAGE;
	uint32_t n = 0;

	mm[n++] = (struct hvm_memmap_entry){ 0, boot, E820_RAM, 0 };
	mm[n++] =
		(struct hvm_memmap_entry){ boot, BOOT_PAGE, E820_RESERVED, 0 };
	if (ram_bytes > above)
		mm[n++] = (struct hvm_memmap_entry){ above, ram_bytes - above,
						     E820_RAM, 0 };
	strcpy((char *)ram + boot + CMDLINE_OFF, cmdline);
	*si = (struct hvm_start_info){
		.magic = HVM_START_MAGIC,
		.version = 1, /* the first with a memory map */
		.cmdline_paddr = boot + CMDLINE_OFF,
		.memmap_paddr = boot + MEMMAP_OFF,
		.memmap_entries = n,
	};
}

/* ---------------------------------------------------- devices and vCPUs */

/* Ends the run, from any thread; the eventfd wakes the serving loop. */
__attribute__((format(printf, 4, 5))) static void
vm_stop(struct vm *vm, enum stop why, uint32_t code, const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	pthread_mutex_lock(&vm->lock);
	if (vm->stop == RUNNING) {
		vm->exit_code = code;
		va_start(ap, fmt);
		vsnprintf(vm->why, sizeof(vm->why), fmt, ap);
		va_end(ap);
		__atomic_store_n(&vm->stop, why, __ATOMIC_RELEASE);
		if (write(vm->stop_fd, &one, sizeof(one)) < 0) {
			/* cannot fill: written once */
		}
	}
	pthread_mutex_unlock(&vm->lock);
}

static bool stopping(struct vm *vm)
{
	return __atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE) != RUNNING;
}

/* COM1 to stdout, keeping the first whole "ZVMM-REPORT {...}" line. */
static void serial_out(struct vm *vm, uint8_t ch)
{
	pthread_mutex_lock(&vm->lock);
	putchar(ch);
	if (ch != '\n') {
		if (vm->line_len < sizeof(vm->line) - 1)
			vm->line[vm->line_len++] = (char)ch;
		else
			vm->line_over = true;
	} else {
		fflush(stdout);
		vm->line[vm->line_len] = '\0';
		if (!vm->line_over && !vm->report[0] &&
		    !strncmp(vm->line, REPORT, strlen(REPORT)))
			strcpy(vm->report, vm->line + strlen(REPORT));
		vm->line_len = 0;
		vm->line_over = false;
	}
	pthread_mutex_unlock(&vm->lock);
}

static void pio(struct vm *vm, uint16_t port, bool out, uint8_t *data,
		uint32_t size)
{
	uint32_t code = 0;

	if (port == COM1 && out) {
		serial_out(vm, data[0]);
	} else if (port == COM1 + 5 && !out) {
		data[0] = 0x60; /* line status: the transmitter is empty */
	} else if (port == EXIT_PORT && out) {
		memcpy(&code, data, size < 4 ? size : 4);
		vm_stop(vm, STOP_EXIT_PORT, code, "exit code %u", code);
	} else if (!out) {
		memset(data, 0xff, size); /* no device: the bus floats high */
	}
}

static void kick_handler(int sig)
{
	(void)sig;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;
	struct vm *vm = c->vm;
	struct kvm_run *run = c->run;
	sigset_t kick;

	sigemptyset(&kick);
	sigaddset(&kick, KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	while (!stopping(vm)) {
		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			/* A kick: look at the stop flag again. */
			if (errno == EINTR || errno == EAGAIN) {
				__atomic_store_n(&run->immediate_exit, 0,
						 __ATOMIC_RELAXED);
				continue;
			}
			vm_stop(vm, STOP_ERROR, 0, "KVM_RUN on vCPU %u: %s",
				c->index, strerror(errno));
			break;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			for (uint32_t i = 0; i < run->io.count; i++)
				pio(vm, run->io.port,
				    run->io.direction == KVM_EXIT_IO_OUT,
				    (uint8_t *)run + run->io.data_offset +
					    i * run->io.size,
				    run->io.size);
			break;
		case KVM_EXIT_MMIO: /* outside RAM: reads see all ones */
			if (!run->mmio.is_write)
				memset(run->mmio.data, 0xff,
				       sizeof(run->mmio.data));
			break;
		case KVM_EXIT_HLT:
			if (c->index) /* the touch guest's other vCPUs, done */
				goto out;
			vm_stop(vm, STOP_CRASH, 0,
				"vCPU 0 halted without writing an exit code to port 0x%x",
				EXIT_PORT);
			break;
		default:
			vm_stop(vm, STOP_CRASH, 0,
				"vCPU %u stopped on KVM exit %u (%s)", c->index,
				run->exit_reason,
				run->exit_reason == KVM_EXIT_SHUTDOWN ?
					"a triple fault" :
					"an internal error or failed entry");
			break;
		}
	}
out:
	if (!__atomic_sub_fetch(&vm->running, 1, __ATOMIC_ACQ_REL))
		vm_stop(vm, STOP_CRASH, 0, "every vCPU halted, no exit code");
	return NULL;
}

/* ---------------------------------------------------------------- KVM */

/* The PVH entry: 32-bit protected mode, paging off, %ebx = start_info. */
static int pvh_regs(int fd, uint32_t entry, uint32_t start_info)
{
	struct kvm_regs r = { .rip = entry, .rbx = start_info, .rflags = 2 };
	struct kvm_segment flat = {
		.limit = 0xffffffff, .present = 1, .db = 1, .s = 1, .g = 1
	};
	struct kvm_sregs sr;

	if (ioctl(fd, KVM_GET_SREGS, &sr) < 0)
		return -errno;
	sr.cs = flat;
	sr.cs.selector = 0x10;
	sr.cs.type = 0xb; /* code: execute/read, accessed */
	sr.ds = flat;
	sr.ds.selector = 0x18;
	sr.ds.type = 0x3; /* data: read/write, accessed */
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	sr.tr = (struct kvm_segment){ .limit = 0x67,
				      .type = 0xb,
				      .present = 1 };
	sr.ldt = (struct kvm_segment){ .limit = 0xffff,
				       .type = 0x2,
				       .present = 1 };
	sr.cr0 = 0x11; /* PE, ET */
	sr.cr4 = 0;
	sr.efer = 0;
	if (ioctl(fd, KVM_SET_SREGS, &sr) < 0 ||
	    ioctl(fd, KVM_SET_REGS, &r) < 0)
		return -errno;
	return 0;
}

/* Whether the first CPU's flags in /proc/cpuinfo name @flag. */
static bool cpu_flag(const char *flag)
{
	char *line = NULL, *word, *save;
	bool found = false;
	size_t cap = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) || !strchr(line, ':'))
			continue;
		for (word = strtok_r(strchr(line, ':') + 1, " \t\n", &save);
		     word && !found; word = strtok_r(NULL, " \t\n", &save))
			found = !strcmp(word, flag);
		break;
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * /dev/kvm, opened before guest memory is taken; what is missing when it
 * cannot be: a CPU without vmx or svm (a VM without nested
 * virtualization) is helped by no module, and root by no group.
 */
static int kvm_open(struct vm *vm)
{
	int e;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	e = errno;
	if (vm->kvm_fd < 0 && (e == ENOENT || e == ENXIO || e == ENODEV) &&
	    !cpu_flag("vmx") && !cpu_flag("svm"))
		return fail(
			-e,
			"cannot open /dev/kvm: %s: this CPU has no hardware virtualization (no vmx or svm in /proc/cpuinfo)%s, so no kernel module can help: run minivmm where VT-x or AMD-V is available",
			strerror(e),
			cpu_flag("hypervisor") ?
				"; it is a VM without nested virtualization" :
				"; it may be off in the firmware");
	if (vm->kvm_fd < 0 && (e == ENOENT || e == ENXIO || e == ENODEV))
		return fail(
			-e,
			"cannot open /dev/kvm: %s: load kvm_intel or kvm_amd",
			strerror(e));
	if (vm->kvm_fd < 0 && (e == EACCES || e == EPERM) && geteuid())
		return fail(
			-e,
			"cannot open /dev/kvm: %s: run as root or join the kvm group",
			strerror(e));
	if (vm->kvm_fd < 0)
		return fail(-e, "cannot open /dev/kvm: %s", strerror(e));
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IMMEDIATE_EXIT) <= 0)
		return fail(
			-ENODEV,
			"/dev/kvm lacks KVM_CAP_IMMEDIATE_EXIT: use a newer kernel");
	return 0;
}

/* A VM with @ram as its memory from address 0, its vCPUs. */
static int vm_create(struct vm *vm, void *ram, uint64_t bytes, uint32_t entry,
		     uint32_t start_info)
{
	struct kvm_userspace_memory_region slot = {
		.memory_size = bytes,
		.userspace_addr = (uint64_t)(uintptr_t)ram,
	};
	struct kvm_cpuid2 *cpuid;
	int ret;

	ret = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (ret <= 0 || vm->vm_fd < 0)
		return fail(-errno, "cannot create a KVM VM: %s",
			    strerror(errno));
	vm->run_size = (size_t)ret;
	/* Intel keeps three pages for its real-mode TSS: in the hole. */
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0)
		ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000UL);
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0)
		return fail(-errno, "cannot give guest memory to KVM: %s",
			    strerror(errno));
	/* What this KVM can give, as it is: the guest needs nothing more. */
	cpuid = calloc(1,
		       sizeof(*cpuid) + CPUID_MAX * sizeof(cpuid->entries[0]));
	if (!cpuid)
		return fail(-ENOMEM, "out of memory");
	cpuid->nent = CPUID_MAX;
	ret = ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) < 0 ? -errno :
								      0;
	for (unsigned int i = 0; i < vm->nr_vcpus && !ret; i++) {
		struct vcpu *c = &vm->vcpu[i];

		c->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)i);
		if (c->fd < 0) {
			ret = -errno;
			break;
		}
		c->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, c->fd, 0);
		if (c->run == MAP_FAILED) {
			c->run = NULL;
			ret = -errno;
			break;
		}
		/* The touch guest tells its vCPUs apart by APIC ID. */
		for (unsigned int e = 0; e < cpuid->nent; e++) {
			struct kvm_cpuid_entry2 *x = &cpuid->entries[e];

			if (x->function == 1)
				x->ebx = (x->ebx & 0x00ffffff) | i << 24;
			if (x->function == 0xb || x->function == 0x1f)
				x->edx = i;
		}
		if (ioctl(c->fd, KVM_SET_CPUID2, cpuid) < 0)
			ret = -errno;
		else
			ret = pvh_regs(c->fd, entry, start_info);
	}
	free(cpuid);
	return ret ? fail(ret, "cannot set up the vCPUs: %s", strerror(-ret)) :
		     0;
}

static void vm_destroy(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		if (vm->vcpu[i].run)
			munmap(vm->vcpu[i].run, vm->run_size);
		if (vm->vcpu[i].fd >= 0)
			close(vm->vcpu[i].fd);
	}
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	close(vm->stop_fd);
	pthread_mutex_destroy(&vm->lock);
}

/* Each vCPU thread unblocks the kick itself, so no other thread gets it. */
static int vcpus_start(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *c = &vm->vcpu[i];
		int ret;

		__atomic_add_fetch(&vm->running, 1, __ATOMIC_ACQ_REL);
		ret = -pthread_create(&c->thread, NULL, vcpu_thread, c);
		if (ret) {
			__atomic_sub_fetch(&vm->running, 1, __ATOMIC_ACQ_REL);
			vm_stop(vm, STOP_ERROR, 0, "cannot start vCPU %u", i);
			return ret;
		}
		c->started = true;
	}
	return 0;
}

/*
 * immediate_exit catches a vCPU between its stop check and KVM_RUN, the
 * signal one inside KVM_RUN; one held in a fault leaves once it is
 * served, which libzvmm does by itself after zvmm_guest_stop().
 */
static void vcpus_join(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		if (!vm->vcpu[i].started)
			continue;
		__atomic_store_n(&vm->vcpu[i].run->immediate_exit, 1,
				 __ATOMIC_RELAXED);
		pthread_kill(vm->vcpu[i].thread, KICK_SIGNAL);
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpu[i].started)
			pthread_join(vm->vcpu[i].thread, NULL);
}

/* ------------------------------------------------------------ serving */

/* zvmm_guest_serve_thread()'s thread could not serve: end the run. */
static void serve_error(void *arg, int err)
{
	vm_stop(arg, STOP_ERROR, 0, "serving guest memory failed: %s",
		strerror(-err));
}

/*
 * The VMM's loop until the run stops: the stop eventfd, SIGINT and
 * SIGTERM, and with --serve poll the guest's fd (-1 under prezero, which
 * poll() skips), on which zvmm_guest_process() answers first touches.
 */
static void serve(struct vm *vm, struct zvmm_guest *g, int sig_fd,
		  bool poll_guest)
{
	struct pollfd pfd[3] = {
		{ .fd = vm->stop_fd, .events = POLLIN },
		{ .fd = sig_fd, .events = POLLIN },
		{ .fd = poll_guest ? zvmm_guest_fd(g) : -1, .events = POLLIN },
	};
	struct signalfd_siginfo si;
	int ret;

	while (!stopping(vm)) {
		if (poll(pfd, 3, -1) < 0) {
			if (errno != EINTR)
				vm_stop(vm, STOP_ERROR, 0, "poll: %s",
					strerror(errno));
			continue;
		}
		if (pfd[1].revents && read(sig_fd, &si, sizeof(si)) > 0)
			vm_stop(vm, STOP_SIGNAL, 0, "interrupted by %s",
				strsignal((int)si.ssi_signo));
		if (pfd[2].revents) {
			ret = zvmm_guest_process(g);
			if (ret < 0)
				serve_error(vm, ret);
		}
	}
}

/* ---------------------------------------------------------------- run */

/* A number in the touch guest's report, one flat JSON object. */
static uint64_t report_u64(const char *json, const char *key, uint64_t dflt)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (!p || p[strlen(pat)] < '0' || p[strlen(pat)] > '9')
		return dflt;
	return strtoull(p + strlen(pat), NULL, 10);
}

/*
 * Pass: the guest wrote 0 to the exit port, and its report says it
 * checked memory and saw no byte that was not zero (nor another tenant's
 * marks, nor lost marks of its own, when asked to look for them).
 */
static int verdict(struct vm *vm, const struct opts *o,
		   const struct zvmm_stats *st)
{
	const char *r = vm->report;
	uint64_t nonzero = report_u64(r, "nonzero_bytes", UINT64_MAX);
	uint64_t verified = report_u64(r, "verified_bytes", 0);
	uint64_t foreign = report_u64(r, "foreign_words", 0);
	bool pass = vm->stop == STOP_EXIT_PORT && !vm->exit_code && verified &&
		    !nonzero && !foreign && !report_u64(r, "marks_lost", 0);

	if (vm->line_len) /* the guest's last line had no newline */
		putchar('\n');
	printf("minivmm: %s: %s/%s, %" PRIu64
	       " MiB of %s pages, %u vCPU(s): %s",
	       pass ? "PASS" : "FAIL", st->mode,
	       o->serve_thread ? "thread" : "poll", o->mem_bytes >> 20,
	       o->page_bytes == ZVMM_PAGE_1G ? "1G" : "2M", o->vcpus, vm->why);
	if (nonzero == UINT64_MAX)
		printf(", no report");
	else
		printf(", touched %" PRIu64 " MiB, %" PRIu64
		       " bytes verified, %" PRIu64 " non-zero, %" PRIu64
		       " foreign words",
		       report_u64(r, "touched_bytes", 0) >> 20, verified,
		       nonzero, foreign);
	printf("; %" PRIu64 " faults, %" PRIu64 " pages mapped ahead, %" PRIu64
	       " MiB prezeroed\n",
	       st->faults, st->ahead_pages,
	       (st->prezero_scrub_bytes + st->prezero_populate_bytes) >> 20);
	return pass ? 0 : -EIO;
}

static int make_policy(const struct opts *o, struct zvmm_policy **out)
{
	int ret = zvmm_policy_new(out);

	if (!ret && o->policy_file)
		ret = zvmm_policy_load(*out, o->policy_file);
	/* Without a file, say the mode even where it is the default. */
	if (!ret && (o->mode || !o->policy_file))
		ret = zvmm_policy_set(*out, "zeroing.mode",
				      o->mode ? o->mode : "hybrid");
	return ret ? fail(ret, "policy: %s (see above)", strerror(-ret)) : 0;
}

static int run(const struct opts *o, struct vm *vm, int sig_fd)
{
	uint64_t low = o->mem_bytes < (1ULL << 30) ? o->mem_bytes : 1ULL << 30;
	uint64_t boot = low - BOOT_PAGE, bytes;
	char cmdline[BOOT_PAGE - CMDLINE_OFF];
	struct zvmm_policy *pol = NULL;
	struct zvmm_guest *g = NULL;
	struct image im = { 0 };
	struct zvmm_stats st;
	struct zvmm_mem mem;
	void *ram;
	int ret;

	/* Everything that can be checked before memory is taken. */
	if ((size_t)snprintf(cmdline, sizeof(cmdline), "%s%svcpus=%u",
			     o->cmdline ? o->cmdline : "",
			     o->cmdline ? " " : "",
			     o->vcpus) >= sizeof(cmdline))
		return fail(-EINVAL, "--cmdline: at most %zu bytes",
			    sizeof(cmdline) - 10);
	ret = image_open(o->guest, boot, &im);
	if (!ret)
		ret = make_policy(o, &pol);
	/* Always from zvmm_mem_init(): the struct grows new fields. */
	zvmm_mem_init(&mem, o->mem_bytes, o->page_bytes);
	mem.pool_path = o->pool;
	if (!ret && (ret = zvmm_mem_check(&mem)))
		fail(ret, "guest memory: %s (see above)", strerror(-ret));
	if (!ret)
		ret = kvm_open(vm);
	if (!ret)
		ret = zvmm_guest_open(&mem, pol, &g);
	zvmm_policy_free(pol); /* the guest has what it needs of it */
	if (ret)
		goto out;
	/* From here the loader may write [0, im.end), and nothing else. */
	ret = zvmm_guest_prepare(g, im.end);
	if (ret) {
		fail(ret, "preparing guest memory: %s (see above)",
		     strerror(-ret));
		goto out;
	}
	zvmm_guest_memory(g, &ram, &bytes);
	image_load(&im, ram);
	ret = zvmm_guest_access(g, boot, BOOT_PAGE);
	if (ret) {
		fail(ret, "boot page: %s", strerror(-ret));
		goto out;
	}
	boot_page_write(ram, bytes, boot, cmdline);
	ret = vm_create(vm, ram, bytes, im.entry, (uint32_t)boot);
	if (!ret && o->serve_thread)
		ret = zvmm_guest_serve_thread(g, serve_error, vm);
	if (ret)
		goto out;

	/* hybrid's background work starts once the vCPUs have the cores. */
	if (!vcpus_start(vm))
		zvmm_guest_start(g);
	serve(vm, g, sig_fd, !o->serve_thread);
	/* Once, before the joins: no vCPU stays held in a fault. */
	ret = zvmm_guest_stop(g);
	if (ret)
		fail(ret, "serving guest memory: %s", strerror(-ret));
	vcpus_join(vm);
	ret = zvmm_guest_exit(g);
	if (ret)
		fail(ret, "on_exit for guest memory: %s", strerror(-ret));
	zvmm_guest_stats(g, &st);
	if (verdict(vm, o, &st) || ret) /* PASS needs on_exit done too */
		ret = vm->stop == STOP_SIGNAL ? -EINTR : -EIO;
out:
	zvmm_guest_close(g);
	free((void *)im.data);
	return ret;
}

/* ------------------------------------------------------------ options */

static const char usage[] =
	"usage: minivmm --guest ELF [options]\n"
	"Boots a PVH guest on hugepage memory that libzvmm zeroes; COM1 on\n"
	"stdout, then one line: PASS when the guest exited 0 having found\n"
	"only zeros where it looked.\n"
	"  --guest ELF          the guest (no default; zvmm's touch guest is\n"
	"                       build/guest/touch.elf)\n"
	"  --mem MIB            guest RAM, 1 to 3072 MiB (default 256)\n"
	"  --hugepages 2M|1G    page size (default 2M)\n"
	"  --policy MODE        prezero, demand or hybrid (default hybrid)\n"
	"  --policy-file FILE   a zvmm.conf(5) policy; --policy sets its mode\n"
	"  --pool FILE          RAM in a pool file on hugetlbfs (default: an\n"
	"                       anonymous hugetlb memfd)\n"
	"  --serve poll|thread  serve first touches from minivmm's poll loop\n"
	"                       (default) or from libzvmm's thread\n"
	"  --vcpus N            1 to 64 (default 1); adds vcpus=N to the cmdline\n"
	"  --cmdline STR        guest command line (touch: stride=, verify=, ...)\n"
	"Exit status: 0 PASS, 1 FAIL or error, 2 usage, 130 interrupted.\n";

/* A usage error in @opt's argument: say what it takes. */
static int bad(const char *opt, const char *want)
{
	return fail(-EINVAL, "--%s %s: give %s", opt, optarg, want);
}

static bool is(const char *a, const char *b, const char *c)
{
	return !strcmp(optarg, a) || !strcmp(optarg, b) ||
	       (c && !strcmp(optarg, c));
}

static int number(const char *opt, unsigned long max, unsigned long *v)
{
	char *end;

	*v = strtoul(optarg, &end, 10);
	if (*end || end == optarg || *optarg == '-' || !*v || *v > max)
		return fail(-EINVAL, "--%s %s: give 1 to %lu", opt, optarg,
			    max);
	return 0;
}

/* 0, 1 for --help, or -EINVAL with the reason said. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "guest", required_argument, NULL, 'g' },
		{ "mem", required_argument, NULL, 'm' },
		{ "hugepages", required_argument, NULL, 'H' },
		{ "policy", required_argument, NULL, 'p' },
		{ "policy-file", required_argument, NULL, 'f' },
		{ "pool", required_argument, NULL, 'P' },
		{ "serve", required_argument, NULL, 's' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "cmdline", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long mib = 256, n;
	int opt, i;

	*o = (struct opts){ .page_bytes = ZVMM_PAGE_2M, .vcpus = 1 };
	while ((opt = getopt_long(argc, argv, "", longs, &i)) != -1) {
		const char *name = opt == '?' ? "" : longs[i].name;

		switch (opt) {
		case 'g':
			o->guest = optarg;
			break;
		case 'm':
			if (number(name, RAM_MAX_MIB, &mib))
				return -EINVAL;
			break;
		case 'c':
			if (number(name, MAX_VCPUS, &n))
				return -EINVAL;
			o->vcpus = (unsigned int)n;
			break;
		case 'H':
			if (!is("2M", "1G", NULL))
				return bad(name, "2M or 1G");
			o->page_bytes = *optarg == '1' ? ZVMM_PAGE_1G :
							 ZVMM_PAGE_2M;
			break;
		case 'p':
			if (!is("prezero", "demand", "hybrid"))
				return bad(name, "prezero, demand or hybrid");
			o->mode = optarg;
			break;
		case 'f':
			o->policy_file = optarg;
			break;
		case 'P':
			o->pool = optarg;
			break;
		case 's':
			if (!is("poll", "thread", NULL))
				return bad(name, "poll or thread");
			o->serve_thread = *optarg == 't';
			break;
		case 'l':
			if (strstr(optarg, "vcpus="))
				return fail(
					-EINVAL,
					"--cmdline: leave vcpus= out, --vcpus adds it");
			o->cmdline = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fputs(usage, stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		return fail(-EINVAL, "unexpected argument %s: see --help",
			    argv[optind]);
	if (!o->guest)
		return fail(
			-EINVAL,
			"--guest ELF is needed (zvmm's touch guest: build/guest/touch.elf)");
	o->mem_bytes = (uint64_t)mib << 20;
	if (o->mem_bytes % o->page_bytes)
		return fail(-EINVAL,
			    "--mem %lu is not a whole number of %s pages", mib,
			    o->page_bytes == ZVMM_PAGE_1G ? "1G" : "2M");
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	struct vm *vm;
	struct opts o;
	sigset_t set;
	int ret, sig_fd;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	zvmm_set_log(log_line, NULL, ZVMM_LOG_WARNING);
	if (zvmm_check_version(ZVMM_VERSION_MAJOR, ZVMM_VERSION_MINOR)) {
		fail(-ENOTSUP,
		     "libzvmm %s lacks the %d.%d API minivmm was built for: install libzvmm %d.%d or later",
		     zvmm_version(), ZVMM_VERSION_MAJOR, ZVMM_VERSION_MINOR,
		     ZVMM_VERSION_MAJOR, ZVMM_VERSION_MINOR);
		return 1;
	}
	/*
	 * Before any thread starts, so all inherit the mask: SIGINT and
	 * SIGTERM are read from a signalfd by the serving loop, and the
	 * kick reaches only the vCPU threads, which unblock it: a handler
	 * that does nothing (an ignored signal would not interrupt
	 * KVM_RUN), without SA_RESTART.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigdelset(&set, KICK_SIGNAL);
	sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	sigaction(KICK_SIGNAL, &sa, NULL);

	vm = calloc(1, sizeof(*vm));
	if (!vm || sig_fd < 0) {
		fail(-ENOMEM, "out of memory or file descriptors");
		return 1;
	}
	vm->kvm_fd = vm->vm_fd = -1;
	for (unsigned int i = 0; i < MAX_VCPUS; i++)
		vm->vcpu[i] = (struct vcpu){ .vm = vm, .index = i, .fd = -1 };
	vm->nr_vcpus = o.vcpus;
	vm->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&vm->lock, NULL);
	ret = vm->stop_fd < 0 ? -errno : run(&o, vm, sig_fd);
	vm_destroy(vm);
	free(vm);
	close(sig_fd);
	return !ret ? 0 : ret == -EINTR ? 130 : 1;
}
