/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_CLI_H
#define ZVMM_VMM_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The command line. Only the CLI decides exit statuses (DESIGN.md 8),
 * and every one of them is here. `zvmm run` also exits with the guest's
 * own failure code, written to the exit port.
 */
enum {
	EXIT_OTHER = 1, /* anything below does not name */
	EXIT_USAGE = 2, /* usage or configuration errors */
	EXIT_RESOURCE = 3, /* a missing resource: memory, hugepages, KVM, ... */
	EXIT_CRASH = 4, /* the guest crashed (triple fault, emulation) */
	EXIT_TIMEOUT = 124, /* the guest ran past --timeout, as timeout(1) */
	EXIT_INTERRUPTED = 130, /* SIGINT or SIGTERM */
};

/*
 * Maps a negative errno to an exit status: -EINVAL is usage, the errnos
 * that name a missing resource are 3, an interruption 130, and anything
 * else (an I/O error, a failure no one foresaw) 1.
 */
int cli_exit_status(int err);

/* Messages to stderr, the library's API names turned into zvmm's flags. */
void cli_log_to_stderr(void);

/*
 * For a command that says several problems in one message: from
 * cli_log_hold() the messages are held, not printed; cli_log_release()
 * prints the held warnings and notes, and gives the last error (as the
 * library wrote it, "" if none) in @err for the command to say.
 */
void cli_log_hold(void);
void cli_log_release(char *err, size_t len);

/* Parses a SIZE option value; prints the error and returns -EINVAL. */
int cli_parse_size(const char *opt, const char *arg, uint64_t *out);

struct zvmm_policy;

/* bench --reps: what the usage text and the parser both say. */
#define CLI_MAX_REPS 64
#define CLI_MAX_SETS 32

/* The --set options of one command, in order. */
struct cli_sets {
	char *v[CLI_MAX_SETS];
	unsigned int n;
};

/* Adds one --set value; prints the error and returns -EINVAL when full. */
int cli_add_set(struct cli_sets *sets, char *value);

/*
 * Defaults, then @file, then each of @sets, as a libzvmm policy; errors
 * printed. 0, -EINVAL for an error in the file or
 * a --set (usage), -ENOENT and the like when the file cannot be read.
 */
int cli_policy(const char *file, const struct cli_sets *sets,
	       struct zvmm_policy **out);

/* The same from zeroing.mode = @mode instead of the library's default. */
int cli_policy_mode(const char *mode, const char *file,
		    const struct cli_sets *sets, struct zvmm_policy **out);

/*
 * Every option of every verb in one table of rows (vmm/cli.c): its name,
 * its value's name, what it does, and for a whole number the range the
 * parser takes, which the usage text states from the same row. A verb
 * is a struct cli_verb naming the options it accepts; the parser and the
 * usage text both come from it and the rows, as kvmtool's OPT_* rows.
 */
enum {
	CLI_MEM = 1u << 0, /* --mem SIZE */
	CLI_HUGEPAGES = 1u << 1, /* --hugepages 2M|1G */
	CLI_POOL = 1u << 2, /* --pool PATH */
	CLI_POLICY = 1u << 3, /* --policy FILE */
	CLI_SET = 1u << 4, /* --set S.K=V, repeatable */
	CLI_JSON = 1u << 5, /* --json FILE|- */
	CLI_QUIET = 1u << 6, /* --quiet */
	CLI_VERBOSE = 1u << 7, /* --verbose */
	CLI_VCPUS = 1u << 8, /* --vcpus N */
	CLI_GUEST = 1u << 9, /* --guest ELF */
	CLI_CMDLINE = 1u << 10, /* --cmdline STR */
	CLI_SERIAL = 1u << 11, /* --serial FILE */
	CLI_KVM = 1u << 12, /* --kvm PATH */
	CLI_RESERVE = 1u << 13, /* --reserve */
	CLI_TIMEOUT = 1u << 14, /* --timeout SECONDS */
	CLI_SIZE = 1u << 15, /* --size SIZE */
	CLI_REPS = 1u << 16, /* --reps N */
	CLI_BACKENDS = 1u << 17, /* --backends LIST */
	CLI_PLOT = 1u << 18, /* --plot DIR */
	CLI_OUT = 1u << 19, /* --out FILE|- */
	CLI_SOCKET = 1u << 20, /* --socket PATH */
	CLI_POOL_SERVICE = 1u << 21, /* --pool-service */
};

/* A verb's own words for one of its options (the row's are general). */
struct cli_text {
	unsigned int bit;
	const char *text;
};

struct cli_verb {
	const char *name; /* "run" */
	unsigned int accepts; /* the CLI_* options it takes */
	unsigned int required; /* of those, the ones it cannot do without */
	const char *what; /* a paragraph: what the verb does */
	const struct cli_text *texts; /* its words, ending with { 0 }; or NULL */
	const char *after; /* said after the options (exit status), or NULL */
	/* what follows the options (a command to run), in the synopsis; the
	 * first argument that is no option ends them. NULL: none taken */
	const char *rest;
};

struct cli_args {
	uint64_t mem, page_bytes, size;
	const char *pool, *policy, *json, *guest, *cmdline, *serial, *kvm;
	const char *backends, *plot, *out, *socket;
	struct cli_sets sets;
	unsigned int vcpus, reps;
	double timeout; /* seconds, 0: none */
	bool quiet, verbose, reserve;
	unsigned int given; /* the CLI_* options the command line named */
	char **rest; /* the verb's rest (struct cli_verb), NULL-terminated */
	int nrest;
};

/* @v's usage text: synopsis, what it does, one line per option. */
void cli_usage(const struct cli_verb *v, FILE *f);

/*
 * Parses argv (argv[0] is the verb) for @v's options. @a holds the
 * verb's defaults on entry. Returns 0, 1 when --help was printed on
 * stdout, or -EINVAL with the error (or the usage, for an unknown
 * option) printed: a value outside its row's range, a required option
 * missing.
 */
int cli_parse(const struct cli_verb *v, int argc, char **argv,
	      struct cli_args *a);

struct zvmm_mem;

/*
 * The memory source of --mem, --hugepages, --pool and --pool-service
 * [--socket] as parsed into @a: a pool file, a zvmmd lease, or (neither)
 * a private memfd. -EINVAL, said, for --pool with --pool-service, or
 * --socket without it.
 */
int cli_mem_source(const struct cli_args *a, struct zvmm_mem *mem);

/* The verbs; each parses its own options from argv[0] on. */
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_prezero(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
