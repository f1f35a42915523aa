/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_SERVICE_CONFIG_H
#define ZVMM_SERVICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/zvmmd_proto.h"
#include "../lib/ranges.h"

/*
 * zvmmd's configuration (zvmmd.conf(5)): an INI file read with libinih,
 * with the conventions and file:line errors of the zeroing policy
 * (zvmm.conf(5)).
 */

#define ZVMMD_CONF_PATH "/etc/zvmm/zvmmd.conf"
#define ZVMMD_DEFAULT_DIR "/run/zvmm/chunks"
#define ZVMMD_DEFAULT_GROUP "zvmm"

/* What non-root peers may have open in all (zvmmd.h, ROOT_RESERVE). */
#define ZVMMD_USER_CONNECTIONS_MAX (4096 - 64)

/* The page sizes served, in the order of their pools' slots. */
enum { ZVMMD_PAGE_2M, ZVMMD_PAGE_1G, ZVMMD_NR_PAGE_SIZES };

/*
 * The pools: a slot of struct zvmmd_config's pool[] for each section a
 * file may have. Each page size has 1 + NODES_MAX slots in a row:
 * its plain section ([pages.2M], node from its node key) first, then
 * [pages.2M.node0] to [pages.2M.node63], whose node is in the name.
 * ZVMMD_POOL_2M and ZVMMD_POOL_1G are the plain sections' slots.
 */
enum {
	ZVMMD_POOLS_PER_PAGE = 1 + NODES_MAX,
	ZVMMD_POOL_2M = ZVMMD_PAGE_2M * ZVMMD_POOLS_PER_PAGE,
	ZVMMD_POOL_1G = ZVMMD_PAGE_1G * ZVMMD_POOLS_PER_PAGE,
	ZVMMD_NR_POOLS = ZVMMD_NR_PAGE_SIZES * ZVMMD_POOLS_PER_PAGE
};

/*
 * The slot of page size @page_index (ZVMMD_PAGE_*) for the section of
 * @section_node: -1 for the plain section, N for [pages.X.nodeN].
 */
static inline unsigned int zvmmd_pool_index(unsigned int page_index,
					    int section_node)
{
	return page_index * ZVMMD_POOLS_PER_PAGE +
	       (unsigned int)(section_node + 1);
}

/* The page size (ZVMMD_PAGE_*) of slot @i. */
static inline unsigned int zvmmd_pool_page(unsigned int i)
{
	return i / ZVMMD_POOLS_PER_PAGE;
}

/* The node in the section name of slot @i, -1 for a plain section. */
static inline int zvmmd_pool_section_node(unsigned int i)
{
	return (int)(i % ZVMMD_POOLS_PER_PAGE) - 1;
}

struct zvmmd_pool_cfg {
	bool on; /* the slot's section is present */
	uint64_t page_bytes; /* 2 MiB or 1 GiB */
	uint64_t chunk_bytes; /* chunk: one hugetlbfs file, default 1 GiB */
	/* Zero bytes kept ready: refilled when below low, up to high. */
	uint64_t low, high;
	/* All bytes held for this pool (zero, leased, quarantined). */
	uint64_t max;
	/*
	 * NUMA node chunks are allocated on, -1: any. A [pages.X.nodeN]
	 * pool's is N once it is on (off, it is -1 as every default).
	 */
	int node;
};

struct zvmmd_config {
	char socket[108]; /* [service] socket: fits sun_path */
	char dir[256]; /* [service] dir: the hugetlbfs mounts go under it */
	char group[64]; /* [service] group: a name, not resolved here */
	/* [service] user_connections: the most one uid but root has open. */
	unsigned int user_connections;
	/* [service] idle: seconds a connection holding no lease stays. */
	unsigned int idle_s;
	/*
	 * [service] user_share: the most of each pool one uid but root may
	 * hold charged, a percentage of its max (user_share_pct) or bytes.
	 */
	uint64_t user_share;
	bool user_share_pct;
	/*
	 * [service] root_reserve: what of each pool the kernel holds for
	 * root's leases alone, a percentage of its max or bytes; 0: none.
	 */
	uint64_t root_reserve;
	bool root_reserve_pct;
	struct zvmmd_pool_cfg pool[ZVMMD_NR_POOLS];
	uint64_t scrub_rate; /* [scrub] rate: bytes per second, 0 = no cap */
	char scrub_cpus[64]; /* [scrub] cpus: a CPU list, "" = any */
	bool scrub_idle; /* [scrub] priority = idle */
	unsigned int recheck_ms; /* [quarantine] recheck */
};

/*
 * The defaults: the paths and group above, 32 connections and 50% of each
 * pool per uid, no root reserve, connections without a lease closed after 10 s, every
 * pool off (1 GiB chunks, nothing kept, any node), no scrub rate cap,
 * any CPU, idle priority, a recheck every 1000 ms. With no pool on it is not a valid config: a
 * file has to turn one on.
 */
void zvmmd_config_defaults(struct zvmmd_config *c);

/*
 * Fills @c with the defaults, then reads @path over them. Returns 0;
 * -EINVAL for any error in the file, @err then holding "PATH:LINE: what
 * is wrong: what is allowed" for the first one; or, when the file cannot
 * be opened or read, -ENOENT or another -errno (-EFBIG past 1 MiB,
 * -EISDIR), and -EPERM for a file that is not a regular file, not owned
 * by root or the effective user, or writable by group or others (the
 * file decides where root mounts and who may lease memory). On an error
 * @c is unchanged.
 */
int zvmmd_config_load(const char *path, struct zvmmd_config *c, char *err,
		      size_t err_len) __attribute__((warn_unused_result));

/*
 * The same for the @len bytes of config text at @text (no NUL needed);
 * @name stands for the file in messages.
 */
int zvmmd_config_load_string(const char *name, const char *text, size_t len,
			     struct zvmmd_config *c, char *err, size_t err_len)
	__attribute__((warn_unused_result));

/*
 * Writes @c as a config file, every key explicit (a pool that is off
 * has no section, and a [pages.X.nodeN] no node key: its name is its
 * node), into @buf with a NUL. Returns its length, or -ENOSPC
 * when @len bytes do not hold it. The text of a config that
 * zvmmd_config_load() returned loads back as the same config.
 */
int zvmmd_config_format(const struct zvmmd_config *c, char *buf, size_t len);

/*
 * [service] root_reserve of pool slot @i in bytes: its share of the
 * pool's max, in whole pages, at most max less one chunk (the stock and
 * the members keep room for one); 0 with no reserve.
 */
uint64_t zvmmd_root_reserve(const struct zvmmd_config *c, unsigned int i);

/*
 * Writes the section name of slot @i ("pages.2M", "pages.1G.node3")
 * into @buf with a NUL, cut to @len bytes; 24 bytes hold any. Returns
 * @buf, for messages.
 */
const char *zvmmd_pool_section(unsigned int i, char *buf, size_t len);

#endif
