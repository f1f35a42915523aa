// SPDX-License-Identifier: MIT
/*
 * STATUS_OK's reader, zvmmd_status_parse() (lib/zvmmd_status.c, json-c),
 * with the input as the reply's JSON text, and the table `zvmm pool
 * status` prints from it.
 *
 * A status it takes holds every row of the schema in its range (lib/
 * zvmmd_status.h), each the value json-c itself reads in the input; written
 * back as JSON through the same table it reads as the same status, which
 * writes as the same text. Its printed table has a line for zvmmd, the
 * header, and per pool a row whose first columns are its page size and
 * node ("any" for -1), then a line per lease and per quarantined chunk,
 * and no byte that is not printable ASCII but the newlines. Every row is
 * checked before use: the status written back, with any one member of
 * zvmmd's, its first pool's, lease's or quarantined chunk's set to true
 * or removed, is refused naming that member, but a member added since
 * zvmmd 0.1.0 removed, which is read as an older zvmmd's reply. A refusal says why, and
 * frees what was read.
 */
#include <errno.h>
#include <math.h>

#include <json-c/json.h>

#include "../lib/size.h"
#include "../lib/zvmmd_status.h"
#include "fuzz.h"

static void check_object(const struct zvmmd_status_object *t, const void *o,
			 const char *path)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		const char *at = (const char *)o + row->off;
		const struct zvmmd_status_list *l;
		int64_t n;
		double d;
		char sub[160];

		switch (row->kind) {
		case ZVMMD_STATUS_INT:
			memcpy(&n, at, sizeof(n));
			fuzz_assert(n >= row->lo && n <= row->hi, "%s%s %lld",
				    path, row->name, (long long)n);
			break;
		case ZVMMD_STATUS_NUMBER:
			memcpy(&d, at, sizeof(d));
			fuzz_assert(isfinite(d) && d >= row->dlo &&
					    d <= row->dhi,
				    "%s%s %g", path, row->name, d);
			break;
		case ZVMMD_STATUS_STRING:
			fuzz_assert(strlen(at) <= (size_t)row->hi, "%s%s: %zu",
				    path, row->name, strlen(at));
			break;
		case ZVMMD_STATUS_LIST:
			l = (const void *)at;
			fuzz_assert(l->v, "%s%s: no array", path, row->name);
			for (size_t k = 0; k < l->nr; k++) {
				snprintf(sub, sizeof(sub), "%s%s[%zu].", path,
					 row->name, k);
				check_object(row->list,
					     (const char *)l->v +
						     k * row->list->size,
					     sub);
			}
			break;
		}
	}
}

static bool same_object(const struct zvmmd_status_object *t, const void *a,
			const void *b)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		const char *x = (const char *)a + row->off;
		const char *y = (const char *)b + row->off;
		const struct zvmmd_status_list *lx, *ly;

		switch (row->kind) {
		case ZVMMD_STATUS_INT:
			if (memcmp(x, y, sizeof(int64_t)))
				return false;
			break;
		case ZVMMD_STATUS_NUMBER:
			/* -0.0 and 0.0 read the same to anyone. */
			if (*(const double *)(const void *)x !=
			    *(const double *)(const void *)y)
				return false;
			break;
		case ZVMMD_STATUS_STRING:
			if (strcmp(x, y))
				return false;
			break;
		case ZVMMD_STATUS_LIST:
			lx = (const void *)x;
			ly = (const void *)y;
			if (lx->nr != ly->nr)
				return false;
			for (size_t k = 0; k < lx->nr; k++)
				if (!same_object(row->list,
						 (const char *)lx->v +
							 k * row->list->size,
						 (const char *)ly->v +
							 k * row->list->size))
					return false;
			break;
		}
	}
	return true;
}

/* @o's scalar members as JSON, as zvmmd_status_json() writes them. */
static json_object *write_object_for(const struct zvmmd_status_object *t,
				     const void *o)
{
	json_object *j = json_object_new_object();

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		const char *at = (const char *)o + row->off;
		int64_t n;
		double d;

		switch (row->kind) {
		case ZVMMD_STATUS_INT:
			memcpy(&n, at, sizeof(n));
			json_object_object_add(j, row->name,
					       json_object_new_int64(n));
			break;
		case ZVMMD_STATUS_NUMBER:
			memcpy(&d, at, sizeof(d));
			json_object_object_add(j, row->name,
					       json_object_new_double(d));
			break;
		case ZVMMD_STATUS_STRING:
			json_object_object_add(j, row->name,
					       json_object_new_string(at));
			break;
		case ZVMMD_STATUS_LIST:
			break;
		}
	}
	return j;
}

static size_t next_line(const char *out, size_t *pos, char *line, size_t len)
{
	const char *s = out + *pos, *e = strchr(s, '\n');
	size_t n;

	fuzz_assert(e, "a line without its newline: '%s'", s);
	n = (size_t)(e - s);
	fuzz_assert(n < len, "a line of %zu bytes", n);
	memcpy(line, s, n);
	line[n] = '\0';
	*pos += n + 1;
	return n;
}

static void check_table(const struct zvmmd_status *s)
{
	const struct zvmmd_status_pool *pools = s->pools.v;
	char *out = NULL, line[1024], want[64], page[24], *tok, *save;
	size_t len = 0, pos = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		abort();
	zvmmd_status_print(s, f);
	if (fclose(f))
		abort();
	for (size_t i = 0; i < len; i++)
		fuzz_assert(out[i] == '\n' || (out[i] >= 0x20 && out[i] < 0x7f),
			    "byte %#x at %zu of the table:\n%s",
			    (unsigned char)out[i], i, out);
	next_line(out, &pos, line, sizeof(line));
	snprintf(want, sizeof(want), ", pid %lld", (long long)s->pid);
	fuzz_assert(!strncmp(line, "zvmmd ", 6) &&
			    strlen(line) >= strlen(want) &&
			    !strcmp(line + strlen(line) - strlen(want), want),
		    "first line '%s'", line);
	next_line(out, &pos, line, sizeof(line));
	fuzz_assert(!strncmp(line, "pages  node  chunk", 18), "header '%s'",
		    line);
	for (size_t i = 0; i < s->pools.nr; i++) {
		const struct zvmmd_status_pool *p = &pools[i];

		next_line(out, &pos, line, sizeof(line));
		tok = strtok_r(line, " ", &save);
		size_label((uint64_t)p->page_bytes, page, sizeof(page));
		fuzz_assert(tok && !strcmp(tok, page),
			    "pool %zu: pages '%s', not %s", i, tok, page);
		tok = strtok_r(NULL, " ", &save);
		if (p->node < 0)
			snprintf(want, sizeof(want), "any");
		else
			snprintf(want, sizeof(want), "%lld",
				 (long long)p->node);
		fuzz_assert(tok && !strcmp(tok, want),
			    "pool %zu: node column '%s', not %s", i, tok, want);
		if (p->unseen_bytes > 0) {
			next_line(out, &pos, line, sizeof(line));
			fuzz_assert(!strncmp(line, "  unseen: ", 10),
				    "pool %zu unseen: '%s'", i, line);
		}
		for (size_t k = 0; k < p->leases.nr; k++) {
			next_line(out, &pos, line, sizeof(line));
			fuzz_assert(!strncmp(line, "  lease ", 8),
				    "pool %zu lease %zu: '%s'", i, k, line);
		}
		if (p->leases_total > (int64_t)p->leases.nr) {
			next_line(out, &pos, line, sizeof(line));
			fuzz_assert(strstr(line, " more leases, not listed"),
				    "pool %zu: '%s'", i, line);
		}
		for (size_t k = 0; k < p->quarantined.nr; k++) {
			next_line(out, &pos, line, sizeof(line));
			fuzz_assert(!strncmp(line, "  quarantined ", 14),
				    "pool %zu quarantined %zu: '%s'", i, k,
				    line);
		}
		if (p->quarantined_total > (int64_t)p->quarantined.nr) {
			next_line(out, &pos, line, sizeof(line));
			fuzz_assert(
				strstr(line,
				       " more quarantined chunks, not listed"),
				"pool %zu: '%s'", i, line);
		}
	}
	fuzz_assert(pos == len, "more lines: '%s'", out + pos);
	free(out);
}

/*
 * What was read is what json-c itself reads in the input, member by
 * member: an integer json-c keeps past int64 or clamps is not taken as
 * another, nor a number as a value it does not have.
 */
static void check_as_read(const struct zvmmd_status_object *t, const void *o,
			  json_object *j, const char *path)
{
	json_object *mine = write_object_for(t, o);

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		json_object *in = json_object_object_get(j, row->name);
		json_object *out = json_object_object_get(mine, row->name);
		char sub[160];

		/* An older zvmmd's: taken from what it sent, in range. */
		if (!in && zvmmd_status_added(t, row->name))
			continue;
		fuzz_assert(in, "%s%s read, not in the input", path, row->name);
		switch (row->kind) {
		case ZVMMD_STATUS_INT:
		case ZVMMD_STATUS_STRING:
			fuzz_assert(json_object_equal(in, out),
				    "%s%s: %s in the input, %s read", path,
				    row->name, json_object_to_json_string(in),
				    json_object_to_json_string(out));
			break;
		case ZVMMD_STATUS_NUMBER:
			fuzz_assert(json_object_get_double(in) ==
					    json_object_get_double(out),
				    "%s%s: %s in the input, %s read", path,
				    row->name, json_object_to_json_string(in),
				    json_object_to_json_string(out));
			break;
		case ZVMMD_STATUS_LIST: {
			const struct zvmmd_status_list *l =
				(const void *)((const char *)o + row->off);

			fuzz_assert(
				json_object_is_type(in, json_type_array) &&
					json_object_array_length(in) == l->nr,
				"%s%s: not the input's array", path, row->name);
			for (size_t k = 0; k < l->nr; k++) {
				snprintf(sub, sizeof(sub), "%s%s[%zu].", path,
					 row->name, k);
				check_as_read(row->list,
					      (const char *)l->v +
						      k * row->list->size,
					      json_object_array_get_idx(in, k),
					      sub);
			}
			break;
		}
		}
	}
	json_object_put(mine);
}

/*
 * @root's member @row, at @path in @o, set to true and then removed:
 * either way the text is refused, naming @path.
 */
static void spoil(json_object *root, json_object *o,
		  const struct zvmmd_status_object *t,
		  const struct zvmmd_status_row *row, const char *path)
{
	struct zvmmd_status s;
	json_object *keep =
		json_object_get(json_object_object_get(o, row->name));
	const char *text;
	char err[512];
	int ret;

	for (int k = 0; k < 2; k++) {
		if (k)
			json_object_object_del(o, row->name);
		else
			json_object_object_add(o, row->name,
					       json_object_new_boolean(1));
		text = json_object_to_json_string_ext(root,
						      JSON_C_TO_STRING_PLAIN);
		ret = zvmmd_status_parse(text, strlen(text), &s, err,
					 sizeof(err));
		zvmmd_status_free(&s);
		if (k && zvmmd_status_added(t, row->name)) {
			fuzz_assert(!ret, "%s removed: %d '%s'", path, ret,
				    err);
			continue;
		}
		fuzz_assert(ret == -EPROTO &&
				    !strncmp(err, path, strlen(path)) &&
				    err[strlen(path)] == ':',
			    "%s %s: %d '%s'", path, k ? "removed" : "true", ret,
			    err);
	}
	json_object_object_add(o, row->name, keep);
}

static void spoil_object(json_object *root, json_object *o,
			 const struct zvmmd_status_object *t,
			 const char *prefix)
{
	char path[160];

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		json_object *l;

		snprintf(path, sizeof(path), "%s%s", prefix, row->name);
		spoil(root, o, t, row, path);
		if (row->kind != ZVMMD_STATUS_LIST)
			continue;
		l = json_object_object_get(o, row->name);
		if (!json_object_array_length(l))
			continue;
		snprintf(path, sizeof(path), "%s%s[0].", prefix, row->name);
		spoil_object(root, json_object_array_get_idx(l, 0), row->list,
			     path);
	}
}

static void round_trip(const struct zvmmd_status *s)
{
	struct zvmmd_status back;
	char *text, *again, err[512];
	json_object *root;
	int ret;

	fuzz_assert(!zvmmd_status_json(s, &text), "no JSON");
	ret = zvmmd_status_parse(text, strlen(text), &back, err, sizeof(err));
	fuzz_assert(!ret, "the status written refused: %s\n%s", err, text);
	fuzz_assert(same_object(&zvmmd_status_schema, s, &back),
		    "the status written reads as another:\n%s", text);
	fuzz_assert(!zvmmd_status_json(&back, &again), "no JSON");
	fuzz_assert(!strcmp(text, again), "written again:\n%s\n---\n%s", text,
		    again);
	zvmmd_status_free(&back);
	free(again);
	root = json_tokener_parse(text);
	fuzz_assert(root, "json-c cannot read:\n%s", text);
	spoil_object(root, root, &zvmmd_status_schema, "");
	json_object_put(root);
	free(text);
}

/* The input as json-c reads it, strict: the reader took it. */
static json_object *json_input(const uint8_t *data, size_t size)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;

	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	fuzz_assert(o && json_tokener_get_parse_end(tok) == size,
		    "read, but json-c does not read it");
	json_tokener_free(tok);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zvmmd_status s;
	char err[512] = "";
	json_object *in;
	int ret;

	ret = zvmmd_status_parse((const char *)data, size, &s, err,
				 sizeof(err));
	if (ret) {
		fuzz_assert(ret == -EPROTO || ret == -ENOMEM, "parse %d", ret);
		fuzz_assert(ret == -ENOMEM || err[0], "refused, no reason");
		zvmmd_status_free(&s);
		return 0;
	}
	check_object(&zvmmd_status_schema, &s, "");
	in = json_input(data, size);
	check_as_read(&zvmmd_status_schema, &s, in, "");
	json_object_put(in);
	check_table(&s);
	round_trip(&s);
	zvmmd_status_free(&s);
	return 0;
}
