// SPDX-License-Identifier: MIT
/*
 * The public header and libzvmm(3) agree: every function the header
 * exports is in the manual page's SYNOPSIS and described after it, and
 * no SYNOPSIS line names a function the header does not have.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* The names after "ZVMM_API <type> " up to '(' in @hdr, in @names. */
static int api_names(const char *hdr, char names[][48], int max)
{
	const char *p = hdr;
	int n = 0;

	while ((p = strstr(p, "\nZVMM_API ")) && n < max) {
		const char *paren = strchr(p, '('), *s = paren;

		while (s > p &&
		       (s[-1] == '_' || (s[-1] >= 'a' && s[-1] <= 'z') ||
			(s[-1] >= '0' && s[-1] <= '9')))
			s--;
		snprintf(names[n], sizeof(names[n]), "%.*s", (int)(paren - s),
			 s);
		n++;
		p = paren;
	}
	return n;
}

Test(docs, every_function_is_in_libzvmm_3)
{
	char *hdr = test_slurp("include/zvmm/zvmm.h");
	char *man = test_slurp("man/libzvmm.3");
	char *syn = strstr(man, ".SH SYNOPSIS"),
	     *desc = strstr(man, ".SH DESCRIPTION");
	char names[128][48], want[96];
	int n = api_names(hdr, names, 128);

	cr_assert(syn && desc && syn < desc);
	cr_assert_gt(n, 30, "only %d API functions found", n);
	for (int i = 0; i < n; i++) {
		char *at;

		snprintf(want, sizeof(want), "%.47s(", names[i]);
		at = strstr(syn, want);
		cr_assert(at && at < desc, "%s is not in libzvmm(3)'s SYNOPSIS",
			  names[i]);
		snprintf(want, sizeof(want), ".BR %.47s ()", names[i]);
		cr_assert(strstr(desc, want),
			  "%s is not described in libzvmm(3)", names[i]);
	}
	/* And the other way: every zvmm_ function in SYNOPSIS exists. */
	for (char *p = syn; (p = strstr(p, "zvmm_")) && p < desc; p++) {
		char name[48];
		bool found = false;
		int k = 0;

		while (k < 47 && (p[k] == '_' || (p[k] >= 'a' && p[k] <= 'z') ||
				  (p[k] >= '0' && p[k] <= '9')))
			k++;
		if (p[k] != '(')
			continue;
		snprintf(name, sizeof(name), "%.*s", k, p);
		for (int i = 0; i < n; i++)
			found |= !strcmp(name, names[i]);
		cr_assert(found, "libzvmm(3) lists %s, which the header lacks",
			  name);
	}
	free(hdr);
	free(man);
}

/*
 * `pkg-config --cflags zvmm` is zvmm's include directory alone: the
 * public header includes no other library's, so an embedder's compile
 * line gets nothing of json-c, libnuma or libinih (they are named for a
 * static link in Libs.private).
 */
Test(docs, pkg_config_cflags_are_zvmms_alone)
{
	const char *lib = getenv("ZVMM_LIB");
	char cmd[2200], out[1024] = "", dir[1024], *nl;
	const char *slash;
	FILE *p;

	if (!lib || !(slash = strrchr(lib, '/')))
		test_skip(TEST_NEED_TOOL,
			  "ZVMM_LIB (the built libzvmm.so) not set");
	if (system("command -v pkg-config >/dev/null"))
		test_skip(TEST_NEED_TOOL, "no pkg-config");
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - lib), lib);
	/* A system include directory (PREFIX=/usr) is printed too. */
	snprintf(cmd, sizeof(cmd),
		 "export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_PATH=%s; "
		 "pkg-config --cflags zvmm; pkg-config --libs --static zvmm",
		 dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_eq(fread(out, 1, sizeof(out) - 1, p) > 0, 1);
	cr_assert_eq(pclose(p), 0, "%s", out);
	nl = strchr(out, '\n');
	cr_assert_not_null(nl, "%s", out);
	cr_assert(strstr(nl, "-ljson-c") && strstr(nl, "-lnuma"),
		  "a static link misses the private libraries: %s", out);
	*nl = '\0';
	cr_assert_eq(strncmp(out, "-I", 2), 0, "cflags: %s", out);
	cr_assert_null(strstr(out + 2, "-I"), "cflags: %s", out);
	cr_assert_null(strstr(out, "json-c"), "cflags: %s", out);
}
