// SPDX-License-Identifier: MIT
/* The registry answers "which backends can run here" and refuses the
 * others with a reason, without ever calling them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "../zeroing/backend.h"

Test(registry, lists_every_backend_of_this_arch_once)
{
	const struct zero_backend *b, *c;
	unsigned int i, j;

	cr_assert_eq(zero_backend_count(), arch_nr_backends + 2);
	for_each_backend(i, b) {
		cr_assert_not_null(b->clear, "%s has no function", b->name);
		for_each_backend(j, c)
			cr_assert(i == j || strcmp(b->name, c->name),
				  "%s listed twice", b->name);
	}
}

Test(registry, generic_backends_run_anywhere)
{
	const struct zero_backend *b;

	cr_assert_eq(zero_backend_lookup("memset", 0, &b, NULL, 0), 0);
	cr_assert_str_eq(b->name, "memset");
	cr_assert_eq(zero_backend_lookup("page_at_a_time", 0, &b, NULL, 0), 0);
}

Test(registry, unknown_name_is_enoent_with_the_list)
{
	const struct zero_backend *b = NULL;
	char why[512];

	cr_assert_eq(zero_backend_find("warp_drive", &b, why, sizeof(why)),
		     -ENOENT);
	cr_assert_null(b);
	cr_assert(strstr(why, "unknown backend 'warp_drive'"), "%s", why);
	cr_assert(strstr(why, "memset"), "%s", why);
}

Test(registry, other_architecture_is_named)
{
	const char *foreign = strcmp(arch_name, "arm64") ? "dc_zva" : "clzero";
	const struct zero_backend *b;
	char why[512];

	cr_assert_eq(zero_backend_find(foreign, &b, why, sizeof(why)),
		     -EOPNOTSUPP);
	cr_assert(strstr(why, "is for"), "%s", why);
	cr_assert(strstr(why, arch_name), "%s", why);
}

Test(registry, missing_feature_is_refused_not_run)
{
	const struct zero_backend *b;
	char why[512];
	unsigned int i;
	int checked = 0;

	for_each_backend(i, b) {
		const struct zero_backend *got;

		if (!b->needs)
			continue;
		/* With no features at all the backend must be refused. */
		cr_assert_eq(zero_backend_lookup(b->name, 0, &got, why,
						 sizeof(why)),
			     -EOPNOTSUPP, "%s", b->name);
		cr_assert(strstr(why, "needs the CPU feature"), "%s", why);
		cr_assert_eq(zero_backend_lookup(b->name, b->needs, &got, NULL,
						 0),
			     0);
		checked++;
	}
	if (!checked)
		cr_skip_test("no backend of %s needs a CPU feature", arch_name);
}

Test(registry, available_list_matches_runs_here)
{
	const struct zero_backend *b;
	char list[512];
	unsigned int i;

	zero_backend_list_available(list, sizeof(list));
	for_each_backend(i, b)
		cr_assert_eq(strstr(list, b->name) != NULL,
			     zero_backend_runs_here(b), "%s vs list '%s'",
			     b->name, list);
}
