// SPDX-License-Identifier: MIT
// The public header as a C++ VMM includes it: compiled by `make test` with
// g++ -std=c++11 -pedantic -Wall -Wextra -Werror (syntax only).
#include <zvmm/zvmm.h>

int main()
{
	struct zvmm_mem mem;

	zvmm_mem_init(&mem, 64ULL << 20, ZVMM_PAGE_2M);
	return zvmm_check_version(ZVMM_VERSION_MAJOR, ZVMM_VERSION_MINOR) ||
	       mem.fd != -1;
}
