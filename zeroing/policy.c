// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/inibuf.h"
#include "../lib/inival.h"
#include "../lib/ranges.h"
#include "../lib/size.h"
#include "backend.h"
#include "policy.h"

static const char *const mode_names[] = { "prezero", "demand", "hybrid" };
static const char *const fresh_names[] = { "trust", "scrub" };
static const char *const exit_names[] = { "release", "keep", "scrub" };
static const char *const record_names[] = { "trust", "verify", "never" };
static const char *const numa_names[] = { "local", "interleave", "bind" };
static const char *const pin_names[] = { "cpu", "none" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Far more than any policy needs: a bigger file is a mistake. */
#define POLICY_MAX_BYTES (1u << 20)

void zero_policy_defaults(struct zero_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = ZERO_MODE_HYBRID;
	snprintf(p->backend, sizeof(p->backend), "auto");
	p->fresh = ZERO_FRESH_TRUST;
	p->on_exit = ZERO_EXIT_RELEASE;
	p->numa = ZERO_NUMA_LOCAL;
}

const char *zero_mode_name(enum zero_mode m)
{
	return mode_names[m];
}

static void join(const char *const *names, unsigned int n, char *buf,
		 size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0,
					"%s%s",
					i ? (i + 1 == n ? " or " : ", ") : "",
					names[i]);
}

static int pick(const char *const *names, unsigned int n, const char *v,
		int *out, char *err, size_t len)
{
	char list[256];

	for (unsigned int i = 0; i < n; i++)
		if (!strcmp(names[i], v)) {
			*out = (int)i;
			return 0;
		}
	join(names, n, list, sizeof(list));
	snprintf(err, len, "bad value '%s': expected %s", v, list);
	return -EINVAL;
}

/*
 * "all" or a list of node numbers and ranges: "0", "0,2", "0-3,6".
 *
 * Not libnuma's numa_parse_nodestring() (as of 2.0.16, Debian 12): it
 * refuses nodes this machine lacks ("nodes = 1" on a one-node machine),
 * while a policy must read on every machine it is copied to; it says why
 * on stderr ("libnuma: Warning: ...") rather than in @err; and it takes
 * more than this contract: "" (no node), "!0", "+1", "0x1" and "010"
 * (octal), "netdev:", "ip:", "file:", "block:" and "pci:" names looked
 * up on this machine, "all" as the nodes present rather than 0, and
 * "3-1" as node 3 alone.
 */
static int parse_nodes(const char *v, uint64_t *out, char *err, size_t len)
{
	uint64_t mask = 0;
	int ret;

	if (!strcmp(v, "all")) {
		*out = 0;
		return 0;
	}
	ret = range_list_parse(v, ZERO_MAX_NODES, &mask);
	if (ret == -ERANGE) {
		snprintf(
			err, len,
			"bad node range in '%s': nodes are 0 to %d, ranges ascending",
			v, ZERO_MAX_NODES - 1);
		return -EINVAL;
	}
	if (ret || !mask) {
		snprintf(
			err, len,
			"bad value '%s': expected 'all' or a list of nodes such as 0 or 0,2-3",
			v);
		return -EINVAL;
	}
	*out = mask;
	return 0;
}

/*
 * "auto" or the name of a backend of any architecture: whether it runs
 * on this CPU is decided when the engine starts, so a policy reads on
 * every machine.
 */
static int pick_backend(const char *v, char *err, size_t len)
{
	const struct zero_backend_name *b;
	const char *names[32] = { "auto" };
	unsigned int n = 1;
	int i;

	while (n < N(names) && (b = zero_backend_name_at(n - 1)))
		names[n++] = b->name;
	return pick(names, n, v, &i, err, len);
}

static int set_key(struct zero_policy *p, const char *section, const char *key,
		   const char *v, char *err, size_t len)
{
	int i, ret;

	if (!strcmp(section, "zeroing")) {
		if (!strcmp(key, "mode")) {
			ret = pick(mode_names, N(mode_names), v, &i, err, len);
			if (!ret)
				p->mode = (enum zero_mode)i;
			return ret;
		}
		if (!strcmp(key, "backend")) {
			ret = pick_backend(v, err, len);
			/* Whole buffer: a shorter name after a longer one
			 * leaves no tail (policies compare whole). */
			if (!ret) {
				memset(p->backend, 0, sizeof(p->backend));
				snprintf(p->backend, sizeof(p->backend), "%s",
					 v);
			}
			return ret;
		}
		if (!strcmp(key, "workers")) {
			char *end;
			unsigned long n;

			if (!strcmp(v, "auto")) {
				p->workers = 0;
				return 0;
			}
			n = strtoul(v, &end, 10);
			if (v[0] < '0' || v[0] > '9' || *end || n < 1 ||
			    n > ZERO_MAX_WORKERS) {
				snprintf(
					err, len,
					"bad value '%s': expected 'auto' or a number of workers from 1 to %d",
					v, ZERO_MAX_WORKERS);
				return -EINVAL;
			}
			p->workers = (unsigned int)n;
			return 0;
		}
		if (!strcmp(key, "chunk")) {
			uint64_t c;

			ret = inival_size(v, "auto", &c, ZERO_CHUNK_MIN,
					  ZERO_CHUNK_MAX, err, len);
			if (!ret && c % ZERO_CHUNK_MIN) {
				snprintf(
					err, len,
					"chunk '%s' is not a multiple of 4 KiB",
					v);
				return -EINVAL;
			}
			if (!ret)
				p->chunk = c;
			return ret;
		}
		if (!strcmp(key, "profile"))
			return inival_path(p->profile, ZERO_POLICY_PATH_MAX,
					   ZERO_POLICY_PATH_MAX, v, "default",
					   err, len);
		if (!strcmp(key, "rate_limit"))
			return inival_size(v, "0", &p->rate_limit, 1,
					   1ull << 50, err, len);
		snprintf(
			err, len,
			"unknown key '%s' in [zeroing]: expected mode, backend, workers, chunk, rate_limit or profile",
			key);
		return -EINVAL;
	}
	if (!strcmp(section, "pool")) {
		if (!strcmp(key, "fresh")) {
			ret = pick(fresh_names, N(fresh_names), v, &i, err,
				   len);
			if (!ret)
				p->fresh = (enum zero_fresh)i;
			return ret;
		}
		if (!strcmp(key, "on_exit")) {
			ret = pick(exit_names, N(exit_names), v, &i, err, len);
			if (!ret)
				p->on_exit = (enum zero_on_exit)i;
			return ret;
		}
		if (!strcmp(key, "state_dir"))
			return inival_path(p->state_dir, ZERO_POLICY_PATH_MAX,
					   ZERO_POLICY_PATH_MAX, v, "default",
					   err, len);
		if (!strcmp(key, "record")) {
			ret = pick(record_names, N(record_names), v, &i, err,
				   len);
			if (!ret)
				p->record = (enum zero_record_use)i;
			return ret;
		}
		snprintf(
			err, len,
			"unknown key '%s' in [pool]: expected fresh, on_exit, record or state_dir",
			key);
		return -EINVAL;
	}
	if (!strcmp(section, "numa")) {
		if (!strcmp(key, "policy")) {
			ret = pick(numa_names, N(numa_names), v, &i, err, len);
			if (!ret)
				p->numa = (enum zero_numa)i;
			return ret;
		}
		if (!strcmp(key, "nodes"))
			return parse_nodes(v, &p->nodes, err, len);
		if (!strcmp(key, "pin")) {
			ret = pick(pin_names, N(pin_names), v, &i, err, len);
			if (!ret)
				p->pin = (enum zero_pin)i;
			return ret;
		}
		snprintf(
			err, len,
			"unknown key '%s' in [numa]: expected policy, nodes or pin",
			key);
		return -EINVAL;
	}
	snprintf(err, len,
		 "unknown section [%s]: expected [zeroing], [pool] or [numa]",
		 section);
	return -EINVAL;
}

struct load_ctx {
	struct zero_policy p;
	char err[384]; /* first error only, as ini_parse reports its line */
	bool failed;
};

static int on_key(void *user, const char *section, const char *key,
		  const char *value)
{
	struct load_ctx *c = user;
	char err[384];

	if (set_key(&c->p, section, key, value, err, sizeof(err))) {
		if (!c->failed)
			snprintf(c->err, sizeof(c->err), "%s", err);
		c->failed = true;
		return 0;
	}
	return 1;
}

int zero_policy_load_string(struct zero_policy *p, const char *name,
			    const char *text, size_t len, char *err,
			    size_t err_len)
{
	struct load_ctx c = { .p = *p };
	bool too_long;
	int line;

	line = inibuf_parse(text, len, on_key, &c, &too_long);
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
			c.failed ?
				c.err :
				"not an INI line: expected [section] or key = value");
		return -EINVAL;
	}
	*p = c.p;
	return 0;
}

int zero_policy_load(struct zero_policy *p, const char *path, char *err,
		     size_t err_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len;
	char *text;
	int ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot open policy file %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = file_read_fd(fd, POLICY_MAX_BYTES, &text, &len);
	close(fd);
	if (ret) {
		snprintf(err, err_len, "cannot read policy file %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	ret = zero_policy_load_string(p, path, text, len, err, err_len);
	free(text);
	return ret;
}

int zero_policy_set(struct zero_policy *p, const char *assignment, char *err,
		    size_t err_len)
{
	char *buf, msg[384], *dot, *eq;
	struct zero_policy tmp = *p;
	int ret = -EINVAL;

	/* A copy of any length: a fixed buffer would cut the value short. */
	buf = strdup(assignment);
	if (!buf) {
		snprintf(err, err_len, "policy key %s: out of memory",
			 assignment);
		return -ENOMEM;
	}
	dot = strchr(buf, '.');
	eq = strchr(buf, '=');
	if (!dot || !eq || dot > eq || dot == buf || eq == dot + 1) {
		snprintf(
			err, err_len,
			"policy key %s: expected section.key=value, e.g. zeroing.mode=demand",
			assignment);
		goto out;
	}
	*dot = '\0';
	*eq = '\0';
	if (set_key(&tmp, buf, dot + 1, eq + 1, msg, sizeof(msg))) {
		snprintf(err, err_len, "policy key %s: %s", assignment, msg);
		goto out;
	}
	*p = tmp;
	ret = 0;
out:
	free(buf);
	return ret;
}

void zero_policy_print(const struct zero_policy *p, FILE *f)
{
	char sz[32];

	fprintf(f, "[zeroing]\nmode = %s\nbackend = %s\n", mode_names[p->mode],
		p->backend);
	if (p->workers)
		fprintf(f, "workers = %u\n", p->workers);
	else
		fprintf(f, "workers = auto\n");
	fprintf(f, "chunk = %s\n",
		p->chunk ? size_label(p->chunk, sz, sizeof(sz)) : "auto");
	fprintf(f, "rate_limit = %s\n",
		p->rate_limit ? size_label(p->rate_limit, sz, sizeof(sz)) :
				"0");
	fprintf(f, "profile = %s\n", p->profile[0] ? p->profile : "default");
	fprintf(f, "[pool]\nfresh = %s\non_exit = %s\nrecord = %s\n",
		fresh_names[p->fresh], exit_names[p->on_exit],
		record_names[p->record]);
	fprintf(f, "state_dir = %s\n",
		p->state_dir[0] ? p->state_dir : "default");
	fprintf(f, "[numa]\npolicy = %s\nnodes = ", numa_names[p->numa]);
	if (!p->nodes) {
		fprintf(f, "all\npin = %s\n", pin_names[p->pin]);
		return;
	}
	for (unsigned int n = 0, first = 1; n < ZERO_MAX_NODES; n++)
		if (p->nodes & (1ull << n)) {
			fprintf(f, "%s%u", first ? "" : ",", n);
			first = 0;
		}
	fprintf(f, "\npin = %s\n", pin_names[p->pin]);
}
