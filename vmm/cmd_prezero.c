// SPDX-License-Identifier: MIT
/*
 * `zvmm prezero`: the prezero policy on its own, without booting a guest.
 * Scrubs a warm pool file (--pool) or populates fresh memory, exactly as
 * `run` will before its first vCPU, and reports what it took.
 */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/zvmm/zvmm.h"
#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"
#include "progress.h"
#include "sigwatch.h"

static const struct cli_text prezero_texts[] = {
	{ CLI_VERBOSE,
	  "the library's steps on stderr, such as what measuring the backends assumed" },
	{ 0 }
};

static const struct cli_verb prezero_verb = {
	.name = "prezero",
	.accepts = CLI_MEM | CLI_HUGEPAGES | CLI_POOL | CLI_POOL_SERVICE |
		   CLI_SOCKET | CLI_POLICY | CLI_SET | CLI_JSON | CLI_QUIET |
		   CLI_VERBOSE,
	.texts = prezero_texts,
	.required = CLI_MEM,
	.what = "Makes every page of SIZE bytes of hugepage memory zero with the worker\n"
		"pool, as `zvmm run` does before the first vCPU under the prezero policy:\n"
		"fresh pages are populated in parallel (the kernel zeroes them on every\n"
		"worker's core), pages of a reused --pool file are scrubbed with the\n"
		"policy's backend in bounded chunks.",
};

static void on_signal(void *arg, int sig)
{
	struct zvmm_guest **g = arg;
	struct zvmm_guest *p = __atomic_load_n(g, __ATOMIC_ACQUIRE);

	(void)sig;
	if (p)
		zvmm_guest_cancel(p);
}

static json_object *num(double v, const char *fmt)
{
	char text[64];

	snprintf(text, sizeof(text), fmt, v);
	return json_object_new_double_s(v, text);
}

/* docs/DESIGN.md 8: the prezero report. */
static int write_json(FILE *f, const struct zvmm_stats *z)
{
	json_object *o = json_object_new_object(), *pol, *pz, *pages;
	int ret;

	pol = json_object_new_object();
	json_object_object_add(pol, "mode", json_object_new_string("prezero"));
	json_object_object_add(pol, "backend",
			       json_object_new_string(z->backend));
	json_object_object_add(pol, "backend_from",
			       json_object_new_string(z->backend_from));
	json_object_object_add(pol, "workers",
			       json_object_new_int((int)z->workers));
	json_object_object_add(pol, "chunk_bytes",
			       json_object_new_uint64(z->chunk_bytes));
	pz = json_object_new_object();
	json_object_object_add(
		pz, "bytes",
		json_object_new_uint64(z->prezero_scrub_bytes +
				       z->prezero_populate_bytes));
	json_object_object_add(pz, "seconds", num(z->prezero_seconds, "%.6f"));
	json_object_object_add(pz, "gbps", num(z->prezero_gbps, "%.3f"));
	json_object_object_add(pz, "scrub_bytes",
			       json_object_new_uint64(z->prezero_scrub_bytes));
	json_object_object_add(
		pz, "populate_bytes",
		json_object_new_uint64(z->prezero_populate_bytes));
	pages = json_object_new_object();
	json_object_object_add(pages, "zero",
			       json_object_new_uint64(z->zero_pages));
	json_object_object_add(pages, "dirty",
			       json_object_new_uint64(z->dirty_pages));
	json_object_object_add(o, "version", json_object_new_int(1));
	json_object_object_add(o, "mem_bytes",
			       json_object_new_uint64(z->bytes));
	json_object_object_add(o, "page_bytes",
			       json_object_new_uint64(z->page_bytes));
	json_object_object_add(o, "policy", pol);
	json_object_object_add(o, "prezero", pz);
	json_object_object_add(o, "pages", pages);
	ret = fprintf(f, "%s\n",
		      json_object_to_json_string_ext(
			      o, JSON_C_TO_STRING_SPACED)) < 0 ?
		      -EIO :
		      0;
	json_object_put(o);
	return fflush(f) ? -EIO : ret;
}

static void show_progress(void *arg, uint64_t done, uint64_t total)
{
	vmm_progress_update(arg, "prezero", done, total);
}

int cmd_prezero(int argc, char **argv)
{
	struct cli_args a = { .page_bytes = SZ_2M };
	struct vmm_sigwatch w = { .on_signal = on_signal };
	struct zvmm_guest *g = NULL;
	struct zvmm_policy *pol = NULL;
	struct vmm_progress progress;
	struct zvmm_mem mem;
	struct zvmm_stats z;
	FILE *out = stdout, *jf = NULL;
	char sa[32], sb[32], sc[32];
	int ret, sig, status;

	ret = cli_parse(&prezero_verb, argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	if (a.verbose && log_level < LOG_DEBUG)
		log_level = LOG_DEBUG;
	if (cli_mem_source(&a, &mem))
		return EXIT_USAGE;
	ret = cli_policy(a.policy, &a.sets, &pol);
	if (ret)
		return cli_exit_status(ret);
	ret = zvmm_mem_check(&mem);
	if (ret) {
		zvmm_policy_free(pol);
		return cli_exit_status(ret);
	}
	if (a.json && strcmp(a.json, "-")) {
		jf = fopen(a.json, "we");
		if (!jf) {
			pr_err("cannot write --json %s: %s", a.json,
			       strerror(errno));
			zvmm_policy_free(pol);
			return EXIT_USAGE;
		}
	} else if (a.json) {
		jf = stdout;
		out = stderr;
	}

	/* Blocked before any thread exists, so every thread inherits it. */
	vmm_sigwatch_block();
	w.arg = &g;
	ret = zvmm_guest_open(&mem, pol, &g);
	if (ret)
		goto out;
	ret = vmm_sigwatch_start(&w);
	if (ret) {
		pr_err("cannot start the signal thread: %s", strerror(-ret));
		goto out;
	}
	zvmm_guest_stats(g, &z);
	fprintf(out,
		"zvmm: prezero of %s on %s pages (%s%s): backend %s, %u worker%s, chunk %s\n",
		size_format(z.bytes, sa, sizeof(sa)),
		size_label(z.page_bytes, sb, sizeof(sb)),
		a.pool			     ? "pool " :
		(a.given & CLI_POOL_SERVICE) ? "leased from zvmmd" :
					       "anonymous memfd",
		a.pool ? a.pool : "", z.backend, z.workers,
		z.workers == 1 ? "" : "s",
		size_format(z.chunk_bytes, sc, sizeof(sc)));
	fflush(out);
	vmm_progress_begin(&progress, a.quiet);
	zvmm_guest_set_progress(g, show_progress, &progress);
	ret = zvmm_guest_prezero(g);
	vmm_progress_end(&progress);
	/* Signals stay blocked to the end: the cleanup below is not cut. */
	vmm_sigwatch_stop(&w);
	sig = vmm_sigwatch_seen(&w);
	zvmm_guest_stats(g, &z);
	if (sig) {
		pr_err("interrupted by %s: %llu of %llu pages are zero, the rest stay dirty",
		       strsignal(sig), (unsigned long long)z.zero_pages,
		       (unsigned long long)z.pages);
		ret = -ECANCELED;
		goto out;
	}
	if (ret) {
		pr_err("prezero failed: %s", strerror(-ret));
		goto out;
	}
	fprintf(out,
		"zvmm: scrubbed %s, populated %s in %.3f s: %.1f GB/s; %llu of %llu pages zero\n",
		size_human(z.prezero_scrub_bytes, sa, sizeof(sa)),
		size_human(z.prezero_populate_bytes, sb, sizeof(sb)),
		z.prezero_seconds, z.prezero_gbps,
		(unsigned long long)z.zero_pages, (unsigned long long)z.pages);
	if (jf)
		ret = write_json(jf, &z);
out:
	status = cli_exit_status(ret);
	vmm_sigwatch_stop(&w);
	zvmm_guest_close(g);
	zvmm_policy_free(pol);
	if (jf && jf != stdout) {
		fclose(jf);
		if (status)
			unlink(a.json);
	}
	return status;
}

static const struct cli_verb policy_verb = {
	.name = "policy",
	.accepts = CLI_POLICY | CLI_SET,
	.what = "Checks a zeroing policy and prints it with every key explicit: the\n"
		"defaults, then FILE, then each --set in order. Errors name the file\n"
		"and line.",
};

int cmd_policy(int argc, char **argv)
{
	struct cli_args a = { 0 };
	struct zvmm_policy *pol;
	char text[4096];
	int ret;

	ret = cli_parse(&policy_verb, argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	ret = cli_policy(a.policy, &a.sets, &pol);
	if (ret)
		return cli_exit_status(ret);
	ret = zvmm_policy_format(pol, text, sizeof(text));
	zvmm_policy_free(pol);
	if (ret < 0) {
		pr_err("cannot print the policy: %s", strerror(-ret));
		return EXIT_OTHER;
	}
	fputs(text, stdout);
	return 0;
}
