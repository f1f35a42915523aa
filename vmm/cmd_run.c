// SPDX-License-Identifier: MIT
/*
 * `zvmm run`: pre-flight checks, guest memory, zeroing, KVM, the PVH
 * guest, its report and ours (DESIGN.md 8).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/engine.h"
#include "../zeroing/hugetlb.h"
#include "../zeroing/record.h"
#include "cli.h"
#include "devices.h"
#include "fault.h"
#include "loop.h"
#include "kvm.h"
#include "pvh.h"
#include "sigwatch.h"

#define EXIT_CRASH 4
/* As timeout(1): the guest ran past --timeout. */
#define EXIT_TIMEOUT 124

/* The touch guest, built into this binary (vmm/guest_image.S). */
extern const unsigned char zvmm_guest_image[];
extern const unsigned char zvmm_guest_image_end[];

/* Process start, near enough: set first thing in main(). */
extern double zvmm_start_time;

struct run_opts {
	struct zero_mem_opts mem;
	unsigned int vcpus;
	const char *policy, *guest, *cmdline, *json, *serial, *kvm;
	struct cli_sets sets;
	double timeout; /* seconds of guest run time, 0: none */
	bool quiet, verbose, reserve;
};

static void run_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm run --mem SIZE [--hugepages 2M|1G] [--policy FILE]\n"
		"                [--set KEY=VALUE]... [--vcpus N] [--guest ELF]\n"
		"                [--cmdline STR] [--pool PATH] [--json FILE|-]\n"
		"                [--serial FILE] [--quiet] [--verbose] [--kvm PATH]\n"
		"                [--reserve] [--timeout SECONDS]\n"
		"\n"
		"Boots a PVH guest (by default the built-in touch guest) on hugepage\n"
		"memory zeroed by the policy (default: hybrid), and reports the launch\n"
		"and the guest's own measurement.\n"
		"\n"
		"  --mem SIZE          guest RAM, whole pages (e.g. 4G)\n"
		"  --hugepages 2M|1G   page size (default 2M)\n"
		"  --policy FILE       zeroing policy (configs/prezero.conf, demand.conf,\n"
		"                      hybrid.conf)\n"
		"  --set S.K=V         override one policy key\n"
		"  --vcpus N           vCPUs, 1 to %d (default 1)\n"
		"  --guest ELF         a PVH ELF instead of the built-in touch guest\n"
		"  --cmdline STR       guest command line (touch guest: stride=4K|2M|1G\n"
		"                      verify=N pattern=BYTE order=down); zvmm\n"
		"                      adds vcpus=N\n"
		"  --pool PATH         guest RAM in a pool file on a hugetlbfs mount\n"
		"  --json FILE|-       write the JSON report; with '-' guest output and\n"
		"                      the summary go to stderr\n"
		"  --serial FILE       guest serial output to FILE\n"
		"  --quiet             no progress, no summary\n"
		"  --verbose           vCPU registers when the guest crashes\n"
		"  --kvm PATH          KVM device (default /dev/kvm)\n"
		"  --reserve           as root, raise the hugepage pool to fit and put\n"
		"                      the old count back at exit\n"
		"  --timeout SECONDS   stop the guest after it ran this long (from\n"
		"                      its first instruction; decimals allowed)\n"
		"\n"
		"Exit status: the guest's exit code, 2 usage, 3 missing resources,\n"
		"4 guest crash, 124 timed out, 130 interrupted, 1 other errors.\n",
		VMM_MAX_VCPUS);
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "hugepages", required_argument, NULL, 'H' },
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ "vcpus", required_argument, NULL, 'c' },
		{ "guest", required_argument, NULL, 'g' },
		{ "cmdline", required_argument, NULL, 'C' },
		{ "pool", required_argument, NULL, 'P' },
		{ "json", required_argument, NULL, 'j' },
		{ "serial", required_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "kvm", required_argument, NULL, 'k' },
		{ "reserve", no_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_parse_size("--mem", optarg, &o->mem.bytes))
				return -EINVAL;
			break;
		case 'H':
			if (cli_parse_size("--hugepages", optarg,
					   &o->mem.page_bytes))
				return -EINVAL;
			if (o->mem.page_bytes != SZ_2M &&
			    o->mem.page_bytes != SZ_1G) {
				pr_err("--hugepages %s: use 2M or 1G", optarg);
				return -EINVAL;
			}
			break;
		case 'p':
			o->policy = optarg;
			break;
		case 's':
			if (cli_add_set(&o->sets, optarg))
				return -EINVAL;
			break;
		case 'c':
			errno = 0;
			o->vcpus = (unsigned int)strtoul(optarg, &end, 10);
			if (errno || *end || optarg[0] < '1' ||
			    optarg[0] > '9' || o->vcpus > VMM_MAX_VCPUS) {
				pr_err("--vcpus '%s': give a number from 1 to %d",
				       optarg, VMM_MAX_VCPUS);
				return -EINVAL;
			}
			break;
		case 'g':
			o->guest = optarg;
			break;
		case 'C':
			o->cmdline = optarg;
			break;
		case 'P':
			o->mem.pool_path = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'S':
			o->serial = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'k':
			o->kvm = optarg;
			break;
		case 'r':
			o->reserve = true;
			break;
		case 't':
			errno = 0;
			o->timeout = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->timeout > 0 && o->timeout <= 1e7)) {
				pr_err("--timeout '%s': give seconds, more than 0 and at most 10000000 (e.g. 30 or 0.5)",
				       optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			run_usage(stdout);
			return 1;
		default:
			run_usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("run: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!o->mem.bytes) {
		pr_err("run needs --mem SIZE, e.g. --mem 2G");
		return -EINVAL;
	}
	return 0;
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

/* Checks that the KVM device can be opened before memory is taken. */
static int probe_kvm(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == ENOENT)
		pr_err("%s does not exist: the kernel needs KVM (CONFIG_KVM, kvm_intel or kvm_amd loaded), or run where virtualization is available",
		       dev);
	else
		pr_err("cannot open %s: %s (run as root or join the kvm group)",
		       dev, strerror(errno));
	return -ENODEV;
}

struct run_state {
	struct run_opts o;
	struct zero_policy pol;
	unsigned char *image;
	size_t image_size;
	char cmdline[VMM_CMDLINE_MAX + 1];
	struct zero_mem *mem;
	struct zero_engine *engine;
	struct vmm_vm *vm;
	struct vmm_devices dev;
	bool dev_init;
	struct zero_prezero_report pz;
	struct zero_hugetlb_resv resv;
	struct vmm_faults faults;
	bool faults_open;
	int engine_ready;
	int loop_sig;
	uint64_t boot_end; /* guest-physical end of boot data and image */
	uint64_t boot_scrub_bytes;
	struct zero_pool_stats st0, st1; /* engine totals at start, at exit */
	bool record_clean;
	const char *exit_action; /* what on_exit did, NULL for memfd */
	uint64_t exit_bytes;
	double exit_seconds;
	bool record_written;
	bool json_written;
	double t_ready, t_end;
	FILE *out, *serial, *json;
};

static void write_json(struct run_state *s, FILE *f, int exit_code)
{
	const char *rep = s->dev.have_report ? s->dev.report : "";
	uint64_t demand_bytes = s->st1.demand_bytes - s->st0.demand_bytes;
	uint64_t work = s->st1.scrub_bytes + s->st1.populate_bytes -
			s->st0.scrub_bytes - s->st0.populate_bytes;
	uint64_t bg_bytes = work - demand_bytes;
	double bg_seconds =
		s->pol.mode == ZERO_MODE_HYBRID ? s->st1.bg_seconds : 0;
	static const char *const keys[] = { "touched_bytes",  "verified_bytes",
					    "nonzero_bytes",  "stride",
					    "reserved_bytes", "tsc_cycles",
					    "marks_written", "marks_lost",
					    "foreign_words" };
	struct rusage ru;
	uint64_t v;

	fprintf(f,
		"{ \"version\": 1, \"mem_bytes\": %llu, \"page_bytes\": %llu, \"vcpus\": %u,\n"
		"  \"policy\": { \"mode\": \"%s\", \"backend\": \"%s\", \"workers\": %u, \"chunk_bytes\": %llu },\n"
		"  \"launch\": { \"ready_ms\": %.3f },\n"
		"  \"prezero\": { \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.3f, \"scrub_bytes\": %llu, \"populate_bytes\": %llu },\n"
		"  \"demand\": { \"faults\": %llu, \"pages\": %llu, \"scrubbed_pages\": %llu, \"bytes\": %llu, \"latency_us\": { \"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f }, \"busy_latency_us\": { \"faults\": %zu, \"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f } },\n"
		"  \"background\": { \"bytes\": %llu, \"seconds\": %.6f },\n"
		"  \"pool\": { \"file\": %s, \"record_clean\": %s, \"on_exit\": \"%s\", \"on_exit_bytes\": %llu, \"on_exit_seconds\": %.6f, \"record_written\": %s },\n"
		"  \"guest\": { \"exit_code\": %d, \"report\": %s",
		(unsigned long long)s->mem->bytes,
		(unsigned long long)s->mem->page_bytes, s->vm->nr_vcpus,
		zero_mode_name(s->pol.mode),
		zero_engine_backend_name(s->engine), s->engine->plan.nr_workers,
		(unsigned long long)s->engine->chunk,
		(s->t_ready - zvmm_start_time) * 1e3,
		(unsigned long long)(s->pz.scrub_bytes + s->pz.populate_bytes),
		s->pz.seconds, s->pz.gbps,
		(unsigned long long)s->pz.scrub_bytes,
		(unsigned long long)s->pz.populate_bytes,
		(unsigned long long)s->faults.faults,
		(unsigned long long)s->faults.pages,
		(unsigned long long)s->faults.scrubbed_pages,
		(unsigned long long)demand_bytes,
		s->faults_open ? vmm_faults_latency(&s->faults, 0.5) : 0.0,
		s->faults_open ? vmm_faults_latency(&s->faults, 0.99) : 0.0,
		s->faults_open ? vmm_faults_latency(&s->faults, 1.0) : 0.0,
		s->faults_open ? s->faults.nr_busy : 0,
		s->faults_open ? vmm_faults_busy_latency(&s->faults, 0.5) : 0.0,
		s->faults_open ? vmm_faults_busy_latency(&s->faults, 0.99) :
				 0.0,
		s->faults_open ? vmm_faults_busy_latency(&s->faults, 1.0) : 0.0,
		(unsigned long long)bg_bytes, bg_seconds,
		s->mem->pool ? "true" : "false",
		s->record_clean ? "true" : "false",
		s->exit_action ? s->exit_action : "none",
		(unsigned long long)s->exit_bytes, s->exit_seconds,
		s->record_written ? "true" : "false", exit_code,
		s->dev.have_report ? "true" : "false");
	for (unsigned int i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!vmm_report_u64(rep, keys[i], &v))
			fprintf(f, ", \"%s\": %llu", keys[i],
				(unsigned long long)v);
	if (s->dev.have_report && s->dev.touch_start)
		fprintf(f, ", \"touch_ms\": %.3f",
			(s->dev.report_time - s->dev.touch_start) * 1e3);
	if (s->dev.have_report)
		fprintf(f, ", \"report_ms\": %.3f",
			(s->dev.report_time - zvmm_start_time) * 1e3);
	/*
	 * zvmm's own footprint: hugetlb pages are not in the RSS counters,
	 * so max RSS is zvmm apart from guest memory (issue 6's overhead
	 * target is measured from it).
	 */
	if (getrusage(RUSAGE_SELF, &ru))
		memset(&ru, 0, sizeof(ru));
	fprintf(f,
		" },\n  \"io\": { \"other_pio\": %llu, \"mmio\": %llu },\n"
		"  \"process\": { \"max_rss_kib\": %ld, \"user_s\": %.3f, \"sys_s\": %.3f },\n"
		"  \"total_ms\": %.3f }\n",
		(unsigned long long)s->dev.other_pio,
		(unsigned long long)s->vm->mmio_exits, ru.ru_maxrss,
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		(s->t_end - zvmm_start_time) * 1e3);
	fflush(f);
}

static void summary(struct run_state *s, int exit_code)
{
	uint64_t touched = 0, nonzero = 0, verified = 0;
	char a[32], b[32];

	if (s->o.quiet)
		return;
	if (s->dev.have_report) {
		(void)!vmm_report_u64(s->dev.report, "touched_bytes", &touched);
		(void)!vmm_report_u64(s->dev.report, "verified_bytes",
				      &verified);
		(void)!vmm_report_u64(s->dev.report, "nonzero_bytes", &nonzero);
	}
	fprintf(s->out,
		"zvmm: %s on %s pages, %u vCPU%s, policy %s (backend %s, %u workers): ready in %.1f ms (prezero %.1f ms, %.1f GB/s)\n",
		size_format(s->mem->bytes, a, sizeof(a)),
		size_label(s->mem->page_bytes, b, sizeof(b)), s->vm->nr_vcpus,
		s->vm->nr_vcpus == 1 ? "" : "s", zero_mode_name(s->pol.mode),
		zero_engine_backend_name(s->engine), s->engine->plan.nr_workers,
		(s->t_ready - zvmm_start_time) * 1e3, s->pz.seconds * 1e3,
		s->pz.gbps);
	if (s->dev.have_report)
		fprintf(s->out,
			"zvmm: guest touched %s, verified %llu bytes, %llu non-zero; touch took %.1f ms; exit code %d\n",
			size_human(touched, a, sizeof(a)),
			(unsigned long long)verified,
			(unsigned long long)nonzero,
			(s->dev.report_time - s->dev.touch_start) * 1e3,
			exit_code);
	else
		fprintf(s->out,
			"zvmm: guest exit code %d (no ZVMM-REPORT line)\n",
			exit_code);
}

/* Everything before the VM exists; usage errors come out first. */
static int prepare(struct run_state *s)
{
	struct run_opts *o = &s->o;
	struct vmm_elf_info info;
	char err[512];
	int ret;

	if (cli_load_policy(o->policy, &o->sets, &s->pol))
		return -EINVAL;
	if (o->guest) {
		ret = read_guest(o->guest, &s->image, &s->image_size);
		if (ret) {
			pr_err("cannot read --guest %s: %s", o->guest,
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
		pr_err("%s: %s", o->guest ? o->guest : "built-in guest", err);
		return -EINVAL;
	}
	s->boot_end = info.hi > VMM_BOOT_END ? info.hi : VMM_BOOT_END;
	snprintf(s->cmdline, sizeof(s->cmdline), "%s%s",
		 o->cmdline ? o->cmdline : "",
		 o->cmdline && *o->cmdline ? " " : "");
	if (!o->cmdline || !strstr(o->cmdline, "vcpus="))
		snprintf(s->cmdline + strlen(s->cmdline),
			 sizeof(s->cmdline) - strlen(s->cmdline), "vcpus=%u",
			 o->vcpus);
	ret = probe_kvm(o->kvm);
	if (ret)
		return ret;
	if (o->reserve && !(o->mem.bytes % o->mem.page_bytes)) {
		long nr = (long)(o->mem.bytes / o->mem.page_bytes);

		ret = zero_hugetlb_reserve(o->mem.page_bytes, nr, &s->resv);
		if (ret == -EACCES) {
			pr_err("--reserve: only root may raise nr_hugepages");
			return ret;
		}
		/* -ENOMEM: the pre-flight check below says what is short. */
	}
	ret = zero_mem_preflight(&o->mem, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	return 0;
}

/* Maps page @i into the guest mapping from ZERO, or FRESH (the kernel
 * zeroes it). No userfaultfd is registered yet, so nothing faults to us. */
static int map_page_now(struct zero_mem *m, uint64_t i)
{
	enum zero_page_state s = zero_page_get(m->pages, i);

	if (s == ZP_MAPPED)
		return 0;
	if (s != ZP_ZERO && s != ZP_FRESH)
		return -EINVAL;
	if (madvise(zero_mem_guest_page(m, i), m->page_bytes,
		    MADV_POPULATE_WRITE))
		return -errno;
	return zero_page_move(m->pages, i, s, ZP_MAPPED);
}

/*
 * prezero: every page ZERO, then mapped. demand and hybrid: pages a clean
 * record proved ZERO are mapped at once (no fault later); the pages the
 * loader writes (boot structures, the image) are made zero first and
 * mapped; everything else is left to faults and background work.
 */
static int prepare_memory(struct run_state *s)
{
	struct zero_mem *m = s->mem;
	uint64_t boot_pages = (s->boot_end + m->page_bytes - 1) / m->page_bytes;
	int ret;

	if (s->pol.mode == ZERO_MODE_PREZERO) {
		ret = zero_engine_prezero(s->engine, &s->pz);
		for (uint64_t i = 0; !ret && i < m->nr_pages; i++)
			ret = map_page_now(m, i);
		return ret;
	}
	for (uint64_t i = 0; i < boot_pages && i < m->nr_pages; i++) {
		enum zero_page_state st = zero_page_get(m->pages, i);

		if (st == ZP_DIRTY || st == ZP_ZEROING) {
			ret = zero_engine_demand(s->engine, i);
			if (ret)
				return ret;
			s->boot_scrub_bytes += m->page_bytes;
		}
		ret = map_page_now(m, i);
		if (ret)
			return ret;
	}
	for (uint64_t i = boot_pages; i < m->nr_pages; i++)
		if (zero_page_get(m->pages, i) == ZP_ZERO) {
			ret = map_page_now(m, i);
			if (ret)
				return ret;
		}
	return 0;
}

/* Four cache lines of every page, spread over it, read as zero. */
static bool pool_samples_zero(const struct zero_mem *m)
{
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		const char *p = zero_mem_alias_page(m, i);

		for (uint64_t k = 0; k < 4; k++) {
			const uint64_t *l =
				(const uint64_t
					 *)(const void *)(p + ((m->page_bytes -
								64) / 3 *
								       k &
							       ~63ull));

			for (int w = 0; w < 8; w++)
				if (l[w])
					return false;
		}
	}
	return true;
}

/*
 * A pool's state record is consumed at every launch, clean or not, so no
 * record survives that a later crash could make a lie. Only a reused file
 * with a valid record starts ZERO.
 */
static int take_record(struct run_state *s)
{
	char why[512];
	bool clean;
	int ret;

	if (!s->mem->pool)
		return 0;
	ret = zero_record_take(s->mem, &clean, why, sizeof(why));
	if (ret) {
		pr_err("cannot read the pool's state record: %s",
		       strerror(-ret));
		return ret;
	}
	/*
	 * The record proves what zvmm left; it cannot see a process that
	 * wrote the file since. Samples of every page (a few lines each,
	 * microseconds in all) catch that case, and then nothing is trusted.
	 */
	if (clean && !s->mem->created && !pool_samples_zero(s->mem)) {
		clean = false;
		snprintf(
			why, sizeof(why),
			"the pool's state record is valid but the pool holds data written since");
	}
	if (clean && !s->mem->created) {
		zero_pages_reset(s->mem->pages, ZP_ZERO);
		s->record_clean = true;
	} else if (!s->mem->created && strcmp(why, "no state record") &&
		   !s->o.quiet) {
		pr_info("%s: the pool's pages are treated as dirty", why);
	}
	return 0;
}

static void on_signal(void *arg, int sig)
{
	struct run_state *s = arg;
	struct vmm_vm *vm;

	(void)sig;
	if (__atomic_load_n(&s->engine_ready, __ATOMIC_ACQUIRE))
		zero_engine_cancel(s->engine);
	vm = __atomic_load_n(&s->vm, __ATOMIC_ACQUIRE);
	if (vm)
		vmm_vm_request_stop(vm, VMM_STOP_CANCELLED, 0, "interrupted");
}

static void drain_faults(void *arg)
{
	struct run_state *s = arg;

	if (s->faults_open)
		vmm_faults_drain(&s->faults, s->engine->backend->clear);
}

static int run_loop(struct run_state *s)
{
	struct vmm_loop l = { .vm = s->vm,
			      .engine = s->engine,
			      .timeout = s->o.timeout };
	sigset_t set;
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	l.signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l.signal_fd < 0) {
		ret = -errno;
		pr_err("signalfd: %s", strerror(-ret));
		vmm_vm_request_stop(s->vm, VMM_STOP_ERROR, 0, "no signalfd");
		return ret;
	}
	if (s->faults_open)
		l.faults = &s->faults;
	ret = vmm_loop_run(&l);
	s->loop_sig = l.sig;
	close(l.signal_fd);
	return ret;
}

/* on_exit for a pool file: release, keep or scrub (then the record). */
static void apply_on_exit(struct run_state *s, int status)
{
	struct zero_prezero_report r;
	struct zero_mem *m = s->mem;
	int ret;

	(void)status;
	if (!m->pool)
		return;
	zero_engine_quiesce(s->engine);
	/* Whatever on_exit does, what the guest had is the guest's. */
	if (zero_mem_guest_exited(m))
		return;
	switch (s->pol.on_exit) {
	case ZERO_EXIT_KEEP:
		s->exit_action = "keep";
		return;
	case ZERO_EXIT_RELEASE:
		s->exit_action = "release";
		ret = -zvmm_inject("fallocate");
		if (ret)
			errno = -ret;
		if (ret ||
		    fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, (off_t)m->bytes))
			pr_warn("on_exit = release: cannot punch the pool's pages out: %s",
				strerror(errno));
		else
			zero_pages_reset(m->pages, ZP_FRESH);
		return;
	case ZERO_EXIT_SCRUB:
		s->exit_action = "scrub";
		break;
	}
	ret = zero_engine_prezero(s->engine, &r);
	s->exit_bytes = r.scrub_bytes + r.populate_bytes;
	s->exit_seconds = r.seconds;
	if (ret) {
		pr_err("on_exit = scrub %s: no state record is written, the next launch scrubs again",
		       ret == -ECANCELED ? "interrupted" : "failed");
		return;
	}
	ret = zero_record_write(m);
	if (ret)
		pr_err("on_exit = scrub: cannot write the state record: %s",
		       strerror(-ret));
	s->record_written = !ret;
}

int cmd_run(int argc, char **argv)
{
	struct vmm_sigwatch w = { .on_signal = on_signal };
	struct zero_engine_cfg ec = { 0 };
	struct run_state *s;
	struct vmm_vm *vm;
	enum vmm_stop why;
	char err[512];
	int ret, status = 0, code = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return EXIT_OTHER;
	s->o.mem.page_bytes = SZ_2M;
	s->resv = (struct zero_hugetlb_resv)ZERO_HUGETLB_RESV_INIT;
	s->o.vcpus = 1;
	s->o.kvm = "/dev/kvm";
	s->out = stdout;
	s->serial = stdout;
	ret = parse_opts(argc, argv, &s->o);
	if (ret) {
		free(s);
		return ret > 0 ? 0 : EXIT_USAGE;
	}
	if (s->o.json && !strcmp(s->o.json, "-")) {
		s->json = stdout;
		s->out = stderr;
		s->serial = stderr;
	}
	/*
	 * Signals are taken from here on (prepare() may raise the hugepage
	 * pool with --reserve, which must be given back).
	 */
	vmm_sigwatch_block(&w);
	w.arg = s;
	ret = vmm_sigwatch_start(&w);
	if (!ret)
		ret = prepare(s);
	if (!ret && vmm_sigwatch_seen(&w))
		ret = -ECANCELED;
	if (ret)
		goto out_sig;
	if (s->o.json && !s->json) {
		s->json = fopen(s->o.json, "we");
		if (!s->json) {
			pr_err("cannot write --json %s: %s", s->o.json,
			       strerror(errno));
			ret = -EINVAL;
			goto out_sig;
		}
	}
	if (s->o.serial) {
		s->serial = fopen(s->o.serial, "we");
		if (!s->serial) {
			pr_err("cannot write --serial %s: %s", s->o.serial,
			       strerror(errno));
			s->serial = stdout;
			ret = -EINVAL;
			goto out_sig;
		}
	}

	ret = zero_mem_create(&s->o.mem, &s->mem, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		goto out_sig;
	}
	ret = take_record(s);
	if (ret)
		goto out_sig;
	ec.pol = &s->pol;
	ec.mem = s->mem;
	ec.quiet = s->o.quiet;
	ret = zero_engine_create(&ec, &s->engine, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		goto out_sig;
	}
	__atomic_store_n(&s->engine_ready, 1, __ATOMIC_RELEASE);
	ret = prepare_memory(s);
	if (ret || vmm_sigwatch_seen(&w)) {
		if (vmm_sigwatch_seen(&w) || ret == -ECANCELED)
			ret = -ECANCELED;
		else
			pr_err("preparing guest memory failed: %s",
			       strerror(-ret));
		goto out_sig;
	}
	ret = vmm_vm_create(s->o.kvm, s->mem, s->o.vcpus, &vm, err,
			    sizeof(err));
	if (ret) {
		pr_err("%s", err);
		goto out_sig;
	}
	vm->verbose = s->o.verbose;
	__atomic_store_n(&s->vm, vm, __ATOMIC_RELEASE);
	vmm_devices_init(&s->dev, s->vm, s->serial);
	s->dev_init = true;
	ret = vmm_pvh_load(s->vm, s->image, s->image_size, s->cmdline, err,
			   sizeof(err));
	if (!ret) {
		struct vmm_elf_info info;

		(void)!vmm_pvh_check(s->image, s->image_size, s->mem->bytes,
				     &info, err, sizeof(err));
		ret = vmm_vcpus_reset_pvh(s->vm, info.entry, VMM_BOOT_START);
		if (ret)
			snprintf(err, sizeof(err),
				 "cannot set up the vCPUs: %s", strerror(-ret));
	}
	if (!ret && s->pol.mode != ZERO_MODE_PREZERO) {
		/* Every page not mapped by now faults to us. */
		ret = vmm_faults_open(&s->faults, s->mem, s->engine, err,
				      sizeof(err));
		s->faults_open = !ret;
	}
	if (ret) {
		pr_err("%s", err);
		goto out_sig;
	}
	/* From here the event loop's signalfd takes SIGINT and SIGTERM. */
	vmm_sigwatch_pause(&w);
	if (vmm_sigwatch_seen(&w)) {
		ret = -ECANCELED;
		goto out_sig;
	}
	zero_engine_stats(s->engine, &s->st0);
	ret = vmm_vm_start(s->vm);
	/*
	 * Background work only once the vCPU threads run: started before,
	 * the workers took the cores the launch itself needs (measured by
	 * `make bench`: hybrid ready 173 ms at 16 GiB against demand's 104).
	 */
	if (!ret && s->pol.mode == ZERO_MODE_HYBRID)
		zero_engine_start_background(s->engine, s->pol.rate_limit);
	if (!ret)
		ret = run_loop(s);
	/* No worker may clear a page under the drain below. */
	zero_engine_quiesce(s->engine);
	why = vmm_vm_wait(s->vm, drain_faults, s);
	s->t_end = zero_now();
	s->t_ready = s->vm->first_entry;
	zero_engine_stats(s->engine, &s->st1);
	switch (why) {
	case VMM_STOP_EXIT_PORT:
		code = s->vm->exit_code;
		status = code;
		break;
	case VMM_STOP_TIMEOUT:
		pr_err("the guest ran past --timeout %g s and was stopped",
		       s->o.timeout);
		status = EXIT_TIMEOUT;
		break;
	case VMM_STOP_CANCELLED:
		pr_err("interrupted by %s: the guest was stopped",
		       s->loop_sig ? strsignal(s->loop_sig) : "a signal");
		status = EXIT_INTERRUPTED;
		break;
	case VMM_STOP_ERROR:
		pr_err("%s", s->vm->why);
		status = EXIT_OTHER;
		break;
	default:
		pr_err("%s", s->vm->why);
		status = EXIT_CRASH;
		break;
	}
	if (s->dev.other_pio > 1)
		pr_warn("guest accessed ports without a device %llu times",
			(unsigned long long)s->dev.other_pio);
	/* on_exit may take a while (scrub): signals cancel it again. */
	if (!vmm_sigwatch_start(&w))
		apply_on_exit(s, status);
	summary(s, code);
	if (s->json) {
		write_json(s, s->json, code);
		s->json_written = true;
	}
	ret = 0;
out_sig:
	if (vmm_sigwatch_end(&w) && ret == -ECANCELED)
		pr_err("interrupted before the guest started; nothing is left behind");
	if (ret)
		status = ret == -ECANCELED ? EXIT_INTERRUPTED :
					     cli_exit_status(ret);
	if (s->faults_open)
		vmm_faults_close(&s->faults);
	if (s->dev_init)
		vmm_devices_fini(&s->dev);
	vmm_vm_destroy(s->vm);
	zero_engine_destroy(s->engine);
	zero_mem_destroy(s->mem);
	zero_hugetlb_release(&s->resv);
	if (s->json && s->json != stdout) {
		fclose(s->json);
		/* Written whenever the guest ran, report or not. */
		if (!s->json_written)
			unlink(s->o.json);
	}
	if (s->serial && s->serial != stdout && s->serial != stderr)
		fclose(s->serial);
	free(s->image);
	free(s);
	return status;
}
