/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_TOPO_H
#define ZVMM_ZEROING_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/*
 * Where the workers run and which pages each NUMA node holds. Detection
 * reads the machine through libnuma; planning is a pure function of a
 * topology so it can be tested with made-up machines.
 */

#define ZERO_MAX_NODE_CORES 256

struct zero_node_info {
	int id;
	unsigned int nr_cores; /* physical cores: one CPU per core */
	int cores[ZERO_MAX_NODE_CORES];
	uint64_t mem_bytes; /* memory the node has free */
};

struct zero_topo {
	unsigned int nr_nodes;
	struct zero_node_info node[ZERO_MAX_NODES]; /* ascending id */
	uint8_t distance[ZERO_MAX_NODES][ZERO_MAX_NODES]; /* by index */
	int local_node; /* the node zvmm runs on */
};

/* Reads this machine's topology; one node when NUMA is not available. */
int zero_topo_detect(struct zero_topo *t) __attribute__((warn_unused_result));

struct zero_plan_range {
	int node;
	uint64_t first_page;
	uint64_t nr_pages;
};

struct zero_plan_worker {
	int cpu; /* pinned here */
	int node; /* node whose pages it clears */
};

struct zero_plan {
	unsigned int nr_ranges; /* one per node holding memory, ascending */
	struct zero_plan_range range[ZERO_MAX_NODES];
	unsigned int nr_workers;
	struct zero_plan_worker worker[ZERO_MAX_WORKERS];
};

/*
 * Splits @nr_pages across nodes as the policy's [numa] section says and
 * places workers: `workers = auto` gives each node holding memory one
 * worker per physical core of that node, or of the nearest node with
 * CPUs when it has none; a number is shared out in proportion to pages.
 * Returns 0, or -EINVAL with @err saying what in the policy does not fit
 * the topology.
 */
int zero_plan_make(const struct zero_topo *t, const struct zero_policy *pol,
		   uint64_t nr_pages, uint64_t page_bytes,
		   struct zero_plan *plan, char *err, size_t err_len)
	__attribute__((warn_unused_result));

#endif
