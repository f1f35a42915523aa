// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

enum row_type { STR, U64, BOOL, MS, S, GBPS, US };

/* The object at dotted @path under @root, made where missing. */
static json_object *section(json_object *root, const char *path)
{
	char part[64];
	json_object *o = root, *next;

	while (*path) {
		size_t n = strcspn(path, ".");

		snprintf(part, sizeof(part), "%.*s", (int)n, path);
		if (!json_object_object_get_ex(o, part, &next)) {
			next = json_object_new_object();
			if (!next || json_object_object_add(o, part, next)) {
				json_object_put(next);
				return NULL;
			}
		}
		o = next;
		path += n + (path[n] == '.');
	}
	return o;
}

/* Numbers keep the decimals their row says: reports stay diffable. */
static json_object *number(double v, int decimals)
{
	char text[64];

	snprintf(text, sizeof(text), "%.*f", decimals, v);
	return json_object_new_double_s(v, text);
}

#define ADD_STR(v) json_object_new_string(v)
#define ADD_U64(v) json_object_new_uint64((uint64_t)(v))
#define ADD_BOOL(v) json_object_new_boolean(v)
#define ADD_MS(v) number(v, 3)
#define ADD_S(v) number(v, 6)
#define ADD_GBPS(v) number(v, 3)
#define ADD_US(v) number(v, 1)

int api_stats_json(const struct zvmm_stats *s, json_object *root)
{
	json_object *o, *v;

#define ROW(sec, key, type, value, doc)                      \
	o = section(root, sec);                              \
	v = ADD_##type(value);                               \
	if (!o || !v || json_object_object_add(o, key, v)) { \
		json_object_put(v);                          \
		return -ENOMEM;                              \
	}
	ZVMM_STATS_ROWS(ROW)
#undef ROW
	return 0;
}

static const char *const type_json[] = {
	[STR] = "string", [U64] = "integer", [BOOL] = "boolean",
	[MS] = "number",  [S] = "number",    [GBPS] = "number",
	[US] = "number",
};

/* A schema object for @path's section: properties and required keys. */
static json_object *schema_section(json_object *root, const char *path)
{
	char part[64];
	json_object *o = root, *props, *next;

	while (*path) {
		size_t n = strcspn(path, ".");

		snprintf(part, sizeof(part), "%.*s", (int)n, path);
		json_object_object_get_ex(o, "properties", &props);
		if (!json_object_object_get_ex(props, part, &next)) {
			next = json_object_new_object();
			json_object_object_add(
				next, "type", json_object_new_string("object"));
			json_object_object_add(next, "properties",
					       json_object_new_object());
			json_object_object_add(next, "required",
					       json_object_new_array());
			json_object_object_add(props, part, next);
			json_object_array_add(
				json_object_object_get(o, "required"),
				json_object_new_string(part));
		}
		o = next;
		path += n + (path[n] == '.');
	}
	return o;
}

json_object *api_stats_schema(void)
{
	json_object *root = json_object_new_object(), *o, *p;

	json_object_object_add(
		root, "$schema",
		json_object_new_string(
			"https://json-schema.org/draft/2020-12/schema"));
	json_object_object_add(
		root, "title",
		json_object_new_string(
			"libzvmm statistics: zvmm_guest_stats_json(), and those keys of zvmm run --json"));
	json_object_object_add(root, "type", json_object_new_string("object"));
	json_object_object_add(root, "properties", json_object_new_object());
	json_object_object_add(root, "required", json_object_new_array());

#define ROW(sec, key, type, value, doc)                                        \
	o = schema_section(root, sec);                                         \
	p = json_object_new_object();                                          \
	json_object_object_add(p, "type",                                      \
			       json_object_new_string(type_json[type]));       \
	if (type != STR && type != BOOL)                                       \
		json_object_object_add(p, "minimum", json_object_new_int(0));  \
	json_object_object_add(p, "description", json_object_new_string(doc)); \
	json_object_object_add(json_object_object_get(o, "properties"), key,   \
			       p);                                             \
	json_object_array_add(json_object_object_get(o, "required"),           \
			      json_object_new_string(key));
	ZVMM_STATS_ROWS(ROW)
#undef ROW
	return root;
}
