// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../zeroing/backend.h"
#include "../zeroing/policy.h"
#include "helpers.h"

static char path[64];
static char err[512];
static struct zero_policy p;

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/zvmm-test-policy.%d.conf",
		 (int)getpid());
	zero_policy_defaults(&p);
}

static void teardown(void)
{
	unlink(path);
}

static int load_text(const char *text)
{
	test_write_text(path, text);
	return zero_policy_load(&p, path, err, sizeof(err));
}

TestSuite(policy, .init = setup, .fini = teardown);

Test(policy, defaults_are_hybrid_auto)
{
	cr_assert_eq(p.mode, ZERO_MODE_HYBRID);
	cr_assert_str_eq(p.backend, "auto");
	cr_assert_eq(p.workers, 0);
	cr_assert_eq(p.chunk, 0);
	cr_assert_eq(p.rate_limit, 0);
	cr_assert_eq(p.fresh, ZERO_FRESH_TRUST);
	cr_assert_eq(p.on_exit, ZERO_EXIT_RELEASE);
	cr_assert_eq(p.record, ZERO_RECORD_TRUST);
	cr_assert_eq(p.numa, ZERO_NUMA_LOCAL);
	cr_assert_eq(p.nodes, 0);
	cr_assert_eq(p.pin, ZERO_PIN_CPU);
	cr_assert_str_eq(p.state_dir, "");
	cr_assert_str_eq(p.profile, "");
}

Test(policy, every_key_good_values)
{
	cr_assert_eq(
		load_text("[zeroing]\nmode = demand\nbackend = clzero\n"
			  "workers = 12\nchunk = 2M\nrate_limit = 8G ; per s\n"
			  "[pool]\nfresh = scrub\non_exit = keep\n"
			  "record = verify\n"
			  "[numa]\npolicy = bind\nnodes = 0,2-3\npin = none\n"),
		0, "%s", err);
	cr_assert_eq(p.pin, ZERO_PIN_NONE);
	cr_assert_eq(load_text("[pool]\nstate_dir = /srv/zvmm/state\n"
			       "[zeroing]\nprofile = /srv/zvmm/p.ini\n"),
		     0, "%s", err);
	cr_assert_str_eq(p.state_dir, "/srv/zvmm/state");
	cr_assert_str_eq(p.profile, "/srv/zvmm/p.ini");
	cr_assert_eq(load_text("[pool]\nstate_dir = default\n"), 0, "%s", err);
	cr_assert_str_eq(p.state_dir, "");
	cr_assert_eq(p.mode, ZERO_MODE_DEMAND);
	cr_assert_str_eq(p.backend, "clzero");
	cr_assert_eq(p.workers, 12);
	cr_assert_eq(p.chunk, SZ_2M);
	cr_assert_eq(p.rate_limit, 8 * SZ_1G);
	cr_assert_eq(p.fresh, ZERO_FRESH_SCRUB);
	cr_assert_eq(p.on_exit, ZERO_EXIT_KEEP);
	cr_assert_eq(p.record, ZERO_RECORD_VERIFY);
	cr_assert_eq(p.numa, ZERO_NUMA_BIND);
	cr_assert_eq(p.nodes, 0xdull);
	cr_assert_eq(load_text("[zeroing]\nworkers = auto\nchunk = auto\n"
			       "rate_limit = 0\nmode = prezero\n"
			       "[pool]\non_exit = scrub\n[numa]\nnodes = all\n"
			       "policy = interleave\n"),
		     0, "%s", err);
	cr_assert_eq(p.workers, 0);
	cr_assert_eq(p.chunk, 0);
	cr_assert_eq(p.mode, ZERO_MODE_PREZERO);
	cr_assert_eq(p.on_exit, ZERO_EXIT_SCRUB);
	cr_assert_eq(p.numa, ZERO_NUMA_INTERLEAVE);
	cr_assert_eq(p.nodes, 0);
}

Test(policy, bad_values_name_file_and_line)
{
	static const struct {
		const char *text;
		int line;
		const char *says;
	} bad[] = {
		{ "[zeroing]\nmode = fast\n", 2,
		  "expected prezero, demand or hybrid" },
		{ "[zeroing]\n\nbackend = warp\n", 3, "bad value 'warp'" },
		{ "[zeroing]\nworkers = 0\n", 2, "from 1 to 1024" },
		{ "[zeroing]\nworkers = 1025\n", 2, "from 1 to 1024" },
		{ "[zeroing]\nworkers = -3\n", 2, "from 1 to 1024" },
		{ "[zeroing]\nchunk = 1K\n", 2, "out of range" },
		{ "[zeroing]\nchunk = 2G\n", 2, "out of range" },
		{ "[zeroing]\nchunk = 6000\n", 2, "multiple of 4 KiB" },
		{ "[zeroing]\nchunk = 12Q\n", 2, "invalid size '12Q'" },
		{ "[zeroing]\nchunk = 4097K\n", 2, "multiple of 4 KiB" },
		{ "[zeroing]\nrate_limit = -1\n", 2, "invalid size '-1'" },
		{ "[pool]\nfresh = maybe\n", 2, "expected trust or scrub" },
		{ "[pool]\non_exit = burn\n", 2,
		  "expected release, keep or scrub" },
		{ "[pool]\nrecord = maybe\n", 2,
		  "expected trust, verify or never" },
		{ "[numa]\npolicy = near\n", 2,
		  "expected local, interleave or bind" },
		{ "[numa]\nnodes = 3-1\n", 2, "ranges ascending" },
		{ "[numa]\npin = node\n", 2, "expected cpu or none" },
		{ "[pool]\nstate_dir = state\n", 2, "an absolute path" },
		{ "[zeroing]\nprofile = ./p.ini\n", 2, "an absolute path" },
		{ "[pool]\nstate_dir = /a;b\n", 2, "without blanks" },
		{ "[numa]\nnodes = 64\n", 2, "nodes are 0 to 63" },
		{ "[numa]\nnodes = 0,,1\n", 2, "expected 'all'" },
		{ "[zeroing]\nmode = demand\nspeed = 11\n", 3,
		  "unknown key 'speed' in [zeroing]" },
		{ "[pool]\nsize = 1G\n", 2, "unknown key 'size' in [pool]" },
		{ "[numa]\nzone = 1\n", 2, "unknown key 'zone' in [numa]" },
		{ "[turbo]\nmode = demand\n", 2, "unknown section [turbo]" },
		{ "mode = demand\n", 1, "unknown section []" },
		{ "[zeroing]\nthis is not ini\n", 2, "not an INI line" },
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[96];

		zero_policy_defaults(&p);
		cr_assert_eq(load_text(bad[i].text), -EINVAL, "%s",
			     bad[i].text);
		snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
		cr_assert(strstr(err, want) == err, "want '%s', got '%s'", want,
			  err);
		cr_assert(strstr(err, bad[i].says), "want '%s', got '%s'",
			  bad[i].says, err);
		/* Nothing half-applied. */
		cr_assert_eq(p.mode, ZERO_MODE_HYBRID, "%s", bad[i].text);
	}
}

/* Every backend name of every architecture: the one list. */
Test(policy, backend_is_any_known_name)
{
	const struct zero_backend_name *b;
	char set[64], bad[512];

	cr_assert_eq(zero_policy_set(&p, "zeroing.backend=warp", bad,
				     sizeof(bad)),
		     -EINVAL);
	cr_assert(strstr(bad, "expected auto, "), "%s", bad);
	for (unsigned int i = 0; (b = zero_backend_name_at(i)); i++) {
		cr_assert(strstr(bad, b->name), "'%s' not offered: %s", b->name,
			  bad);
		snprintf(set, sizeof(set), "zeroing.backend=%s", b->name);
		cr_assert_eq(zero_policy_set(&p, set, err, sizeof(err)), 0,
			     "%s", err);
		cr_assert_str_eq(p.backend, b->name);
	}
	cr_assert_eq(zero_policy_set(&p, "zeroing.backend=auto", err,
				     sizeof(err)),
		     0);
	cr_assert_str_eq(p.backend, "auto");
}

Test(policy, first_error_is_reported)
{
	cr_assert_eq(load_text("[zeroing]\nmode = x\nworkers = y\n"), -EINVAL);
	cr_assert(strstr(err, ":2: bad value 'x'"), "%s", err);
}

Test(policy, missing_file)
{
	cr_assert_eq(zero_policy_load(&p, "/nonexistent/zvmm.conf", err,
				      sizeof(err)),
		     -ENOENT);
	cr_assert(strstr(err, "/nonexistent/zvmm.conf"), "%s", err);
}

Test(policy, set_overrides)
{
	cr_assert_eq(zero_policy_set(&p, "zeroing.mode=demand", err,
				     sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(p.mode, ZERO_MODE_DEMAND);
	cr_assert_eq(zero_policy_set(&p, "zeroing.chunk=256K", err,
				     sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(p.chunk, 256 << 10);
	cr_assert_eq(zero_policy_set(&p, "pool.on_exit=scrub", err,
				     sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(p.on_exit, ZERO_EXIT_SCRUB);
	cr_assert_eq(zero_policy_set(&p, "numa.nodes=1", err, sizeof(err)), 0);
	cr_assert_eq(p.nodes, 2);

	cr_assert_eq(zero_policy_set(&p, "zeroing.mode=warp", err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "policy key zeroing.mode=warp: bad value 'warp'"),
		  "%s", err);
	cr_assert_eq(p.mode, ZERO_MODE_DEMAND, "a failed --set changed it");
	cr_assert_eq(zero_policy_set(&p, "mode=demand", err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "section.key=value"), "%s", err);
	cr_assert_eq(zero_policy_set(&p, "zeroing.speed=1", err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "unknown key 'speed'"), "%s", err);
	cr_assert_eq(zero_policy_set(&p, "gpu.mode=1", err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "unknown section [gpu]"), "%s", err);
}

Test(policy, set_takes_the_whole_value)
{
	char a[300];

	/* 255 bytes used to end in "...01": --set took workers = 1. */
	snprintf(a, sizeof(a), "zeroing.workers=%0238d%s", 1,
		 "99999999999999999999");
	cr_assert_eq(zero_policy_set(&p, a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "bad value '000"), "%s", err);
	cr_assert_eq(p.workers, 0);
	snprintf(a, sizeof(a), "zeroing.workers=%0250d", 12);
	cr_assert_eq(zero_policy_set(&p, a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.workers, 12);
}

Test(policy, long_line_is_an_error)
{
	char text[512];

	/* libinih would read the tail of this comment as a key. */
	snprintf(text, sizeof(text), "[zeroing]\n; %0250d mode = demand\n", 0);
	cr_assert_eq(load_text(text), -EINVAL);
	cr_assert(strstr(err, ":2: line too long"), "%s", err);
	cr_assert_eq(p.mode, ZERO_MODE_HYBRID);
}

Test(policy, directory_is_an_error)
{
	cr_assert_eq(zero_policy_load(&p, "configs", err, sizeof(err)),
		     -EISDIR);
	cr_assert(strstr(err, "cannot read policy file configs"), "%s", err);
}

Test(policy, shipped_configs_load)
{
	static const struct {
		const char *file;
		enum zero_mode mode;
	} cfg[] = {
		{ "configs/prezero.conf", ZERO_MODE_PREZERO },
		{ "configs/demand.conf", ZERO_MODE_DEMAND },
		{ "configs/hybrid.conf", ZERO_MODE_HYBRID },
	};

	for (unsigned int i = 0; i < 3; i++) {
		zero_policy_defaults(&p);
		p.mode = (enum zero_mode)((cfg[i].mode + 1) % 3);
		cr_assert_eq(zero_policy_load(&p, cfg[i].file, err,
					      sizeof(err)),
			     0, "%s", err);
		cr_assert_eq(p.mode, cfg[i].mode, "%s", cfg[i].file);
	}
}

Test(policy, print_round_trips)
{
	struct zero_policy q;
	FILE *f;

	cr_assert_eq(
		load_text(
			"[zeroing]\nmode = demand\nchunk = 8M\n"
			"rate_limit = 4G\nworkers = 3\n[numa]\nnodes = 1-2\n"),
		0, "%s", err);
	f = fopen(path, "w");
	zero_policy_print(&p, f);
	fclose(f);
	zero_policy_defaults(&q);
	cr_assert_eq(zero_policy_load(&q, path, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(memcmp(&p, &q, sizeof(p)), 0);
}
