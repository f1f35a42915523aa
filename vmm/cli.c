// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "../include/zvmm/zvmm.h"

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
