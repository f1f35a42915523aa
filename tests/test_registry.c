// SPDX-License-Identifier: MIT
/* The registry answers "which backends can run here" and refuses the
 * others with a reason, without ever calling them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "../zeroing/backend.h"
#include "helpers.h"

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
		test_skip(TEST_NEED_CPU, "no backend of %s needs one",
			  arch_name);
}

Test(registry, available_list_matches_runs_here)
{
	const struct zero_backend *b;
	char list[512], *tok, *save = NULL;
	unsigned int i;

	zero_backend_list(zero_cpu_features(), " ", list, sizeof(list));
	tok = strtok_r(list, " ", &save);
	for_each_backend(i, b) {
		if (!zero_backend_runs_here(b))
			continue;
		cr_assert_not_null(tok, "%s runs here but is not listed",
				   b->name);
		cr_assert_str_eq(tok, b->name);
		tok = strtok_r(NULL, " ", &save);
	}
	cr_assert_null(tok, "'%s' listed but does not run here", tok);
}

Test(registry, index_finds_every_backend_by_name)
{
	const struct zero_backend *b;
	unsigned int i;

	for_each_backend(i, b)
		cr_assert_eq(zero_backend_index(b->name), (int)i, "%s",
			     b->name);
	cr_assert_eq(zero_backend_index("warp_drive"), -1);
}

/* The table of every architecture's names and the registry agree. */
Test(registry, every_name_is_built_here_or_for_another_architecture)
{
	const struct zero_backend_name *k, *l;
	const struct zero_backend *b;
	unsigned int i, j, foreign = 0;

	for_each_backend(i, b) {
		for (j = 0; (k = zero_backend_name_at(j)); j++)
			if (!strcmp(k->name, b->name))
				break;
		cr_assert_not_null(k, "%s is not in zero_backend_name_at()",
				   b->name);
		cr_assert_str_eq(k->arch, b->generic ? "generic" : arch_name,
				 "%s", b->name);
	}
	for (i = 0; (k = zero_backend_name_at(i)); i++) {
		char why[512];

		for (j = 0; j < i; j++) {
			l = zero_backend_name_at(j);
			cr_assert_str_neq(l->name, k->name, "listed twice");
		}
		if (!strcmp(k->arch, arch_name) ||
		    !strcmp(k->arch, "generic")) {
			cr_assert_geq(zero_backend_index(k->name), 0,
				      "%s (%s) is not built here", k->name,
				      k->arch);
			continue;
		}
		cr_assert_eq(zero_backend_index(k->name), -1, "%s", k->name);
		cr_assert_eq(zero_backend_find(k->name, &b, why, sizeof(why)),
			     -EOPNOTSUPP, "%s", k->name);
		cr_assert(strstr(why, "is for"), "%s", why);
		foreign++;
	}
	cr_assert_gt(foreign, 0, "no backend of another architecture");
}
