// SPDX-License-Identifier: MIT
/*
 * The planner with made-up machines: one node (ours), two nodes, and four
 * nodes of which one has memory and no CPUs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "../lib/size.h"
#include "../zeroing/topo.h"

static struct zero_topo t;
static struct zero_plan plan;
static struct zero_policy pol;
static char err[256];

/* Node i gets @cores cores numbered from @first_cpu and @mem_gib GiB. */
static void node(unsigned int i, unsigned int cores, int first_cpu,
		 uint64_t mem_gib)
{
	t.node[i].id = (int)i;
	t.node[i].nr_cores = cores;
	for (unsigned int c = 0; c < cores; c++)
		t.node[i].cores[c] = first_cpu + (int)c;
	t.node[i].mem_bytes = mem_gib << 30;
	if (t.nr_nodes <= i)
		t.nr_nodes = i + 1;
}

static void distances(void)
{
	for (unsigned int a = 0; a < t.nr_nodes; a++)
		for (unsigned int b = 0; b < t.nr_nodes; b++)
			t.distance[a][b] = a == b ? 10 :
						    (a / 2 == b / 2 ? 16 : 32);
}

static void setup(void)
{
	memset(&t, 0, sizeof(t));
	zero_policy_defaults(&pol);
}

TestSuite(plan, .init = setup);

static void check_ranges_cover(uint64_t nr_pages)
{
	uint64_t next = 0;

	for (unsigned int i = 0; i < plan.nr_ranges; i++) {
		cr_assert_eq(plan.range[i].first_page, next);
		cr_assert_gt(plan.range[i].nr_pages, 0);
		next += plan.range[i].nr_pages;
	}
	cr_assert_eq(next, nr_pages);
}

Test(plan, one_node_auto_is_one_worker_per_core)
{
	node(0, 2, 0, 24);
	distances();
	cr_assert_eq(zero_plan_make(&t, &pol, 32, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_ranges, 1);
	check_ranges_cover(32);
	cr_assert_eq(plan.nr_workers, 2);
	cr_assert_eq(plan.worker[0].cpu, 0);
	cr_assert_eq(plan.worker[1].cpu, 1);
	cr_assert_eq(plan.worker[1].node, 0);
}

Test(plan, one_node_fixed_workers_wrap_over_cores)
{
	node(0, 2, 0, 24);
	pol.workers = 5;
	cr_assert_eq(zero_plan_make(&t, &pol, 32, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_workers, 5);
	for (unsigned int w = 0; w < 5; w++)
		cr_assert_eq(plan.worker[w].cpu, (int)(w % 2));
}

Test(plan, two_nodes_local_interleave_bind)
{
	node(0, 4, 0, 64);
	node(1, 4, 4, 32);
	distances();
	t.local_node = 1;
	cr_assert_eq(zero_plan_make(&t, &pol, 100, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_ranges, 1);
	cr_assert_eq(plan.range[0].node, 1, "local means zvmm's node");
	cr_assert_eq(plan.nr_workers, 4);
	for (unsigned int w = 0; w < 4; w++)
		cr_assert_eq(plan.worker[w].cpu, 4 + (int)w);

	pol.numa = ZERO_NUMA_INTERLEAVE;
	cr_assert_eq(zero_plan_make(&t, &pol, 101, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_ranges, 2);
	check_ranges_cover(101);
	cr_assert_eq(plan.range[0].nr_pages, 51);
	cr_assert_eq(plan.range[1].nr_pages, 50);
	cr_assert_eq(plan.nr_workers, 8);
	cr_assert_eq(plan.worker[0].node, 0);
	cr_assert_eq(plan.worker[7].node, 1);
	cr_assert_eq(plan.worker[7].cpu, 7);

	pol.numa = ZERO_NUMA_BIND;
	pol.workers = 3;
	cr_assert_eq(zero_plan_make(&t, &pol, 96, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	check_ranges_cover(96);
	cr_assert_eq(plan.range[0].nr_pages, 64, "bind splits by free memory");
	cr_assert_eq(plan.range[1].nr_pages, 32);
	cr_assert_eq(plan.nr_workers, 3);
	cr_assert_eq(plan.worker[0].node, 0);
	cr_assert_eq(plan.worker[1].node, 0);
	cr_assert_eq(plan.worker[2].node, 1);
	cr_assert_eq(plan.worker[2].cpu, 4);

	pol.nodes = 1ull << 1;
	pol.workers = 0;
	cr_assert_eq(zero_plan_make(&t, &pol, 16, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_ranges, 1);
	cr_assert_eq(plan.range[0].node, 1);
}

Test(plan, four_nodes_with_a_memory_only_node)
{
	node(0, 8, 0, 16);
	node(1, 8, 8, 16);
	node(2, 0, 0, 16); /* memory, no CPUs: served from node 3 */
	node(3, 2, 16, 16);
	distances();
	pol.numa = ZERO_NUMA_INTERLEAVE;
	cr_assert_eq(zero_plan_make(&t, &pol, 64, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_ranges, 4);
	check_ranges_cover(64);
	cr_assert_eq(plan.nr_workers, 8 + 8 + 2 + 2);
	for (unsigned int w = 0; w < plan.nr_workers; w++) {
		const struct zero_plan_worker *x = &plan.worker[w];

		if (x->node == 2)
			cr_assert(x->cpu == 16 || x->cpu == 17,
				  "node 2 worker on cpu %d, not node 3's",
				  x->cpu);
		else if (x->node == 0)
			cr_assert_lt(x->cpu, 8);
	}
	pol.workers = 4;
	cr_assert_eq(zero_plan_make(&t, &pol, 64, SZ_1G, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(plan.nr_workers, 4, "one per memory node");
	pol.workers = 3;
	cr_assert_eq(zero_plan_make(&t, &pol, 64, SZ_1G, &plan, err,
				    sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "spans 4 nodes"), "%s", err);
}

Test(plan, bad_node_lists)
{
	node(0, 2, 0, 16);
	node(1, 0, 0, 0);
	distances();
	pol.nodes = 1ull << 5;
	cr_assert_eq(zero_plan_make(&t, &pol, 4, SZ_1G, &plan, err,
				    sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "node 5"), "%s", err);
	pol.nodes = 3;
	pol.numa = ZERO_NUMA_BIND;
	cr_assert_eq(zero_plan_make(&t, &pol, 4, SZ_1G, &plan, err,
				    sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "node 1, which has no memory"), "%s", err);
}

Test(plan, this_machine)
{
	struct zero_topo here;

	cr_assert_eq(zero_topo_detect(&here), 0);
	cr_assert_geq(here.nr_nodes, 1);
	cr_assert_geq(here.node[0].nr_cores, 1);
	cr_assert_eq(zero_plan_make(&here, &pol, 8, SZ_2M, &plan, err,
				    sizeof(err)),
		     0, "%s", err);
	cr_assert_geq(plan.nr_workers, 1);
}
