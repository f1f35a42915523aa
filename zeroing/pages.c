// SPDX-License-Identifier: MIT
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

/*
 * Allowed transitions. MAPPED is reached from ZERO (UFFDIO_CONTINUE or
 * populating the guest mapping) or from FRESH (the kernel zeroes a page
 * it allocates on the guest's fault). A page being cleared goes back to
 * DIRTY when the work is cancelled: it may still hold data. Any page can
 * be punched out of the file and become FRESH again, and a FRESH page
 * becomes DIRTY when the file turns out to hold it after all (someone
 * wrote it): distrust is always allowed.
 */
static const bool allowed[ZP_NR_STATES][ZP_NR_STATES] = {
	[ZP_FRESH] = { [ZP_ZEROING] = true, [ZP_MAPPED] = true, [ZP_DIRTY] = true },
	[ZP_DIRTY] = { [ZP_ZEROING] = true, [ZP_FRESH] = true },
	[ZP_ZEROING] = { [ZP_ZERO] = true, [ZP_DIRTY] = true },
	[ZP_ZERO] = { [ZP_MAPPED] = true, [ZP_DIRTY] = true, [ZP_FRESH] = true },
	[ZP_MAPPED] = { [ZP_DIRTY] = true, [ZP_FRESH] = true },
};

static const char *const names[ZP_NR_STATES] = {
	"FRESH", "DIRTY", "ZEROING", "ZERO", "MAPPED",
};

int zero_pages_create(uint64_t nr, enum zero_page_state initial,
		      struct zero_pages **out)
{
	struct zero_pages *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->state = malloc(nr ? nr : 1);
	if (!p->state) {
		free(p);
		return -ENOMEM;
	}
	memset(p->state, initial, nr);
	p->nr = nr;
	*out = p;
	return 0;
}

void zero_pages_destroy(struct zero_pages *p)
{
	if (!p)
		return;
	free(p->state);
	free(p);
}

bool zero_page_transition_ok(enum zero_page_state from, enum zero_page_state to)
{
	return from < ZP_NR_STATES && to < ZP_NR_STATES && allowed[from][to];
}

int zero_page_move(struct zero_pages *p, uint64_t i, enum zero_page_state from,
		   enum zero_page_state to)
{
	uint8_t expect = (uint8_t)from;

	if (!zero_page_transition_ok(from, to)) {
#ifndef NDEBUG
		assert(!"page state transition breaks the zeroing invariant");
#endif
		return -EINVAL;
	}
	if (i >= p->nr)
		return -EINVAL;
	/* Release: the zeros written before this are seen by whoever reads
	 * the new state with acquire. */
	if (!__atomic_compare_exchange_n(&p->state[i], &expect, (uint8_t)to,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return -EAGAIN;
	return 0;
}

void zero_pages_reset(struct zero_pages *p, enum zero_page_state s)
{
	for (uint64_t i = 0; i < p->nr; i++)
		__atomic_store_n(&p->state[i], (uint8_t)s, __ATOMIC_RELEASE);
}

uint64_t zero_pages_count(const struct zero_pages *p, enum zero_page_state s)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < p->nr; i++)
		n += zero_page_get(p, i) == s;
	return n;
}

const char *zero_page_state_name(enum zero_page_state s)
{
	return s < ZP_NR_STATES ? names[s] : "?";
}
