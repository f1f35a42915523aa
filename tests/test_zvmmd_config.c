// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/size.h"
#include "../service/config.h"
#include "helpers.h"

static char path[64];
static char err[512];
static struct zvmmd_config c;

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/zvmm-test-zvmmd.%d.conf",
		 (int)getpid());
	zvmmd_config_defaults(&c);
}

static void teardown(void)
{
	unlink(path);
}

static void write_text(const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fwrite(text, 1, len, f), len, "cannot write %s", path);
	cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

static int load_text(const char *text)
{
	write_text(text, strlen(text));
	return zvmmd_config_load(path, &c, err, sizeof(err));
}

/* A pool that passes the checks, for the tests of the other sections. */
#define POOL "[pages.2M]\nhigh = 4G\n"

TestSuite(zvmmd_config, .init = setup, .fini = teardown);

Test(zvmmd_config, defaults)
{
	cr_assert_str_eq(c.socket, "/run/zvmm/zvmmd.sock");
	cr_assert_str_eq(c.dir, "/run/zvmm/chunks");
	cr_assert_str_eq(c.group, "zvmm");
	for (int i = 0; i < ZVMMD_NR_POOLS; i++) {
		cr_assert_not(c.pool[i].on);
		cr_assert_eq(c.pool[i].chunk_bytes, SZ_1G);
		cr_assert_eq(c.pool[i].low, 0);
		cr_assert_eq(c.pool[i].high, 0);
		cr_assert_eq(c.pool[i].max, 0);
		cr_assert_eq(c.pool[i].node, -1);
	}
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].page_bytes, SZ_2M);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].page_bytes, SZ_1G);
	cr_assert_eq(c.root_reserve, 0);
	cr_assert_eq(c.scrub_rate, 0);
	cr_assert_str_eq(c.scrub_cpus, "");
	cr_assert(c.scrub_idle);
	cr_assert_eq(c.recheck_ms, 1000);
}

Test(zvmmd_config, dist_file_loads)
{
	FILE *f = fopen("dist/zvmmd.conf", "r");
	char text[8192];
	size_t n;

	/* Loaded from a copy: the checkout may be another user's than the
	 * one running the tests, and the file would then be refused. */
	cr_assert_not_null(f);
	n = fread(text, 1, sizeof(text), f);
	fclose(f);
	cr_assert(n > 0 && n < sizeof(text));
	write_text(text, n);
	memset(&c, 0x5a, sizeof(c));
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_str_eq(c.socket, "/run/zvmm/zvmmd.sock");
	cr_assert_str_eq(c.dir, "/run/zvmm/chunks");
	cr_assert_str_eq(c.group, "zvmm");
	cr_assert_eq(c.root_reserve, SZ_1G);
	cr_assert_not(c.root_reserve_pct);
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_2M), SZ_1G);
	cr_assert(c.pool[ZVMMD_POOL_2M].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].page_bytes, SZ_2M);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].chunk_bytes, 256 * SZ_1M);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].low, 2 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].high, 4 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].max, 16 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].node, -1);
	cr_assert_not(c.pool[ZVMMD_POOL_1G].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].chunk_bytes, SZ_1G);
	cr_assert_eq(c.scrub_rate, 0);
	cr_assert_str_eq(c.scrub_cpus, "");
	cr_assert(c.scrub_idle);
	cr_assert_eq(c.recheck_ms, 1000);
}

/* The commented [pages.1G] of the dist file is a working section. */
Test(zvmmd_config, dist_file_1g_section_loads)
{
	FILE *f = fopen("dist/zvmmd.conf", "r");
	char text[8192], *p;
	size_t n;

	cr_assert_not_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strstr(text, ";[pages.1G]");
	cr_assert_not_null(p);
	for (; *p == ';'; p = strchr(p, '\n') + 1)
		memmove(p, p + 1, strlen(p + 1) + 1);
	cr_assert_eq(zvmmd_config_load_string("dist", text, strlen(text), &c,
					      err, sizeof(err)),
		     0, "%s", err);
	cr_assert(c.pool[ZVMMD_POOL_1G].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].chunk_bytes, SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].high, 8 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].max, 64 * SZ_1G);
}

/* So is its commented two-node example, besides the [pages.2M] on. */
Test(zvmmd_config, dist_file_two_node_example_loads)
{
	FILE *f = fopen("dist/zvmmd.conf", "r");
	char text[8192], *p;
	size_t n;

	cr_assert_not_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strstr(text, ";[pages.2M.node0]");
	cr_assert_not_null(p);
	for (; *p == ';'; p = strchr(p, '\n') + 1)
		memmove(p, p + 1, strlen(p + 1) + 1);
	cr_assert_eq(zvmmd_config_load_string("dist", text, strlen(text), &c,
					      err, sizeof(err)),
		     0, "%s", err);
	cr_assert(c.pool[ZVMMD_POOL_2M].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].node, -1);
	for (int node = 0; node < 2; node++) {
		const struct zvmmd_pool_cfg *pc =
			&c.pool[zvmmd_pool_index(ZVMMD_PAGE_2M, node)];

		cr_assert(pc->on);
		cr_assert_eq(pc->node, node);
		cr_assert_eq(pc->chunk_bytes, 256 * SZ_1M);
		cr_assert_eq(pc->low, 2 * SZ_1G);
		cr_assert_eq(pc->high, 4 * SZ_1G);
		cr_assert_eq(pc->max, 16 * SZ_1G);
	}
	cr_assert_not(c.pool[zvmmd_pool_index(ZVMMD_PAGE_2M, 2)].on);
}

Test(zvmmd_config, every_key_good_values)
{
	cr_assert_eq(
		load_text(
			"[service]\nsocket = /run/z.sock\ndir = /srv/zvmm\n"
			"group = kvm_users-2\n"
			"[pages.2M]\nchunk = 512M ; a comment\nlow = 1G\n"
			"high = 3G\nmax = 8GiB\nnode = 1\n"
			"[pages.1G]\nchunk = 2G\nlow = 0\nhigh = 0\n"
			"max = 64G\nnode = any\n"
			"[scrub]\nrate = 4G\ncpus = 0-3,6\npriority = normal\n"
			"[quarantine]\nrecheck = 10\n"),
		0, "%s", err);
	cr_assert_str_eq(c.socket, "/run/z.sock");
	cr_assert_str_eq(c.dir, "/srv/zvmm");
	cr_assert_str_eq(c.group, "kvm_users-2");
	cr_assert(c.pool[0].on);
	cr_assert_eq(c.pool[0].chunk_bytes, 512 * SZ_1M);
	cr_assert_eq(c.pool[0].low, SZ_1G);
	cr_assert_eq(c.pool[0].high, 3 * SZ_1G);
	cr_assert_eq(c.pool[0].max, 8 * SZ_1G);
	cr_assert_eq(c.pool[0].node, 1);
	cr_assert(c.pool[ZVMMD_POOL_1G].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].page_bytes, SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].chunk_bytes, 2 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].high, 0);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].max, 64 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].node, -1);
	cr_assert_eq(c.scrub_rate, 4 * SZ_1G);
	cr_assert_str_eq(c.scrub_cpus, "0-3,6");
	cr_assert_not(c.scrub_idle);
	cr_assert_eq(c.recheck_ms, 10);

	cr_assert_eq(load_text(POOL "[scrub]\ncpus =\npriority = idle\n"
				    "[quarantine]\nrecheck = 60000\n"),
		     0, "%s", err);
	cr_assert_str_eq(c.scrub_cpus, "");
	cr_assert(c.scrub_idle);
	cr_assert_eq(c.recheck_ms, 60000);
	cr_assert_eq(load_text(POOL "[scrub]\ncpus = 7\n"), 0, "%s", err);
	cr_assert_str_eq(c.scrub_cpus, "7");
	cr_assert_eq(load_text(POOL "[scrub]\ncpus = any\n"), 0, "%s", err);
	cr_assert_str_eq(c.scrub_cpus, "");
}

/* max is high's unless set; a pool kept empty leases empty chunks. */
Test(zvmmd_config, max_defaults_to_high)
{
	cr_assert_eq(load_text("[pages.1G]\nhigh = 8G\n"), 0, "%s", err);
	cr_assert(c.pool[ZVMMD_POOL_1G].on);
	cr_assert_not(c.pool[ZVMMD_POOL_2M].on);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].max, 8 * SZ_1G);
	cr_assert_eq(load_text("[pages.2M]\nmax = 2G\n"), 0, "%s", err);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].high, 0);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].max, 2 * SZ_1G);
}

/* Later values win, whole: a shorter path leaves no tail. */
Test(zvmmd_config, last_value_wins)
{
	struct zvmmd_config d;

	cr_assert_eq(load_text("[service]\nsocket = /run/zvmm/long-name.sock\n"
			       "socket = /s\n" POOL "high = 2G\n"
			       "[pages.2M]\nlow = 1G\n"),
		     0, "%s", err);
	cr_assert_str_eq(c.socket, "/s");
	cr_assert_eq(c.pool[0].high, 2 * SZ_1G);
	cr_assert_eq(c.pool[0].low, SZ_1G);
	zvmmd_config_defaults(&d);
	memset(d.socket, 0, sizeof(d.socket));
	memcpy(d.socket, "/s", 2);
	d.pool[0].on = true;
	d.pool[0].low = SZ_1G;
	d.pool[0].high = d.pool[0].max = 2 * SZ_1G;
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0);
}

Test(zvmmd_config, bad_values_name_file_and_line)
{
	static const struct {
		const char *text;
		int line;
		const char *says;
	} bad[] = {
		{ "[service]\nsocket = run/z.sock\n", 2,
		  "bad value 'run/z.sock': expected an absolute path" },
		{ "[service]\nsocket = /run/a b\n", 2, "without blanks" },
		{ "[service]\nsocket = /run/a#b\n", 2, "without blanks" },
		{ "[service]\nsocket = /run/a;b\n", 2, "without blanks" },
		{ "[service]\ndir = ./chunks\n", 2, "an absolute path" },
		{ "[service]\n\ngroup = 1kvm\n", 3,
		  "bad value '1kvm': expected a group name" },
		{ "[service]\ngroup = -kvm\n", 2, "expected a group name" },
		{ "[service]\ngroup = kv.m\n", 2, "expected a group name" },
		{ "[service]\ngroup =\n", 2, "expected a group name" },
		{ "[service]\ngroup = abcdefghijklmnopqrstuvwxyz0123456\n", 2,
		  "1 to 31 letters" },
		{ "[service]\nuser_connections = 0\n", 2,
		  "expected a number of connections from 1 to 4032" },
		{ "[service]\nuser_connections = 4033\n", 2,
		  "expected a number of connections from 1 to 4032" },
		{ "[service]\nuser_share = 0%\n", 2,
		  "expected a percentage from 1 to 100" },
		{ "[service]\nuser_share = 101%\n", 2,
		  "expected a percentage from 1 to 100" },
		{ "[service]\nuser_share = 0\n", 2, "is zero" },
		{ "[service]\nuser_share = 50\n", 2,
		  "'50' is out of range: give 2 MiB to" },
		{ "[service]\nidle = 0\n", 2,
		  "expected a number of seconds (10 or 10s) from 1 to 3600" },
		{ "[service]\nidle = 10m\n", 2,
		  "expected a number of seconds" },
		{ "[service]\nuser = zvmm\n", 2,
		  "unknown key 'user' in [service]: expected socket, dir, group, user_connections, user_share, root_reserve or idle" },
		{ "[service]\nroot_reserve = 100%\n", 2,
		  "expected a percentage from 1 to 99" },
		{ "[service]\nroot_reserve = 0%\n", 2,
		  "expected a percentage from 1 to 99" },
		{ "[service]\nroot_reserve = 1M\n", 2,
		  "'1M' is out of range: give 2 MiB to" },
		{ "[service]\nroot_reserve = 2\n", 2, "out of range" },
		{ "[service]\nroot_reserve = -1\n", 2, "invalid size '-1'" },
		{ "[pages.2M]\nchunk = 3M\n", 2,
		  "chunk '3M' is not a multiple of the 2M page: give a multiple of 2M" },
		{ "[pages.1G]\nchunk = 1536M\n", 2,
		  "chunk '1536M' is not a multiple of the 1G page" },
		{ "[pages.2M]\nchunk = 1M\n", 2,
		  "'1M' is out of range: give 2 MiB to 1024 TiB" },
		{ "[pages.2M]\nchunk = 0\n", 2, "size '0' is zero" },
		{ "[pages.2M]\nchunk = 12Q\n", 2, "invalid size '12Q'" },
		{ "[pages.2M]\nlow = -1\n", 2, "invalid size '-1'" },
		{ "[pages.2M]\nhigh = 2P\n", 2, "invalid size '2P'" },
		{ "[pages.2M]\nhigh = 2048T\n", 2, "out of range" },
		{ "[pages.2M]\nmax = 0\n", 2, "size '0' is zero" },
		{ "[pages.2M]\nnode = -1\n", 2,
		  "bad value '-1': expected 'any' or a node number from 0 to 63" },
		{ "[pages.2M]\nnode = 64\n", 2, "from 0 to 63" },
		{ "[pages.2M]\nnode = 1x\n", 2, "from 0 to 63" },
		{ "[pages.2M]\nsize = 1G\n", 2,
		  "unknown key 'size' in [pages.2M]: expected chunk, low, high, max or node" },
		{ "[pages.4M]\nhigh = 4G\n", 2,
		  "unknown page size [pages.4M]: expected [pages.2M] or [pages.1G]" },
		{ "[pages.2m]\nhigh = 4G\n", 2,
		  "unknown page size [pages.2m]" },
		{ "[scrub]\nrate = fast\n", 2, "invalid size 'fast'" },
		{ "[scrub]\ncpus = 3-1\n", 2, "ranges ascending" },
		{ "[scrub]\ncpus = 1024\n", 2, "CPUs are 0 to 1023" },
		{ "[scrub]\ncpus = 0,,1\n", 2,
		  "bad value '0,,1': expected 'any' or a list of CPUs" },
		{ "[scrub]\ncpus = 1,\n", 2, "a list of CPUs" },
		{ "[scrub]\ncpus = all\n", 2, "a list of CPUs" },
		{ "[scrub]\npriority = low\n", 2,
		  "bad value 'low': expected idle or normal" },
		{ "[scrub]\nthreads = 2\n", 2,
		  "unknown key 'threads' in [scrub]: expected rate, cpus or priority" },
		{ "[quarantine]\nrecheck = 9\n", 2,
		  "expected a number of milliseconds from 10 to 60000" },
		{ "[quarantine]\nrecheck = 60001\n", 2, "from 10 to 60000" },
		{ "[quarantine]\nrecheck = 1s\n", 2, "from 10 to 60000" },
		{ "[quarantine]\nevery = 1\n", 2,
		  "unknown key 'every' in [quarantine]: expected recheck" },
		{ "[turbo]\nmode = on\n", 2,
		  "unknown section [turbo]: expected [service], [pages.2M], [pages.1G], [scrub] or [quarantine]" },
		{ "socket = /s\n", 1, "unknown section []" },
		{ "[service]\nthis is not ini\n", 2, "not an INI line" },
		{ "[service\n", 1, "not an INI line" },
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct zvmmd_config before;
		char want[96];

		memset(&c, 0x5a, sizeof(c));
		before = c;
		cr_assert_eq(load_text(bad[i].text), -EINVAL, "%s",
			     bad[i].text);
		snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
		cr_assert(strstr(err, want) == err, "want '%s', got '%s'", want,
			  err);
		cr_assert(strstr(err, bad[i].says), "want '%s', got '%s'",
			  bad[i].says, err);
		/* Nothing half-applied. */
		cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "%s",
			     bad[i].text);
	}
}

/* What is wrong between keys, or with the file as a whole. */
Test(zvmmd_config, whole_file_errors_name_the_right_line)
{
	static const struct {
		const char *text;
		int line;
		const char *says;
	} bad[] = {
		{ "[pages.2M]\nlow = 8G\nhigh = 4G\n", 3,
		  "low '8G' is above high '4G': give low at most high" },
		{ "[pages.2M]\nhigh = 4G\n\n; why\nlow = 8G\n", 5,
		  "low '8G' is above high '4G'" },
		{ "[pages.2M]\nlow = 1G\n", 1,
		  "[pages.2M] holds no memory: set high" },
		{ "[pages.2M]\nhigh = 8G\nmax = 4G\n", 3,
		  "high '8G' is above max '4G': give high at most max" },
		{ "[pages.1G]\nmax = 4G\n[scrub]\nrate = 0\n[pages.1G]\n"
		  "high = 8G\n",
		  6, "high '8G' is above max '4G'" },
		{ "[pages.2M]\nhigh = 1536M\n", 2,
		  "high '1536M' is not a multiple of chunk '1G': memory is held in whole chunks, give 1G or 2G" },
		{ "[pages.2M]\nhigh = 512M\n", 2,
		  "high '512M' is not a multiple of chunk '1G': memory is held in whole chunks, give 1G" },
		{ "[pages.2M]\nhigh = 4G\nchunk = 3G\n", 3,
		  "high '4G' is not a multiple of chunk '3G'" },
		{ "[pages.2M]\nchunk = 256M\nhigh = 1G\nmax = 1100M\n", 4,
		  "max '1100M' is not a multiple of chunk '256M': memory is held in whole chunks, give 1G or 1280M" },
		/* A section with no key is still one. */
		{ "[pages.2M]\n", 1, "[pages.2M] holds no memory" },
		{ "[pages.1G]\nhigh = 2G\n\n[pages.2M]\n", 4,
		  "[pages.2M] holds no memory" },
		{ POOL "[pages.4M]\n", 3, "unknown page size [pages.4M]" },
		{ POOL "\n[gpu]\n; nothing\n", 4, "unknown section [gpu]" },
		{ "", 1, "no [pages.2M] or [pages.1G] section: add one" },
		{ "[service]\ngroup = kvm\n\n; end\n", 4,
		  "no [pages.2M] or [pages.1G] section" },
		/* The first error by line, whichever check finds it. */
		{ "[pages.1G]\nlow = 4G\nhigh = 2G\n[pages.2M]\nhigh = 8G\n"
		  "max = 4G\n",
		  3, "low '4G' is above high '2G'" },
		{ "[pages.1G]\nhigh = 2G\nlow = 4G\n[pages.2M]\nmax = 4G\n"
		  "[pages.2M]\nhigh = 8G\n[blank]\n",
		  3, "low '4G' is above high '2G'" },
		{ "[x]\n[pages.1G]\nhigh = 2G\nlow = 4G\n", 1,
		  "unknown section [x]" },
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct zvmmd_config before;
		char want[96];

		memset(&c, 0x5a, sizeof(c));
		before = c;
		cr_assert_eq(load_text(bad[i].text), -EINVAL, "%s",
			     bad[i].text);
		snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
		cr_assert(strstr(err, want) == err, "%s: want '%s', got '%s'",
			  bad[i].text, want, err);
		cr_assert(strstr(err, bad[i].says), "want '%s', got '%s'",
			  bad[i].says, err);
		cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "%s",
			     bad[i].text);
	}
}

/*
 * The lines are libinih's: an indented line after a key continues it
 * (and is one more assignment), a UTF-8 BOM and NUL bytes change no
 * line number.
 */
Test(zvmmd_config, lines_as_libinih_counts_them)
{
	static const char nul[] = "[pages.2M]\nhigh = 4G\0 junk\nlow = 8G\n";

	cr_assert_eq(load_text("[pages.2M]\nhigh = 4G\nlow = 1G\n  8G\n"),
		     -EINVAL);
	cr_assert(strstr(err, ":4: low '8G' is above high '4G'"), "%s", err);
	cr_assert_eq(load_text("[pages.2M]\nhigh = 4G\n\n   [pages.1G]\n"),
		     -EINVAL);
	cr_assert(strstr(err, ":4: invalid size '[pages.1G]'"), "%s", err);
	cr_assert_eq(load_text("\xef\xbb\xbf[pages.2M]\nlow = 8G\nhigh = 4G\n"),
		     -EINVAL);
	cr_assert(strstr(err, ":3: low '8G'"), "%s", err);
	cr_assert_eq(load_text("\xef\xbb\xbf[pages.2M]\n"), -EINVAL);
	cr_assert(strstr(err, ":1: [pages.2M] holds no memory"), "%s", err);
	write_text(nul, sizeof(nul) - 1);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":3: low '8G' is above high '4G'"), "%s", err);
	cr_assert_eq(load_text("  [pages.2M]\n  high = 4G\n"), 0, "%s", err);
	cr_assert_eq(c.pool[0].high, 4 * SZ_1G);
}

Test(zvmmd_config, long_line_is_an_error)
{
	char text[512];

	/* libinih would read the tail of this comment as a key. */
	snprintf(text, sizeof(text), POOL "; %0250d low = 8G\n", 0);
	cr_assert_eq(load_text(text), -EINVAL);
	cr_assert(strstr(err, ":3: line too long"), "%s", err);
}

Test(zvmmd_config, format_round_trips)
{
	static const char *const texts[] = {
		"[pages.2M]\nchunk = 256M\nlow = 2G\nhigh = 4G\nmax = 16G\n",
		"[service]\nsocket = /tmp/s\ndir = /d\ngroup = _g\n"
		"[pages.1G]\nlow = 3G\nhigh = 5G\nmax = 9G\nnode = 63\n"
		"[pages.2M]\nchunk = 2M\nhigh = 6M\nmax = 10M\nnode = 0\n"
		"[scrub]\nrate = 1536M\ncpus = 0-3,6\npriority = normal\n"
		"[quarantine]\nrecheck = 250\n",
		"[service]\nuser_connections = 4\nuser_share = 1G\nidle = 30s\n"
		"root_reserve = 512M\n[pages.2M]\nmax = 2G\n",
		"[service]\nroot_reserve = 25%\n[pages.2M]\nmax = 2G\n",
		"[service]\nuser_connections = 4032\nuser_share = 100%\n"
		"idle = 5\n[pages.2M]\nmax = 2G\n",
		"[pages.1G]\nmax = 1G\n[scrub]\nrate = 4097\n",
	};
	struct zvmmd_config d;
	char buf[2048];
	int n;

	for (unsigned int i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cr_assert_eq(load_text(texts[i]), 0, "%s", err);
		n = zvmmd_config_format(&c, buf, sizeof(buf));
		cr_assert(n > 0 && (size_t)n == strlen(buf), "%d", n);
		memset(&d, 0x5a, sizeof(d));
		cr_assert_eq(zvmmd_config_load_string("formatted", buf,
						      (size_t)n, &d, err,
						      sizeof(err)),
			     0, "%s\n%s", err, buf);
		cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0, "%s", buf);
		/* Every key explicit. */
		cr_assert(strstr(buf, "socket = ") && strstr(buf, "dir = ") &&
				  strstr(buf, "group = ") &&
				  strstr(buf, "chunk = ") &&
				  strstr(buf, "node = ") &&
				  strstr(buf, "cpus = ") &&
				  strstr(buf, "recheck = ") &&
				  strstr(buf, "user_connections = ") &&
				  strstr(buf, "user_share = ") &&
				  strstr(buf, "root_reserve = ") &&
				  strstr(buf, "idle = "),
			  "%s", buf);
	}
	cr_assert(strstr(buf, "[pages.1G]\nchunk = 1G\nlow = 0\nhigh = 0\n"
			      "max = 1G\nnode = any\n"),
		  "%s", buf);
	cr_assert(strstr(buf, "rate = 4097\ncpus = any\npriority = idle\n"),
		  "%s", buf);
	cr_assert_null(strstr(buf, "[pages.2M]"), "%s", buf);
}

/*
 * [service] root_reserve of each pool: its share of max in whole pages,
 * a chunk always left to the stock and the members, 0 for none.
 */
Test(zvmmd_config, root_reserve_per_pool)
{
	cr_assert_eq(load_text("[pages.2M]\nchunk = 2M\nmax = 100M\n"
			       "[pages.1G]\nmax = 8G\n"),
		     0, "%s", err);
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_2M), 0);
	cr_assert_eq(load_text("[service]\nroot_reserve = 25%\n"
			       "[pages.2M]\nchunk = 2M\nmax = 100M\n"
			       "[pages.1G]\nmax = 8G\n"),
		     0, "%s", err);
	/* 25 MiB, in whole pages. */
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_2M), 24 * SZ_1M);
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_1G), 2 * SZ_1G);
	cr_assert_eq(load_text("[service]\nroot_reserve = 3G\n"
			       "[pages.2M]\nchunk = 64M\nmax = 1G\n"
			       "[pages.1G]\nmax = 1G\n"),
		     0, "%s", err);
	/* At most max less a chunk, and none where max is one chunk. */
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_2M), SZ_1G - 64 * SZ_1M);
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_1G), 0);
	cr_assert_eq(zvmmd_root_reserve(&c, ZVMMD_POOL_1G + 1), 0);
}

/*
 * The pools' slots: each page size's plain section, then one per node,
 * and the names and page sizes that go with them.
 */
Test(zvmmd_config, pool_slots)
{
	char name[24];

	cr_assert_eq(ZVMMD_NR_POOLS, 2 * (1 + NODES_MAX));
	cr_assert_eq(ZVMMD_POOL_2M, 0);
	cr_assert_eq(ZVMMD_POOL_1G, 1 + NODES_MAX);
	cr_assert_eq(zvmmd_pool_index(ZVMMD_PAGE_2M, -1), ZVMMD_POOL_2M);
	cr_assert_eq(zvmmd_pool_index(ZVMMD_PAGE_1G, -1), ZVMMD_POOL_1G);
	cr_assert_eq(zvmmd_pool_index(ZVMMD_PAGE_2M, 0), 1);
	cr_assert_eq(zvmmd_pool_index(ZVMMD_PAGE_1G, NODES_MAX - 1),
		     ZVMMD_NR_POOLS - 1);
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		unsigned int pg = zvmmd_pool_page(i);
		int node = zvmmd_pool_section_node(i);

		cr_assert_eq(zvmmd_pool_index(pg, node), i);
		cr_assert_eq(c.pool[i].page_bytes,
			     pg == ZVMMD_PAGE_2M ? SZ_2M : SZ_1G);
	}
	cr_assert_str_eq(zvmmd_pool_section(ZVMMD_POOL_2M, name, sizeof(name)),
			 "pages.2M");
	cr_assert_str_eq(zvmmd_pool_section(ZVMMD_POOL_1G, name, sizeof(name)),
			 "pages.1G");
	cr_assert_str_eq(zvmmd_pool_section(zvmmd_pool_index(ZVMMD_PAGE_2M, 0),
					    name, sizeof(name)),
			 "pages.2M.node0");
	cr_assert_str_eq(zvmmd_pool_section(ZVMMD_NR_POOLS - 1, name,
					    sizeof(name)),
			 "pages.1G.node63");
}

/* A [pages.X.nodeN] is a pool of its own, on node N. */
Test(zvmmd_config, per_node_section_loads_with_its_node)
{
	unsigned int i = zvmmd_pool_index(ZVMMD_PAGE_2M, 1);

	cr_assert_eq(load_text("[pages.2M.node1]\nchunk = 256M\nlow = 1G\n"
			       "high = 2G\nmax = 4G\n"),
		     0, "%s", err);
	for (unsigned int j = 0; j < ZVMMD_NR_POOLS; j++)
		cr_assert_eq(c.pool[j].on, j == i, "slot %u", j);
	cr_assert_eq(c.pool[i].node, 1);
	cr_assert_eq(c.pool[i].page_bytes, SZ_2M);
	cr_assert_eq(c.pool[i].chunk_bytes, 256 * SZ_1M);
	cr_assert_eq(c.pool[i].low, SZ_1G);
	cr_assert_eq(c.pool[i].high, 2 * SZ_1G);
	cr_assert_eq(c.pool[i].max, 4 * SZ_1G);

	/* max from high, as for a plain section; node 63 the last. */
	i = zvmmd_pool_index(ZVMMD_PAGE_1G, 63);
	cr_assert_eq(load_text("[pages.1G.node63]\nhigh = 8G\n"), 0, "%s", err);
	cr_assert(c.pool[i].on);
	cr_assert_eq(c.pool[i].node, 63);
	cr_assert_eq(c.pool[i].page_bytes, SZ_1G);
	cr_assert_eq(c.pool[i].max, 8 * SZ_1G);
	cr_assert_not(c.pool[ZVMMD_POOL_1G].on);
}

/* Pools of one page size on several nodes, and a plain one besides. */
Test(zvmmd_config, several_nodes_together)
{
	unsigned int n0 = zvmmd_pool_index(ZVMMD_PAGE_2M, 0),
		     n1 = zvmmd_pool_index(ZVMMD_PAGE_2M, 1),
		     g1 = zvmmd_pool_index(ZVMMD_PAGE_1G, 1);

	cr_assert_eq(load_text("[pages.2M.node0]\nhigh = 4G\n"
			       "[pages.2M.node1]\nlow = 1G\nhigh = 2G\n"
			       "[pages.2M]\nmax = 1G\nnode = 2\n"
			       "[pages.1G.node1]\nhigh = 8G\n"
			       "[pages.1G]\nhigh = 1G\nnode = 0\n"),
		     0, "%s", err);
	cr_assert(c.pool[n0].on && c.pool[n1].on && c.pool[g1].on);
	cr_assert(c.pool[ZVMMD_POOL_2M].on && c.pool[ZVMMD_POOL_1G].on);
	cr_assert_eq(c.pool[n0].node, 0);
	cr_assert_eq(c.pool[n0].high, 4 * SZ_1G);
	cr_assert_eq(c.pool[n0].low, 0);
	cr_assert_eq(c.pool[n1].node, 1);
	cr_assert_eq(c.pool[n1].low, SZ_1G);
	cr_assert_eq(c.pool[n1].high, 2 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].node, 2);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].max, SZ_1G);
	/* The same node for another page size is another pool. */
	cr_assert_eq(c.pool[g1].node, 1);
	cr_assert_eq(c.pool[g1].page_bytes, SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_1G].node, 0);

	/* A section met again is the same pool; the last value wins. */
	cr_assert_eq(load_text("[pages.2M.node0]\nhigh = 4G\n"
			       "[pages.2M]\nhigh = 2G\nnode = 0\n"
			       "[pages.2M.node0]\nhigh = 8G\n"
			       "[pages.2M]\nnode = any\n"),
		     0, "%s", err);
	cr_assert_eq(c.pool[n0].high, 8 * SZ_1G);
	cr_assert_eq(c.pool[ZVMMD_POOL_2M].node, -1);
}

/* @text is refused at @line, saying @says, and @c is left as it was. */
static void expect_error(const char *text, int line, const char *says)
{
	struct zvmmd_config before;
	char want[96];

	memset(&c, 0x5a, sizeof(c));
	before = c;
	cr_assert_eq(load_text(text), -EINVAL, "%s", text);
	snprintf(want, sizeof(want), "%s:%d: ", path, line);
	cr_assert(strstr(err, want) == err, "%s: want '%s', got '%s'", text,
		  want, err);
	cr_assert(strstr(err, says), "%s: want '%s', got '%s'", text, says,
		  err);
	cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "%s", text);
}

/* One pool per page size and node: the later of two is refused. */
Test(zvmmd_config, same_node_twice_is_an_error)
{
	expect_error(
		"[pages.2M]\nhigh = 4G\nnode = 1\n\n[pages.2M.node1]\n"
		"high = 4G\n",
		5,
		"[pages.2M.node1] is a second pool of 2M pages on node 1, after node = 1 in [pages.2M] at line 3: give a page size one pool per node");
	expect_error(
		"[pages.1G.node2]\nhigh = 4G\n[pages.1G]\nhigh = 4G\n"
		"node = 2\n",
		5,
		"node = 2 in [pages.1G] makes a second pool of 1G pages on node 2, after [pages.1G.node2] at line 1: give a page size one pool per node");
	/* The section's first line counts, as for its other errors. */
	expect_error("[pages.2M]\nnode = 0\nhigh = 2G\n[pages.2M.node0]\n"
		     "high = 2G\n[pages.2M.node0]\n[pages.2M]\nhigh = 4G\n",
		     4, "[pages.2M.node0] is a second pool");
	/* The first error by line, whichever check finds it. */
	expect_error("[pages.2M]\nhigh = 4G\nnode = 1\nlow = 8G\n"
		     "[pages.2M.node1]\nhigh = 4G\n",
		     4, "low '8G' is above high '4G'");
	expect_error("[pages.2M]\nhigh = 4G\nnode = 1\n[pages.2M.node1]\n"
		     "high = 4G\nlow = 8G\n",
		     4, "[pages.2M.node1] is a second pool");
}

Test(zvmmd_config, node_key_in_a_per_node_section_is_refused)
{
	expect_error(
		"[pages.2M.node1]\nhigh = 4G\nnode = 1\n", 3,
		"key 'node' not allowed in [pages.2M.node1]: its node, 1, is in the section name; remove the key");
	expect_error("[pages.1G.node0]\n\nnode = any\nhigh = 1G\n", 3,
		     "key 'node' not allowed in [pages.1G.node0]: its node, 0");
	expect_error(
		"[pages.2M.node3]\nsize = 1G\n", 2,
		"unknown key 'size' in [pages.2M.node3]: expected chunk, low, high or max");
}

Test(zvmmd_config, bad_per_node_sections_are_refused)
{
	static const char *const names[] = {
		"pages.2M.nodeX",  "pages.2M.node999", "pages.2M.node64",
		"pages.2M.node01", "pages.2M.node",    "pages.2M.node-1",
		"pages.2M.node 1", "pages.2M.node1x",  "pages.2M.",
		"pages.2M.numa1",
	};
	char text[128], says[160];

	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(
			says, sizeof(says),
			"unknown section [%s]: expected [pages.2M] or [pages.2M.node<N>], N a node number from 0 to 63",
			names[i]);
		/* At the key that libinih gives, else at the section. */
		snprintf(text, sizeof(text), "[%s]\nhigh = 4G\n", names[i]);
		expect_error(text, 2, says);
		snprintf(text, sizeof(text), POOL "[%s]\n", names[i]);
		expect_error(text, 3, says);
	}
	expect_error(
		"[pages.1G.node64]\nhigh = 4G\n", 2,
		"unknown section [pages.1G.node64]: expected [pages.1G] or [pages.1G.node<N>]");
	expect_error(
		"[pages.4M.node0]\nhigh = 4G\n", 2,
		"unknown page size [pages.4M.node0]: expected [pages.2M] or [pages.1G], or [pages.2M.node<N>] or [pages.1G.node<N>]");
	expect_error("[pages.2Mnode0]\nhigh = 4G\n", 2,
		     "unknown page size [pages.2Mnode0]");
	/* The checks of a pool name its section. */
	expect_error("[pages.1G.node5]\nlow = 1G\n", 1,
		     "[pages.1G.node5] holds no memory");
	expect_error("[pages.2M.node2]\nhigh = 4G\nlow = 8G\n", 3,
		     "low '8G' is above high '4G'");
	/* Still no pool at all without a [pages.*] section. */
	expect_error("[scrub]\nrate = 0\n", 2,
		     "no [pages.2M] or [pages.1G] section");
}

/* Several pools, per-node ones among them, written and read back. */
Test(zvmmd_config, format_round_trips_per_node_pools)
{
	static char text[16384], buf[32768];
	struct zvmmd_config d;
	size_t off = 0;
	char name[24];
	int n;

	cr_assert_eq(load_text("[pages.1G.node1]\nlow = 2G\nhigh = 4G\n"
			       "[pages.2M.node63]\nchunk = 2M\nhigh = 2M\n"
			       "[pages.2M]\nchunk = 256M\nhigh = 1G\n"
			       "node = 5\n"
			       "[pages.2M.node0]\nchunk = 256M\nhigh = 2G\n"
			       "max = 16G\n"),
		     0, "%s", err);
	n = zvmmd_config_format(&c, buf, sizeof(buf));
	cr_assert(n > 0 && (size_t)n == strlen(buf), "%d", n);
	/* In slot order, a per-node section without a node key. */
	cr_assert(strstr(buf, "[pages.2M]\nchunk = 256M\nlow = 0\nhigh = 1G\n"
			      "max = 1G\nnode = 5\n"
			      "[pages.2M.node0]\nchunk = 256M\nlow = 0\n"
			      "high = 2G\nmax = 16G\n"
			      "[pages.2M.node63]\nchunk = 2M\nlow = 0\n"
			      "high = 2M\nmax = 2M\n"
			      "[pages.1G.node1]\nchunk = 1G\nlow = 2G\n"
			      "high = 4G\nmax = 4G\n[scrub]\n"),
		  "%s", buf);
	memset(&d, 0x5a, sizeof(d));
	cr_assert_eq(zvmmd_config_load_string("formatted", buf, (size_t)n, &d,
					      err, sizeof(err)),
		     0, "%s\n%s", err, buf);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0, "%s", buf);

	/* Every pool on at once. */
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		off += (size_t)snprintf(
			text + off, sizeof(text) - off, "[%s]\nhigh = %uG\n",
			zvmmd_pool_section(i, name, sizeof(name)), i + 1);
		cr_assert(off < sizeof(text));
	}
	cr_assert_eq(load_text(text), 0, "%s", err);
	n = zvmmd_config_format(&c, buf, sizeof(buf));
	cr_assert(n > 0, "%d", n);
	memset(&d, 0x5a, sizeof(d));
	cr_assert_eq(zvmmd_config_load_string("formatted", buf, (size_t)n, &d,
					      err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0);
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		cr_assert(d.pool[i].on);
		cr_assert_eq(d.pool[i].high, (i + 1) * SZ_1G);
		cr_assert_eq(d.pool[i].node, zvmmd_pool_section_node(i));
	}
}

/* The longest values a file takes still fit libinih's line. */
Test(zvmmd_config, format_of_longest_values_reloads)
{
	char text[1024], dir[160], sock[108], buf[2048];
	struct zvmmd_config d;
	int n;

	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	memset(sock, 's', sizeof(sock) - 1);
	sock[0] = '/';
	sock[sizeof(sock) - 1] = '\0';
	snprintf(
		text, sizeof(text),
		"[service]\nsocket = %s\ndir = %s\n"
		"group = abcdefghijklmnopqrstuvwxyz01234\n"
		"[pages.2M]\nchunk = 2M\nhigh = 1125899906842624\n"
		"[scrub]\ncpus = 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,1000\n",
		sock, dir);
	cr_assert_eq(load_text(text), 0, "%s", err);
	cr_assert_eq(strlen(c.dir), 159);
	cr_assert_eq(strlen(c.socket), 107);
	cr_assert_eq(strlen(c.scrub_cpus), 63);
	n = zvmmd_config_format(&c, buf, sizeof(buf));
	cr_assert(n > 0);
	cr_assert_eq(zvmmd_config_load_string("formatted", buf, (size_t)n, &d,
					      err, sizeof(err)),
		     0, "%s\n%s", err, buf);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0, "%s", buf);

	/* One byte more is refused, not cut. */
	snprintf(text, sizeof(text), "[service]\ndir = %sd\n" POOL, dir);
	cr_assert_eq(load_text(text), -EINVAL);
	cr_assert(strstr(err, ":2: bad value '/ddd"), "%s", err);
	cr_assert(strstr(err, "shorter than 160 bytes"), "%s", err);
	snprintf(text, sizeof(text), "[service]\nsocket = %ss\n" POOL, sock);
	cr_assert_eq(load_text(text), -EINVAL);
	cr_assert(strstr(err, "shorter than 108 bytes"), "%s", err);
	cr_assert_eq(load_text(POOL
			       "[scrub]\ncpus = 0,1,2,3,4,5,6,7,8,9,10,"
			       "11,12,13,14,15,16,17,18,19,20,21,22,23,24\n"),
		     -EINVAL);
	cr_assert(strstr(err, ":4: bad value '0,1,2") &&
			  strstr(err, "at most 63 characters"),
		  "%s", err);
}

Test(zvmmd_config, format_needs_room)
{
	char buf[1024];
	int n;

	cr_assert_eq(load_text(POOL), 0, "%s", err);
	n = zvmmd_config_format(&c, buf, sizeof(buf));
	cr_assert(n > 0);
	cr_assert_eq(zvmmd_config_format(&c, buf, (size_t)n), -ENOSPC);
	cr_assert_eq(zvmmd_config_format(&c, NULL, 0), -ENOSPC);
	cr_assert_eq(zvmmd_config_format(&c, buf, (size_t)n + 1), n);
	cr_assert_eq(buf[n], '\0');
}

Test(zvmmd_config, missing_file)
{
	memset(&c, 0x5a, sizeof(c));
	cr_assert_eq(zvmmd_config_load("/nonexistent/zvmmd.conf", &c, err,
				       sizeof(err)),
		     -ENOENT);
	cr_assert(strstr(err,
			 "cannot open config file /nonexistent/zvmmd.conf: "),
		  "%s", err);
	cr_assert_eq(c.recheck_ms, 0x5a5a5a5a);
}

Test(zvmmd_config, directory_is_an_error)
{
	cr_assert_eq(zvmmd_config_load("dist", &c, err, sizeof(err)), -EISDIR);
	cr_assert(strstr(err, "cannot read config file dist"), "%s", err);
}

/* The file says where root mounts and who may lease: others keep out. */
Test(zvmmd_config, others_may_not_write_it)
{
	cr_assert_eq(load_text(POOL), 0, "%s", err);
	cr_assert_eq(chmod(path, 0664), 0);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), -EPERM);
	cr_assert(strstr(err,
			 "writable by group or others (mode 0664): chmod go-w"),
		  "%s", err);
	cr_assert_eq(chmod(path, 0602), 0);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), -EPERM);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), 0, "%s",
		     err);
}

Test(zvmmd_config, another_users_file_is_refused)
{
	test_need_root("to give the file to another user");
	cr_assert_eq(load_text(POOL), 0, "%s", err);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), -EPERM);
	cr_assert(
		strstr(err,
		       "owned by uid 65534, not by root or this user (uid 0): chown root"),
		"%s", err);
}

Test(zvmmd_config, fifo_is_refused_not_waited_on)
{
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(zvmmd_config_load(path, &c, err, sizeof(err)), -EPERM);
	cr_assert(strstr(err, "not a regular file"), "%s", err);
}
