// SPDX-License-Identifier: MIT
#include <errno.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "cli.h"

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
	case -EIO:
		return EXIT_OTHER;
	default:
		return EXIT_RESOURCE;
	}
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
