/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_VMM_CLI_H
#define ZVMM_VMM_CLI_H

#include <stdint.h>

/*
 * The command line. Only the CLI decides exit statuses (DESIGN.md 8):
 * 0 success, 1 other failures, 2 usage or configuration errors, 3
 * missing resources, 130 an interrupted run.
 */
enum {
	EXIT_OTHER = 1,
	EXIT_USAGE = 2,
	EXIT_RESOURCE = 3,
	EXIT_INTERRUPTED = 130,
};

/* Maps a negative errno from the engine to an exit status. */
int cli_exit_status(int err);

/* Parses a SIZE option value; prints the error and returns -EINVAL. */
int cli_parse_size(const char *opt, const char *arg, uint64_t *out);

struct zero_policy;

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

/* The verbs; each parses its own options from argv[0] on. */
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_prezero(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
