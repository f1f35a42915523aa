// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/inibuf.h"
#include "../lib/inival.h"
#include "../lib/ranges.h"
#include "../lib/safefile.h"
#include "../lib/size.h"
#include "config.h"

/* Far more than any config needs: a bigger file is a mistake. */
#define CONFIG_MAX_BYTES (1u << 20)

/* The largest size a key takes, as a policy's rate_limit. */
#define CONFIG_SIZE_MAX (1ULL << 50)

/*
 * A directory, NUL included: as a policy's paths, `dir = PATH` fits
 * libinih's line, and the mounts' paths under it fit PATH_MAX.
 */
#define CONFIG_DIR_MAX INIVAL_PATH_MAX

/* A group name as systemd and shadow take it on every distribution. */
#define GROUP_NAME_MAX 31

#define RECHECK_MIN 10
#define RECHECK_MAX 60000

/*
 * [service] user_connections: up to what non-root peers may have in all
 * (ZVMMD_USER_CONNECTIONS_MAX: zvmmd.h's MAX_CLIENTS less ROOT_RESERVE);
 * [service] idle in seconds.
 */
#define USER_CONNECTIONS_MAX ZVMMD_USER_CONNECTIONS_MAX
#define IDLE_MIN 1
#define IDLE_MAX 3600

/* By page size, ZVMMD_PAGE_*: [pages.2M] and its pool's pages. */
static const char *const page_names[ZVMMD_NR_PAGE_SIZES] = { "2M", "1G" };
static const uint64_t page_sizes[ZVMMD_NR_PAGE_SIZES] = { SZ_2M, SZ_1G };
static const char *const priority_names[] = { "idle", "normal" };

void zvmmd_config_defaults(struct zvmmd_config *c)
{
	/* Whole: configs compare equal to the ones their text reloads. */
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", ZVMMD_DEFAULT_SOCKET);
	snprintf(c->dir, sizeof(c->dir), "%s", ZVMMD_DEFAULT_DIR);
	snprintf(c->group, sizeof(c->group), "%s", ZVMMD_DEFAULT_GROUP);
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		c->pool[i].page_bytes = page_sizes[zvmmd_pool_page(i)];
		c->pool[i].chunk_bytes = SZ_1G;
		c->pool[i].node = -1;
	}
	c->user_connections = 32;
	c->idle_s = 10;
	c->user_share = 50;
	c->user_share_pct = true;
	c->scrub_idle = true;
	c->recheck_ms = 1000;
}

const char *zvmmd_pool_section(unsigned int i, char *buf, size_t len)
{
	int node = zvmmd_pool_section_node(i);

	if (i >= ZVMMD_NR_POOLS)
		snprintf(buf, len, "pages.?");
	else if (node < 0)
		snprintf(buf, len, "pages.%s", page_names[zvmmd_pool_page(i)]);
	else
		snprintf(buf, len, "pages.%s.node%d",
			 page_names[zvmmd_pool_page(i)], node);
	return buf;
}

static bool name_char(char ch, bool first)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_')
		return true;
	return !first && ((ch >= '0' && ch <= '9') || ch == '-');
}

/*
 * Checked, not looked up: the group may be created after the file is
 * written, and zvmmd resolves it when it starts.
 */
static int set_group(char *out, size_t size, const char *v, char *err,
		     size_t len)
{
	size_t n = strlen(v);
	bool ok = n >= 1 && n <= GROUP_NAME_MAX;

	for (size_t i = 0; ok && i < n; i++)
		ok = name_char(v[i], !i);
	if (!ok) {
		snprintf(
			err, len,
			"bad value '%s': expected a group name of 1 to %d letters, digits, '_' or '-', starting with a letter or '_'",
			v, GROUP_NAME_MAX);
		return -EINVAL;
	}
	memset(out, 0, size);
	memcpy(out, v, n);
	return 0;
}

/*
 * "any" or nothing for no affinity, else CPU numbers and ascending
 * ranges ("1", "0-3,6"), kept as written for zvmmd to apply: CPUs this
 * machine lacks are its error when it starts, so a file reads on every
 * machine it is copied to (as a policy's nodes).
 */
static int set_cpus(char *out, size_t size, const char *v, char *err,
		    size_t len)
{
	int ret;

	if (!*v || !strcmp(v, "any")) {
		memset(out, 0, size);
		return 0;
	}
	if (strlen(v) >= size) {
		snprintf(err, len,
			 "bad value '%s': a CPU list is at most %zu characters",
			 v, size - 1);
		return -EINVAL;
	}
	ret = range_list_parse(v, CPU_SETSIZE, NULL);
	if (ret == -ERANGE) {
		snprintf(
			err, len,
			"bad CPU range in '%s': CPUs are 0 to %d, ranges ascending",
			v, CPU_SETSIZE - 1);
		return -EINVAL;
	}
	if (ret) {
		snprintf(
			err, len,
			"bad value '%s': expected 'any' or a list of CPUs such as 1 or 0-3,6",
			v);
		return -EINVAL;
	}
	memset(out, 0, size);
	memcpy(out, v, strlen(v));
	return 0;
}

/*
 * The line of the last key that set what is checked against another key
 * once the file is read (0: none).
 */
struct pool_seen {
	int chunk, low, high, max, node;
};

/*
 * What the checks of the whole file need besides the config: the lines
 * of keys and section headers, as inibuf_parse_lines() tells them in its
 * one pass, and the first section that is none of zvmmd's (an error only
 * once every key is read, so a key's error comes first).
 */
struct load_ctx {
	struct zvmmd_config c;
	struct pool_seen seen[ZVMMD_NR_POOLS];
	int header[ZVMMD_NR_POOLS]; /* a pool's first section header */
	int unknown; /* line of the first unknown section header, or 0 */
	char unknown_err[384];
	char err[384]; /* first error only, as ini_parse reports its line */
	bool failed;
};

/*
 * The page size (ZVMMD_PAGE_*) of a section that starts with its
 * [pages.X] name, then ends or goes on with a '.', @rest pointing
 * there; -1 for any other section.
 */
static int section_page(const char *section, const char **rest)
{
	if (strncmp(section, "pages.", 6))
		return -1;
	for (int pg = 0; pg < ZVMMD_NR_PAGE_SIZES; pg++) {
		size_t n = strlen(page_names[pg]);
		const char *r = section + 6 + n;

		if (!strncmp(section + 6, page_names[pg], n) &&
		    (!*r || *r == '.')) {
			*rest = r;
			return pg;
		}
	}
	return -1;
}

/*
 * The slot of a pool's section, -1 for another section: [pages.X], or
 * [pages.X.nodeN] with N a node number in decimal without leading
 * zeros, so that a pool has one name, the one a formatted file has.
 */
static int pool_index(const char *section)
{
	const char *rest;
	unsigned long node;
	char *end;
	int pg = section_page(section, &rest);

	if (pg < 0)
		return -1;
	if (!*rest)
		return (int)zvmmd_pool_index((unsigned int)pg, -1);
	if (strncmp(rest, ".node", 5))
		return -1;
	rest += 5;
	if (rest[0] < '0' || rest[0] > '9' || (rest[0] == '0' && rest[1]))
		return -1;
	node = strtoul(rest, &end, 10);
	if (*end || node >= NODES_MAX)
		return -1;
	return (int)zvmmd_pool_index((unsigned int)pg, (int)node);
}

/* A pool's section turns it on; a [pages.X.nodeN] one on node N. */
static void pool_on(struct zvmmd_config *c, unsigned int i)
{
	c->pool[i].on = true;
	if (zvmmd_pool_section_node(i) >= 0)
		c->pool[i].node = zvmmd_pool_section_node(i);
}

/* A plain pool's node key: "any" (-1) or a node number. */
static int set_node(int *out, const char *v, char *err, size_t len)
{
	unsigned long node;
	char *end;

	if (!strcmp(v, "any")) {
		*out = -1;
		return 0;
	}
	node = strtoul(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end || node >= NODES_MAX) {
		snprintf(
			err, len,
			"bad value '%s': expected 'any' or a node number from 0 to %d",
			v, NODES_MAX - 1);
		return -EINVAL;
	}
	*out = (int)node;
	return 0;
}

static int set_pool_key(struct load_ctx *x, unsigned int i, int line,
			const char *key, const char *v, char *err, size_t len)
{
	struct zvmmd_pool_cfg *p = &x->c.pool[i];
	struct pool_seen *s = &x->seen[i];
	int section_node = zvmmd_pool_section_node(i);
	char page[16], name[24];
	uint64_t n;
	int ret;

	pool_on(&x->c, i);
	zvmmd_pool_section(i, name, sizeof(name));
	if (!strcmp(key, "chunk")) {
		ret = inival_size(v, NULL, &n, p->page_bytes, CONFIG_SIZE_MAX,
				  err, len);
		if (!ret && n % p->page_bytes) {
			size_label(p->page_bytes, page, sizeof(page));
			snprintf(
				err, len,
				"chunk '%s' is not a multiple of the %s page: give a multiple of %s",
				v, page, page);
			return -EINVAL;
		}
		if (!ret) {
			p->chunk_bytes = n;
			s->chunk = line;
		}
		return ret;
	}
	if (!strcmp(key, "low") || !strcmp(key, "high")) {
		ret = inival_size(v, "0", &n, 1, CONFIG_SIZE_MAX, err, len);
		if (!ret && key[0] == 'l') {
			p->low = n;
			s->low = line;
		} else if (!ret) {
			p->high = n;
			s->high = line;
		}
		return ret;
	}
	if (!strcmp(key, "max")) {
		ret = inival_size(v, NULL, &n, 1, CONFIG_SIZE_MAX, err, len);
		if (!ret) {
			p->max = n;
			s->max = line;
		}
		return ret;
	}
	if (!strcmp(key, "node") && section_node >= 0) {
		/* Two ways to say it could only disagree. */
		snprintf(
			err, len,
			"key 'node' not allowed in [%s]: its node, %d, is in the section name; remove the key",
			name, section_node);
		return -EINVAL;
	}
	if (!strcmp(key, "node")) {
		s->node = line;
		return set_node(&p->node, v, err, len);
	}
	snprintf(err, len, "unknown key '%s' in [%s]: expected %s", key, name,
		 section_node < 0 ? "chunk, low, high, max or node" :
				    "chunk, low, high or max");
	return -EINVAL;
}

static int unknown_section(const char *section, char *err, size_t len)
{
	const char *rest;
	int pg = section_page(section, &rest);

	if (pg >= 0)
		snprintf(
			err, len,
			"unknown section [%s]: expected [pages.%s] or [pages.%s.node<N>], N a node number from 0 to %d without leading zeros",
			section, page_names[pg], page_names[pg], NODES_MAX - 1);
	else if (!strncmp(section, "pages.", 6))
		snprintf(
			err, len,
			"unknown page size [%s]: expected [pages.2M] or [pages.1G], or [pages.2M.node<N>] or [pages.1G.node<N>] for node N",
			section);
	else
		snprintf(
			err, len,
			"unknown section [%s]: expected [service], [pages.2M], [pages.1G], [scrub] or [quarantine]",
			section);
	return -EINVAL;
}

/* A whole number from @lo to @hi and nothing after it but @unit. */
static int set_uint(unsigned int *out, const char *v, const char *unit,
		    unsigned int lo, unsigned int hi, const char *what,
		    char *err, size_t len)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || errno || n < lo || n > hi ||
	    (*end && strcmp(end, unit))) {
		snprintf(err, len, "bad value '%s': expected %s from %u to %u",
			 v, what, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned int)n;
	return 0;
}

/*
 * A part of each pool's max: "N%" (1 to @max_pct) into *@v with *@pct
 * set, or a size of 2 MiB or more. Not bytes by mistake: "50" meant 50%,
 * and a part below a page would refuse every lease or hold nothing.
 */
static int set_part(uint64_t *v, bool *pct, unsigned int max_pct, const char *s,
		    char *err, size_t len)
{
	unsigned int n;
	size_t l = strlen(s);

	if (l && s[l - 1] == '%') {
		if (set_uint(&n, s, "%", 1, max_pct, "a percentage", err, len))
			return -EINVAL;
		*v = n;
		*pct = true;
		return 0;
	}
	*pct = false;
	return inival_size(s, NULL, v, SZ_2M, CONFIG_SIZE_MAX, err, len);
}

/* [service] user_share: "N%" of each pool's max, or a size. */
static int set_share(struct zvmmd_config *c, const char *v, char *err,
		     size_t len)
{
	return set_part(&c->user_share, &c->user_share_pct, 100, v, err, len);
}

/*
 * [service] root_reserve: "N%" of each pool's max (99% at most: the
 * members keep a part), a size, or 0 for none.
 */
static int set_root_reserve(struct zvmmd_config *c, const char *v, char *err,
			    size_t len)
{
	if (!strcmp(v, "0")) {
		c->root_reserve = 0;
		c->root_reserve_pct = false;
		return 0;
	}
	return set_part(&c->root_reserve, &c->root_reserve_pct, 99, v, err,
			len);
}

uint64_t zvmmd_root_reserve(const struct zvmmd_config *c, unsigned int i)
{
	const struct zvmmd_pool_cfg *p = &c->pool[i];
	uint64_t r = c->root_reserve, room;

	if (!r || !p->on || !p->page_bytes || p->max <= p->chunk_bytes)
		return 0;
	if (c->root_reserve_pct)
		r = p->max / 100 * r + p->max % 100 * r / 100;
	room = p->max - p->chunk_bytes;
	if (r > room)
		r = room;
	return r / p->page_bytes * p->page_bytes;
}

/*
 * [service]'s keys of fair shares: user_connections, user_share,
 * root_reserve, idle.
 */
static int set_service_key(struct zvmmd_config *c, const char *key,
			   const char *v, char *err, size_t len)
{
	if (!strcmp(key, "user_connections"))
		return set_uint(&c->user_connections, v, "", 1,
				USER_CONNECTIONS_MAX, "a number of connections",
				err, len);
	if (!strcmp(key, "idle"))
		return set_uint(&c->idle_s, v, "s", IDLE_MIN, IDLE_MAX,
				"a number of seconds (10 or 10s)", err, len);
	if (!strcmp(key, "user_share"))
		return set_share(c, v, err, len);
	if (!strcmp(key, "root_reserve"))
		return set_root_reserve(c, v, err, len);
	snprintf(
		err, len,
		"unknown key '%s' in [service]: expected socket, dir, group, user_connections, user_share, root_reserve or idle",
		key);
	return -EINVAL;
}

static int set_key(struct load_ctx *x, int line, const char *section,
		   const char *key, const char *v, char *err, size_t len)
{
	struct zvmmd_config *c = &x->c;
	int i = pool_index(section);

	if (i >= 0)
		return set_pool_key(x, (unsigned int)i, line, key, v, err, len);
	if (!strcmp(section, "service")) {
		if (!strcmp(key, "socket"))
			return inival_path(c->socket, sizeof(c->socket),
					   sizeof(c->socket), v, NULL, err,
					   len);
		if (!strcmp(key, "dir"))
			return inival_path(c->dir, sizeof(c->dir),
					   CONFIG_DIR_MAX, v, NULL, err, len);
		if (!strcmp(key, "group"))
			return set_group(c->group, sizeof(c->group), v, err,
					 len);
		return set_service_key(c, key, v, err, len);
	}
	if (!strcmp(section, "scrub")) {
		if (!strcmp(key, "rate"))
			return inival_size(v, "0", &c->scrub_rate, 1,
					   CONFIG_SIZE_MAX, err, len);
		if (!strcmp(key, "cpus"))
			return set_cpus(c->scrub_cpus, sizeof(c->scrub_cpus), v,
					err, len);
		if (!strcmp(key, "priority")) {
			if (strcmp(v, priority_names[0]) &&
			    strcmp(v, priority_names[1])) {
				snprintf(
					err, len,
					"bad value '%s': expected idle or normal",
					v);
				return -EINVAL;
			}
			c->scrub_idle = !strcmp(v, priority_names[0]);
			return 0;
		}
		snprintf(
			err, len,
			"unknown key '%s' in [scrub]: expected rate, cpus or priority",
			key);
		return -EINVAL;
	}
	if (!strcmp(section, "quarantine")) {
		if (!strcmp(key, "recheck")) {
			unsigned long ms;
			char *end;

			ms = strtoul(v, &end, 10);
			if (v[0] < '0' || v[0] > '9' || *end ||
			    ms < RECHECK_MIN || ms > RECHECK_MAX) {
				snprintf(
					err, len,
					"bad value '%s': expected a number of milliseconds from %d to %d",
					v, RECHECK_MIN, RECHECK_MAX);
				return -EINVAL;
			}
			c->recheck_ms = (unsigned int)ms;
			return 0;
		}
		snprintf(err, len,
			 "unknown key '%s' in [quarantine]: expected recheck",
			 key);
		return -EINVAL;
	}
	return unknown_section(section, err, len);
}

/*
 * A section header, keys or none: [pages.2M] alone turns its pool on,
 * [pages.4M] alone is an error (said after the keys' errors).
 */
static void on_section(struct load_ctx *x, int line, const char *section)
{
	int i = pool_index(section);

	if (i >= 0) {
		pool_on(&x->c, (unsigned int)i);
		if (!x->header[i])
			x->header[i] = line;
	} else if (!x->unknown && strcmp(section, "service") &&
		   strcmp(section, "scrub") && strcmp(section, "quarantine")) {
		x->unknown = line;
		unknown_section(section, x->unknown_err,
				sizeof(x->unknown_err));
	}
}

static int on_key(void *user, int line, const char *section, const char *key,
		  const char *value)
{
	struct load_ctx *x = user;
	char err[384];

	if (!key) {
		on_section(x, line, section);
		return 1;
	}
	if (set_key(x, line, section, key, value, err, sizeof(err))) {
		if (!x->failed)
			snprintf(x->err, sizeof(x->err), "%s", err);
		x->failed = true;
		return 0;
	}
	return 1;
}

/* The first error of the checks of the whole file, by line. */
struct whole {
	int line;
	char err[384];
};

static void __attribute__((format(printf, 3, 4)))
whole_error(struct whole *k, int line, const char *fmt, ...)
{
	va_list ap;

	if (k->line && k->line <= line)
		return;
	k->line = line;
	va_start(ap, fmt);
	vsnprintf(k->err, sizeof(k->err), fmt, ap);
	va_end(ap);
}

/* The line of the later of two keys, or of @header when neither is set. */
static int later_line(int a, int b, int header)
{
	int line = a > b ? a : b;

	return line ? line : header;
}

static void check_pool(struct whole *k, struct zvmmd_pool_cfg *p,
		       const struct pool_seen *s, const char *name, int header)
{
	char a[32], b[32], c[32], d[32];
	uint64_t whole;

	if (!s->max)
		p->max = p->high;
	if (!p->max) {
		whole_error(
			k, header,
			"[%s] holds no memory: set high (zero memory kept ready) or max (all it may hold) above 0",
			name);
		return;
	}
	size_label(p->chunk_bytes, c, sizeof(c));
	if (p->high % p->chunk_bytes) {
		whole = p->high - p->high % p->chunk_bytes;
		whole_error(
			k, later_line(s->high, s->chunk, header),
			"high '%s' is not a multiple of chunk '%s': memory is held in whole chunks, give %s%s%s",
			size_label(p->high, a, sizeof(a)), c,
			whole ? size_label(whole, b, sizeof(b)) : "",
			whole ? " or " : "",
			size_label(whole + p->chunk_bytes, d, sizeof(d)));
	}
	/* A max taken from high is checked as high. */
	if (s->max && p->max % p->chunk_bytes) {
		whole = p->max - p->max % p->chunk_bytes;
		whole_error(
			k, later_line(s->max, s->chunk, header),
			"max '%s' is not a multiple of chunk '%s': memory is held in whole chunks, give %s%s%s",
			size_label(p->max, a, sizeof(a)), c,
			whole ? size_label(whole, b, sizeof(b)) : "",
			whole ? " or " : "",
			size_label(whole + p->chunk_bytes, d, sizeof(d)));
	}
	if (p->low > p->high)
		whole_error(
			k, later_line(s->low, s->high, header),
			"low '%s' is above high '%s': give low at most high (zero memory is refilled when below low, up to high)",
			size_label(p->low, a, sizeof(a)),
			size_label(p->high, b, sizeof(b)));
	if (p->high > p->max)
		whole_error(
			k, later_line(s->high, s->max, header),
			"high '%s' is above max '%s': give high at most max (max counts the zero memory too)",
			size_label(p->high, a, sizeof(a)),
			size_label(p->max, b, sizeof(b)));
}

/*
 * A page size has one pool per node: [pages.X] with node = N and
 * [pages.X.nodeN] would be two for the leases of node N, and would
 * share their chunks' names in zvmmd. Reported at the later of the node
 * key and the section.
 */
static void check_node_once(struct whole *k, const struct load_ctx *x,
			    unsigned int pg)
{
	const int *header = x->header;
	unsigned int plain = zvmmd_pool_index(pg, -1), other;
	int node = x->c.pool[plain].node, key;

	if (!x->c.pool[plain].on || node < 0)
		return;
	other = zvmmd_pool_index(pg, node);
	if (!x->c.pool[other].on)
		return;
	key = x->seen[plain].node;
	if (header[other] > key)
		whole_error(
			k, header[other],
			"[pages.%s.node%d] is a second pool of %s pages on node %d, after node = %d in [pages.%s] at line %d: give a page size one pool per node",
			page_names[pg], node, page_names[pg], node, node,
			page_names[pg], key);
	else
		whole_error(
			k, key,
			"node = %d in [pages.%s] makes a second pool of %s pages on node %d, after [pages.%s.node%d] at line %d: give a page size one pool per node",
			node, page_names[pg], page_names[pg], node,
			page_names[pg], node, header[other]);
}

/*
 * What no single key shows: sections without a key, the keys of a
 * pool against each other, reported at the line of the later key, and
 * two pools of a page size on one node. @lines: the file's.
 * Returns 0 or the line of the first error, its text in @err.
 */
static int check_whole(struct load_ctx *x, int lines, char *err, size_t err_len)
{
	struct whole k = { 0 };
	bool any = false;
	char name[24];

	if (x->unknown)
		whole_error(&k, x->unknown, "%s", x->unknown_err);
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		if (!x->c.pool[i].on)
			continue;
		any = true;
		check_pool(&k, &x->c.pool[i], &x->seen[i],
			   zvmmd_pool_section(i, name, sizeof(name)),
			   x->header[i]);
	}
	for (unsigned int pg = 0; pg < ZVMMD_NR_PAGE_SIZES; pg++)
		check_node_once(&k, x, pg);
	if (!any)
		whole_error(
			&k, lines > 0 ? lines : 1,
			"no [pages.2M] or [pages.1G] section: add one, with high or max, for each page size zvmmd is to serve");
	if (k.line)
		snprintf(err, err_len, "%s", k.err);
	return k.line;
}

int zvmmd_config_load_string(const char *name, const char *text, size_t len,
			     struct zvmmd_config *c, char *err, size_t err_len)
{
	struct load_ctx x;
	char msg[384];
	bool too_long;
	int line, lines;

	memset(&x, 0, sizeof(x));
	zvmmd_config_defaults(&x.c);
	line = inibuf_parse_lines(text, len, on_key, &x, &too_long, &lines);
	if (line < 0) {
		snprintf(err, err_len, "%s: out of memory", name);
		return -ENOMEM;
	}
	if (line) {
		/* A positive line without a handler error is a syntax error. */
		snprintf(
			err, err_len, "%s:%d: %s", name, line,
			too_long ?
				"line too long for an INI line" :
			x.failed ?
				x.err :
				"not an INI line: expected [section] or key = value");
		return -EINVAL;
	}
	line = check_whole(&x, lines, msg, sizeof(msg));
	if (line) {
		snprintf(err, err_len, "%s:%d: %s", name, line, msg);
		return -EINVAL;
	}
	*c = x.c;
	return 0;
}

/*
 * The file decides where root mounts and who may lease memory: it must
 * be a regular file that only root (or the user running zvmmd) can
 * write, as safe_owner_ok() has it. A symbolic link is followed, to a
 * file that must pass the same check.
 */
static int check_file(const char *path, const struct stat *st, char *err,
		      size_t err_len)
{
	if (S_ISDIR(st->st_mode)) {
		snprintf(err, err_len, "cannot read config file %s: %s", path,
			 strerror(EISDIR));
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode))
		snprintf(err, err_len,
			 "cannot use config file %s: not a regular file", path);
	else if (st->st_uid != geteuid() && st->st_uid != 0)
		snprintf(
			err, err_len,
			"cannot use config file %s: owned by uid %u, not by root or this user (uid %u): chown root %s",
			path, (unsigned int)st->st_uid, (unsigned int)geteuid(),
			path);
	else if (!safe_owner_ok(st, false))
		snprintf(
			err, err_len,
			"cannot use config file %s: writable by group or others (mode %04o): chmod go-w %s",
			path, (unsigned int)(st->st_mode & 07777), path);
	else
		return 0;
	return -EPERM;
}

int zvmmd_config_load(const char *path, struct zvmmd_config *c, char *err,
		      size_t err_len)
{
	/* O_NONBLOCK: a FIFO in the file's place is refused, not waited on. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t len;
	char *text;
	int ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot open config file %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		snprintf(err, err_len, "cannot read config file %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = check_file(path, &st, err, err_len);
	if (ret) {
		close(fd);
		return ret;
	}
	ret = file_read_fd(fd, CONFIG_MAX_BYTES, &text, &len);
	close(fd);
	if (ret) {
		snprintf(err, err_len, "cannot read config file %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = zvmmd_config_load_string(path, text, len, c, err, err_len);
	free(text);
	return ret;
}

struct out {
	char *buf;
	size_t len, off;
};

static void __attribute__((format(printf, 2, 3)))
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->off < o->len ? o->buf + o->off : NULL,
		      o->off < o->len ? o->len - o->off : 0, fmt, ap);
	va_end(ap);
	o->off += n > 0 ? (size_t)n : 0;
}

static const char *size_or_0(uint64_t v, char *buf, size_t len)
{
	return v ? size_label(v, buf, len) : "0";
}

int zvmmd_config_format(const struct zvmmd_config *c, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	char a[32], b[32], d[32], e[32], name[24];

	put(&o, "[service]\nsocket = %s\ndir = %s\ngroup = %s\n", c->socket,
	    c->dir, c->group);
	put(&o, "user_connections = %u\nidle = %us\n", c->user_connections,
	    c->idle_s);
	if (c->user_share_pct)
		put(&o, "user_share = %llu%%\n",
		    (unsigned long long)c->user_share);
	else
		put(&o, "user_share = %s\n",
		    size_label(c->user_share, a, sizeof(a)));
	if (c->root_reserve_pct)
		put(&o, "root_reserve = %llu%%\n",
		    (unsigned long long)c->root_reserve);
	else
		put(&o, "root_reserve = %s\n",
		    c->root_reserve ?
			    size_label(c->root_reserve, a, sizeof(a)) :
			    "0");
	for (unsigned int i = 0; i < ZVMMD_NR_POOLS; i++) {
		const struct zvmmd_pool_cfg *p = &c->pool[i];

		if (!p->on)
			continue;
		put(&o, "[%s]\nchunk = %s\nlow = %s\nhigh = %s\nmax = %s\n",
		    zvmmd_pool_section(i, name, sizeof(name)),
		    size_label(p->chunk_bytes, a, sizeof(a)),
		    size_or_0(p->low, b, sizeof(b)),
		    size_or_0(p->high, d, sizeof(d)),
		    size_or_0(p->max, e, sizeof(e)));
		/* A per-node section's name is its node: no key for it. */
		if (zvmmd_pool_section_node(i) >= 0)
			continue;
		if (p->node < 0)
			put(&o, "node = any\n");
		else
			put(&o, "node = %d\n", p->node);
	}
	put(&o, "[scrub]\nrate = %s\ncpus = %s\npriority = %s\n",
	    size_or_0(c->scrub_rate, a, sizeof(a)),
	    c->scrub_cpus[0] ? c->scrub_cpus : "any",
	    priority_names[c->scrub_idle ? 0 : 1]);
	put(&o, "[quarantine]\nrecheck = %u\n", c->recheck_ms);
	if (o.off >= len || o.off > INT32_MAX)
		return -ENOSPC;
	return (int)o.off;
}
