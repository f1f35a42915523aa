// SPDX-License-Identifier: MIT
/*
 * STATUS_OK's JSON against its schema (zvmmd_status.h): the reader, the writer
 * and the table `zvmm pool status` prints, all driven by the rows.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "size.h"
#include "zvmmd_status.h"

#define ROW_INT(S, m, lo_, hi_, what_) \
	{ .name = #m,                  \
	  .kind = ZVMMD_STATUS_INT,    \
	  .off = offsetof(S, m),       \
	  .lo = (lo_),                 \
	  .hi = (hi_),                 \
	  .what = what_ },
#define ROW_NUMBER(S, m, lo_, hi_, what_) \
	{ .name = #m,                     \
	  .kind = ZVMMD_STATUS_NUMBER,    \
	  .off = offsetof(S, m),          \
	  .dlo = (lo_),                   \
	  .dhi = (hi_),                   \
	  .what = what_ },
#define ROW_STRING(S, m, lo_, hi_, what_) \
	{ .name = #m,                     \
	  .kind = ZVMMD_STATUS_STRING,    \
	  .off = offsetof(S, m),          \
	  .hi = (hi_),                    \
	  .what = what_ },
#define ROW_LIST(S, m, obj, hi_, what_) \
	{ .name = #m,                   \
	  .kind = ZVMMD_STATUS_LIST,    \
	  .off = offsetof(S, m),        \
	  .list = &obj_##obj,           \
	  .what = what_ },

#define LEASE_ROW(kind, name, lo, hi, what) \
	ROW_##kind(struct zvmmd_status_lease, name, lo, hi, what)
#define QUARANTINED_ROW(kind, name, lo, hi, what) \
	ROW_##kind(struct zvmmd_status_quarantined, name, lo, hi, what)
#define POOL_ROW(kind, name, lo, hi, what) \
	ROW_##kind(struct zvmmd_status_pool, name, lo, hi, what)
#define TOP_ROW(kind, name, lo, hi, what) \
	ROW_##kind(struct zvmmd_status, name, lo, hi, what)

#define OBJECT(name_, S, rows_)                                  \
	{                                                        \
		.name = name_, .size = sizeof(S), .rows = rows_, \
		.nr = sizeof(rows_) / sizeof(rows_[0])           \
	}

static const struct zvmmd_status_row lease_rows[] = { ZVMMD_STATUS_LEASE(
	LEASE_ROW) };
static const struct zvmmd_status_object obj_lease =
	OBJECT("lease", struct zvmmd_status_lease, lease_rows);

static const struct zvmmd_status_row quarantined_rows[] = {
	ZVMMD_STATUS_QUARANTINED(QUARANTINED_ROW)
};
static const struct zvmmd_status_object obj_quarantined = OBJECT(
	"quarantined chunk", struct zvmmd_status_quarantined, quarantined_rows);

static const struct zvmmd_status_row pool_rows[] = { ZVMMD_STATUS_POOL(
	POOL_ROW) };
static const struct zvmmd_status_object obj_pool =
	OBJECT("pool", struct zvmmd_status_pool, pool_rows);

static const struct zvmmd_status_row top_rows[] = { ZVMMD_STATUS_TOP(TOP_ROW) };
const struct zvmmd_status_object zvmmd_status_schema =
	OBJECT("status", struct zvmmd_status, top_rows);

/* ---------------------------------------------------------------- read */

/* Where the reader is, "pools[1].leases[0]", and the first error. */
struct reader {
	char path[128];
	char *err;
	size_t err_len;
};

static int __attribute__((format(printf, 3, 4)))
fail(struct reader *r, const char *name, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!r->path[0] && !name)
		snprintf(r->err, r->err_len, "%s", what);
	else
		snprintf(r->err, r->err_len, "%s%s%s: %s", r->path,
			 r->path[0] && name ? "." : "", name ? name : "", what);
	return -EPROTO;
}

static const char *json_what(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "true or false";
	case json_type_double:
		return "a number with a fraction or exponent";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "something else";
}

/*
 * json-c keeps an integer above INT64_MAX as a uint64 (UINT64_MAX for
 * anything larger) and one below INT64_MIN as INT64_MIN: the ranges here
 * end inside int64, so neither passes for a value it is not.
 */
static int read_int(struct reader *r, const struct zvmmd_status_row *row,
		    json_object *v, int64_t *out)
{
	int64_t n;

	if (!json_object_is_type(v, json_type_int))
		return fail(r, row->name,
			    "expected an integer from %lld to %lld, got %s",
			    (long long)row->lo, (long long)row->hi,
			    json_what(v));
	n = json_object_get_int64(v);
	if (n == INT64_MAX && json_object_get_uint64(v) != INT64_MAX)
		return fail(
			r, row->name,
			"out of range: expected an integer from %lld to %lld",
			(long long)row->lo, (long long)row->hi);
	if (n < row->lo || n > row->hi)
		return fail(
			r, row->name,
			"%lld is out of range: expected an integer from %lld to %lld",
			(long long)n, (long long)row->lo, (long long)row->hi);
	*out = n;
	return 0;
}

/* json-c takes NaN and Infinity even when strict: refused here. */
static int read_number(struct reader *r, const struct zvmmd_status_row *row,
		       json_object *v, double *out)
{
	double d;

	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double))
		return fail(r, row->name,
			    "expected a number from %g to %g, got %s", row->dlo,
			    row->dhi, json_what(v));
	d = json_object_get_double(v);
	if (!isfinite(d) || d < row->dlo || d > row->dhi)
		return fail(
			r, row->name,
			"%s is out of range: expected a number from %g to %g",
			json_object_to_json_string(v), row->dlo, row->dhi);
	*out = d;
	return 0;
}

static int read_string(struct reader *r, const struct zvmmd_status_row *row,
		       json_object *v, char *out)
{
	const char *s;
	int n;

	if (!json_object_is_type(v, json_type_string))
		return fail(r, row->name,
			    "expected a string of at most %lld bytes, got %s",
			    (long long)row->hi, json_what(v));
	s = json_object_get_string(v);
	n = json_object_get_string_len(v);
	if (n > row->hi)
		return fail(r, row->name,
			    "a string of %d bytes: expected at most %lld", n,
			    (long long)row->hi);
	/* "\u0000" is valid JSON; a C string cannot hold it. */
	if (memchr(s, '\0', (size_t)n))
		return fail(r, row->name, "the string holds a NUL (\\u0000)");
	memcpy(out, s, (size_t)n);
	out[n] = '\0';
	return 0;
}

static int read_object(struct reader *r, const struct zvmmd_status_object *t,
		       json_object *o, void *out);

static int read_list(struct reader *r, const struct zvmmd_status_row *row,
		     json_object *v, struct zvmmd_status_list *l)
{
	size_t len = strlen(r->path), n;
	int ret = 0;

	if (!json_object_is_type(v, json_type_array))
		return fail(r, row->name,
			    "expected an array of objects (%ss), got %s",
			    row->list->name, json_what(v));
	n = json_object_array_length(v);
	l->v = calloc(n ? n : 1, row->list->size);
	if (!l->v)
		return -ENOMEM;
	/* Counted as it is read, so that a half-read list is freed whole. */
	for (size_t i = 0; i < n && !ret; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		l->nr = i + 1;
		snprintf(r->path + len, sizeof(r->path) - len, "%s%s[%zu]",
			 len ? "." : "", row->name, i);
		if (!json_object_is_type(e, json_type_object))
			ret = fail(r, NULL, "expected an object (a %s), got %s",
				   row->list->name, json_what(e));
		else
			ret = read_object(r, row->list, e,
					  (char *)l->v + i * row->list->size);
	}
	r->path[len] = '\0';
	return ret;
}

/*
 * A pool's members added since zvmmd 0.1.0: an older zvmmd does not send
 * them, and the reader takes them from what it did send (pool_added()).
 * Each is an INT from 0, so -1 says absent until then.
 */
static const char *const pool_added[] = {
	"unseen_bytes", "zero_bytes",	     "filling_bytes",
	"leases_total", "quarantined_total", "reserve_bytes"
};

bool zvmmd_status_added(const struct zvmmd_status_object *t, const char *name)
{
	if (t != &obj_pool)
		return false;
	for (size_t i = 0; i < sizeof(pool_added) / sizeof(pool_added[0]); i++)
		if (!strcmp(pool_added[i], name))
			return true;
	return false;
}

static void pool_fill_added(struct zvmmd_status_pool *p)
{
	if (p->unseen_bytes < 0)
		p->unseen_bytes = 0;
	if (p->reserve_bytes < 0)
		p->reserve_bytes = 0;
	if (p->zero_bytes < 0)
		p->zero_bytes = p->clean_bytes;
	if (p->filling_bytes < 0)
		p->filling_bytes = p->dirty_bytes;
	if (p->leases_total < 0)
		p->leases_total = (int64_t)p->leases.nr;
	if (p->quarantined_total < 0)
		p->quarantined_total = (int64_t)p->quarantined.nr;
}

static int read_object(struct reader *r, const struct zvmmd_status_object *t,
		       json_object *o, void *out)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		char *at = (char *)out + row->off;
		json_object *v = NULL;
		bool have = json_object_object_get_ex(o, row->name, &v);
		int ret = 0;

		if (!have && zvmmd_status_added(t, row->name)) {
			*(int64_t *)(void *)at = -1;
			continue;
		}
		if (!have)
			return fail(r, row->name, "missing from the %s",
				    t->name);
		switch (row->kind) {
		case ZVMMD_STATUS_INT:
			ret = read_int(r, row, v, (int64_t *)(void *)at);
			break;
		case ZVMMD_STATUS_NUMBER:
			ret = read_number(r, row, v, (double *)(void *)at);
			break;
		case ZVMMD_STATUS_STRING:
			ret = read_string(r, row, v, at);
			break;
		case ZVMMD_STATUS_LIST:
			ret = read_list(r, row, v,
					(struct zvmmd_status_list *)(void *)at);
			break;
		}
		if (ret)
			return ret;
	}
	if (t == &obj_pool)
		pool_fill_added(out);
	return 0;
}

int zvmmd_status_parse(const char *text, size_t len, struct zvmmd_status *s,
		       char *err, size_t err_len)
{
	struct reader r = { .err = err, .err_len = err_len };
	json_tokener *tok;
	json_object *root;
	int ret;

	memset(s, 0, sizeof(*s));
	if (len > INT32_MAX)
		return fail(&r, NULL, "not JSON: %zu bytes", len);
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	/*
	 * Not VALIDATE_UTF8: zvmmd copies a tenant's command name as the
	 * kernel has it, bytes a tenant chose, and json-c writes them as
	 * they are. A reply refused for them would hide every pool.
	 */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_parse_end(tok) != len) {
		ret = fail(&r, NULL, "not one JSON object: %s at byte %zu",
			   root ? "more after it" :
			   json_tokener_get_error(tok) ==
					   json_tokener_continue ?
				  "the text ends inside it" :
				  json_tokener_error_desc(
					  json_tokener_get_error(tok)),
			   json_tokener_get_parse_end(tok));
	} else if (!json_object_is_type(root, json_type_object)) {
		ret = fail(&r, NULL, "expected a JSON object, got %s",
			   json_what(root));
	} else {
		ret = read_object(&r, &zvmmd_status_schema, root, s);
	}
	json_object_put(root);
	json_tokener_free(tok);
	return ret;
}

static void free_object(const struct zvmmd_status_object *t, void *o)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		struct zvmmd_status_list *l;

		if (row->kind != ZVMMD_STATUS_LIST)
			continue;
		l = (struct zvmmd_status_list *)(void *)((char *)o + row->off);
		for (size_t k = 0; k < l->nr; k++)
			free_object(row->list,
				    (char *)l->v + k * row->list->size);
		free(l->v);
		l->v = NULL;
		l->nr = 0;
	}
}

void zvmmd_status_free(struct zvmmd_status *s)
{
	free_object(&zvmmd_status_schema, s);
}

/* --------------------------------------------------------------- write */

static json_object *write_object(const struct zvmmd_status_object *t,
				 const void *o)
{
	json_object *j = json_object_new_object();

	for (unsigned int i = 0; j && i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		const char *at = (const char *)o + row->off;
		const struct zvmmd_status_list *l;
		json_object *v = NULL;

		switch (row->kind) {
		case ZVMMD_STATUS_INT:
			v = json_object_new_int64(
				*(const int64_t *)(const void *)at);
			break;
		case ZVMMD_STATUS_NUMBER:
			v = json_object_new_double(
				*(const double *)(const void *)at);
			break;
		case ZVMMD_STATUS_STRING:
			v = json_object_new_string(at);
			break;
		case ZVMMD_STATUS_LIST:
			l = (const struct zvmmd_status_list *)(const void *)at;
			v = json_object_new_array();
			for (size_t k = 0; v && k < l->nr; k++) {
				json_object *e = write_object(
					row->list, (const char *)l->v +
							   k * row->list->size);

				if (!e || json_object_array_add(v, e)) {
					json_object_put(e);
					json_object_put(v);
					v = NULL;
				}
			}
			break;
		}
		if (!v || json_object_object_add(j, row->name, v)) {
			json_object_put(v);
			json_object_put(j);
			j = NULL;
		}
	}
	return j;
}

int zvmmd_status_json(const struct zvmmd_status *s, char **out)
{
	json_object *j = write_object(&zvmmd_status_schema, s);
	const char *text;

	*out = NULL;
	if (!j)
		return -ENOMEM;
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	*out = text ? strdup(text) : NULL;
	json_object_put(j);
	return *out ? 0 : -ENOMEM;
}

/* --------------------------------------------------------------- print */

/*
 * A tenant names its own process (prctl PR_SET_NAME), and the name
 * reaches an administrator's terminal: no escape sequence gets there.
 */
static const char *shown(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

static void print_pool(const struct zvmmd_status_pool *p, FILE *f)
{
	const struct zvmmd_status_lease *l = p->leases.v;
	const struct zvmmd_status_quarantined *q = p->quarantined.v;
	char page[24], node[24], chunk[24], zero[24], filling[24], leased[24];
	char quar[24], name[256], comm[64];

	if (p->node < 0)
		snprintf(node, sizeof(node), "any");
	else
		snprintf(node, sizeof(node), "%lld", (long long)p->node);
	fprintf(f, "%-6s %-5s %-10s %-10s %-10s %-10s %-12s %.1f GB/s\n",
		size_label((uint64_t)p->page_bytes, page, sizeof(page)), node,
		size_human((uint64_t)p->chunk_bytes, chunk, sizeof(chunk)),
		size_human((uint64_t)p->zero_bytes, zero, sizeof(zero)),
		size_human((uint64_t)p->filling_bytes, filling,
			   sizeof(filling)),
		size_human((uint64_t)p->leased_bytes, leased, sizeof(leased)),
		size_human((uint64_t)p->quarantined_bytes, quar, sizeof(quar)),
		p->scrub_gbps);
	if (p->unseen_bytes > 0)
		fprintf(f,
			"  unseen: %s in use in its mount beyond the above, held where no scan looks (an fd in flight, a pipe's pages, a previous zvmmd's tenants): counted held, never leased\n",
			size_human((uint64_t)p->unseen_bytes, quar,
				   sizeof(quar)));
	if (p->reserve_bytes > 0)
		fprintf(f,
			"  root's reserve: %s of its max, held by the kernel for root's leases alone\n",
			size_human((uint64_t)p->reserve_bytes, quar,
				   sizeof(quar)));
	for (size_t k = 0; k < p->leases.nr; k++)
		fprintf(f, "  lease %lld: pid %lld (%s), uid %lld, %s\n",
			(long long)l[k].id, (long long)l[k].pid,
			shown(l[k].comm, comm, sizeof(comm)),
			(long long)l[k].uid,
			size_human((uint64_t)l[k].bytes, leased,
				   sizeof(leased)));
	/* Another user's, or past what one reply lists. */
	if (p->leases_total > (int64_t)p->leases.nr)
		fprintf(f, "  %lld more leases, not listed\n",
			(long long)(p->leases_total - (int64_t)p->leases.nr));
	for (size_t k = 0; k < p->quarantined.nr; k++)
		fprintf(f, "  quarantined %s: %s, held by pid %lld (%s)\n",
			shown(q[k].chunk, name, sizeof(name)),
			size_human((uint64_t)q[k].bytes, quar, sizeof(quar)),
			(long long)q[k].holder_pid,
			shown(q[k].holder_comm, comm, sizeof(comm)));
	if (p->quarantined_total > (int64_t)p->quarantined.nr)
		fprintf(f, "  %lld more quarantined chunks, not listed\n",
			(long long)(p->quarantined_total -
				    (int64_t)p->quarantined.nr));
}

void zvmmd_status_print(const struct zvmmd_status *s, FILE *f)
{
	const struct zvmmd_status_pool *p = s->pools.v;
	char version[64];

	fprintf(f, "zvmmd %s, pid %lld\n",
		shown(s->version, version, sizeof(version)), (long long)s->pid);
	fprintf(f, "%-6s %-5s %-10s %-10s %-10s %-10s %-12s %s\n", "pages",
		"node", "chunk", "zero", "filling", "leased", "quarantined",
		"fill rate");
	for (size_t i = 0; i < s->pools.nr; i++)
		print_pool(&p[i], f);
}

/* --------------------------------------------------------------- schema */

static json_object *schema_row(const struct zvmmd_status_object *t,
			       const struct zvmmd_status_row *row);

static json_object *schema_object(const struct zvmmd_status_object *t)
{
	json_object *o = json_object_new_object();
	json_object *props = json_object_new_object();
	json_object *req = json_object_new_array();

	json_object_object_add(o, "type", json_object_new_string("object"));
	for (unsigned int i = 0; i < t->nr; i++) {
		json_object_object_add(props, t->rows[i].name,
				       schema_row(t, &t->rows[i]));
		if (!zvmmd_status_added(t, t->rows[i].name))
			json_object_array_add(
				req, json_object_new_string(t->rows[i].name));
	}
	json_object_object_add(o, "properties", props);
	json_object_object_add(o, "required", req);
	/* New members appear without a new protocol version. */
	json_object_object_add(o, "additionalProperties",
			       json_object_new_boolean(1));
	return o;
}

static json_object *schema_row(const struct zvmmd_status_object *t,
			       const struct zvmmd_status_row *row)
{
	json_object *p = json_object_new_object();
	char what[512];

	switch (row->kind) {
	case ZVMMD_STATUS_INT:
		json_object_object_add(p, "type",
				       json_object_new_string("integer"));
		json_object_object_add(p, "minimum",
				       json_object_new_int64(row->lo));
		json_object_object_add(p, "maximum",
				       json_object_new_int64(row->hi));
		break;
	case ZVMMD_STATUS_NUMBER:
		json_object_object_add(p, "type",
				       json_object_new_string("number"));
		json_object_object_add(p, "minimum",
				       json_object_new_double(row->dlo));
		json_object_object_add(p, "maximum",
				       json_object_new_double(row->dhi));
		break;
	case ZVMMD_STATUS_STRING:
		/* maxLength counts characters: at most the bytes. */
		json_object_object_add(p, "type",
				       json_object_new_string("string"));
		json_object_object_add(p, "maxLength",
				       json_object_new_int64(row->hi));
		break;
	case ZVMMD_STATUS_LIST:
		json_object_object_add(p, "type",
				       json_object_new_string("array"));
		json_object_object_add(p, "items", schema_object(row->list));
		break;
	}
	snprintf(what, sizeof(what), "%s%s", row->what,
		 zvmmd_status_added(t, row->name) ?
			 " (since zvmmd 0.2.0; absent from an older one's)" :
			 "");
	json_object_object_add(p, "description", json_object_new_string(what));
	return p;
}

json_object *zvmmd_status_json_schema(void)
{
	json_object *root = json_object_new_object();
	json_object *o = schema_object(&zvmmd_status_schema);

	json_object_object_add(
		root, "$schema",
		json_object_new_string(
			"https://json-schema.org/draft/2020-12/schema"));
	json_object_object_add(
		root, "title",
		json_object_new_string(
			"zvmmd's STATUS_OK (docs/zvmmd-protocol.md), and zvmm pool status --json"));
	json_object_object_foreach(o, key, val)
		json_object_object_add(root, key, json_object_get(val));
	json_object_put(o);
	return root;
}
