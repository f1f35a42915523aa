// SPDX-License-Identifier: MIT
/*
 * `make static-check`: libzvmm.a linked into a shared object and into a
 * program, through the public header alone. The program checks that the
 * archive's functions are the 0.2 ones (reserved space refused when not
 * zero, backends listed).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../include/zvmm/zvmm.h"

int static_check(void);

int static_check(void)
{
	struct zvmm_backend_info info[32];
	struct zvmm_mem m;

	zvmm_mem_init(&m, 4ULL << 20, ZVMM_PAGE_2M);
	m.reserved[3] = 1;
	if (zvmm_mem_check(&m) != -EINVAL)
		return 1;
	if (zvmm_backends(info, 32) < 1 || !info[0].name[0])
		return 2;
	return strcmp(zvmm_version(), ZVMM_VERSION) ? 3 : 0;
}

#ifdef STATIC_CHECK_MAIN
int main(void)
{
	int ret = static_check();

	if (ret)
		fprintf(stderr, "static-check: libzvmm.a failed check %d\n",
			ret);
	return ret;
}
#endif
