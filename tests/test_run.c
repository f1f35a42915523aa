// SPDX-License-Identifier: MIT
/*
 * `zvmm run` end to end: the touch guest boots with 2 MiB and 1 GiB pages
 * on 1 and 2 vCPUs and sees only zeros, also on a poisoned warm pool; the
 * same image boots under QEMU (the PVH protocol, not just our loader),
 * and QEMU on a poisoned file shows the guest does catch stale data; bad
 * ELF files, missing hugepages, a missing /dev/kvm and a guest crash each
 * get their exit status and leave the hugepage pools as they were.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/size.h"
#include "helpers.h"

static struct test_run r;
static struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
static uint64_t resv_page;
static long free_before = -1;
static char tmp[64], mnt[64], state[96];
static bool mounted;

static void teardown(void);

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/zvmm-test-run.%d", (int)getpid());
	snprintf(mnt, sizeof(mnt), "/tmp/zvmm-test-run-mnt.%d", (int)getpid());
	mkdir(tmp, 0755);
	/* Records go with the test's files, never to /var/lib/zvmm. */
	snprintf(state, sizeof(state), "%s/state", tmp);
	setenv("ZVMM_STATE_DIR", state, 1);
	test_on_skip(teardown);
}

/*
 * The tests that boot a guest: Criterion runs the suite's .init (setup())
 * first and then this, so a skip here undoes what setup() made
 * (test_on_skip()); it does not call setup() again.
 */
static void setup_kvm(void)
{
	test_need_kvm();
}

static void setup_kvm_1g(void)
{
	test_need_kvm();
	test_need_1g();
}

static void teardown(void)
{
	long nr, nfree;
	char cmd[160];

	if (mounted) {
		snprintf(cmd, sizeof(cmd), "rm -f %s/*", mnt);
		if (system(cmd)) {
			/* the umount below reports what is left */
		}
		umount2(mnt, MNT_DETACH);
	}
	rmdir(mnt);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
	if (free_before >= 0 && !zero_hugetlb_counts(resv_page, &nr, &nfree))
		test_fini_expect(nfree == free_before,
				 "free hugepages %ld, were %ld", nfree,
				 free_before);
	zero_hugetlb_release(&resv);
}

TestSuite(run, .init = setup, .fini = teardown, .timeout = 180);

static void reserve_or_skip(uint64_t page, long pages)
{
	long nr;

	resv_page = page;
	test_reserve_or_skip(page, pages, &resv);
	cr_assert_eq(zero_hugetlb_counts(page, &nr, &free_before), 0);
}

static uint64_t field(const char *key)
{
	return test_json_u64(r.out, NULL, key);
}

static void boot_and_check(const char *mem, uint64_t bytes, const char *pages,
			   const char *vcpus)
{
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){ "run", "--mem", mem,
					       "--hugepages", pages, "--vcpus",
					       vcpus, "--cmdline", "verify=8",
					       "--json", "-", "--quiet", NULL },
			     false, &r),
		     0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert_eq(field("exit_code"), 0);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_gt(field("touched_bytes"), 0);
	/* Every byte outside the boot structures and image, at the stride. */
	cr_assert_eq(field("touched_bytes") + field("reserved_bytes"), bytes,
		     "%s", r.out);
	cr_assert_eq(field("verified_bytes"),
		     field("touched_bytes") / field("stride") * 8 * 64);
	cr_assert_eq(field("vcpus"), strtoull(vcpus, NULL, 10));
	cr_assert(strstr(r.out, "\"ready_ms\": "), "%s", r.out);
}

Test(run, boots_2m_pages_1_vcpu, .init = setup_kvm)
{
	reserve_or_skip(SZ_2M, 256);
	boot_and_check("512M", 512 * SZ_1M, "2M", "1");
}

Test(run, boots_2m_pages_2_vcpus, .init = setup_kvm)
{
	reserve_or_skip(SZ_2M, 256);
	boot_and_check("512M", 512 * SZ_1M, "2M", "2");
}

Test(run, boots_1g_pages_1_vcpu, .init = setup_kvm_1g)
{
	reserve_or_skip(SZ_1G, 2);
	boot_and_check("2G", 2 * SZ_1G, "1G", "1");
}

Test(run, boots_1g_pages_2_vcpus, .init = setup_kvm_1g)
{
	reserve_or_skip(SZ_1G, 2);
	boot_and_check("2G", 2 * SZ_1G, "1G", "2");
}

static void mount_or_skip(void)
{
	test_need_root("mounting hugetlbfs");
	cr_assert_eq(mkdir(mnt, 0700), 0);
	if (mount("none", mnt, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount: %s",
			  strerror(errno));
	mounted = true;
}

/* The path that maps a reused pool into the guest: poisoned first. */
Test(run, poisoned_pool_reaches_the_guest_as_zeros, .init = setup_kvm)
{
	char pool[96];

	mount_or_skip();
	reserve_or_skip(SZ_2M, 128);
	snprintf(pool, sizeof(pool), "%s/pool", mnt);
	test_poison_file(pool, 256 * SZ_1M);
	cr_assert_eq(test_run_zvmm(
			     (const char *[]){
				     "run", "--mem", "256M", "--pool", pool,
				     "--policy", "configs/prezero.conf",
				     "--cmdline", "verify=64 stride=2M",
				     "--json", "-", "--quiet", NULL },
			     false, &r),
		     0);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
	cr_assert(strstr(r.out, "\"scrub_bytes\": 268435456"), "%s", r.out);
	cr_assert_eq(field("nonzero_bytes"), 0, "%s", r.out);
	cr_assert_eq(field("verified_bytes"), 127 * 64 * 64);
}

static bool have_qemu(void)
{
	return !system("command -v qemu-system-x86_64 >/dev/null 2>&1");
}

/* QEMU as a reference client; returns its exit status, output in r. */
static int qemu(const char *mem_opts, const char *append)
{
	char cmd[1024], elf[256];
	FILE *p;
	int st;

	snprintf(elf, sizeof(elf), "%s", test_zvmm_bin());
	*strrchr(elf, '/') = '\0';
	snprintf(
		cmd, sizeof(cmd),
		"timeout 120 qemu-system-x86_64 -M microvm,x-option-roms=off -cpu qemu64 -accel kvm -accel tcg %s -nodefaults -nographic -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel %s/guest/touch.elf -append '%s' 2>&1",
		mem_opts, elf, append);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	r.out_len = fread(r.out, 1, sizeof(r.out) - 1, p);
	r.out[r.out_len] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(run, touch_elf_boots_under_qemu)
{
	int st;

	if (!have_qemu())
		test_skip(TEST_NEED_TOOL,
			  "qemu-system-x86_64 is not installed (make deps)");
	st = qemu("-m 256M", "stride=2M verify=4");
	/* isa-debug-exit: QEMU exits (V << 1) | 1 for the guest's V = 0. */
	cr_assert_eq(st, 1, "qemu status %d: %s", st, r.out);
	cr_assert(strstr(r.out, "ZVMM-REPORT {\"vcpus\":1,"), "%s", r.out);
	cr_assert(strstr(r.out, "\"nonzero_bytes\":0,"), "%s", r.out);
}

/* The guest's check can fail: QEMU maps a poisoned file as it is. */
Test(run, guest_reports_stale_data_it_is_given)
{
	char pool[96], opts[256];
	int st;

	if (!have_qemu())
		test_skip(TEST_NEED_TOOL,
			  "qemu-system-x86_64 is not installed (make deps)");
	mount_or_skip();
	reserve_or_skip(SZ_2M, 128);
	snprintf(pool, sizeof(pool), "%s/qemu", mnt);
	test_poison_file(pool, 256 * SZ_1M);
	snprintf(
		opts, sizeof(opts),
		"-m 256M -object memory-backend-file,id=m0,size=256M,mem-path=%s,share=on -machine memory-backend=m0",
		pool);
	st = qemu(opts, "stride=2M verify=1");
	cr_assert_eq(st, (10 << 1) | 1, "qemu status %d: %s", st, r.out);
	cr_assert(strstr(r.out, "ZVMM-REPORT"), "%s", r.out);
	cr_assert_null(strstr(r.out, "\"nonzero_bytes\":0,"), "%s", r.out);
}

/* Bad ELF files: written from touch.elf with one thing broken. */
static unsigned char *load_touch(size_t *size)
{
	char path[256];
	struct stat st;
	unsigned char *b;
	int fd;

	snprintf(path, sizeof(path), "%s", test_zvmm_bin());
	*strrchr(path, '/') = '\0';
	strcat(path, "/guest/touch.elf");
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size);
	cr_assert_eq(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return b;
}

static void bad_guest(const unsigned char *b, size_t size, const char *says)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/bad.elf", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, size), (ssize_t)size);
	close(fd);
	cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem", "64M",
						     "--guest", path, NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 2, "%s: status %d: %s", says, r.status, r.out);
	cr_assert(strstr(r.out, says), "want '%s': %s", says, r.out);
}

Test(run, bad_elf_files_are_usage_errors)
{
	size_t size;
	unsigned char *b = load_touch(&size), *c = malloc(size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)c;
	Elf64_Phdr *ph;
	long nr2, free2;

	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr2, &free2), 0);
	bad_guest((const unsigned char *)"#!/bin/sh\necho hi\n", 18,
		  "not an ELF file");
	memcpy(c, b, size);
	c[EI_CLASS] = 7;
	bad_guest(c, size, "unknown ELF class 7");
	memcpy(c, b, size);
	eh->e_machine = EM_AARCH64;
	bad_guest(c, size, "not x86");
	bad_guest(b, 40, "truncated ELF");
	bad_guest(b, 0x1100, "truncated ELF: segment");

	/* No PVH note: the note's type changed. */
	memcpy(c, b, size);
	ph = (Elf64_Phdr *)(c + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE)
			c[ph[i].p_offset + 8] = 17;
	bad_guest(c, size, "no PVH entry note");

	/* A segment outside RAM, one over the boot structures. */
	memcpy(c, b, size);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W))
			ph[i].p_paddr = 1ull << 40;
	bad_guest(c, size, "outside guest RAM");
	memcpy(c, b, size);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
			ph[i].p_paddr = 0x1800;
	bad_guest(c, size, "overlaps the boot structures");
	free(b);
	free(c);
	/* All refused before any memory was taken. */
	cr_assert_eq(zero_hugetlb_counts(SZ_2M, &nr2, &free2), 0);
}

Test(run, too_few_hugepages_is_exit_3_before_allocating)
{
	long nr, nfree, nr2, free2;

	test_need_1g();
	cr_assert_eq(zero_hugetlb_counts(SZ_1G, &nr, &nfree), 0);
	cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem", "64G",
						     "--hugepages", "1G",
						     NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 3, "%s", r.out);
	cr_assert(strstr(r.out, "needs 64 free 1 GiB hugepages"), "%s", r.out);
	cr_assert(strstr(r.out, "nr_hugepages"), "%s", r.out);
	cr_assert_eq(zero_hugetlb_counts(SZ_1G, &nr2, &free2), 0);
	cr_assert_eq(nr2, nr);
	cr_assert_eq(free2, nfree);
	if (nfree < 2) {
		cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem",
							     "2G",
							     "--hugepages",
							     "1G", NULL },
					   false, &r),
			     0);
		cr_assert_eq(r.status, 3, "%s", r.out);
		cr_assert(strstr(r.out, "echo "), "%s", r.out);
	}
}

/*
 * A usage error whatever the machine lacks: the size is wrong before
 * /dev/kvm, a 1 GiB pool or free hugepages are looked for.
 */
Test(run, mem_not_whole_pages)
{
	cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem", "1536M",
						     "--hugepages", "1G",
						     "--kvm",
						     "/nonexistent/kvm", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "not a multiple of the 1 GiB page size"), "%s",
		  r.out);
	cr_assert_eq(
		test_run_zvmm((const char *[]){ "run", "--mem", "3M", NULL },
			      false, &r),
		0);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "not a multiple of the 2 MiB page size"), "%s",
		  r.out);
}

Test(run, missing_kvm_device_is_reported)
{
	reserve_or_skip(SZ_2M, 32);
	cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem", "64M",
						     "--kvm",
						     "/nonexistent/kvm", NULL },
				   false, &r),
		     0);
	cr_assert_eq(r.status, 3, "%s", r.out);
	cr_assert(strstr(r.out, "/nonexistent/kvm does not exist"), "%s",
		  r.out);
	/* What would help: a module, or, without svm/vmx, nothing here. */
	cr_assert(strstr(r.out, "CONFIG_KVM") ||
			  strstr(r.out, "hardware virtualization"),
		  "%s", r.out);
}

Test(run, triple_fault_is_exit_4_with_registers, .init = setup_kvm)
{
	reserve_or_skip(SZ_2M, 32);
	cr_assert_eq(
		test_run_zvmm((const char *[]){ "run", "--mem", "64M",
						"--cmdline", "fault=triple",
						"--verbose", "--quiet", NULL },
			      false, &r),
		0);
	cr_assert_eq(r.status, 4, "%s", r.out);
	/*
	 * KVM reports KVM_EXIT_SHUTDOWN; PVM's instruction emulator (our
	 * machines, DESIGN.md 7) gives up on the faulting delivery first and
	 * reports an emulation failure. Both are guest crashes.
	 */
	cr_assert(strstr(r.out, "triple-faulted") ||
			  strstr(r.out, "emulation failure"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "rip "), "no registers: %s", r.out);
}

/* launch.phases_ms: every phase there, and together they are ready_ms. */
static void phases_add_up(const char *json)
{
	static const char *const phases[] = {
		"options", "memory",	   "record",	"engine", "prepare",
		"kvm_vm",  "kvm_memslots", "kvm_vcpus", "loader", "start"
	};
	const char *p = strstr(json, "\"phases_ms\": {");
	double ready, sum = 0;

	cr_assert_not_null(p, "no launch.phases_ms: %s", json);
	ready = strtod(strstr(json, "\"ready_ms\": ") + 12, NULL);
	for (unsigned int k = 0; k < sizeof(phases) / sizeof(phases[0]); k++) {
		char key[32];
		const char *v;
		double ms;

		snprintf(key, sizeof(key), "\"%s\": ", phases[k]);
		v = strstr(p, key);
		cr_assert_not_null(v, "no phase %s: %s", phases[k], json);
		ms = strtod(v + strlen(key), NULL);
		cr_assert_geq(ms, 0, "phase %s is %f", phases[k], ms);
		sum += ms;
	}
	cr_assert(sum <= ready + 0.01 && sum >= ready * 0.9,
		  "phases add up to %.3f ms of %.3f: %s", sum, ready, json);
}

/*
 * --json FILE is written whenever the guest ran: a crash (no report) and
 * a guest that fails through the exit port both leave a report whose
 * launch figures and exit code are there and whose guest.report is
 * false or true as it was.
 */
Test(run, json_file_written_when_the_guest_fails, .init = setup_kvm)
{
	static const char *const cmdlines[] = { "fault=triple", "exit=7" };
	char json[64], *text;
	size_t len;

	reserve_or_skip(SZ_2M, 32);
	snprintf(json, sizeof(json), "/tmp/zvmm-test-run.%d.json",
		 (int)getpid());
	for (unsigned int i = 0; i < 2; i++) {
		FILE *f;

		unlink(json);
		cr_assert_eq(test_run_zvmm((const char *[]){ "run", "--mem",
							     "64M", "--cmdline",
							     cmdlines[i],
							     "--json", json,
							     "--quiet", NULL },
					   false, &r),
			     0);
		cr_assert_eq(r.status, i ? 7 : 4, "%s", r.out);
		f = fopen(json, "r");
		cr_assert_not_null(f, "%s: no JSON report after status %d",
				   cmdlines[i], r.status);
		text = NULL;
		len = 0;
		cr_assert_gt(getdelim(&text, &len, '\0', f), 0);
		fclose(f);
		cr_assert(strstr(text, "\"ready_ms\": "), "%s", text);
		if (!i)
			phases_add_up(text);
		cr_assert(strstr(text,
				 i ? "\"report\": true" : "\"report\": false"),
			  "%s", text);
		free(text);
	}
	unlink(json);
}
