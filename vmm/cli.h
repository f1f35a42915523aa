/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_CLI_H
#define ZVMM_VMM_CLI_H

#include <stdint.h>

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

/* Parses a SIZE option value; prints the error and returns -EINVAL. */
int cli_parse_size(const char *opt, const char *arg, uint64_t *out);

struct zero_policy;
struct zvmm_policy;

#define CLI_MAX_SETS 32

/* The --set options of one command, in order. */
struct cli_sets {
	char *v[CLI_MAX_SETS];
	unsigned int n;
};

/* Adds one --set value; prints the error and returns -EINVAL when full. */
int cli_add_set(struct cli_sets *sets, char *value);

/* Defaults, then @file, then each of @sets; prints errors (usage). */
int cli_load_policy(const char *file, const struct cli_sets *sets,
		    struct zero_policy *pol);

/*
 * The same as a libzvmm policy: 0, -EINVAL for an error in the file or
 * a --set (usage), -ENOENT and the like when the file cannot be read.
 */
int cli_policy(const char *file, const struct cli_sets *sets,
	       struct zvmm_policy **out);

/* The verbs; each parses its own options from argv[0] on. */
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_prezero(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
