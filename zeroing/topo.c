// SPDX-License-Identifier: MIT
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../lib/sysfs.h"
#include "topo.h"

/* Leaves *v as it was when the file cannot be read. */
static int read_int(const char *fmt, int cpu, int *v)
{
	char path[128];
	long l;
	int ret;

	snprintf(path, sizeof(path), fmt, cpu);
	ret = sysfs_read_long(path, &l);
	if (!ret)
		*v = (int)l;
	return ret;
}

/*
 * One CPU per physical core: SMT siblings share the core's store path
 * and add no write bandwidth (DESIGN.md 5).
 */
static void add_cpu(struct zero_node_info *n, int cpu, int (*seen)[2],
		    unsigned int *nseen)
{
	int core = cpu, pkg = 0;

	read_int("/sys/devices/system/cpu/cpu%d/topology/core_id", cpu, &core);
	read_int("/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 cpu, &pkg);
	for (unsigned int i = 0; i < *nseen; i++)
		if (seen[i][0] == pkg && seen[i][1] == core)
			return;
	if (*nseen < ZERO_MAX_NODE_CORES && n->nr_cores < ZERO_MAX_NODE_CORES) {
		seen[*nseen][0] = pkg;
		seen[*nseen][1] = core;
		(*nseen)++;
		n->cores[n->nr_cores++] = cpu;
	}
}

static int detect_locked(struct zero_topo *t)
{
	static int seen[ZERO_MAX_NODE_CORES][2];
	struct bitmask *cpus;
	unsigned int nseen;
	int max, cpu;

	memset(t, 0, sizeof(*t));
	if (numa_available() < 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_set_t set;

		t->nr_nodes = 1;
		nseen = 0;
		CPU_ZERO(&set);
		sched_getaffinity(0, sizeof(set), &set);
		for (cpu = 0; cpu < n && cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				add_cpu(&t->node[0], cpu, seen, &nseen);
		t->node[0].mem_bytes = (uint64_t)sysconf(_SC_AVPHYS_PAGES) *
				       (uint64_t)sysconf(_SC_PAGESIZE);
		t->distance[0][0] = 10;
		return 0;
	}
	max = numa_max_node();
	cpus = numa_allocate_cpumask();
	if (!cpus)
		return -ENOMEM;
	for (int node = 0; node <= max && t->nr_nodes < ZERO_MAX_NODES;
	     node++) {
		struct zero_node_info *n = &t->node[t->nr_nodes];
		long long free_bytes = 0;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, (unsigned int)node))
			continue;
		n->id = node;
		if (numa_node_size64(node, &free_bytes) >= 0 && free_bytes > 0)
			n->mem_bytes = (uint64_t)free_bytes;
		numa_bitmask_clearall(cpus);
		nseen = 0;
		if (!numa_node_to_cpus(node, cpus))
			for (cpu = 0; cpu < (int)cpus->size; cpu++)
				if (numa_bitmask_isbitset(cpus,
							  (unsigned)cpu) &&
				    numa_bitmask_isbitset(numa_all_cpus_ptr,
							  (unsigned)cpu))
					add_cpu(n, cpu, seen, &nseen);
		t->nr_nodes++;
	}
	numa_free_cpumask(cpus);
	for (unsigned int a = 0; a < t->nr_nodes; a++)
		for (unsigned int b = 0; b < t->nr_nodes; b++) {
			int d = numa_distance(t->node[a].id, t->node[b].id);

			t->distance[a][b] =
				(uint8_t)(d > 0 ? d : (a == b ? 10 : 20));
		}
	cpu = sched_getcpu();
	t->local_node = cpu >= 0 ? numa_node_of_cpu(cpu) : t->node[0].id;
	if (t->local_node < 0)
		t->local_node = t->node[0].id;
	return 0;
}

/*
 * One caller at a time: the cores seen are kept in a static table, and
 * libnuma 2.0.16 (Debian 12) caches numa_node_to_cpus()'s answer per
 * node without a lock, so two engines made at once by two threads leaked
 * its mask (LeakSanitizer, 8 KiB in numa_node_to_cpus).
 */
int zero_topo_detect(struct zero_topo *t)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int ret;

	pthread_mutex_lock(&lock);
	ret = detect_locked(t);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int index_of(const struct zero_topo *t, int id)
{
	for (unsigned int i = 0; i < t->nr_nodes; i++)
		if (t->node[i].id == id)
			return (int)i;
	return -1;
}

/* The node (index) whose cores serve node index @i: itself if it has
 * CPUs, else the nearest one that has, lowest id on a tie. */
static int serving_node(const struct zero_topo *t, unsigned int i)
{
	int best = -1;

	if (t->node[i].nr_cores)
		return (int)i;
	for (unsigned int j = 0; j < t->nr_nodes; j++)
		if (t->node[j].nr_cores &&
		    (best < 0 || t->distance[i][j] < t->distance[i][best]))
			best = (int)j;
	return best;
}

/* Splits @nr_pages over @n nodes in proportion to @weight, ascending. */
static void split(uint64_t nr_pages, const uint64_t *weight, unsigned int n,
		  uint64_t *out)
{
	uint64_t total = 0, given = 0;

	for (unsigned int i = 0; i < n; i++)
		total += weight[i];
	for (unsigned int i = 0; i < n; i++) {
		out[i] = total ? (uint64_t)((double)nr_pages *
					    (double)weight[i] / (double)total) :
				 0;
		given += out[i];
	}
	for (unsigned int i = 0; given < nr_pages; i = (i + 1) % n, given++)
		out[i]++;
}

int zero_plan_make(const struct zero_topo *t, const struct zero_policy *pol,
		   uint64_t nr_pages, uint64_t page_bytes,
		   struct zero_plan *plan, char *err, size_t err_len)
{
	uint64_t weight[ZERO_MAX_NODES], pages[ZERO_MAX_NODES], first = 0;
	unsigned int idx[ZERO_MAX_NODES], n = 0, i, k, w;
	uint64_t mask = pol->nodes;

	memset(plan, 0, sizeof(*plan));
	for (i = 0; i < ZERO_MAX_NODES; i++)
		if ((mask & (1ull << i)) && index_of(t, (int)i) < 0) {
			snprintf(
				err, err_len,
				"numa.nodes names node %u, which this machine does not have (it has %u node%s)",
				i, t->nr_nodes, t->nr_nodes == 1 ? "" : "s");
			return -EINVAL;
		}
	if (!mask)
		for (i = 0; i < t->nr_nodes; i++)
			mask |= 1ull << t->node[i].id;

	switch (pol->numa) {
	case ZERO_NUMA_LOCAL: {
		int l = index_of(t, t->local_node);

		/* The local node, unless nodes excludes it. */
		if (l < 0 || !(mask & (1ull << t->local_node)))
			for (l = 0; !(mask & (1ull << t->node[l].id)); l++)
				;
		idx[n] = (unsigned int)l;
		weight[n++] = 1;
		break;
	}
	case ZERO_NUMA_INTERLEAVE:
	case ZERO_NUMA_BIND:
		for (i = 0; i < t->nr_nodes; i++) {
			if (!(mask & (1ull << t->node[i].id)))
				continue;
			if (!t->node[i].mem_bytes) {
				if (pol->numa == ZERO_NUMA_INTERLEAVE &&
				    !pol->nodes)
					continue;
				snprintf(
					err, err_len,
					"numa.nodes includes node %d, which has no memory",
					t->node[i].id);
				return -EINVAL;
			}
			idx[n] = i;
			/* interleave: even shares; bind: by free memory */
			weight[n++] =
				pol->numa == ZERO_NUMA_BIND ?
					t->node[i].mem_bytes / page_bytes :
					1;
		}
		break;
	}
	if (!n) {
		snprintf(err, err_len,
			 "no NUMA node with memory to place guest memory on");
		return -EINVAL;
	}
	split(nr_pages, weight, n, pages);
	for (i = 0; i < n; i++) {
		if (!pages[i])
			continue;
		plan->range[plan->nr_ranges++] = (struct zero_plan_range){
			.node = t->node[idx[i]].id,
			.first_page = first,
			.nr_pages = pages[i],
		};
		first += pages[i];
	}

	/* Workers per range. */
	unsigned int want[ZERO_MAX_NODES];

	if (pol->workers && pol->workers < plan->nr_ranges) {
		snprintf(
			err, err_len,
			"workers = %u, but memory spans %u nodes: give at least %u or auto",
			pol->workers, plan->nr_ranges, plan->nr_ranges);
		return -EINVAL;
	}
	if (pol->workers) {
		uint64_t wt[ZERO_MAX_NODES] = { 0 }, got[ZERO_MAX_NODES];

		for (k = 0; k < plan->nr_ranges; k++)
			wt[k] = plan->range[k].nr_pages;
		/* One each first, the rest by pages. */
		split(pol->workers - plan->nr_ranges, wt, plan->nr_ranges, got);
		for (k = 0; k < plan->nr_ranges; k++)
			want[k] = 1 + (unsigned int)got[k];
	}
	for (k = 0; k < plan->nr_ranges; k++) {
		int ni = index_of(t, plan->range[k].node);
		int si = ni < 0 ? -1 : serving_node(t, (unsigned int)ni);

		if (si < 0) {
			snprintf(err, err_len,
				 "no NUMA node has CPUs to run workers on");
			return -EINVAL;
		}
		if (!pol->workers)
			want[k] = t->node[si].nr_cores;
		for (w = 0; w < want[k] && plan->nr_workers < ZERO_MAX_WORKERS;
		     w++)
			plan->worker
				[plan->nr_workers++] = (struct zero_plan_worker){
				.cpu = t->node[si]
					       .cores[w % t->node[si].nr_cores],
				.node = plan->range[k].node,
			};
	}
	return 0;
}
