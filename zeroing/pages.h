/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_PAGES_H
#define ZVMM_ZEROING_PAGES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The page state table (DESIGN.md 3): one state per hugepage of guest
 * memory. Invariant: a page becomes MAPPED only from ZERO, or from FRESH
 * through the kernel's own zeroing. Every change goes through
 * zero_page_move(), which refuses (and in debug builds asserts on) any
 * other transition.
 */

enum zero_page_state {
	ZP_FRESH, /* not allocated; the kernel zeroes it on allocation */
	ZP_DIRTY, /* allocated, may hold stale data */
	ZP_ZEROING, /* being cleared */
	ZP_ZERO, /* known zero, not visible to the guest */
	ZP_MAPPED, /* in the guest mapping; its content is the guest's */
	ZP_NR_STATES,
};

struct zero_pages {
	uint64_t nr;
	uint8_t *state; /* accessed with __atomic builtins */
};

int zero_pages_create(uint64_t nr, enum zero_page_state initial,
		      struct zero_pages **out)
	__attribute__((warn_unused_result));
void zero_pages_destroy(struct zero_pages *p);

static inline enum zero_page_state zero_page_get(const struct zero_pages *p,
						 uint64_t i)
{
	return (enum zero_page_state)__atomic_load_n(&p->state[i],
						     __ATOMIC_ACQUIRE);
}

/* Whether @from -> @to keeps the invariant. */
bool zero_page_transition_ok(enum zero_page_state from,
			     enum zero_page_state to);

/*
 * Moves page @i from @from to @to. Returns 0; -EAGAIN when the page is
 * not in @from (nothing changes); -EINVAL for a transition the invariant
 * forbids (assert in debug builds).
 */
int zero_page_move(struct zero_pages *p, uint64_t i, enum zero_page_state from,
		   enum zero_page_state to) __attribute__((warn_unused_result));

/*
 * Sets every page to @s without a transition: only while no worker or
 * guest can see the table (a pool's state record at launch, after the
 * pool is punched out and quiesced).
 */
void zero_pages_reset(struct zero_pages *p, enum zero_page_state s);

uint64_t zero_pages_count(const struct zero_pages *p, enum zero_page_state s);

const char *zero_page_state_name(enum zero_page_state s);

#endif
