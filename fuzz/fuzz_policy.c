// SPDX-License-Identifier: MIT
/*
 * The policy file parser (libinih underneath) and --set, with the input
 * as file text and as one assignment. A policy that loads must keep the
 * invariants the engine relies on and survive zero_policy_print() and a
 * reload unchanged; what --set accepts must mean what the same key means
 * in a file; a refusal changes nothing and names the file and line.
 */
#include <errno.h>

#include "../zeroing/policy.h"
#include "fuzz.h"

#define NAME "fuzz.conf"

/* DESIGN.md 8's backend values, written out again as the oracle. */
static const char *const backends[] = {
	"auto",	   "rep_stosb", "rep_stosq",	  "movq",   "movnti",
	"nt_sse2", "nt_avx2",	"nt_avx512",	  "clzero", "dc_zva",
	"stnp",	   "memset",	"page_at_a_time",
};

static void check_valid(const struct zero_policy *p)
{
	bool known = false;

	fuzz_assert(p->mode <= ZERO_MODE_HYBRID, "mode %d", p->mode);
	fuzz_assert(p->fresh <= ZERO_FRESH_SCRUB, "fresh %d", p->fresh);
	fuzz_assert(p->on_exit <= ZERO_EXIT_SCRUB, "on_exit %d", p->on_exit);
	fuzz_assert(p->numa <= ZERO_NUMA_BIND, "numa %d", p->numa);
	fuzz_assert(p->workers <= ZERO_MAX_WORKERS, "workers %u", p->workers);
	fuzz_assert(!p->chunk || (p->chunk >= ZERO_CHUNK_MIN &&
				  p->chunk <= ZERO_CHUNK_MAX &&
				  !(p->chunk % ZERO_CHUNK_MIN)),
		    "chunk %llu", (unsigned long long)p->chunk);
	fuzz_assert(p->rate_limit <= 1ull << 50, "rate_limit %llu",
		    (unsigned long long)p->rate_limit);
	fuzz_assert(memchr(p->backend, '\0', sizeof(p->backend)),
		    "backend not terminated");
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		known |= !strcmp(p->backend, backends[i]);
	fuzz_assert(known, "backend '%s'", p->backend);
}

static void check_print_reload(const struct zero_policy *p)
{
	struct zero_policy q;
	char *text = NULL, err[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		abort();
	zero_policy_print(p, f);
	fclose(f);
	zero_policy_defaults(&q);
	ret = zero_policy_load_string(&q, NAME, text, len, err, sizeof(err));
	fuzz_assert(!ret, "printed policy does not load: %s\n%s", err, text);
	fuzz_assert(!memcmp(p, &q, sizeof(q)), "printed policy differs:\n%s",
		    text);
	free(text);
}

static void fuzz_file(const uint8_t *data, size_t size)
{
	struct zero_policy p, start;
	char err[512] = "";
	int ret;

	zero_policy_defaults(&start);
	p = start;
	ret = zero_policy_load_string(&p, NAME, (const char *)data, size, err,
				      sizeof(err));
	if (ret) {
		fuzz_assert(ret == -EINVAL, "load returned %d", ret);
		fuzz_assert(!strncmp(err, NAME ":", strlen(NAME ":")),
			    "error without file and line: '%s'", err);
		fuzz_assert(!memcmp(&p, &start, sizeof(p)),
			    "a refused file changed the policy");
		return;
	}
	check_valid(&p);
	check_print_reload(&p);
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	char *a = fuzz_cstr(data, size), err[512] = "", *text = NULL;
	struct zero_policy p, start, q;
	const char *dot, *eq;
	int ret;

	zero_policy_defaults(&start);
	p = start;
	ret = zero_policy_set(&p, a, err, sizeof(err));
	if (ret) {
		fuzz_assert(ret == -EINVAL, "set returned %d", ret);
		fuzz_assert(!strncmp(err, "policy key ", 11), "error '%s'",
			    err);
		fuzz_assert(!memcmp(&p, &start, sizeof(p)),
			    "a refused --set changed the policy");
		free(a);
		return;
	}
	check_valid(&p);
	check_print_reload(&p);

	/*
	 * "s.k=v" must mean what "[s]\nk = v" means in a file, where the
	 * line fits libinih's buffer (200 bytes; longer lines are refused).
	 */
	dot = strchr(a, '.');
	eq = strchr(a, '=');
	fuzz_assert(dot && eq && dot < eq, "--set took '%s'", a);
	if (strlen(dot + 1) + 2 > 190) {
		free(a);
		return;
	}
	if (asprintf(&text, "[%.*s]\n%.*s = %s\n", (int)(dot - a), a,
		     (int)(eq - dot - 1), dot + 1, eq + 1) < 0)
		abort();
	q = start;
	ret = zero_policy_load_string(&q, NAME, text, strlen(text), err,
				      sizeof(err));
	fuzz_assert(!ret, "--set '%s' took it, the file refuses: %s", a, err);
	fuzz_assert(!memcmp(&p, &q, sizeof(q)),
		    "--set '%s' and the file disagree", a);
	free(text);
	free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_file(data, size);
	fuzz_set(data, size);
	return 0;
}
