// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../include/zvmm/zvmm.h"

#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/zvmmd_proto.h"
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

#define HELD_MAX 8

/* The library's messages while held (one thread: the command's own). */
static struct {
	char err[1024];
	struct {
		enum log_level level;
		char msg[1024];
	} other[HELD_MAX];
	unsigned int n;
} held;

static void hold(void *arg, enum log_level level, const char *msg)
{
	(void)arg;
	if (level == LOG_ERR) {
		snprintf(held.err, sizeof(held.err), "%s", msg);
	} else if (held.n < HELD_MAX) {
		held.other[held.n].level = level;
		snprintf(held.other[held.n].msg, sizeof(held.other[0].msg),
			 "%s", msg);
		held.n++;
	}
}

void cli_log_hold(void)
{
	held.err[0] = '\0';
	held.n = 0;
	log_set_sink(hold, NULL);
}

void cli_log_release(char *err, size_t len)
{
	cli_log_to_stderr();
	for (unsigned int i = 0; i < held.n; i++)
		log_msg(held.other[i].level, "%s", held.other[i].msg);
	snprintf(err, len, "%s", held.err);
}

int cli_policy(const char *file, const struct cli_sets *sets,
	       struct zvmm_policy **out)
{
	return cli_policy_mode(NULL, file, sets, out);
}

int cli_policy_mode(const char *mode, const char *file,
		    const struct cli_sets *sets, struct zvmm_policy **out)
{
	struct zvmm_policy *p;
	int ret = zvmm_policy_new(&p);

	if (ret)
		return ret;
	if (mode)
		ret = zvmm_policy_set(p, "zeroing.mode", mode);
	if (file && !ret)
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

int cli_mem_source(const struct cli_args *a, struct zvmm_mem *mem)
{
	zvmm_mem_init(mem, a->mem, a->page_bytes);
	mem->source = a->pool ? ZVMM_SOURCE_POOL : ZVMM_SOURCE_PRIVATE;
	mem->pool_path = a->pool;
	if (a->given & CLI_POOL_SERVICE) {
		if (a->pool || a->reserve) {
			pr_err("--pool-service leases zvmmd's memory: no --pool or --reserve with it");
			return -EINVAL;
		}
		mem->source = ZVMM_SOURCE_SERVICE;
		mem->service_path = a->socket;
	} else if (a->socket) {
		pr_err("--socket names zvmmd's socket for --pool-service");
		return -EINVAL;
	}
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

/*
 * One row per option, for every verb: the parser reads it and the usage
 * text prints it, so the two cannot disagree. @arg names the value (NULL:
 * a flag); @help says what it does ("{range}" is the row's "MIN to MAX");
 * a whole-number option has the range the parser takes, a required one
 * an @example for the error that says it is missing.
 */
static const struct cli_row {
	const char *name;
	int val; /* getopt_long's */
	unsigned int bit;
	const char *arg;
	const char *help;
	unsigned long min, max; /* whole numbers: max > 0 */
	const char *example;
	bool repeat; /* may be given again: "..." in the synopsis */
} cli_rows[] = {
/* A table reads as one: one option a row or two. */
/* clang-format off */
#define OPT(n, v, b, a, h) { .name = n, .val = v, .bit = b, .arg = a, .help = h }
#define OPT_NUM(n, v, b, a, h, lo, hi) \
	{ .name = n, .val = v, .bit = b, .arg = a, .help = h, .min = lo, .max = hi }
	{ .name = "mem", .val = 'm', .bit = CLI_MEM, .arg = "SIZE",
	  .help = "memory size, whole pages (e.g. 4G)", .example = "2G" },
	OPT("hugepages", 'H', CLI_HUGEPAGES, "2M|1G", "page size (default 2M)"),
	OPT("pool", 'P', CLI_POOL, "PATH",
	    "a pool file on a hugetlbfs mount, created or reused"),
	OPT("policy", 'p', CLI_POLICY, "FILE",
	    "zeroing policy (configs/prezero.conf, demand.conf, hybrid.conf; default: hybrid)"),
	{ .name = "set", .val = 's', .bit = CLI_SET, .arg = "KEY=VALUE",
	  .help = "override one policy key, e.g. zeroing.workers=1",
	  .repeat = true },
	OPT("json", 'j', CLI_JSON, "FILE|-",
	    "write the JSON report; with '-' the summary goes to stderr"),
	OPT("quiet", 'q', CLI_QUIET, NULL, "no progress line"),
	OPT("verbose", 'v', CLI_VERBOSE, NULL, "each step on stderr"),
	OPT_NUM("vcpus", 'c', CLI_VCPUS, "N", "vCPUs, {range} (default 1)", 1,
		VMM_MAX_VCPUS),
	OPT("guest", 'g', CLI_GUEST, "ELF",
	    "a PVH ELF instead of the built-in touch guest"),
	OPT("cmdline", 'C', CLI_CMDLINE, "STR", "guest command line"),
	OPT("serial", 'S', CLI_SERIAL, "FILE", "guest serial output to FILE"),
	OPT("kvm", 'k', CLI_KVM, "PATH", "KVM device (default /dev/kvm)"),
	OPT("reserve", 'r', CLI_RESERVE, NULL,
	    "as root, raise the hugepage pool to fit and put the old count back at exit"),
	OPT("timeout", 't', CLI_TIMEOUT, "SECONDS",
	    "stop the guest after it ran this long (from its first instruction; decimals allowed)"),
	OPT("size", 'Z', CLI_SIZE, "SIZE",
	    "region size, a multiple of 2M (default 4G)"),
	OPT_NUM("reps", 'R', CLI_REPS, "N",
		"timed repetitions per point, {range} (default 5)", 1,
		CLI_MAX_REPS),
	OPT("backends", 'b', CLI_BACKENDS, "LIST",
	    "comma-separated backends (default: all that run here)"),
	OPT("plot", 'L', CLI_PLOT, "DIR",
	    "write DIR/bench-gbps.svg (needs gnuplot)"),
	OPT("out", 'o', CLI_OUT, "FILE|-",
	    "write the profile to FILE; '-' prints it"),
	OPT("socket", 'u', CLI_SOCKET, "PATH",
	    "zvmmd's socket (default " ZVMMD_DEFAULT_SOCKET ")"),
	OPT("pool-service", 'V', CLI_POOL_SERVICE, NULL,
	    "lease the memory from zvmmd, the host's zeroing service (zvmmd(8)): zeroed ahead where it has chunks, the rest zeroed as the policy says"),
#undef OPT
#undef OPT_NUM
	/* clang-format on */
};
#define CLI_NR_ROWS (sizeof(cli_rows) / sizeof(cli_rows[0]))
#define CLI_WIDTH 79

static const struct cli_row *row_of_val(int val)
{
	for (unsigned int i = 0; i < CLI_NR_ROWS; i++)
		if (cli_rows[i].val == val)
			return &cli_rows[i];
	return NULL;
}

/* The verb's words for @r, else the row's. */
static const char *help_of(const struct cli_verb *v, const struct cli_row *r)
{
	for (const struct cli_text *t = v->texts; t && t->bit; t++)
		if (t->bit == r->bit)
			return t->text;
	return r->help;
}

/*
 * Prints @text from column @col (the cursor is there), "{range}" made
 * the row's range, wrapped at CLI_WIDTH with later lines indented to
 * @indent.
 */
static void print_wrapped(FILE *f, const char *text, const struct cli_row *r,
			  unsigned int col, unsigned int indent)
{
	char buf[512], range[48] = "";
	const char *p, *at = text ? strstr(text, "{range}") : NULL;
	size_t n;

	if (!text)
		return;
	if (r && r->max)
		snprintf(range, sizeof(range), "%lu to %lu", r->min, r->max);
	if (at)
		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text,
			 range, at + strlen("{range}"));
	else
		snprintf(buf, sizeof(buf), "%s", text);
	for (p = buf; *p;) {
		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (col > indent && col + 1 + n > CLI_WIDTH) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)n, p);
		col += (unsigned int)n;
		p += n;
	}
}

void cli_usage(const struct cli_verb *v, FILE *f)
{
	unsigned int col, indent, width = 0;
	char word[96];

	col = (unsigned int)fprintf(f, "usage: zvmm %s", v->name);
	indent = col + 1;
	for (unsigned int i = 0; i < CLI_NR_ROWS; i++) {
		const struct cli_row *r = &cli_rows[i];
		bool req = v->required & r->bit;
		int n;

		if (!(v->accepts & r->bit))
			continue;
		n = snprintf(word, sizeof(word), "%s--%s%s%s%s%s",
			     req ? "" : "[", r->name, r->arg ? " " : "",
			     r->arg ? r->arg : "", req ? "" : "]",
			     r->repeat ? "..." : "");
		if (col + 1 + (unsigned int)n > CLI_WIDTH) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else {
			fputc(' ', f);
			col++;
		}
		fputs(word, f);
		col += (unsigned int)n;
		n = snprintf(word, sizeof(word), "--%s%s%s", r->name,
			     r->arg ? " " : "", r->arg ? r->arg : "");
		if ((unsigned int)n > width)
			width = (unsigned int)n;
	}
	if (v->rest) {
		if (col + 1 + strlen(v->rest) > CLI_WIDTH)
			fprintf(f, "\n%*s", (int)indent, "");
		else
			fputc(' ', f);
		fputs(v->rest, f);
	}
	fprintf(f, "\n\n%s\n", v->what);
	if (v->accepts)
		fputc('\n', f);
	for (unsigned int i = 0; i < CLI_NR_ROWS; i++) {
		const struct cli_row *r = &cli_rows[i];
		int n;

		if (!(v->accepts & r->bit))
			continue;
		n = fprintf(f, "  --%s%s%s", r->name, r->arg ? " " : "",
			    r->arg ? r->arg : "");
		fprintf(f, "%*s", (int)(width + 5) - n, "");
		print_wrapped(f, help_of(v, r), r, width + 5, width + 5);
		fputc('\n', f);
	}
	if (v->after)
		fprintf(f, "\n%s\n", v->after);
}

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

/* A whole-number option, in its row's range. */
static int parse_count(const struct cli_row *r, const char *arg,
		       unsigned int *out)
{
	if (parse_uint(arg, r->min, r->max, out)) {
		pr_err("--%s '%s': give a whole number from %lu to %lu",
		       r->name, arg, r->min, r->max);
		return -EINVAL;
	}
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
		return parse_count(row_of_val(c), arg, &a->vcpus);
	case 'R':
		return parse_count(row_of_val(c), arg, &a->reps);
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
	case 'u':
		a->socket = arg;
		return 0;
	case 'V':
		return 0; /* a flag: a->given says it */
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

int cli_parse(const struct cli_verb *v, int argc, char **argv,
	      struct cli_args *a)
{
	struct option opts[CLI_NR_ROWS + 2];
	const struct cli_row *r;
	unsigned int n = 0;
	int c, idx;

	for (unsigned int i = 0; i < CLI_NR_ROWS; i++)
		if (v->accepts & cli_rows[i].bit)
			opts[n++] = (struct option){ cli_rows[i].name,
						     cli_rows[i].arg ?
							     required_argument :
							     no_argument,
						     NULL, cli_rows[i].val };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ 0 };
	optind = 1;
	/* "+": a verb with a rest stops at its first word (a command). */
	while ((c = getopt_long(argc, argv, v->rest ? "+h" : "h", opts,
				&idx)) != -1) {
		if (c == 'h') {
			cli_usage(v, stdout);
			return 1;
		}
		r = row_of_val(c);
		if (c == '?' || c == ':' || !r) {
			cli_usage(v, stderr);
			return -EINVAL;
		}
		a->given |= r->bit;
		if (parse_one(c, optarg, a))
			return -EINVAL;
	}
	if (v->rest) {
		a->rest = argv + optind;
		a->nrest = argc - optind;
	} else if (optind < argc) {
		pr_err("%s: unexpected argument '%s'", v->name, argv[optind]);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < CLI_NR_ROWS; i++) {
		r = &cli_rows[i];
		if ((v->required & r->bit) && !(a->given & r->bit)) {
			if (r->example)
				pr_err("%s needs --%s %s, e.g. --%s %s",
				       v->name, r->name, r->arg, r->name,
				       r->example);
			else
				pr_err("%s needs --%s%s%s", v->name, r->name,
				       r->arg ? " " : "", r->arg ? r->arg : "");
			return -EINVAL;
		}
	}
	return 0;
}
