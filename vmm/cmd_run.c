// SPDX-License-Identifier: MIT
/*
 * `zvmm run`, as kvmtool's builtin-run: run_init() (pre-flight checks,
 * guest memory through the zeroing lifecycle, KVM, the PVH guest),
 * run_guest() (vCPUs and the event loop), run_exit() (on_exit, the
 * reports). Page states are zeroing/'s (zeroing/guest.h): nothing here
 * moves one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "../include/zvmm/zvmm.h"
#include "../lib/clock.h"
#include "cli.h"
#include "devices.h"
#include "loop.h"
#include "kvm.h"
#include "pvh.h"
#include "report.h"
#include "sigwatch.h"

/* The touch guest, built into this binary (vmm/guest_image.S). */
extern const unsigned char zvmm_guest_image[];
extern const unsigned char zvmm_guest_image_end[];

/* Process start, near enough: set first thing in main(). */
extern double zvmm_start_time;

struct run_opts {
	struct cli_args a; /* as parsed */
	struct zvmm_mem mem; /* from a.mem, a.page_bytes, a.pool */
};

static const struct cli_text run_texts[] = {
	{ CLI_MEM, "guest RAM, whole pages (e.g. 4G)" },
	{ CLI_SET, "override one policy key" },
	{ CLI_CMDLINE,
	  "guest command line (touch guest: stride=4K|2M|1G verify=N pattern=BYTE order=down); zvmm adds vcpus=N" },
	{ CLI_POOL, "guest RAM in a pool file on a hugetlbfs mount" },
	{ CLI_JSON,
	  "write the JSON report; with '-' guest output and the summary go to stderr" },
	{ CLI_QUIET, "no progress, no summary" },
	{ CLI_VERBOSE,
	  "each launch step on stderr, and the vCPU registers when the guest crashes" },
	{ 0 }
};

static const struct cli_verb run_verb = {
	.name = "run",
	.accepts = CLI_MEM | CLI_HUGEPAGES | CLI_POLICY | CLI_SET | CLI_VCPUS |
		   CLI_GUEST | CLI_CMDLINE | CLI_POOL | CLI_POOL_SERVICE |
		   CLI_SOCKET | CLI_JSON | CLI_SERIAL | CLI_QUIET |
		   CLI_VERBOSE | CLI_KVM | CLI_RESERVE | CLI_TIMEOUT,
	.required = CLI_MEM,
	.what = "Boots a PVH guest (by default the built-in touch guest) on hugepage\n"
		"memory zeroed by the policy (default: hybrid), and reports the launch\n"
		"and the guest's own measurement.",
	.texts = run_texts,
	.after =
		"Exit status: the guest's exit code, 2 usage, 3 missing resources,\n"
		"4 guest crash, 124 timed out, 130 interrupted, 1 other errors.",
};

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	struct cli_args *a = &o->a;
	int ret;

	*a = (struct cli_args){ .page_bytes = ZVMM_PAGE_2M,
				.vcpus = 1,
				.kvm = "/dev/kvm" };
	ret = cli_parse(&run_verb, argc, argv, a);
	if (ret)
		return ret;
	/* --verbose: the library's own steps too (how it got a userfaultfd). */
	if (a->verbose && log_level < LOG_DEBUG)
		log_level = LOG_DEBUG;
	return cli_mem_source(a, &o->mem);
}

/* Reads the whole guest file. */
static int read_guest(const char *path, unsigned char **buf, size_t *size)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 30)) {
		close(fd);
		return -EINVAL;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size &&
	       (n = read(fd, *buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	*size = got;
	return 0;
}

struct run_state {
	struct run_opts o;
	struct zvmm_policy *pol;
	unsigned char *image;
	size_t image_size;
	char cmdline[VMM_CMDLINE_MAX + 1];
	struct zvmm_guest *g; /* read by the signal thread */
	struct vmm_vm *vm; /* read by the signal thread */
	struct vmm_devices dev;
	bool dev_init;
	struct zvmm_reservation *resv;
	struct vmm_sigwatch w;
	unsigned int sigs_at_end; /* signals taken when the run ended */
	uint64_t boot_end; /* guest-physical end of boot data and image */
	uint32_t entry;
	int status; /* zvmm's exit status */
	int code; /* the guest's exit code */
	double t_ready, t_end;
	/* checked, memory opened, prepared, vCPUs made, guest loaded */
	double t_checked, t_opened, t_prepared, t_vcpus, t_loaded;
	FILE *out, *serial, *json;
	bool json_written;
};

/*
 * --reserve as a user: raising a pool is root's (docs/DESIGN.md 3), so
 * say by how much and the command root runs; nothing was changed.
 */
static void reserve_refused(uint64_t page_bytes, long need)
{
	const char *dir = "/sys/kernel/mm/hugepages";
	char path[96], ps[16];
	long nr = 0, nfree = 0;
	unsigned long kb = (unsigned long)(page_bytes >> 10);

	snprintf(path, sizeof(path), "%s/hugepages-%lukB/free_hugepages", dir,
		 kb);
	if (sysfs_read_long(path, &nfree))
		nfree = 0;
	snprintf(path, sizeof(path), "%s/hugepages-%lukB/nr_hugepages", dir,
		 kb);
	if (sysfs_read_long(path, &nr))
		nr = 0;
	pr_err("--reserve: %ld hugepages of %s are needed, %ld are free, and only root may raise nr_hugepages: run as root, or have root reserve them (echo %ld | sudo tee %s) and run without --reserve",
	       need, size_format(page_bytes, ps, sizeof(ps)), nfree,
	       nr + need - nfree, path);
}

/* Everything before memory is taken; usage errors come out first. */
static int check_request(struct run_state *s)
{
	char err[512], kvm_why[1024], mem_why[1024];
	struct run_opts *o = &s->o;
	struct vmm_elf_info info;
	int ret, mret, kret;

	ret = cli_policy(o->a.policy, &o->a.sets, &s->pol);
	if (ret)
		return ret;
	if (o->a.guest) {
		ret = read_guest(o->a.guest, &s->image, &s->image_size);
		if (ret) {
			pr_err("cannot read --guest %s: %s", o->a.guest,
			       ret == -EINVAL ?
				       "not a regular file under 1 GiB" :
				       strerror(-ret));
			return -EINVAL;
		}
	} else {
		s->image_size =
			(size_t)(zvmm_guest_image_end - zvmm_guest_image);
		s->image = malloc(s->image_size);
		if (!s->image)
			return -ENOMEM;
		memcpy(s->image, zvmm_guest_image, s->image_size);
	}
	ret = vmm_pvh_check(s->image, s->image_size, o->mem.bytes, &info, err,
			    sizeof(err));
	if (ret) {
		pr_err("%s: %s", o->a.guest ? o->a.guest : "built-in guest",
		       err);
		return -EINVAL;
	}
	s->boot_end = info.hi > VMM_BOOT_END ? info.hi : VMM_BOOT_END;
	s->entry = info.entry;
	snprintf(s->cmdline, sizeof(s->cmdline), "%s%s",
		 o->a.cmdline ? o->a.cmdline : "",
		 o->a.cmdline && *o->a.cmdline ? " " : "");
	if (!o->a.cmdline || !strstr(o->a.cmdline, "vcpus="))
		snprintf(s->cmdline + strlen(s->cmdline),
			 sizeof(s->cmdline) - strlen(s->cmdline), "vcpus=%u",
			 o->a.vcpus);
	/*
	 * The memory request's own errors (its size, its page size, a pool
	 * of another size or not a file) are usage errors, said before
	 * anything the machine lacks. The library's message is held, so
	 * that every missing resource is said in one message.
	 */
	cli_log_hold();
	mret = zvmm_mem_check(&o->mem);
	cli_log_release(mem_why, sizeof(mem_why));
	if (mret == -EINVAL) {
		pr_err("%s", mem_why);
		return mret;
	}
	kret = vmm_kvm_probe(o->a.kvm, kvm_why, sizeof(kvm_why));
	/* Nothing on the host changes for a launch that cannot run. */
	if (!kret && o->a.reserve) {
		long nr = (long)(o->mem.bytes / o->mem.page_bytes);

		ret = zvmm_hugepages_reserve(o->mem.page_bytes, (uint64_t)nr,
					     &s->resv);
		if (ret == -EACCES) {
			reserve_refused(o->mem.page_bytes, nr);
			return ret;
		}
		/* -ENOMEM: the check again says what is still short. */
		cli_log_hold();
		mret = zvmm_mem_check(&o->mem);
		cli_log_release(mem_why, sizeof(mem_why));
	}
	/* Hugepages too few are --reserve's to raise, once KVM is there. */
	if (kret && o->a.reserve && mret == -ENOMEM)
		mret = 0;
	if (kret && mret)
		pr_err("cannot start a guest here, for two reasons: (1) %s; (2) %s",
		       kvm_why, mem_why);
	else if (kret)
		pr_err("%s", kvm_why);
	else if (mret)
		pr_err("%s", mem_why);
	return kret ? kret : mret;
}

static int open_outputs(struct run_state *s)
{
	if (s->o.a.json && !s->json) {
		s->json = fopen(s->o.a.json, "we");
		if (!s->json) {
			pr_err("cannot write --json %s: %s", s->o.a.json,
			       strerror(errno));
			return -EINVAL;
		}
	}
	if (s->o.a.serial) {
		s->serial = fopen(s->o.a.serial, "we");
		if (!s->serial) {
			pr_err("cannot write --serial %s: %s", s->o.a.serial,
			       strerror(errno));
			s->serial = stdout;
			return -EINVAL;
		}
	}
	return 0;
}

static void on_signal(void *arg, int sig)
{
	struct run_state *s = arg;
	struct zvmm_guest *g;
	struct vmm_vm *vm;

	(void)sig;
	g = __atomic_load_n(&s->g, __ATOMIC_SEQ_CST);
	if (g)
		zvmm_guest_cancel(g);
	vm = __atomic_load_n(&s->vm, __ATOMIC_SEQ_CST);
	if (vm)
		vmm_vm_request_stop(vm, VMM_STOP_CANCELLED, 0, "interrupted");
}

/*
 * init: the request checked, guest memory opened and prepared by the
 * policy, the VM created and the guest loaded. Nothing runs yet.
 */
static int run_init(struct run_state *s)
{
	struct zvmm_guest *g;
	struct zvmm_stats st;
	struct vmm_ram ram;
	struct vmm_vm *vm;
	char err[512];
	int ret;

	/*
	 * Signals are taken from here on, by one thread until run_cleanup()
	 * (--reserve may raise the hugepage pool, which must be given back):
	 * on_signal() cancels the memory's work and stops the VM, whatever
	 * phase the launch is in.
	 */
	vmm_sigwatch_block();
	s->w.arg = s;
	ret = vmm_sigwatch_start(&s->w);
	if (ret)
		pr_err("cannot take SIGINT and SIGTERM (signalfd, thread): %s",
		       strerror(-ret));
	if (!ret)
		ret = check_request(s);
	if (!ret && vmm_sigwatch_seen(&s->w))
		ret = -ECANCELED;
	if (!ret)
		ret = open_outputs(s);
	if (ret)
		return ret;
	s->t_checked = clock_now();
	/* libzvmm logs what went wrong, and what to do, itself. */
	ret = zvmm_guest_open(&s->o.mem, s->pol, &g);
	if (ret)
		return ret;
	s->t_opened = clock_now();
	__atomic_store_n(&s->g, g, __ATOMIC_SEQ_CST);
	/* A signal that came while it opened found no guest to cancel. */
	if (vmm_sigwatch_seen(&s->w))
		return -ECANCELED;
	if (s->o.a.verbose) {
		zvmm_guest_stats(g, &st);
		pr_info("guest memory open; preparing it for the %s policy",
			st.mode);
	}
	ret = zvmm_guest_prepare(g, s->boot_end);
	if (ret || vmm_sigwatch_seen(&s->w))
		return vmm_sigwatch_seen(&s->w) || ret == -ECANCELED ?
			       -ECANCELED :
			       ret;
	s->t_prepared = clock_now();
	zvmm_guest_memory(g, (void **)&ram.guest, &ram.bytes);
	ret = vmm_vm_create(s->o.a.kvm, &ram, s->o.a.vcpus, &vm, err,
			    sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	s->t_vcpus = clock_now();
	vm->verbose = s->o.a.verbose;
	__atomic_store_n(&s->vm, vm, __ATOMIC_SEQ_CST);
	vmm_devices_init(&s->dev, vm, s->serial);
	s->dev_init = true;
	ret = vmm_pvh_load(vm, s->image, s->image_size, s->cmdline, err,
			   sizeof(err));
	if (!ret) {
		ret = vmm_vcpus_reset_pvh(vm, s->entry, VMM_BOOT_START);
		if (ret)
			snprintf(err, sizeof(err),
				 "cannot set up the vCPUs: %s", strerror(-ret));
	}
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	s->t_loaded = clock_now();
	return vmm_sigwatch_seen(&s->w) ? -ECANCELED : 0;
}

static int run_loop(struct run_state *s)
{
	struct vmm_loop l = { .vm = s->vm,
			      .guest = s->g,
			      .quiet = s->o.a.quiet,
			      .timeout = s->o.a.timeout };

	return vmm_loop_run(&l);
}

/* run: the vCPUs and the event loop, until the guest's run stops. */
static void run_guest(struct run_state *s)
{
	enum vmm_stop why;
	int ret;

	ret = vmm_vm_start(s->vm);
	/*
	 * Background work only once the vCPU threads run: started before,
	 * the workers took the cores the launch itself needs (measured by
	 * `make bench`: hybrid ready 173 ms at 16 GiB against demand's 104).
	 */
	if (!ret) {
		zvmm_guest_start(s->g);
		ret = run_loop(s);
	}
	/* From here libzvmm serves every vCPU still in a fault by itself. */
	(void)!zvmm_guest_stop(s->g);
	why = vmm_vm_wait(s->vm);
	s->sigs_at_end = vmm_sigwatch_count(&s->w);
	s->t_end = clock_now();
	s->t_ready = s->vm->first_entry;
	switch (why) {
	case VMM_STOP_EXIT_PORT:
		s->code = s->vm->exit_code;
		s->status = s->code;
		break;
	case VMM_STOP_TIMEOUT:
		pr_err("the guest ran past --timeout %g s and was stopped",
		       s->o.a.timeout);
		s->status = EXIT_TIMEOUT;
		break;
	case VMM_STOP_CANCELLED:
		pr_err("interrupted by %s: the guest was stopped",
		       vmm_sigwatch_seen(&s->w) ?
			       strsignal(vmm_sigwatch_seen(&s->w)) :
			       "a signal");
		s->status = EXIT_INTERRUPTED;
		break;
	case VMM_STOP_ERROR:
		pr_err("%s", s->vm->why);
		s->status = EXIT_OTHER;
		break;
	default:
		pr_err("%s", s->vm->why);
		s->status = EXIT_CRASH;
		break;
	}
	if (s->dev.other_pio > 1)
		pr_warn("guest accessed ports without a device %llu times",
			(unsigned long long)s->dev.other_pio);
}

/* exit: on_exit for the guest's memory, then the reports. */
static void run_exit(struct run_state *s)
{
	struct vmm_run_facts f = {
		.dev = &s->dev,
		.vcpus = s->vm->nr_vcpus,
		.mmio_exits = s->vm->mmio_exits,
		.start = zvmm_start_time,
		.ready_ms = (s->t_ready - zvmm_start_time) * 1e3,
		.total_ms = (s->t_end - zvmm_start_time) * 1e3,
		.exit_code = s->code,
		.options_ms = (s->t_checked - zvmm_start_time) * 1e3,
		.prepare_ms = (s->t_prepared - s->t_opened) * 1e3,
		.kvm_vm_ms = (s->vm->t_vm - s->t_prepared) * 1e3,
		.kvm_memslots_ms = (s->vm->t_memslots - s->vm->t_vm) * 1e3,
		.kvm_vcpus_ms = (s->t_vcpus - s->vm->t_memslots) * 1e3,
		.loader_ms = (s->t_loaded - s->t_vcpus) * 1e3,
		.start_ms = (s->t_ready - s->t_loaded) * 1e3,
	};
	/* libzvmm logs a failure. */
	if (vmm_guest_exit_watched(&s->w, s->sigs_at_end, s->g) == -ECANCELED)
		s->status = EXIT_INTERRUPTED;
	zvmm_guest_stats(s->g, &f.z);
	if (s->o.a.verbose)
		vmm_report_phases(stderr, &f);
	if (!s->o.a.quiet)
		vmm_report_summary(s->out, &f);
	if (s->json) {
		vmm_report_json(s->json, &f);
		s->json_written = true;
	}
}

static void run_cleanup(struct run_state *s)
{
	/*
	 * No callback may see the VM or the guest go; a signal from here
	 * waits, blocked, until the process has undone all of it and exits
	 * with its status (the mask is never restored).
	 */
	vmm_sigwatch_stop(&s->w);
	if (s->dev_init)
		vmm_devices_fini(&s->dev);
	vmm_vm_destroy(s->vm);
	zvmm_guest_close(s->g);
	zvmm_hugepages_release(s->resv);
	zvmm_policy_free(s->pol);
	if (s->json && s->json != stdout) {
		fclose(s->json);
		if (!s->json_written)
			unlink(s->o.a.json);
	}
	if (s->serial && s->serial != stdout && s->serial != stderr)
		fclose(s->serial);
	free(s->image);
	free(s);
}

int cmd_run(int argc, char **argv)
{
	struct run_state *s;
	int ret, status;

	s = calloc(1, sizeof(*s));
	if (!s)
		return EXIT_OTHER;
	s->out = stdout;
	s->serial = stdout;
	s->w.on_signal = on_signal;
	ret = parse_opts(argc, argv, &s->o);
	if (ret) {
		free(s);
		return ret > 0 ? 0 : EXIT_USAGE;
	}
	if (s->o.a.json && !strcmp(s->o.a.json, "-")) {
		s->json = stdout;
		s->out = stderr;
		s->serial = stderr;
	}
	ret = run_init(s);
	if (!ret) {
		run_guest(s);
		run_exit(s);
		status = s->status;
	} else if (ret == -ECANCELED) {
		pr_err("interrupted before the guest started; nothing is left behind");
		status = EXIT_INTERRUPTED;
	} else {
		status = cli_exit_status(ret);
	}
	run_cleanup(s);
	return status;
}
