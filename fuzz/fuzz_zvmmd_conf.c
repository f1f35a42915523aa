// SPDX-License-Identifier: MIT
/*
 * zvmmd's configuration parser, zvmmd_config_load_string() (service/
 * config.c, libinih underneath), with the input as zvmmd.conf's text.
 *
 * A config it takes keeps what zvmmd relies on (zvmmd.conf(5)): at
 * least one pool; each pool's page size its slot's, a chunk a nonzero
 * multiple of the page, high and max whole chunks, low <= high <= max,
 * max above 0, its node the section's or -1 to 63, no two pools of a
 * page size on one node; a pool that is off is the default one; the
 * strings terminated, the recheck from 10 to 60000 ms. It writes through
 * zvmmd_config_format() as text that loads to the same config, which
 * writes as the same text. A refusal changes nothing and says
 * "NAME:LINE: " with a line of the text.
 */
#include <errno.h>

#include "../lib/size.h"
#include "../service/config.h"
#include "fuzz.h"

#define NAME "fuzz.conf"

static const uint64_t page_sizes[ZVMMD_NR_PAGE_SIZES] = { SZ_2M, SZ_1G };

static void check_valid(const struct zvmmd_config *c)
{
	struct zvmmd_config def;
	bool any = false;

	zvmmd_config_defaults(&def);
	fuzz_assert(memchr(c->socket, '\0', sizeof(c->socket)) &&
			    memchr(c->dir, '\0', sizeof(c->dir)) &&
			    memchr(c->group, '\0', sizeof(c->group)) &&
			    memchr(c->scrub_cpus, '\0', sizeof(c->scrub_cpus)),
		    "a string not terminated");
	fuzz_assert(c->socket[0] && c->dir[0] && c->group[0],
		    "socket '%s', dir '%s', group '%s'", c->socket, c->dir,
		    c->group);
	fuzz_assert(c->recheck_ms >= 10 && c->recheck_ms <= 60000, "recheck %u",
		    c->recheck_ms);
	fuzz_assert(c->scrub_rate <= 1ull << 50, "rate %llu",
		    (unsigned long long)c->scrub_rate);
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		const struct zvmmd_pool_cfg *p = &c->pool[i];
		int section_node = zvmmd_pool_section_node(i);
		char name[24];

		zvmmd_pool_section(i, name, sizeof(name));
		if (!p->on) {
			fuzz_assert(!memcmp(p, &def.pool[i], sizeof(*p)),
				    "[%s] off, not the default", name);
			continue;
		}
		any = true;
		fuzz_assert(p->page_bytes == page_sizes[zvmmd_pool_page(i)],
			    "[%s] page %llu", name,
			    (unsigned long long)p->page_bytes);
		fuzz_assert(p->chunk_bytes && !(p->chunk_bytes % p->page_bytes),
			    "[%s] chunk %llu", name,
			    (unsigned long long)p->chunk_bytes);
		fuzz_assert(p->max && !(p->max % p->chunk_bytes) &&
				    !(p->high % p->chunk_bytes) &&
				    p->low <= p->high && p->high <= p->max,
			    "[%s] low %llu high %llu max %llu chunk %llu", name,
			    (unsigned long long)p->low,
			    (unsigned long long)p->high,
			    (unsigned long long)p->max,
			    (unsigned long long)p->chunk_bytes);
		if (section_node >= 0)
			fuzz_assert(p->node == section_node, "[%s] node %d",
				    name, p->node);
		else
			fuzz_assert(p->node >= -1 && p->node < NODES_MAX,
				    "[%s] node %d", name, p->node);
		if (section_node < 0 && p->node >= 0)
			fuzz_assert(
				!c->pool[zvmmd_pool_index(zvmmd_pool_page(i),
							  p->node)]
					 .on,
				"[%s] node = %d beside [%s.node%d]", name,
				p->node, name, p->node);
	}
	fuzz_assert(any, "no pool");
}

/* Written, loaded again, written again: the same config and text. */
static void round_trip(const struct zvmmd_config *c)
{
	static char text[1 << 16], again[1 << 16];
	struct zvmmd_config back;
	char err[512];
	int n, m, ret;

	n = zvmmd_config_format(c, text, sizeof(text));
	fuzz_assert(n > 0 && n < (int)sizeof(text), "format %d", n);
	fuzz_assert(strlen(text) == (size_t)n, "format %d, text %zu", n,
		    strlen(text));
	memset(&back, 0x5a, sizeof(back));
	ret = zvmmd_config_load_string(NAME, text, (size_t)n, &back, err,
				       sizeof(err));
	fuzz_assert(!ret, "zvmmd refuses the config it wrote: %s\n%s", err,
		    text);
	fuzz_assert(!memcmp(c, &back, sizeof(back)),
		    "the config it wrote loads as another:\n%s", text);
	m = zvmmd_config_format(&back, again, sizeof(again));
	fuzz_assert(m == n && !memcmp(text, again, (size_t)n),
		    "written again, another text:\n%s\n---\n%s", text, again);
}

static unsigned int nr_lines(const uint8_t *data, size_t size)
{
	unsigned int n = 1;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zvmmd_config c, before;
	char err[512] = "", *end;
	unsigned long line;
	int ret;

	memset(&c, 0xa5, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	ret = zvmmd_config_load_string(NAME, (const char *)data, size, &c, err,
				       sizeof(err));
	if (!ret) {
		check_valid(&c);
		round_trip(&c);
		return 0;
	}
	fuzz_assert(ret == -EINVAL || ret == -ENOMEM, "load %d", ret);
	fuzz_assert(!memcmp(&c, &before, sizeof(c)), "refused (%d), written",
		    ret);
	if (ret == -ENOMEM)
		return 0;
	fuzz_assert(!strncmp(err, NAME ":", strlen(NAME ":")), "error '%s'",
		    err);
	line = strtoul(err + strlen(NAME ":"), &end, 10);
	fuzz_assert(end != err + strlen(NAME ":") && !strncmp(end, ": ", 2) &&
			    end[2] && line >= 1 && line <= nr_lines(data, size),
		    "error '%s' of %u lines", err, nr_lines(data, size));
	return 0;
}
