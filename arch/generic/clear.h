/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ARCH_GENERIC_CLEAR_H
#define ZVMM_ARCH_GENERIC_CLEAR_H

#include <stddef.h>

#include "../arch.h"

/* Backends that run on every architecture. */
extern const struct arch_backend generic_backends[];
extern const unsigned int generic_nr_backends;

void generic_clear_memset(void *addr, size_t len);
void generic_clear_page_at_a_time(void *addr, size_t len);

#endif
