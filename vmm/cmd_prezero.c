// SPDX-License-Identifier: MIT
/*
 * `zvmm prezero`: the prezero policy on its own, without booting a guest.
 * Scrubs a warm pool file (--pool) or populates fresh memory, exactly as
 * `run` will before its first vCPU, and reports what it took.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../zeroing/guest.h"
#include "cli.h"
#include "sigwatch.h"

static void prezero_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm prezero --mem SIZE [--hugepages 2M|1G] [--pool PATH]\n"
		"                    [--policy FILE] [--set KEY=VALUE]... [--json FILE|-]\n"
		"                    [--quiet]\n"
		"\n"
		"Makes every page of SIZE bytes of hugepage memory zero with the worker\n"
		"pool, as `zvmm run` does before the first vCPU under the prezero policy:\n"
		"fresh pages are populated in parallel (the kernel zeroes them on every\n"
		"worker's core), pages of a reused --pool file are scrubbed with the\n"
		"policy's backend in bounded chunks.\n"
		"\n"
		"  --mem SIZE          memory size, whole pages (e.g. 4G)\n"
		"  --hugepages 2M|1G   page size (default 2M)\n"
		"  --pool PATH         a pool file on a hugetlbfs mount, created or reused\n"
		"  --policy FILE       zeroing policy (default: configs' defaults, hybrid)\n"
		"  --set S.K=V         override one policy key, e.g. zeroing.workers=1\n"
		"  --json FILE|-       write a JSON report; with '-' the summary goes to stderr\n"
		"  --quiet             no progress line\n");
}

static void on_signal(void *arg, int sig)
{
	struct zero_guest **g = arg;
	struct zero_guest *p = __atomic_load_n(g, __ATOMIC_ACQUIRE);

	(void)sig;
	if (p)
		zero_guest_cancel(p);
}

static int parse_page(const char *arg, uint64_t *page)
{
	if (cli_parse_size("--hugepages", arg, page))
		return -EINVAL;
	if (*page != SZ_2M && *page != SZ_1G) {
		pr_err("--hugepages %s: use 2M or 1G", arg);
		return -EINVAL;
	}
	return 0;
}

/* Policy from --policy and --set, in that order; errors are usage. */
int cli_load_policy(const char *file, const struct cli_sets *sets,
		    struct zero_policy *pol)
{
	char err[512];

	zero_policy_defaults(pol);
	if (file && zero_policy_load(pol, file, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < sets->n; i++)
		if (zero_policy_set(pol, sets->v[i], err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
	return 0;
}

static void write_json(FILE *f, const struct zero_guest_layout *m,
		       const struct zero_guest_report *z,
		       const struct zero_prezero_report *r)
{
	fprintf(f,
		"{ \"version\": 1, \"mem_bytes\": %llu, \"page_bytes\": %llu,\n"
		"  \"policy\": { \"mode\": \"prezero\", \"backend\": \"%s\", \"backend_from\": \"%s\", \"workers\": %u, \"chunk_bytes\": %llu },\n"
		"  \"prezero\": { \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.3f, \"scrub_bytes\": %llu, \"populate_bytes\": %llu },\n"
		"  \"pages\": { \"zero\": %llu, \"dirty\": %llu } }\n",
		(unsigned long long)m->bytes, (unsigned long long)m->page_bytes,
		z->backend, z->backend_from, z->workers,
		(unsigned long long)z->chunk,
		(unsigned long long)(r->scrub_bytes + r->populate_bytes),
		r->seconds, r->gbps, (unsigned long long)r->scrub_bytes,
		(unsigned long long)r->populate_bytes,
		(unsigned long long)z->zero_pages,
		(unsigned long long)z->dirty_pages);
}

int cmd_prezero(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "hugepages", required_argument, NULL, 'H' },
		{ "pool", required_argument, NULL, 'P' },
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ "json", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct zero_guest_cfg gc = { .mem = { .page_bytes = SZ_2M } };
	struct zero_mem_opts *mo = &gc.mem;
	const char *policy = NULL, *json = NULL;
	const struct zero_guest_layout *m;
	struct zero_guest_report z;
	struct vmm_sigwatch w = { .on_signal = on_signal };
	int sig;
	struct zero_prezero_report r;
	struct zero_guest *g = NULL;
	struct cli_sets sets = { .n = 0 };
	char err[512], a[32], b[32];
	struct zero_policy pol;
	FILE *out = stdout, *jf = NULL;
	int c, ret, status;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_parse_size("--mem", optarg, &mo->bytes))
				return EXIT_USAGE;
			break;
		case 'H':
			if (parse_page(optarg, &mo->page_bytes))
				return EXIT_USAGE;
			break;
		case 'P':
			mo->pool_path = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case 's':
			if (cli_add_set(&sets, optarg))
				return EXIT_USAGE;
			break;
		case 'j':
			json = optarg;
			break;
		case 'q':
			gc.quiet = true;
			break;
		case 'h':
			prezero_usage(stdout);
			return 0;
		default:
			prezero_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		pr_err("prezero: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!mo->bytes) {
		pr_err("prezero needs --mem SIZE, e.g. --mem 4G");
		return EXIT_USAGE;
	}
	if (cli_load_policy(policy, &sets, &pol))
		return EXIT_USAGE;
	ret = zero_guest_preflight(mo, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return cli_exit_status(ret);
	}
	if (json && strcmp(json, "-")) {
		jf = fopen(json, "we");
		if (!jf) {
			pr_err("cannot write --json %s: %s", json,
			       strerror(errno));
			return EXIT_USAGE;
		}
	} else if (json) {
		jf = stdout;
		out = stderr;
	}

	/* Blocked before any thread exists, so every thread inherits it. */
	vmm_sigwatch_block(&w);

	gc.pol = &pol;
	w.arg = &g;
	ret = zero_guest_open(&gc, &g, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		goto out;
	}
	m = zero_guest_layout(g);
	zero_guest_report(g, &z);
	ret = vmm_sigwatch_start(&w);
	if (ret) {
		pr_err("cannot start the signal thread: %s", strerror(-ret));
		goto out;
	}
	fprintf(out,
		"zvmm: prezero of %s on %s pages (%s%s): backend %s, %u worker%s, chunk %s\n",
		size_format(m->bytes, a, sizeof(a)),
		size_label(m->page_bytes, b, sizeof(b)),
		mo->pool_path ? "pool " : "anonymous memfd",
		mo->pool_path ? mo->pool_path : "", z.backend, z.workers,
		z.workers == 1 ? "" : "s",
		size_format(z.chunk, err, sizeof(err)));
	fflush(out);
	ret = zero_guest_prezero(g, &r);
	sig = vmm_sigwatch_end(&w);
	zero_guest_report(g, &z);
	if (sig) {
		pr_err("interrupted by %s: %llu of %llu pages are zero, the rest stay dirty",
		       strsignal(sig), (unsigned long long)z.zero_pages,
		       (unsigned long long)m->nr_pages);
		ret = -ECANCELED;
		goto out;
	}
	if (ret) {
		pr_err("prezero failed: %s", strerror(-ret));
		goto out;
	}
	fprintf(out,
		"zvmm: scrubbed %s, populated %s in %.3f s: %.1f GB/s; %llu of %llu pages zero\n",
		size_human(r.scrub_bytes, a, sizeof(a)),
		size_human(r.populate_bytes, b, sizeof(b)), r.seconds, r.gbps,
		(unsigned long long)z.zero_pages,
		(unsigned long long)m->nr_pages);
	if (jf)
		write_json(jf, m, &z, &r);
out:
	status = cli_exit_status(ret);
	if (ret == -ENOMEM || ret == -ENOSPC)
		status = EXIT_RESOURCE;
	vmm_sigwatch_end(&w);
	zero_guest_close(g);
	if (jf && jf != stdout) {
		fclose(jf);
		if (status)
			unlink(json);
	}
	return status;
}

static void policy_usage(FILE *f)
{
	fprintf(f,
		"usage: zvmm policy [--policy FILE] [--set KEY=VALUE]...\n"
		"\n"
		"Checks a zeroing policy and prints it with every key explicit: the\n"
		"defaults, then FILE, then each --set in order. Errors name the file\n"
		"and line.\n");
}

int cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy = NULL;
	struct cli_sets sets = { .n = 0 };
	struct zero_policy pol;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 's':
			if (cli_add_set(&sets, optarg))
				return EXIT_USAGE;
			break;
		case 'h':
			policy_usage(stdout);
			return 0;
		default:
			policy_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		pr_err("policy: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (cli_load_policy(policy, &sets, &pol))
		return EXIT_USAGE;
	zero_policy_print(&pol, stdout);
	return 0;
}
