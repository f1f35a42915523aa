// SPDX-License-Identifier: MIT
/*
 * One table of statistics (api/stats.h): docs/stats.schema.json is what
 * the table says, and every JSON that carries the statistics is valid
 * under it: zvmm_guest_stats_json() before and after a run, and `zvmm
 * run --json` under each policy. The validator is python3-jsonschema
 * (`make deps`); without it those tests are skipped, saying so. The
 * counts themselves: on a fresh pool, faults under demand populate
 * holes and scrub nothing; on a poisoned one they scrub.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/stats.h"
#include "../include/zvmm/zvmm.h"
#include "helpers.h"

#define SCHEMA "docs/stats.schema.json"
#define MNT "/tmp/zvmm-test-schema"
#define POOL MNT "/pool"
#define STATE MNT ".state"
#define BYTES (32ULL << 20)

static struct zvmm_reservation *resv;
static bool mounted;
static struct test_run r;

Test(schema, the_committed_schema_is_the_tables)
{
	json_object *want = api_stats_schema();
	json_object *have = json_object_from_file(SCHEMA);

	cr_assert_not_null(have, "cannot read %s (tests run from the tree)",
			   SCHEMA);
	cr_assert(json_object_equal(want, have),
		  "%s differs from api/stats.h's table: run `make schema`",
		  SCHEMA);
	json_object_put(want);
	json_object_put(have);
}

/* Validates @json against the schema; skips without a validator. */
static void valid(const char *json, const char *what)
{
	static const char *py =
		"import json, sys, jsonschema\n"
		"jsonschema.validate(json.load(open(sys.argv[1])),"
		" json.load(open(sys.argv[2])))\n";
	char path[] = "/tmp/zvmm-test-schema-XXXXXX", cmd[512];
	int fd, st;
	FILE *f;

	if (system("python3 -c 'import jsonschema' 2>/dev/null"))
		test_skip(TEST_NEED_TOOL,
			  "python3-jsonschema missing: make deps");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs(json, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -c '%s' %s %s 2>&1", py, path,
		 SCHEMA);
	st = system(cmd);
	unlink(path);
	cr_assert_eq(st, 0, "%s is not valid under %s (output above)", what,
		     SCHEMA);
}

static void teardown(void);

static void setup(void)
{
	int ret;

	setenv("ZVMM_STATE_DIR", STATE, 1);
	test_on_skip(teardown);
	test_need_root("hugetlbfs mount, hugepages");
	ret = zvmm_hugepages_reserve(ZVMM_PAGE_2M, 2 * BYTES / ZVMM_PAGE_2M,
				     &resv);
	if (ret)
		test_skip(TEST_NEED_HUGEPAGES, "cannot reserve 32: %s",
			  strerror(-ret));
	mkdir(MNT, 0700);
	if (mount("none", MNT, "hugetlbfs", 0, "pagesize=2M"))
		test_skip(TEST_NEED_HUGETLBFS, "cannot mount: %s",
			  strerror(errno));
	mounted = true;
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

static void teardown(void)
{
	unlink(POOL);
	if (mounted)
		umount2(MNT, MNT_DETACH);
	mounted = false;
	rmdir(MNT);
	(void)!system("rm -rf " STATE);
	zvmm_hugepages_release(resv);
	resv = NULL;
}

/* A demand run through the API, every page touched; its stats. */
static void api_run(struct zvmm_stats *s, char *json, size_t len)
{
	struct zvmm_mem mem = ZVMM_MEM_INIT(BYTES, ZVMM_PAGE_2M);
	struct zvmm_policy *pol;
	struct zvmm_guest *g;
	volatile char *ram;
	uint64_t bytes;
	void *addr;

	mem.pool_path = POOL;
	cr_assert_eq(zvmm_policy_new(&pol), 0);
	cr_assert_eq(zvmm_policy_set(pol, "zeroing.mode", "demand"), 0);
	cr_assert_eq(zvmm_policy_set(pol, "pool.on_exit", "keep"), 0);
	cr_assert_eq(zvmm_guest_open(&mem, pol, &g), 0);
	zvmm_policy_free(pol);
	cr_assert_gt(zvmm_guest_stats_json(g, json, len), 0);
	valid(json, "zvmm_guest_stats_json() after open");
	cr_assert_eq(zvmm_guest_prepare(g, 0), 0);
	cr_assert_eq(zvmm_guest_serve_thread(g, NULL, NULL), 0);
	zvmm_guest_memory(g, &addr, &bytes);
	ram = addr;
	zvmm_guest_start(g);
	for (uint64_t o = 0; o < bytes; o += ZVMM_PAGE_2M)
		(void)ram[o + 4096];
	cr_assert_eq(zvmm_guest_stop(g), 0);
	zvmm_guest_stats(g, s);
	cr_assert_gt(zvmm_guest_stats_json(g, json, len), 0);
	valid(json, "zvmm_guest_stats_json() after a run");
	cr_assert_eq(zvmm_guest_exit(g), 0);
	zvmm_guest_close(g);
}

TestSuite(schema, .init = setup, .fini = teardown, .timeout = 120);

Test(schema, a_fresh_pool_is_populated_not_scrubbed)
{
	struct zvmm_stats s;
	char json[8192];

	api_run(&s, json, sizeof(json));
	cr_assert_eq(s.fault_pages, BYTES / ZVMM_PAGE_2M, "%s", json);
	cr_assert_eq(s.fault_scrubbed_pages, 0, "%s", json);
	cr_assert_eq(s.fault_bytes, 0, "%s", json);
	cr_assert_eq(s.fault_populated_pages, BYTES / ZVMM_PAGE_2M, "%s", json);
	cr_assert_eq(s.fault_populate_bytes, BYTES, "%s", json);
	/* The same tenant's data, from outside now: every fault scrubs. */
	test_poison_file(POOL, BYTES);
	api_run(&s, json, sizeof(json));
	cr_assert_eq(s.fault_scrubbed_pages, BYTES / ZVMM_PAGE_2M, "%s", json);
	cr_assert_eq(s.fault_bytes, BYTES, "%s", json);
	cr_assert_eq(s.fault_populated_pages, 0, "%s", json);
}

Test(schema, run_json_under_every_policy, .init = setup_kvm)
{
	static const char *const modes[] = { "zeroing.mode=prezero",
					     "zeroing.mode=demand",
					     "zeroing.mode=hybrid" };

	for (unsigned int i = 0; i < 3; i++) {
		char *json;

		cr_assert_eq(
			test_run_zvmm((const char *[]){ "run", "--mem", "32M",
							"--pool", POOL, "--set",
							modes[i], "--json", "-",
							"--quiet", NULL },
				      false, &r),
			0);
		cr_assert_eq(r.status, 0, "%s: %s", modes[i], r.out);
		/* The report is the last object of the output. */
		json = strstr(r.out, "{ \"version\"");
		cr_assert_not_null(json, "%s", r.out);
		valid(json, modes[i]);
	}
}
