// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../include/zvmm/zvmm.h"

#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"
#include "kvm.h"

int cli_exit_status(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -EINVAL:
		return EXIT_USAGE;
	case -EINTR:
	case -ECANCELED:
		return EXIT_INTERRUPTED;
	case -ENOMEM:
	case -ENOSPC:
	case -ENOENT:
	case -ENODEV:
	case -ENXIO:
	case -EACCES:
	case -EPERM:
	case -EBUSY:
	case -EAGAIN: /* a thread or a lock could not be had */
	case -EMFILE:
	case -ENFILE:
	case -EOPNOTSUPP:
	case -ENOSYS:
		return EXIT_RESOURCE;
	default:
		return EXIT_OTHER;
	}
}

/*
 * libzvmm's messages name the fields of its API (mem.pool_path, policy
 * key zeroing.mode=...); on zvmm's command line those are flags.
 */
static const struct {
	const char *api, *flag;
} api_terms[] = {
	{ "mem.pool_path", "--pool" },
	{ "mem.page_bytes", "--hugepages" },
	{ "mem.bytes", "--mem" },
	{ "policy key ", "--set " },
};

static void to_flags(const char *msg, char *out, size_t len)
{
	size_t n = 0;

	while (*msg && n + 1 < len) {
		unsigned int i;

		for (i = 0; i < sizeof(api_terms) / sizeof(api_terms[0]); i++)
			if (!strncmp(msg, api_terms[i].api,
				     strlen(api_terms[i].api)))
				break;
		if (i < sizeof(api_terms) / sizeof(api_terms[0])) {
			n += (size_t)snprintf(out + n, len - n, "%s",
					      api_terms[i].flag);
			msg += strlen(api_terms[i].api);
			continue;
		}
		out[n++] = *msg++;
	}
	out[n < len ? n : len - 1] = '\0';
}

void cli_log_to_stderr(void)
{
	log_to_stderr_rewritten(to_flags);
}

int cli_policy(const char *file, const struct cli_sets *sets,
	       struct zvmm_policy **out)
{
	struct zvmm_policy *p;
	int ret = zvmm_policy_new(&p);

	if (ret)
		return ret;
	if (file)
		ret = zvmm_policy_load(p, file);
	for (unsigned int i = 0; i < sets->n && !ret; i++) {
		char key[128];
		const char *eq = strchr(sets->v[i], '=');
		size_t n = eq ? (size_t)(eq - sets->v[i]) : 0;

		if (!eq || n >= sizeof(key)) {
			pr_err("--set %s: expected section.key=value, e.g. zeroing.mode=demand",
			       sets->v[i]);
			ret = -EINVAL;
			break;
		}
		memcpy(key, sets->v[i], n);
		key[n] = '\0';
		ret = zvmm_policy_set(p, key, eq + 1);
	}
	/* An unreadable or malformed policy is the user's to fix: usage. */
	if (ret && ret != -ENOMEM) {
		zvmm_policy_free(p);
		return -EINVAL;
	}
	if (ret) {
		zvmm_policy_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int cli_parse_size(const char *opt, const char *arg, uint64_t *out)
{
	char why[160];
	int ret = size_parse(arg, out);

	if (ret) {
		pr_err("%s: %s", opt,
		       size_parse_error(arg, ret, why, sizeof(why)));
		return -EINVAL;
	}
	return 0;
}

int cli_add_set(struct cli_sets *sets, char *value)
{
	if (sets->n == CLI_MAX_SETS) {
		pr_err("more than %d --set options", CLI_MAX_SETS);
		return -EINVAL;
	}
	sets->v[sets->n++] = value;
	return 0;
}

static const struct {
	struct option o;
	unsigned int bit;
} cli_options[] = {
	{ { "mem", required_argument, NULL, 'm' }, CLI_MEM },
	{ { "hugepages", required_argument, NULL, 'H' }, CLI_HUGEPAGES },
	{ { "pool", required_argument, NULL, 'P' }, CLI_POOL },
	{ { "policy", required_argument, NULL, 'p' }, CLI_POLICY },
	{ { "set", required_argument, NULL, 's' }, CLI_SET },
	{ { "json", required_argument, NULL, 'j' }, CLI_JSON },
	{ { "quiet", no_argument, NULL, 'q' }, CLI_QUIET },
	{ { "verbose", no_argument, NULL, 'v' }, CLI_VERBOSE },
	{ { "vcpus", required_argument, NULL, 'c' }, CLI_VCPUS },
	{ { "guest", required_argument, NULL, 'g' }, CLI_GUEST },
	{ { "cmdline", required_argument, NULL, 'C' }, CLI_CMDLINE },
	{ { "serial", required_argument, NULL, 'S' }, CLI_SERIAL },
	{ { "kvm", required_argument, NULL, 'k' }, CLI_KVM },
	{ { "reserve", no_argument, NULL, 'r' }, CLI_RESERVE },
	{ { "timeout", required_argument, NULL, 't' }, CLI_TIMEOUT },
	{ { "size", required_argument, NULL, 'Z' }, CLI_SIZE },
	{ { "reps", required_argument, NULL, 'R' }, CLI_REPS },
	{ { "backends", required_argument, NULL, 'b' }, CLI_BACKENDS },
	{ { "plot", required_argument, NULL, 'L' }, CLI_PLOT },
	{ { "out", required_argument, NULL, 'o' }, CLI_OUT },
};
#define CLI_NR_OPTIONS (sizeof(cli_options) / sizeof(cli_options[0]))

/* A whole decimal number in [@min, @max], no sign, no suffix. */
static int parse_uint(const char *arg, unsigned long min, unsigned long max,
		      unsigned int *out)
{
	unsigned long v;
	char *end;

	if (arg[0] < '0' || arg[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

static int parse_one(int c, const char *arg, struct cli_args *a)
{
	char *end;

	switch (c) {
	case 'm':
		return cli_parse_size("--mem", arg, &a->mem);
	case 'H':
		if (cli_parse_size("--hugepages", arg, &a->page_bytes))
			return -EINVAL;
		if (a->page_bytes != SZ_2M && a->page_bytes != SZ_1G) {
			pr_err("--hugepages %s: use 2M or 1G", arg);
			return -EINVAL;
		}
		return 0;
	case 'Z':
		return cli_parse_size("--size", arg, &a->size);
	case 's':
		return cli_add_set(&a->sets, (char *)arg);
	case 'c':
		if (parse_uint(arg, 1, VMM_MAX_VCPUS, &a->vcpus)) {
			pr_err("--vcpus '%s': give a number from 1 to %d", arg,
			       VMM_MAX_VCPUS);
			return -EINVAL;
		}
		return 0;
	case 'R':
		if (parse_uint(arg, 1, CLI_MAX_REPS, &a->reps)) {
			pr_err("--reps: invalid count '%s': give a whole number from 1 to %d",
			       arg, CLI_MAX_REPS);
			return -EINVAL;
		}
		return 0;
	case 't':
		errno = 0;
		a->timeout = strtod(arg, &end);
		if (errno || end == arg || *end ||
		    !(a->timeout > 0 && a->timeout <= 1e7)) {
			pr_err("--timeout '%s': give seconds, more than 0 and at most 10000000 (e.g. 30 or 0.5)",
			       arg);
			return -EINVAL;
		}
		return 0;
	case 'P':
		a->pool = arg;
		return 0;
	case 'p':
		a->policy = arg;
		return 0;
	case 'j':
		a->json = arg;
		return 0;
	case 'g':
		a->guest = arg;
		return 0;
	case 'C':
		a->cmdline = arg;
		return 0;
	case 'S':
		a->serial = arg;
		return 0;
	case 'k':
		a->kvm = arg;
		return 0;
	case 'b':
		a->backends = arg;
		return 0;
	case 'L':
		a->plot = arg;
		return 0;
	case 'o':
		a->out = arg;
		return 0;
	case 'q':
		a->quiet = true;
		return 0;
	case 'v':
		a->verbose = true;
		return 0;
	case 'r':
		a->reserve = true;
		return 0;
	}
	return -EINVAL;
}

int cli_parse(const char *verb, int argc, char **argv, unsigned int accepts,
	      void (*usage)(FILE *f), struct cli_args *a)
{
	struct option opts[CLI_NR_OPTIONS + 2];
	unsigned int n = 0;
	int c, idx;

	for (unsigned int i = 0; i < CLI_NR_OPTIONS; i++)
		if (accepts & cli_options[i].bit)
			opts[n++] = cli_options[i].o;
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			usage(stderr);
			return -EINVAL;
		}
		for (unsigned int i = 0; i < CLI_NR_OPTIONS; i++)
			if (cli_options[i].o.val == c)
				a->given |= cli_options[i].bit;
		if (parse_one(c, optarg, a))
			return -EINVAL;
	}
	if (optind < argc) {
		pr_err("%s: unexpected argument '%s'", verb, argv[optind]);
		return -EINVAL;
	}
	return 0;
}
